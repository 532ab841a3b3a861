"""The chaos scenario: seeded rounds of faults injected into the rehearsed CIFAR-10 jobs.

Each round plays one job to its end — `overlays/cpu` (PyTorchJob, Master 1 + Worker 2, the trainer is
the container), the same with `--zero` (the optimizer state sharded across the ranks, so every
checkpoint is consolidated from three shards and every restart splits it again),
`overlays/cpu-ddprun` (3 pods x ddprun 2 processes), or `overlays/cpu-elastic` (the elastic job:
Workers 1..3 x ddprun 2 processes, c10d rendezvous on worker-0; elastic.py's settings) — and injects
one or two faults at random times:

  kill-worker   SIGKILL one train_cifar10 process (PyTorchJob: a worker pod's trainer; ddprun: one of
                the two workers of a random pod, its ddprun survives)
  kill-ddprun   (ddprun) SIGKILL the ddprun of a random pod; its workers get their parent-death signal
  kill-master   SIGKILL every process of the master pod, the one that hosts the store (the trainer's
                rank 0, or node 0's ddprun)
  net-cut       take a random pod's veth down for longer than the configured timeout (then up again
                if the pod is still there): packets are dropped, connections stay open, only
                timeouts notice
  lose-node     (elastic) the node of worker-1 or worker-2 (not the endpoint's, whose loss ends the
                job) lost: every process of the pod SIGKILLed — in half the rounds its network cut
                first, so no FIN or RST tells the others (a node powered off: only their timeouts
                notice) —, the pod object held 1 s to 1.5x the timeout (operators.PodRun.lose_node),
                then created again; the others go on without it and the group grows again when it
                is back

Everything random comes from the round's seed: the job variant and the first fault's kind (the seed
indexes the list of (variant, kind) pairs, so consecutive seeds cover every pair), the target pod and
process, the time after the job's start, the length of a cut, a second fault. The seed prints and
`--chaos-seed SEED --chaos-rounds 1` replays the round (the same faults at the same offsets; the
processes' own timing still varies with the machine's load).

A round passes when the job ends in one of two ways:
  identical        Succeeded, model.pt byte-identical to the variant's undisturbed reference run, and
                   the step history intact: every "train" record of the metrics file (--log-interval 1:
                   one per step, appended by every rank-0 attempt) has the reference's loss for its
                   step, so no step was lost or applied twice before it; where the steps jump back (a
                   later attempt), the step before the jump is a checkpoint some rank logged as
                   written, and no later than the furthest step trained (nothing skipped); every step
                   of the reference is trained; the evaluations equal the reference's; the last
                   summary has the reference's step count.
  permanent error  Failed with an exit code 1-127 whose pod log ends with an ERROR line saying why.
  succeeded        (the elastic job, whose group size changes the numerics: no reference weights)
                   Succeeded with model.pt written, and the step history whole without the loss
                   comparison (check_elastic_history): jumps back only to a written checkpoint and
                   not past the furthest step trained, every epoch evaluated, the last at the last
                   step, a summary with that step count; a lost pod created again while the job
                   went on for REJOIN_S more must have run in a group (ddprun grew the group).
It fails on anything else: a Timeout (the job not done within its bound, or the watchdog seeing no
progress — no metrics record, no pod exit or creation, no fault — for --timeout + 30 s: a hang), a
success with other weights or a broken history, a failure without a clear error.

Configured timeouts (the "configured timeout" a cut outlasts): train_cifar10 --timeout (process-group
collectives, rendezvous and store calls), ddprun --join-timeout and --store-timeout (its store calls:
joining, then each request of its monitor loop). Other overrides:
--epochs 2, --checkpoint-every 10, --log-interval 1, OMP_NUM_THREADS=1 (a small CPU share per rank).
"""
import copy
import json
import os
import random
import re
import shutil
import signal
import time

import elastic
import operators

