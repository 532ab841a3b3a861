"""SageMaker's CreateTrainingJob, played on this machine with our image's entrypoint and binaries.

    import netpods, sagemaker
    cluster = netpods.Cluster(workdir)
    result = sagemaker.run_training_job(request, bin_dir, workdir, cluster, timeout=300)
    result["TrainingJobStatus"]                     # "Completed" | "Failed" | "Stopped"
    result["FailureReason"]                         # "AlgorithmError: <the failure file's text>" when Failed
    result["ModelArtifacts"]["S3ModelArtifacts"]    # s3://.../<TrainingJobName>/output/model.tar.gz
    result["Local"]["model_tar"]                    # that object on this machine

run_training_job(request, bin_dir, workdir, cluster, timeout, image_env=None, user="image",
                 opt_ml="writable") -> dict
  request    a CreateTrainingJob request (the API's field names; what is played is listed below; any
             other field, or a missing required one, raises RequestError)
  bin_dir    the folder playing the image's binaries in /usr/bin (rehearse.make_bin_dir, image_layout); the image's
             ENTRYPOINT (docker/Dockerfile, runtime stage) is started with it swapped in, plus `train`
  workdir    where S3 and the instances' /opt/ml roots live on this machine:
               s3://bucket/key           -> <workdir>/s3/bucket/key
               instance algo-N's /opt/ml -> <workdir>/sagemaker/<TrainingJobName>/algo-N/opt/ml
               its stdout+stderr         -> <workdir>/sagemaker/<TrainingJobName>/algo-N.log
  cluster    a netpods.Cluster: every instance is a pod (network namespace) with hostname algo-N,
             and every algo-N is published to every pod's hosts file (SageMaker's DNS)
  timeout    seconds of wall time for the whole job (also bounded by MaxRuntimeInSeconds)
  image_env  the image's ENV (rehearse.image_env plus LD_LIBRARY_PATH for the build's libddp);
             default: rehearse.image_env(REPO) with LD_LIBRARY_PATH=<bin_dir>/../lib
  user       "image": the processes run as the image's USER (docker/Dockerfile: ddp, uid 1000), as
             SageMaker starts the image; "root": as uid 0 (an image built FROM ours with USER root)
  opt_ml     who may write the folders the container writes (model/, output/, output/data/,
             checkpoints/): "writable" (root-owned, mode 0777: how SageMaker must make them for a
             non-root USER to write at all), or "root-only" (root-owned, mode 0755: what the users who
             report Permission denied from non-root containers get). AWS documents neither owner nor
             mode: both are played, and the trainers must work in the first and fail clearly in the
             second. Everything else under /opt/ml is root's and read-only to others.
Returns a dict shaped like DescribeTrainingJob's answer (TrainingJobName, TrainingJobStatus,
FailureReason, ModelArtifacts.S3ModelArtifacts, HyperParameters, ResourceConfig, ...) and "Local":
{model_tar, roots: {host: /opt/ml root}, logs: {host: log}, exit_codes: {host: code},
metrics: {host: {metric name: [values]}}}; FinalMetricDataList (each metric's last value on algo-1).

What is played, as SageMaker does it (docs.aws.amazon.com/sagemaker: "How Amazon SageMaker Runs Your
Training Image", "How Amazon SageMaker Provides Training Information"):
  - ResourceConfig.InstanceCount instances algo-1..algo-N, each started as `<ENTRYPOINT> train` with
    the image's ENV, request.Environment, and SAGEMAKER_BASE_DIR=<its /opt/ml root> (the override the
    trainer honours, and the sagemaker-training-toolkit's name for it), as `user` (above); /opt/ml made
    by root before the start, laid out as `opt_ml` says
  - /opt/ml/input/config/hyperparameters.json (HyperParameters: every value a string, as the API
    requires), resourceconfig.json (current_host, current_instance_type, current_group_name, hosts,
    instance_groups, network_interface_name "eth0"), inputdataconfig.json (one entry per channel)
  - /opt/ml/input/data/<ChannelName>/: the channel's data on every instance: an S3Prefix
    (FullyReplicated) copied in File mode, or shown read-only in FastFile mode (the channel's
    InputMode, else AlgorithmSpecification.TrainingInputMode; SageMaker streams the objects behind a
    read-only file view: played as a read-only copy); a FileSystemDataSource (EFS or FSxLustre, File
    mode only, which needs VpcConfig: the API refuses it otherwise) mounted from
    <workdir>/fs/<FileSystemId><DirectoryPath>, read-only with FileSystemAccessMode ro (played as a
    copy); inputdataconfig.json says each channel's TrainingInputMode. Pipe mode, sharded or manifest
    channels are a RequestError (not played)
  - MetricDefinitions (at most 40; Name and Regex non-empty, Regex at most 500 characters): each
    instance's log lines are searched with each Regex (Python's re: AWS does not name its engine), the
    first group read as a number, as SageMaker turns the algorithm's output into metrics
  - EnableManagedSpotTraining: StoppingCondition.MaxWaitTimeInSeconds must be given and at least
    MaxRuntimeInSeconds (ValidationException otherwise); the job is then played as an on-demand one
    (no interruption)
  - /opt/ml/checkpoints exists when CheckpointConfig is given (LocalPath must be /opt/ml/checkpoints);
    its contents are copied to CheckpointConfig.S3Uri at the end
  - the job: Completed when every instance exits 0; Failed as soon as one exits non-zero (the others
    get SIGTERM, then SIGKILL after 10 s); FailureReason "AlgorithmError: " + that instance's
    /opt/ml/output/failure text (or "AlgorithmError: exit code N" when it wrote none); Stopped (SIGTERM to
    all) when the timeout or MaxRuntimeInSeconds passes
  - on Completed: every instance's /opt/ml/model packed into one
    <S3OutputPath>/<TrainingJobName>/output/model.tar.gz (files at the archive's top level; two
    instances writing the same name with different bytes fail the job), and /opt/ml/output/data into
    .../output/output.tar.gz when any instance wrote there
Not played: Pipe input mode, sharded or manifest channels, VPC networking (only required where the API
requires it), spot interruptions, warm pools, SageMaker's own container-start retries.
"""
import json
import os
import re
import shutil
import signal
import sys
import tarfile
import time

