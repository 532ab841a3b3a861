#!/usr/bin/python3
"""The Kubeflow operators played on one machine, with our manifests and our binaries.

Renders k8s/ (kustomize_lite), then plays what `kubectl apply -k` would start: the shared PVC becomes a
local folder, the data-prep Job and the training job run as pods, each pod a network namespace with
its own IP, hostname and /etc/hosts (netpods.py), each container the manifest's command and args with
the environment the controller injects (operators.py). Scenarios:

  dns-race     overlays/cpu PyTorchJob (Master 1 + Worker 2) applied with its data-prep Job; the workers
               start 10 s before the master's name resolves (and 2 s more before it listens). The job
               must succeed with no restarts. Its final model is the reference for kill-worker.
  kill-worker  the same job; once a checkpoint past step 60 exists, worker-0's pod is killed
               (SIGKILL, exit 137). restartPolicy ExitCode recreates it (and any pod that exits
               >= 128 because its peer vanished); the job must complete from the checkpoint with the
               same final weights as dns-race, the master's last attempt having trained only the
               steps after the checkpoint (the seed fixes the run: a restart from step 0 would also
               reproduce the weights).
  bad-arg      the same job with a bad value in the manifest (--lr fast): the job must fail with a
               permanent exit code (2) and no pod recreated.
  trainjob     Trainer v2: the TrainJob (2 nodes x ddprun 2 processes) on the torch-distributed
               runtime, after the data-prep Job, the master's record 5 s late. Must complete.
  ddprun       overlays/cpu-ddprun: PyTorchJob with nprocPerNode "2" and ddprun as the command (3 pods
               x 2 processes). Must complete.
  elastic      overlays/cpu-elastic: an elastic PyTorchJob (Workers only, 3 pods x ddprun 2 processes,
               elasticPolicy 1..3 nodes, c10d rendezvous hosted by worker-0's ddprun; last_call_timeout
               3 s and --checkpoint-every 5 to keep it short, nprocPerNode "2" as `auto` gives under
               the template's CPU limit). Once the group of 3 wrote a checkpoint, worker-2's node is
               lost: every process of the pod SIGKILLed, the pod object held (operators.PodRun.lose_node:
               a node being replaced) until the group of 2 wrote a checkpoint of its own, then created
               again. Must hold: the operator's env is the elastic one (PET_RDZV_ENDPOINT
               <job>-worker-0:23456, PET_NNODES 1:3, ..., no MASTER_ADDR/RANK/WORLD_SIZE); worker-0 and
               worker-1 each log an attempt of 2 nodes after the loss and one of 3 after that; one of
               them logs the re-forming for the waiting node; worker-2 was created again once and its
               new incarnation ran in a group of 3; job Succeeded (one worker succeeding is enough,
               elasticPolicy); every failure exit code >= 128; the workers resumed from checkpoints
               after step 0, across 6 -> 4 and 4 -> 6 ranks; model.pt written. (Not compared with
               another run's weights: the world size changes the numerics.)
  ranzcr-cpu   k8s/ranzcr (Master 1 + Worker 3, GPU manifest) with its data-prep Job, played on CPU:
               --device cpu --backend gloo --amp none --image-size 64 --arch resnet18 --epochs 1
               --batch-size 8. Must complete with a model and a checkpoint.
  ranzcr-minikf  overlays/ranzcr-minikf (Master 1 + Worker 1, the article's MiniKF job) on its
               ReadWriteOnce volume, every pod on this one machine as on a single-node MiniKF; its
               podAffinity must select every pod whatever operator labels them (OPERATOR_LABELS), and
               the job is played with the labels of pytorch-operator v1.0 (an old MiniKF's: no
               training.kubeflow.org/*), its model landing under models/ranzcr-minikf. First its
               data-prep Job alone on the empty volume: it must fail (exit 2, no retry cures it) naming
               the path it looked at and how to ask for synthetic data; then the request by name
               (k8s/data/synthetic/ranzcr), then the job played on CPU as ranzcr-cpu (--image-size 64
               --arch resnet18 --epochs 1 --batch-size 8) with issue 27's flags all on (--sync-bn
               --static-graph --comm-hook powersgd:1 --powersgd-start-iter 2 --zero). Must complete
               with a model and a checkpoint, rank 0 logging the PowerSGD hook and its ZeRO shard.
  sagemaker    SageMaker's CreateTrainingJob played by sagemaker.py: the workshop's hyperparameters
               (json-encoded strings, model-type custom, the SDK's sagemaker_* keys) on 2 instances
               (algo-1, algo-2, each a pod with its own root-owned /opt/ml, started as
               `<ENTRYPOINT> train` as the image's uid 1000), the training channel from a local "S3"
               folder, the pipeline's metric definitions. Must complete, pack model.tar.gz, read the
               metrics from the log, and hold a model.pt byte-identical to the same job run as root
               and to the same training (same flags, data, 2 processes) under ddprun. With /opt/ml's
               folders writable by root only, uid 1000 must fail at once (exit 2) naming the folder.
               Then RANZCR through the same entrypoint (trainer=ranzcr, a FastFile channel) must
               complete with its AUC metric; and model-type resnet must fail (exit 2) with
               FailureReason naming it and no model.
  pipeline     (not in the default list) the hybrid Kubeflow pipeline, pipelines/hybrid-training.yaml,
               run by pipeline_runner.py for each training_runtime (epochs 1) with the rules of every
               released KFP backend (kfp_backend.py: 2.0.5, 2.5.0, 2.16.0, 2.17.0; --kfp-version V
               for one), which must all give the same command lines: "kubernetes" -> the compose step
               runs, then the PyTorchJob launcher, and the PyTorchJob it creates (validated against
               the CRD) is played after the data-prep Job to Succeeded with a model; "sagemaker" ->
               the compose step, then the SageMaker component, whose CreateTrainingJob request (2 x
               ml.p3.2xlarge, string hyperparameters) is played by sagemaker.py on a synthetic
               CIFAR-10 in the local S3 to Completed with model.tar.gz; "local" -> neither branch.
  chaos        (not in the default list) seeded rounds of faults — a worker process, a whole ddprun,
               the master pod (the store's host) SIGKILLed, a pod's network cut for longer than the
               configured timeout — in the PyTorchJob and ddprun variants, and a worker's node lost
               for a while in the elastic job; every round must end with weights identical to an
               undisturbed run (the elastic job: succeeded with a model) and an intact step history,
               or with a clear permanent error, never a hang (chaos.py says how each is checked).
               --chaos-rounds N (7) --chaos-seed S (1: rounds use seeds S..S+N-1)
               --chaos-timeout T (20: the trainers' --timeout, ddprun's --join-timeout and --store-timeout)
               --chaos-kinds kill-worker,kill-ddprun,kill-master,net-cut,lose-node
               --chaos-variants pytorchjob,pytorchjob-zero,ddprun,elastic

The manifests are played as written except these overrides, so a run takes seconds: --epochs 2
(1 for ddprun), --checkpoint-every 20. The data-prep Jobs write synthetic data only when asked by name:
every scenario asks first, as a user would (kubectl apply -k k8s/data/synthetic/<dataset>). Root and `ip netns` are required; without them the run exits
77 (ctest SKIP_RETURN_CODE) saying why; with CI=true it fails instead (tests/support/ci.py).
Every namespace, veth, bridge and hosts file is removed at the end, on failure too; leftovers of a
killed run are removed by the next one.

  rehearse.py --build-dir build [--scenario dns-race,kill-worker,bad-arg] [--work DIR] [--keep]
  rehearse.py --build-dir build --scenario chaos --chaos-rounds 50 --chaos-seed 100
"""
import argparse
import base64
import copy
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "k8s"))
sys.path.insert(0, os.path.join(REPO, "docker"))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import chaos  # noqa: E402
import chroot_build  # noqa: E402  (the Dockerfile parser: the image's ENV)
import ci  # noqa: E402
import elastic  # noqa: E402
import k8s_schema  # noqa: E402
import kustomize_lite  # noqa: E402
import netpods  # noqa: E402
import operators  # noqa: E402
import kfp_backend  # noqa: E402
import kfp_components  # noqa: E402
import pipeline_runner  # noqa: E402
import sagemaker  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "pipelines"))
import hybrid_training  # noqa: E402  (the metric definitions)