VARIANTS = {
    # name: (overlay, job name, processes, kinds)
    "pytorchjob": ("k8s/overlays/cpu", "cifar10", "train_cifar10", ["kill-worker", "kill-master", "net-cut"]),
    "pytorchjob-zero": ("k8s/overlays/cpu", "cifar10-zero", "train_cifar10", ["kill-worker"]),
    "ddprun": ("k8s/overlays/cpu-ddprun", "cifar10-ddprun", "ddprun", ["kill-worker", "kill-ddprun", "kill-master", "net-cut"]),
    "elastic": (elastic.OVERLAY, "cifar10-elastic", "ddprun", ["lose-node"]),
}
# Trainer flags a variant adds to its overlay's.
EXTRA_FLAGS = {"pytorchjob-zero": ["--zero"]}
COMBOS = [(v, k) for v in VARIANTS for k in VARIANTS[v][3]]
EPOCHS, CHECKPOINT_EVERY = 2, 10
STALL_MARGIN_S = 30.0


class Settings:
    def __init__(self, rounds=7, seed=1, timeout=20.0, kinds=None, variants=None):
        self.rounds, self.seed, self.timeout = rounds, seed, timeout
        known_kinds = {k for _, k in COMBOS}
        for k in kinds or []:
            if k not in known_kinds:
                raise ValueError(f"unknown chaos fault {k!r}; known: {', '.join(sorted(known_kinds))}")
        for v in variants or []:
            if v not in VARIANTS:
                raise ValueError(f"unknown chaos variant {v!r}; known: {', '.join(VARIANTS)}")
        self.combos = [(v, k) for v, k in COMBOS if (not kinds or k in kinds) and (not variants or v in variants)]
        if not self.combos:
            raise ValueError(f"no (variant, fault) pair left after the filters (kinds {kinds}, variants {variants})")


def set_flag(argv, flag, value, before=None):
    """argv with `flag value` set: replaced where present, else inserted before the word `before`
    (ddprun's options go before the program) or appended."""
    argv = list(argv)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    elif before is not None and before in argv:
        i = argv.index(before)
        argv[i:i] = [flag, value]
    else:
        argv += [flag, value]
    return argv


def under_ddprun(variant):
    """True when the variant's pods run ddprun (which starts the trainers), not the trainer itself."""
    return VARIANTS[variant][2] == "ddprun"


INSTANCE_LABEL = "app.kubernetes.io/instance"   # what the manifests' JOB_NAME reads


def prepare_job(objs, variant, job_name, timeout):
    """The variant's job with the round's name and the chaos overrides (module doc)."""
    job = copy.deepcopy(next(o for o in objs if o["kind"] == "PyTorchJob"))
    job["metadata"]["name"] = job_name
    for rs in job["spec"]["pytorchReplicaSpecs"].values():
        # A renamed job renames the label JOB_NAME reads too (k8s/README.md), else every round would
        # share the reference run's /shared/checkpoints/<name> and resume from its last step.
        labels = rs["template"]["metadata"]["labels"]
        if INSTANCE_LABEL not in labels:
            raise ValueError(f"{variant}: the replica template has no label {INSTANCE_LABEL}")
        labels[INSTANCE_LABEL] = job_name
        c = rs["template"]["spec"]["containers"][0]
        args = [str(a) for a in c.get("args", [])]
        for flag, value in (("--epochs", str(EPOCHS)), ("--checkpoint-every", str(CHECKPOINT_EVERY)),
                            ("--log-interval", "1"), ("--timeout", f"{timeout:g}")):
            args = set_flag(args, flag, value)
        if under_ddprun(variant):
            # Both of ddprun's store bounds: joining, and one request once joined (its monitor loop
            # polls the store; a poll sent into a cut link is only noticed at --store-timeout, 30 s
            # by default, which with a pod restart on a busy machine came near the stall limit).
            for flag in ("--join-timeout", "--store-timeout"):
                args = set_flag(args, flag, f"{timeout:g}", before="train_cifar10")
        c["args"] = args + EXTRA_FLAGS.get(variant, [])
        env = [e for e in c.get("env", []) if e["name"] != "OMP_NUM_THREADS"]
        c["env"] = env + [{"name": "OMP_NUM_THREADS", "value": "1"}]
    if is_elastic(variant):
        elastic.shorten(job)
    return job


