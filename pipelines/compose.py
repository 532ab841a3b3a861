"""The hybrid pipeline's compose steps: build the whole values the two components take (replica specs,
hyperparameters, data channels) from the run's parameters, inside the pipeline, so that no placeholder
ever sits inside a constant (KFP backends up to 2.16 fill such nested placeholders only in the runs
where Go's map order happens to favour them; docs/KUBEFLOW.md "The hybrid pipeline").

compile.py embeds this file as an inline program (`python -c <this file> ...`, as the SDK's
lightweight components do) of two components: one runs in the PyTorchJob launcher's image, the other
in the SageMaker component's image (python 3.6 and 3.7 there, standard library only: compile.py checks
that this file parses as Python 3.6). Each writes its output parameters to the files the backend names
(/tmp/kfp/outputs/<name>) and exits 2 naming the bad value when a parameter is unusable.

  compose.py pytorchjob --job-name N --image I --epochs E --batch-size B --lr L --backend K
                        --master-template JSON --worker-template JSON
                        --master-spec-out FILE --worker-spec-out FILE
      each template: a replica spec of k8s/base/pytorchjob-cifar10.yaml; every container gets the
      image, the `pytorch` container's --epochs/--batch-size/--lr/--backend get the values, and the pod
      template's label app.kubernetes.io/instance gets the job's name (JOB_NAME reads it: k8s/README.md)
  compose.py sagemaker --job-name N --bucket S --epochs E --batch-size B --lr L --backend K
                       --input-mode File|FastFile --data-source s3|efs|fsx
                       --file-system-id ID --file-system-path PATH
                       --hyperparameters-out FILE --channels-out FILE
                       --model-artifact-path-out FILE --checkpoint-config-out FILE
      hyperparameters: the workshop's (strings), channel `train`: s3://<bucket>/datasets/cifar10
      (S3Prefix, FullyReplicated, InputMode File or FastFile) or the EFS / FSx for Lustre file system
      (FileSystemDataSource, read-only, File mode only: SageMaker mounts it); model artifacts to
      s3://<bucket>/jobs; checkpoints to s3://<bucket>/checkpoints/<job> (used with spot instances)
"""
import argparse
import json
import re
import sys

INSTANCE_LABEL = "app.kubernetes.io/instance"
TRAINER_FLAGS = ("--epochs", "--batch-size", "--lr", "--backend")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def fail(message):
    sys.stderr.write("compose: " + message + "\n")
    sys.exit(2)


def whole(name, text):
    try:
        v = int(text)
    except ValueError:
        fail("--%s %r is not a whole number" % (name, text))
    if v < 1:
        fail("--%s %r must be at least 1" % (name, text))
    return text


def number(name, text):
    try:
        v = float(text)
    except ValueError:
        fail("--%s %r is not a number" % (name, text))
    if not v > 0:
        fail("--%s %r must be above 0" % (name, text))
    return text


def write(path, value):
    with open(path, "w") as f:
        f.write(value if isinstance(value, str) else json.dumps(value, sort_keys=True))


def replica_spec(what, text, a):
    try:
        spec = json.loads(text)
        pod = spec["template"]["spec"]
        main = [c for c in pod["containers"] if c["name"] == "pytorch"]
    except (ValueError, KeyError, TypeError) as e:
        fail("--%s-template is not a replica spec with a `pytorch` container (%s)" % (what, e))
    if len(main) != 1:
        fail("--%s-template has %d containers named pytorch, not 1" % (what, len(main)))
    for c in pod.get("initContainers", []) + pod["containers"]:
        c["image"] = a.image
    args = [str(x) for x in main[0].get("args", [])]
    values = {"--epochs": a.epochs, "--batch-size": a.batch_size, "--lr": a.lr, "--backend": a.backend}
    for flag in TRAINER_FLAGS:
        if flag not in args[:-1]:
            fail("--%s-template: the pytorch container has no %s to set" % (what, flag))
        args[args.index(flag) + 1] = values[flag]
    main[0]["args"] = args
    spec["template"].setdefault("metadata", {}).setdefault("labels", {})[INSTANCE_LABEL] = a.job_name
    return spec


