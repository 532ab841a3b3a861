"""Runs a compiled Kubeflow Pipelines v2 spec the way the KFP backend would, as far as our pipelines
need: which tasks run and with which command line, then what the two components we use would ask of
Kubernetes or SageMaker.

    spec = pipeline_runner.load("pipelines/hybrid-training.yaml")
    values = pipeline_runner.root_inputs(spec, {"training_runtime": "sagemaker", "epochs": 1})
    for run in pipeline_runner.plan(spec, values):          # the container tasks whose conditions hold
        run.argv                                            # command + args, placeholders resolved
        job = pipeline_runner.launcher_pytorchjob(run)      # PyTorchJob launcher: the object it creates
        req = pipeline_runner.sagemaker_request(run)        # SageMaker train: its CreateTrainingJob request

What is played (backend/src/v2 driver and launcher, SDK compiler conventions):
  - root inputs: run-time values, else defaultValue; a value must fit its parameterType (numbers are
    doubles, NUMBER_INTEGER whole); a required input without a value, or an unknown name, is an error
  - a task's inputs: componentInputParameter from the enclosing DAG's values, runtimeValue constants
    with their {{$.inputs.parameters['pipelinechannel--x']}} placeholders replaced by the task's
    other inputs (what the driver's and the launcher's substitution passes do together), then the
    component's defaults for inputs not given (the launcher's addDefaultParams)
  - triggerPolicy.condition evaluated over the task's inputs with tests/pipeline/kfp_cel.py (a
    single == or !=; anything else is an error, never a guess); a false condition skips the task
    and everything under it
  - command and args: {{$.inputs.parameters['x']}} -> the value as the launcher formats it (a
    string as is, a number without exponent or trailing .0, true/false, a map or list as JSON),
    {"IfPresent": ...} -> Then when the input has a value else Else, output artifact paths -> files
    under out_dir
Not played: artifacts passed between tasks, loops, exit handlers, caching, retries.

The components' own programs are read, not run (they need a cluster or AWS): launcher_pytorchjob()
does what components/kubeflow/pytorch-launcher/src/launch_pytorchjob.py does with its arguments,
sagemaker_request() what components/aws/sagemaker/train/src/sagemaker_training_component.py
(_create_job_request, release 1.1.2) does.
"""
import copy
import datetime
import decimal
import json
import os
import random
import re
import string
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "pipeline"))
import kfp_cel  # noqa: E402

LAUNCHER_IMAGE = "cascribner/kubeflow-pytorchjob-launcher:v1"
SAGEMAKER_IMAGE_PREFIX = "public.ecr.aws/kubeflow-on-aws/aws-sagemaker-kfp-components:"
IN_PARAM = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")
OUT_ARTIFACT_PATH = re.compile(r"\{\{\$\.outputs\.artifacts\['([^']+)'\]\.path\}\}")


class PipelineError(Exception):
    """The spec or the run-time values are wrong (a bad input to the pipeline: exit 2 material)."""


