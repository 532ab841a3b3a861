"""The controllers, played: training-operator v1.9 for a PyTorchJob, Kubeflow Trainer v2.3 (+ JobSet and
the Job controller) for a TrainJob, and the Job controller for a batch/v1 Job. Each pod of the job runs
in a netpods.Pod; the container's command and args run with the environment the controller would give
them, mapped onto this machine (see PodFactory).

What the v1 operator does and this plays (training-operator v1.9.0 = release-1.9:
pkg/controller.v1/pytorch/envvar.go setPodEnv, master.go, elastic.go, pytorchjob_controller.go
UpdateJobStatus, pkg/apis/kubeflow.org/v1/pytorch_defaults.go, common/pod.go):
  - pods <job>-master-0 and <job>-worker-<i>, hostname = pod name, one headless Service (DNS record)
    per pod; the template's labels plus the operator's own, which changed over its versions
    (OPERATOR_LABELS, play_pytorchjob's `operator`): training.kubeflow.org/{job-name,operator-name,
    replica-type,replica-index,job-role} from training-operator 1.7 on (pkg/apis/kubeflow.org/v1/
    common_types.go, v1.7.0-v1.9.0); those and the deprecated job-name, group-name, replica-type,
    replica-index, job-role in 1.4-1.6 (kubeflow/common v0.4.x JobController.GenLabels); only the
    latter in 1.3 (kubeflow/common v0.3.7 constants.go); group-name, pytorch-job-name,
    pytorch-replica-type, pytorch-replica-index, pytorch-job-role in kubeflow/pytorch-operator v1.0
    (controller.v1/pytorch/controller.go, pod.go: what an old MiniKF runs)
  - the job defaulted first (v1_defaults): nprocPerNode "auto" unless elasticPolicy.nProcPerNode is
    set; an elasticPolicy's missing minReplicas/maxReplicas from the other, or both = Worker replicas
  - env appended to every container, in this order (v1_env): PYTHONUNBUFFERED=1; only when a Master
    replica exists: MASTER_PORT, PET_MASTER_PORT (the Master's `pytorchjob-port` container port,
    default 23456), MASTER_ADDR, PET_MASTER_ADDR (<job>-master-0), WORLD_SIZE (pods x nprocPerNode,
    `auto` counting 1), RANK and PET_NODE_RANK (pod index, workers +1); PET_NPROC_PER_NODE
    (spec.nprocPerNode) when set; then with spec.elasticPolicy (v1_elastic_env): PET_RDZV_ENDPOINT
    (rdzvHost or <job>-worker-0, ':', rdzvPort or the Worker's `pytorchjob-port`), PET_RDZV_BACKEND
    (rdzvBackend, default c10d), PET_NNODES ("min:max"), PET_MAX_RESTARTS (maxRestarts), PET_NPROC_PER_NODE
    (the deprecated elasticPolicy.nProcPerNode), PET_RDZV_ID (rdzvId), PET_RDZV_CONF ("k=v,k=v" from
    rdzvConf), PET_STANDALONE (empty, when standalone); without it PET_NNODES (number of pods)
  - restartPolicy ExitCode: a failed pod with exit code >= 128 is deleted and created again (a new pod:
    new IP, the Service record follows it); 1-127 fails the job. OnFailure/Always restart the
    container in place; Never fails the job. The job succeeds when the Master succeeds; without a
    Master when every Worker did, or, with an elasticPolicy, as soon as one Worker did (v1_succeeded).
  - runPolicy.cleanPodPolicy Running/All: pods still running when the job ends are deleted.
  - a pod whose node is lost (PodRun.lose_node, played for the elastic scenarios): its processes die
    (their connections closed by the kernel, or with silent=True not: the network cut first), its
    pod object stays until the node is removed (a hold the caller chooses), then the operator
    creates the missing pod; no exit code or restart policy is involved.
Not played: the elasticPolicy's metrics / HPA (hpa.go; the number of Worker pods stays the
template's), and the operator's `init-pytorch` init container (nslookup of the master until it
resolves); leaving it out exercises the trainer's own retry on a name that does not resolve yet, which is also
what Trainer v2 gives (it has no such init container).

Trainer v2 (pkg/runtime/framework/plugins/torch/torch.go): the runtime's replicated job `node` becomes
an Indexed Job of numNodes pods, hostname <job>-node-0-<index>, subdomain <job>; the `node` container
gets trainer.env, then PET_NNODES, PET_NPROC_PER_NODE (numProcPerNode; `auto` without GPUs becomes
the CPU request, at least 1), PET_NODE_RANK (the completion index), PET_MASTER_ADDR
(<job>-node-0-0.<job>), PET_MASTER_PORT (29500); the Job controller adds JOB_COMPLETION_INDEX.
runtimePatches are merged into the pod template (volumes, volumeMounts, securityContext, metadata).
"""
import copy
import math
import os
import re
import signal
import time