def is_elastic(variant):
    """True for the elastic job: Workers only, its group's size changes, so its weights are not
    compared with a reference (play_round)."""
    return VARIANTS[variant][0] == elastic.OVERLAY


def pod_names(variant, job_name, replicas):
    """The job's pods, the store's host first (the master, or the elastic job's worker-0: the
    rendezvous endpoint)."""
    if is_elastic(variant):
        return [f"{job_name}-worker-{i}" for i in range(replicas)]
    return [f"{job_name}-master-0"] + [f"{job_name}-worker-{i}" for i in range(replicas - 1)]


# ---- what the trainers left behind -------------------------------------------------------------

def read_records(path):
    """The metrics file's JSON records in order, and the lines that are not JSON (a torn write)."""
    recs, bad = [], []
    if os.path.exists(path):
        for line in open(path, errors="replace").read().splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                bad.append(line)
    return recs, bad


def checkpoints_written(log_texts):
    """Global steps of every checkpoint a rank 0 logged as written."""
    steps = set()
    for text in log_texts:
        steps.update(int(x) for x in re.findall(r"checkpoint \S*ckpt-(\d+)\.ddpckpt written", text))
    return steps


def check_history(recs, ref_recs, written):
    """Problems with the step history of a job's metrics records against the reference's (module doc)."""
    problems = []
    ref_loss = {r["step"]: r["train_loss"] for r in ref_recs if r.get("type") == "train"}
    ref_eval = {r["epoch"]: r for r in ref_recs if r.get("type") == "eval"}
    last = max(ref_loss) if ref_loss else 0
    prev, reached, resumes = 0, 0, []
    for r in (r for r in recs if r.get("type") == "train"):
        s = r["step"]
        if s != prev + 1:
            c = s - 1   # a later attempt resumed from the checkpoint of step c
            resumes.append(c)
            if c != 0 and c not in written:
                problems.append(f"step {s} follows step {prev}, but no checkpoint of step {c} was written")
            if c > reached:
                problems.append(f"step {s} follows step {prev}: steps {reached + 1}..{c} were never trained")
        if s not in ref_loss:
            problems.append(f"step {s} is not a step of the reference run (1..{last})")
        elif r["train_loss"] != ref_loss[s]:
            problems.append(f"step {s}: loss {r['train_loss']} != the reference's {ref_loss[s]} (an earlier step lost or repeated)")
        prev, reached = s, max(reached, s)
    if reached != last:
        problems.append(f"the history reaches step {reached}, the reference {last}")
    for r in (r for r in recs if r.get("type") == "eval"):
        ref = ref_eval.get(r["epoch"])
        keys = ("step", "eval_loss", "accuracy", "correct", "total")
        if ref is None or any(r.get(k) != ref.get(k) for k in keys):
            problems.append(f"evaluation of epoch {r['epoch']} {[r.get(k) for k in keys]} != the reference's "
                            f"{[ref.get(k) for k in keys] if ref else None}")
    problems += summary_problems(recs, last)
    return problems[:8], resumes


def summary_problems(recs, steps):
    """The run's last summary record must count `steps` steps."""
    summaries = [r for r in recs if r.get("type") == "summary"]
    if not summaries or summaries[-1].get("steps") != steps:
        return [f"last summary record: {summaries[-1] if summaries else None}, expected steps={steps}"]
    return []


