"""How every Python reference rank ends once its results are written: a barrier, then os._exit,
without torch's teardown of the group or the interpreter. That teardown is not what the references
test, and it failed them after every result was written: torch 2.6 aborted ("terminate called
without an active exception", 2 runs in about 20) while a PowerSGD future callback still ran on a
Gloo thread, and stalled or aborted at interpreter exit in the ZeRO references. The barrier lets
every rank's last operation and callbacks finish first."""
import os
import sys

import torch.distributed as dist


def leave():
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