import image_layout

V1_PORT_NAME = "pytorchjob-port"
V1_DEFAULT_PORT = 23456
V2_PORT = 29500
SIGNAL_EXIT = 128


class JobResult:
    def __init__(self, kind, name):
        self.kind, self.name = kind, name
        self.condition = None          # Succeeded / Failed / Timeout
        self.reason = ""
        self.exits = []                # (pod, incarnation, exit code)
        self.recreated = {}            # pod -> times deleted and created again
        self.restarted = {}            # pod -> in-place container restarts
        self.events = []
        self.created = {}              # pod -> [seconds since start of each creation]
        self.main_started = {}         # pod -> [seconds since start when its main container started]
        self.started = time.time()
        self.finished = None

    def event(self, text):
        line = f"+{time.time() - self.started:6.1f}s {text}"
        self.events.append(line)
        print(f"  [{self.kind}/{self.name}] {line}", flush=True)

    @property
    def total_recreations(self):
        return sum(self.recreated.values())


# ---- from a container spec to a process -------------------------------------------------------

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


# Secrets of the rendered manifests, name -> {key: value}; rehearse.py registers them as it renders
# (kustomize's secretGenerator makes the store token's Secret).
SECRETS = {}


def env_value(e, field=None):
    """The value of one env entry: value, secretKeyRef, or (with `field`, a fieldPath -> value
    function) fieldRef."""
    if "value" in e:
        return str(e["value"])
    src = e.get("valueFrom") or {}
    if "secretKeyRef" in src:
        ref = src["secretKeyRef"]
        if ref.get("key") not in SECRETS.get(ref.get("name"), {}):
            raise ValueError(f"env {e.get('name')}: Secret key {ref.get('name')}/{ref.get('key')} is not rendered")
        return SECRETS[ref["name"]][ref["key"]]
    if "fieldRef" in src and field is not None:
        return field(src["fieldRef"]["fieldPath"])
    raise ValueError(f"env {e.get('name')}: only value, secretKeyRef and fieldRef are played")