import image_layout

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
IMAGE_UID = 1000   # docker/Dockerfile: USER ddp (useradd --uid 1000)
KILL_GRACE = 10.0

REQUIRED = ["TrainingJobName", "AlgorithmSpecification", "RoleArn", "OutputDataConfig", "ResourceConfig",
            "StoppingCondition"]
# Accepted (AWS API fields) but not played; anything else in the request is refused.
ACCEPTED = {"Tags", "VpcConfig", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
            "EnableManagedSpotTraining", "DebugHookConfig", "ProfilerConfig", "ExperimentConfig",
            "TensorBoardOutputConfig", "RetryStrategy", "DebugRuleConfigurations", "ProfilerRuleConfigurations",
            "RemoteDebugConfig", "InfraCheckConfig", "SessionChainingConfig"}
PLAYED = {"HyperParameters", "InputDataConfig", "CheckpointConfig", "Environment"}
JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
S3_URI = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?$")


class RequestError(Exception):
    """The request is not a valid CreateTrainingJob request (ValidationException), or asks for
    something the emulation does not play."""


def s3_local(workdir, uri):
    """s3://bucket/key -> <workdir>/s3/bucket/key."""
    m = S3_URI.match(uri or "")
    if not m:
        raise RequestError(f"{uri!r} is not an s3://bucket/key URI")
    key = (m.group(2) or "/").lstrip("/")
    if any(part == ".." for part in key.split("/")):
        raise RequestError(f"{uri!r}: '..' in the key")
    return os.path.join(workdir, "s3", m.group(1), key)


def _require(d, key, where):
    if not isinstance(d, dict) or key not in d:
        raise RequestError(f"{where}.{key} is required")
    return d[key]


