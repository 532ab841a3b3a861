"""Validates Kubernetes objects the way the API server (and the Kubeflow webhooks) would on create.

For each object:
  1. the OpenAPI v3 schema of its kind (CRDs copied under tests/k8s/schemas/, openAPIV3Schema of the
     served version) through jsonschema: types, enums, patterns, required fields, bounds;
  2. "no unknown fields" as `kubectl apply --validate=strict` reports what the API server would prune:
     every field must be declared by the schema's properties (or additionalProperties), except below
     x-kubernetes-preserve-unknown-fields; root and embedded ObjectMeta are checked against
     ObjectMeta's fields;
  3. list-map / set uniqueness (x-kubernetes-list-type), the CEL rules (x-kubernetes-validations)
     that apply on create, evaluated by a small translator (transition rules using oldSelf are
     update-only and skipped);
  4. core validation that the schema cannot express: volumeMounts name declared volumes, requests <=
     limits, extended resources (nvidia.com/gpu) whole and requests == limits, env names, $(VAR)
     references in command/args name a declared env var;
  5. Katib Experiments (katib_schema.py): the Go types' OpenAPI made strict, Katib's webhook checks,
     and the trial job each trial would run (trialParameters substituted) validated as its own kind;
  6. the admission webhooks: training-operator v1.9's PyTorchJob validation (DNS-1035 name,
     Master/Worker only, a container named `pytorch` with an image, Master replicas 1) plus the
     ExitCode/OnFailure/Never/Always restart policies; Trainer v2.3's TrainJob validation (no
     reserved PET_* env in trainer.env, runtimePatches manager a domain-prefixed path, patched
     replicated jobs and containers exist in the referenced runtime, no env patched into `node`).

Core kinds without a CRD (PersistentVolumeClaim, batch/v1 Job, Pod, ConfigMap, Secret) are checked against the core
types the CRDs embed: PodTemplateSpec from the PyTorchJob CRD, PersistentVolumeClaimSpec from the
TrainJob CRD's ephemeral volume template, plus JobSpec's own fields listed here from batch/v1.
"""
import os
import re

import jsonschema
import yaml

import katib_schema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "schemas")
CRD_FILES = {
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org_pytorchjobs.v1.9.4.yaml",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org_trainjobs.v2.3.0.yaml",
    ("tensorboard.kubeflow.org/v1alpha1", "Tensorboard"): "tensorboard.kubeflow.org_tensorboards.v1.9.2.yaml",
}
RUNTIMES = {"torch-distributed": "torch_distributed_runtime.v2.3.0.yaml"}

OBJECT_META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                      "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                      "annotations", "ownerReferences", "finalizers", "managedFields"}
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
RESTART_POLICIES = {"Always", "OnFailure", "Never", "ExitCode"}
TORCH_RESERVED_ENV = {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}