BINARIES = {"train_cifar10": "apps/train_cifar10/train_cifar10", "train_ranzcr": "apps/train_ranzcr/train_ranzcr",
            "ddprun": "apps/ddprun/ddprun",
            "make_cifar10_synthetic": "tools/make_cifar10_synthetic/make_cifar10_synthetic",
            "make_ranzcr_synthetic": "tools/make_ranzcr_synthetic/make_ranzcr_synthetic"}
ALL = ["dns-race", "kill-worker", "bad-arg", "trainjob", "ddprun", "ranzcr-cpu", "ranzcr-minikf", "sagemaker"]
# The data-prep Job of each dataset, and the kustomization that asks it by name for synthetic data.
DATA_PREP = {"ddp-prepare-cifar10": "k8s/data/synthetic/cifar10", "ddp-prepare-ranzcr": "k8s/data/synthetic/ranzcr"}
SETTINGS = "k8s/storage/settings/shared-volume.yaml"  # the one place naming the shared volume


class ScenarioFailed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise ScenarioFailed(what)
    print(f"  ok: {what}")


# ---- setup --------------------------------------------------------------------------------------

def image_env(repo):
    """ENV of the runtime stage of docker/Dockerfile (what the pods' processes start with)."""
    text = open(os.path.join(repo, "docker", "Dockerfile"), encoding="utf-8").read()
    instructions = chroot_build.parse_dockerfile(text)
    env, stage = {"PATH": chroot_build.DEFAULT_PATH}, None
    for _, ins, rest in instructions:
        if ins == "FROM":
            stage = rest.split()[-1]
            env = {"PATH": chroot_build.DEFAULT_PATH}
        elif ins == "ENV" and stage == "runtime":
            env.update(chroot_build.parse_kv(rest, env, "ENV"))
    return env


def place(src, dst):
    """Hard link, or copy across file systems; readable and executable by everyone."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    os.chmod(dst, 0o755)


def make_bin_dir(build_dir, work, standin):
    """work/bin with our binaries and work/lib with the build's libddp: the image's binaries (ddp-tools
    in /usr/bin, tests/rehearsal/image_layout.py) and its /usr/lib/libddp.so.*, played by the build tree. Links or copies, not symlinks into the build tree: the
    pods run as uid 1000, which may not traverse it (a clone under /root or in a mktemp -d folder
    is mode 0700). The pods get LD_LIBRARY_PATH=work/lib (it wins over the binaries' RUNPATH)."""
    d, lib = os.path.join(work, "bin"), os.path.join(work, "lib")
    os.makedirs(d, exist_ok=True)
    os.makedirs(lib, exist_ok=True)
    found = []
    for name, rel in BINARIES.items():
        src = os.path.join(build_dir, rel)
        if standin and os.access(os.path.join(standin, name), os.X_OK):
            src = os.path.join(standin, name)
        if os.access(src, os.X_OK):
            place(os.path.realpath(src), os.path.join(d, name))
            found.append(name)
    src_lib = os.path.join(build_dir, "src")
    for name in sorted(os.listdir(src_lib)) if os.path.isdir(src_lib) else []:
        path = os.path.join(src_lib, name)
        if name.startswith("libddp.so") and os.path.isfile(path) and not os.path.islink(path):
            place(path, os.path.join(lib, name))
    for name in sorted(os.listdir(src_lib)) if os.path.isdir(src_lib) else []:
        path = os.path.join(src_lib, name)
        if name.startswith("libddp.so") and os.path.islink(path):
            os.symlink(os.readlink(path), os.path.join(lib, name))  # libddp.so.0 -> libddp.so.0.1.0
    for p in (work, d, lib):
        os.chmod(p, 0o755)
    return d, lib, found


def set_flag(argv, flag, value):
    argv = list(argv)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    return argv


STRIP_FLAGS = []  # --strip-flag (development only): flags removed with their value


def override_args(obj, overrides):
    """Applies the documented overrides to every trainer container (and a TrainJob's trainer)."""
    def fix(args):
        for flag, value in overrides:
            if flag in args:
                args = set_flag(args, flag, value)
        for flag in STRIP_FLAGS:
            while flag in args:
                i = args.index(flag)
                del args[i:i + 2]
        return args
    if obj["kind"] == "PyTorchJob":
        for rs in obj["spec"]["pytorchReplicaSpecs"].values():
            for c in rs["template"]["spec"]["containers"]:
                c["args"] = fix([str(a) for a in c.get("args", [])])
    elif obj["kind"] == "TrainJob":
        t = obj["spec"]["trainer"]
        t["args"] = fix([str(a) for a in t.get("args", [])])
    return obj


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


class Scenario:
    def __init__(self, name, args, cluster_factory):
        self.name, self.args = name, args
        self.work = os.path.join(args.work, name)
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o755)
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        os.chmod(self.logs, 0o777)
        self.pvc = os.path.join(self.work, "pvc")
        os.makedirs(self.pvc, exist_ok=True)
        self.cluster = cluster_factory(self.work)
        claim = kustomize_lite.load_yaml_docs(os.path.join(args.repo, SETTINGS))[0]["data"]["claimName"]
        self.factory = operators.PodFactory(self.cluster, args.bin_dir, {claim: self.pvc},
                                            args.image_env, self.logs)

    def render(self, path):
        objs = kustomize_lite.render(os.path.join(self.args.repo, path))
        for sec in by_kind(objs, "Secret"):  # the store token's Secret, for secretKeyRef env
            operators.SECRETS[sec["metadata"]["name"]] = {
                k: base64.b64decode(v).decode("utf-8") for k, v in (sec.get("data") or {}).items()}
        pvcs = by_kind(objs, "PersistentVolumeClaim")
        for p in pvcs:
            if p["metadata"]["name"] not in self.factory.pvc_dirs:
                raise ScenarioFailed(f"{path}: PVC {p['metadata']['name']} is not played")
            modes = p["spec"]["accessModes"]
            if "ReadWriteMany" in modes:
                expect(True, f"{path}: PVC {p['metadata']['name']} is ReadWriteMany")
            else:  # one node may mount it: here every pod runs on this one machine, as on a single-node MiniKF
                expect(modes == ["ReadWriteOnce"], f"{path}: PVC {p['metadata']['name']} is ReadWriteOnce, "
                       "every pod on this one machine (a single node)")
        return objs

    def tail(self, pod_prefix, n=15):
        out = []
        for f in sorted(os.listdir(self.logs)):
            if f.startswith(pod_prefix) and f.endswith(".log"):
                lines = open(os.path.join(self.logs, f), errors="replace").read().splitlines()
                out.append(f"--- {f} (last {n} lines)\n" + "\n".join(lines[-n:]))
        return "\n".join(out)

    def log_text(self, pod_name):
        p = os.path.join(self.logs, pod_name + ".log")
        return open(p, errors="replace").read() if os.path.exists(p) else ""