def validate(request):
    """Raises RequestError naming the first bad field."""
    if not isinstance(request, dict):
        raise RequestError("the request must be an object")
    for key in REQUIRED:
        _require(request, key, "request")
    for key in request:
        if key not in REQUIRED and key not in PLAYED and key not in ACCEPTED:
            raise RequestError(f"request.{key} is not a CreateTrainingJob field")
    if not JOB_NAME.match(str(request["TrainingJobName"])):
        raise RequestError(f"TrainingJobName {request['TrainingJobName']!r} does not match {JOB_NAME.pattern}")
    alg = request["AlgorithmSpecification"]
    _require(alg, "TrainingImage", "AlgorithmSpecification")
    mode = _require(alg, "TrainingInputMode", "AlgorithmSpecification")
    if mode not in ("File", "FastFile"):
        raise RequestError(f"AlgorithmSpecification.TrainingInputMode {mode!r}: only File and FastFile are played")
    metrics = alg.get("MetricDefinitions", [])
    if not isinstance(metrics, list) or len(metrics) > 40:
        raise RequestError("AlgorithmSpecification.MetricDefinitions must be a list of at most 40")
    for i, m in enumerate(metrics):
        name, regex = _require(m, "Name", f"MetricDefinitions[{i}]"), _require(m, "Regex", f"MetricDefinitions[{i}]")
        if not (isinstance(name, str) and 0 < len(name) <= 255 and isinstance(regex, str) and 0 < len(regex) <= 500):
            raise RequestError(f"MetricDefinitions[{i}]: Name (1-255) and Regex (1-500 characters) are required")
        try:
            re.compile(regex)
        except re.error as e:
            raise RequestError(f"MetricDefinitions[{i}].Regex {regex!r}: {e}") from None
    hp = request.get("HyperParameters", {})
    if not isinstance(hp, dict) or len(hp) > 100:
        raise RequestError("HyperParameters must be a map of at most 100 entries")
    for k, v in hp.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise RequestError(f"HyperParameters[{k!r}]: keys and values must be strings, got {type(v).__name__}")
        if len(k) > 256 or len(v) > 2500:
            raise RequestError(f"HyperParameters[{k!r}]: key over 256 or value over 2500 characters")
    rc = request["ResourceConfig"]
    count = _require(rc, "InstanceCount", "ResourceConfig")
    _require(rc, "InstanceType", "ResourceConfig")
    _require(rc, "VolumeSizeInGB", "ResourceConfig")
    if not isinstance(count, int) or count < 1:
        raise RequestError(f"ResourceConfig.InstanceCount {count!r} must be an integer >= 1")
    _require(request["OutputDataConfig"], "S3OutputPath", "OutputDataConfig")
    s3_local("/", request["OutputDataConfig"]["S3OutputPath"])
    stop = request["StoppingCondition"]
    _require(stop, "MaxRuntimeInSeconds", "StoppingCondition")
    if request.get("EnableManagedSpotTraining"):
        wait = stop.get("MaxWaitTimeInSeconds")
        if not isinstance(wait, int) or wait < stop["MaxRuntimeInSeconds"]:
            raise RequestError("EnableManagedSpotTraining: StoppingCondition.MaxWaitTimeInSeconds must be given and "
                               "at least MaxRuntimeInSeconds")
    names = set()
    for i, ch in enumerate(request.get("InputDataConfig", [])):
        where = f"InputDataConfig[{i}]"
        name = _require(ch, "ChannelName", where)
        if name in names:
            raise RequestError(f"{where}.ChannelName {name!r} is given twice")
        names.add(name)
        source = _require(ch, "DataSource", where)
        channel_mode = ch.get("InputMode", mode)
        if channel_mode not in ("File", "FastFile"):
            raise RequestError(f"{where}.InputMode {channel_mode!r}: only File and FastFile are played")
        if "FileSystemDataSource" in source:
            fsrc = source["FileSystemDataSource"]
            for key in ("FileSystemId", "FileSystemType", "FileSystemAccessMode", "DirectoryPath"):
                _require(fsrc, key, where + ".DataSource.FileSystemDataSource")
            if fsrc["FileSystemType"] not in ("EFS", "FSxLustre") or fsrc["FileSystemAccessMode"] not in ("ro", "rw"):
                raise RequestError(f"{where}: FileSystemType EFS|FSxLustre and FileSystemAccessMode ro|rw")
            if not str(fsrc["DirectoryPath"]).startswith("/") or ".." in str(fsrc["DirectoryPath"]).split("/"):
                raise RequestError(f"{where}: DirectoryPath {fsrc['DirectoryPath']!r} must be an absolute path")
            if channel_mode != "File":
                raise RequestError(f"{where}: a FileSystemDataSource is mounted: File mode only")
            vpc = request.get("VpcConfig") or {}
            if not vpc.get("Subnets") or not vpc.get("SecurityGroupIds"):
                raise RequestError(f"{where}: a FileSystemDataSource needs VpcConfig (Subnets, SecurityGroupIds)")
            continue
        src = _require(source, "S3DataSource", where + ".DataSource")
        s3_local("/", _require(src, "S3Uri", where + ".DataSource.S3DataSource"))
        if src.get("S3DataType", "S3Prefix") != "S3Prefix":
            raise RequestError(f"{where}: S3DataType {src['S3DataType']!r}: only S3Prefix is played")
        if src.get("S3DataDistributionType", "FullyReplicated") != "FullyReplicated":
            raise RequestError(f"{where}: only FullyReplicated is played")
    cp = request.get("CheckpointConfig")
    if cp is not None:
        s3_local("/", _require(cp, "S3Uri", "CheckpointConfig"))
        if cp.get("LocalPath", "/opt/ml/checkpoints") != "/opt/ml/checkpoints":
            raise RequestError("CheckpointConfig.LocalPath: only /opt/ml/checkpoints is played")
    env = request.get("Environment", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise RequestError("Environment must map strings to strings")


def image_entrypoint(repo=REPO):
    """The runtime stage's ENTRYPOINT of docker/Dockerfile (exec form)."""
    sys.path.insert(0, os.path.join(repo, "docker"))
    import chroot_build  # noqa: E402  (the Dockerfile parser)
    text = open(os.path.join(repo, "docker", "Dockerfile"), encoding="utf-8").read()
    stage, entry = None, None
    for _, ins, rest in chroot_build.parse_dockerfile(text):
        if ins == "FROM":
            stage = rest.split()[-1]
        elif ins == "ENTRYPOINT" and stage == "runtime":
            entry = chroot_build.exec_or_shell(rest)
    if not entry:
        raise RequestError("docker/Dockerfile's runtime stage has no ENTRYPOINT")
    return entry


def _default_image_env(bin_dir):
    import rehearse  # noqa: E402  (lazily: rehearse imports this module)
    env = rehearse.image_env(REPO)
    env["LD_LIBRARY_PATH"] = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "lib")
    return env