def check_elastic_history(recs, written, epochs):
    """Problems with the elastic job's step history, which has no reference to compare with (the
    world size changes the steps of an epoch and the numerics): where the steps jump back, to a
    checkpoint some rank logged as written and no later than the furthest step trained; every epoch
    1..epochs evaluated, the last at the last step trained; a last summary with that step count."""
    problems = []
    prev, reached, resumes = 0, 0, []
    for r in (r for r in recs if r.get("type") == "train"):
        s = r["step"]
        if s != prev + 1:
            c = s - 1
            resumes.append(c)
            if c != 0 and c not in written:
                problems.append(f"step {s} follows step {prev}, but no checkpoint of step {c} was written")
            if c > reached:
                problems.append(f"step {s} follows step {prev}: steps {reached + 1}..{c} were never trained")
        prev, reached = s, max(reached, s)
    evals = [r for r in recs if r.get("type") == "eval"]
    missing = sorted(set(range(1, epochs + 1)) - {r["epoch"] for r in evals})
    if missing:
        problems.append(f"epochs {missing} never evaluated")
    if evals and (evals[-1]["epoch"] != epochs or evals[-1]["step"] != reached):
        problems.append(f"the last evaluation is of epoch {evals[-1]['epoch']} at step {evals[-1]['step']}, "
                        f"expected epoch {epochs} at the last step trained, {reached}")
    problems += summary_problems(recs, reached)
    return problems[:8], resumes


# A node back in the job is in a group within this long (its pod's init container, ddprun's join,
# the running nodes' monitor interval and their workers' SIGTERM checkpoint, on a busy machine).
REJOIN_S = 20.0


def elastic_rejoins(sc, res, faults):
    """Problems with the lost nodes' return: a lost pod whose latest incarnation ran no attempt
    although the job went on for REJOIN_S after its creation (ddprun did not grow the group)."""
    problems = []
    lost = {f.pod: f.applied_at for f in faults if f.kind == "lose-node" and f.applied_at is not None}
    for pod, applied_at in sorted(lost.items()):
        created = res.created.get(pod, [])[-1]
        if created <= applied_at:
            continue   # the job ended within the hold
        ran_on = (res.finished - res.started) - created
        sizes = elastic.sizes(elastic.container_runs(sc.log_text(pod))[-1])
        if not sizes and ran_on > REJOIN_S:
            problems.append(f"{pod} came back at +{created:.1f} s but never ran in a group, "
                            f"though the job went on {ran_on:.0f} s")
    return problems


def last_error_line(log_text):
    lines = [l for l in log_text.splitlines() if " ERROR " in l or l.startswith("ERROR") or ": ERROR" in l]
    return lines[-1].strip() if lines else None


def signal_deaths(log_text):
    """ddprun's reports of workers killed by a signal other than the chaos' SIGKILL and ddprun's own
    SIGTERM (one that arrives before the trainer's stop handler is installed): a SIGPIPE, an abort,
    a segfault."""
    found = re.findall(r"[^\n]* was killed by (SIG\w+) \(exit \d+\)", log_text)
    lines = re.findall(r"[^\n]* was killed by SIG\w+ \(exit \d+\)", log_text)
    return [l.strip()[-120:] for l, sig in zip(lines, found) if sig not in ("SIGKILL", "SIGTERM")]


EXPECTED_EXITS = {0, 137, 143, 200, 201, 202}   # done, the chaos' SIGKILL, stopped, lost peer, timeout, store


# ---- faults ------------------------------------------------------------------------------------

class Fault:
    def __init__(self, kind, at, pod, local=0, duration=0.0):
        self.kind, self.at, self.pod, self.local, self.duration = kind, at, pod, local, duration
        self.applied_at = None     # seconds after the job's start
        self.restore_at = None     # net-cut: when the link goes up again (seconds after the start)
        self.target = None         # what was hit, in words
        self.pod_obj = None
        self.silent = False        # lose-node: the network cut before the processes die

    def describe(self):
        what = f"{self.kind} {self.pod}" + (f" worker #{self.local}" if self.kind == "kill-worker" else "")
        if self.kind == "net-cut":
            what += f" for {self.duration:.1f} s"
        if self.kind == "lose-node":
            what += f"{' (silent)' if self.silent else ''} held {self.duration:.1f} s"
        return what + f" at +{self.at:.1f} s"