def expand(s, env):
    """Kubernetes' $(VAR) expansion: defined variables are substituted, $$ escapes, others stay."""
    def rep(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _REF.sub(rep, s)


def field_ref(path, pod_meta, pod_ip):
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return (pod_meta.get(m.group(1)) or {}).get(m.group(2), "")
    simple = {"metadata.name": pod_meta.get("name", ""), "metadata.namespace": pod_meta.get("namespace", "default"),
              "status.podIP": pod_ip, "status.podIPs": pod_ip, "spec.nodeName": "rehearsal-node",
              "spec.serviceAccountName": "default", "status.hostIP": pod_ip}
    if path not in simple:
        raise ValueError(f"fieldRef {path!r} is not played by the rehearsal")
    return simple[path]


class PodFactory:
    """Maps a pod template onto this machine: PVC mounts become local folders (their mount paths are
    rewritten in command, args, env and workingDir), the image's binaries (/usr/bin/ddprun, ...) become the build's
    (image_layout: the build's folder first in PATH, our /usr/bin paths pointed at it), the image's ENV comes from the Dockerfile."""

    def __init__(self, cluster, bin_dir, pvc_dirs, image_env, logs_dir):
        self.cluster, self.bin_dir, self.pvc_dirs = cluster, bin_dir, pvc_dirs
        self.image_env, self.logs_dir = image_env, logs_dir
        self.scratch = {}

    def path_map(self, pod_spec, container):
        vols = {v["name"]: v for v in pod_spec.get("volumes", []) or []}
        mapping = image_layout.binary_mapping(self.bin_dir)
        for m in container.get("volumeMounts", []) or []:
            v = vols.get(m["name"])
            if v is None:
                raise ValueError(f"volumeMount {m['name']} has no volume")
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"]["claimName"]
                if claim not in self.pvc_dirs:
                    raise ValueError(f"PVC {claim} is not played (known: {sorted(self.pvc_dirs)})")
                local = self.pvc_dirs[claim]
            elif "emptyDir" in v:
                if m["mountPath"] == "/dev/shm":
                    continue  # the host's /dev/shm
                local = self.scratch.setdefault(m["name"], os.path.join(self.logs_dir, "emptydir-" + m["name"]))
                os.makedirs(local, exist_ok=True)
            else:
                raise ValueError(f"volume {m['name']}: only persistentVolumeClaim and emptyDir are played")
            if m.get("subPath"):
                local = os.path.join(local, m["subPath"])
            mapping.append((m["mountPath"].rstrip("/"), local))
        return mapping

    @staticmethod
    def rewrite(s, mapping):
        for ctr_path, local in sorted(mapping, key=lambda p: -len(p[0])):
            s = re.sub(r"(?<![\w./-])" + re.escape(ctr_path) + r"(?=/|$|[\s\"';:])", local, s)
        return s

    def process(self, pod_spec, container, pod_meta, pod, extra_env):
        """argv, env, cwd, uid, gid of a container of this pod (extra_env: what a controller appends)."""
        env_list = []
        for e in container.get("env", []) or []:
            env_list.append((e["name"], env_value(e, lambda path: field_ref(path, pod_meta, pod.ip))))
        env_list += extra_env
        env = {}
        for k, v in self.image_env.items():
            env[k] = v
        env["PATH"] = image_layout.path_with(self.bin_dir, env.get("PATH"))
        env["HOSTNAME"] = pod.hostname
        env["HOME"] = self.logs_dir
        declared = {}
        for k, v in env_list:  # values may use $(earlier variables)
            declared[k] = expand(v, declared)
        mapping = self.path_map(pod_spec, container)
        for k, v in declared.items():
            env[k] = self.rewrite(v, mapping)
        argv = [self.rewrite(expand(str(a), declared), mapping)
                for a in (container.get("command") or []) + (container.get("args") or [])]
        if not container.get("command"):
            raise ValueError(f"container {container['name']}: no command (the image's ENTRYPOINT is not played)")
        sc = dict(pod_spec.get("securityContext") or {})
        sc.update(container.get("securityContext") or {})
        uid, gid = sc.get("runAsUser"), sc.get("runAsGroup")
        cwd = self.rewrite(container.get("workingDir", "/"), mapping)
        return argv, env, cwd, uid, gid


# ---- a pod's life: init containers in order, then the main container ------------------------------

class PodRun:
    def __init__(self, factory, name, hostname, template, meta, extra_env, main_container, aliases=None):
        self.factory, self.name, self.hostname = factory, name, hostname
        self.template, self.meta, self.extra_env = template, meta, extra_env
        self.main_name = main_container
        self.aliases = aliases
        self.pod = None
        self.proc = None
        self.stage = None          # index into init containers, or "main"
        self.init_failed = None
        self.main_started = []     # when the main container started, each incarnation
        self.phase = "Pending"     # Pending, Running, Succeeded, Failed, Lost (lose_node: held)
        self.exit_code = None
        self.incarnation = 0
        self.lost_until = None     # lose_node(): when the lost node's pod object is gone
        self.log_path = os.path.join(factory.logs_dir, f"{name}.log")

    def create(self):
        """The pod object: its namespace, IP and hosts file; containers start with start()."""
        self.incarnation += 1
        self.pod = self.factory.cluster.create_pod(self.name, self.hostname, self.aliases)
        self.phase, self.exit_code, self.proc, self.init_failed = "Running", None, None, None
        self.lost_until = None
        self.stage = -1
        return self.pod

    def start(self):
        self._next()

    def _start(self, container, extra_env):
        spec = self.template["spec"]
        argv, env, cwd, uid, gid = self.factory.process(spec, container, self.meta, self.pod, extra_env)
        for d in self.factory.pvc_dirs.values():
            if uid is not None:
                os.chown(d, uid, gid if gid is not None else uid)
        self.proc = self.pod.start(argv, env, self.log_path, cwd=cwd, uid=uid, gid=gid)

    def _next(self):
        inits = self.template["spec"].get("initContainers") or []
        self.stage += 1
        if self.stage < len(inits):
            self._start(inits[self.stage], [])   # controllers inject env into containers only
            return
        self.stage = "main"
        main = next(c for c in self.template["spec"]["containers"] if c["name"] == self.main_name)
        self._start(main, self.extra_env)
        self.main_started.append(time.time())

    def poll(self):
        """None while running; the exit code once the pod's main container (or an init) ended."""
        if self.phase != "Running" or self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is None:
            return None
        if rc < 0:
            rc = SIGNAL_EXIT - rc   # killed by signal N: the container runtime reports 128+N
        if self.stage != "main":
            if rc == 0:
                self._next()
                return None
            self.phase, self.exit_code = "Failed", 0xBEEF   # main container never terminated
            self.init_failed = rc
            return self.exit_code
        self.phase = "Succeeded" if rc == 0 else "Failed"
        self.exit_code = rc
        return rc

    def lose_node(self, hold=None, silent=False):
        """The pod's node goes away: every process of the pod dies at once (SIGKILL), and the pod
        object stays until the node is removed, `hold` seconds, or with None until end_hold() (the
        node controller marks the node NotReady and evicts its pods, and the pod garbage collector
        deletes them once the Node object is gone: minutes on a real cluster, until the node is
        replaced). Only then does the operator see the pod missing and create it again; no exit
        code reaches it (play_pytorchjob).
        The pod's network stays until then: the dead processes' connections are closed by their
        kernel (FIN/RST reach the peers: a crash, an OOM kill), which deleting the namespace at once
        would race with. silent=True cuts the network first instead (a node powered off or cut
        off: nothing more leaves it, the peers notice by their timeouts only)."""
        if silent:
            self.pod.cut_network()
        self.pod.signal_all(signal.SIGKILL)
        self.lost_until = math.inf if hold is None else time.time() + hold

    def end_hold(self):
        """The lost node's pod object is gone now: the operator creates the pod on its next pass."""
        self.lost_until = time.time()
        if self.phase == "Lost":
            self.create_at = self.containers_at = self.lost_until

    def restart_in_place(self):
        self.stage = "main"
        self.phase = "Running"
        main = next(c for c in self.template["spec"]["containers"] if c["name"] == self.main_name)
        self._start(main, self.extra_env)

    def delete(self, grace=0.0):
        if self.pod is not None:
            self.factory.cluster.delete_pod(self.pod, grace=grace)
        self.pod, self.proc = None, None


# ---- PyTorchJob (training-operator v1.9) ---------------------------------------------------------

def v1_defaults(job):
    """The job as the v1.9 controller sees it after the scheme's defaulting (pytorch_defaults.go,
    SetDefaults_PyTorchJob; the controller calls Scheme.Default before it reconciles): replicas 1,
    elasticPolicy's missing min/max from the other (both from Worker replicas when neither is set),
    nprocPerNode "auto" unless elasticPolicy.nProcPerNode is set (the pytorchjob-port default,
    23456, is v1_port's)."""
    job = copy.deepcopy(job)
    spec = job["spec"]
    for rs in spec["pytorchReplicaSpecs"].values():
        rs.setdefault("replicas", 1)
    ep = spec.get("elasticPolicy")
    if ep is not None:
        if "minReplicas" not in ep and "maxReplicas" not in ep:
            workers = spec["pytorchReplicaSpecs"]["Worker"]["replicas"]   # the webhook requires a Worker
            ep["minReplicas"] = ep["maxReplicas"] = workers
        elif "minReplicas" not in ep:
            ep["minReplicas"] = ep["maxReplicas"]
        elif "maxReplicas" not in ep:
            ep["maxReplicas"] = ep["minReplicas"]
    if ep is None or ep.get("nProcPerNode") is None:
        spec.setdefault("nprocPerNode", "auto")
    return job


def v1_port(job, rtype):
    """The `pytorchjob-port` of a replica type's pytorch container (getPortFromPyTorchJob; defaulted
    to 23456 when the template has none)."""
    for c in job["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"]["containers"]:
        if c["name"] == "pytorch":
            for p in c.get("ports", []) or []:
                if p.get("name") == V1_PORT_NAME:
                    return int(p["containerPort"])
    return V1_DEFAULT_PORT


def v1_elastic_env(job):
    """ElasticEnvVarGenerator.Generate (elastic.go), in its order, on the defaulted job."""
    name = job["metadata"]["name"]
    ep = job["spec"]["elasticPolicy"]
    host = ep.get("rdzvHost", f"{name}-worker-0")
    port = ep.get("rdzvPort", v1_port(job, "Worker"))
    env = [("PET_RDZV_ENDPOINT", f"{host}:{port}"), ("PET_RDZV_BACKEND", ep.get("rdzvBackend", "c10d"))]
    # "min:max" (the generator's other branch, Worker replicas, needs neither set: never after defaulting)
    env.append(("PET_NNODES", f"{ep['minReplicas']}:{ep['maxReplicas']}"))
    if "maxRestarts" in ep:
        env.append(("PET_MAX_RESTARTS", str(int(ep["maxRestarts"]))))
    if "nProcPerNode" in ep:
        env.append(("PET_NPROC_PER_NODE", str(int(ep["nProcPerNode"]))))
    if "rdzvId" in ep:
        env.append(("PET_RDZV_ID", str(ep["rdzvId"])))
    if ep.get("rdzvConf") is not None:
        if not ep["rdzvConf"]:   # the generator cuts the trailing comma off an empty string: a panic
            raise ValueError("elasticPolicy.rdzvConf is an empty list: the v1.9 operator panics on it")
        env.append(("PET_RDZV_CONF", ",".join(f"{c.get('key', '')}={c.get('value', '')}" for c in ep["rdzvConf"])))
    if ep.get("standalone"):
        env.append(("PET_STANDALONE", ""))
    return env


def v1_env(job, rtype, index):
    """setPodEnv (envvar.go): what the operator appends to each container of pod <rtype>-<index>."""
    job = v1_defaults(job)
    spec = job["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    name = job["metadata"]["name"]
    total = sum(int(r["replicas"]) for r in replicas.values())
    nproc = spec.get("nprocPerNode")
    nproc_int = int(nproc) if str(nproc).isdigit() else 1
    env = [("PYTHONUNBUFFERED", "1")]
    if "Master" in replicas:   # MASTER_*, WORLD_SIZE and RANK only with a Master (master.go)
        port = v1_port(job, "Master")
        rank = index + 1 if rtype == "Worker" else index
        master_addr = f"{name}-master-0"
        env += [("MASTER_PORT", str(port)), ("PET_MASTER_PORT", str(port)),
                ("MASTER_ADDR", master_addr), ("PET_MASTER_ADDR", master_addr),
                ("WORLD_SIZE", str(total * nproc_int)), ("RANK", str(rank)), ("PET_NODE_RANK", str(rank))]
    if nproc is not None:
        env.append(("PET_NPROC_PER_NODE", str(nproc)))
    if spec.get("elasticPolicy") is not None:
        env += v1_elastic_env(job)
    else:
        env.append(("PET_NNODES", str(total)))
    return env


def _labels_v1_7(name, rtype, index):
    labels = {"training.kubeflow.org/job-name": name, "training.kubeflow.org/operator-name": "pytorchjob-controller",
              "training.kubeflow.org/replica-type": rtype.lower(), "training.kubeflow.org/replica-index": str(index)}
    if rtype == "Master":
        labels["training.kubeflow.org/job-role"] = "master"
    return labels


def _labels_v1_3(name, rtype, index):
    labels = {"group-name": "kubeflow.org", "job-name": name, "replica-type": rtype.lower(), "replica-index": str(index)}
    if rtype == "Master":
        labels["job-role"] = "master"
    return labels


def _labels_pytorch_operator(name, rtype, index):
    labels = {"group-name": "kubeflow.org", "pytorch-job-name": name, "pytorch-replica-type": rtype.lower(),
              "pytorch-replica-index": str(index)}
    if rtype == "Master":
        labels["pytorch-job-role"] = "master"
    return labels


# The labels each operator version adds to a pod (module docstring): name -> fn(job, type, index).
OPERATOR_LABELS = {
    "training-operator v1.9": _labels_v1_7,
    "training-operator v1.5": lambda *a: dict(_labels_v1_3(*a), **_labels_v1_7(*a)),
    "training-operator v1.3": _labels_v1_3,
    "pytorch-operator v1.0": _labels_pytorch_operator,
}


def pod_labels(job, rtype, index, operator="training-operator v1.9"):
    """The labels of a PyTorchJob's pod: its template's, then the operator's own."""
    labels = dict(((job["spec"]["pytorchReplicaSpecs"][rtype]["template"].get("metadata") or {}).get("labels")) or {})
    labels.update(OPERATOR_LABELS[operator](job["metadata"]["name"], rtype, index))
    return labels


def v1_succeeded(job, runs):
    """Why the job is Succeeded (UpdateJobStatus, pytorchjob_controller.go), or None: with a Master,
    when the Master succeeded; Workers only, when every Worker did, or with an elasticPolicy as soon
    as one Worker did (the others are then cleaned up by cleanPodPolicy)."""
    done = [r for r in runs if r.phase == "Succeeded"]
    if any(r.rtype == "Master" for r in runs):
        return "the master succeeded" if any(r.rtype == "Master" for r in done) else None
    if len(done) == len(runs):
        return "every worker succeeded"
    if job["spec"].get("elasticPolicy") is not None and done:
        return f"{done[0].name} succeeded (elasticPolicy: one worker is enough)"
    return None


def play_pytorchjob(job, factory, timeout, dns_delay=0.0, master_start_delay=0.0, on_tick=None,
                    operator="training-operator v1.9"):
    """Runs the job to an end. dns_delay: the master's record appears that many seconds after the
    workers start; the master pod starts master_start_delay seconds after its record (DNS ahead of
    the listening socket). on_tick(result, runs) may act on the pods (kill one) each tick; when it
    returns a reason, the job ends as Timeout with that reason (a watchdog's verdict). operator: whose
    labels the pods get (OPERATOR_LABELS)."""
    name = job["metadata"]["name"]
    res = JobResult("PyTorchJob", name)
    spec = job["spec"]
    clean = (spec.get("runPolicy") or {}).get("cleanPodPolicy", "None")
    runs = []
    for rtype in ("Master", "Worker"):
        rs = spec["pytorchReplicaSpecs"].get(rtype)
        if rs is None:
            continue
        for i in range(int(rs.get("replicas", 1))):
            pod_name = f"{name}-{rtype.lower()}-{i}"
            tmpl = copy.deepcopy(rs["template"])
            meta = copy.deepcopy(tmpl.get("metadata") or {})
            meta["name"] = pod_name
            meta["labels"] = pod_labels(job, rtype, i, operator)
            run = PodRun(factory, pod_name, pod_name, tmpl, meta, v1_env(job, rtype, i), "pytorch")
            run.rtype, run.policy = rtype, rs.get("restartPolicy", "OnFailure")
            t0 = time.time()
            run.create_at = t0 + (dns_delay if rtype == "Master" else 0.0)
            run.containers_at = run.create_at + (master_start_delay if rtype == "Master" else 0.0)
            runs.append(run)
            res.recreated[pod_name] = 0
            res.restarted[pod_name] = 0
    deadline = time.time() + timeout
    while True:
        now = time.time()
        for r in runs:
            if r.phase == "Lost" and now >= r.create_at:
                r.delete()          # the lost node's pod object is gone: the operator sees it missing
                r.phase = "Pending"
            if r.pod is None and r.phase == "Pending" and now >= r.create_at:
                pod = r.create()
                res.created.setdefault(r.name, []).append(time.time() - res.started)
                factory.cluster.publish(r.name, pod.ip)
                res.event(f"pod {r.name} created ({pod.ip}){' again' if r.incarnation > 1 else ''}, "
                          f"service record {r.name} -> {pod.ip}")
            if r.pod is not None and r.proc is None and r.phase == "Running" and now >= r.containers_at:
                r.start()
                if r.containers_at > r.create_at:
                    res.event(f"pod {r.name}: containers start")
        if on_tick:
            stuck = on_tick(res, runs)   # a reason to give up on the job (a hang), or None
            if stuck and res.condition is None:
                res.condition, res.reason = "Timeout", stuck
        for r in runs:
            rc = r.poll()
            if rc is None:
                continue
            res.exits.append((r.name, r.incarnation, rc))
            if r.lost_until is not None:
                # A lost node's pod: no container status, no restart policy; the operator creates the
                # missing pod once the pod object is gone (the hold; its namespace goes then too).
                factory.cluster.unpublish(r.name)
                r.phase = "Lost"
                r.create_at = r.containers_at = max(r.lost_until, time.time() + 1.0)
                res.recreated[r.name] += 1
                hold = "until the node is replaced" if r.create_at == math.inf else \
                    f"for {r.create_at - time.time():.1f} s"
                res.event(f"pod {r.name} lost with its node (its processes ended {rc}): the pod object stays "
                          f"{hold}, then the operator creates it again")
                continue
            if rc == 0:
                res.event(f"pod {r.name} succeeded")
                continue
            init = r.init_failed
            res.event(f"pod {r.name} failed: exit code {rc}" + (f" (init container exited {init})" if init else ""))
            if r.policy == "ExitCode":
                if rc >= SIGNAL_EXIT:
                    factory.cluster.unpublish(r.name)
                    r.delete()
                    r.phase = "Pending"
                    r.create_at = r.containers_at = time.time() + 1.0
                    res.recreated[r.name] += 1
                    res.event(f"pod {r.name} deleted, to be created again (retryable exit code {rc})")
                else:
                    res.condition, res.reason = "Failed", f"{r.name} exited with permanent code {rc}"
            elif r.policy in ("OnFailure", "Always"):
                res.restarted[r.name] += 1
                r.restart_in_place()
                res.event(f"container of {r.name} restarted in place")
            else:
                res.condition, res.reason = "Failed", f"{r.name} failed with restartPolicy Never"
        if res.condition is None:
            done = v1_succeeded(job, runs)
            if done:
                res.condition, res.reason = "Succeeded", done
        if res.condition is None and time.time() > deadline:
            res.condition, res.reason = "Timeout", f"no end after {timeout} s"
        if res.condition is not None:
            res.event(f"job {res.condition}: {res.reason}")
            for r in runs:
                if r.pod is not None and r.phase == "Running" and (clean in ("Running", "All") or res.condition == "Timeout"):
                    res.event(f"pod {r.name} deleted (cleanPodPolicy {clean})")
                    grace = float(r.template["spec"].get("terminationGracePeriodSeconds", 30))
                    r.delete(grace=min(grace, 10.0))
                    r.phase = "Deleted"
            for r in runs:
                r.delete()
                res.main_started[r.name] = [t - res.started for t in r.main_started]
            res.finished = time.time()
            return res
        time.sleep(0.1)


# ---- batch/v1 Job --------------------------------------------------------------------------------

def play_job(job, factory, timeout):
    name = job["metadata"]["name"]
    res = JobResult("Job", name)
    tmpl = copy.deepcopy(job["spec"]["template"])
    backoff = int(job["spec"].get("backoffLimit", 6))
    failures = 0
    main = tmpl["spec"]["containers"][0]["name"]
    deadline = time.time() + timeout
    while True:
        pod_name = f"{name}-{os.urandom(3).hex()[:5]}"
        meta = copy.deepcopy(tmpl.get("metadata") or {})
        meta["name"] = pod_name
        meta.setdefault("labels", {})["job-name"] = name
        run = PodRun(factory, pod_name, pod_name, tmpl, meta, [], main)
        run.create()
        run.start()
        res.event(f"pod {pod_name} created")
        while run.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        rc = run.exit_code
        run.delete()
        res.exits.append((pod_name, 1, rc))
        if rc == 0:
            res.condition, res.reason = "Succeeded", "Complete"
        elif rc is None:
            res.condition, res.reason = "Timeout", f"no end after {timeout} s"
        else:
            failures += 1
            res.event(f"pod {pod_name} failed: exit code {rc}")
            if failures > backoff:
                res.condition, res.reason = "Failed", "BackoffLimitExceeded"
        if res.condition:
            res.event(f"job {res.condition}: {res.reason}")
            res.finished = time.time()
            return res


# ---- TrainJob (Kubeflow Trainer v2.3 on the torch-distributed runtime) -------------------------

def _merge_named(base, patch):
    """Strategic merge of a list keyed by name (containers, volumes, volumeMounts, env)."""
    out = [copy.deepcopy(x) for x in base]
    for p in patch:
        hit = next((x for x in out if x.get("name") == p.get("name")), None)
        if hit is None:
            out.append(copy.deepcopy(p))
        else:
            for k, v in p.items():
                if isinstance(v, list) and v and isinstance(v[0], dict) and "name" in v[0]:
                    hit[k] = _merge_named(hit.get(k, []), v)
                else:
                    hit[k] = copy.deepcopy(v)
    return out


def trainjob_pod_template(tj, runtime):
    """The `node` pod template after the runtime, the TrainJob's trainer and its runtimePatches."""
    rjob = next(r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == "node")
    tmpl = copy.deepcopy(rjob["template"]["spec"]["template"])
    for p in tj["spec"].get("runtimePatches", []) or []:
        for rj in ((p.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs", []):
            if rj["name"] != "node":
                continue
            pt = ((rj.get("template") or {}).get("spec") or {}).get("template") or {}
            meta = pt.get("metadata") or {}
            for k in ("labels", "annotations"):
                tmpl.setdefault("metadata", {}).setdefault(k, {}).update(meta.get(k) or {})
            ps = pt.get("spec") or {}
            for k, v in ps.items():
                if k in ("containers", "initContainers", "volumes"):
                    tmpl["spec"][k] = _merge_named(tmpl["spec"].get(k, []), v)
                else:
                    tmpl["spec"][k] = copy.deepcopy(v)
    trainer = tj["spec"].get("trainer") or {}
    node = next(c for c in tmpl["spec"]["containers"] if c["name"] == "node")
    for k in ("image", "command", "args"):
        if k in trainer:
            node[k] = copy.deepcopy(trainer[k])
    if "resourcesPerNode" in trainer:
        node["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
    return tmpl


def v2_env(tj, index):
    from math import ceil
    name = tj["metadata"]["name"]
    trainer = tj["spec"].get("trainer") or {}
    nodes = int(trainer.get("numNodes", 1))
    nproc = trainer.get("numProcPerNode")
    res = trainer.get("resourcesPerNode") or {}
    gpus = ((res.get("limits") or {}).get("nvidia.com/gpu")) or ((res.get("requests") or {}).get("nvidia.com/gpu"))
    if nproc is None:
        nproc = "auto"
        if not gpus:
            cpu = (res.get("requests") or {}).get("cpu") or (res.get("limits") or {}).get("cpu")
            n = 0
            if cpu is not None:
                s = str(cpu)
                n = ceil(int(s[:-1]) / 1000) if s.endswith("m") else ceil(float(s))
            nproc = str(max(1, n))
    env = [(e["name"], env_value(e)) for e in trainer.get("env", []) or []]
    env += [("PET_NNODES", str(nodes)), ("PET_NPROC_PER_NODE", str(nproc)), ("PET_NODE_RANK", str(index)),
            ("PET_MASTER_ADDR", f"{name}-node-0-0.{name}"), ("PET_MASTER_PORT", str(V2_PORT)),
            ("JOB_COMPLETION_INDEX", str(index))]
    return env


def play_trainjob(tj, runtime, factory, timeout, dns_delay=0.0):
    name = tj["metadata"]["name"]
    res = JobResult("TrainJob", name)
    tmpl = trainjob_pod_template(tj, runtime)
    nodes = int((tj["spec"].get("trainer") or {}).get("numNodes", 1))
    runs = []
    for i in range(nodes):
        hostname = f"{name}-node-0-{i}"
        pod_name = f"{hostname}-{os.urandom(3).hex()[:5]}"
        meta = copy.deepcopy(tmpl.get("metadata") or {})
        meta["name"] = pod_name
        meta.setdefault("labels", {}).update({"jobset.sigs.k8s.io/jobset-name": name,
                                             "jobset.sigs.k8s.io/replicatedjob-name": "node"})
        meta.setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(i)
        aliases = [f"{hostname}.{name}.{factory.cluster.namespace}.svc.cluster.local", hostname]
        run = PodRun(factory, pod_name, hostname, tmpl, meta, v2_env(tj, i), "node", aliases=aliases)
        run.record = f"{hostname}.{name}"
        run.publish_at = time.time() + (dns_delay if i == 0 else 0.0)
        runs.append(run)
    for r in runs:
        pod = r.create()
        r.start()
        res.event(f"pod {r.name} created ({pod.ip}), hostname {r.hostname}")
    deadline = time.time() + timeout
    while True:
        for r in runs:
            if r.record not in factory.cluster.records and time.time() >= r.publish_at:
                factory.cluster.publish(r.record, r.pod.ip)
                res.event(f"DNS {r.record} -> {r.pod.ip}")
        for r in runs:
            rc = r.poll()
            if rc is None:
                continue
            res.exits.append((r.name, 1, rc))
            res.event(f"pod {r.name} {'succeeded' if rc == 0 else f'failed: exit code {rc}'}")
            if rc != 0:
                res.condition, res.reason = "Failed", f"{r.name} failed (the runtime has no failurePolicy: the JobSet fails)"
        if res.condition is None and all(r.phase == "Succeeded" for r in runs):
            res.condition, res.reason = "Succeeded", "Complete: every node succeeded"
        if res.condition is None and time.time() > deadline:
            res.condition, res.reason = "Timeout", f"no end after {timeout} s"
        if res.condition is not None:
            res.event(f"trainjob {res.condition}: {res.reason}")
            for r in runs:
                r.delete(grace=5.0 if r.phase == "Running" else 0.0)
            res.finished = time.time()
            return res
        time.sleep(0.1)
