#!/usr/bin/python3
"""The shared volume's claim name and StorageClass are set in ONE place,
k8s/storage/settings/shared-volume.yaml: change them there in a copy of k8s/ and every kustomization,
rendered, must carry the new values in every persistentVolumeClaim.claimName (any depth: PyTorchJob
replicas, Jobs, the fetch Pod, the TrainJob's runtime patch) and in every PVC's name and
storageClassName (except where an overlay removes the class on purpose: overlays/ranzcr-minikf uses
the cluster's default), and the old name must appear nowhere in what is applied.
Rendered with kustomize_lite and, when kubectl is installed, with `kubectl kustomize` too.

  claim_name_test.py [--repo .]
Exit 0 when every claim follows; 1 with one line per problem.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import ci  # noqa: E402
import kustomize_lite  # noqa: E402
import validate_manifests  # noqa: E402

SETTINGS = os.path.join("storage", "settings", "shared-volume.yaml")
# Overlays that take the cluster's default StorageClass (they remove spec.storageClassName).
DEFAULT_CLASS = {os.path.join("overlays", "ranzcr-minikf")}


def claims(node, path=""):
    """(path, claimName) of every persistentVolumeClaim.claimName in an object."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "persistentVolumeClaim" and isinstance(v, dict):
                yield f"{path}.{k}.claimName", v.get("claimName")
            if k == "logspath" and isinstance(v, str) and v.startswith("pvc://"):  # a Kubeflow Tensorboard
                yield f"{path}.{k}", v[len("pvc://"):].split("/")[0]
            yield from claims(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from claims(v, f"{path}[{i}]")


def renderings(k8s_dir):
    """(renderer, kustomization relative to k8s/, objects) for every kustomization."""
    kubectl = shutil.which("kubectl")
    for d in validate_manifests.kustomization_dirs(k8s_dir):
        rel = os.path.relpath(d, k8s_dir)
        yield "kustomize_lite", rel, kustomize_lite.render(d)
        if kubectl:
            out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"kubectl kustomize {rel}: {out.stderr.strip()}")
            yield "kubectl", rel, [o for o in yaml.safe_load_all(out.stdout) if o]


def check(k8s_dir, name, cls, old_name=None):
    problems, found = [], 0
    for renderer, rel, objs in renderings(k8s_dir):
        where = f"{renderer} {rel}"
        for o in objs:
            for path, claim in claims(o):
                found += 1
                if claim != name:
                    problems.append(f"{where}: {o['kind']}/{o['metadata']['name']}{path} = {claim!r}, expected {name!r}")
            if o.get("kind") == "PersistentVolumeClaim":
                if o["metadata"]["name"] != name:
                    problems.append(f"{where}: PVC named {o['metadata']['name']!r}, expected {name!r}")
                want = None if rel in DEFAULT_CLASS else cls
                if o["spec"].get("storageClassName") != want:
                    problems.append(f"{where}: PVC storageClassName {o['spec'].get('storageClassName')!r}, expected {want!r}")
        if old_name and old_name in yaml.safe_dump_all(objs):
            problems.append(f"{where}: the old claim name {old_name!r} is still in the rendered output")
    return found, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    a = ap.parse_args()
    k8s = os.path.join(os.path.abspath(a.repo), "k8s")
    settings = yaml.safe_load(open(os.path.join(k8s, SETTINGS), encoding="utf-8"))["data"]
    problems, notes = [], []
    if not shutil.which("kubectl"):
        ci.missing("kubectl is not on PATH: rendered with kustomize_lite only", problems, notes)
    found, p = check(k8s, settings["claimName"], settings["storageClassName"])
    problems += p
    print(f"as committed: {found} claims, all {settings['claimName']!r}" if not p else "as committed: mismatches")
    with tempfile.TemporaryDirectory(prefix="ddp-claim-") as tmp:
        copy = os.path.join(tmp, "k8s")
        shutil.copytree(k8s, copy)
        path = os.path.join(copy, SETTINGS)
        text = open(path, encoding="utf-8").read()
        for key, new in (("claimName", "team-volume"), ("storageClassName", "nfs-client")):
            line = f"  {key}: {settings[key]}\n"
            if text.count(line) != 1:
                problems.append(f"{SETTINGS}: expected one line {line.strip()!r} to change")
            text = text.replace(line, f"  {key}: {new}\n")
        open(path, "w", encoding="utf-8").write(text)
        found2, p = check(copy, "team-volume", "nfs-client", old_name=settings["claimName"])
        problems += p
        print(f"after changing {SETTINGS} only: {found2} claims checked")
        if found2 != found or found2 < 20:
            problems.append(f"claims found: {found} as committed, {found2} after the change (expected the same, >= 20)")
    for n in notes:
        print(f"note: {n}")
    for p in problems:
        print(f"FAIL: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
