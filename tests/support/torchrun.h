#pragma once
// PyTorch's torchrun as the tests start it, the same way on Debian 12's torch 1.13 and Debian 13's
// torch 2.6.

#include <string>
#include <vector>

namespace ddp::testing {

/// argv of torchrun (torch.distributed.run.main, what /usr/bin/torchrun calls, through
/// tests/support/torchrun_shim.py) for `nproc` workers on this one node, up to (not including) the
/// program, which runs without Python (--no_python); `extra` flags go before it.
///
/// The shim only matters on a torch built without libuv that defaults to it (Debian 13's 2.6):
/// torchrun's rendezvous handlers construct their TCPStore with the default, so /usr/bin/torchrun
/// cannot start there at all; with USE_LIBUV=0 the shim makes the classic store the default.
/// Static rendezvous on a free loopback port: torchrun's agent hosts the store
/// (TORCHELASTIC_USE_AGENT_STORE=True) and every worker, rank 0 included, is a client.
/// --redirects/--tee are "1": Debian's torchrun 1.13 on Python 3.11 cannot parse its own default
/// "0"; "--tee 1" prefixes the workers' stdout lines with "[default<local rank>]:". Python runs
/// unbuffered (-u): torchrun's stdout is a pipe to the test, and torch 2.6's tee would otherwise hand
/// the workers' lines over only when its buffer fills or the run ends.
std::vector<std::string> torchrun_argv(int nproc, const std::string& log_dir, const std::vector<std::string>& extra = {});

}  // namespace ddp::testing