def _load_crd_schema(filename):
    docs = [d for d in yaml.safe_load_all(open(os.path.join(SCHEMAS, filename), encoding="utf-8")) if d]
    crd = docs[0]
    out = {}
    for v in crd["spec"]["versions"]:
        if v.get("served"):
            out[f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"]] = v["schema"]["openAPIV3Schema"]
    return out


_CACHE = {}


def schemas():
    """{(apiVersion, kind): openAPIV3Schema} for the CRDs and the core kinds built from them."""
    if _CACHE:
        return _CACHE
    for fname in CRD_FILES.values():
        _CACHE.update(_load_crd_schema(fname))
    pj = _CACHE[("kubeflow.org/v1", "PyTorchJob")]
    pod_template = pj["properties"]["spec"]["properties"]["pytorchReplicaSpecs"]["additionalProperties"]["properties"]["template"]
    tj = _CACHE[("trainer.kubeflow.org/v1alpha1", "TrainJob")]
    vol = (tj["properties"]["spec"]["properties"]["runtimePatches"]["items"]["properties"]["trainingRuntimeSpec"]
           ["properties"]["template"]["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]
           ["template"]["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"]["volumes"]["items"])
    pvc_spec = vol["properties"]["ephemeral"]["properties"]["volumeClaimTemplate"]["properties"]["spec"]
    meta = {"type": "object"}
    top = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": meta}
    _CACHE[("v1", "PersistentVolumeClaim")] = {"type": "object", "required": ["spec"],
                                               "properties": dict(top, spec=pvc_spec)}
    _CACHE[("v1", "Pod")] = {"type": "object", "required": ["spec"],
                             "properties": dict(top, spec=pod_template["properties"]["spec"])}
    integer = {"type": "integer", "format": "int32"}
    job_spec = {  # batch/v1 JobSpec (Kubernetes 1.31); the pod template is the embedded core type
        "type": "object", "required": ["template"],
        "properties": {
            "parallelism": integer, "completions": integer, "activeDeadlineSeconds": {"type": "integer"},
            "backoffLimit": integer, "backoffLimitPerIndex": integer, "maxFailedIndexes": integer,
            "ttlSecondsAfterFinished": integer, "suspend": {"type": "boolean"},
            "manualSelector": {"type": "boolean"},
            "completionMode": {"type": "string", "enum": ["NonIndexed", "Indexed"]},
            "podReplacementPolicy": {"type": "string", "enum": ["TerminatingOrFailed", "Failed"]},
            "managedBy": {"type": "string"},
            "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "podFailurePolicy": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "successPolicy": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "template": pod_template,
        }}
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    _CACHE[("v1", "Secret")] = {"type": "object", "properties": dict(  # core/v1 Secret
        top, type={"type": "string"}, immutable={"type": "boolean"},
        data=dict(string_map, additionalProperties={"type": "string", "format": "byte"}), stringData=string_map)}
    _CACHE[("batch/v1", "Job")] = {"type": "object", "required": ["spec"], "properties": dict(top, spec=job_spec)}
    _CACHE[("v1", "ConfigMap")] = {"type": "object", "properties": dict(  # core/v1 ConfigMap (kustomize local config)
        top, immutable={"type": "boolean"}, data=string_map,
        binaryData=dict(string_map, additionalProperties={"type": "string", "format": "byte"}))}
    container = pod_template["properties"]["spec"]["properties"]["containers"]["items"]
    _CACHE[katib_schema.KEY] = katib_schema.experiment_schema(container, container["properties"]["livenessProbe"]["properties"]["httpGet"])
    return _CACHE


def runtime(name):
    fname = RUNTIMES.get(name)
    if fname is None:
        return None
    return [d for d in yaml.safe_load_all(open(os.path.join(SCHEMAS, fname), encoding="utf-8")) if d][0]


# ---- quantities ---------------------------------------------------------------------------------

_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def quantity(q):
    m = re.fullmatch(r"([+-]?[0-9.]+)(e[+-]?[0-9]+|[kMGTPE]i|[mkMGTPE])?", str(q))
    if not m:
        raise ValueError(f"bad quantity {q!r}")
    num, suf = m.group(1), m.group(2) or ""
    if suf.startswith("e"):
        return float(num + suf)
    return float(num) * _SUFFIX[suf]


# ---- CEL (the few forms the CRDs use) -----------------------------------------------------------

class _CelObj:
    def __init__(self, v):
        self.v = v

    def __getattr__(self, name):
        if isinstance(self.v, dict) and name in self.v:
            return _wrap(self.v[name])
        raise KeyError(name)


def _wrap(v):
    return _CelObj(v) if isinstance(v, dict) else v


def _has(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict) or p not in cur:
            return False
        cur = cur[p]
    return True


def cel_eval(rule, value):
    """True/False for rules in the supported subset; None when the rule is update-only (oldSelf)."""
    if "oldSelf" in rule:
        return None
    expr = rule
    expr = re.sub(r"has\(self\.([\w.]+)\)", r"_has(_raw, '\1')", expr)
    expr = re.sub(r"(self(?:\.\w+)*)\.matches\(", r"_matches(\1, ", expr)
    expr = re.sub(r"\bsize\(", "_size(", expr)
    expr = expr.replace("||", " or ").replace("&&", " and ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    expr = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", expr))
    env = {"self": _wrap(value), "_raw": value, "_has": _has, "_size": len,
           "_matches": lambda s, rx: re.search(rx, s) is not None, "__builtins__": {}}
    try:
        return bool(eval(expr, env))  # the expression comes from the CRD files in this repository
    except KeyError:
        return True  # a field the rule reads is absent: CEL would not run it either
    except Exception as e:
        raise ValueError(f"CEL rule {rule!r} is outside the subset this validator understands: {e}")


# ---- the structural walk ------------------------------------------------------------------------

def _check_meta(meta, path, errors, root_kind=None):
    if not isinstance(meta, dict):
        errors.append(f"{path}: must be an object")
        return
    for k, v in meta.items():
        if k not in OBJECT_META_FIELDS:
            errors.append(f"{path}.{k}: unknown field (ObjectMeta has no {k!r})")
    for which in ("labels", "annotations"):
        for k, v in (meta.get(which) or {}).items():
            if not isinstance(v, str):
                errors.append(f"{path}.{which}.{k}: value must be a string, got {type(v).__name__} {v!r}")
            prefix, _, name = k.rpartition("/")
            if (prefix and not DNS1123_SUBDOMAIN.match(prefix)) or not QUALIFIED_NAME.match(name) or len(name) > 63:
                errors.append(f"{path}.{which}: key {k!r} is not a qualified name")
            if which == "labels" and isinstance(v, str) and (len(v) > 63 or not LABEL_VALUE.match(v)):
                errors.append(f"{path}.labels.{k}: value {v!r} is not a valid label value")
    name = meta.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name)):
        errors.append(f"{path}.name: {name!r} is not a DNS-1123 subdomain")


