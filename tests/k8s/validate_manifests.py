#!/usr/bin/python3
"""Validates every manifest under k8s/ and every kustomization rendered, against the CRDs in
tests/k8s/schemas/ (see k8s_schema.py for what "valid" means), then proves the validator rejects
typos (a committed typo'd copy, plus mutations of the real manifests).

  validate_manifests.py --repo . [--self-test-only]
  validate_manifests.py --repo . --flags --build-dir build   # container args vs the binaries' --help

Kustomizations are rendered by kustomize_lite.py; when `kubectl` is on PATH they are also rendered
with `kubectl kustomize` and both renderings must hold the same objects. With --flags, every --flag
in a container's argv (command + args, or each command line of an `sh -c` script; init containers
too) must appear in the `--help` of the binary it starts, and the number of such argv found must be
EXPECTED_ARGV. Without kubectl or a built binary the check is partial and says so in a note; with
CI=true that is a failure instead (tests/support/ci.py).
Exit 0 when everything holds; 1 with one line per problem otherwise.
"""
import argparse
import copy
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import ci  # noqa: E402
import k8s_schema  # noqa: E402
import katib_schema  # noqa: E402
import kustomize_lite  # noqa: E402
import tensorboard_logs  # noqa: E402

NOT_RESOURCES = {"kustomization.yaml", "kustomization.yml", "kustomizeconfig.yaml"}
OUR_BINARIES = {"train_cifar10": "apps/train_cifar10/train_cifar10", "train_ranzcr": "apps/train_ranzcr/train_ranzcr",
                "ddprun": "apps/ddprun/ddprun",
                "make_cifar10_synthetic": "tools/make_cifar10_synthetic/make_cifar10_synthetic",
                "make_ranzcr_synthetic": "tools/make_ranzcr_synthetic/make_ranzcr_synthetic"}


def manifest_files(k8s_dir):
    out = []
    for dirpath, _, files in os.walk(k8s_dir):
        for f in sorted(files):
            if f.endswith((".yaml", ".yml")) and f not in NOT_RESOURCES:
                out.append(os.path.join(dirpath, f))
    return sorted(out)


def kustomization_dirs(k8s_dir):
    """Every kustomization that builds on its own; Components (kind: Component) are rendered
    through the kustomizations that list them."""
    return sorted(d for d, _, files in os.walk(k8s_dir) if "kustomization.yaml" in files
                  and kustomize_lite.load_yaml_docs(os.path.join(d, "kustomization.yaml"))[0].get("kind") != "Component")


def describe(obj):
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


# ---- semantic checks across our own manifests -----------------------------------------------------

