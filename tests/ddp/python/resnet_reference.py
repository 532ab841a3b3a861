"""PyTorch's DistributedDataParallel on ResNet-18 with several buckets, for the C++ parity test.

Run once per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) with the system python3-torch:
    python3 resnet_reference.py DIR BUCKET_CAP_MB [POWERSGD_RANK]
Reads DIR/resnet_init and DIR/resnet_data (tests/ddp/tensor_files.h format), trains with
torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=BUCKET_CAP_MB) over Gloo (SGD lr 0.01
momentum 0.9, one batch per step split evenly over the ranks, 1 intra-op thread) and writes
DIR/resnet_final_rank<RANK>. Rank 0 also writes, one bucket per line (parameter indices):
  DIR/buckets_initial.txt  torch's bucketing rule (_compute_bucket_assignment_by_size with limits
                           [first bucket bytes, cap]) over the reversed registration order, which is
                           where our DDP starts (torch's own DDP starts with one bucket);
  DIR/buckets_rebuilt.txt  the same rule over the order gradients arrived in during the first
                           backward: what torch's DDP rebuilds its buckets to and uses from then on.
With POWERSGD_RANK, DDP reduces through torch's powerSGD_hook (matrix_approximation_rank
POWERSGD_RANK, start_powerSGD_iter 2, error feedback and warm start on, random_seed 0: steps 0-1 are
plain allreduces, steps 2-3 compressed, step 3 from the warm-started Q and the fed-back error), and
rank 0 writes DIR/powersgd_stats.txt: "iter numel_before numel_after" of its PowerSGDState.
Only APIs present in torch 1.13 and 2.x are used.
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet import ResNet18  # noqa: E402
from tensor_files import read_tensors, write_tensors  # noqa: E402
from train_step import train_step  # noqa: E402
from leave import leave  # noqa: E402


def assign(params, order, limits):
    """torch's own assignment of params[order[0]], params[order[1]], ... to buckets."""
    buckets, _ = dist._compute_bucket_assignment_by_size(
        [params[i] for i in order], limits, [False] * len(order), list(order))
    return [list(b) for b in buckets]


def write_buckets(path, buckets):
    with open(path, "w") as f:
        for b in buckets:
            f.write(" ".join(str(i) for i in b) + "\n")


def ddp_rebuilt_buckets(model):
    """The buckets torch's DDP actually rebuilt to, from its logging data (None when not logged)."""
    text = model._get_ddp_logging_data().get("rebuilt_per_bucket_param_indices")
    if not text:
        return None
    return [[int(i) for i in b.split()] for b in str(text).split(",")]


def serialized(hook):
    """The hook, with each bucket's chain of collectives finished before the next bucket's starts.

    torch's powerSGD_hook issues a bucket's second and third allreduce from future callbacks, on
    whichever thread completes the previous one, while the autograd thread goes on issuing the next
    buckets' first allreduces. Over Gloo the ranks then issue collectives in different orders and
    pair mismatched messages: with several buckets, torch 1.13 crashed ("op.preamble.length <=
    op.nbytes. 2048 vs 1024", gloo/transport/tcp/pair.cc) or hung. Waiting here changes the order
    of the collectives, not a value: each allreduce sums the same tensors."""
    def run(state, bucket):
        fut = hook(state, bucket)
        fut.wait()
        return fut
    return run


def main(directory, cap_mb, powersgd_rank):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = read_tensors(directory, "resnet_data")
    net = ResNet18()
    net.load_state_dict(read_tensors(directory, "resnet_init"))
    params = [p for p in net.parameters() if p.requires_grad]

    # Leaf tensor hooks run when autograd reaches the parameter's gradient accumulator, the same
    # moment DDP's own hook runs: their order is the arrival order DDP records for its rebuild.
    arrival = []
    handles = [p.register_hook(lambda g, i=i: arrival.append(i)) for i, p in enumerate(params)]

    model = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=cap_mb)
    # The first bucket's cap: torch 1.13 always uses _DEFAULT_FIRST_BUCKET_BYTES (1 MiB); torch 2.x
    # uses it only with the default bucket_cap_mb and caps the first bucket at an explicit
    # bucket_cap_mb too (bucket_bytes_cap_default). Read from the DDP object, not guessed from the
    # version; the C++ side configures first_bucket_cap_mb from bucket_limits.txt to match.
    explicit_cap = not getattr(model, "bucket_bytes_cap_default", True)
    limits = [model.bucket_bytes_cap if explicit_cap else dist._DEFAULT_FIRST_BUCKET_BYTES,
              int(cap_mb * 1024 * 1024)]
    state = None
    if powersgd_rank:
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=powersgd_rank,
                                       start_powerSGD_iter=2, random_seed=0)
        model.register_comm_hook(state, serialized(powersgd.powerSGD_hook))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    steps = len(data) // 2
    for step in range(steps):
        train_step(model, opt, data, step, rank, world)
        if step == 0:
            for h in handles:
                h.remove()
    write_tensors(directory, "resnet_final_rank%d" % rank, net.state_dict())

    if rank == 0 and state is not None:
        _, before, after = state.compression_stats()
        with open(os.path.join(directory, "powersgd_stats.txt"), "w") as f:
            f.write("%d %d %d\n" % (state.iter, before, after))
    if rank == 0:
        if sorted(arrival) != list(range(len(params))):
            sys.exit("every parameter should have reported its gradient once, got %s" % arrival)
        rebuilt = assign(params, arrival, limits)
        actual = ddp_rebuilt_buckets(model)
        # Ties the expectation to what torch's DDP really did (when this torch logs it).
        if actual is not None and actual != rebuilt:
            sys.exit("torch DDP rebuilt to %s, not the expected %s" % (actual, rebuilt))
        print("torch DDP rebuilt buckets: %s" % ("checked against its logging data" if actual else "not logged"))
        with open(os.path.join(directory, "bucket_limits.txt"), "w") as f:
            f.write("%d %d\n" % tuple(limits))
        write_buckets(os.path.join(directory, "buckets_rebuilt.txt"), rebuilt)
        write_buckets(os.path.join(directory, "buckets_initial.txt"),
                      assign(params, list(reversed(range(len(params)))), limits))
    leave()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
