"""The programs of the two Kubeflow components the hybrid pipeline uses, played on their command lines
(they need a cluster or AWS to really run): what each parses, refuses and asks for.

    job, settings = kfp_components.launch_pytorchjob(argv)     # the PyTorchJob it creates
    request = kfp_components.sagemaker_training(argv)          # its CreateTrainingJob request

Both parse with argparse, as the real programs do, so an argument they do not know is refused the same
way: "error: unrecognized arguments: ..." and exit 2 (a ComponentExit).

- launch_pytorchjob: kubeflow/pipelines components/kubeflow/pytorch-launcher/src/launch_pytorchjob.py
  (get_arg_parser and main, last version before #11315 moved it to components/contrib): the options,
  types and defaults below; masterSpec/workerSpec are yaml.safe_load'ed; the job's spec gets
  pytorchReplicaSpecs {Master, Worker} and, at spec level, cleanPodPolicy, activeDeadlineSeconds,
  backoffLimit, ttlSecondsAfterFinished (V1PyTorchJobSpec; None values dropped) — fields the v1.9 CRD
  keeps under runPolicy, so the API server prunes them: they come back in settings["pruned"].
- sagemaker_training: components/aws/sagemaker/train/src/sagemaker_training_spec.py (the options and
  their parsers: SpecInputParsers.yaml_or_json_dict/list, str_to_bool, int; training_input_mode
  choices File and Pipe) and sagemaker_training_component.py _create_job_request with
  common/sagemaker_component.py _enable_spot_instance_support (release 1.1.2, before #13481 removed
  the directory), on common/templates/train.template.yaml.
"""
import argparse
import copy
import datetime
import json
import random
import string

import yaml

from kfp_backend import KfpError

LAUNCHER_IMAGE = "cascribner/kubeflow-pytorchjob-launcher:v1"
LAUNCHER_COMMAND = ["python", "/ml/launch_pytorchjob.py"]
SAGEMAKER_IMAGE_PREFIX = "public.ecr.aws/kubeflow-on-aws/aws-sagemaker-kfp-components:"
SAGEMAKER_COMMAND = ["python3", "train/src/sagemaker_training_component.py"]


class ComponentExit(KfpError):
    """The component's program ends with this exit code and message."""
    def __init__(self, program, message, exit_code):
        super().__init__(program, message, exit_code)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ComponentExit(self.prog, f"error: {message}", 2)


def _strtobool(text):
    """distutils.util.strtobool."""
    t = text.lower()
    if t in ("y", "yes", "t", "true", "on", "1"):
        return 1
    if t in ("n", "no", "f", "false", "off", "0"):
        return 0
    raise ValueError(f"invalid truth value {text!r}")


def _yaml_or_json_str(text):
    if text == "" or text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text)


def _typed(kind):
    def parse(text):
        v = _yaml_or_json_str(text)
        if v is not None and not isinstance(v, kind):
            raise argparse.ArgumentTypeError(f"{text} (type {type(text)}) is not a {kind.__name__}")
        return v
    parse.__name__ = f"yaml_or_json_{kind.__name__}"
    return parse


def _yaml_or_json(text):   # launch_pytorchjob.py yamlOrJsonStr
    return None if text == "" or text is None else yaml.safe_load(text)


_yaml_or_json.__name__ = "yamlOrJsonStr"


def launch_pytorchjob(argv):
    """(PyTorchJob, settings) for `python /ml/launch_pytorchjob.py ARGS`."""
    if argv[:2] != LAUNCHER_COMMAND:
        raise KfpError("launch_pytorchjob", f"not the launcher's command: {argv[:2]}")
    p = _Parser(prog="launch_pytorchjob.py")
    p.add_argument("--name", type=str, default="pytorchjob")
    p.add_argument("--namespace", type=str, default="kubeflow")   # the pod's service-account namespace
    p.add_argument("--version", type=str, default="v1")
    p.add_argument("--activeDeadlineSeconds", type=int, default=None)
    p.add_argument("--backoffLimit", type=int, default=None)
    p.add_argument("--cleanPodPolicy", type=str, default="Running")
    p.add_argument("--ttlSecondsAfterFinished", type=int, default=None)
    p.add_argument("--masterSpec", type=_yaml_or_json, default={})
    p.add_argument("--workerSpec", type=_yaml_or_json, default={})
    p.add_argument("--deleteAfterDone", type=_strtobool, default=True)
    p.add_argument("--jobTimeoutMinutes", type=int, default=60 * 24)
    p.add_argument("--jobGroup", type=str, default="kubeflow.org")
    p.add_argument("--jobPlural", type=str, default="pytorchjobs")
    p.add_argument("--kind", type=str, default="PyTorchJob")
    a = p.parse_args(argv[2:])
    pruned = {k: v for k, v in (("cleanPodPolicy", a.cleanPodPolicy), ("activeDeadlineSeconds", a.activeDeadlineSeconds),
                                ("backoffLimit", a.backoffLimit), ("ttlSecondsAfterFinished", a.ttlSecondsAfterFinished))
              if v is not None}
    specs = {k: v for k, v in (("Master", a.masterSpec), ("Worker", a.workerSpec)) if v is not None}
    job = {"apiVersion": f"{a.jobGroup}/{a.version}", "kind": a.kind,
           "metadata": {"name": a.name, "namespace": a.namespace},
           "spec": {"pytorchReplicaSpecs": specs}}
    return job, {"delete_after_done": bool(a.deleteAfterDone), "timeout_minutes": a.jobTimeoutMinutes,
                 "pruned": pruned}


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