def pod_specs(obj):
    """(path, pod spec) for every pod template in one of our objects."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "PyTorchJob":
        for r, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
            yield f"spec.pytorchReplicaSpecs.{r}", ((rs or {}).get("template") or {}).get("spec") or {}
    elif kind == "Job":
        yield "spec.template", (spec.get("template") or {}).get("spec") or {}
    elif kind == "Pod":
        yield "spec", spec
    elif kind == "Experiment":  # the job each Katib trial runs, ${trialParameters.*} substituted
        job = katib_schema.trial_job(obj)
        for path, pod in pod_specs(job) if job else []:
            yield f"spec.trialTemplate.trialSpec.{path}", pod


def flag_value(args, flag):
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


def check_consistency(obj, errors, rendered):
    """GPU pods use NCCL on cuda, CPU pods Gloo on cpu; rendered overlays carry a tagged image."""
    for path, pod in pod_specs(obj):
        for c in pod.get("containers", []) or []:
            args = [str(a) for a in c.get("args", []) or []]
            gpus = ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
            backend, device = flag_value(args, "--backend"), flag_value(args, "--device")
            if backend is not None or device is not None:
                want = ("nccl", "cuda") if gpus else ("gloo", "cpu")
                if (backend, device) != want:
                    errors.append(f"{path} container {c.get('name')}: --backend {backend} --device {device} "
                                  f"with nvidia.com/gpu={gpus}; expected --backend {want[0]} --device {want[1]}")
            if rendered and ":" not in str(c.get("image", "")).rsplit("/", 1)[-1] and "@" not in str(c.get("image")):
                errors.append(f"{path} container {c.get('name')}: image {c.get('image')!r} has no tag after kustomize")
    if obj.get("kind") == "Experiment":
        check_katib(obj, errors)
    if obj.get("kind") == "PyTorchJob":
        for r, rs in (obj["spec"].get("pytorchReplicaSpecs") or {}).items():
            args = [str(a) for c in rs["template"]["spec"]["containers"] for a in c.get("args", []) or []]
            if "--resume" in args and rs.get("restartPolicy") != "ExitCode":
                errors.append(f"spec.pytorchReplicaSpecs.{r}.restartPolicy: resuming jobs use ExitCode")
            ann = ((rs["template"].get("metadata") or {}).get("annotations") or {})
            if ann.get("sidecar.istio.io/inject") != "false":
                errors.append(f"spec.pytorchReplicaSpecs.{r}.template.metadata.annotations: "
                              "sidecar.istio.io/inject must be \"false\" (Istio breaks the rendezvous)")
            errors += check_job_name_label(obj, r, rs)


# The label JOB_NAME reads: set by our templates, copied to the pods by every training-operator version
# (its own job-name label is pytorch-job-name before training-operator 1.3, job-name in 1.3,
# training.kubeflow.org/job-name from 1.4 on and only that from 1.7: k8s/README.md).
JOB_LABEL = "app.kubernetes.io/instance"


def check_job_name_label(obj, r, rs):
    """A PyTorchJob's JOB_NAME comes from the pod label JOB_LABEL, which its template sets to the job's
    name (a renamed job with a stale label would share another job's folders)."""
    errors, where = [], f"spec.pytorchReplicaSpecs.{r}.template"
    label = (((rs["template"].get("metadata") or {}).get("labels")) or {}).get(JOB_LABEL)
    for c in rs["template"]["spec"].get("containers", []) or []:
        for e in c.get("env", []) or []:
            if e.get("name") != "JOB_NAME":
                continue
            path = (((e.get("valueFrom") or {}).get("fieldRef")) or {}).get("fieldPath")
            if path != f"metadata.labels['{JOB_LABEL}']":
                errors.append(f"{where} container {c.get('name')}: JOB_NAME reads {path!r}, not the label {JOB_LABEL} "
                              "(the operator's own job-name labels differ between its versions)")
            elif label != obj["metadata"].get("name"):
                errors.append(f"{where}.metadata.labels.{JOB_LABEL} is {label!r} but the job is "
                              f"{obj['metadata'].get('name')!r}: JOB_NAME would name another job's folders")
    return errors


# The metric names each trainer's metric line and --katib-metrics-file carry (docs/KUBEFLOW.md,
# "Katib"; tests/trainer/katib_output_test.py checks the trainers emit exactly these).
KATIB_METRICS = {"train_cifar10": {"epoch", "eval_loss", "accuracy", "images_per_sec"},
                 "train_ranzcr": {"epoch", "train_loss", "eval_loss", "auc", "lr", "images_per_sec"}}
# What sh takes as one plain word: Katib joins the primary container's argv with spaces, unquoted.
SH_WORD = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def check_katib(obj, errors):
    """Our Experiments and our trainers agree: the objective and additional metrics are names the
    trial's binary reports, the File collector reads the file the primary container writes
    (--katib-metrics-file) in Katib's JSON format, and the primary container's argv survives Katib's
    sh -c wrapper (args joined by spaces: each must be one plain word to sh once Kubernetes has
    expanded $(VAR))."""
    spec = obj.get("spec") or {}
    objective = spec.get("objective") or {}
    wanted = [objective.get("objectiveMetricName")] + list(objective.get("additionalMetricNames") or [])
    mc = katib_schema.with_defaults(obj)["spec"]["metricsCollectorSpec"]
    kind = (mc.get("collector") or {}).get("kind")
    fsp = (mc.get("source") or {}).get("fileSystemPath") or {}
    primaries = katib_schema.primary_containers(obj)
    if not primaries:
        errors.append("spec.trialTemplate: no primary container found in the trial job")
    for where, c in primaries:
        argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
        binary = os.path.basename(argv[0]) if argv else ""
        if binary not in KATIB_METRICS:
            errors.append(f"{where} container {c.get('name')}: runs {binary!r}, not one of our trainers")
            continue
        for m in wanted:
            if m not in KATIB_METRICS[binary]:
                errors.append(f"spec.objective: {binary} reports no metric {m!r} (it reports {sorted(KATIB_METRICS[binary])})")
        katib_file = flag_value(argv, "--katib-metrics-file")
        if kind == "File":
            if fsp.get("format") != "JSON":
                errors.append(f"spec.metricsCollectorSpec.source.fileSystemPath.format: {binary} writes JSON "
                              "(--katib-metrics-file); the File collector must read format JSON")
            if katib_file != fsp.get("path"):
                errors.append(f"{where} container {c.get('name')}: --katib-metrics-file is {katib_file!r}, "
                              f"the File collector reads {fsp.get('path')!r}")
        elif kind != "StdOut":
            errors.append(f"spec.metricsCollectorSpec.collector.kind: {kind!r}; our trainers feed StdOut or File (JSON)")
        for a in argv:
            plain = k8s_schema.VAR_REF.sub("x", a)
            if not SH_WORD.match(plain):
                errors.append(f"{where} container {c.get('name')}: arg {a!r} is not one word to sh, and Katib "
                              "runs the argv joined by spaces under sh -c")


_HELP_CACHE = {}


def binary_flags(build_dir, name):
    if name in _HELP_CACHE:
        return _HELP_CACHE[name]
    path = os.path.join(build_dir, OUR_BINARIES[name])
    flags = None
    if os.access(path, os.X_OK):
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        text = out.stdout + out.stderr
        # Every --name in the text: cxxopts lists aliases inside descriptions too ("(--n, -n or --images)").
        flags = set(re.findall(r"--[A-Za-z0-9][A-Za-z0-9-]*", text))
    _HELP_CACHE[name] = flags
    return flags


# How many invocations of our binaries the rendered manifests hold (argv checked against --help),
# counted per kustomization rendering, `sh -c` scripts included. A lower count means some argv are no
# longer found (a new wrapper, a moved command, a parser gap) and so silently no longer checked: that
# fails, as does a higher one, so this number is updated on purpose with the manifests.
EXPECTED_ARGV = 33


def container_argvs(c):
    """The argv a container runs: command + args, or each command line of an `sh -c` script."""
    argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("sh", "bash") and argv[1] == "-c":
        return script_argvs(argv[2])
    return [argv]


def script_argvs(script):
    """The simple commands of a shell script: each line split as sh would (quotes, comments), then
    at ; & && | || and the keywords that start a command, so `then cmd --flag` yields cmd's argv."""
    out = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        cur = []
        for tok in lexer:
            if tok in (";", "&", "&&", "|", "||", "(", ")", ";;") or (not cur and tok in SHELL_KEYWORDS):
                if cur:
                    out.append(cur)
                cur = []
            else:
                cur.append(tok)
        if cur:
            out.append(cur)
    return out


SHELL_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "exec"}


