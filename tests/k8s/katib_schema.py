"""Katib Experiments (kubeflow.org/v1beta1), validated as strictly as the other kinds.

Katib's CRD (schemas/kubeflow.org_experiments.katib-v0.19.0.yaml) preserves unknown fields: the API
server takes any spec, and Katib's controller decodes it into its Go types, silently dropping a
typo'd field and failing on a number where the type is a string (feasibleSpace.min: 0.01). So:
  1. the structure is the OpenAPI of those Go types (schemas/katib_v1beta1_swagger.v0.19.0.json),
     made strict (every field declared) by k8s_schema.walk; core types it references (Container,
     HTTPGetAction) come from the PyTorchJob CRD;
  2. Katib's admission webhooks, after its defaulting (experiment_defaults.go: a Kubeflow job's
     success/failure conditions and primary pod labels, the StdOut collector): validator.go's
     checks of the name, counts, objective, algorithm (names from the vendored katib-config),
     parameters, trial template (trialParameters declared, referenced and all substituted; no
     name/namespace in the trialSpec) and metrics collector (File: absolute path, TEXT or JSON,
     no filter with JSON);
  3. the trial job: the trialSpec with every ${trialParameters.x} replaced by a sample value of its
     parameter (as Katib's controller does for each trial) and the trial's name, which must then
     pass every check of its own kind (a PyTorchJob: the training-operator's rules), and whose
     primary pod (primaryPodLabels) has the primaryContainerName container.
"""
import copy
import json
import os
import re

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "schemas")
CRD_FILE = "kubeflow.org_experiments.katib-v0.19.0.yaml"
SWAGGER_FILE = "katib_v1beta1_swagger.v0.19.0.json"
CONFIG_FILE = "katib-config.v0.19.0.yaml"
KEY = ("kubeflow.org/v1beta1", "Experiment")

# experiments/v1beta1/constants.go
KUBEFLOW_JOB_SUCCESS = 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
KUBEFLOW_JOB_FAILURE = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
KUBEFLOW_JOB_PRIMARY_POD_LABELS = {"training.kubeflow.org/job-role": "master"}
KUBEFLOW_JOB_KINDS = {"TFJob", "PyTorchJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob", "TrainJob"}
# controller.v1beta1/consts: ${trialParameters.<name>}, and the trial metadata a reference may name
PARAM_REF = re.compile(r"\$\{trialParameters\.([^}]+)\}")
META_REF = re.compile(r"^\$\{trialSpec\.(.+)\}$")
META_KEYS = {"Name", "Namespace", "Kind", "APIVersion", "Labels", "Annotations"}
PARAMETER_TYPES = {"int", "double", "categorical", "discrete", "unknown"}
DISTRIBUTIONS = {"uniform", "logUniform", "normal", "logNormal", "distributionUnknown"}
RESUME_POLICIES = {"", "Never", "LongRunning", "FromVolume"}
NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?")  # validator.go: MatchString, a prefix match
SAMPLE_TRIAL_SUFFIX = "-k8tr1a1s"  # Katib names a trial <experiment>-<8 random [a-z0-9]>


def _load(name):
    path = os.path.join(SCHEMAS, name)
    if name.endswith(".json"):
        return json.load(open(path, encoding="utf-8"))
    return [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d][0]


def config():
    """The vendored KatibConfig: {"suggestions", "earlyStoppings", "metricsCollectors"} name sets."""
    rt = _load(CONFIG_FILE)["runtime"]
    return {"suggestions": {s["algorithmName"] for s in rt.get("suggestions", [])},
            "earlyStoppings": {s["algorithmName"] for s in rt.get("earlyStoppings", [])},
            "metricsCollectors": {s["kind"] for s in rt.get("metricsCollectors", [])}}


