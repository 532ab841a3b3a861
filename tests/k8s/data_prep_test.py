#!/usr/bin/python3
"""The data-prep Jobs (k8s/data/cifar10, k8s/data/ranzcr) never write synthetic data unless asked by
name. Each Job's script, as kustomize renders it, runs under /bin/sh with /shared rewritten to a temp
folder (the volume) and the Job's own environment:
  - no dataset, no request: exit 2, nothing written, and stderr names the path it looked at, what
    to put there and how to ask for synthetic data (k8s/data/synthetic/<dataset>);
  - DDP_SYNTHETIC_DATA naming another dataset (or anything else): exit 2 naming the variable;
  - the request as k8s/data/synthetic/<dataset> renders it (DDP_SYNTHETIC_DATA=<dataset>): exit 0,
    the dataset and a SYNTHETIC note written; the Job without the request then exits 0 and says the
    data is SYNTHETIC (needs the built make_*_synthetic tools, else that part is a note);
  - a dataset already there: exit 0, nothing written.

  data_prep_test.py [--repo .] [--build-dir build]
Exit 0 when all hold; 1 with one line per problem.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import ci  # noqa: E402
import kustomize_lite  # noqa: E402

TOOLS = {"cifar10": "tools/make_cifar10_synthetic/make_cifar10_synthetic",
         "ranzcr": "tools/make_ranzcr_synthetic/make_ranzcr_synthetic"}
# What a dataset on the volume looks like to each Job, and what the synthetic one must contain.
PRESENT = {"cifar10": "data/cifar10/cifar-10-batches-bin/test_batch.bin", "ranzcr": "data/ranzcr/train.csv"}
WRITTEN = {"cifar10": ["data/cifar10/cifar-10-batches-bin/data_batch_5.bin", "data/cifar10/cifar-10-batches-py/test_batch",
                       "data/cifar10/SYNTHETIC"],
           "ranzcr": ["data/ranzcr/train.csv", "data/ranzcr/train", "data/ranzcr/SYNTHETIC"]}


def job_of(repo, path):
    jobs = [o for o in kustomize_lite.render(os.path.join(repo, path)) if o["kind"] == "Job"]
    if len(jobs) != 1:
        raise RuntimeError(f"{path}: expected one Job, rendered {len(jobs)}")
    return jobs[0]


def script_and_env(job):
    c = job["spec"]["template"]["spec"]["containers"][0]
    argv = (c.get("command") or []) + (c.get("args") or [])
    if argv[:2] != ["/bin/sh", "-c"] or len(argv) != 3:
        raise RuntimeError(f"Job {job['metadata']['name']}: expected /bin/sh -c SCRIPT, got {argv[:2]}")
    return argv[2], {e["name"]: e.get("value", "") for e in c.get("env") or []}


def run(script, env, volume, tools_dir):
    """The script as the pod runs it, its volume at `volume` instead of /shared."""
    full = {"PATH": (tools_dir + ":" if tools_dir else "") + "/usr/bin:/bin", "HOSTNAME": "prepare-test"}
    full.update(env)
    return subprocess.run(["/bin/sh", "-c", script.replace("/shared", volume)], env=full,
                          capture_output=True, text=True, timeout=600)


def check_dataset(repo, dataset, build_dir, problems, notes):
    job = job_of(repo, f"k8s/data/{dataset}")
    script, env = script_and_env(job)
    _, asked = script_and_env(job_of(repo, f"k8s/data/synthetic/{dataset}"))
    if env.get("DDP_SYNTHETIC_DATA") != "":
        problems.append(f"{dataset}: the Job's DDP_SYNTHETIC_DATA is {env.get('DDP_SYNTHETIC_DATA')!r}, expected empty")
    if asked.get("DDP_SYNTHETIC_DATA") != dataset:
        problems.append(f"{dataset}: k8s/data/synthetic/{dataset} sets DDP_SYNTHETIC_DATA={asked.get('DDP_SYNTHETIC_DATA')!r}, "
                        f"expected {dataset!r}")
    tools_dir = None
    tool = os.path.join(build_dir, TOOLS[dataset]) if build_dir else None
    if tool and os.access(tool, os.X_OK):
        tools_dir = os.path.dirname(os.path.abspath(tool))
    with tempfile.TemporaryDirectory(prefix=f"ddp-prep-{dataset}-") as vol:
        r = run(script, env, vol, tools_dir)
        looked = os.path.join(vol, PRESENT[dataset])
        wants = [looked, "put the real dataset there", f"kubectl apply -k k8s/data/synthetic/{dataset}",
                 f"DDP_SYNTHETIC_DATA={dataset}"]
        missing = [w for w in wants if w not in r.stderr]
        if r.returncode != 2 or missing:
            problems.append(f"{dataset}: no dataset, no request: exit {r.returncode} (expected 2), stderr lacks {missing}: {r.stderr!r}")
        elif os.listdir(vol) and any(os.path.exists(os.path.join(vol, w)) for w in WRITTEN[dataset]):
            problems.append(f"{dataset}: no request, yet something was written: {os.listdir(vol)}")
        else:
            print(f"{dataset}: no dataset, no request: exit 2: {r.stderr.splitlines()[0]}")
        other = "ranzcr" if dataset == "cifar10" else "cifar10"
        for bad in (other, "1", "yes"):
            r = run(script, dict(env, DDP_SYNTHETIC_DATA=bad), vol, tools_dir)
            if r.returncode != 2 or f"DDP_SYNTHETIC_DATA='{bad}'" not in r.stderr:
                problems.append(f"{dataset}: DDP_SYNTHETIC_DATA={bad}: exit {r.returncode}, stderr {r.stderr!r}")
        print(f"{dataset}: DDP_SYNTHETIC_DATA naming another dataset or not a name: exit 2 naming the variable")
        if tools_dir is None:
            ci.missing(f"{TOOLS[dataset]} is not built: the synthetic write of {dataset} was not run", problems, notes)
        else:
            r = run(script, dict(env, **asked), vol, tools_dir)
            absent = [w for w in WRITTEN[dataset] if not os.path.exists(os.path.join(vol, w))]
            if r.returncode != 0 or absent:
                problems.append(f"{dataset}: asked by name: exit {r.returncode}, missing {absent}: {r.stderr[-500:]!r}")
            else:
                print(f"{dataset}: asked by name: exit 0, {r.stdout.strip().splitlines()[-1]}")
            r = run(script, env, vol, tools_dir)
            if r.returncode != 0 or "SYNTHETIC" not in r.stdout:
                problems.append(f"{dataset}: after the synthetic write, without the request: exit {r.returncode}, "
                                f"stdout {r.stdout!r} (expected 0 and a line saying the data is SYNTHETIC)")
            else:
                print(f"{dataset}: the data is then reported as synthetic: {r.stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix=f"ddp-prep-{dataset}-") as vol:
        os.makedirs(os.path.dirname(os.path.join(vol, PRESENT[dataset])))
        open(os.path.join(vol, PRESENT[dataset]), "w").close()
        r = run(script, env, vol, tools_dir)
        if r.returncode != 0 or "is on the volume" not in r.stdout or os.path.exists(os.path.join(vol, WRITTEN[dataset][-1])):
            problems.append(f"{dataset}: a dataset present: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
        else:
            print(f"{dataset}: a dataset present: exit 0, nothing written")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--build-dir")
    a = ap.parse_args()
    problems, notes = [], []
    for dataset in ("cifar10", "ranzcr"):
        check_dataset(os.path.abspath(a.repo), dataset, a.build_dir, problems, notes)
    for n in notes:
        print(f"note: {n}")
    for p in problems:
        print(f"FAIL: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