def check_flags(obj, build_dir, errors, notes):
    """Checks every argv of `obj` that starts one of our binaries; returns how many it found."""
    found = 0
    for path, pod in pod_specs(obj):
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            for argv in container_argvs(c):
                found += check_argv(argv, f"{path} container {c.get('name')}", build_dir, errors, notes)
    if obj.get("kind") == "TrainJob":
        t = obj["spec"].get("trainer") or {}
        for argv in container_argvs(t):
            found += check_argv(argv, "spec.trainer", build_dir, errors, notes)
    return found


def check_argv(argv, where, build_dir, errors, notes):
    """Checks the flags of each of our binaries in `argv` (ddprun [flags] PROGRAM [program flags]);
    returns how many binaries it found."""
    segments = []
    cur = None
    for a in argv:
        if os.path.basename(a) in OUR_BINARIES and (cur is None or cur[0] == "ddprun"):
            cur = (os.path.basename(a), [])
            segments.append(cur)
        elif cur is not None:
            cur[1].append(a)
    for name, args in segments:
        flags = binary_flags(build_dir, name)
        if flags is None:
            ci.missing(f"{where}: {name} is not built, its flags were not checked", errors, notes)
            continue
        for a in args:
            if a.startswith("--") and a.split("=")[0] not in flags:
                errors.append(f"{where}: {name} has no flag {a.split('=')[0]} (not in its --help)")
            if name == "ddprun" and not a.startswith("-"):
                break
    return len(segments)


