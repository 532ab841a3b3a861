"""SageMaker's CreateTrainingJob, played on this machine with our image's entrypoint and binaries.

    import netpods, sagemaker
    cluster = netpods.Cluster(workdir)
    result = sagemaker.run_training_job(request, bin_dir, workdir, cluster, timeout=300)
    result["TrainingJobStatus"]                     # "Completed" | "Failed" | "Stopped"
    result["FailureReason"]                         # "AlgorithmError: <the failure file's text>" when Failed
    result["ModelArtifacts"]["S3ModelArtifacts"]    # s3://.../<TrainingJobName>/output/model.tar.gz
    result["Local"]["model_tar"]                    # that object on this machine

run_training_job(request, bin_dir, workdir, cluster, timeout, image_env=None) -> dict
  request    a CreateTrainingJob request (the API's field names; what is played is listed below; any
             other field, or a missing required one, raises RequestError)
  bin_dir    the folder playing the image's /opt/ddp/bin (rehearse.make_bin_dir); the image's
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
Returns a dict shaped like DescribeTrainingJob's answer (TrainingJobName, TrainingJobStatus,
FailureReason, ModelArtifacts.S3ModelArtifacts, HyperParameters, ResourceConfig, ...) and "Local":
{model_tar, roots: {host: /opt/ml root}, logs: {host: log}, exit_codes: {host: code}}.

What is played, as SageMaker does it (docs.aws.amazon.com/sagemaker: "How Amazon SageMaker Runs Your
Training Image", "How Amazon SageMaker Provides Training Information"):
  - ResourceConfig.InstanceCount instances algo-1..algo-N, each started as `<ENTRYPOINT> train` with
    the image's ENV, request.Environment, and SAGEMAKER_BASE_DIR=<its /opt/ml root> (the override the
    trainer honours, and the sagemaker-training-toolkit's name for it), as the image's USER (uid 1000)
  - /opt/ml/input/config/hyperparameters.json (HyperParameters: every value a string, as the API
    requires), resourceconfig.json (current_host, current_instance_type, current_group_name, hosts,
    instance_groups, network_interface_name "eth0"), inputdataconfig.json (one entry per channel)
  - /opt/ml/input/data/<ChannelName>/: a full copy of the channel's S3 prefix on every instance
    (S3DataType S3Prefix, S3DistributionType FullyReplicated, TrainingInputMode File; anything else is
    a RequestError, not played)
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
Not played: Pipe/FastFile input modes, sharded or manifest channels, VPC, spot, warm pools, SageMaker's
own container-start retries.
"""
import json
import os
import re
import shutil
import signal
import sys
import tarfile
import time

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
    if mode != "File":
        raise RequestError(f"AlgorithmSpecification.TrainingInputMode {mode!r}: only File is played")
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
    _require(request["StoppingCondition"], "MaxRuntimeInSeconds", "StoppingCondition")
    names = set()
    for i, ch in enumerate(request.get("InputDataConfig", [])):
        where = f"InputDataConfig[{i}]"
        name = _require(ch, "ChannelName", where)
        if name in names:
            raise RequestError(f"{where}.ChannelName {name!r} is given twice")
        names.add(name)
        src = _require(_require(ch, "DataSource", where), "S3DataSource", where + ".DataSource")
        s3_local("/", _require(src, "S3Uri", where + ".DataSource.S3DataSource"))
        if src.get("S3DataType", "S3Prefix") != "S3Prefix":
            raise RequestError(f"{where}: S3DataType {src['S3DataType']!r}: only S3Prefix is played")
        if src.get("S3DataDistributionType", "FullyReplicated") != "FullyReplicated":
            raise RequestError(f"{where}: only FullyReplicated is played")
        if ch.get("InputMode", "File") != "File":
            raise RequestError(f"{where}.InputMode {ch['InputMode']!r}: only File is played")
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


