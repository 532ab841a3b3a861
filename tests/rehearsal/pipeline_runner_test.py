#!/usr/bin/python3
"""pipeline_runner.py on the compiled hybrid pipeline, without root or binaries: which branch each
training_runtime runs, the command lines the two components get, the PyTorchJob the launcher
creates (valid for the v1.9.4 CRD) and the CreateTrainingJob request the SageMaker component sends
(valid for sagemaker.py), and the errors for bad run-time values and conditions outside the subset."""
import copy
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "k8s"))
import k8s_schema  # noqa: E402
import pipeline_runner as pr  # noqa: E402
import sagemaker  # noqa: E402

SPEC = pr.load(os.path.join(REPO, "pipelines", "hybrid-training.yaml"))
RUN = {"bucket": "ddp-bucket", "role": "arn:aws:iam::000000000000:role/ddp", "epochs": 3, "batch_size": 32,
       "lr": 0.005, "backend": "gloo", "image": "123.dkr.ecr.us-west-2.amazonaws.com/ddp:cpu", "job_name": "run-7"}


def plan(runtime, spec=SPEC, **extra):
    return pr.plan(spec, pr.root_inputs(spec, dict(RUN, training_runtime=runtime, **extra)))


class Branches(unittest.TestCase):
    def test_each_runtime_runs_its_branch_only(self):
        self.assertEqual([r.path for r in plan("kubernetes")], ["root/condition-1/pytorch-operator-training-job"])
        self.assertEqual([r.path for r in plan("sagemaker")], ["root/condition-2/sagemaker-training-job"])
        for other in ("local", "Kubernetes", "", "sagemaker "):
            self.assertEqual(plan(other), [], other)

    def test_default_runtime_is_kubernetes(self):
        runs = pr.plan(SPEC, pr.root_inputs(SPEC, {}))
        self.assertEqual([r.component_name for r in runs], ["comp-pytorch-operator-training-job"])


class Launcher(unittest.TestCase):
    def test_pytorchjob(self):
        job, settings = pr.launcher_pytorchjob(plan("kubernetes", namespace="team-a")[0])
        self.assertEqual(k8s_schema.validate(job), [])
        self.assertEqual((job["metadata"]["name"], job["metadata"]["namespace"]), ("run-7", "team-a"))
        self.assertFalse(settings["delete_after_done"])
        self.assertEqual(settings["pruned"], {"cleanPodPolicy": "Running"})
        specs = job["spec"]["pytorchReplicaSpecs"]
        self.assertEqual((specs["Master"]["replicas"], specs["Worker"]["replicas"]), (1, 2))
        for rs in specs.values():
            self.assertEqual(rs["restartPolicy"], "ExitCode")
            c = rs["template"]["spec"]["containers"][0]
            self.assertEqual(c["image"], RUN["image"])
            self.assertEqual(c["command"], ["train_cifar10"])
            a = c["args"]
            flags = {a[i]: a[i + 1] for i in range(0, len(a) - 1) if a[i].startswith("--")}
            self.assertEqual((flags["--epochs"], flags["--batch-size"], flags["--lr"], flags["--backend"]),
                             ("3", "32", "0.005", "gloo"))

    def test_same_container_as_the_base_manifest_but_the_parameters(self):
        import yaml
        with open(os.path.join(REPO, "k8s", "base", "pytorchjob-cifar10.yaml"), encoding="utf-8") as f:
            base = yaml.safe_load(f)
        job, _ = pr.launcher_pytorchjob(plan("kubernetes", epochs=10, batch_size=64, lr=0.01, image="ddp")[0])
        for rtype in ("Master", "Worker"):
            self.assertEqual(job["spec"]["pytorchReplicaSpecs"][rtype], base["spec"]["pytorchReplicaSpecs"][rtype])


class SageMaker(unittest.TestCase):
    def test_request(self):
        req = pr.sagemaker_request(plan("sagemaker", instance_count=3, region="eu-west-1")[0])
        sagemaker.validate(req)
        self.assertEqual(req["TrainingJobName"], "run-7")
        self.assertEqual(req["AlgorithmSpecification"], {"TrainingImage": RUN["image"], "TrainingInputMode": "File"})
        self.assertEqual(req["HyperParameters"], {"backend": "gloo", "batch-size": "32", "epochs": "3", "lr": "0.005",
                                                  "model-type": "custom"})
        self.assertEqual(req["ResourceConfig"]["InstanceCount"], 3)
        self.assertEqual(req["ResourceConfig"]["InstanceType"], "ml.p3.2xlarge")
        self.assertEqual(req["OutputDataConfig"]["S3OutputPath"], "s3://ddp-bucket/jobs")
        self.assertEqual(req["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"],
                         "s3://ddp-bucket/datasets/cifar10")
        self.assertEqual(req["RoleArn"], RUN["role"])

    def test_empty_bucket_is_refused_by_the_api(self):
        req = pr.sagemaker_request(plan("sagemaker", bucket="")[0])
        with self.assertRaises(sagemaker.RequestError):
            sagemaker.validate(req)


class BadValues(unittest.TestCase):
    def test_root_inputs(self):
        for bad, text in [({"epochs": 1.5}, "not a NUMBER_INTEGER"), ({"epoch": 1}, "'epoch' does not exist"),
                          ({"training_runtime": 1}, "not a STRING"), ({"lr": "fast"}, "not a NUMBER_DOUBLE")]:
            with self.assertRaises(pr.PipelineError) as cm:
                pr.root_inputs(SPEC, bad)
            self.assertIn(text, str(cm.exception))

    def test_condition_outside_the_subset_is_an_error(self):
        spec = copy.deepcopy(SPEC)
        spec["root"]["dag"]["tasks"]["condition-1"]["triggerPolicy"]["condition"] = (
            "inputs.parameter_values['pipelinechannel--training_runtime'].startsWith('k')")
        with self.assertRaises(pr.PipelineError) as cm:
            plan("kubernetes", spec=spec)
        self.assertIn("triggerPolicy.condition", str(cm.exception))

    def test_format_value_as_the_launcher(self):
        self.assertEqual([pr.format_value(v) for v in (10.0, 0.01, 1e-05, True, "x", {"a": 2.0})],
                         ["10", "0.01", "0.00001", "true", "x", '{"a":2}'])


if __name__ == "__main__":
    unittest.main(verbosity=1)
