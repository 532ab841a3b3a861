"""The hybrid training pipeline of the AWS workshop, for our image: one parameter, training_runtime,
picks where CIFAR-10 trains. It runs on every KFP 2.x backend in use (2.0 through 2.17): no IfPresent,
no placeholder nested in a constant, every input of every task passed (docs/KUBEFLOW.md "The hybrid
pipeline" says why each matters; tests/rehearsal/kfp_backend.py plays each version's rules).

  training_runtime == "kubernetes": a compose step builds the Master and Worker replica specs (those
      of k8s/base/pytorchjob-cifar10.yaml with the run's image, epochs, batch size, learning rate,
      backend and job name), then Kubeflow's PyTorchJob launcher creates PyTorchJob <job_name> in
      <namespace> (Master 1 + Worker 2, train_cifar10 on the shared volume named in
      k8s/storage/settings, restartPolicy ExitCode) and keeps it after it ends (delete_after_done=False)
      so its pods and logs can be read.
  training_runtime == "sagemaker": a compose step builds the hyperparameters (the workshop's: backend,
      batch-size, epochs, lr, model-type=custom, all strings), the data channel `train`
      (s3://<bucket>/datasets/cifar10, or an EFS / FSx for Lustre file system) and the S3 paths, then
      the SageMaker training component starts training job <job_name>: <instance_count> x
      <instance_type> running <image> (`docker run IMAGE train`), the model to
      s3://<bucket>/jobs/<job_name>/output/model.tar.gz, with the workshop's knobs: volume size, maximum
      run time, managed spot (checkpoints to s3://<bucket>/checkpoints/<job_name>), network isolation,
      VPC, and metric definitions that read the trainer's lines.
  anything else: neither branch runs (both conditions are false), as in the workshop.

compile.py turns this description into the KFP v2 PipelineSpec (pipelines/hybrid-training.yaml).
P("x") is the pipeline parameter x, passed whole; Out(component, "y") is output y of that component's
task in the same branch. A parameter formatted into a string or put inside a dict is refused by
compile.py: compose it in a step instead.
"""
import copy
import os

import yaml

import components

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BASE_MANIFEST = os.path.join(REPO, "k8s", "base", "pytorchjob-cifar10.yaml")
# The one place naming the shared volume (k8s/README.md): kustomize copies it into the manifests'
# claims, compile.py into the launcher's replica specs (a stale compiled file fails compile.py --check).
VOLUME_SETTINGS = os.path.join(REPO, "k8s", "storage", "settings", "shared-volume.yaml")


class P:
    """A pipeline parameter used as an argument (a KFP pipeline channel), passed whole."""
    def __init__(self, name):
        self.name = name

    def __format__(self, spec):
        return "{{channel:" + self.name + "}}"   # compile.py refuses these inside strings

    __str__ = lambda self: format(self, "")  # noqa: E731


class Out:
    """Output parameter `output` of `component`'s task in the same branch (a taskOutputParameter)."""
    def __init__(self, component, output):
        self.component, self.output = component, output


NAME = "ddp-hybrid-training"
DESCRIPTION = ("CIFAR-10 with ddp's train_cifar10 on Kubernetes (PyTorchJob, Master 1 + Worker 2) or on "
               "SageMaker (2 x ml.p3.2xlarge), chosen by training_runtime.")

# (name, type, default, description): types as in a @dsl.pipeline signature (str, int, float, bool).
PARAMETERS = [
    ("training_runtime", str, "kubernetes",
     "Where to train: kubernetes (PyTorchJob) or sagemaker (SageMaker training job); any other value runs nothing."),
    ("image", str, "ddp:cpu",
     "Our image (docker/Dockerfile or Dockerfile.cuda), pullable by the cluster or, for sagemaker, in ECR."),
    ("job_name", str, "ddp-cifar10",
     "Name of the PyTorchJob or SageMaker training job; give each run its own (the PyTorchJob is kept)."),
    ("epochs", int, 10, "Training epochs."),
    ("batch_size", int, 64, "Batch size per process."),
    ("lr", float, 0.01, "Learning rate (SGD)."),
    ("backend", str, "gloo", "Process-group backend: gloo, or nccl on GPUs."),
    ("namespace", str, "kubeflow-user-example-com", "kubernetes: the namespace (your Kubeflow profile's)."),
    ("bucket", str, "", "sagemaker: S3 bucket with datasets/cifar10/ and for the model (jobs/) and checkpoints."),
    ("region", str, "us-west-2", "sagemaker: AWS region."),
    ("role", str, "", "sagemaker: ARN of the IAM role SageMaker assumes."),
    ("instance_type", str, "ml.p3.2xlarge", "sagemaker: instance type."),
    ("instance_count", int, 2, "sagemaker: number of instances."),
    ("volume_size", int, 50, "sagemaker: GB of EBS storage per instance (the File-mode copy of the data and checkpoints)."),
    ("max_run_time", int, 86400, "sagemaker: seconds of training before SageMaker stops the job."),
    ("spot_instance", bool, False,
     "sagemaker: managed spot training (checkpoints to s3://<bucket>/checkpoints/<job_name>, resumed after an interruption)."),
    ("max_wait_time", int, 172800, "sagemaker: seconds to wait for spot capacity plus training; at least max_run_time."),
    ("network_isolation", bool, True,
     "sagemaker: no network for the containers but their peers (the trainers need nothing else)."),
    ("input_mode", str, "File", "sagemaker: File (copy the data first) or FastFile (stream it from S3); data_source s3 only."),
    ("data_source", str, "s3", "sagemaker: s3 (s3://<bucket>/datasets/cifar10), efs or fsx (file_system_id, file_system_path; needs the VPC settings)."),
    ("file_system_id", str, "", "sagemaker: the EFS or FSx for Lustre file system's ID (data_source efs or fsx)."),
    ("file_system_path", str, "", "sagemaker: the data's folder on that file system, e.g. /fsx-mount/datasets/cifar10 (FSx: it starts with the mount name)."),
    ("vpc_subnets", str, "", "sagemaker: comma-separated subnet IDs (required with data_source efs or fsx)."),
    ("vpc_security_group_ids", str, "", "sagemaker: comma-separated security group IDs (with vpc_subnets)."),
]