def run_job_thread(sc, job, timeout):
    box = {}

    def target():
        try:
            box["res"] = operators.play_job(job, sc.factory, timeout)
        except Exception as e:  # reported by the caller
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def model_digest(model_dir):
    """sha256 of every file the trainer wrote to --model-dir, metrics excluded."""
    out = {}
    if not os.path.isdir(model_dir):
        return out
    for f in sorted(os.listdir(model_dir)):
        p = os.path.join(model_dir, f)
        if os.path.isfile(p) and "metrics" not in f:
            out[f] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def same_weights(dir_a, dir_b):
    """(True/False, how): byte-identical model files, or else every tensor exactly equal when loaded
    with Python's torch (the trainer writes torch.save-format dicts; a container timestamp must not
    count as a different model)."""
    a, b = model_digest(dir_a), model_digest(dir_b)
    if a and a == b:
        return True, "byte-identical files"
    if sorted(a) != sorted(b):
        return False, f"different files: {sorted(a)} vs {sorted(b)}"
    code = (
        "import sys, torch\n"
        "ok = True\n"
        "for f in sys.argv[3:]:\n"
        "    x = torch.load(sys.argv[1] + '/' + f, map_location='cpu')\n"
        "    y = torch.load(sys.argv[2] + '/' + f, map_location='cpu')\n"
        "    if sorted(x) != sorted(y) or any(not torch.equal(x[k], y[k]) for k in x):\n"
        "        bad = [k for k in x if k in y and not torch.equal(x[k], y[k])]\n"
        "        print(f + ': tensors differ: ' + ', '.join(bad[:5])); ok = False\n"
        "sys.exit(0 if ok else 1)\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, dir_a, dir_b] + sorted(a), capture_output=True, text=True)
    if r.returncode == 0:
        return True, "files differ in bytes but every tensor is exactly equal (torch.load)"
    return False, (r.stdout + r.stderr).strip()[-500:]


def checkpoint_steps(ckpt_dir):
    steps = []
    if os.path.isdir(ckpt_dir):
        for f in os.listdir(ckpt_dir):
            m = re.fullmatch(r"ckpt-(\d+)\.ddpckpt", f)
            if m:
                steps.append(int(m.group(1)))
    return sorted(steps)


# ---- scenarios ----------------------------------------------------------------------------------

OVERRIDES = [("--epochs", "2"), ("--checkpoint-every", "20")]


def ask_for_synthetic(sc, prep_jobs, timeout=300):
    """Asks by name for synthetic data, as a user does for a dry run: plays the Job of
    k8s/data/synthetic/<dataset> (DDP_SYNTHETIC_DATA=<dataset>) for each data-prep Job, to completion."""
    for j in prep_jobs:
        for req in by_kind(sc.render(DATA_PREP[j["metadata"]["name"]]), "Job"):
            r = operators.play_job(req, sc.factory, timeout)
            expect(r.condition == "Succeeded", f"synthetic data asked for by name: Job {req['metadata']['name']} completed")


def pytorchjob_run(sc, overlay, overrides, mutate=None, dns_delay=0.0, master_start_delay=0.0, on_tick=None,
                   timeout=300, data_first=False, operator="training-operator v1.9"):
    """Plays `kubectl apply -k overlay`: the data-prep Job beside the PyTorchJob (the workers' init
    containers wait for the data), or with data_first the Job to completion before the PyTorchJob
    (a volume prepared earlier: the trainers start at once). Synthetic data is asked for by name
    first (the data-prep Job then finds it)."""
    objs = sc.render(overlay)
    job = override_args(copy.deepcopy(by_kind(objs, "PyTorchJob")[0]), overrides)
    if mutate:
        mutate(job)
    prep = by_kind(objs, "Job")
    ask_for_synthetic(sc, prep, timeout)
    threads = []
    if data_first:
        for j in prep:
            r = operators.play_job(j, sc.factory, timeout)
            expect(r.condition == "Succeeded", f"data-prep Job {j['metadata']['name']} completed first")
    else:
        threads = [run_job_thread(sc, j, timeout) for j in prep]   # applied together, as kubectl apply -k does
    res = operators.play_pytorchjob(job, sc.factory, timeout, dns_delay=dns_delay,
                                    master_start_delay=master_start_delay, on_tick=on_tick, operator=operator)
    for t, box in threads:
        t.join(timeout)
        if "error" in box:
            raise box["error"]
        expect(box["res"].condition == "Succeeded", f"data-prep Job {box['res'].name} completed")
    return job, res


def scenario_dns_race(sc, state):
    job, res = pytorchjob_run(sc, "k8s/overlays/cpu", OVERRIDES, dns_delay=10.0, master_start_delay=2.0,
                              data_first=True)
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(res.condition == "Succeeded", f"PyTorchJob {name} succeeded ({res.reason})")
    expect(res.total_recreations == 0 and sum(res.restarted.values()) == 0, "no pod was restarted or recreated")
    workers = [f"{name}-worker-{i}" for i in range(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"])]
    lead = res.created[f"{name}-master-0"][0] - max(res.main_started[w][0] for w in workers)
    expect(lead >= 9.0, f"the workers' trainers ran {lead:.1f} s before the master's name resolved")
    for w in workers:
        waited = re.findall(r"connected to \S+ after \d+ attempts \([\d.]+ s\)", sc.log_text(w))
        print(f"  note: {w}: {waited[0] if waited else 'no store connection line in its log'}")
    digest = model_digest(os.path.join(sc.pvc, "models", name))
    expect(bool(digest), f"the master wrote the model: {sorted(digest)}")
    state["reference"] = os.path.join(sc.pvc, "models", name)
    state["reference_steps"] = checkpoint_steps(os.path.join(sc.pvc, "checkpoints", name))
    state["reference_done"] = last_done_line(sc.log_text(f"{name}-master-0"))


def last_done_line(log):
    """(global steps, images trained by this attempt) from rank 0's last "done: S steps, I images"."""
    found = re.findall(r"done: (\d+) steps, (\d+) images", log)
    return tuple(int(x) for x in found[-1]) if found else None


def scenario_kill_worker(sc, state):
    name_box = {}
    killed = {}

    def on_tick(res, runs):
        if killed:
            return
        name = res.name
        steps = checkpoint_steps(os.path.join(sc.pvc, "checkpoints", name))
        target = next(r for r in runs if r.name == f"{name}-worker-0")
        if steps and steps[-1] >= 60 and target.stage == "main" and target.phase == "Running":
            res.event(f"checkpoint at step {steps[-1]} exists: killing pod {target.name} (SIGKILL)")
            target.pod.signal_all(signal.SIGKILL)
            killed["at"] = steps[-1]
            name_box["name"] = name
    job, res = pytorchjob_run(sc, "k8s/overlays/cpu", OVERRIDES, on_tick=on_tick, data_first=True)
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(bool(killed), "a worker pod was killed mid-run (after the checkpoint at step %s)" % killed.get("at"))
    expect(res.condition == "Succeeded", f"PyTorchJob {name} succeeded after the kill ({res.reason})")
    worker = f"{name}-worker-0"
    expect(res.recreated[worker] >= 1, f"{worker} was deleted and created again ({res.recreated[worker]}x)")
    failures = [(p, rc) for p, _, rc in res.exits if rc != 0]
    expect(all(rc >= 128 for _, rc in failures), f"every failure was retryable: {failures}")
    expect((worker, 137) in failures, f"{worker} reported exit code 137 (SIGKILL)")
    steps = [int(x) for x in re.findall(r"resumed from \S*ckpt-(\d+)\.ddpckpt", sc.log_text(worker))]
    expect(any(st >= killed["at"] for st in steps),
           f"{worker}'s new pod resumed from a checkpoint at or after step {killed['at']} (resumed from steps {steps})")
    ref = state.get("reference")
    if ref is None:
        raise ScenarioFailed("no reference model: run dns-race first")
    # The seed fixes the whole run, so a restart that ignored the checkpoint would also end with the
    # reference weights: the master's last attempt must have resumed (> step 0) and trained fewer
    # images than the whole run, ending at the same global step.
    master_log = sc.log_text(f"{name}-master-0")
    resumed = [int(x) for x in re.findall(r"resumed from \S*ckpt-(\d+)\.ddpckpt", master_log)]
    done, ref_done = last_done_line(master_log), state.get("reference_done")
    expect(bool(resumed) and resumed[-1] > 0, f"the master resumed from a checkpoint after step 0 ({resumed})")
    expect(done is not None and ref_done is not None and done[0] == ref_done[0] and 0 < done[1] < ref_done[1],
           f"the master's last attempt ended at the run's last step and trained only the rest "
           f"(steps, images: {done}; undisturbed run: {ref_done})")
    same, how = same_weights(ref, os.path.join(sc.pvc, "models", name))
    expect(same, f"final weights identical to the undisturbed run's ({how})")


def scenario_bad_arg(sc, state):
    def mutate(job):
        for rs in job["spec"]["pytorchReplicaSpecs"].values():
            c = rs["template"]["spec"]["containers"][0]
            c["args"] = set_flag(c["args"], "--lr", "fast")
    job, res = pytorchjob_run(sc, "k8s/overlays/cpu", OVERRIDES, mutate=mutate, timeout=120)
    name = job["metadata"]["name"]
    if res.condition != "Failed":
        print(sc.tail(name))
    expect(res.condition == "Failed", f"PyTorchJob {name} failed ({res.reason})")
    codes = [rc for _, _, rc in res.exits]
    expect(2 in codes and all(rc < 128 for rc in codes), f"permanent exit codes only: {res.exits}")
    expect(res.total_recreations == 0 and sum(res.restarted.values()) == 0, "no pod was restarted or recreated")
    logs = "\n".join(sc.log_text(p) for p, _, _ in res.exits)
    bad = [l for l in logs.splitlines() if not l.startswith("###") and ("--lr" in l or "'fast'" in l)]
    expect(bool(bad), f"the failing pod's log names the bad flag: {bad[:1]}")


def scenario_trainjob(sc, state):
    objs = sc.render("k8s/data/cifar10")
    ask_for_synthetic(sc, by_kind(objs, "Job"))
    for j in by_kind(objs, "Job"):
        r = operators.play_job(j, sc.factory, 120)
        expect(r.condition == "Succeeded", f"data-prep Job {j['metadata']['name']} completed")
    objs = sc.render("k8s/trainjob")
    tj = override_args(copy.deepcopy(by_kind(objs, "TrainJob")[0]), OVERRIDES)
    runtime_doc = [d for d in kustomize_lite.load_yaml_docs(os.path.join(sc.args.repo, "tests", "k8s", "schemas",
                                                                         "torch_distributed_runtime.v2.3.0.yaml"))][0]
    expect(tj["spec"]["runtimeRef"]["name"] == runtime_doc["metadata"]["name"], "the TrainJob names the stock torch-distributed runtime")
    res = operators.play_trainjob(tj, runtime_doc, sc.factory, 300, dns_delay=5.0)
    name = tj["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(res.condition == "Succeeded", f"TrainJob {name} completed ({res.reason})")
    model_dir = next(a for a in tj["spec"]["trainer"]["args"] if a.startswith("/shared/models/"))
    digest = model_digest(sc.factory.rewrite(model_dir, [("/shared", sc.pvc)]))
    expect(bool(digest), f"the model was written: {sorted(digest)}")


def scenario_ddprun(sc, state):
    job, res = pytorchjob_run(sc, "k8s/overlays/cpu-ddprun", [("--epochs", "1"), ("--checkpoint-every", "20")])
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(job["spec"].get("nprocPerNode") == "2", "nprocPerNode is \"2\"")
    expect(res.condition == "Succeeded", f"PyTorchJob {name} (3 pods x ddprun 2 processes) succeeded ({res.reason})")
    expect(res.total_recreations == 0, "no pod was recreated")
    expect(bool(model_digest(os.path.join(sc.pvc, "models", name))), "the model was written")


# The elastic scenario: the checkpoints close together, so the group at each size writes some; the
# lost node's pod comes back once the smaller group has written one (at least ELASTIC_HOLD_S after
# the loss, at most ELASTIC_HOLD_MAX_S).
ELASTIC_OVERRIDES = OVERRIDES + [("--checkpoint-every", "5")]
ELASTIC_HOLD_S, ELASTIC_HOLD_MAX_S = 5.0, 60.0


def scenario_elastic(sc, state):
    """overlays/cpu-elastic (Workers 1..3 x ddprun, c10d rendezvous on worker-0): once the group of 3
    has written a checkpoint, worker-2's node is lost (every process SIGKILLed, the pod held away as
    a node being replaced); the other two go on as a group of 2; then the pod comes back, joins, and
    the group re-forms with 3 nodes; the job must succeed."""
    lost = {}
    survivors = ["worker-0", "worker-1"]

    def on_tick(res, runs):
        name = res.name
        pods = {r.name[len(name) + 1:]: r for r in runs}
        logs = {k: sc.log_text(r.name) for k, r in pods.items()}
        steps = checkpoint_steps(os.path.join(sc.pvc, "checkpoints", name))
        if not lost:
            up = all(r.phase == "Running" and r.stage == "main" for r in runs)
            if up and steps and all(3 in elastic.sizes(t) for t in logs.values()):
                res.event(f"checkpoint at step {steps[-1]} and 3 nodes: worker-2's node is lost "
                          "(SIGKILL of every process, the pod held until the node is replaced)")
                pods["worker-2"].lose_node()
                lost.update(at=time.time(), step=steps[-1], seen={k: len(elastic.events(logs[k])) for k in survivors})
        elif "back" not in lost:
            small = all(2 in [e[3] for e in elastic.events(logs[k])[lost["seen"][k]:] if e[0] == "attempt"]
                        for k in survivors)
            held = time.time() - lost["at"]
            if (small and steps and steps[-1] > lost["step"] and held >= ELASTIC_HOLD_S) or held >= ELASTIC_HOLD_MAX_S:
                res.event(f"worker-2's node replaced after {held:.1f} s (the group of 2 wrote checkpoint "
                          f"{steps[-1]}): the pod object is gone")
                pods["worker-2"].end_hold()
                lost["back"] = steps[-1]
    job, res = pytorchjob_run(sc, elastic.OVERLAY, ELASTIC_OVERRIDES, mutate=elastic.shorten, on_tick=on_tick,
                              data_first=True, timeout=300)
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name, 30))
    env = dict(operators.v1_env(job, "Worker", 1))
    expect(env.get("PET_RDZV_ENDPOINT") == f"{name}-worker-0:23456" and env.get("PET_RDZV_BACKEND") == "c10d"
           and env.get("PET_NNODES") == "1:3" and env.get("PET_MAX_RESTARTS") == "10"
           and env.get("PET_RDZV_CONF") == f"last_call_timeout={elastic.LAST_CALL_S}"
           and not {"MASTER_ADDR", "RANK", "WORLD_SIZE", "PET_NODE_RANK"} & set(env),
           f"the operator's elastic env, no MASTER_ADDR/RANK/WORLD_SIZE/PET_NODE_RANK: {sorted(env.items())}")
    expect("at" in lost, f"worker-2's node was lost once the group of 3 had a checkpoint (step {lost.get('step')})")
    expect(res.condition == "Succeeded", f"PyTorchJob {name} succeeded ({res.reason})")
    logs = {k: sc.log_text(f"{name}-{k}") for k in ("worker-0", "worker-1", "worker-2")}
    for k in survivors:
        after = [e for e in elastic.events(logs[k])[lost["seen"][k]:]]
        sizes = [e[3] for e in after if e[0] == "attempt"]
        expect(2 in sizes, f"{k} went on in a group of 2 nodes after the loss (attempt sizes after it: {sizes})")
        if 2 in sizes:
            later = after[[e[3] for e in after].index(2) + 1:]
            expect(any(e[0] == "attempt" and e[3] == 3 for e in later),
                   f"{k} was in a group of 3 again after the group of 2 ({[e for e in later][:6]})")
    reforms = [(k, e) for k in survivors for e in elastic.events(logs[k])[lost["seen"][k]:] if e[0] == "reform"]
    expect(bool(reforms), f"a survivor re-formed the group for the waiting node (not a restart): {reforms[:2]}")
    expect("back" in lost and res.recreated[f"{name}-worker-2"] == 1,
           f"worker-2 was created again once (after the group of 2 wrote checkpoint {lost.get('back')})")
    back = elastic.container_runs(logs["worker-2"])[-1]
    expect(3 in elastic.sizes(back), f"the new worker-2 ran in a group of 3 nodes ({elastic.sizes(back)})")
    failures = [(p, rc) for p, _, rc in res.exits if rc != 0]
    expect(failures and all(rc >= 128 for _, rc in failures), f"every failure was retryable (>= 128): {failures}")
    every = "\n".join(logs.values())
    resumed = elastic.resumed_steps(every)
    expect(any(st > 0 for st in resumed), f"workers resumed from checkpoints after step 0 (steps {sorted(set(resumed))})")
    resized = sorted(set(elastic.resizes(every)))
    expect((6, 4) in resized and (4, 6) in resized,
           f"the trainers resumed across both changes of the world size, 6 -> 4 and 4 -> 6 ({resized})")
    digest = model_digest(os.path.join(sc.pvc, "models", name))
    expect("model.pt" in digest, f"the model was written: {sorted(digest)}")


# The RANZCR jobs' GPU flags overridden so they run on this machine's CPUs, small and short.
ISSUE27_FLAGS = ["--sync-bn", "--static-graph", "--comm-hook", "powersgd:1", "--powersgd-start-iter", "2", "--zero"]
RANZCR_ON_CPU = [("--device", "cpu"), ("--backend", "gloo"), ("--amp", "none"), ("--image-size", "64"),
                 ("--arch", "resnet18"), ("--epochs", "1"), ("--batch-size", "8")]


def scenario_ranzcr_cpu(sc, state):
    """k8s/ranzcr (Master 1 + Worker 3) played on CPU: the GPU manifest's env, paths, data-prep Job,
    init containers and flags, with the device/backend/size overridden so it runs without GPUs."""
    cpu = RANZCR_ON_CPU

    def mutate(job):
        for rs in job["spec"]["pytorchReplicaSpecs"].values():
            c = rs["template"]["spec"]["containers"][0]
            for flag, value in cpu:
                c["args"] = set_flag(c["args"], flag, value)
    job, res = pytorchjob_run(sc, "k8s/ranzcr", [], mutate=mutate, timeout=600)
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3, "Master 1 + Worker 3")
    expect(res.condition == "Succeeded", f"PyTorchJob {name} succeeded on CPU ({res.reason})")
    expect(res.total_recreations == 0, "no pod was recreated")
    expect(bool(model_digest(os.path.join(sc.pvc, "models", name))), "the model was written")
    expect(bool(checkpoint_steps(os.path.join(sc.pvc, "checkpoints", name))), "an epoch-end checkpoint was written")


def scenario_ranzcr_minikf(sc, state):
    """overlays/ranzcr-minikf (Master 1 + Worker 1, RWO volume): the data-prep Job without a dataset
    fails naming the path, then synthetic data asked by name, then the job played on CPU."""
    overlay = "k8s/overlays/ranzcr-minikf"
    objs = sc.render(overlay)
    pj = by_kind(objs, "PyTorchJob")[0]
    specs = pj["spec"]["pytorchReplicaSpecs"]
    expect(specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 1, "Master 1 + Worker 1")
    gpus = [rs["template"]["spec"]["containers"][0]["resources"]["limits"].get("nvidia.com/gpu") for rs in specs.values()]
    expect(gpus == [1, 1], f"one GPU per pod in the manifest ({gpus}; played on CPU here)")
    pvc = by_kind(objs, "PersistentVolumeClaim")[0]
    expect("storageClassName" not in pvc["spec"], "the PVC names no StorageClass: the cluster's default")
    prep = by_kind(objs, "Job")
    for j in prep:
        r = operators.play_job(j, sc.factory, 120)
        log = "\n".join(sc.log_text(p) for p, _, _ in r.exits)
        looked = os.path.join(sc.pvc, "data", "ranzcr", "train.csv")
        expect(r.condition == "Failed" and all(rc == 2 for _, _, rc in r.exits),
               f"without a dataset the data-prep Job {j['metadata']['name']} failed, exit 2 every time ({r.exits})")
        expect(f"looked for {looked}" in log and "kubectl apply -k k8s/data/synthetic/ranzcr" in log,
               "its log names the path it looked at and how to ask for synthetic data")
        expect(not os.path.exists(looked), "nothing was written to the volume")

    # The pods' placement on one node (RWO) and JOB_NAME must not depend on the operator's own labels:
    # every version's pods must match every podAffinity term of the job.
    for op in operators.OPERATOR_LABELS:
        pods = {f"{r}-{i}": operators.pod_labels(pj, r, i, op) for r, rs in specs.items() for i in range(rs["replicas"])}
        terms = [(r, t["labelSelector"]["matchLabels"]) for r, rs in specs.items() for t in
                 rs["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]]
        missed = [(r, p) for r, sel in terms for p, labels in pods.items() if any(labels.get(k) != v for k, v in sel.items())]
        expect(terms and not missed, f"{op}: every pod matches every replica's podAffinity selector {terms[0][1]} "
                                     f"(all on one node){'' if not missed else f'; missed {missed}'}")

    def on_cpu(job):
        for rs in job["spec"]["pytorchReplicaSpecs"].values():
            c = rs["template"]["spec"]["containers"][0]
            for flag, value in RANZCR_ON_CPU:
                c["args"] = set_flag(c["args"], flag, value)
            # With what a PyTorch DDP user reaches for next (issue 27), all at once: SyncBatchNorm,
            # static_graph, PowerSGD compressing from step 2, ZeRO.
            c["args"] = c["args"] + ISSUE27_FLAGS
    # Played with the labels of kubeflow/pytorch-operator v1.0, what an old MiniKF runs: none of
    # training.kubeflow.org/*; JOB_NAME (the model's folder) must still be the job's name.
    job, res = pytorchjob_run(sc, overlay, [], mutate=on_cpu, timeout=600, operator="pytorch-operator v1.0")
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(res.condition == "Succeeded", f"PyTorchJob {name} (Master 1 + Worker 1) succeeded on CPU under "
                                         f"pytorch-operator v1.0's pod labels ({res.reason}), with {' '.join(ISSUE27_FLAGS)}")
    master_log = sc.log_text(f"{name}-master-0")
    for line in ("DDP comm hook: powersgd", "--zero: optimizer state sharded over 2 ranks"):
        expect(line in master_log, f"rank 0 logs '{line}': the flags took effect")
    expect(res.total_recreations == 0, "no pod was recreated")
    expect(bool(model_digest(os.path.join(sc.pvc, "models", name))), f"the model was written under models/{name} "
                                                                       "(JOB_NAME from the job's own label)")
    expect(bool(checkpoint_steps(os.path.join(sc.pvc, "checkpoints", name))), "an epoch-end checkpoint was written")


def play_data_job(sc, overlay):
    """Synthetic data asked for by name, then the overlay's data-prep Jobs, each to completion (a
    volume prepared before the job)."""
    prep = by_kind(sc.render(overlay), "Job")
    ask_for_synthetic(sc, prep)
    for j in prep:
        r = operators.play_job(j, sc.factory, 300)
        expect(r.condition == "Succeeded", f"data-prep Job {j['metadata']['name']} completed")


# The workshop's SageMaker job (hybrid pipeline, SageMaker branch), small enough for seconds on CPU.
# --threads 1 on both sides: the intra-op thread count must match for bit-identical sums.
SAGEMAKER_HYPERPARAMETERS = {"backend": '"gloo"', "batch-size": "64", "epochs": "1", "lr": "0.01",
                             "model-type": '"custom"', "threads": "1", "timeout": "120",
                             "sagemaker_program": '"cifar10-distributed-gpu-final.py"',
                             "sagemaker_region": '"us-west-2"', "sagemaker_container_log_level": "20"}


def sagemaker_request(name, hyperparameters, channel="training", s3_uri="s3://ddp-bucket/data/cifar10", count=2,
                      input_mode="File"):
    return {"TrainingJobName": name,
            "AlgorithmSpecification": {"TrainingImage": "000000000000.dkr.ecr.us-west-2.amazonaws.com/ddp:cpu",
                                       "TrainingInputMode": "File",
                                       "MetricDefinitions": [{"Name": k, "Regex": v} for k, v in
                                                             hybrid_training.METRIC_DEFINITIONS.items()]},
            "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
            "HyperParameters": dict(hyperparameters),
            "InputDataConfig": [{"ChannelName": channel, "InputMode": input_mode, "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": s3_uri, "S3DataDistributionType": "FullyReplicated"}}}],
            "OutputDataConfig": {"S3OutputPath": "s3://ddp-bucket/jobs"},
            "ResourceConfig": {"InstanceCount": count, "InstanceType": "ml.p3.2xlarge", "VolumeSizeInGB": 50},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600}}


