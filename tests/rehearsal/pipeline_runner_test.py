#!/usr/bin/python3
"""pipeline_runner.py with each released backend's rules (kfp_backend.py: KFP 2.0.5, 2.5.0, 2.16.0,
2.17.0) on the compiled hybrid pipeline, without root or binaries:

- the pipeline runs on every version: each training_runtime runs its branch only, the compose steps
  run and the components get the same command lines in every Go map order; the launcher's PyTorchJob
  is valid for the v1.9.4 CRD and the SageMaker request for sagemaker.py;
- each of the three defects the pipeline used to have, planted back into a copy, fails on the
  versions the real backends fail it on and not on the others (the runner can tell);
- the components' programs refuse what the real ones refuse, and the compose steps bad values.
"""
import ast
import atexit
import copy
import os
import shutil
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "k8s"))
import k8s_schema  # noqa: E402
import kfp_backend  # noqa: E402
import kfp_components  # noqa: E402
import pipeline_runner as pr  # noqa: E402
import sagemaker  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "pipelines"))
import hybrid_training  # noqa: E402

SPEC = pr.load(os.path.join(REPO, "pipelines", "hybrid-training.yaml"))
RUN = {"bucket": "ddp-bucket", "role": "arn:aws:iam::000000000000:role/ddp", "epochs": 3, "batch_size": 32,
       "lr": 0.005, "backend": "gloo", "image": "123.dkr.ecr.us-west-2.amazonaws.com/ddp:cpu", "job_name": "run-7"}
K8S = ["components", "comp-condition-1", "dag", "tasks", "pytorch-operator-training-job"]
SM = ["components", "comp-condition-2", "dag", "tasks", "sagemaker-training-job"]
OLD = ("2.0", "2.5", "2.16")
OUT = tempfile.mkdtemp(prefix="kfp-outputs-")   # one place for the tasks' output files: same paths every plan
atexit.register(shutil.rmtree, OUT, True)


def at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def plan(runtime, version="2.16", spec=SPEC, seed=None, **extra):
    backend = kfp_backend.Backend(version, seed)
    return pr.plan(spec, backend.root_inputs(spec, dict(RUN, training_runtime=runtime, **extra)), backend, OUT)


def launcher(runs):
    return kfp_components.launch_pytorchjob(runs[-1].argv)


def request(runs):
    return kfp_components.sagemaker_training(runs[-1].argv)