def walk(value, schema, path, errors, notes):
    if not isinstance(schema, dict):
        return
    for rule in schema.get("x-kubernetes-validations", []):
        try:
            ok = cel_eval(rule["rule"], value)
        except ValueError as e:
            errors.append(f"{path or '<root>'}: {e}")
            continue
        if ok is False:
            errors.append(f"{path or '<root>'}: {rule.get('message', 'CEL rule failed')} (rule: {rule['rule']})")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
    if isinstance(value, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        embedded = schema.get("x-kubernetes-embedded-resource", False)
        for k, v in value.items():
            sub = f"{path}.{k}" if path else k
            if props is not None and k in props:
                if k == "metadata" and (path == "" or embedded) and not props[k].get("properties"):
                    _check_meta(v, sub, errors)
                else:
                    walk(v, props[k], sub, errors, notes)
            elif embedded and k in ("apiVersion", "kind"):
                continue
            elif embedded and k == "metadata":
                _check_meta(v, sub, errors)
            elif isinstance(addl, dict):
                walk(v, addl, sub, errors, notes)
            elif addl is True or preserve:
                continue
            else:
                errors.append(f"{sub}: unknown field")
    elif isinstance(value, list):
        items = schema.get("items")
        for i, v in enumerate(value):
            walk(v, items, f"{path}[{i}]", errors, notes)
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen = {}
            for i, v in enumerate(value):
                if isinstance(v, dict):
                    key = tuple(v.get(k) for k in keys)
                    if key in seen:
                        errors.append(f"{path}[{i}]: duplicate entry with {dict(zip(keys, key))} (also at [{seen[key]}])")
                    seen[key] = i
        elif list_type == "set":
            if len({yaml.safe_dump(v) for v in value}) != len(value):
                errors.append(f"{path}: duplicate values in a set")


# ---- pod-level core validation ------------------------------------------------------------------

def check_pod_spec(spec, path, errors):
    if not isinstance(spec, dict):
        return
    volumes = {v.get("name") for v in spec.get("volumes", []) if isinstance(v, dict)}
    names = set()
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group, []) or []):
            if not isinstance(c, dict):
                continue
            cpath = f"{path}.{group}[{i}]"
            if c.get("name") in names:
                errors.append(f"{cpath}.name: duplicate container name {c.get('name')!r}")
            names.add(c.get("name"))
            if c.get("name") and not DNS1123_LABEL.match(str(c["name"])):
                errors.append(f"{cpath}.name: {c['name']!r} is not a DNS-1123 label")
            for j, m in enumerate(c.get("volumeMounts", []) or []):
                if m.get("name") not in volumes:
                    errors.append(f"{cpath}.volumeMounts[{j}].name: no volume named {m.get('name')!r} in the pod")
            env_names = set()
            for j, e in enumerate(c.get("env", []) or []):
                n = e.get("name", "")
                if not ENV_NAME.match(n):
                    errors.append(f"{cpath}.env[{j}].name: {n!r} is not a valid environment variable name")
                env_names.add(n)
            for field in ("command", "args"):
                for j, a in enumerate(c.get(field, []) or []):
                    for ref in VAR_REF.findall(str(a)):
                        if ref not in env_names:
                            errors.append(f"{cpath}.{field}[{j}]: $({ref}) names no env var of the container "
                                          "(Kubernetes would pass it through literally)")
            check_resources(c.get("resources") or {}, f"{cpath}.resources", errors)