def sagemaker_job(sc, request, timeout=300, **how):
    res = sagemaker.run_training_job(request, sc.args.bin_dir, sc.work, sc.cluster, timeout,
                                     image_env=sc.args.image_env, **how)
    if res["TrainingJobStatus"] != "Completed":
        for h, log in res["Local"]["logs"].items():
            print(f"--- {h}\n" + "\n".join(open(log, errors="replace").read().splitlines()[-15:]))
    logs = {h: open(p, errors="replace").read() for h, p in res["Local"]["logs"].items()}
    return res, logs


# RANZCR through the same entrypoint, small enough for seconds on CPU (trainer=ranzcr picks the program).
SAGEMAKER_RANZCR = {"trainer": '"ranzcr"', "epochs": "1", "batch-size": "8", "image-size": "32",
                    "arch": '"resnet18"', "device": '"cpu"', "backend": '"gloo"', "max-steps": "2", "threads": "1"}


def scenario_sagemaker(sc, state):
    data = sagemaker.s3_local(sc.work, "s3://ddp-bucket/data/cifar10")
    os.makedirs(data, exist_ok=True)
    subprocess.run([os.path.join(sc.args.bin_dir, "make_cifar10_synthetic"), "--out", data, "--train", "1000",
                    "--test", "200", "--seed", "5", "--layout", "bin"], check=True, capture_output=True,
                   env=sc.args.image_env)
    # As SageMaker starts the image: its USER (uid 1000), /opt/ml made by root, its write folders writable.
    res, logs = sagemaker_job(sc, sagemaker_request("cifar10-ddp-sm", SAGEMAKER_HYPERPARAMETERS))
    expect(res["TrainingJobStatus"] == "Completed", f"TrainingJob cifar10-ddp-sm completed as uid 1000 with a "
                                                   f"root-owned /opt/ml ({res['FailureReason']})")
    expect(res["ModelArtifacts"]["S3ModelArtifacts"] == "s3://ddp-bucket/jobs/cifar10-ddp-sm/output/model.tar.gz",
           "the model artifact is s3://ddp-bucket/jobs/cifar10-ddp-sm/output/model.tar.gz")
    sm_model = os.path.join(sc.work, "sagemaker-model")
    expect(sagemaker.extract_model(res, sm_model) == ["model.pt"], "model.tar.gz holds model.pt (from algo-1 only)")
    expect("rank 0/2" in logs["algo-1"] and "rank 1/2" in logs["algo-2"], "algo-1 is rank 0 and algo-2 rank 1 of 2")
    expect("uid 1000:" in logs["algo-1"], "the trainer ran as uid 1000")
    expect("sagemaker_program ignored" in logs["algo-1"], "the SDK's sagemaker_* hyperparameters are ignored")
    metrics = res["Local"]["metrics"]["algo-1"]
    print(f"  note: metrics read from algo-1's log: { {k: v[-3:] for k, v in metrics.items()} }")
    expect(len(metrics["validation:accuracy"]) == 1 and 0.0 <= metrics["validation:accuracy"][0] <= 1.0
           and len(metrics["validation:loss"]) == 1 and metrics["train:loss"] and metrics["train:images_per_sec"]
           and not metrics["validation:auc"],
           "the metric definitions read one validation accuracy in [0, 1] and loss per epoch, the training loss "
           "and throughput, and no AUC from train_cifar10")
    # The same job as root (an image built FROM ours with USER root): the same model, byte for byte.
    res_root, logs_root = sagemaker_job(sc, sagemaker_request("cifar10-ddp-sm-root", SAGEMAKER_HYPERPARAMETERS),
                                        user="root")
    expect(res_root["TrainingJobStatus"] == "Completed" and "uid 0:" in logs_root["algo-1"],
           f"the same job completed as root ({res_root['FailureReason']})")
    root_model = os.path.join(sc.work, "sagemaker-model-root")
    sagemaker.extract_model(res_root, root_model)
    # The same training under ddprun: 2 processes on one node, the same flags and data.
    ref = os.path.join(sc.work, "ddprun-model")
    hp = {k: v.strip('"') for k, v in SAGEMAKER_HYPERPARAMETERS.items() if not k.startswith("sagemaker_")}
    argv = [os.path.join(sc.args.bin_dir, "ddprun"), "--nproc-per-node", "2", "train_cifar10", "--data-dir", data,
            "--model-dir", ref] + [f"--{k}={v}" for k, v in hp.items()]
    with open(os.path.join(sc.logs, "ddprun-reference.log"), "wb") as log:
        r = subprocess.run(argv, env=dict(sc.args.image_env, PATH=sc.args.bin_dir + ":/usr/bin:/bin"), stdout=log,
                           stderr=subprocess.STDOUT, timeout=300)
    expect(r.returncode == 0, f"the ddprun reference run succeeded (exit {r.returncode})")
    a, b, c = model_digest(sm_model), model_digest(ref), model_digest(root_model)
    expect(a == b == c and "model.pt" in a, f"model.pt is byte-identical as uid 1000, as root and under ddprun "
                                            f"(sha256 {a.get('model.pt', '-')[:16]}, {c.get('model.pt', '-')[:16]}, "
                                            f"{b.get('model.pt', '-')[:16]})")
    # Folders only root may write (what non-root users report): uid 1000 fails at once, permanently, saying why.
    res, logs = sagemaker_job(sc, sagemaker_request("cifar10-ddp-sm-rootonly", SAGEMAKER_HYPERPARAMETERS), 120,
                              opt_ml="root-only")
    codes = res["Local"]["exit_codes"]
    expect(res["TrainingJobStatus"] == "Failed" and 2 in codes.values() and set(codes.values()) <= {2, 143},
           f"with root-only /opt/ml folders the job as uid 1000 failed with exit 2 (the other instance: stopped, "
           f"143): {codes}")
    said = [h for h, text in logs.items() if "/opt/ml/model is not writable by uid 1000 (owner uid 0, mode 755)" in text
            and "run the image as root" in text]
    expect(bool(said), f"the failing instance's log names the folder, the owner and what to do ({said})")
    # RANZCR through the same image: trainer=ranzcr, its `train` channel in FastFile mode (read-only).
    rdata = sagemaker.s3_local(sc.work, "s3://ddp-bucket/data/ranzcr")
    subprocess.run([os.path.join(sc.args.bin_dir, "make_ranzcr_synthetic"), "--out", rdata, "-n", "40", "--size", "64"],
                   check=True, capture_output=True, env=sc.args.image_env)
    res, logs = sagemaker_job(sc, sagemaker_request("ranzcr-ddp-sm", SAGEMAKER_RANZCR, channel="train", count=1,
                                                    s3_uri="s3://ddp-bucket/data/ranzcr", input_mode="FastFile"))
    expect(res["TrainingJobStatus"] == "Completed", f"the RANZCR job (trainer=ranzcr, FastFile) completed "
                                                   f"({res['FailureReason']})")
    expect("the job asks for train_ranzcr: running " in logs["algo-1"] and "train_ranzcr: rank 0/1" in logs["algo-1"],
           "the image's ENTRYPOINT handed over to train_ranzcr")
    expect(sagemaker.extract_model(res, os.path.join(sc.work, "ranzcr-model")) == ["model.pt"],
           "its model.tar.gz holds model.pt")
    auc = res["Local"]["metrics"]["algo-1"]["validation:auc"]
    expect(len(auc) == 1 and 0.0 <= auc[0] <= 1.0 and not res["Local"]["metrics"]["algo-1"]["validation:accuracy"],
           f"the metric definitions read train_ranzcr's validation AUC ({auc}) and no accuracy")
    # A bad hyperparameter: the job fails with the trainer's reason, permanently, with no model.
    bad = dict(SAGEMAKER_HYPERPARAMETERS, **{"model-type": '"resnet"'})
    res, _ = sagemaker_job(sc, sagemaker_request("cifar10-ddp-sm-bad", bad), 120)
    expect(res["TrainingJobStatus"] == "Failed", "the job with model-type resnet failed")
    expect("--model-type='resnet'" in (res["FailureReason"] or ""), f"FailureReason names it: {res['FailureReason']}")
    expect(2 in res["Local"]["exit_codes"].values(), f"exit code 2 (permanent): {res['Local']['exit_codes']}")
    expect(res["ModelArtifacts"] is None, "no model artifact")