def _chown_tree(path, uid):
    for d, dirs, files in os.walk(path):
        os.chown(d, uid, uid)
        for f in files:
            os.chown(os.path.join(d, f), uid, uid)


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def prepare_root(request, workdir, job_dir, host, hosts):
    """One instance's /opt/ml as SageMaker lays it out before starting the container."""
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
    for ch in request.get("InputDataConfig", []):
        src = ch["DataSource"]["S3DataSource"]
        channels[ch["ChannelName"]] = {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
                                       "RecordWrapperType": ch.get("RecordWrapperType", "None")}
        if "ContentType" in ch:
            channels[ch["ChannelName"]]["ContentType"] = ch["ContentType"]
        _copy_tree(s3_local(workdir, src["S3Uri"]), os.path.join(root, "input", "data", ch["ChannelName"]))
    _write_json(os.path.join(config, "inputdataconfig.json"), channels)
    if request.get("CheckpointConfig"):
        os.makedirs(os.path.join(root, "checkpoints"))
    _chown_tree(os.path.join(job_dir, host), IMAGE_UID)
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


def run_training_job(request, bin_dir, workdir, cluster, timeout, image_env=None):
    """Plays CreateTrainingJob to its end; see the module docstring. RequestError for a bad request."""
    validate(request)
    name = request["TrainingJobName"]
    count = request["ResourceConfig"]["InstanceCount"]
    hosts = [f"algo-{i + 1}" for i in range(count)]
    job_dir = os.path.join(workdir, "sagemaker", name)
    os.makedirs(job_dir, exist_ok=True)
    for d in (workdir, os.path.join(workdir, "sagemaker"), job_dir):
        os.chmod(d, 0o755)
    env_base = dict(image_env if image_env is not None else _default_image_env(bin_dir))
    env_base["PATH"] = env_base.get("PATH", "/usr/bin:/bin").replace("/opt/ddp/bin", bin_dir)
    env_base.update(request.get("Environment", {}))
    entry = [e.replace("/opt/ddp/bin", bin_dir, 1) if e.startswith("/opt/ddp/bin/") else e
             for e in image_entrypoint()]
    result = {"TrainingJobName": name, "TrainingJobArn": f"arn:aws:sagemaker:local:000000000000:training-job/{name}",
              "AlgorithmSpecification": request["AlgorithmSpecification"], "RoleArn": request["RoleArn"],
              "HyperParameters": request.get("HyperParameters", {}), "ResourceConfig": request["ResourceConfig"],
              "InputDataConfig": request.get("InputDataConfig", []), "OutputDataConfig": request["OutputDataConfig"],
              "StoppingCondition": request["StoppingCondition"], "TrainingJobStatus": "InProgress",
              "SecondaryStatus": "Starting", "FailureReason": None, "ModelArtifacts": None,
              "Local": {"model_tar": None, "roots": {}, "logs": {}, "exit_codes": {}, "model_files": []}}
    local = result["Local"]
    roots = {h: prepare_root(request, workdir, job_dir, h, hosts) for h in hosts}
    local["roots"] = roots
    pods, procs = {}, {}
    started = time.time()
    limit = min(float(timeout), float(request["StoppingCondition"]["MaxRuntimeInSeconds"]))
    print(f"  [TrainingJob/{name}] {count} x {request['ResourceConfig']['InstanceType']}: {' '.join(entry)} train",
          flush=True)
    try:
        for h in hosts:
            pods[h] = cluster.create_pod(f"{name}-{h}", hostname=h)
        for h in hosts:
            cluster.publish(h, pods[h].ip)
        result["SecondaryStatus"] = "Training"
        for h in hosts:
            env = dict(env_base, HOSTNAME=h, HOME=roots[h], SAGEMAKER_BASE_DIR=roots[h])
            local["logs"][h] = os.path.join(job_dir, f"{h}.log")
            procs[h] = pods[h].start(entry + ["train"], env, local["logs"][h], cwd=roots[h], uid=IMAGE_UID)
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


def _copy_tree_if(src, dst):
    if os.path.isdir(src) and os.listdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)


def extract_model(result, dst):
    """Unpacks a Completed job's model.tar.gz into dst; returns the file names."""
    os.makedirs(dst, exist_ok=True)
    with tarfile.open(result["Local"]["model_tar"], "r:gz") as tar:
        tar.extractall(dst, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dst)
        return sorted(m.name for m in tar.getmembers() if m.isfile())