def plan_faults(rng, variant, kind, job_name, replicas, ref_seconds, timeout):
    pods = pod_names(variant, job_name, replicas)

    def one(kind, at):
        if kind == "lose-node":
            # A node other than the endpoint's (losing that one ends the job, as in torch: the store
            # lives there); the pod object held 1 s (back before the smaller round closes) to 1.5x
            # the timeout (the smaller group trains meanwhile).
            f = Fault(kind, at, rng.choice(pods[1:]), duration=rng.uniform(1.0, 1.5 * timeout))
            f.silent = rng.random() < 0.5   # cut off before it dies: the others notice by their timeout
            return f
        if kind == "kill-master":
            return Fault(kind, at, pods[0])
        if kind == "kill-worker" and not under_ddprun(variant):
            return Fault(kind, at, rng.choice(pods[1:]))   # the master's trainer is kill-master's
        if kind == "kill-worker":
            return Fault(kind, at, rng.choice(pods), local=rng.randrange(2))
        if kind == "net-cut":
            return Fault(kind, at, rng.choice(pods), duration=timeout + rng.uniform(2.0, 0.5 * timeout + 2.0))
        return Fault(kind, at, rng.choice(pods))   # kill-ddprun
    # From a second after the start (pods starting, rendezvous) to near the reference run's end. The
    # times scale with the reference's duration measured in the same invocation, so a replay on a
    # faster or busier machine hits the same moment of the job (roughly), not the same second.
    first = one(kind, rng.uniform(1.0, max(2.0, 0.85 * ref_seconds)))
    faults = [first]
    if rng.random() < 1 / 3:
        faults.append(one(rng.choice(VARIANTS[variant][3]), first.at + rng.uniform(1.0, max(2.0, 0.7 * ref_seconds))))
    return faults


def apply_fault(f, run, res):
    """Injects f into run's pod when it can (the pod running its main container with the process to
    hit); False to try again on the next tick."""
    if run.pod is None or run.phase != "Running" or run.stage != "main" or run.proc is None or run.proc.poll() is not None:
        return False
    pids = run.pod.pids()
    if f.kind in ("kill-master", "lose-node"):
        victims = sorted(pids)
    elif f.kind == "kill-ddprun":
        victims = [p for p, c in pids.items() if c == "ddprun"]
    elif f.kind == "kill-worker":
        workers = sorted(p for p, c in pids.items() if c == "train_cifar10")
        victims = [workers[f.local % len(workers)]] if workers else []
    else:
        victims = None
    if victims is not None and not victims:
        return False   # the process is not there yet (exec in progress, workers not started)
    if f.kind == "net-cut":
        if not any(c in ("train_cifar10", "ddprun") for c in pids.values()):
            return False
        run.pod.cut_network()
        f.pod_obj = run.pod
        f.target = f"{run.name} (incarnation {run.incarnation}, link {run.pod.host_link})"
        res.event(f"chaos: {f.kind}: {run.name}'s veth {run.pod.host_link} down for {f.duration:.1f} s")
    elif f.kind == "lose-node":
        if "ddprun" not in pids.values():
            return False
        run.lose_node(hold=f.duration, silent=f.silent)
        f.target = f"{run.name} (incarnation {run.incarnation}) pids {victims}"
        how = "network cut, then SIGKILL" if f.silent else "SIGKILL"
        res.event(f"chaos: lose-node: {run.name}'s node lost ({how} pids {victims}), the pod held {f.duration:.1f} s")
    else:
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        f.target = f"{run.name} (incarnation {run.incarnation}) pids {victims}"
        res.event(f"chaos: {f.kind}: SIGKILL {run.name} pids {victims} ({', '.join(pids.get(p, '?') for p in victims)})")
    f.applied_at = time.time() - res.started
    if f.kind == "net-cut":
        f.restore_at = f.applied_at + f.duration
    return True


