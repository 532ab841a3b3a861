#!/usr/bin/python3
"""Allreduce bandwidth, ddp's gloo process group vs torch.distributed Gloo, in the same run.

Starts N ranks of bench_allreduce and of torch_allreduce.py over loopback, taking turns for
--rounds rounds (the order rotates every round, so drift in machine load touches every column
alike), and prints one table with the median time per size: algbw = bytes / time,
busbw = algbw * 2(n-1)/n (the traffic a ring moves per rank).

  /usr/bin/python3 bench/allreduce/run.py --bench build/bench/allreduce/bench_allreduce

ddp can run in several environments in the same run, each its own column (--variant, repeatable;
LABEL:VAR=VALUE[,VAR=VALUE...]). --shm-vs-tcp is the shorthand for issue 16's comparison:
  --variant "ddp shm:DDP_SHM=1" --variant "ddp tcp:DDP_SHM=0"
and adds the ratio of the first variant over the second. Every ddp variant's rank 0 log line
"transport: ..." is printed above the table, so a column says what it measured.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from ranks import run_ranks  # noqa: E402
TORCH = "torch"  # the key of torch.distributed's column


def run_once(cmd, nranks, env_extra):
    """Runs one implementation at nranks; returns ({bytes: seconds}, rank 0's 'transport:' log line or None)."""
    out, err = run_ranks(cmd, nranks, env_extra, timeout=1800, omp_threads=None)[0]
    result = {}
    for line in out.splitlines():
        b, iters, sec = line.split()
        result[int(b)] = float(sec)
    transport = next((l[l.index("transport:"):].strip() for l in err.splitlines() if "transport:" in l), None)
    return result, transport


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def parse_variant(text):
    """'LABEL:VAR=VALUE,VAR=VALUE' -> (label, {VAR: VALUE}); ValueError naming the bad text."""
    label, sep, assignments = text.partition(":")
    env = {}
    for item in filter(None, assignments.split(",")):
        var, eq, value = item.partition("=")
        if not eq or not var:
            raise ValueError(f"--variant '{text}': expected LABEL:VAR=VALUE[,VAR=VALUE...]")
        env[var] = value
    if not sep or not label.strip() or label == TORCH:
        raise ValueError(f"--variant '{text}': expected LABEL:VAR=VALUE[,VAR=VALUE...] (LABEL not '{TORCH}')")
    return label.strip(), env


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/bench/allreduce/bench_allreduce", help="bench_allreduce binary")
    p.add_argument("--python", default="/usr/bin/python3", help="python with torch (Debian: /usr/bin/python3)")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-bytes", type=int, default=4096)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--seconds", type=float, default=0.5, help="target time per size and round")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL:VAR=VALUE[,...]",
                   help="run ddp with these environment variables as its own column (repeatable)")
    p.add_argument("--shm-vs-tcp", action="store_true",
                   help='same as --variant "ddp shm:DDP_SHM=1" --variant "ddp tcp:DDP_SHM=0"')
    p.add_argument("--out", default="", help="also write every round's times as JSON here")
    a = p.parse_args()

    try:
        variants = [parse_variant(v) for v in a.variant]
    except ValueError as e:
        p.error(str(e))  # exit status 2: bad input
    if a.shm_vs_tcp:
        variants += [("ddp shm", {"DDP_SHM": "1"}), ("ddp tcp", {"DDP_SHM": "0"})]
    if not variants:
        variants = [("ddp", {})]  # the environment as it is
    if len({label for label, _ in variants}) != len(variants):
        p.error("two --variant columns have the same LABEL")

    common = ["--min-bytes", str(a.min_bytes), "--max-bytes", str(a.max_bytes), "--seconds", str(a.seconds)]
    # Same environment for all: loopback, one OpenMP thread. Info logs for ddp: one "transport:" line
    # at start-up (none per operation).
    env = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    impls = [(label, [a.bench] + common, dict(env, DDP_LOG_LEVEL="info", **extra)) for label, extra in variants]
    impls.append((TORCH, [a.python, os.path.join(HERE, "torch_allreduce.py")] + common, env))
    names = [name for name, _, _ in impls]
    times = {name: {} for name in names}
    transports = {name: set() for name in names}
    load_before = os.getloadavg()[0]
    for r in range(a.rounds):
        k = r % len(impls)
        for name, cmd, env_extra in impls[k:] + impls[:k]:
            result, transport = run_once(cmd, a.nranks, env_extra)
            for size, sec in result.items():
                times[name].setdefault(size, []).append(sec)
            if transport:
                transports[name].add(transport)
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
    for label, extra in variants:
        said = "; ".join(sorted(transports[label])) or "no 'transport:' line logged"
        print(f"  {label} ({' '.join(f'{k}={v}' for k, v in extra.items()) or 'environment as is'}): {said}")
    print(f"time and bandwidth: median of {a.rounds} rounds (the columns take turns); X/torch: torch's median "
          f"time / X's (higher: X faster); best/best: the same for the fastest rounds. GB/s = 1e9 B/s, "
          f"busbw = algbw * 2(n-1)/n")
    ddp_names = names[:-1]
    head = f"{'size':>9} |"
    for name in names:
        head += f" {name + ' time':>14} {'algbw':>6} {'busbw':>6} |"
    for name in ddp_names:
        head += f" {name + '/torch':>14} {'best/best':>9} |"
    if len(ddp_names) >= 2:
        head += f" {ddp_names[0] + '/' + ddp_names[1]:>15}"
    print(head)
    print("-" * len(head))
    for size in sorted(times[ddp_names[0]]):
        med = {name: statistics.median(times[name][size]) for name in names}
        best = {name: min(times[name][size]) for name in names}
        line = f"{human(size):>9} |"
        for name in names:
            bw = size / med[name] / 1e9
            line += f" {med[name] * 1e6:12.0f}us {bw:6.3f} {bw * factor:6.3f} |"
        for name in ddp_names:
            line += f" {med[TORCH] / med[name]:13.2f}x {best[TORCH] / best[name]:8.2f}x |"
        if len(ddp_names) >= 2:
            line += f" {med[ddp_names[1]] / med[ddp_names[0]]:14.2f}x"
        print(line)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"nranks": n, "rounds": a.rounds, "variants": dict(variants),
                       "transports": {k: sorted(v) for k, v in transports.items()},
                       "seconds": {name: {str(s): v for s, v in t.items()} for name, t in times.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