def check_resources(res, path, errors):
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    for k in set(req) | set(lim):
        try:
            r = quantity(req[k]) if k in req else None
            l = quantity(lim[k]) if k in lim else None
        except ValueError as e:
            errors.append(f"{path}.{k}: {e}")
            continue
        native = "/" not in k or k.startswith("kubernetes.io/") or k.startswith("requests.")
        if not native:
            if l is None:
                errors.append(f"{path}.limits.{k}: an extended resource must be set in limits")
            elif r is not None and r != l:
                errors.append(f"{path}.requests.{k}: must equal limits for an extended resource")
            if l is not None and l != int(l):
                errors.append(f"{path}.limits.{k}: must be a whole number")
        elif r is not None and l is not None and r > l:
            errors.append(f"{path}.requests.{k}: {req[k]} is more than the limit {lim[k]}")


# ---- kind-specific (webhooks) -------------------------------------------------------------------

def check_pytorchjob(obj, errors):
    name = obj.get("metadata", {}).get("name", "")
    if not DNS1035_LABEL.match(name) or len(name) > 63:
        errors.append(f"metadata.name: {name!r} should be a DNS-1035 label (training-operator webhook)")
    specs = obj.get("spec", {}).get("pytorchReplicaSpecs") or {}
    if not specs:
        errors.append("spec.pytorchReplicaSpecs: must be set")
    for rtype, rs in specs.items():
        path = f"spec.pytorchReplicaSpecs.{rtype}"
        if rtype not in ("Master", "Worker"):
            errors.append(f"{path}: replica type {rtype!r} is not Master or Worker")
        if not isinstance(rs, dict):
            continue
        if rs.get("restartPolicy") is not None and rs["restartPolicy"] not in RESTART_POLICIES:
            errors.append(f"{path}.restartPolicy: {rs['restartPolicy']!r} is not one of {sorted(RESTART_POLICIES)}")
        pod = (rs.get("template") or {}).get("spec") or {}
        containers = pod.get("containers") or []
        if not containers:
            errors.append(f"{path}.template.spec.containers: must be specified")
        if not any(c.get("name") == "pytorch" for c in containers):
            errors.append(f"{path}.template.spec.containers: must have a container named pytorch")
        for i, c in enumerate(containers):
            if not c.get("image"):
                errors.append(f"{path}.template.spec.containers[{i}].image: must be set")
        replicas = rs.get("replicas", 1)
        if rtype == "Master" and replicas != 1:
            errors.append(f"{path}.replicas: must be 1")
        if rtype == "Worker" and isinstance(replicas, int) and replicas < 1:
            errors.append(f"{path}.replicas: must be at least 1")
        check_pod_spec(pod, f"{path}.template.spec", errors)
    npn = obj.get("spec", {}).get("nprocPerNode")
    if npn is not None and not (npn == "auto" or (isinstance(npn, str) and npn.isdigit() and int(npn) > 0)):
        errors.append(f"spec.nprocPerNode: {npn!r} is not 'auto' or a positive integer")


