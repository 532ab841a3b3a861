#!/usr/bin/python3
"""kustomize_lite's components, replacements, local config and `$patch: delete` behave as kustomize's:
small kustomizations written to a temp folder, each rendered by kustomize_lite and checked against the
expected objects (or the expected error); when kubectl is installed, `kubectl kustomize` must agree
(same objects, or also an error). Exit 0 when all agree, 1 otherwise.
"""
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

SETTINGS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  claim: new-claim
  cls: fast
"""
PVC = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: old-claim
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: slow
  resources: {requests: {storage: 1Gi}}
"""
JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: job
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x}]
      volumes:
        - {name: scratch, emptyDir: {}}
        - {name: shared, persistentVolumeClaim: {claimName: old-claim}}
"""
COMPONENT = """apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.claim}
    targets:
      - select: {kind: PersistentVolumeClaim}
      - select: {kind: Job}
        fieldPaths:
          - spec.template.spec.volumes.[name=shared].persistentVolumeClaim.claimName
"""
BASE = {"base/kustomization.yaml": "resources: [settings.yaml, pvc.yaml, job.yaml]\n",
        "base/settings.yaml": SETTINGS, "base/pvc.yaml": PVC, "base/job.yaml": JOB}


def claim_of(objs):
    job = next(o for o in objs if o["kind"] == "Job")
    return job["spec"]["template"]["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"]


def pvc(objs):
    return next(o for o in objs if o["kind"] == "PersistentVolumeClaim")


# (name, files, directory to build, check(objs) -> problem or None | error substring)
CASES = [
    ("local config is read, then left out of the output", dict(BASE), "base",
     lambda objs: None if [o["kind"] for o in objs] == ["PersistentVolumeClaim", "Job"] else f"kinds {[o['kind'] for o in objs]}"),
    ("a component's replacements run over its includer's resources (default fieldPath metadata.name)",
     dict(BASE, **{"comp/kustomization.yaml": COMPONENT,
                   "top/kustomization.yaml": "resources: [../base]\ncomponents: [../comp]\n"}), "top",
     lambda objs: None if (pvc(objs)["metadata"]["name"], claim_of(objs)) == ("new-claim", "new-claim") else f"{pvc(objs)['metadata']['name']}, {claim_of(objs)}"),
    ("replacements run after the same kustomization's patches",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
patches:
  - target: {kind: PersistentVolumeClaim}
    patch: |-
      - op: replace
        path: /spec/storageClassName
        value: from-patch
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.cls}
    targets:
      - select: {kind: PersistentVolumeClaim}
        fieldPaths: [spec.storageClassName]
"""}), "top", lambda objs: None if pvc(objs)["spec"]["storageClassName"] == "fast" else pvc(objs)["spec"]["storageClassName"]),
    ("a component runs before its includer's patches",
     dict(BASE, **{"comp/kustomization.yaml": COMPONENT.replace("data.claim", "data.cls").replace(
         "      - select: {kind: PersistentVolumeClaim}\n", "      - select: {kind: PersistentVolumeClaim}\n"
         "        fieldPaths: [spec.storageClassName]\n"), "top/kustomization.yaml": """resources: [../base]
components: [../comp]
patches:
  - target: {kind: PersistentVolumeClaim}
    patch: |-
      - op: replace
        path: /spec/storageClassName
        value: patched
"""}), "top", lambda objs: None if pvc(objs)["spec"]["storageClassName"] == "patched" else pvc(objs)["spec"]["storageClassName"]),
    # kustomize would rewrite every claimName that names the renamed PVC (its nameReference
    # transformer); kustomize_lite does not play that and refuses instead (kubectl succeeds here).
    ("a patch that renames a referenced kind (PVC) is refused",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
patches:
  - target: {kind: PersistentVolumeClaim}
    patch: |-
      - op: replace
        path: /metadata/name
        value: patched
"""}), "top", "renames PersistentVolumeClaim"),
    ("* over list items and a list index",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.cls}
    targets:
      - select: {kind: Job}
        fieldPaths: [spec.template.spec.containers.*.image, spec.template.spec.volumes.0.name]
"""}), "top", lambda objs: None if (objs[1]["spec"]["template"]["spec"]["containers"][0]["image"],
                                    objs[1]["spec"]["template"]["spec"]["volumes"][0]["name"]) == ("fast", "fast") else "not replaced"),
    ("options.create makes a missing field",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.cls}
    targets:
      - select: {kind: Job}
        fieldPaths: [metadata.labels.tier]
        options: {create: true}
