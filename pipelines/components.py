"""The Kubeflow components the hybrid pipeline uses, written down as their component.yaml say, and the
pipeline's own compose steps.

The first two are KFP v1 component specs (inputs with v1 types, a container with {inputValue}/{outputPath}
placeholders), as `kfp.components.load_component_from_url` loads them; compile.py turns them into v2
ComponentSpecs and executors the way the KFP v2 compiler does. They are transcribed here (names, types,
defaults, image, command, argument order) rather than downloaded: the repository builds without
network, and the compiled pipeline must not change when upstream moves.

- PYTORCHJOB_LAUNCHER: Kubeflow's PyTorchJob launcher, kubeflow/pipelines
  components/kubeflow/pytorch-launcher/component.yaml (the v1 launcher, later moved to
  components/contrib/, last version before #11273), under the name the AWS workshop gave its copy
  (aws-samples/aws-do-kubeflow .../workshop/pipeline_components/pytorch_component.yaml, same inputs),
  WITHOUT its three optional inputs active_deadline_seconds, backoff_limit and
  ttl_seconds_after_finished: their arguments are `if: isPresent` clauses, which the v2 compiler
  writes as {"IfPresent": ...} strings that no backend before 2.17.0 resolves (the launcher's argparse
  gets them literally and exits 2), and their only effect is spec-level fields of the PyTorchJob that
  the v1.9 CRD prunes anyway (it keeps them under runPolicy). The program is the same:
  launch_pytorchjob.py creates kubeflow.org/<version> PyTorchJob <name> in <namespace> with
  spec.pytorchReplicaSpecs {Master: master_spec, Worker: worker_spec}, waits up to
  job_timeout_minutes for Succeeded or Failed, and deletes the job if delete_after_done.
- SAGEMAKER_TRAIN: the SageMaker training component the workshop loaded (kubeflow/pipelines
  components/aws/sagemaker/train/component.yaml; the workshop pinned it at cb36f87b, untyped, image
  aws-sagemaker-kfp-components 0.3.0); this is its last release (1.1.2, typed, same inputs plus
  assume_role and the debugger configs), before the directory was removed (#13481).
- COMPOSE_PYTORCHJOB, COMPOSE_SAGEMAKER: the pipeline's compose steps (pipelines/compose.py, run as an
  inline `python -c` program in the image of the component that consumes their outputs, which the
  cluster pulls for that branch anyway): they build the replica specs, hyperparameters and channels
  from the run's parameters, so no placeholder is ever nested inside a constant.

Every input of every task is passed by hybrid_training.py (compile.py refuses a task that leaves one
out): KFP 2.17.0's driver fills the command line before the launcher adds the defaults.
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
    ],
    "outputs": [],
    "image": "cascribner/kubeflow-pytorchjob-launcher:v1",
    "command": ["python", "/ml/launch_pytorchjob.py"],
    # ("value", name) = {inputValue: name}
    "args": [
        "--name", ("value", "name"),
        "--namespace", ("value", "namespace"),
        "--version", ("value", "version"),
        "--masterSpec", ("value", "master_spec"),
        "--workerSpec", ("value", "worker_spec"),
        "--jobTimeoutMinutes", ("value", "job_timeout_minutes"),
        "--deleteAfterDone", ("value", "delete_after_done"),
        "--cleanPodPolicy", ("value", "clean_pod_policy"),
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


# The compose steps: ("program", file) = that file's text (an inline program); ("output_file", name) =
# {{$.outputs.parameters['name'].output_file}}, the file the backend reads the output parameter from.
COMPOSE_PYTORCHJOB = {
    "name": "Compose PyTorchJob specs",
    "description": "The launcher's Master and Worker replica specs for this run (pipelines/compose.py)",
    "inputs": [
        ("job_name", "String", None, False),
        ("image", "String", None, False),
        ("epochs", "Integer", None, False),
        ("batch_size", "Integer", None, False),
        ("lr", "Float", None, False),
        ("backend", "String", None, False),
        ("master_template", "JsonObject", None, False),
        ("worker_template", "JsonObject", None, False),
    ],
    "outputs": [],
    "output_parameters": [("master_spec", "JsonObject"), ("worker_spec", "JsonObject")],
    "image": PYTORCHJOB_LAUNCHER["image"],
    "command": ["python", "-c", ("program", "compose.py")],
    "args": ["pytorchjob",
             "--job-name", ("value", "job_name"), "--image", ("value", "image"), "--epochs", ("value", "epochs"),
             "--batch-size", ("value", "batch_size"), "--lr", ("value", "lr"), "--backend", ("value", "backend"),
             "--master-template", ("value", "master_template"), "--worker-template", ("value", "worker_template"),
             "--master-spec-out", ("output_file", "master_spec"), "--worker-spec-out", ("output_file", "worker_spec")],
}

COMPOSE_SAGEMAKER = {
    "name": "Compose SageMaker inputs",
    "description": "The SageMaker job's hyperparameters, channels and S3 paths for this run (pipelines/compose.py)",
    "inputs": [
        ("job_name", "String", None, False),
        ("bucket", "String", None, False),
        ("epochs", "Integer", None, False),
        ("batch_size", "Integer", None, False),
        ("lr", "Float", None, False),
        ("backend", "String", None, False),
        ("input_mode", "String", None, False),
        ("data_source", "String", None, False),
        ("file_system_id", "String", None, False),
        ("file_system_path", "String", None, False),
    ],
    "outputs": [],
    "output_parameters": [("hyperparameters", "JsonObject"), ("channels", "JsonArray"),
                          ("model_artifact_path", "String"), ("checkpoint_config", "JsonObject")],
    "image": SAGEMAKER_TRAIN["image"],
    "command": ["python3", "-c", ("program", "compose.py")],
    "args": ["sagemaker",
             "--job-name", ("value", "job_name"), "--bucket", ("value", "bucket"), "--epochs", ("value", "epochs"),
             "--batch-size", ("value", "batch_size"), "--lr", ("value", "lr"), "--backend", ("value", "backend"),
             "--input-mode", ("value", "input_mode"), "--data-source", ("value", "data_source"),
             "--file-system-id", ("value", "file_system_id"), "--file-system-path", ("value", "file_system_path"),
             "--hyperparameters-out", ("output_file", "hyperparameters"), "--channels-out", ("output_file", "channels"),
             "--model-artifact-path-out", ("output_file", "model_artifact_path"),
             "--checkpoint-config-out", ("output_file", "checkpoint_config")],
}