def _copy_tree(src, dst):
    """An S3 prefix's objects into a channel folder (a prefix naming one object copies that object)."""
    os.makedirs(dst, exist_ok=True)
    if os.path.isfile(src):
        shutil.copy2(src, os.path.join(dst, os.path.basename(src)))
    elif os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        raise RequestError(f"the S3 prefix {src} holds no objects")


def _read_only(path):
    """A channel SageMaker shows read-only (FastFile, a file system mounted ro): r-x folders, r-- files."""
    for d, _, files in os.walk(path):
        os.chmod(d, 0o555)
        for f in files:
            os.chmod(os.path.join(d, f), 0o444)


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


WRITTEN = ("model", "output", "output/data", "checkpoints")   # the folders the container writes


def prepare_root(request, workdir, job_dir, host, hosts, opt_ml="writable"):
    """One instance's /opt/ml as SageMaker lays it out, as root, before starting the container (see
    the module docstring for `opt_ml`)."""
    if opt_ml not in ("writable", "root-only"):
        raise ValueError(f"opt_ml {opt_ml!r}: writable or root-only")
    root = os.path.join(job_dir, host, "opt", "ml")
    shutil.rmtree(os.path.join(job_dir, host), ignore_errors=True)
    config = os.path.join(root, "input", "config")
    for d in (config, os.path.join(root, "model"), os.path.join(root, "output", "data"), os.path.join(root, "code")):
        os.makedirs(d)
    rc = request["ResourceConfig"]
    _write_json(os.path.join(config, "hyperparameters.json"), request.get("HyperParameters", {}))
    _write_json(os.path.join(config, "resourceconfig.json"), {
        "current_host": host, "current_instance_type": rc["InstanceType"],
        "current_group_name": "homogeneousCluster", "hosts": hosts,
        "instance_groups": [{"instance_group_name": "homogeneousCluster", "instance_type": rc["InstanceType"],
                             "hosts": hosts}],
        "network_interface_name": "eth0"})
    channels = {}
    default_mode = request["AlgorithmSpecification"]["TrainingInputMode"]
    for ch in request.get("InputDataConfig", []):
        mode = ch.get("InputMode", default_mode)
        dst = os.path.join(root, "input", "data", ch["ChannelName"])
        if "FileSystemDataSource" in ch["DataSource"]:
            fsrc = ch["DataSource"]["FileSystemDataSource"]
            channels[ch["ChannelName"]] = {"TrainingInputMode": "File", "RecordWrapperType": "None"}
            _copy_tree(os.path.join(workdir, "fs", fsrc["FileSystemId"]) + fsrc["DirectoryPath"], dst)
            if fsrc["FileSystemAccessMode"] == "ro":
                _read_only(dst)
        else:
            channels[ch["ChannelName"]] = {"TrainingInputMode": mode, "S3DistributionType": "FullyReplicated",
                                           "RecordWrapperType": ch.get("RecordWrapperType", "None")}
            _copy_tree(s3_local(workdir, ch["DataSource"]["S3DataSource"]["S3Uri"]), dst)
            if mode == "FastFile":
                _read_only(dst)
        if "ContentType" in ch:
            channels[ch["ChannelName"]]["ContentType"] = ch["ContentType"]
    _write_json(os.path.join(config, "inputdataconfig.json"), channels)
    if request.get("CheckpointConfig"):
        os.makedirs(os.path.join(root, "checkpoints"))
        _copy_tree_if(s3_local(workdir, request["CheckpointConfig"]["S3Uri"]), os.path.join(root, "checkpoints"))
    for d in WRITTEN:
        if os.path.isdir(os.path.join(root, d)):
            os.chmod(os.path.join(root, d), 0o777 if opt_ml == "writable" else 0o755)
    return root