def pytorchjob(a):
    if not LABEL_VALUE.match(a.job_name):
        fail("--job-name %r is not a valid label value (the pods' %s)" % (a.job_name, INSTANCE_LABEL))
    if not a.image:
        fail("--image is empty")
    if a.backend not in ("gloo", "nccl"):
        fail("--backend %r: gloo or nccl" % a.backend)
    whole("epochs", a.epochs)
    whole("batch-size", a.batch_size)
    number("lr", a.lr)
    write(a.master_spec_out, replica_spec("master", a.master_template, a))
    write(a.worker_spec_out, replica_spec("worker", a.worker_template, a))


def sagemaker(a):
    if not BUCKET.match(a.bucket):
        fail("--bucket %r is not an S3 bucket name" % a.bucket)
    if a.backend not in ("gloo", "nccl"):
        fail("--backend %r: gloo or nccl" % a.backend)
    hyperparameters = {"backend": a.backend, "batch-size": whole("batch-size", a.batch_size),
                       "epochs": whole("epochs", a.epochs), "lr": number("lr", a.lr), "model-type": "custom"}
    if a.input_mode not in ("File", "FastFile"):
        fail("--input-mode %r: File or FastFile" % a.input_mode)
    channel = {"ChannelName": "train", "CompressionType": "None", "RecordWrapperType": "None"}
    if a.data_source == "s3":
        channel["DataSource"] = {"S3DataSource": {"S3DataType": "S3Prefix",
                                                  "S3Uri": "s3://%s/datasets/cifar10" % a.bucket,
                                                  "S3DataDistributionType": "FullyReplicated"}}
        channel["InputMode"] = a.input_mode
    elif a.data_source in ("efs", "fsx"):
        if not a.file_system_id or not a.file_system_path.startswith("/"):
            fail("--data-source %s needs --file-system-id and an absolute --file-system-path" % a.data_source)
        if a.input_mode != "File":
            fail("--data-source %s is mounted by SageMaker: --input-mode must be File" % a.data_source)
        channel["DataSource"] = {"FileSystemDataSource": {
            "FileSystemId": a.file_system_id, "FileSystemType": "EFS" if a.data_source == "efs" else "FSxLustre",
            "FileSystemAccessMode": "ro", "DirectoryPath": a.file_system_path}}
        channel["InputMode"] = "File"
    else:
        fail("--data-source %r: s3, efs or fsx" % a.data_source)
    write(a.hyperparameters_out, hyperparameters)
    write(a.channels_out, [channel])
    write(a.model_artifact_path_out, "s3://%s/jobs" % a.bucket)
    write(a.checkpoint_config_out, {"S3Uri": "s3://%s/checkpoints/%s" % (a.bucket, a.job_name),
                                    "LocalPath": "/opt/ml/checkpoints"})


def main(argv):
    ap = argparse.ArgumentParser(prog="compose")
    sub = ap.add_subparsers(dest="what")
    p = sub.add_parser("pytorchjob")
    s = sub.add_parser("sagemaker")
    for q in (p, s):
        for name in ("job-name", "epochs", "batch-size", "lr", "backend"):
            q.add_argument("--" + name, required=True)
    for name in ("image", "master-template", "worker-template", "master-spec-out", "worker-spec-out"):
        p.add_argument("--" + name, required=True)
    for name in ("bucket", "input-mode", "data-source", "file-system-id", "file-system-path", "hyperparameters-out",
                 "channels-out", "model-artifact-path-out", "checkpoint-config-out"):
        s.add_argument("--" + name, required=True)
    a = ap.parse_args(argv)
    if a.what == "pytorchjob":
        pytorchjob(a)
    elif a.what == "sagemaker":
        sagemaker(a)
    else:
        fail("pytorchjob or sagemaker")


if __name__ == "__main__":
    main(sys.argv[1:])