# ---- the positive pass --------------------------------------------------------------------------

def all_checks(obj, rendered=False):
    errs = k8s_schema.validate(obj)
    check_consistency(obj, errs, rendered)
    return errs


def apply_targets(k8s_dir):
    """What a user applies (kubectl apply -k): kustomizations nobody includes, and those that map
    the image themselves (`images:`), complete deployables that an overlay also builds on
    (k8s/ranzcr, under overlays/ranzcr-minikf)."""
    dirs = kustomization_dirs(k8s_dir)
    included = set()
    for d in dirs:
        k = kustomize_lite.load_yaml_docs(os.path.join(d, "kustomization.yaml"))[0]
        for r in k.get("resources", []):
            included.add(os.path.normpath(os.path.join(d, r)))
    return [d for d in dirs if d not in included
            or kustomize_lite.load_yaml_docs(os.path.join(d, "kustomization.yaml"))[0].get("images")]


def check_repo_flags(repo, build_dir):
    """Every --flag our containers pass exists in the built binary's --help."""
    k8s_dir = os.path.join(repo, "k8s")
    problems, notes, objects, argvs = [], [], 0, 0
    for d in kustomization_dirs(k8s_dir):
        rel = os.path.relpath(d, repo)
        for obj in kustomize_lite.render(d):
            errs = []
            argvs += check_flags(obj, build_dir, errs, notes)
            objects += 1
            problems += [f"{rel} (rendered): {describe(obj)}: {e}" for e in errs]
    for n in sorted(set(notes)):
        print(f"note: {n}")
    built = sorted(n for n in OUR_BINARIES if binary_flags(build_dir, n) is not None)
    print(f"checked the flags of {argvs} argv of our binaries in {objects} rendered objects against the --help of {built}")
    if argvs != EXPECTED_ARGV:
        problems.append(f"found {argvs} argv of our binaries in the rendered manifests, expected {EXPECTED_ARGV}: "
                        "fewer means some are no longer checked; update EXPECTED_ARGV only with the manifests")
    return sorted(set(problems))


def training_envs(obj):
    """(where, env list) of every training container: PyTorchJob pods and a TrainJob's trainer."""
    if obj.get("kind") == "PyTorchJob":
        for path, pod in pod_specs(obj):
            for c in pod.get("containers", []) or []:
                yield f"{path} container {c.get('name')}", c.get("env", []) or []
    elif obj.get("kind") == "TrainJob":
        yield "spec.trainer", ((obj.get("spec") or {}).get("trainer") or {}).get("env", []) or []
    elif obj.get("kind") == "Experiment":
        for path, pod in pod_specs(obj):
            for c in pod.get("containers", []) or []:
                yield f"{path} container {c.get('name')}", c.get("env", []) or []


def check_store_token(objs):
    """What a user applies: every training container gets DDP_STORE_TOKEN from a Secret rendered
    with it (kustomize's secretGenerator), and every secretKeyRef names a key that exists."""
    secrets = {o["metadata"]["name"]: set((o.get("data") or {}) | (o.get("stringData") or {}))
               for o in objs if o.get("kind") == "Secret"}
    errors = []
    for obj in objs:
        for where, env in training_envs(obj):
            names = {e.get("name"): e for e in env}
            tok = names.get("DDP_STORE_TOKEN")
            if tok is None or "secretKeyRef" not in (tok.get("valueFrom") or {}):
                errors.append(f"{describe(obj)} {where}: DDP_STORE_TOKEN must come from a Secret (secretKeyRef)")
            for e in env:
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref and ref.get("key") not in secrets.get(ref.get("name"), set()):
                    errors.append(f"{describe(obj)} {where}: env {e.get('name')} names Secret key "
                                  f"{ref.get('name')}/{ref.get('key')}, which this kustomization does not render")
    return errors


