#pragma once
// PyTorch's torchrun as the tests start it, the same way on Debian 12's torch 1.13 and Debian 13's
// torch 2.6.

#include <string>
#include <vector>

namespace ddp::testing {

/// argv of /usr/bin/torchrun for `nproc` workers on this one node, up to (not including) the
/// program, which runs without Python (--no_python); `extra` flags go before it.
///
/// Static rendezvous on a free loopback port rather than --standalone: --standalone's c10d
/// rendezvous constructs its TCPStore with libuv whatever USE_LIBUV says, and Debian 13's torch 2.6
/// is built without libuv, so it cannot start there. The static one (torchrun's agent hosts the
/// store: TORCHELASTIC_USE_AGENT_STORE=True, every worker a client) honours USE_LIBUV=0.
/// --redirects/--tee are "1": Debian's torchrun 1.13 on Python 3.11 cannot parse its own default
/// "0"; "--tee 1" prefixes the workers' stdout lines with "[default<local rank>]:".
std::vector<std::string> torchrun_argv(int nproc, const std::string& log_dir, const std::vector<std::string>& extra = {});

}  // namespace ddp::testing