def _pack(dirs, tar_path):
    """Every file under each of `dirs` (relative names) into one tar.gz; a name two folders hold with
    different bytes is an error (SageMaker merges the instances' model folders)."""
    seen = {}
    for d in dirs:
        for base, _, files in os.walk(d):
            for f in sorted(files):
                p = os.path.join(base, f)
                rel = os.path.relpath(p, d)
                data = open(p, "rb").read()
                if rel in seen and seen[rel][1] != data:
                    raise RequestError(f"{rel} differs between {seen[rel][0]} and {d}")
                seen.setdefault(rel, (d, data))
    os.makedirs(os.path.dirname(tar_path), exist_ok=True)
    with tarfile.open(tar_path, "w:gz") as tar:
        for rel, (d, _) in sorted(seen.items()):
            tar.add(os.path.join(d, rel), arcname=rel)
    return sorted(seen)


def _stop_all(pods, procs):
    for host, pr in procs.items():
        if pr.poll() is None:
            pods[host].signal_all(signal.SIGTERM)
    deadline = time.time() + KILL_GRACE
    while time.time() < deadline and any(pr.poll() is None for pr in procs.values()):
        time.sleep(0.1)
    for host, pr in procs.items():
        if pr.poll() is None:
            pods[host].signal_all(signal.SIGKILL)
            pr.wait(timeout=10)


