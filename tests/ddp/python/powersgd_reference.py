"""torch's powerSGD_hook called directly on buckets of prepared gradients, for the C++ hook test.

Run once per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) with the system python3-torch:
    python3 powersgd_reference.py DIR
Reads DIR/powersgd_grads (tests/ddp/tensor_files.h format): for each step s, rank r and bucket b
the gradients "g<s>_<r>_<b>_<i>". For each configuration of CONFIGS it makes one PowerSGDState and
runs every step through the hook, bucket 0 then bucket 1 (the last), as DDP calls it, and writes
DIR/powersgd_out_rank<RANK> with the bucket each call returned, "<config>_<s>_<b>", and
"<config>_stats" (iter, numel before, numel after).

The hook only calls bucket.buffer(), .index(), .is_last() and .gradients(), so a plain object with
those methods stands for dist.GradBucket (which Python cannot construct): its gradients are views
of its buffer, as DDP's are.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_files import read_tensors, write_tensors  # noqa: E402
from leave import leave  # noqa: E402

# name -> PowerSGDState keyword arguments; the C++ side (powersgd_hook_workers.cpp) has the same.
CONFIGS = {
    "rank1": dict(matrix_approximation_rank=1, start_powerSGD_iter=2),
    "rank2_cold": dict(matrix_approximation_rank=2, start_powerSGD_iter=2, use_error_feedback=False,
                       warm_start=False, orthogonalization_epsilon=1e-8, random_seed=7),
    "rank3_qr": dict(matrix_approximation_rank=3, start_powerSGD_iter=3, min_compression_rate=1,
                     random_seed=12345),
}
STEPS = 6
BUCKETS = 2


class Bucket:
    def __init__(self, index, grads):
        self._index = index
        self._buffer = torch.cat([g.reshape(-1) for g in grads])
        self._grads = []
        at = 0
        for g in grads:
            self._grads.append(self._buffer[at:at + g.numel()].view(g.shape))
            at += g.numel()

    def index(self):
        return self._index

    def is_last(self):
        return self._index == BUCKETS - 1

    def buffer(self):
        return self._buffer

    def gradients(self):
        return self._grads


def grads_of(data, step, rank, bucket):
    out, i = [], 0
    while "g%d_%d_%d_%d" % (step, rank, bucket, i) in data:
        out.append(data["g%d_%d_%d_%d" % (step, rank, bucket, i)])
        i += 1
    return out


def main(directory):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = read_tensors(directory, "powersgd_grads")
    out = {}
    for name, kwargs in CONFIGS.items():
        state = powersgd.PowerSGDState(process_group=None, **kwargs)
        for step in range(STEPS):
            for b in range(BUCKETS):
                # One bucket's collectives at a time (see resnet_reference.py, serialized()).
                out["%s_%d_%d" % (name, step, b)] = \
                    powersgd.powerSGD_hook(state, Bucket(b, grads_of(data, step, rank, b))).wait().clone()
        _, before, after = state.compression_stats()
        out[name + "_stats"] = torch.tensor([state.iter, before, after], dtype=torch.int64)
    write_tensors(directory, "powersgd_out_rank%d" % rank, out)
    leave()


if __name__ == "__main__":
    main(sys.argv[1])
