"""The two Kubeflow components the hybrid pipeline uses, written down as their component.yaml say.

Both are KFP v1 component specs (inputs with v1 types, a container with {inputValue}/{outputPath}
placeholders and `if: isPresent` arguments), as `kfp.components.load_component_from_url` loads them;
compile.py turns them into v2 ComponentSpecs and executors the way the KFP v2 compiler does. They are
transcribed here (names, types, defaults, image, command, argument order) rather than downloaded: the
repository builds without network, and the compiled pipeline must not change when upstream moves.

- PYTORCHJOB_LAUNCHER: Kubeflow's PyTorchJob launcher, kubeflow/pipelines
  components/kubeflow/pytorch-launcher/component.yaml (the v1 launcher, later moved to
  components/contrib/, last version before #11273), under the name the AWS workshop gave its copy
  (aws-samples/aws-do-kubeflow .../workshop/pipeline_components/pytorch_component.yaml, same inputs).
  Its launch_pytorchjob.py creates kubeflow.org/<version> PyTorchJob <name> in <namespace> with
  spec.pytorchReplicaSpecs {Master: master_spec, Worker: worker_spec}, waits up to
  job_timeout_minutes for Succeeded or Failed, and deletes the job if delete_after_done.
- SAGEMAKER_TRAIN: the SageMaker training component the workshop loaded (kubeflow/pipelines
  components/aws/sagemaker/train/component.yaml; the workshop pinned it at cb36f87b, untyped, image
  aws-sagemaker-kfp-components 0.3.0); this is its last release (1.1.2, typed, same inputs plus
  assume_role and the debugger configs), before the directory was removed (#13481).
"""

# (name, v1 type, default or None, optional without default)
PYTORCHJOB_LAUNCHER = {
    "name": "PyTorch Operator - Training Job",
    "description": "Kubeflow PyTorchJob launcher",
    "inputs": [
        ("name", "String", None, False),
        ("namespace", "String", "kubeflow", False),
        ("version", "String", "v1", False),
        ("master_spec", "JsonObject", "{}", False),
        ("worker_spec", "JsonObject", "{}", False),
        ("job_timeout_minutes", "Integer", "1440", False),
        ("delete_after_done", "Boolean", "True", False),
        ("clean_pod_policy", "String", "Running", False),
        ("active_deadline_seconds", "Integer", None, True),
        ("backoff_limit", "Integer", None, True),
        ("ttl_seconds_after_finished", "Integer", None, True),
    ],
    "outputs": [],
    "image": "cascribner/kubeflow-pytorchjob-launcher:v1",
    "command": ["python", "/ml/launch_pytorchjob.py"],
    # ("value", name) = {inputValue: name}; ("if_present", name, [...]) = if: {cond: {isPresent: name}}
    "args": [
        "--name", ("value", "name"),
        "--namespace", ("value", "namespace"),
        "--version", ("value", "version"),
        "--masterSpec", ("value", "master_spec"),
        "--workerSpec", ("value", "worker_spec"),
        "--jobTimeoutMinutes", ("value", "job_timeout_minutes"),
        "--deleteAfterDone", ("value", "delete_after_done"),
        "--cleanPodPolicy", ("value", "clean_pod_policy"),
        ("if_present", "active_deadline_seconds", ["--activeDeadlineSeconds", ("value", "active_deadline_seconds")]),
        ("if_present", "backoff_limit", ["--backoffLimit", ("value", "backoff_limit")]),
        ("if_present", "ttl_seconds_after_finished",
         ["--ttlSecondsAfterFinished", ("value", "ttl_seconds_after_finished")]),
    ],
}

SAGEMAKER_TRAIN = {
    "name": "SageMaker - Training Job",
    "description": "Train Machine Learning and Deep Learning Models using SageMaker",
    "inputs": [
        ("spot_instance", "Bool", "False", False),
        ("max_wait_time", "Integer", "86400", False),
        ("max_run_time", "Integer", "86400", False),
        ("checkpoint_config", "JsonObject", "{}", False),
        ("region", "String", None, False),
        ("endpoint_url", "String", "", False),
        ("assume_role", "String", "", False),
        ("tags", "JsonObject", "{}", False),
        ("job_name", "String", "", False),
        ("role", "String", None, False),
        ("image", "String", "", False),
        ("algorithm_name", "String", "", False),
        ("metric_definitions", "JsonObject", "{}", False),
        ("training_input_mode", "String", "File", False),
        ("hyperparameters", "JsonObject", "{}", False),
        ("channels", "JsonArray", None, False),
        ("instance_type", "String", "ml.m4.xlarge", False),
        ("instance_count", "Integer", "1", False),
        ("volume_size", "Integer", "30", False),
        ("resource_encryption_key", "String", "", False),
        ("model_artifact_path", "String", None, False),
        ("output_encryption_key", "String", "", False),
        ("vpc_security_group_ids", "String", "", False),
        ("vpc_subnets", "String", "", False),
        ("network_isolation", "Bool", "True", False),
        ("traffic_encryption", "Bool", "False", False),
        ("debug_hook_config", "JsonObject", "{}", False),
        ("debug_rule_config", "JsonArray", "[]", False),
    ],
    # Untyped outputs: the v2 compiler makes them system.Artifact outputs.
    "outputs": ["model_artifact_url", "job_name", "training_image"],
    "image": "public.ecr.aws/kubeflow-on-aws/aws-sagemaker-kfp-components:1.1.2",
    "command": ["python3"],
    "args": ["train/src/sagemaker_training_component.py"] + [
        x for name in [
            "spot_instance", "max_wait_time", "max_run_time", "checkpoint_config", "region", "endpoint_url",
            "assume_role", "tags", "job_name", "role", "image", "algorithm_name", "metric_definitions",
            "training_input_mode", "hyperparameters", "channels", "instance_type", "instance_count",
            "volume_size", "resource_encryption_key", "model_artifact_path", "output_encryption_key",
            "vpc_security_group_ids", "vpc_subnets", "network_isolation", "traffic_encryption",
            "debug_hook_config", "debug_rule_config"]
        for x in ("--" + name, ("value", name))
    ] + [
        "--model_artifact_url_output_path", ("output_path", "model_artifact_url"),
        "--job_name_output_path", ("output_path", "job_name"),
        "--training_image_output_path", ("output_path", "training_image"),
    ],
}