def load(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs or not isinstance(docs[0], dict) or "root" not in docs[0]:
        raise PipelineError(f"{path}: no PipelineSpec")
    return docs[0]


def _fits(ptype, v):
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    return {"STRING": isinstance(v, str), "NUMBER_DOUBLE": num, "NUMBER_INTEGER": num and float(v).is_integer(),
            "BOOLEAN": isinstance(v, bool), "STRUCT": isinstance(v, dict), "LIST": isinstance(v, list)}.get(ptype, False)


def _as_value(v):
    """A Python value as a protobuf Value holds it (numbers are doubles)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, dict):
        return {k: _as_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_value(x) for x in v]
    return v


def root_inputs(spec, overrides):
    defs = ((spec["root"].get("inputDefinitions") or {}).get("parameters")) or {}
    for name in overrides:
        if name not in defs:
            raise PipelineError(f"pipeline parameter {name!r} does not exist (parameters: {', '.join(sorted(defs))})")
    values = {}
    for name, d in defs.items():
        if name in overrides:
            v = _as_value(overrides[name])
        elif "defaultValue" in d:
            v = d["defaultValue"]
        elif d.get("isOptional"):
            continue
        else:
            raise PipelineError(f"pipeline parameter {name!r} has no default and no value was given")
        if not _fits(d.get("parameterType"), v):
            raise PipelineError(f"pipeline parameter {name}={v!r} is not a {d.get('parameterType')}")
        values[name] = v
    return values


def format_value(v):
    """A parameter value as the KFP launcher writes it into a command line."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return format(decimal.Decimal(repr(float(v))).normalize(), "f") if not float(v).is_integer() else str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(_whole_numbers(v), separators=(",", ":"), sort_keys=True)
    raise PipelineError(f"cannot format parameter value {v!r}")


def _whole_numbers(v):
    """JSON as Go writes a protobuf Value: a whole double has no fraction (replicas 2, not 2.0)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _whole_numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_whole_numbers(x) for x in v]
    return v


def _substitute(value, inputs, where):
    def one(m):
        if m.group(1) not in inputs:
            raise PipelineError(f"{where}: placeholder {m.group(0)} names no input of the task")
        return format_value(inputs[m.group(1)])
    if isinstance(value, str):
        return IN_PARAM.sub(one, value)
    if isinstance(value, dict):
        return {_substitute(k, inputs, where): _substitute(x, inputs, where) for k, x in value.items()}
    if isinstance(value, list):
        return [_substitute(x, inputs, where) for x in value]
    return value


def task_inputs(task, component, parent_values, where):
    given = ((task.get("inputs") or {}).get("parameters")) or {}
    values, constants = {}, {}
    for name, spec in given.items():
        if "componentInputParameter" in spec:
            src = spec["componentInputParameter"]
            if src not in parent_values:
                raise PipelineError(f"{where}: input {name} reads {src!r}, which the enclosing DAG does not have")
            values[name] = parent_values[src]
        elif "runtimeValue" in spec:
            constants[name] = spec["runtimeValue"].get("constant")
        else:
            raise PipelineError(f"{where}: input {name}: only componentInputParameter and runtimeValue are played")
    for name, c in constants.items():
        values[name] = _substitute(c, values, f"{where}.{name}")
    for name, d in (((component.get("inputDefinitions") or {}).get("parameters")) or {}).items():
        if name not in values and "defaultValue" in d:
            values[name] = d["defaultValue"]
    return values


class ContainerRun:
    """A container task that runs: where it is, its component, inputs and resolved command line."""
    def __init__(self, path, component_name, component, container, inputs, out_dir):
        self.path, self.component_name, self.component = path, component_name, component
        self.container, self.inputs = container, inputs
        self.image = container.get("image", "")
        self.output_paths = {o: os.path.join(out_dir, path.replace("/", "_"), o) for o in
                             (((component.get("outputDefinitions") or {}).get("artifacts")) or {})}
        self.argv = resolve_argv(container, inputs, self.output_paths, path)


def resolve_argv(container, inputs, output_paths, where):
    def one(arg):
        if arg.lstrip().startswith('{"IfPresent"'):
            cond = json.loads(arg)["IfPresent"]
            branch = cond.get("Then") if cond["InputName"] in inputs else cond.get("Else")
            branch = [] if branch is None else (branch if isinstance(branch, list) else [branch])
            return [x for a in branch for x in one(a)]

        def out(m):
            if m.group(1) not in output_paths:
                raise PipelineError(f"{where}: {m.group(0)} names no output artifact")
            return output_paths[m.group(1)]
        arg = OUT_ARTIFACT_PATH.sub(out, arg)
        return [_substitute(arg, inputs, where)]
    return [x for a in (container.get("command") or []) + (container.get("args") or []) for x in one(a)]


def plan(spec, values, out_dir="/tmp/outputs", log=None):
    """The container tasks that run, depth first in task-name order; log gets one line per condition."""
    components = spec.get("components") or {}
    executors = ((spec.get("deploymentSpec") or {}).get("executors")) or {}
    runs = []

    def walk(dag, dag_values, path):
        for name in sorted((dag.get("tasks") or {})):
            task = dag["tasks"][name]
            where = f"{path}/{name}"
            ref = (task.get("componentRef") or {}).get("name")
            if ref not in components:
                raise PipelineError(f"{where}: componentRef {ref!r} names no component")
            comp = components[ref]
            inputs = task_inputs(task, comp, dag_values, where)
            cond = (task.get("triggerPolicy") or {}).get("condition")
            if cond is not None:
                try:
                    holds = kfp_cel.evaluate(kfp_cel.parse(cond), inputs)
                except kfp_cel.CelError as e:
                    raise PipelineError(f"{where}: triggerPolicy.condition: {e}") from None
                if log is not None:
                    log.append(f"{where}: {cond} -> {'true: runs' if holds else 'false: skipped'}")
                if not holds:
                    continue
            if "dag" in comp:
                walk(comp["dag"], inputs, where)
            else:
                label = comp.get("executorLabel")
                ex = executors.get(label)
                if ex is None or "container" not in ex:
                    raise PipelineError(f"{where}: executor {label!r} is not a container executor of the spec")
                runs.append(ContainerRun(where, ref, comp, ex["container"], inputs, out_dir))
    walk(spec["root"].get("dag") or {}, values, "root")
    return runs


def _flags(argv, start):
    """--name value pairs of a component's command line, from argv[start:]."""
    out, i = {}, start
    while i < len(argv):
        if not argv[i].startswith("--") or i + 1 >= len(argv):
            raise PipelineError(f"unexpected argument {argv[i]!r} at {i} of {argv}")
        out[argv[i][2:]] = argv[i + 1]
        i += 2
    return out


def _strtobool(text, what):
    t = text.strip().lower()
    if t in ("y", "yes", "t", "true", "on", "1"):
        return True
    if t in ("n", "no", "f", "false", "off", "0"):
        return False
    raise PipelineError(f"{what}: {text!r} is not a boolean")


def launcher_pytorchjob(run):
    """(PyTorchJob, settings) as launch_pytorchjob.py creates it from its command line. The launcher
    (kubeflow-pytorchjob SDK's V1PyTorchJobSpec) writes cleanPodPolicy, activeDeadlineSeconds,
    backoffLimit and ttlSecondsAfterFinished at spec level; the v1.9 CRD has them under runPolicy,
    so the API server prunes them: they are returned in settings['pruned'], not in the job."""
    if run.image != LAUNCHER_IMAGE or run.argv[:2] != ["python", "/ml/launch_pytorchjob.py"]:
        raise PipelineError(f"{run.path}: not the PyTorchJob launcher ({run.image}, {run.argv[:2]})")
    f = _flags(run.argv, 2)
    known = {"name", "namespace", "version", "masterSpec", "workerSpec", "jobTimeoutMinutes", "deleteAfterDone",
             "cleanPodPolicy", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"}
    for k in f:
        if k not in known:
            raise PipelineError(f"{run.path}: launch_pytorchjob.py has no --{k}")
    specs = {}
    for flag, rtype in (("masterSpec", "Master"), ("workerSpec", "Worker")):
        text = f.get(flag, "")
        specs[rtype] = yaml.safe_load(text) if text else {}
    pruned = {k: (f[k] if k == "cleanPodPolicy" else int(f[k])) for k in
              ("cleanPodPolicy", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished") if k in f}
    job = {"apiVersion": f"kubeflow.org/{f.get('version', 'v1')}", "kind": "PyTorchJob",
           "metadata": {"name": f.get("name", "pytorchjob"), "namespace": f.get("namespace", "kubeflow")},
           "spec": {"pytorchReplicaSpecs": {k: v for k, v in specs.items()}}}
    settings = {"delete_after_done": _strtobool(f.get("deleteAfterDone", "True"), "--deleteAfterDone"),
                "timeout_minutes": int(f.get("jobTimeoutMinutes", 1440)), "pruned": pruned}
    return job, settings


TRAIN_TEMPLATE = {
    "TrainingJobName": "", "HyperParameters": {},
    "AlgorithmSpecification": {"TrainingImage": "", "AlgorithmName": "", "TrainingInputMode": "", "MetricDefinitions": []},
    "RoleArn": "", "InputDataConfig": [], "OutputDataConfig": {"KmsKeyId": "", "S3OutputPath": ""},
    "ResourceConfig": {"InstanceType": "", "InstanceCount": 1, "VolumeSizeInGB": 1, "VolumeKmsKeyId": ""},
    "VpcConfig": {"SecurityGroupIds": [], "Subnets": []},
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 86400},
    "DebugHookConfig": {}, "DebugRuleConfigurations": [], "CheckpointConfig": {"S3Uri": "", "LocalPath": ""},
    "Tags": [], "EnableNetworkIsolation": True, "EnableInterContainerTrafficEncryption": False,
    "EnableManagedSpotTraining": False,
}  # components/aws/sagemaker/common/templates/train.template.yaml


def sagemaker_request(run, now=None):
    """The CreateTrainingJob request the SageMaker train component sends for this command line."""
    if not run.image.startswith(SAGEMAKER_IMAGE_PREFIX) or run.argv[:2] != ["python3",
                                                                           "train/src/sagemaker_training_component.py"]:
        raise PipelineError(f"{run.path}: not the SageMaker training component ({run.image}, {run.argv[:2]})")
    raw = _flags(run.argv, 2)
    types = {n: d.get("parameterType") for n, d in
             (((run.component.get("inputDefinitions") or {}).get("parameters")) or {}).items()}
    a = {}
    for k, text in raw.items():
        if k.endswith("_output_path"):
            continue
        t = types.get(k)
        try:
            a[k] = {"BOOLEAN": lambda s: _strtobool(s, "--" + k), "NUMBER_INTEGER": int,
                    "STRUCT": json.loads, "LIST": json.loads}.get(t, str)(text)
        except ValueError as e:
            raise PipelineError(f"{run.path}: --{k} {text!r}: {e}") from None
    r = copy.deepcopy(TRAIN_TEMPLATE)
    now = now or datetime.datetime.utcnow()
    suffix = "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(4))
    r["TrainingJobName"] = a.get("job_name") or f"TrainingJob-{now:%Y%m%d%H%M%S}-{suffix}"
    r["RoleArn"] = a.get("role", "")
    hp = a.get("hyperparameters", {})
    for k, v in hp.items():
        if not isinstance(v, str):
            raise PipelineError(f"{run.path}: Could not parse hyperparameters. Value for {k} was not a string.")
    r["HyperParameters"] = hp
    alg = r["AlgorithmSpecification"]
    alg["TrainingInputMode"] = a.get("training_input_mode", "File")
    if not a.get("image") and not a.get("algorithm_name"):
        raise PipelineError(f"{run.path}: Please specify training image or algorithm name.")
    if a.get("image"):
        alg["TrainingImage"] = a["image"]
        alg.pop("AlgorithmName")
    else:
        alg["AlgorithmName"] = a["algorithm_name"]
        alg.pop("TrainingImage")
    if a.get("metric_definitions"):
        alg["MetricDefinitions"] = [{"Name": k, "Regex": v} for k, v in a["metric_definitions"].items()]
    else:
        alg.pop("MetricDefinitions")
    if a.get("vpc_security_group_ids") and a.get("vpc_subnets"):
        r["VpcConfig"] = {"SecurityGroupIds": a["vpc_security_group_ids"].split(","),
                          "Subnets": a["vpc_subnets"].split(",")}
    else:
        r.pop("VpcConfig")
    if not a.get("channels"):
        raise PipelineError(f"{run.path}: Must specify at least one input channel.")
    r["InputDataConfig"] = a["channels"]
    r["OutputDataConfig"]["S3OutputPath"] = a.get("model_artifact_path", "")
    r["OutputDataConfig"]["KmsKeyId"] = a.get("output_encryption_key", "")
    r["ResourceConfig"]["InstanceType"] = a.get("instance_type", "")
    r["ResourceConfig"]["VolumeKmsKeyId"] = a.get("resource_encryption_key", "")
    r["EnableNetworkIsolation"] = a.get("network_isolation", True)
    r["EnableInterContainerTrafficEncryption"] = a.get("traffic_encryption", False)
    if a.get("instance_count"):
        r["ResourceConfig"]["InstanceCount"] = a["instance_count"]
    if a.get("volume_size"):
        r["ResourceConfig"]["VolumeSizeInGB"] = a["volume_size"]
    if a.get("debug_hook_config"):
        r["DebugHookConfig"] = a["debug_hook_config"]
    else:
        r.pop("DebugHookConfig")
    if a.get("debug_rule_config"):
        r["DebugRuleConfigurations"] = a["debug_rule_config"]
    else:
        r.pop("DebugRuleConfigurations")
    if a.get("max_run_time"):
        r["StoppingCondition"]["MaxRuntimeInSeconds"] = a["max_run_time"]
    if a.get("spot_instance"):
        raise PipelineError(f"{run.path}: managed spot training is not played")
    del r["StoppingCondition"]["MaxWaitTimeInSeconds"]
    del r["CheckpointConfig"]
    for k, v in (a.get("tags") or {}).items():
        r["Tags"].append({"Key": k, "Value": v})
    return r
