#!/usr/bin/python3
"""End-to-end CIFAR-10 benchmark: train_cifar10 against the seed script's behaviour, same data, same
world size, batch, epochs and hyper-parameters, in one run.

  /usr/bin/python3 bench/cifar10/run_bench.py --build build [--data DIR] [--world 2] [--epochs 2] [--repeats 1]

Without --data, a synthetic CIFAR-10 of the real size (50,000 + 10,000 images, Python layout) is
generated with make_cifar10_synthetic into a temporary folder, by default the harder variant
(--signal 0.15 --noise 60) so that accuracies after a few epochs are below 100% and compare. Each configuration is started as
`world` processes on this machine (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, as a PyTorchJob
would set them) and timed from the first start to the last exit: end-to-end images/s = trained
images (all ranks) / that wall time, so it covers start-up, data loading, training, evaluation and
saving. Runs alternate between the configurations (repeats > 1 reports the median). Both read the
Python layout (cifar-10-batches-py), as users who followed the seed have.

--shm-vs-tcp runs train_cifar10 twice per repeat, with DDP_SHM=1 (shared memory between the ranks
of this host) and DDP_SHM=0 (TCP only), each its own row (issue 16); each row names the transport
its rank 0 logged.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(cmd, world, log_prefix, extra_env=None):
    port = free_port()
    procs = []
    start = time.time()
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **(extra_env or {}))
        env.pop("LOCAL_RANK", None)  # PyTorchJob-style: no launcher
        out = open(f"{log_prefix}.rank{rank}.log", "w")
        procs.append((subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT), out))
    codes = []
    for p, out in procs:
        codes.append(p.wait())
        out.close()
    wall = time.time() - start
    if any(codes):
        sys.exit(f"{cmd[0]} failed with exit codes {codes}; see {log_prefix}.rank*.log")
    return wall


def last_json(path, key):
    found = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{") and key in line:
                try:
                    found = json.loads(line)
                except json.JSONDecodeError:
                    pass
    return found


def transport_lines(path):
    """The "transport: ..." lines a rank logged (ddp's process group names its transport at start-up)."""
    with open(path, errors="replace") as f:
        return {line[line.index("transport:"):].strip() for line in f if "transport:" in line}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default="")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads per rank (0: cores / world)")
    ap.add_argument("--signal", type=float, default=0.15, help="synthetic data: class signal (make_cifar10_synthetic)")
    ap.add_argument("--noise", type=float, default=60, help="synthetic data: pixel noise (make_cifar10_synthetic)")
    ap.add_argument("--quirks", action="store_true", help="also run the baseline with --seed-quirks")
    ap.add_argument("--shm-vs-tcp", action="store_true",
                    help="run train_cifar10 with DDP_SHM=1 and with DDP_SHM=0, each its own row")
    ap.add_argument("--out", default="", help="write the results as JSON here")
    args = ap.parse_args()

    train = os.path.join(args.build, "apps/train_cifar10/train_cifar10")
    make = os.path.join(args.build, "tools/make_cifar10_synthetic/make_cifar10_synthetic")
    baseline = os.path.join(ROOT, "bench/python/cifar10_seed_baseline.py")
    work = tempfile.mkdtemp(prefix="cifar10-bench-")
    try:
        data = args.data
        if not data:
            data = os.path.join(work, "data")
            subprocess.run([make, "--out", data, "--layout", "py", "--train", "50000", "--test", "10000", "--seed", "0",
                            "--signal", str(args.signal), "--noise", str(args.noise)], check=True)
        # Both get the same intra-op threads: the cores shared by the ranks (what a pod per rank would have).
        threads = str(args.threads or max(1, (os.cpu_count() or 1) // args.world))
        common = ["--data-dir", data, "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--threads", threads]
        # name -> (run i -> (command, metrics file or None, summary key), extra environment)
        def ours(tag):
            return lambda i: ([train, *common, "--model-dir", os.path.join(work, f"{tag}{i}"),
                               "--metrics-file", os.path.join(work, f"{tag}{i}.jsonl"), "--progress", "plain",
                               "--log-interval", "100"], os.path.join(work, f"{tag}{i}.jsonl"), "summary")
        ours_names = ["train_cifar10"]
        configs = {"train_cifar10": (ours("ours"), {})}
        if args.shm_vs_tcp:
            ours_names = ["train_cifar10 DDP_SHM=1", "train_cifar10 DDP_SHM=0"]
            configs = {ours_names[0]: (ours("ours_shm"), {"DDP_SHM": "1"}),
                       ours_names[1]: (ours("ours_tcp"), {"DDP_SHM": "0"})}
        configs["seed baseline (PyTorch)"] = (lambda i: (
            [PYTHON, baseline, *common, "--model-dir", os.path.join(work, f"base{i}"), "--log-interval", "100"],
            None, "baseline"), {})
        if args.quirks:
            configs["seed baseline + seed quirks"] = (lambda i: (
                [PYTHON, baseline, *common, "--seed-quirks", "--log-interval", "100"], None, "baseline"), {})
        results = {name: [] for name in configs}
        transports = {name: set() for name in configs}
        for i in range(args.repeats):
            for c, (name, (make_cmd, extra_env)) in enumerate(configs.items()):
                cmd, metrics, key = make_cmd(i)
                log_prefix = os.path.join(work, f"config{c}.run{i}")
                wall = run_ranks(cmd, args.world, log_prefix, extra_env)
                transports[name].update(transport_lines(f"{log_prefix}.rank0.log"))
                summary = last_json(metrics, key) if metrics else last_json(f"{log_prefix}.rank0.log", key)
                images = args.epochs * 50000 if not summary else summary["trained_images"]
                results[name].append({"wall_seconds": wall, "images_per_sec": images / wall, "accuracy": summary["accuracy"]})
                print(f"  run {i + 1}: {name}: {wall:.1f} s, {images / wall:.0f} images/s, accuracy {summary['accuracy']:.4f}", flush=True)
        print(f"\nCIFAR-10, world size {args.world}, batch {args.batch_size} per rank, {args.epochs} epochs, "
              f"{os.cpu_count()} cores, median of {args.repeats}")
        for name in configs:
            if transports[name]:
                print(f"  {name}: {'; '.join(sorted(transports[name]))}")
        print(f"{'configuration':32s} {'wall s':>8s} {'images/s':>10s} {'accuracy':>9s}")
        table = {}
        for name, runs in results.items():
            wall = statistics.median(r["wall_seconds"] for r in runs)
            ips = statistics.median(r["images_per_sec"] for r in runs)
            acc = statistics.median(r["accuracy"] for r in runs)
            table[name] = {"wall_seconds": wall, "images_per_sec": ips, "accuracy": acc, "runs": runs}
            print(f"{name:32s} {wall:8.1f} {ips:10.0f} {acc:9.4f}")
        base = table["seed baseline (PyTorch)"]["images_per_sec"]
        for name in ours_names:
            print(f"speed-up of {name} over the seed baseline: {table[name]['images_per_sec'] / base:.2f}x")
        if args.shm_vs_tcp:
            print(f"speed-up of DDP_SHM=1 over DDP_SHM=0: "
                  f"{table[ours_names[0]]['images_per_sec'] / table[ours_names[1]]['images_per_sec']:.2f}x")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"world": args.world, "epochs": args.epochs, "batch_size": args.batch_size, "results": table}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
