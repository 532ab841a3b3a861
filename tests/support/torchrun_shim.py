"""torchrun exactly as /usr/bin/torchrun runs it (torch.distributed.run.main), made to start on a
torch that is built without libuv yet defaults to it (Debian 13's torch 2.6).

torchrun's rendezvous handlers (static and c10d) construct their TCPStore without passing
use_libuv, so on such a torch every torchrun fails before starting a worker ("use_libuv was
requested but PyTorch was build without libuv support"), whatever USE_LIBUV says. With USE_LIBUV=0
(scripts/in-trixie.sh sets it where torch lacks libuv) this shim makes use_libuv=False the default of
torch.distributed.TCPStore before torchrun's modules import it; otherwise it changes nothing.

    python3 tests/support/torchrun_shim.py --nproc_per_node 2 ... --no_python ./trainer ...
"""
import os
import sys

import torch.distributed as dist

if os.environ.get("USE_LIBUV", "").strip() == "0":
    class _ClassicTCPStore(dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    dist.TCPStore = _ClassicTCPStore

from torch.distributed.run import main  # noqa: E402  (after the patch: its modules import TCPStore by name)

if __name__ == "__main__":
    sys.exit(main())
