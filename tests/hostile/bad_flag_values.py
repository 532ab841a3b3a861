#!/usr/bin/python3
"""Every value-taking flag of every binary, given hostile values: none may crash or hang.

For each binary, the flags that take a value are read from its own --help (so a new flag is covered
the day it is added), and each is run with each value of HOSTILE below, in an empty folder, with a
missing data folder so that an accepted value ends the run quickly. What must hold for every run:

  - the process ends by itself within TIMEOUT s (no hang: a never-ending wait is a defect);
  - it exits with a code, not by a signal, and the code is not 1 ("unexpected internal error", the
    class of an uncaught exception) — a value is either accepted or rejected as bad configuration;
  - a run that fails says why on stderr;
  - where the value is text that no number can be and the flag takes a number, the run exits 2 and
    its stderr names the flag (no silent default, no "stoi").

  bad_flag_values.py --binary PATH [--binary PATH ...] [--only NAME] [-v]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT = 60
# Values a user, a templating bug or an attacker may put in a flag: not a number, negative, past
# every integer type, past every double, NaN, an empty string, control bytes and a 64 KiB string.
HOSTILE = ["xyz", "-1", "99999999999999999999999", "1e999", "nan", "", "\x01\x7f", "9" * 65536]
NOT_A_NUMBER = "xyz"
# A path or name flag takes any text, so only the values that stress the parser itself are tried.
HOSTILE_TEXT = ["", "\x01\x7f", "9" * 65536]

# How each binary is started so that an accepted value ends the run at once: trainers on a data
# folder that does not exist (exit 2 naming it), ddprun on /bin/true with short timeouts, the data
# makers into a folder of the run. The fuzzed flag comes last, so it wins over these.
BINARIES = {
    "train_cifar10": ["--data-dir", "missing-data", "--epochs", "1"],
    "train_ranzcr": ["--data-dir", "missing-data", "--epochs", "1"],
    "ddprun": ["--join-timeout", "5", "--grace-period", "2", "--standalone"],
    "make_cifar10_synthetic": ["--out", "out", "--train", "5", "--test", "5"],
    "make_cifar10_from_idx": ["--source", "missing-source", "--out", "out"],
    "make_ranzcr_synthetic": ["--out", "out", "--images", "3", "--size", "16"],
}
# ddprun's program follows its options; the others take none.
TRAILING = {"ddprun": ["--", "/bin/true"]}
# Flags whose value is a path, a name or free text: any text is a valid value, so only the
# crash/hang/exit-class checks apply. Everything else takes a number or a fixed choice.
TEXT_FLAGS = {"data-dir", "model-dir", "csv", "image-dir", "cache-dir", "pretrained", "test-dir",
              "out", "weights", "checkpoint-dir", "resume", "metrics-file", "katib-metrics-file", "tensorboard-dir", "source", "class-names",
              "master-addr", "run-id", "role", "log-dir", "rdzv-endpoint", "rdzv-id", "rdzv-conf",
              "rdzv-backend", "start-method", "tee", "redirects"}
# Flags whose value is read elsewhere and changes what the run does (ddprun --nproc-per-node spawns
# that many programs): the values above stay harmless for them, so none is excluded.


def value_flags(binary):
    """The long flags that take a value, as --help lists them: an option row ("      --flag" or
    "  -f, --flag", descriptions start further right) with a value name after the flag."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    text = out.stdout + out.stderr
    flags = re.findall(r"^(?:  -\w, |      )--([a-z0-9-]+) [^ ]", text, re.M)
    if not flags:
        raise SystemExit(f"{binary} --help lists no flag with a value:\n{text}")
    return sorted(set(flags))


def check(binary, name, flag, value, verbose):
    """Runs one case; returns a description of what went wrong, or None."""
    args = [binary] + BINARIES[name] + [f"--{flag}", value] + TRAILING.get(name, [])
    shown = repr(value if len(value) < 40 else value[:20] + f"...({len(value)} chars)")
    env = {"PATH": "/usr/bin:/bin", "DDP_LOG_LEVEL": "info"}
    with tempfile.TemporaryDirectory(prefix="ddp-bad-flag-") as cwd:
        try:
            p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f"{name} --{flag} {shown}: still running after {TIMEOUT} s (a hang)"
    err = p.stderr.decode(errors="replace")
    if verbose:
        print(f"  {name} --{flag} {shown}: exit {p.returncode}: {err.strip().splitlines()[-1:] }")
    if p.returncode < 0:
        return f"{name} --{flag} {shown}: killed by signal {-p.returncode}\n{err[-2000:]}"
    if p.returncode == 1 or p.returncode >= 128 and not (name == "ddprun" and p.returncode in (201, 202)):
        return f"{name} --{flag} {shown}: exit {p.returncode} (neither accepted nor rejected as bad input)\n{err[-2000:]}"
    if p.returncode != 0 and not err.strip():
        return f"{name} --{flag} {shown}: exit {p.returncode} with nothing on stderr"
    if value == NOT_A_NUMBER and flag not in TEXT_FLAGS:
        if p.returncode != 2 or f"--{flag}" not in err and flag not in err:
            return (f"{name} --{flag} {shown}: a value that is no number nor choice must exit 2 naming "
                    f"--{flag}; got exit {p.returncode}\n{err[-2000:]}")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, help="a binary to check (its file name says which)")
    ap.add_argument("--only", help="one binary")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    found = {os.path.basename(b): os.path.abspath(b) for b in a.binary}
    unknown = [n for n in found if n not in BINARIES]
    if unknown:
        print(f"no start arguments known for {unknown}: add them to BINARIES")
        return 1
    names = [a.only] if a.only else sorted(found)
    cases = []
    for name in names:
        flags = value_flags(found[name])
        print(f"{name}: {len(flags)} flags")
        for flag in flags:
            for value in HOSTILE_TEXT if flag in TEXT_FLAGS else HOSTILE:
                cases.append((found[name], name, flag, value, a.verbose))
    # The runs are independent processes in their own folders: run them side by side.
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for problem in pool.map(lambda c: check(*c), cases):
            if problem:
                failures.append(problem)
                print("FAIL:", problem.splitlines()[0], flush=True)
    cases = len(cases)
    print(f"{cases} runs, {len(failures)} failed")
    for f in failures:
        print("\n" + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
