#!/usr/bin/python3
"""torchrun's standard multi-node command line, unchanged, under ddprun on 2 and on 3 "nodes" (pods:
network namespaces on one bridge, netpods.py). Every node runs the same line, with no node rank:

  ddprun --nnodes N --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint job-rdzv:29400 --rdzv-id job
         train_cifar10 --data-dir D --epochs 1 --max-steps 6 ...

job-rdzv is a name of node-0's address in every pod's hosts file (as a Kubernetes Service name is),
not node-0's host name: node-0's ddprun must find the endpoint to be its own by the address (its eth0
has it), the others must find it is not theirs. Checks, for N = 2 and 3:

  - every ddprun exits 0, after its workers trained (train_cifar10's "done:" line on each rank 0 of a node...
    rank 0 writes the model);
  - only node-0's ddprun hosts the store ("store listening on port"); every other one says nothing of
    hosting and joins it as a client;
  - the rendezvous hands out node ranks: the N ddpruns log "attempt 0: node k of N" for k = 0..N-1,
    each k once, and the ranks "runs ranks 2k..2k+1 of 2N";
  - the model file exists.

Root and `ip netns` are required; without them the run exits 77 (ctest SKIP_RETURN_CODE), under
CI=true it fails instead (tests/support/ci.py). Every namespace, veth, bridge and hosts file is
removed at the end, on failure too.

  torchrun_nodes.py --build-dir build [--nodes 2,3] [--work DIR] [--keep]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import ci  # noqa: E402
import netpods  # noqa: E402

RUN_TIMEOUT = 300.0  # seconds a run of N nodes may take (about 20 s at N = 3 on the 2-core machine)


def run_nodes(args, n):
    """Returns a list of problems (empty: passed)."""
    work = os.path.join(args.work, f"nodes-{n}")
    os.makedirs(work, exist_ok=True)
    cluster = netpods.Cluster(work)
    problems = []
    try:
        pods = [cluster.create_pod(f"node-{k}") for k in range(n)]
        for p in pods:
            cluster.publish(p.name, p.ip)
        cluster.publish("job-rdzv", pods[0].ip)  # the endpoint: a second name of node-0, like a Service
        model_dir = os.path.join(work, "model")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        argv = [args.ddprun, "--nnodes", str(n), "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "job-rdzv:29400", "--rdzv-id", f"job{n}", "--join-timeout", "120",
                args.trainer, "--data-dir", args.data, "--model-dir", model_dir, "--epochs", "1", "--max-steps", "6",
                "--batch-size", "16", "--test-batch-size", "64", "--threads", "1", "--workers", "1",
                "--progress", "plain"]
        procs = {}
        for p in pods:
            procs[p.name] = (p.start(argv, env, os.path.join(work, p.name + ".log")), os.path.join(work, p.name + ".log"))
        deadline = time.time() + RUN_TIMEOUT
        for name, (proc, _) in procs.items():
            try:
                rc = proc.wait(timeout=max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                rc = None
            if rc != 0:
                problems.append(f"{name}: ddprun exit {rc} (expected 0)")
        node_ranks = []
        for name, (_, log) in procs.items():
            with open(log, errors="replace") as f:
                text = f.read()
            hosts = "store listening on port" in text
            if hosts != (name == "node-0"):
                problems.append(f"{name}: {'hosts' if hosts else 'does not host'} the store; only node-0, "
                                f"whose address job-rdzv names, should")
            m = re.search(r"attempt 0: node (\d+) of (\d+) runs ranks (\d+)\.\.(\d+) of (\d+)", text)
            if not m:
                problems.append(f"{name}: no 'attempt 0: node k of {n}' line")
                continue
            k, of, lo, hi, world = map(int, m.groups())
            node_ranks.append(k)
            if (of, lo, hi, world) != (n, 2 * k, 2 * k + 1, 2 * n):
                problems.append(f"{name}: {m.group(0)!r}, expected node k of {n} running ranks 2k..2k+1 of {2 * n}")
        if sorted(node_ranks) != list(range(n)):
            problems.append(f"node ranks {sorted(node_ranks)}, expected each of 0..{n - 1} once")
        if not os.path.exists(os.path.join(model_dir, "model.pt")):
            problems.append(f"no model written in {model_dir}")
        if problems:
            for name, (_, log) in procs.items():
                with open(log, errors="replace") as f:
                    print(f"--- {name} (last lines)\n" + "".join(f.readlines()[-15:]))
    finally:
        for p in list(cluster.pods):
            p.signal_all(signal.SIGKILL)
        cluster.teardown()
        left = cluster.leftovers()
        if left:
            problems.append(f"left behind: {left}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--nodes", default="2,3")
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    args.ddprun = os.path.join(build, "apps", "ddprun", "ddprun")
    args.trainer = os.path.join(build, "apps", "train_cifar10", "train_cifar10")
    maker = os.path.join(build, "tools", "make_cifar10_synthetic", "make_cifar10_synthetic")
    for path in (args.ddprun, args.trainer, maker):
        if not os.access(path, os.X_OK):
            print(f"FAIL: not built: {path}")
            return 1
    skipped = netpods.preflight(ci.skip)
    if skipped is not None:
        return skipped
    own_work = args.work is None
    args.work = args.work or tempfile.mkdtemp(prefix="ddp-torchrun-nodes-")
    os.makedirs(args.work, exist_ok=True)
    args.data = os.path.join(args.work, "data")
    gen = subprocess.run([maker, "--out", args.data, "--train", "640", "--test", "64", "--seed", "3", "--layout", "bin"],
                         capture_output=True, text=True)
    if gen.returncode != 0:
        print("FAIL: make_cifar10_synthetic:\n" + gen.stdout + gen.stderr)
        return 1

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    failed = False
    for n in [int(x) for x in args.nodes.split(",") if x]:
        t0 = time.time()
        problems = run_nodes(args, n)
        print(f"{'PASS' if not problems else 'FAIL'} {n} nodes ({time.time() - t0:.1f} s)")
        for p in problems:
            print(f"  {p}")
        failed = failed or bool(problems)
    if own_work and not args.keep and not failed:
        shutil.rmtree(args.work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