def check_rwo_placement(objs):
    """A ReadWriteOnce claim mounts on one node only: a PyTorchJob that mounts one must keep all its
    pods on one node: every replica type has a required podAffinity on kubernetes.io/hostname selecting
    this job's pods by the label its templates set (JOB_LABEL = the job's name), which every operator
    version keeps, unlike its own labels."""
    rwo = {o["metadata"]["name"] for o in objs if o.get("kind") == "PersistentVolumeClaim"
           and "ReadWriteOnce" in ((o.get("spec") or {}).get("accessModes") or [])}
    errors = []
    for obj in objs:
        if obj.get("kind") != "PyTorchJob":
            continue
        name = obj["metadata"]["name"]
        for r, rs in (obj["spec"].get("pytorchReplicaSpecs") or {}).items():
            pod = rs["template"]["spec"]
            claims = {(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.get("volumes") or []}
            if not claims & rwo:
                continue
            terms = (((pod.get("affinity") or {}).get("podAffinity") or {})
                     .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
            want = {JOB_LABEL: name}
            if not any(t.get("topologyKey") == "kubernetes.io/hostname"
                       and ((t.get("labelSelector") or {}).get("matchLabels") or {}) == want for t in terms):
                errors.append(f"{describe(obj)} {r}: mounts ReadWriteOnce claim {sorted(claims & rwo)} but has no required "
                              f"podAffinity keeping the job's pods on one node (topologyKey kubernetes.io/hostname, "
                              f"matchLabels {want})")
    return errors


def raw_objects(k8s_dir):
    return [o for f in manifest_files(k8s_dir) for o in kustomize_lite.load_yaml_docs(f)]


def validate_repo(repo, build_dir):
    k8s_dir = os.path.join(repo, "k8s")
    targets = apply_targets(k8s_dir)
    problems, notes, count = [], [], 0
    for f in manifest_files(k8s_dir):
        rel = os.path.relpath(f, repo)
        for obj in kustomize_lite.load_yaml_docs(f):
            count += 1
            errs = all_checks(obj)
            problems += [f"{rel}: {describe(obj)}: {e}" for e in errs]
    problems += tensorboard_logs.check(raw_objects(k8s_dir))
    kubectl = shutil.which("kubectl")
    for d in kustomization_dirs(k8s_dir):
        rel = os.path.relpath(d, repo)
        try:
            objs = kustomize_lite.render(d)
        except kustomize_lite.KustomizeError as e:
            problems.append(f"{rel}: kustomize_lite: {e}")
            continue
        if kubectl:
            out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
            if out.returncode != 0:
                problems.append(f"{rel}: kubectl kustomize failed: {out.stderr.strip()}")
            else:
                theirs = [o for o in yaml.safe_load_all(out.stdout) if o]
                key = lambda o: (o.get("apiVersion"), o.get("kind"), o["metadata"].get("name"))  # noqa: E731
                if sorted(map(yaml.safe_dump, objs)) != sorted(map(yaml.safe_dump, theirs)):
                    mine = {key(o): o for o in objs}
                    for o in theirs:
                        if mine.get(key(o)) != o:
                            problems.append(f"{rel}: kustomize_lite and kubectl kustomize differ on {describe(o)}")
                    if set(mine) != {key(o) for o in theirs}:
                        problems.append(f"{rel}: kustomize_lite and kubectl kustomize render different objects")
        if d in targets:
            problems += [f"{rel} (rendered): {e}" for e in check_store_token(objs)]
            problems += [f"{rel} (rendered): {e}" for e in check_rwo_placement(objs)]
        for obj in objs:
            count += 1
            errs = all_checks(obj, rendered=d in targets)
            problems += [f"{rel} (rendered): {describe(obj)}: {e}" for e in errs]
    if not kubectl:
        ci.missing("kubectl is not on PATH: kustomizations rendered by kustomize_lite only, not compared "
                   "with kubectl kustomize", problems, notes)
    renderer = "kustomize_lite + kubectl kustomize" if kubectl else "kustomize_lite (kubectl not installed)"
    print(f"validated {count} objects from {len(manifest_files(k8s_dir))} files and "
          f"{len(kustomization_dirs(k8s_dir))} kustomizations ({renderer})")
    for n in sorted(set(notes)):
        print(f"note: {n}")
    return problems


# ---- the negative pass: typos must be caught ----------------------------------------------------

def _get(doc, path):
    cur = doc
    for p in path:
        cur = cur[p]
    return cur


def _rename(path, new):
    def f(doc):
        parent = _get(doc, path[:-1])
        parent[new] = parent.pop(path[-1])
    return f


def _set(path, value):
    def f(doc):
        _get(doc, path[:-1])[path[-1]] = value
    return f


MASTER = ["spec", "pytorchReplicaSpecs", "Master"]
MPOD = MASTER + ["template", "spec"]
MCTR = MPOD + ["containers", 0]
TRAINER = ["spec", "trainer"]
RJOB = ["spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0]

KATIB_CIFAR = "k8s/katib/experiment-cifar10.yaml"
KATIB_RANZCR = "k8s/katib/experiment-ranzcr.yaml"
TRIAL = ["spec", "trialTemplate", "trialSpec", "spec", "pytorchReplicaSpecs"]
TRIAL_ARGS = ["template", "spec", "containers", 0, "args"]

# (manifest, what, mutation, a fragment the error must contain)
MUTATIONS = [
    ("k8s/base/pytorchjob-cifar10.yaml", "typo in a replica field", _rename(MASTER + ["restartPolicy"], "restartPolicyy"),
     "Master.restartPolicyy: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "typo deep in the pod template", _rename(MCTR + ["ports", 0, "containerPort"], "containerport"),
     "containerport: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "typo in a pod field", _rename(MPOD + ["volumes"], "volume"),
     "spec.volume: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "typo in the job spec", _rename(["spec", "runPolicy"], "runpolicy"),
     "spec.runpolicy: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "typo in root metadata", _rename(["metadata", "labels"], "label"),
     "metadata.label: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "typo in template metadata",
     _rename(MASTER + ["template", "metadata", "annotations"], "anotations"), "anotations: unknown field"),
    ("k8s/base/pytorchjob-cifar10.yaml", "nprocPerNode as a number", _set(["spec", "nprocPerNode"], 2),
     "nprocPerNode: 2 is not of type 'string'"),
    ("k8s/base/pytorchjob-cifar10.yaml", "bad restart policy", _set(MASTER + ["restartPolicy"], "OnExitCode"),
     "restartPolicy: 'OnExitCode' is not one of"),
    ("k8s/base/pytorchjob-cifar10.yaml", "bad quantity", _set(MCTR + ["resources", "limits", "memory"], "2GB"),
     "resources.limits.memory: '2GB' does not match"),
    ("k8s/base/pytorchjob-cifar10.yaml", "container not named pytorch", _set(MCTR + ["name"], "trainer"),
     "must have a container named pytorch"),
    ("k8s/base/pytorchjob-cifar10.yaml", "two masters", _set(MASTER + ["replicas"], 2), "Master.replicas: must be 1"),
    ("k8s/base/pytorchjob-cifar10.yaml", "a renamed job with its old label",
     _set(["metadata", "name"], "cifar10-b"), "JOB_NAME would name another job's folders"),
    ("k8s/base/pytorchjob-cifar10.yaml", "JOB_NAME from the operator's label",
     _set(MCTR + ["env", 0, "valueFrom", "fieldRef", "fieldPath"], "metadata.labels['training.kubeflow.org/job-name']"),
     "not the label app.kubernetes.io/instance"),
    ("k8s/base/pytorchjob-cifar10.yaml", "lowercase replica type", _rename(["spec", "pytorchReplicaSpecs", "Worker"], "worker"),
     "replica type 'worker' is not Master or Worker"),
    ("k8s/base/pytorchjob-cifar10.yaml", "mount of a missing volume", _set(MCTR + ["volumeMounts", 0, "name"], "sharde"),
     "no volume named 'sharde'"),
    ("k8s/base/pytorchjob-cifar10.yaml", "undefined $(VAR) in args", _set(MCTR + ["args", 3], "/shared/models/$(JOBNAME)"),
     "$(JOBNAME) names no env var"),
    ("k8s/base/pytorchjob-cifar10.yaml", "requests above limits", _set(MCTR + ["resources", "requests", "cpu"], "3"),
     "is more than the limit"),
    ("k8s/base/pytorchjob-cifar10.yaml", "duplicate container port", lambda d: _get(d, MCTR + ["ports"]).append(
        {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}), "duplicate entry"),
    ("k8s/ranzcr/pytorchjob-ranzcr.yaml", "GPU request without the same limit",
     _set(MCTR + ["resources", "requests", "nvidia.com/gpu"], 2), "must equal limits for an extended resource"),
    ("k8s/ranzcr/pytorchjob-ranzcr.yaml", "GPU job on gloo",
     lambda d: _set(MCTR + ["args", _get(d, MCTR + ["args"]).index("--backend") + 1], "gloo")(d),
     "expected --backend nccl"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "typo in the trainer", _rename(TRAINER + ["numProcPerNode"], "numProcsPerNode"),
     "spec.trainer.numProcsPerNode: unknown field"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "typo deep in a runtime patch",
     _rename(RJOB + ["template", "spec", "template", "spec", "volumes", 0, "persistentVolumeClaim"], "persistentVolumeclaim"),
     "persistentVolumeclaim: unknown field"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "numProcPerNode as a string", _set(TRAINER + ["numProcPerNode"], "2"),
     "'2' is not of type 'integer'"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "reserved PET_ env", lambda d: _get(d, TRAINER + ["env"]).append(
        {"name": "PET_NNODES", "value": "3"}), "PET_NNODES is reserved"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "name breaking the CEL rule", _set(["metadata", "name"], "9cifar"),
     "metadata.name must match RFC 1035"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "patch of a container the runtime lacks",
     _set(RJOB + ["template", "spec", "template", "spec", "containers", 0, "name"], "trainer"), "runtime has no container 'trainer'"),
    ("k8s/trainjob/trainjob-cifar10.yaml", "manager without a domain", _set(["spec", "runtimePatches", 0, "manager"], "me"),
     "domain-prefixed path"),
    ("k8s/data/cifar10/prepare-cifar10-job.yaml", "typo in a Job spec", _rename(["spec", "backoffLimit"], "backofflimit"),
     "spec.backofflimit: unknown field"),
    ("k8s/data/cifar10/prepare-cifar10-job.yaml", "Job pod that restarts Always",
     _set(["spec", "template", "spec", "restartPolicy"], "Always"), "need Never or OnFailure"),
    ("k8s/tensorboard/tensorboard.yaml", "typo in a Tensorboard", _rename(["spec", "logspath"], "logsPath"),
     "spec.logsPath: unknown field"),
    ("k8s/storage/pvc.yaml", "typo in a PVC", _rename(["spec", "accessModes"], "accesModes"), "spec.accesModes: unknown field"),
    (KATIB_CIFAR, "typo in an Experiment's spec", _rename(["spec", "parallelTrialCount"], "parallelTrialCounts"),
     "spec.parallelTrialCounts: unknown field"),
    (KATIB_CIFAR, "typo in the trial's PyTorchJob", _rename(TRIAL + ["Master", "restartPolicy"], "restartPolicyy"),
     "(as trial cifar10-lr-batch-k8tr1a1s): spec.pytorchReplicaSpecs.Master.restartPolicyy: unknown field"),
    (KATIB_CIFAR, "trial pod breaking the operator's rules", _set(TRIAL + ["Master", "replicas"], 2),
     "(as trial cifar10-lr-batch-k8tr1a1s): spec.pytorchReplicaSpecs.Master.replicas: must be 1"),
    (KATIB_CIFAR, "feasibleSpace bound as a number", _set(["spec", "parameters", 1, "feasibleSpace", "max"], 0.95),
     "feasibleSpace.max: 0.95 is not of type 'string'"),
    (KATIB_CIFAR, "trialParameter naming no parameter", _set(["spec", "trialTemplate", "trialParameters", 0, "reference"], "learning_rate"),
     "'learning_rate' does not exist in spec.parameters"),
    (KATIB_CIFAR, "undeclared ${trialParameters.x}", _set(TRIAL + ["Master"] + TRIAL_ARGS + [17], "${trialParameters.seed}"),
     "${trialParameters.seed} names no entry"),
    (KATIB_CIFAR, "unknown algorithm", _set(["spec", "algorithm", "algorithmName"], "bayesian"),
     "'bayesian' is not an algorithm of Katib's config"),
    (KATIB_CIFAR, "primary container that does not exist", _set(["spec", "trialTemplate", "primaryContainerName"], "trainer"),
     "has no container 'trainer'"),
    (KATIB_CIFAR, "objective the trainer does not report (the old name)", _set(["spec", "objective", "objectiveMetricName"], "loss"),
     "train_cifar10 reports no metric 'loss'"),
    (KATIB_CIFAR, "arg that sh splits", _set(TRIAL + ["Master"] + TRIAL_ARGS + [3], "/shared/katib/my trial"),
     "is not one word to sh"),
    (KATIB_RANZCR, "File collector reading another path", _set(["spec", "metricsCollectorSpec", "source", "fileSystemPath", "path"],
                                                                "/var/log/katib/ranzcr.json"),
     "--katib-metrics-file is '/var/log/katib/metrics.json', the File collector reads '/var/log/katib/ranzcr.json'"),
    (KATIB_RANZCR, "File collector reading TEXT", _set(["spec", "metricsCollectorSpec", "source", "fileSystemPath", "format"], "TEXT"),
     "the File collector must read format JSON"),
    (KATIB_RANZCR, "File collector with a relative path", _set(["spec", "metricsCollectorSpec", "source", "fileSystemPath", "path"], "metrics.json"),
     "file path where metrics file exists is required"),
]


def self_test(repo, verbose=False):
    failures = []
    for rel, what, mutate, expect in MUTATIONS:
        doc = copy.deepcopy(kustomize_lite.load_yaml_docs(os.path.join(repo, rel))[0])
        if all_checks(doc):
            failures.append(f"{rel}: the unmutated manifest is not valid, cannot test '{what}'")
            continue
        mutate(doc)
        errs = all_checks(doc)
        if verbose:
            print(f"{rel}: {what}: {[e for e in errs if expect in e][:1] or errs}")
        if not any(expect in e for e in errs):
            failures.append(f"{rel}: '{what}' was not caught (wanted an error containing {expect!r}; got {errs})")
    failures += tensorboard_logs.self_test(raw_objects(os.path.join(repo, "k8s")))
    neg_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "negative")
    typo_files = sorted(os.listdir(neg_dir))
    for f in typo_files:
        path = os.path.join(neg_dir, f)
        expect = open(path, encoding="utf-8").readline().split("expect:", 1)[-1].strip()
        errs = [e for o in kustomize_lite.load_yaml_docs(path) for e in k8s_schema.validate(o)]
        if not any(expect in e for e in errs):
            failures.append(f"tests/k8s/negative/{f}: not rejected with {expect!r} (got {errs})")
        elif any(expect not in e for e in errs):
            failures.append(f"tests/k8s/negative/{f}: the copy has other problems than its typo: {errs}")
        else:
            print(f"negative/{f}: rejected as expected: {[e for e in errs if expect in e][0]}")
    print(f"self-test: {len(MUTATIONS)} mutations and {len(typo_files)} typo'd copies, {len(failures)} not caught")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--build-dir")
    ap.add_argument("--flags", action="store_true", help="only check container flags against the binaries")
    ap.add_argument("--self-test-only", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="print the error each mutation produced")
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    if a.flags:
        if not a.build_dir:
            ap.error("--flags needs --build-dir")
        problems = check_repo_flags(repo, a.build_dir)
    else:
        problems = [] if a.self_test_only else validate_repo(repo, a.build_dir)
        problems += self_test(repo, a.verbose)
    for p in problems:
        print(f"FAIL: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