class Watchdog:
    """Measures how long the job goes without a new metrics record (a step, an evaluation, the
    summary: rank 0 appends one per step) — pod restarts are not progress. A quiet stretch longer
    than `stall_s` is a stall (the round fails); one longer than `abort_s` ends the job as a hang."""

    def __init__(self, metrics_path, stall_s, abort_s):
        self.metrics_path, self.stall_s, self.abort_s = metrics_path, stall_s, abort_s
        self.last_size, self.last_growth = -1, time.time()
        self.longest, self.longest_at = 0.0, None

    def check(self, res):
        size = os.path.getsize(self.metrics_path) if os.path.exists(self.metrics_path) else 0
        now = time.time()
        if size != self.last_size:
            self.last_size, self.last_growth = size, now
        quiet = now - self.last_growth
        if quiet > self.longest:
            self.longest, self.longest_at = quiet, self.last_growth - res.started
        if quiet > self.abort_s:
            return f"hang: no new metrics record for {quiet:.0f} s"
        return None


# ---- the scenario ------------------------------------------------------------------------------

def run_job(sc, job, timeout, faults, stall_s):
    """Plays the job with the faults; (JobResult, Watchdog)."""
    name = job["metadata"]["name"]
    metrics = os.path.join(sc.pvc, "models", name, "metrics.json")
    dog = Watchdog(metrics, stall_s, 3 * stall_s)
    pending = list(faults)
    cuts = []

    def on_tick(res, runs):
        now = time.time() - res.started
        for f in list(pending):
            if now >= f.at:
                run = next(r for r in runs if r.name == f.pod)
                if apply_fault(f, run, res):
                    pending.remove(f)
                    if f.kind == "net-cut":
                        cuts.append(f)
        for f in list(cuts):
            if now >= f.restore_at:
                cuts.remove(f)
                up = f.pod_obj.restore_network()
                res.event(f"chaos: {f.pod}'s veth {'up again' if up else 'gone with its pod'}")
        return dog.check(res)
    res = operators.play_pytorchjob(job, sc.factory, timeout, on_tick=on_tick)
    for f in cuts:
        f.pod_obj.restore_network()
    for r in [f"{name}-master-0"] + [n for n in res.recreated if n != f"{name}-master-0"]:
        sc.cluster.unpublish(r)
    return res, dog


def reference(sc, variant, timeout):
    overlay, base, _, _ = VARIANTS[variant]
    name = f"{base}-ref"
    job = prepare_job(sc.render(overlay), variant, name, timeout)
    t0 = time.time()
    res, dog = run_job(sc, job, 900, [], 900)
    took = time.time() - t0
    if res.condition != "Succeeded":
        print(sc.tail(name))
        raise RuntimeError(f"the undisturbed {variant} run did not succeed: {res.condition} ({res.reason})")
    model_dir = os.path.join(sc.pvc, "models", name)
    recs, _ = read_records(os.path.join(model_dir, "metrics.json"))
    steps = [r["step"] for r in recs if r.get("type") == "train"]
    if is_elastic(variant):
        # A pod later than last_call_timeout makes a round of fewer nodes, then a re-forming: the
        # steps may jump back, to a written checkpoint.
        problems, _ = check_elastic_history(recs, checkpoints_written(sc.log_text(p) for p in res.recreated), EPOCHS)
        if problems:
            raise RuntimeError(f"the undisturbed {variant} run's history: {problems}")
    elif steps != list(range(1, len(steps) + 1)):
        raise RuntimeError(f"the undisturbed {variant} run's train records are not steps 1..N: {steps[:5]}...")
    if "--zero" in EXTRA_FLAGS.get(variant, []) and "--zero: optimizer state sharded over 3 ranks" not in sc.log_text(f"{name}-master-0"):
        raise RuntimeError(f"the {variant} reference's rank 0 does not log its ZeRO shard: --zero did not take effect")
    print(f"  reference {variant}: {len(steps)} steps in {took:.1f} s (longest quiet {dog.longest:.1f} s), "
          f"model {model_dir}")
    return {"model": model_dir, "records": recs, "seconds": took, "replicas": sum(
        int(rs.get("replicas", 1)) for rs in job["spec"]["pytorchReplicaSpecs"].values())}