def check_trainjob(obj, errors):
    spec = obj.get("spec", {})
    trainer = spec.get("trainer") or {}
    for i, e in enumerate(trainer.get("env", []) or []):
        if e.get("name") in TORCH_RESERVED_ENV:
            errors.append(f"spec.trainer.env[{i}]: {e['name']} is reserved (injected by the torch plugin)")
    ref = spec.get("runtimeRef") or {}
    rt = runtime(ref.get("name", "")) if ref.get("kind", "ClusterTrainingRuntime") == "ClusterTrainingRuntime" else None
    if rt is None:
        errors.append(f"spec.runtimeRef: runtime {ref.get('name')!r} is not one this repository knows")
        return
    rjobs, rvolumes = {}, {}
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        rjobs[rj["name"]] = {c["name"] for c in pod.get("containers", []) + pod.get("initContainers", [])}
        rvolumes[rj["name"]] = {v["name"] for v in pod.get("volumes", [])}
    for i, patch in enumerate(spec.get("runtimePatches", []) or []):
        path = f"spec.runtimePatches[{i}]"
        manager = patch.get("manager", "")
        prefix, _, rest = manager.partition("/")
        if not rest or not DNS1123_SUBDOMAIN.match(prefix) or not re.match(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$", rest):
            errors.append(f"{path}.manager: {manager!r} must be a domain-prefixed path (example.com/name)")
        tmpl = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for j, rj in enumerate(tmpl.get("replicatedJobs", []) or []):
            rpath = f"{path}.trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
            if rj.get("name") not in rjobs:
                errors.append(f"{rpath}.name: runtime {ref['name']} has no replicated job {rj.get('name')!r}")
                continue
            pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            for group in ("containers", "initContainers"):
                for k, c in enumerate(pod.get(group, []) or []):
                    if c.get("name") not in rjobs[rj["name"]]:
                        errors.append(f"{rpath}...{group}[{k}]: runtime has no container {c.get('name')!r}")
                    elif c.get("env") and c["name"] in ("node", "dataset-initializer", "model-initializer"):
                        errors.append(f"{rpath}...{group}[{k}].env: must not patch env of {c['name']}; use spec.trainer.env")
            patched = set(rvolumes[rj["name"]])
            for v in pod.get("volumes", []) or []:
                patched.add(v.get("name"))
            for c in pod.get("containers", []) or []:
                for m in c.get("volumeMounts", []) or []:
                    if m.get("name") not in patched:
                        errors.append(f"{rpath}: volumeMount {m.get('name')!r} names no volume of the pod")
    check_resources(trainer.get("resourcesPerNode") or {}, "spec.trainer.resourcesPerNode", errors)


def check_job(obj, errors):
    pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    if pod.get("restartPolicy") not in ("Never", "OnFailure"):
        errors.append("spec.template.spec.restartPolicy: a Job's pods need Never or OnFailure")
    check_pod_spec(pod, "spec.template.spec", errors)


# ---- entry point --------------------------------------------------------------------------------

def validate(obj):
    """List of error strings (empty when the object would be accepted)."""
    errors, notes = [], []
    if not isinstance(obj, dict):
        return ["document is not a mapping"]
    key = (obj.get("apiVersion"), obj.get("kind"))
    schema = schemas().get(key)
    if schema is None:
        return [f"{key[0]}/{key[1]}: no schema for this kind in tests/k8s/schemas (unknown kind or version)"]
    if not (obj.get("metadata") or {}).get("name"):
        errors.append("metadata.name: must be set")
    validator = jsonschema.Draft7Validator(schema)
    for e in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path)):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path).lstrip(".") or "<root>"
        errors.append(f"{where}: {e.message}")
    walk(obj, schema, "", errors, notes)
    if key == ("kubeflow.org/v1", "PyTorchJob"):
        check_pytorchjob(obj, errors)
    elif key == ("trainer.kubeflow.org/v1alpha1", "TrainJob"):
        check_trainjob(obj, errors)
    elif key == ("batch/v1", "Job"):
        check_job(obj, errors)
    elif key == ("v1", "Pod"):
        check_pod_spec(obj.get("spec") or {}, "spec", errors)
    elif key == katib_schema.KEY:
        katib_schema.check_experiment(obj, errors, validate)
    return errors