"""}), "top", lambda objs: None if objs[1]["metadata"].get("labels") == {"tier": "fast"} else str(objs[1]["metadata"])),
    ("options.delimiter/index replace one part of a string (pvc://<claim>/path)",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.claim}
    targets:
      - select: {kind: Job}
        fieldPaths: [metadata.annotations.logs, metadata.annotations.tail, metadata.annotations.head]
        options: {delimiter: "/", index: 2}
"""}, **{"base/job.yaml": JOB.replace("  name: job\n", "  name: job\n  annotations: {logs: pvc://old-claim/tb, tail: a/b, head: x}\n")}), "top",
     lambda objs: None if objs[1]["metadata"]["annotations"] == {"logs": "pvc://new-claim/tb", "tail": "a/b/new-claim",
                                                                 "head": "x/new-claim"} else str(objs[1]["metadata"]["annotations"])),
    ("options.delimiter with a negative index prepends",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.cls}
    targets:
      - select: {kind: Job}
        fieldPaths: [metadata.annotations.p]
        options: {delimiter: "-", index: -1}
"""}, **{"base/job.yaml": JOB.replace("  name: job\n", "  name: job\n  annotations: {p: a-b}\n")}), "top",
     lambda objs: None if objs[1]["metadata"]["annotations"] == {"p": "fast-a-b"} else str(objs[1]["metadata"]["annotations"])),
    ("reject leaves a selected resource alone",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.cls}
    targets:
      - select: {version: v1}
        reject: [{kind: ConfigMap}, {kind: Job}]
        fieldPaths: [spec.storageClassName]
"""}), "top", lambda objs: None if pvc(objs)["spec"]["storageClassName"] == "fast" else "not replaced"),
    ("a missing target field is an error", dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.claim}
    targets:
      - select: {kind: Job}
        fieldPaths:
          - spec.template.spec.volumes.[name=nope].persistentVolumeClaim.claimName
"""}), "top", "unable to find field"),
    ("a missing source field is an error", dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: settings, fieldPath: data.nope}
    targets:
      - select: {kind: Job}
"""}), "top", "is missing for replacement source"),
    ("a source that selects nothing is an error", dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
replacements:
  - source: {kind: ConfigMap, name: other}
    targets:
      - select: {kind: Job}
"""}), "top", "nothing selected by"),
    ("$patch: delete removes its target",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
patches:
  - target: {kind: PersistentVolumeClaim}
    patch: |-
      $patch: delete
      apiVersion: v1
      kind: PersistentVolumeClaim
      metadata:
        name: whatever
"""}), "top", lambda objs: None if [o["kind"] for o in objs] == ["Job"] else f"kinds {[o['kind'] for o in objs]}"),
    ("$patch: delete that matches nothing is an error",
     dict(BASE, **{"top/kustomization.yaml": """resources: [../base]
patches:
  - patch: |-
      $patch: delete
      apiVersion: v1
      kind: PersistentVolumeClaim
      metadata:
        name: nope
"""}), "top", "patch"),
    ("a Component listed as a resource is an error",
     dict(BASE, **{"comp/kustomization.yaml": COMPONENT, "top/kustomization.yaml": "resources: [../base, ../comp]\n"}),
     "top", "Component"),
    ("a resource that contains the kustomization is a cycle",
     dict(BASE, **{"base/sub/kustomization.yaml": "resources: [..]\n"}), "base/sub", "cycle"),
]


def main():
    kubectl = shutil.which("kubectl")
    problems, notes = [], []
    if not kubectl:
        ci.missing("kubectl is not on PATH: kustomize_lite checked against the expected results only", problems, notes)
    for name, files, build, want in CASES:
        with tempfile.TemporaryDirectory(prefix="ddp-kl-") as tmp:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                open(os.path.join(tmp, rel), "w", encoding="utf-8").write(text)
            d = os.path.join(tmp, build)
            try:
                objs, err = kustomize_lite.render(d), None
            except kustomize_lite.KustomizeError as e:
                objs, err = None, str(e)
            if isinstance(want, str):
                why = None if err and want in err else f"expected an error containing {want!r}, got {err or objs}"
            else:
                why = err or want(objs)
            theirs = None
            if kubectl and "renames" not in name:
                out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
                theirs = [o for o in yaml.safe_load_all(out.stdout) if o] if out.returncode == 0 else None
                if (theirs is None) != (objs is None) or (objs is not None and objs != theirs):
                    why = (why + "; " if why else "") + f"kubectl kustomize differs: {out.stderr.strip()[:300] or theirs}"
            print(f"{'ok  ' if not why else 'FAIL'} {name}")
            if why:
                problems.append(f"{name}: {why}")
    for n in notes:
        print(f"note: {n}")
    for p in problems:
        print(f"FAIL: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