def experiment_schema(container_schema, http_get_schema):
    """The strict schema of an Experiment: the CRD's group/version/kind, the Go types' structure."""
    crd = _load(CRD_FILE)
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    if (f"{crd['spec']['group']}/{served[0]}", crd["spec"]["names"]["kind"]) != KEY:
        raise RuntimeError(f"{CRD_FILE} does not serve {KEY}")
    defs = _load(SWAGGER_FILE)["definitions"]
    external = {
        "v1.ObjectMeta": {"type": "object"},  # checked field by field (k8s_schema._check_meta)
        "v1.ListMeta": {"type": "object"},
        "v1.Time": {"type": "string"},
        "v1.unstructured.Unstructured": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "v1.Container": container_schema,
        "v1.HTTPGetAction": http_get_schema,
    }

    def resolve(node, seen=()):
        if isinstance(node, list):
            return [resolve(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            if name in external:
                target = external[name]
            elif name in seen:
                raise RuntimeError(f"recursive definition {name}")
            else:
                target = resolve(defs[name], seen + (name,))
            rest = {k: v for k, v in node.items() if k not in ("$ref", "description", "default")}
            return dict(target, **resolve(rest, seen))
        return {k: resolve(v, seen) for k, v in node.items()}

    return resolve(defs["v1beta1.Experiment"])


def with_defaults(obj):
    """The Experiment as Katib's mutating webhook leaves it (the parts the validator reads)."""
    obj = copy.deepcopy(obj)
    spec = obj.setdefault("spec", {})
    t = spec.get("trialTemplate")
    kind = ((t or {}).get("trialSpec") or {}).get("kind")
    if t is not None and kind in KUBEFLOW_JOB_KINDS and kind != "TrainJob":
        t.setdefault("successCondition", KUBEFLOW_JOB_SUCCESS)
        t.setdefault("failureCondition", KUBEFLOW_JOB_FAILURE)
        if not t.get("primaryPodLabels"):
            t["primaryPodLabels"] = dict(KUBEFLOW_JOB_PRIMARY_POD_LABELS)
    mc = spec.setdefault("metricsCollectorSpec", {})
    if not mc.get("collector"):
        mc["collector"] = {"kind": "StdOut"}
    return obj


def sample_value(param):
    """The value a sample trial gets: the lower bound, or the first of the list."""
    fs = param.get("feasibleSpace") or {}
    if fs.get("list"):
        return str(fs["list"][0])
    return str(fs.get("min", ""))


def trial_job(obj):
    """The job Katib would create for a trial of `obj` (a sample assignment), or None."""
    spec = obj.get("spec") or {}
    t = spec.get("trialTemplate") or {}
    if not isinstance(t.get("trialSpec"), dict):
        return None
    params = {p.get("name"): p for p in spec.get("parameters") or [] if isinstance(p, dict)}
    name = (obj.get("metadata") or {}).get("name", "experiment") + SAMPLE_TRIAL_SUFFIX
    values = {}
    for tp in t.get("trialParameters") or []:
        ref = tp.get("reference", "")
        meta = META_REF.match(ref)
        if meta and meta.group(1) == "Name":
            values[tp.get("name")] = name
        elif meta and meta.group(1) == "Namespace":
            values[tp.get("name")] = "default"
        elif ref in params:
            values[tp.get("name")] = sample_value(params[ref])
    text = json.dumps(t["trialSpec"])
    text = PARAM_REF.sub(lambda m: json.dumps(values.get(m.group(1), m.group(0)))[1:-1], text)
    job = json.loads(text)
    job.setdefault("metadata", {})["name"] = name
    return job


def _primary_pods(job, labels):
    """(path, pod spec) of the trial job's pods that carry `labels` (PyTorchJob: the replica type's
    pods get training.kubeflow.org/job-role=master when the type is Master)."""
    if job.get("kind") != "PyTorchJob":
        return []
    out = []
    for rtype, rs in ((job.get("spec") or {}).get("pytorchReplicaSpecs") or {}).items():
        pod_labels = dict(((rs or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
        pod_labels["training.kubeflow.org/replica-type"] = rtype.lower()
        if rtype == "Master":
            pod_labels["training.kubeflow.org/job-role"] = "master"
        if all(pod_labels.get(k) == v for k, v in labels.items()):
            out.append((f"spec.pytorchReplicaSpecs.{rtype}", ((rs or {}).get("template") or {}).get("spec") or {}))
    return out


def primary_containers(obj):
    """(where, container) of the trial's primary container in each primary pod (after defaults)."""
    obj = with_defaults(obj)
    t = obj["spec"].get("trialTemplate") or {}
    job = trial_job(obj)
    if job is None:
        return []
    out = []
    for path, pod in _primary_pods(job, t.get("primaryPodLabels") or {}):
        for c in pod.get("containers") or []:
            if c.get("name") == t.get("primaryContainerName"):
                out.append((f"spec.trialTemplate.trialSpec.{path}", c))
    return out


def check_experiment(obj, errors, validate_job):
    """validator.go's checks on the defaulted Experiment, then the sample trial job through
    `validate_job` (k8s_schema.validate)."""
    name = (obj.get("metadata") or {}).get("name", "")
    if not NAME.match(name) or len(name) > 40:
        errors.append(f"metadata.name: {name!r} must start with a-z, hold a-z 0-9 '-' and be at most 40 characters (Katib)")
    obj = with_defaults(obj)
    spec = obj["spec"]
    counts = {k: spec.get(k) for k in ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")}
    if isinstance(counts["maxFailedTrialCount"], int) and counts["maxFailedTrialCount"] < 0:
        errors.append("spec.maxFailedTrialCount: should not be less than 0")
    for k in ("maxTrialCount", "parallelTrialCount"):
        if isinstance(counts[k], int) and counts[k] <= 0:
            errors.append(f"spec.{k}: must be greater than 0")
    mx = counts["maxTrialCount"]
    for k in ("maxFailedTrialCount", "parallelTrialCount"):
        if isinstance(counts[k], int) and isinstance(mx, int) and counts[k] > mx:
            errors.append(f"spec.{k}: should be less than or equal to spec.maxTrialCount")
    if spec.get("resumePolicy", "") not in RESUME_POLICIES:
        errors.append(f"spec.resumePolicy: {spec['resumePolicy']!r} is not one of {sorted(RESUME_POLICIES - {''})}")
    cfg = config()
    obj_spec = spec.get("objective")
    if not isinstance(obj_spec, dict):
        errors.append("spec.objective: must be specified")
    else:
        if obj_spec.get("type") not in ("minimize", "maximize"):
            errors.append(f"spec.objective.type: {obj_spec.get('type')!r} must be minimize or maximize")
        if not obj_spec.get("objectiveMetricName"):
            errors.append("spec.objective.objectiveMetricName: must be specified")
        if obj_spec.get("objectiveMetricName") in (obj_spec.get("additionalMetricNames") or []):
            errors.append("spec.objective.additionalMetricNames: should not contain spec.objective.objectiveMetricName")
    algo = (spec.get("algorithm") or {}).get("algorithmName")
    if algo not in cfg["suggestions"]:
        errors.append(f"spec.algorithm.algorithmName: {algo!r} is not an algorithm of Katib's config ({sorted(cfg['suggestions'])})")
    es = spec.get("earlyStopping")
    if es is not None and es.get("algorithmName") not in cfg["earlyStoppings"]:
        errors.append(f"spec.earlyStopping.algorithmName: {es.get('algorithmName')!r} is not one of {sorted(cfg['earlyStoppings'])}")
    check_parameters(spec.get("parameters") or [], errors)
    if not spec.get("parameters") and not spec.get("nasConfig"):
        errors.append("spec: spec.parameters or spec.nasConfig must be specified")
    check_metrics_collector(spec["metricsCollectorSpec"], cfg, errors)
    check_trial_template(obj, errors, validate_job)


def check_parameters(params, errors):
    for i, p in enumerate(params):
        path = f"spec.parameters[{i}]"
        ptype = p.get("parameterType", "")
        if ptype not in PARAMETER_TYPES:
            errors.append(f"{path}.parameterType: {ptype!r} is not supported")
        fs = p.get("feasibleSpace") or {}
        if fs.get("distribution", "") not in DISTRIBUTIONS | {""}:
            errors.append(f"{path}.feasibleSpace.distribution: {fs['distribution']!r} is not supported")
        if not fs:
            errors.append(f"{path}.feasibleSpace: must be specified")
        elif ptype in ("int", "double"):
            if fs.get("list"):
                errors.append(f"{path}.feasibleSpace.list: not supported for parameterType {ptype}")
            if not fs.get("min") or not fs.get("max"):
                errors.append(f"{path}.feasibleSpace: max and min must be specified for parameterType {ptype}")
        elif ptype in ("categorical", "discrete") and (fs.get("min") or fs.get("max") or fs.get("step")):
            errors.append(f"{path}.feasibleSpace: max, min and step are not supported for parameterType {ptype}")


def check_metrics_collector(mc, cfg, errors):
    path = "spec.metricsCollectorSpec"
    kind = (mc.get("collector") or {}).get("kind")
    source = mc.get("source") or {}
    fsp = source.get("fileSystemPath") or {}
    if kind in ("StdOut", "File", "TensorFlowEvent") and kind not in cfg["metricsCollectors"]:
        errors.append(f"{path}.collector.kind: {kind!r} has no collector in Katib's config")
    if kind == "File":
        if fsp.get("kind") != "File" or not str(fsp.get("path", "")).startswith("/"):
            errors.append(f"{path}.source.fileSystemPath.path: file path where metrics file exists is required "
                          "(kind File, an absolute path)")
        if fsp.get("format") not in ("TEXT", "JSON"):
            errors.append(f"{path}.source.fileSystemPath.format: TEXT or JSON is required")
        if fsp.get("format") == "JSON" and source.get("filter") is not None:
            errors.append(f"{path}.source.filter: must be nil when the format is JSON")
    elif kind == "TensorFlowEvent":
        if fsp.get("kind") != "Directory" or not str(fsp.get("path", "")).startswith("/"):
            errors.append(f"{path}.source.fileSystemPath: an absolute Directory path is required")
    elif kind not in ("StdOut", "Push", "PrometheusMetric", "Custom", "None"):
        errors.append(f"{path}.collector.kind: invalid metrics collector kind {kind!r}")
    for f in (source.get("filter") or {}).get("metricsFormat") or []:
        try:
            re.compile(f)
        except re.error as e:
            errors.append(f"{path}.source.filter.metricsFormat: invalid filter {f!r}: {e}")
            continue
        if not re.match(r".*\(.*\).*\(.*\).*", f):
            errors.append(f"{path}.source.filter.metricsFormat: {f!r} needs two top subexpressions")


def check_trial_template(obj, errors, validate_job):
    spec = obj["spec"]
    path = "spec.trialTemplate"
    t = spec.get("trialTemplate")
    if not isinstance(t, dict):
        errors.append(f"{path}: must be specified")
        return
    if not t.get("primaryContainerName"):
        errors.append(f"{path}.primaryContainerName: must be specified")
    if not t.get("successCondition") or not t.get("failureCondition"):
        errors.append(f"{path}: successCondition and failureCondition must be specified")
    if t.get("trialParameters") is None:
        errors.append(f"{path}.trialParameters: must be specified")
        return
    if (t.get("trialSpec") is None) == (t.get("configMap") is None):
        errors.append(f"{path}: exactly one of trialSpec or configMap must be specified")
        return
    if t.get("trialSpec") is None:
        return  # a ConfigMap's template is not in this repository
    params = {p.get("name") for p in spec.get("parameters") or []}
    text = json.dumps(t["trialSpec"])
    names, refs = set(), set()
    for i, tp in enumerate(t["trialParameters"]):
        n, ref = tp.get("name", ""), tp.get("reference", "")
        if not n or not ref or "{" in n or "}" in n:
            errors.append(f"{path}.trialParameters[{i}]: name and reference must be specified and name must not contain '{{' or '}}'")
            continue
        if n in names or ref in refs:
            errors.append(f"{path}.trialParameters[{i}]: name {n!r} or reference {ref!r} is duplicated")
            continue
        names.add(n)
        refs.add(ref)
        meta = META_REF.match(ref)
        is_meta = bool(meta) and (meta.group(1) in META_KEYS or
                                  re.match(r"^(Labels|Annotations)\[(.+)\]$", meta.group(1)) is not None)
        if params and not is_meta and ref not in params:
            errors.append(f"{path}.trialParameters[{i}].reference: {ref!r} does not exist in spec.parameters ({sorted(params)})")
        if "${trialParameters." + n + "}" not in text:
            errors.append(f"{path}.trialParameters[{i}].name: {n!r} is not used in spec.trialTemplate.trialSpec")
    unknown = sorted(set(PARAM_REF.findall(text)) - names)
    if unknown:
        errors.append(f"{path}.trialSpec: ${{trialParameters.{unknown[0]}}} names no entry of spec.trialTemplate.trialParameters")
    meta = t["trialSpec"].get("metadata") or {}
    if meta.get("name") or meta.get("namespace"):
        errors.append(f"{path}.trialSpec.metadata: name and namespace must be omitted (Katib sets them per trial)")
    if not t["trialSpec"].get("apiVersion") or not t["trialSpec"].get("kind"):
        errors.append(f"{path}.trialSpec: apiVersion and kind must be specified")
        return
    job = trial_job(obj)
    for e in validate_job(job):
        errors.append(f"{path}.trialSpec (as trial {job['metadata']['name']}): {e}")
    if job.get("kind") == "PyTorchJob" and t.get("primaryContainerName"):
        pods = _primary_pods(job, t.get("primaryPodLabels") or {})
        if not pods:
            errors.append(f"{path}.primaryPodLabels: {t.get('primaryPodLabels')} select no pod of the trial job")
        for ppath, pod in pods:
            if not any(c.get("name") == t["primaryContainerName"] for c in pod.get("containers") or []):
                errors.append(f"{path}.primaryContainerName: {ppath} has no container {t['primaryContainerName']!r}")