def scenario_chaos(sc, state):
    chaos.scenario_chaos(sc, state, sc.args.chaos, expect, same_weights, play_data_job)


PIPELINE_RUN = {"epochs": 1, "job_name": "ddp-pipeline", "bucket": "ddp-rehearsal",
                "role": "arn:aws:iam::000000000000:role/ddp-rehearsal"}


def pipeline_plan(sc, runtime):
    """The runs of one training_runtime, planned on every KFP version asked for (--kfp-version, else
    all of kfp_backend.VERSIONS): each version must give the same command lines; those are played."""
    spec = pipeline_runner.load(os.path.join(sc.args.repo, "pipelines", "hybrid-training.yaml"))
    found = {}
    for version in sc.args.kfp_versions:
        backend = kfp_backend.Backend(version)
        values = backend.root_inputs(spec, dict(PIPELINE_RUN, training_runtime=runtime))
        log = []
        runs = pipeline_runner.plan(spec, values, backend, os.path.join(sc.work, "outputs"), log=log)
        for line in log:
            print(f"  KFP {version}: {line}")
        found[version] = (values, runs)
    argvs = {v: [r.argv for r in runs] for v, (_, runs) in found.items()}
    first = sc.args.kfp_versions[0]
    expect(all(a == argvs[first] for a in argvs.values()),
           f"training_runtime={runtime}: the same command lines on KFP {', '.join(sc.args.kfp_versions)}")
    return found[first]