def _exit_code(rc):
    return 128 - rc if rc < 0 else rc   # killed by signal N: the container runtime reports 128+N


def run_training_job(request, bin_dir, workdir, cluster, timeout, image_env=None, user="image", opt_ml="writable"):
    """Plays CreateTrainingJob to its end; see the module docstring. RequestError for a bad request."""
    validate(request)
    if user not in ("image", "root"):
        raise ValueError(f"user {user!r}: image or root")
    uid = IMAGE_UID if user == "image" else 0
    name = request["TrainingJobName"]
    count = request["ResourceConfig"]["InstanceCount"]
    hosts = [f"algo-{i + 1}" for i in range(count)]
    job_dir = os.path.join(workdir, "sagemaker", name)
    os.makedirs(job_dir, exist_ok=True)
    for d in (workdir, os.path.join(workdir, "sagemaker"), job_dir):
        os.chmod(d, 0o755)
    env_base = dict(image_env if image_env is not None else _default_image_env(bin_dir))
    env_base["PATH"] = image_layout.path_with(bin_dir, env_base.get("PATH"))
    env_base.update(request.get("Environment", {}))
    entry = [image_layout.local_argv0(e, bin_dir) for e in image_entrypoint()]
    result = {"TrainingJobName": name, "TrainingJobArn": f"arn:aws:sagemaker:local:000000000000:training-job/{name}",
              "AlgorithmSpecification": request["AlgorithmSpecification"], "RoleArn": request["RoleArn"],
              "HyperParameters": request.get("HyperParameters", {}), "ResourceConfig": request["ResourceConfig"],
              "InputDataConfig": request.get("InputDataConfig", []), "OutputDataConfig": request["OutputDataConfig"],
              "StoppingCondition": request["StoppingCondition"], "TrainingJobStatus": "InProgress",
              "SecondaryStatus": "Starting", "FailureReason": None, "ModelArtifacts": None,
              "FinalMetricDataList": [],
              "Local": {"model_tar": None, "roots": {}, "logs": {}, "exit_codes": {}, "model_files": [], "metrics": {},
                        "uid": uid}}
    local = result["Local"]
    roots = {h: prepare_root(request, workdir, job_dir, h, hosts, opt_ml) for h in hosts}
    homes = {h: os.path.join(job_dir, h, "home") for h in hosts}   # the image's home folder (WORKDIR)
    for home in homes.values():
        os.makedirs(home)
        os.chown(home, uid, uid)
    local["roots"] = roots
    pods, procs = {}, {}
    started = time.time()
    limit = min(float(timeout), float(request["StoppingCondition"]["MaxRuntimeInSeconds"]))
    print(f"  [TrainingJob/{name}] {count} x {request['ResourceConfig']['InstanceType']}: {' '.join(entry)} train "
          f"as uid {uid}, /opt/ml {opt_ml}", flush=True)
    try:
        for h in hosts:
            pods[h] = cluster.create_pod(f"{name}-{h}", hostname=h)
        for h in hosts:
            cluster.publish(h, pods[h].ip)
        result["SecondaryStatus"] = "Training"
        for h in hosts:
            env = dict(env_base, HOSTNAME=h, HOME=homes[h], SAGEMAKER_BASE_DIR=roots[h])
            local["logs"][h] = os.path.join(job_dir, f"{h}.log")
            procs[h] = pods[h].start(entry + ["train"], env, local["logs"][h], cwd=homes[h], uid=uid)
        failed = None
        while True:
            for h in hosts:
                rc = procs[h].poll()
                if rc is not None and h not in local["exit_codes"]:
                    local["exit_codes"][h] = _exit_code(rc)
                    print(f"  [TrainingJob/{name}] +{time.time() - started:6.1f}s {h} exited "
                          f"{local['exit_codes'][h]}", flush=True)
                    if rc != 0 and failed is None:
                        failed = h
            if failed or len(local["exit_codes"]) == len(hosts):
                break
            if time.time() - started > limit:
                result["TrainingJobStatus"], result["SecondaryStatus"] = "Stopped", "MaxRuntimeExceeded"
                result["FailureReason"] = f"the job ran past {limit:.0f} s (timeout / MaxRuntimeInSeconds): stopped"
                break
            time.sleep(0.2)
        _stop_all(pods, procs)
        for h in hosts:
            local["exit_codes"].setdefault(h, _exit_code(procs[h].returncode))
            local["metrics"][h] = read_metrics(request, local["logs"][h])
        result["FinalMetricDataList"] = [{"MetricName": k, "Value": v[-1]} for k, v in local["metrics"][hosts[0]].items()
                                         if v]
        if failed:
            path = os.path.join(roots[failed], "output", "failure")
            text = open(path, encoding="utf-8", errors="replace").read().strip() if os.path.exists(path) else ""
            result["TrainingJobStatus"], result["SecondaryStatus"] = "Failed", "Failed"
            result["FailureReason"] = "AlgorithmError: " + (text or f"exit code {local['exit_codes'][failed]}")
    finally:
        for h in hosts:
            cluster.unpublish(h)
            if h in pods:
                cluster.delete_pod(pods[h])
    if request.get("CheckpointConfig"):
        for h in hosts:
            _copy_tree_if(os.path.join(roots[h], "checkpoints"), s3_local(workdir, request["CheckpointConfig"]["S3Uri"]))
    if result["TrainingJobStatus"] == "InProgress":
        out = s3_local(workdir, request["OutputDataConfig"]["S3OutputPath"])
        tar_path = os.path.join(out, name, "output", "model.tar.gz")
        try:
            local["model_files"] = _pack([os.path.join(roots[h], "model") for h in hosts], tar_path)
        except RequestError as e:
            result["TrainingJobStatus"], result["FailureReason"] = "Failed", f"ClientError: model folders clash: {e}"
            return result
        data_dirs = [os.path.join(roots[h], "output", "data") for h in hosts]
        if any(os.listdir(d) for d in data_dirs if os.path.isdir(d)):
            _pack(data_dirs, os.path.join(out, name, "output", "output.tar.gz"))
        uri = request["OutputDataConfig"]["S3OutputPath"].rstrip("/") + f"/{name}/output/model.tar.gz"
        result["ModelArtifacts"] = {"S3ModelArtifacts": uri}
        local["model_tar"] = tar_path
        result["TrainingJobStatus"], result["SecondaryStatus"] = "Completed", "Completed"
    result["TrainingTimeInSeconds"] = int(time.time() - started)
    print(f"  [TrainingJob/{name}] {result['TrainingJobStatus']}"
          + (f": {result['FailureReason']}" if result["FailureReason"] else ""), flush=True)
    return result


def read_metrics(request, log_path):
    """{metric name: [values]} of one instance's log, as MetricDefinitions read it (module docstring)."""
    defs = request["AlgorithmSpecification"].get("MetricDefinitions", [])
    found = {m["Name"]: [] for m in defs}
    if not defs or not os.path.exists(log_path):
        return found
    compiled = [(m["Name"], re.compile(m["Regex"])) for m in defs]
    with open(log_path, errors="replace") as f:
        for line in f:
            for name, rx in compiled:
                m = rx.search(line)
                if m and m.groups():
                    try:
                        found[name].append(float(m.group(1)))
                    except ValueError:
                        pass   # SageMaker drops a value that is not a number
    return found


def _copy_tree_if(src, dst):
    if os.path.isdir(src) and os.listdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)


def extract_model(result, dst):
    """Unpacks a Completed job's model.tar.gz into dst; returns the file names."""
    os.makedirs(dst, exist_ok=True)
    with tarfile.open(result["Local"]["model_tar"], "r:gz") as tar:
        tar.extractall(dst, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dst)
        return sorted(m.name for m in tar.getmembers() if m.isfile())