def _sagemaker_parser():
    p = _Parser(prog="sagemaker_training_component.py")
    d, lst, b = _typed(dict), _typed(list), (lambda s: bool(_strtobool(s)))
    b.__name__ = "str_to_bool"
    opts = [("region", str, None, True), ("endpoint_url", lambda s: s.strip() or None, None, False),
            ("assume_role", str, None, False), ("tags", d, {}, False),
            ("spot_instance", b, False, False), ("max_wait_time", int, 86400, False),
            ("max_run_time", int, 86400, False), ("checkpoint_config", d, {}, False),
            ("job_name", str, "", False), ("role", str, None, True), ("image", str, "", False),
            ("algorithm_name", str, "", False), ("metric_definitions", d, {}, False),
            ("hyperparameters", d, {}, False), ("channels", lst, None, True), ("instance_type", str, "ml.m4.xlarge", False),
            ("instance_count", int, 1, True), ("volume_size", int, 30, True), ("resource_encryption_key", str, "", False),
            ("model_artifact_path", str, None, True), ("output_encryption_key", str, "", False),
            ("vpc_security_group_ids", str, None, False), ("vpc_subnets", str, None, False),
            ("network_isolation", b, True, False), ("traffic_encryption", b, False, False),
            ("debug_hook_config", d, {}, False), ("debug_rule_config", lst, [], False)]
    for name, kind, default, required in opts:
        p.add_argument(f"--{name}", type=kind, default=default, required=required)
    p.add_argument("--training_input_mode", type=str, default="File", choices=["File", "Pipe"])
    for out in ("model_artifact_url", "job_name", "training_image"):
        p.add_argument(f"--{out}_output_path", type=str, default=f"/tmp/{out}")
    return p


def sagemaker_training(argv, now=None):
    """The CreateTrainingJob request `python3 train/src/sagemaker_training_component.py ARGS` sends."""
    if argv[:2] != SAGEMAKER_COMMAND:
        raise KfpError("sagemaker_training_component", f"not the SageMaker training component's command: {argv[:2]}")
    a = _sagemaker_parser().parse_args(argv[2:])

    def fail(message):   # logging.error(message); raise Exception("Could not create job request")
        raise ComponentExit("sagemaker_training_component.py", f"{message} Could not create job request", 1)
    r = copy.deepcopy(TRAIN_TEMPLATE)
    now = now or datetime.datetime.utcnow()
    suffix = "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(4))
    r["TrainingJobName"] = a.job_name or f"TrainingJob-{now:%Y%m%d%H%M%S}-{suffix}"
    r["RoleArn"] = a.role
    for k, v in (a.hyperparameters or {}).items():
        if not isinstance(v, str):
            fail(f"Could not parse hyperparameters. Value for {k} was not a string.")
    r["HyperParameters"] = a.hyperparameters
    alg = r["AlgorithmSpecification"]
    alg["TrainingInputMode"] = a.training_input_mode
    if not a.image and not a.algorithm_name:
        fail("Please specify training image or algorithm name.")
    if a.image:
        alg["TrainingImage"] = a.image
        alg.pop("AlgorithmName")
    else:
        alg["AlgorithmName"] = a.algorithm_name
        alg.pop("TrainingImage")
    if a.metric_definitions:
        alg["MetricDefinitions"] = [{"Name": k, "Regex": v} for k, v in a.metric_definitions.items()]
    else:
        alg.pop("MetricDefinitions")
    if a.vpc_security_group_ids and a.vpc_subnets:
        r["VpcConfig"] = {"SecurityGroupIds": a.vpc_security_group_ids.split(","), "Subnets": a.vpc_subnets.split(",")}
    else:
        r.pop("VpcConfig")
    if not a.channels:
        fail("Must specify at least one input channel.")
    r["InputDataConfig"] = a.channels
    r["OutputDataConfig"]["S3OutputPath"] = a.model_artifact_path
    r["OutputDataConfig"]["KmsKeyId"] = a.output_encryption_key
    r["ResourceConfig"]["InstanceType"] = a.instance_type
    r["ResourceConfig"]["VolumeKmsKeyId"] = a.resource_encryption_key
    r["EnableNetworkIsolation"] = a.network_isolation
    r["EnableInterContainerTrafficEncryption"] = a.traffic_encryption
    if a.instance_count:
        r["ResourceConfig"]["InstanceCount"] = a.instance_count
    if a.volume_size:
        r["ResourceConfig"]["VolumeSizeInGB"] = a.volume_size
    if a.debug_hook_config:
        r["DebugHookConfig"] = a.debug_hook_config
    else:
        r.pop("DebugHookConfig")
    if a.debug_rule_config:
        r["DebugRuleConfigurations"] = a.debug_rule_config
    else:
        r.pop("DebugRuleConfigurations")
    if a.max_run_time:
        r["StoppingCondition"]["MaxRuntimeInSeconds"] = a.max_run_time
    if a.spot_instance:
        r["EnableManagedSpotTraining"] = a.spot_instance
        if a.max_wait_time < r["StoppingCondition"]["MaxRuntimeInSeconds"]:
            fail("Max wait time must be greater than or equal to max run time.")
        r["StoppingCondition"]["MaxWaitTimeInSeconds"] = a.max_wait_time
        if not (a.checkpoint_config and "S3Uri" in a.checkpoint_config):
            fail("EnableManagedSpotTraining requires checkpoint config with an S3 uri.")
        r["CheckpointConfig"] = a.checkpoint_config
    else:
        del r["StoppingCondition"]["MaxWaitTimeInSeconds"]
        del r["CheckpointConfig"]
    for k, v in (a.tags or {}).items():
        r["Tags"].append({"Key": k, "Value": v})
    return r
