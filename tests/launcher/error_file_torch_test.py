#!/usr/bin/python3
"""TORCHELASTIC_ERROR_FILE against the real thing: PyTorch's own elastic error handling (the python3-torch
of the suite: 1.13 on Debian 12, 2.6 in the Debian 13 root).

  1. We write, torch reads. ddp_test_trainer given a bad flag under ddprun ends in
     ddp::report_and_exit_code, which records the error in its TORCHELASTIC_ERROR_FILE. torch's
     ProcessFailure must read that record (message, timestamp) and ChildFailedError must format it;
     ddprun's own error file (the root cause with "errorCode") must read the same way, and torch's
     ErrorHandler.dump_error_file (what torchrun's agent does with a child's record) must take it.
  2. Torch writes, we read. A Python worker under ddprun whose main() carries torch's @record raises
     ValueError: ddprun's root-cause block must show torch's traceback, and its own error file must
     hold torch's message with the exit code.

  error_file_torch_test.py --ddprun PATH --trainer PATH
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from torch.distributed.elastic.multiprocessing.errors.error_handler import ErrorHandler

PYTHON_WORKER = """
import os
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    if os.environ["RANK"] == "1":
        raise ValueError("boom from rank " + os.environ["RANK"])

main()
"""


def run_ddprun(ddprun, args, env):
    return subprocess.run([ddprun, "--standalone", "--max-restarts", "0", "--monitor-interval", "0.05"] + args,
                          env=env, capture_output=True, text=True, timeout=120)


def check(cond, what, output=""):
    if not cond:
        print("FAIL:", what)
        if output:
            print(output[-4000:])
        sys.exit(1)
    print("ok:", what)


def we_write_torch_reads(ddprun, trainer, work, env):
    own = os.path.join(work, "ddprun-error.json")
    before = int(time.time())
    # One worker: with two, ddprun may stop the second before it fails and records anything.
    p = run_ddprun(ddprun, ["--nproc-per-node", "1", "--log-dir", os.path.join(work, "logs"), "--run-id", "r1",
                            "--", trainer, "--epochs", "0"],
                   dict(env, TORCHELASTIC_ERROR_FILE=own))
    after = int(time.time())
    out = p.stdout + p.stderr
    check(p.returncode == 2, f"ddprun exits 2 (got {p.returncode})", out)
    for rank in (0,):
        path = os.path.join(work, "logs", "r1", "attempt_0", str(rank), "error.json")
        check(os.path.isfile(path), f"rank {rank} wrote {path}", out)
        failure = ProcessFailure(local_rank=rank, pid=0, exitcode=2, error_file=path)
        msg = failure.message
        check(isinstance(msg, dict) and msg["message"].startswith("ddp::ConfigError: ") and "--epochs" in msg["message"],
              f"torch's ProcessFailure reads rank {rank}'s message: {msg!r}")
        check(before <= failure.timestamp <= after, f"and its timestamp {failure.timestamp} in [{before}, {after}]")
        text = ChildFailedError("ddp_test_trainer", {rank: failure}).format_msg()
        check("ddp::ConfigError: " in text and "Root Cause (first observed failure)" in text,
              "torch's ChildFailedError formats it", text)
    check("Root Cause (first observed failure):" in out and "traceback : ddp::ConfigError: " in out,
          "ddprun prints the root-cause block", out)
    agent = ProcessFailure(local_rank=0, pid=0, exitcode=2, error_file=own)
    check(isinstance(agent.message, dict) and agent.message.get("errorCode") == 2
          and agent.message["message"].startswith("ddp::ConfigError: "),
          f"ddprun's own error file is the root cause with errorCode 2: {agent.message!r}")
    # What torchrun's agent does with a child's record: copy it into its own, with the exit code.
    parent = os.path.join(work, "parent-error.json")
    os.environ["TORCHELASTIC_ERROR_FILE"] = parent
    ErrorHandler().dump_error_file(own, 2)
    del os.environ["TORCHELASTIC_ERROR_FILE"]
    with open(parent) as f:
        copied = json.load(f)
    check(copied["message"]["message"] == agent.message["message"] and copied["message"]["errorCode"] == 2,
          "torch's ErrorHandler.dump_error_file takes ddprun's record")


def torch_writes_we_read(ddprun, work, env):
    script = os.path.join(work, "fails.py")
    with open(script, "w") as f:
        f.write(PYTHON_WORKER)
    own = os.path.join(work, "ddprun-error-py.json")
    p = run_ddprun(ddprun, ["--nproc-per-node", "2", "--log-dir", os.path.join(work, "pylogs"), "--run-id", "r2", script],
                   dict(env, TORCHELASTIC_ERROR_FILE=own))
    out = p.stdout + p.stderr
    check(p.returncode == 1, f"ddprun exits 1, the Python worker's code (got {p.returncode})", out)
    check("fails.py FAILED" in out, "the block is titled with the script's name, as torchrun's", out)
    check("  rank      : 1 (local_rank: 1)" in out, "rank 1 is the root cause", out)
    check("  traceback : Traceback (most recent call last):" in out and "ValueError: boom from rank 1" in out,
          "ddprun shows the traceback torch's @record wrote", out)
    with open(own) as f:
        mine = json.load(f)
    check(mine["message"]["message"] == "ValueError: boom from rank 1" and mine["message"]["errorCode"] == 1,
          f"ddprun's own error file holds torch's message and the exit code: {mine!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ddprun", required=True)
    ap.add_argument("--trainer", required=True)
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "TORCHELASTIC_ERROR_FILE"}
    env["OMP_NUM_THREADS"] = "1"
    # ddprun runs a .py with the python3 it finds in PATH: this one, which has torch.
    env["PATH"] = os.path.dirname(sys.executable) + ":" + env.get("PATH", "/usr/bin:/bin")
    with tempfile.TemporaryDirectory(prefix="ddp-error-file-") as work:
        we_write_torch_reads(a.ddprun, a.trainer, work, env)
        torch_writes_we_read(a.ddprun, work, env)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