def play_round(sc, settings, refs, seed, same_weights):
    variant, kind = settings.combos[seed % len(settings.combos)]
    rng = random.Random(seed)
    overlay, base, _, _ = VARIANTS[variant]
    ref = refs[variant]
    name = f"{base}-s{seed}"
    faults = plan_faults(rng, variant, kind, name, ref["replicas"], ref["seconds"], settings.timeout)
    print(f"-- round seed {seed}: {variant}, {'; '.join(f.describe() for f in faults)}"
          f"   (replay: --scenario chaos --chaos-seed {seed} --chaos-rounds 1)", flush=True)
    job = prepare_job(sc.render(overlay), variant, name, settings.timeout)
    cut = sum(f.duration for f in faults)
    bound = 3 * ref["seconds"] + len(faults) * (2 * settings.timeout + 30) + cut + 60
    t0 = time.time()
    res, dog = run_job(sc, job, bound, faults, settings.timeout + STALL_MARGIN_S)
    took = time.time() - t0
    out = {"seed": seed, "variant": variant, "faults": faults, "seconds": took, "problems": [], "notes": [],
           "quiet": dog.longest}
    stalled = (f"stalled: no new step for {dog.longest:.0f} s from +{dog.longest_at:.1f} s "
               f"(limit: --timeout {settings.timeout:g} s + {STALL_MARGIN_S:g} s)") if dog.longest > dog.stall_s else None
    logs = {p: sc.log_text(p) for p in res.recreated}
    model_dir = os.path.join(sc.pvc, "models", name)
    for f in faults:
        if f.applied_at is None:
            out["notes"].append(f"{f.kind} not applied: the job ended first")
    deaths = [d for text in logs.values() for d in signal_deaths(text)]
    if deaths:
        out["notes"].append(f"{len(deaths)} worker(s) killed by a signal not sent by the chaos: " + " | ".join(deaths[:3]))
    odd = [(p, rc) for p, _, rc in res.exits if rc not in EXPECTED_EXITS]
    if odd:
        out["notes"].append(f"pod exit codes other than 0/137/143/200/201/202: {odd}")
    if res.condition == "Succeeded" and is_elastic(variant):
        recs, torn = read_records(os.path.join(model_dir, "metrics.json"))
        problems, jumps = check_elastic_history(recs, checkpoints_written(logs.values()), EPOCHS)
        problems += elastic_rejoins(sc, res, faults)
        if torn:
            out["notes"].append(f"{len(torn)} metrics line(s) not JSON (a write cut short): {torn[0][:80]!r}")
        model = os.path.join(model_dir, "model.pt")
        if not (os.path.isfile(model) and os.path.getsize(model) > 0):
            problems.insert(0, f"no model written ({model})")
        if stalled:
            problems.insert(0, stalled)
        applied = any(f.applied_at is not None for f in faults)
        out["outcome"] = "FAILED" if problems else "succeeded" if applied else "no fault (the job ended first)"
        out["problems"] = problems
        host = f"{name}-worker-0"
        out["detail"] = (f"{sum(res.recreated.values())} pod recreations, group sizes on {host}: "
                         f"{elastic.sizes(logs.get(host, ''))}, history jumps back to {jumps}, "
                         f"longest quiet {dog.longest:.1f} s")
    elif res.condition == "Succeeded":
        same, how = same_weights(ref["model"], model_dir)
        recs, torn = read_records(os.path.join(model_dir, "metrics.json"))
        problems, jumps = check_history(recs, ref["records"], checkpoints_written(logs.values()))
        if torn:
            out["notes"].append(f"{len(torn)} metrics line(s) not JSON (a write cut short): {torn[0][:80]!r}")
        if not same:
            problems.insert(0, f"final weights differ from the reference's: {how}")
        elif how != "byte-identical files":
            out["notes"].append(how)
        if stalled:
            problems.insert(0, stalled)
        applied = any(f.applied_at is not None for f in faults)
        out["outcome"] = "FAILED" if problems else "identical" if applied else "no fault (the job ended first)"
        out["problems"] = problems
        master_log = logs.get(f"{name}-master-0", "")
        resumed = [int(x) for x in re.findall(r"rank 0\] INFO  resumed from \S*ckpt-(\d+)\.ddpckpt", master_log)]
        out["detail"] = (f"{sum(res.recreated.values())} pod recreations, rank 0 resumed from steps {resumed} "
                         f"(history jumps back to {jumps}), longest quiet {dog.longest:.1f} s")
    elif res.condition == "Failed":
        codes = [(p, rc) for p, _, rc in res.exits if rc != 0]
        failing = res.reason.split()[0]
        rc = next((c for p, c in reversed(codes) if p == failing), None)
        why = last_error_line(logs.get(failing, ""))
        if rc is not None and 1 <= rc <= 127 and why and not stalled:
            out["outcome"] = "permanent error"
            out["detail"] = f"{failing} exit {rc}: {why[-200:]}"
        else:
            out["outcome"] = "FAILED"
            out["problems"] = [p for p in [stalled] if p] + [
                f"job Failed ({res.reason}) without a clear permanent error: exit {rc}, last ERROR line {why!r}"]
            out["detail"] = f"exits {codes}"
    else:
        out["outcome"] = "FAILED"
        out["problems"] = [f"{res.condition}: {res.reason}"]
        out["detail"] = f"job bound {bound:.0f} s, exits {[(p, rc) for p, _, rc in res.exits]}"
    if out["outcome"] == "FAILED":
        print(sc.tail(name, 25))
    else:
        shutil.rmtree(os.path.join(sc.pvc, "checkpoints", name), ignore_errors=True)   # the disk is shared
    print(f"   => {out['outcome']} in {took:.1f} s: {out.get('detail', '')}")
    for p in out["problems"]:
        print(f"      problem: {p}")
    for n in out["notes"]:
        print(f"      note: {n}")
    return out