# SageMaker's metric definitions for the trainers' lines (the same table as the estimator example in
# docs/KUBEFLOW.md; tests/rehearsal checks them on real output): name -> regex, first group the value.
METRIC_DEFINITIONS = {
    "train:loss": r"Train Epoch: \d+ \[.*\] Loss: ([0-9.eE+-]+)",
    "validation:loss": r"eval_loss=([0-9.eE+-]+)",
    "validation:accuracy": r" accuracy=([0-9.eE+-]+)",
    "validation:auc": r" auc=([0-9.eE+-]+)",
    "train:images_per_sec": r"images_per_sec=([0-9.eE+-]+)",
}


def replica_template(replica_type):
    """The Master or Worker replica spec of k8s/base/pytorchjob-cifar10.yaml with the shared volume's
    claim of k8s/storage/settings: the compose step puts the run's values in it."""
    with open(BASE_MANIFEST, encoding="utf-8") as f:
        job = yaml.safe_load(f)
    spec = copy.deepcopy(job["spec"]["pytorchReplicaSpecs"][replica_type])
    with open(VOLUME_SETTINGS, encoding="utf-8") as f:
        claim = yaml.safe_load(f)["data"]["claimName"]
    pod = spec["template"]["spec"]
    shared = [v for v in pod.get("volumes", []) if v.get("name") == "shared" and "persistentVolumeClaim" in v]
    if len(shared) != 1:
        raise ValueError(f"{BASE_MANIFEST}: the {replica_type} pod has no persistentVolumeClaim volume `shared`")
    shared[0]["persistentVolumeClaim"]["claimName"] = claim
    return spec


def kubernetes_tasks():
    compose = components.COMPOSE_PYTORCHJOB
    return [
        (compose, {"job_name": P("job_name"), "image": P("image"), "epochs": P("epochs"),
                   "batch_size": P("batch_size"), "lr": P("lr"), "backend": P("backend"),
                   "master_template": replica_template("Master"), "worker_template": replica_template("Worker")}),
        (components.PYTORCHJOB_LAUNCHER, {
            "name": P("job_name"), "namespace": P("namespace"), "version": "v1",
            "master_spec": Out(compose, "master_spec"), "worker_spec": Out(compose, "worker_spec"),
            "job_timeout_minutes": 1440, "delete_after_done": False, "clean_pod_policy": "Running"}),
    ]


def sagemaker_tasks():
    compose = components.COMPOSE_SAGEMAKER
    return [
        (compose, {"job_name": P("job_name"), "bucket": P("bucket"), "epochs": P("epochs"),
                   "batch_size": P("batch_size"), "lr": P("lr"), "backend": P("backend"),
                   "input_mode": P("input_mode"), "data_source": P("data_source"),
                   "file_system_id": P("file_system_id"), "file_system_path": P("file_system_path")}),
        (components.SAGEMAKER_TRAIN, {
            "spot_instance": P("spot_instance"), "max_wait_time": P("max_wait_time"), "max_run_time": P("max_run_time"),
            "checkpoint_config": Out(compose, "checkpoint_config"), "region": P("region"), "endpoint_url": "",
            "assume_role": "", "tags": {}, "job_name": P("job_name"), "role": P("role"), "image": P("image"),
            "algorithm_name": "", "metric_definitions": dict(METRIC_DEFINITIONS),
            # File here; a FastFile channel says so itself (the component's argparse knows File and Pipe only).
            "training_input_mode": "File",
            "hyperparameters": Out(compose, "hyperparameters"), "channels": Out(compose, "channels"),
            "instance_type": P("instance_type"), "instance_count": P("instance_count"), "volume_size": P("volume_size"),
            "resource_encryption_key": "", "model_artifact_path": Out(compose, "model_artifact_path"),
            "output_encryption_key": "", "vpc_security_group_ids": P("vpc_security_group_ids"),
            "vpc_subnets": P("vpc_subnets"), "network_isolation": P("network_isolation"), "traffic_encryption": False,
            "debug_hook_config": {}, "debug_rule_config": []}),
    ]


# Each branch: (display name, the condition on a parameter, its tasks in order: (component, arguments)).
# Tasks run with caching off: a training run is never replaced by an earlier run's cached result.
BRANCHES = [
    {"display_name": "kubernetes", "condition": ("training_runtime", "==", "kubernetes"), "tasks": kubernetes_tasks()},
    {"display_name": "sagemaker", "condition": ("training_runtime", "==", "sagemaker"), "tasks": sagemaker_tasks()},
]
