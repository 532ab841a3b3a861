"""The hybrid training pipeline of the AWS workshop, for our image: one parameter, training_runtime,
picks where CIFAR-10 trains.

  training_runtime == "kubernetes": Kubeflow's PyTorchJob launcher creates PyTorchJob <job_name> in
      <namespace>: Master 1 + Worker 2, each pod the container of k8s/base/pytorchjob-cifar10.yaml
      (train_cifar10 on the shared volume named in k8s/storage/settings, restartPolicy ExitCode) with the pipeline's
      image, epochs, batch size, learning rate and backend; the job is kept after it ends
      (delete_after_done=False) so its pods and logs can be read.
  training_runtime == "sagemaker": the SageMaker training component starts training job
      <job_name>: <instance_count> x <instance_type> running <image> (`docker run IMAGE train`), the
      hyperparameters the workshop passed (all strings: backend, batch-size, epochs, lr,
      model-type=custom), data channel `train` from s3://<bucket>/datasets/cifar10, the model to
      s3://<bucket>/jobs/<job_name>/output/model.tar.gz.
  anything else: neither branch runs (both conditions are false), as in the workshop.

compile.py turns this description into the KFP v2 PipelineSpec (pipelines/hybrid-training.yaml).
P("x") is the pipeline parameter x where it is used; inside a string (f"s3://{P('bucket')}/jobs")
it is substituted at run time, as a KFP f-string of a pipeline channel is.
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
    """A pipeline parameter used as an argument (a KFP pipeline channel)."""
    def __init__(self, name):
        self.name = name

    def __format__(self, spec):
        return "{{channel:" + self.name + "}}"   # compile.py finds these in strings

    __str__ = lambda self: format(self, "")  # noqa: E731


NAME = "ddp-hybrid-training"
DESCRIPTION = ("CIFAR-10 with ddp's train_cifar10 on Kubernetes (PyTorchJob, Master 1 + Worker 2) or on "
               "SageMaker (2 x ml.p3.2xlarge), chosen by training_runtime.")

# (name, type, default, description): types as in a @dsl.pipeline signature (str, int, float).
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
    ("bucket", str, "", "sagemaker: S3 bucket with datasets/cifar10/ and for the model (jobs/)."),
    ("region", str, "us-west-2", "sagemaker: AWS region."),
    ("role", str, "", "sagemaker: ARN of the IAM role SageMaker assumes."),
    ("instance_type", str, "ml.p3.2xlarge", "sagemaker: instance type."),
    ("instance_count", int, 2, "sagemaker: number of instances."),
]


def replica_spec(replica_type):
    """The Master or Worker replica spec of k8s/base/pytorchjob-cifar10.yaml with the pipeline's
    parameters in place of the image and of the training flags they set."""
    with open(BASE_MANIFEST, encoding="utf-8") as f:
        job = yaml.safe_load(f)
    spec = copy.deepcopy(job["spec"]["pytorchReplicaSpecs"][replica_type])
    flags = {"--epochs": P("epochs"), "--batch-size": P("batch_size"), "--lr": P("lr"), "--backend": P("backend")}
    pod = spec["template"]["spec"]
    for c in pod.get("initContainers", []) + pod["containers"]:
        c["image"] = str(P("image"))
    main = next(c for c in pod["containers"] if c["name"] == "pytorch")
    args = [str(a) for a in main["args"]]
    for flag, value in flags.items():
        if flag not in args:
            raise ValueError(f"{BASE_MANIFEST}: the {replica_type} container has no {flag} to set")
        args[args.index(flag) + 1] = str(value)
    main["args"] = args
    with open(VOLUME_SETTINGS, encoding="utf-8") as f:
        claim = yaml.safe_load(f)["data"]["claimName"]
    shared = [v for v in pod.get("volumes", []) if v.get("name") == "shared" and "persistentVolumeClaim" in v]
    if len(shared) != 1:
        raise ValueError(f"{BASE_MANIFEST}: the {replica_type} pod has no persistentVolumeClaim volume `shared`")
    shared[0]["persistentVolumeClaim"]["claimName"] = claim
    return spec


def channels():
    return [{"ChannelName": "train",
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                             "S3Uri": f"s3://{P('bucket')}/datasets/cifar10",
                                             "S3DataDistributionType": "FullyReplicated"}},
             "CompressionType": "None", "RecordWrapperType": "None"}]


def hyperparameters():
    """The workshop's hyperparameters, all strings (SageMaker passes strings only)."""
    return {"backend": f"{P('backend')}", "batch-size": f"{P('batch_size')}", "epochs": f"{P('epochs')}",
            "lr": f"{P('lr')}", "model-type": "custom"}


# Each branch: (display name, the condition on a parameter, the task's component and arguments).
# Tasks run with caching off: a training run is never replaced by an earlier run's cached result.
BRANCHES = [
    {"display_name": "kubernetes",
     "condition": ("training_runtime", "==", "kubernetes"),
     "component": components.PYTORCHJOB_LAUNCHER,
     "arguments": {
         "name": P("job_name"),
         "namespace": P("namespace"),
         "master_spec": replica_spec("Master"),
         "worker_spec": replica_spec("Worker"),
         "delete_after_done": False,
     }},
    {"display_name": "sagemaker",
     "condition": ("training_runtime", "==", "sagemaker"),
     "component": components.SAGEMAKER_TRAIN,
     "arguments": {
         "region": P("region"),
         "job_name": P("job_name"),
         "role": P("role"),
         "image": P("image"),
         "training_input_mode": "File",
         "hyperparameters": hyperparameters(),
         "channels": channels(),
         "instance_type": P("instance_type"),
         "instance_count": P("instance_count"),
         "model_artifact_path": f"s3://{P('bucket')}/jobs",
         "network_isolation": False,
         "traffic_encryption": False,
     }},
]