def summarize(results, settings):
    kinds, outcomes = {}, {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
        for f in r["faults"]:
            if f.applied_at is not None:
                key = f"{f.kind} ({r['variant']})"
                kinds[key] = kinds.get(key, 0) + 1
    print("== chaos summary")
    print(f"  rounds: {len(results)} (seeds {settings.seed}..{settings.seed + settings.rounds - 1}), "
          f"--timeout {settings.timeout:g} s")
    print("  faults injected: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    print(f"  longest quiet stretch: {max((r['quiet'] for r in results), default=0):.1f} s; "
          f"longest round: {max((r['seconds'] for r in results), default=0):.1f} s")
    for r in results:
        if r["outcome"] in ("FAILED", "permanent error"):
            print(f"  seed {r['seed']} ({r['variant']}: {'; '.join(f.describe() for f in r['faults'])}): "
                  f"{r['outcome']}: {r.get('detail', '')} {r['problems']}")
    return [r for r in results if r["outcome"] == "FAILED"]


def scenario_chaos(sc, state, settings, expect, same_weights, play_data_job):
    """Prepares the data once, runs each variant undisturbed once (the references), then the rounds."""
    play_data_job(sc, VARIANTS["pytorchjob"][0])
    variants = sorted({v for v, _ in settings.combos})
    refs = {v: reference(sc, v, settings.timeout) for v in variants}
    if "pytorchjob" in refs and "pytorchjob-zero" in refs:
        # ZeRO's updates are the plain optimizer's: the two undisturbed runs end with the same weights.
        same, how = same_weights(refs["pytorchjob"]["model"], refs["pytorchjob-zero"]["model"])
        expect(same, f"the --zero reference run trains to the plain reference's weights ({how})")
    results = []
    for i in range(settings.rounds):
        results.append(play_round(sc, settings, refs, settings.seed + i, same_weights))
    failed = summarize(results, settings)
    state["chaos"] = results
    expect(not failed, f"every chaos round ended identical (elastic: succeeded) or with a clear permanent error "
                       f"({len(results) - len(failed)}/{len(results)}; failing seeds {[r['seed'] for r in failed]})")
