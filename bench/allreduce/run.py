#!/usr/bin/python3
"""Allreduce bandwidth, ddp's gloo process group vs torch.distributed Gloo, in the same run.

Starts N ranks of bench_allreduce and of torch_allreduce.py over loopback, alternating the two
for --rounds rounds, and prints one table with the median time per size:
algbw = bytes / time, busbw = algbw * 2(n-1)/n (the traffic a ring moves per rank).

  /usr/bin/python3 bench/allreduce/run.py --bench build/bench/allreduce/bench_allreduce
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_once(cmd, nranks, env_extra):
    port = free_port()
    procs = []
    for rank in range(nranks):
        env = dict(os.environ)
        env.update(env_extra)
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_WORLD_SIZE=str(nranks),
                   GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=1800) for p in procs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} rank {rank} failed ({p.returncode}):\n{err}")
    result = {}
    for line in outs[0][0].splitlines():
        b, iters, sec = line.split()
        result[int(b)] = float(sec)
    return result


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/bench/allreduce/bench_allreduce", help="bench_allreduce binary")
    p.add_argument("--python", default="/usr/bin/python3", help="python with torch (Debian: /usr/bin/python3)")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--seconds", type=float, default=0.5, help="target time per size and round")
    a = p.parse_args()

    common = ["--min-bytes", str(a.min_bytes), "--max-bytes", str(a.max_bytes), "--seconds", str(a.seconds)]
    impls = {
        "ddp": [a.bench] + common,
        "torch": [a.python, os.path.join(HERE, "torch_allreduce.py")] + common,
    }
    # Same environment for both: loopback, one OpenMP thread, quiet logs.
    env = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "DDP_LOG_LEVEL": "warn"}
    times = {name: {} for name in impls}
    load_before = os.getloadavg()[0]
    for r in range(a.rounds):
        for name, cmd in (impls.items() if r % 2 == 0 else reversed(impls.items())):
            for size, sec in run_once(cmd, a.nranks, env).items():
                times[name].setdefault(size, []).append(sec)
            print(f"round {r + 1}/{a.rounds}: {name} done", file=sys.stderr)

    n = a.nranks
    factor = 2 * (n - 1) / n
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"allreduce float32, {n} ranks over loopback; {os.cpu_count()} CPUs ({cpu}); "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"time and bandwidth: median of {a.rounds} rounds (ddp and torch alternate); best/best: ratio of the "
          f"fastest rounds. GB/s = 1e9 B/s, busbw = algbw * 2(n-1)/n")
    print(f"{'size':>9} | {'ddp time':>10} {'algbw':>7} {'busbw':>7} | {'torch time':>10} {'algbw':>7} {'busbw':>7} "
          f"| {'ddp/torch':>9} {'best/best':>9}")
    print("-" * 96)
    for size in sorted(times["ddp"]):
        d = statistics.median(times["ddp"][size])
        t = statistics.median(times["torch"][size])
        best = min(times["torch"][size]) / min(times["ddp"][size])
        da, ta = size / d / 1e9, size / t / 1e9
        print(f"{human(size):>9} | {d * 1e6:8.0f}us {da:7.3f} {da * factor:7.3f} | {t * 1e6:8.0f}us {ta:7.3f} "
              f"{ta * factor:7.3f} | {t / d:8.2f}x {best:8.2f}x")

if __name__ == "__main__":
    main()