def scenario_pipeline(sc, state):
    """The hybrid pipeline's two branches, as the released KFP backends run them, played to a model."""
    _, runs = pipeline_plan(sc, "local")
    expect(runs == [], "training_runtime=local: neither branch runs")

    values, runs = pipeline_plan(sc, "kubernetes")
    expect([r.component_name for r in runs] == ["comp-compose-pytorchjob-specs", "comp-pytorch-operator-training-job"],
           "training_runtime=kubernetes: the compose step, then the PyTorchJob launcher")
    job, settings = kfp_components.launch_pytorchjob(runs[-1].argv)
    print(f"  note: the launcher's spec-level fields the v1.9 CRD prunes: {settings['pruned']}")
    expect(settings["delete_after_done"] is False, "the launcher keeps the PyTorchJob (--deleteAfterDone false)")
    errors = k8s_schema.validate(job)
    expect(not errors, f"the PyTorchJob the launcher creates is valid for the v1.9.4 CRD {errors[:3]}")
    replicas = job["spec"]["pytorchReplicaSpecs"]
    expect(replicas["Master"]["replicas"] == 1 and replicas["Worker"]["replicas"] == 2
           and all(r["restartPolicy"] == "ExitCode" for r in replicas.values()),
           "Master 1 + Worker 2, restartPolicy ExitCode")
    images = {c["image"] for r in replicas.values() for c in r["template"]["spec"]["containers"]}
    expect(images == {values["image"]}, f"every container runs the pipeline's image {values['image']!r} "
                                        f"(played by the build's binaries)")
    play_data_job(sc, "k8s/overlays/cpu")   # synthetic data asked for by name, then the data-prep Job
    res = operators.play_pytorchjob(job, sc.factory, 600)
    name = job["metadata"]["name"]
    if res.condition != "Succeeded":
        print(sc.tail(name))
    expect(res.condition == "Succeeded", f"PyTorchJob {name} succeeded ({res.reason})")
    digest = model_digest(os.path.join(sc.pvc, "models", name))
    expect(bool(digest), f"the master wrote the model under models/{name} (JOB_NAME from the pods' label): {sorted(digest)}")
    done = last_done_line(sc.log_text(f"{name}-master-0"))
    print(f"  note: rank 0's last line: {done[0] if done else '?'} steps, {done[1] if done else '?'} images")

    values, runs = pipeline_plan(sc, "sagemaker")
    expect([r.component_name for r in runs] == ["comp-compose-sagemaker-inputs", "comp-sagemaker-training-job"],
           "training_runtime=sagemaker: the compose step, then the SageMaker training component")
    request = kfp_components.sagemaker_training(runs[-1].argv)
    rc = request["ResourceConfig"]
    expect(rc["InstanceCount"] == 2 and rc["InstanceType"] == "ml.p3.2xlarge", "2 x ml.p3.2xlarge")
    hp = request["HyperParameters"]
    expect(hp == {"backend": "gloo", "batch-size": "64", "epochs": "1", "lr": "0.01", "model-type": "custom"},
           f"the workshop's hyperparameters, all strings: {hp}")
    expect(request["OutputDataConfig"]["S3OutputPath"] == "s3://ddp-rehearsal/jobs", "artifacts to s3://<bucket>/jobs")
    expect(request["AlgorithmSpecification"]["TrainingImage"] == values["image"],
           f"the training image is the pipeline's image {values['image']!r} (played by the build's binaries)")
    data = sagemaker.s3_local(sc.work, request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"])
    os.makedirs(data, exist_ok=True)
    env = dict(os.environ, LD_LIBRARY_PATH=sc.args.image_env.get("LD_LIBRARY_PATH", ""))
    subprocess.run([os.path.join(sc.args.bin_dir, "make_cifar10_synthetic"), "--out", data, "--train", "10000",
                    "--test", "2000", "--layout", "both", "--seed", "0"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    result = sagemaker.run_training_job(request, sc.args.bin_dir, sc.work, sc.cluster, 600, image_env=sc.args.image_env)
    if result["TrainingJobStatus"] != "Completed":
        for h, log in result["Local"]["logs"].items():
            lines = open(log, errors="replace").read().splitlines() if os.path.exists(log) else []
            print(f"--- {h} (last 15 lines)\n" + "\n".join(lines[-15:]))
    reason = f" ({result['FailureReason']})" if result["FailureReason"] else ""
    expect(result["TrainingJobStatus"] == "Completed", f"SageMaker job {request['TrainingJobName']} completed{reason}")
    expect(result["ModelArtifacts"]["S3ModelArtifacts"] == "s3://ddp-rehearsal/jobs/ddp-pipeline/output/model.tar.gz",
           f"model at {result['ModelArtifacts']['S3ModelArtifacts']}")
    files = sagemaker.extract_model(result, os.path.join(sc.work, "sagemaker-model"))
    expect("model.pt" in files, f"model.tar.gz holds model.pt: {files}")


SCENARIOS = {"dns-race": scenario_dns_race, "kill-worker": scenario_kill_worker, "bad-arg": scenario_bad_arg,
             "trainjob": scenario_trainjob, "ddprun": scenario_ddprun, "ranzcr-cpu": scenario_ranzcr_cpu,
             "ranzcr-minikf": scenario_ranzcr_minikf, "sagemaker": scenario_sagemaker, "elastic": scenario_elastic,
             "chaos": scenario_chaos, "pipeline": scenario_pipeline}


# ---- main ---------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--scenario", default=",".join(ALL))
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, PVC folders)")
    ap.add_argument("--chaos-rounds", type=int, default=7, help="chaos: rounds (seeds SEED..SEED+N-1)")
    ap.add_argument("--chaos-seed", type=int, default=1, help="chaos: the first round's seed")
    ap.add_argument("--chaos-timeout", type=float, default=20.0,
                    help="chaos: the trainers' --timeout, ddprun's --join-timeout and --store-timeout, seconds")
    ap.add_argument("--chaos-kinds", default="", help="chaos: only these faults (comma-separated)")
    ap.add_argument("--chaos-variants", default="", help="chaos: only these jobs (pytorchjob, pytorchjob-zero, ddprun, elastic)")
    ap.add_argument("--kfp-version", choices=kfp_backend.VERSIONS,
                    help="pipeline: plan with this KFP backend's rules only (default: every version, same result)")
    ap.add_argument("--standin-bin-dir", help=argparse.SUPPRESS)  # harness development only, never in ctest
    ap.add_argument("--strip-flag", action="append", default=[], help=argparse.SUPPRESS)  # idem
    args = ap.parse_args()
    args.kfp_versions = [args.kfp_version] if args.kfp_version else list(kfp_backend.VERSIONS)
    names = [s for s in args.scenario.split(",") if s]
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"unknown scenario {n}; known: {', '.join(SCENARIOS)}")
    try:
        args.chaos = chaos.Settings(args.chaos_rounds, args.chaos_seed, args.chaos_timeout,
                                    [k for k in args.chaos_kinds.split(",") if k],
                                    [v for v in args.chaos_variants.split(",") if v])
    except ValueError as e:
        ap.error(str(e))
    if args.chaos_rounds < 1 or args.chaos_timeout <= 0:
        ap.error("--chaos-rounds must be >= 1 and --chaos-timeout > 0")
    skipped = netpods.preflight(ci.skip)
    if skipped is not None:
        return skipped
    args.repo = os.path.abspath(args.repo)
    own_work = args.work is None
    args.work = args.work or tempfile.mkdtemp(prefix="ddp-rehearsal-")
    os.makedirs(args.work, exist_ok=True)
    args.bin_dir, lib_dir, found = make_bin_dir(os.path.abspath(args.build_dir), args.work, args.standin_bin_dir)
    if args.standin_bin_dir:
        print(f"WARNING: stand-in binaries from {args.standin_bin_dir}: harness development, not a rehearsal")
    needed = {"train_cifar10", "make_cifar10_synthetic"} | ({"ddprun"} if {"trainjob", "ddprun", "elastic", "chaos", "sagemaker"} & set(names) else set())
    if {"ranzcr-cpu", "ranzcr-minikf", "sagemaker"} & set(names):
        needed |= {"train_ranzcr", "make_ranzcr_synthetic"}
    missing = sorted(needed - set(found))
    if missing:
        print(f"FAIL: not built in {args.build_dir}: {', '.join(missing)}")
        return 1
    args.image_env = image_env(args.repo)
    args.image_env["LD_LIBRARY_PATH"] = lib_dir  # plays the image's libddp in /usr/lib
    if args.strip_flag:
        STRIP_FLAGS.extend(args.strip_flag)
        print(f"WARNING: flags {args.strip_flag} removed from the manifests: development, not a rehearsal")

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    state, results, clusters = {}, [], []

    def cluster_factory(work):
        c = netpods.Cluster(work)
        clusters.append(c)
        return c
    interrupted = False
    try:
        for n in names:
            if interrupted:
                break
            print(f"== scenario {n}")
            t0 = time.time()
            sc = None
            try:
                sc = Scenario(n, args, cluster_factory)
                SCENARIOS[n](sc, state)
                results.append((n, "PASS", time.time() - t0, ""))
            except ScenarioFailed as e:
                results.append((n, "FAIL", time.time() - t0, str(e)))
                print(f"  FAIL: {e}")
            except KeyboardInterrupt as e:
                results.append((n, "FAIL", time.time() - t0, f"interrupted ({e or 'SIGINT'})"))
                print(f"  interrupted: {e}; tearing down")
                interrupted = True
            except Exception as e:  # a harness error is a failure of the scenario, with its trace
                import traceback
                traceback.print_exc()
                results.append((n, "FAIL", time.time() - t0, f"{type(e).__name__}: {e}"))
            finally:
                if sc is not None:
                    sc.cluster.teardown()
                    left = sc.cluster.leftovers()
                    if left:
                        results.append((n + " teardown", "FAIL", 0.0, f"left behind: {left}"))
    finally:
        for c in clusters:
            c.teardown()
        if own_work and not args.keep and all(r[1] == "PASS" for r in results):
            shutil.rmtree(args.work, ignore_errors=True)
        else:
            print(f"work folder (logs, PVC folders): {args.work}")
    print("== summary")
    for n, verdict, took, why in results:
        print(f"  {verdict}  {n:14s} {took:6.1f} s  {why}")
    return 0 if results and all(r[1] == "PASS" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