class EveryVersion(unittest.TestCase):
    def test_each_runtime_runs_its_branch_only(self):
        for v in kfp_backend.VERSIONS:
            self.assertEqual([r.path for r in plan("kubernetes", v)],
                             ["root/condition-1/compose-pytorchjob-specs", "root/condition-1/pytorch-operator-training-job"])
            self.assertEqual([r.path for r in plan("sagemaker", v)],
                             ["root/condition-2/compose-sagemaker-inputs", "root/condition-2/sagemaker-training-job"])
            for other in ("local", "Kubernetes", "", "sagemaker "):
                self.assertEqual(plan(other, v), [], other)

    def test_command_lines_do_not_depend_on_the_map_order(self):
        for v in kfp_backend.VERSIONS:
            for runtime in ("kubernetes", "sagemaker"):
                argvs = {tuple(tuple(r.argv) for r in plan(runtime, v, seed=s)) for s in range(4)}
                self.assertEqual(len(argvs), 1, f"{v} {runtime}: {len(argvs)} different command lines")
                self.assertNotIn("{{$", repr(argvs), f"{v} {runtime}: a placeholder reached a program")

    def test_pytorchjob(self):
        for v in kfp_backend.VERSIONS:
            job, settings = launcher(plan("kubernetes", v, namespace="team-a"))
            self.assertEqual(k8s_schema.validate(job), [])
            self.assertEqual((job["metadata"]["name"], job["metadata"]["namespace"]), ("run-7", "team-a"))
            self.assertFalse(settings["delete_after_done"])
            self.assertEqual(settings["pruned"], {"cleanPodPolicy": "Running"})
            specs = job["spec"]["pytorchReplicaSpecs"]
            self.assertEqual((specs["Master"]["replicas"], specs["Worker"]["replicas"]), (1, 2))
            for rs in specs.values():
                self.assertEqual(rs["restartPolicy"], "ExitCode")
                self.assertEqual(rs["template"]["metadata"]["labels"]["app.kubernetes.io/instance"], "run-7")
                c = rs["template"]["spec"]["containers"][0]
                self.assertEqual(c["image"], RUN["image"])
                self.assertEqual(rs["template"]["spec"]["initContainers"][0]["image"], RUN["image"])
                self.assertEqual(c["command"], ["train_cifar10"])
                a = c["args"]
                flags = {a[i]: a[i + 1] for i in range(0, len(a) - 1) if a[i].startswith("--")}
                self.assertEqual((flags["--epochs"], flags["--batch-size"], flags["--lr"], flags["--backend"]),
                                 ("3", "32", "0.005", "gloo"))

    def test_same_container_as_the_base_manifest_but_the_parameters(self):
        with open(os.path.join(REPO, "k8s", "base", "pytorchjob-cifar10.yaml"), encoding="utf-8") as f:
            base = yaml.safe_load(f)
        job, _ = launcher(plan("kubernetes", "2.17", epochs=10, batch_size=64, lr=0.01, image="ddp", job_name="cifar10"))
        for rtype in ("Master", "Worker"):
            self.assertEqual(job["spec"]["pytorchReplicaSpecs"][rtype], base["spec"]["pytorchReplicaSpecs"][rtype])

    def test_sagemaker_request(self):
        for v in kfp_backend.VERSIONS:
            req = request(plan("sagemaker", v, instance_count=3, region="eu-west-1"))
            sagemaker.validate(req)
            self.assertEqual(req["TrainingJobName"], "run-7")
            self.assertEqual(req["AlgorithmSpecification"]["TrainingImage"], RUN["image"])
            self.assertEqual(req["AlgorithmSpecification"]["TrainingInputMode"], "File")
            self.assertEqual(req["HyperParameters"], {"backend": "gloo", "batch-size": "32", "epochs": "3",
                                                      "lr": "0.005", "model-type": "custom"})
            self.assertEqual(req["ResourceConfig"], {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 3,
                                                     "VolumeSizeInGB": 50, "VolumeKmsKeyId": ""})
            self.assertEqual(req["StoppingCondition"], {"MaxRuntimeInSeconds": 86400})
            self.assertTrue(req["EnableNetworkIsolation"])
            self.assertFalse(req["EnableManagedSpotTraining"])
            self.assertEqual(req["OutputDataConfig"]["S3OutputPath"], "s3://ddp-bucket/jobs")
            self.assertEqual(req["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"],
                             "s3://ddp-bucket/datasets/cifar10")
            self.assertEqual(req["RoleArn"], RUN["role"])
            names = [m["Name"] for m in req["AlgorithmSpecification"]["MetricDefinitions"]]
            self.assertIn("validation:accuracy", names)

    def test_sagemaker_knobs(self):
        req = request(plan("sagemaker", "2.17", spot_instance=True, max_run_time=3600, max_wait_time=7200,
                           volume_size=100, network_isolation=False))
        sagemaker.validate(req)
        self.assertTrue(req["EnableManagedSpotTraining"])
        self.assertEqual(req["StoppingCondition"], {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200})
        self.assertEqual(req["CheckpointConfig"], {"S3Uri": "s3://ddp-bucket/checkpoints/run-7",
                                                   "LocalPath": "/opt/ml/checkpoints"})
        self.assertEqual(req["ResourceConfig"]["VolumeSizeInGB"], 100)
        self.assertFalse(req["EnableNetworkIsolation"])
        with self.assertRaisesRegex(kfp_components.ComponentExit, "Max wait time must be greater"):
            request(plan("sagemaker", "2.17", spot_instance=True, max_run_time=3600, max_wait_time=60))


    def test_fastfile_and_file_system_channels(self):
        req = request(plan("sagemaker", "2.0", input_mode="FastFile"))
        sagemaker.validate(req)
        self.assertEqual(req["InputDataConfig"][0]["InputMode"], "FastFile")
        self.assertEqual(req["AlgorithmSpecification"]["TrainingInputMode"], "File")
        fsx = dict(data_source="fsx", file_system_id="fs-0123456789abcdef0", file_system_path="/fsx-mount/cifar10")
        req = request(plan("sagemaker", "2.17", vpc_subnets="subnet-1,subnet-2", vpc_security_group_ids="sg-1", **fsx))
        sagemaker.validate(req)
        self.assertEqual(req["InputDataConfig"][0]["DataSource"], {"FileSystemDataSource": {
            "FileSystemId": "fs-0123456789abcdef0", "FileSystemType": "FSxLustre", "FileSystemAccessMode": "ro",
            "DirectoryPath": "/fsx-mount/cifar10"}})
        self.assertEqual(req["VpcConfig"], {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-1", "subnet-2"]})
        with self.assertRaisesRegex(sagemaker.RequestError, "needs VpcConfig"):
            sagemaker.validate(request(plan("sagemaker", "2.17", **fsx)))

    def test_docs_estimator_example_has_the_pipeline_s_metric_definitions(self):
        text = open(os.path.join(REPO, "docs", "KUBEFLOW.md"), encoding="utf-8").read()
        blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "metric_definitions = [" in b]
        self.assertEqual(len(blocks), 1, "one estimator example with metric_definitions in docs/KUBEFLOW.md")
        assigned = [n.value for n in ast.parse(blocks[0]).body if isinstance(n, ast.Assign)
                    and getattr(n.targets[0], "id", "") == "metric_definitions"]
        self.assertEqual(ast.literal_eval(assigned[0]),
                         [{"Name": k, "Regex": v} for k, v in hybrid_training.METRIC_DEFINITIONS.items()])


class PlantedDefects(unittest.TestCase):
    """Each defect the pipeline had, planted back: fails where the released backends fail it."""

    def test_if_present_argument(self):
        spec = copy.deepcopy(SPEC)
        comp = spec["components"]["comp-pytorch-operator-training-job"]
        comp["inputDefinitions"]["parameters"]["backoff_limit"] = {"isOptional": True, "parameterType": "NUMBER_INTEGER"}
        spec["deploymentSpec"]["executors"]["exec-pytorch-operator-training-job"]["container"]["args"].append(
            '{"IfPresent": {"InputName": "backoff_limit", "Then": ["--backoffLimit", '
            '"{{$.inputs.parameters[\'backoff_limit\']}}"]}}')
        for v in OLD:
            with self.assertRaisesRegex(kfp_components.ComponentExit, 'unrecognized arguments: {"IfPresent"') as cm:
                launcher(plan("kubernetes", v, spec))
            self.assertEqual(cm.exception.exit_code, 2)
        launcher(plan("kubernetes", "2.17", spec))   # 2.17.0's driver drops the absent input's clause

    def test_placeholder_nested_in_a_constant(self):
        spec = copy.deepcopy(SPEC)
        given = at(spec, SM + ["inputs", "parameters"])
        given["model_artifact_path"] = {"runtimeValue": {
            "constant": "s3://{{$.inputs.parameters['pipelinechannel--bucket']}}/jobs"}}
        given["pipelinechannel--bucket"] = {"componentInputParameter": "pipelinechannel--bucket"}
        for v in OLD:
            with self.assertRaisesRegex(kfp_backend.KfpError, "Go map order"):
                plan("sagemaker", v, spec)
            paths = {request(plan("sagemaker", v, spec, seed=s))["OutputDataConfig"]["S3OutputPath"] for s in range(6)}
            self.assertEqual(paths, {"s3://ddp-bucket/jobs", "s3://{{$.inputs.parameters['pipelinechannel--bucket']}}/jobs"},
                             f"{v}: the literal placeholder in some map orders, the value in others")
        self.assertEqual(request(plan("sagemaker", "2.17", spec))["OutputDataConfig"]["S3OutputPath"],
                         "s3://ddp-bucket/jobs")

    def test_input_left_to_its_default(self):
        spec = copy.deepcopy(SPEC)
        del at(spec, K8S + ["inputs", "parameters"])["version"]
        for v in OLD:
            self.assertEqual(launcher(plan("kubernetes", v, spec))[0]["apiVersion"], "kubeflow.org/v1")
        with self.assertRaisesRegex(kfp_backend.KfpError, 'parameter "version" not found in executor input'):
            plan("kubernetes", "2.17", spec)


class Values(unittest.TestCase):
    def test_numbers_as_each_side_writes_them(self):
        self.assertEqual([kfp_backend.launcher_text(v) for v in (10.0, 0.01, 1e-05, True, "x", {"a": 2.0, "b": "<"})],
                         ["10", "0.01", "0.00001", "true", "x", '{"a":2,"b":"\\u003c"}'])
        self.assertEqual([kfp_backend.driver_text(v) for v in (10.0, 0.01, 1e-05, 1234567.5)],
                         ["10", "0.01", "1e-05", "1.2345675e+06"])

    def test_lr_reaches_the_trainer_in_the_driver_s_form_on_2_17(self):
        for v, text in (("2.16", "0.00001"), ("2.17", "1e-05")):
            job, _ = launcher(plan("kubernetes", v, lr=1e-05))
            a = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["args"]
            self.assertEqual(a[a.index("--lr") + 1], text, v)


class BadValues(unittest.TestCase):
    def test_root_inputs(self):
        backend = kfp_backend.Backend("2.16")
        for bad, text in [({"epochs": 1.5}, "not a NUMBER_INTEGER"), ({"epoch": 1}, "'epoch' does not exist"),
                          ({"training_runtime": 1}, "not a STRING"), ({"lr": "fast"}, "not a NUMBER_DOUBLE")]:
            with self.assertRaises(kfp_backend.PipelineError) as cm:
                backend.root_inputs(SPEC, bad)
            self.assertIn(text, str(cm.exception))

    def test_compose_steps_refuse_bad_values_with_exit_2(self):
        for runtime, extra, text in [("sagemaker", {"bucket": ""}, "--bucket '' is not an S3 bucket name"),
                                     ("sagemaker", {"data_source": "efs"}, "needs --file-system-id"),
                                     ("sagemaker", {"input_mode": "Pipe"}, "--input-mode 'Pipe': File or FastFile"),
                                     ("kubernetes", {"job_name": "Run 7"}, "--job-name 'Run 7' is not a valid label"),
                                     ("kubernetes", {"backend": "mpi"}, "--backend 'mpi'")]:
            with self.assertRaises(kfp_backend.KfpError) as cm:
                plan(runtime, "2.16", **extra)
            self.assertEqual(cm.exception.exit_code, 2, str(cm.exception))
            self.assertIn(text, str(cm.exception))

    def test_condition_outside_the_subset_is_an_error(self):
        spec = copy.deepcopy(SPEC)
        spec["root"]["dag"]["tasks"]["condition-1"]["triggerPolicy"]["condition"] = (
            "inputs.parameter_values['pipelinechannel--training_runtime'].startsWith('k')")
        with self.assertRaisesRegex(kfp_backend.PipelineError, "triggerPolicy.condition"):
            plan("kubernetes", spec=spec)

    def test_launcher_refuses_what_its_argparse_refuses(self):
        argv = kfp_components.LAUNCHER_COMMAND + ["--name", "x", "--jobTimeoutMinutes", "soon"]
        with self.assertRaisesRegex(kfp_components.ComponentExit, "argument --jobTimeoutMinutes: invalid int value"):
            kfp_components.launch_pytorchjob(argv)


if __name__ == "__main__":
    unittest.main(verbosity=1)
