"""Running one side of a benchmark as N ranks on this host: what the bench/*/run.py drivers share.

    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from ranks import run_ranks, result_lines
    outs = run_ranks([binary, "arg"], 2)           # [(stdout, stderr)] per rank
    for fields in result_lines(outs[0][0]): ...    # {"mode": "bn", "step_ms": "12.3", ...}
"""
import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(cmd, nranks, env_extra=None, timeout=3600, omp_threads=1):
    """Starts nranks copies of cmd with the variables torchrun sets (one node, a free port;
    OMP_NUM_THREADS=omp_threads unless it is None, then this environment's) plus env_extra, and
    waits for all; exits naming the first rank that failed, with its stderr. Returns
    [(stdout, stderr)] per rank."""
    port = free_port()
    procs = []
    for rank in range(nranks):
        env = dict(os.environ)
        if omp_threads is not None:
            env["OMP_NUM_THREADS"] = str(omp_threads)
        env.update(env_extra or {})
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_WORLD_SIZE=str(nranks),
                   GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=timeout) for p in procs]
    for rank, (p, (_, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} rank {rank} failed ({p.returncode}) with {env_extra or {}}:\n{err}")
    return outs


def result_lines(text, kind="RESULT"):
    """The fields of each '<kind> name=value ...' line of text, as dicts of strings."""
    out = []
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        if head == kind:
            out.append(dict(f.split("=", 1) for f in rest.split() if "=" in f))
    return out
