#!/usr/bin/python3
"""Our trainers' real output, read the way Katib reads it (katib_collector.py: a reimplementation of
kubeflow/katib v0.19.0's file metrics collector, parseLogsInTextFormat / parseLogsInJsonFormat):

  - StdOut collector: each trainer runs as Katib's webhook wraps the primary container
    (sh -c "<argv> 1>metrics.log 2>&1"), alone and under `ddprun --nproc-per-node 2` (whose rank
    prefix must stay behind the timestamp); every metric of docs/KUBEFLOW.md's vocabulary that the
    trainer emits is observed once per epoch, with the value of the eval record in --metrics-file
    and a real timestamp (not Katib's zero time), and no other line yields an observation or would
    stop Katib's early-stopping reader;
  - File collector, format JSON: --katib-metrics-file gives the same observations, same timestamps.

  katib_output_test.py --build-dir build
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import katib_collector as katib  # noqa: E402

BUILD = None
EPOCHS = 2
# The vocabulary each trainer puts on its metric line (docs/KUBEFLOW.md "Katib").
CIFAR_METRICS = ["accuracy", "eval_loss", "images_per_sec", "epoch"]
RANZCR_METRICS = ["auc", "train_loss", "eval_loss", "lr", "images_per_sec", "epoch"]


def binary(rel):
    path = os.path.join(BUILD, rel)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"{path} is not built")
    return path


def utc(ts):
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))


class KatibReadsOurTrainers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ddp-katib-")
        cls.cifar = os.path.join(cls.tmp, "cifar")
        subprocess.run([binary("tools/make_cifar10_synthetic/make_cifar10_synthetic"), "--out", cls.cifar,
                        "--train", "400", "--test", "100", "--layout", "bin"], check=True, capture_output=True)
        cls.ranzcr = os.path.join(cls.tmp, "ranzcr")
        subprocess.run([binary("tools/make_ranzcr_synthetic/make_ranzcr_synthetic"), "--out", cls.ranzcr,
                        "--images", "96", "--size", "64", "--threads", "1"], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_wrapped(self, name, argv):
        """Runs `argv` as Katib's StdOut wrapper does; (metrics.log text, start, end, out dir)."""
        out = os.path.join(self.tmp, name)
        os.makedirs(out)
        log = os.path.join(out, "metrics.log")
        argv = argv + ["--metrics-file", os.path.join(out, "metrics.jsonl"),
                       "--katib-metrics-file", os.path.join(out, "katib.json"),
                       "--model-dir", os.path.join(out, "model"), "--backend", "gloo", "--device", "cpu"]
        env = dict(os.environ, DDP_LOG_LEVEL="info", OMP_NUM_THREADS="1")
        for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            env.pop(k, None)
        start = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        r = subprocess.run(["sh", "-c", katib.stdout_wrapper(argv, log)], env=env, timeout=300)
        end = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
        text = open(log, encoding="utf-8", errors="replace").read()
        self.assertEqual(r.returncode, 0, text[-3000:])
        return text, start, end, out

    def check(self, name, argv, metrics, ranks):
        text, start, end, out = self.run_wrapped(name, argv)
        evals = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if '"type":"eval"' in l]
        self.assertEqual([e["epoch"] for e in evals], list(range(1, EPOCHS + 1)))
        observed = katib.parse_text(text, metrics)
        for m in metrics:
            got = [(ts, v) for ts, n, v in observed if n == m]
            self.assertEqual(len(got), EPOCHS, f"{name}: {m}: {got}\n{text[-3000:]}")
            for (ts, value), record in zip(got, evals):
                self.assertNotEqual(ts, katib.ZERO_TIME, f"{name}: {m} has Katib's zero time")
                self.assertTrue(start <= utc(ts) <= end, f"{name}: {ts} outside the run [{start}, {end}]")
                want = record[m] if m != "epoch" else record["epoch"]
                self.assertAlmostEqual(float(value), want, delta=1e-5 * max(1.0, abs(want)) + 0.051 * (m == "images_per_sec"),
                                       msg=f"{name}: {m}")
        self.assertEqual(katib.early_stopping_failures(text, metrics), [], f"{name}: Katib's early-stopping reader would stop")
        # The metric lines as the console shows them: the timestamp first, the rank prefix behind it.
        lines = [l for l in text.split("\n") if " epoch=" in l and "[ddp" not in l]
        self.assertEqual(len(lines), EPOCHS, text[-3000:])
        for l in lines:
            self.assertTrue(katib.go_parse_rfc3339nano(l.split(" ", 1)[0]), l)
            self.assertEqual(l.split(" ")[1] == "[0]:", ranks > 1, l)
        # The File collector, format JSON, on --katib-metrics-file: the same observations.
        katib_file = open(os.path.join(out, "katib.json")).read()
        # (per line, Katib lists JSON metrics in the Experiment's order, TEXT ones in the line's)
        self.assertEqual(sorted(katib.parse_json(katib_file, metrics)), sorted(observed))
        return observed

    def cifar_argv(self):
        return [binary("apps/train_cifar10/train_cifar10"), "--data-dir", self.cifar, "--epochs", str(EPOCHS),
                "--batch-size", "50", "--log-interval", "2", "--lr", "0.05"]

    def ranzcr_argv(self):
        return [binary("apps/train_ranzcr/train_ranzcr"), "--data-dir", self.ranzcr, "--epochs", str(EPOCHS),
                "--image-size", "64", "--batch-size", "16", "--workers", "1", "--log-interval", "2"]

    def test_cifar10_alone(self):
        self.check("cifar-alone", self.cifar_argv(), CIFAR_METRICS, 1)

    def test_cifar10_under_ddprun(self):
        ddprun = [binary("apps/ddprun/ddprun"), "--standalone", "--nproc-per-node", "2"]
        self.check("cifar-ddprun", ddprun + self.cifar_argv(), CIFAR_METRICS, 2)

    def test_ranzcr_under_ddprun(self):
        ddprun = [binary("apps/ddprun/ddprun"), "--standalone", "--nproc-per-node", "2"]
        self.check("ranzcr-ddprun", ddprun + self.ranzcr_argv(), RANZCR_METRICS, 2)


class TheReimplementation(unittest.TestCase):
    """katib_collector.py against the cases of Katib's own tests (file-metricscollector_test.go)."""

    def test_text_lines(self):
        # "Positive case for logs in TEXT format" and "Invalid timestamp for logs in TEXT format"
        good = ("2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: 0.8078};{metricName: loss, metricValue: 0.5183}\n"
                "2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: 0.6752}\n"
                "2024-03-04T17:55:08Z INFO     {metricName: loss, metricValue: 0.3634}\n"
                "2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: 100}\n"
                "2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: 888.333}\n"
                "2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: -0.4759}\n"
                "{metricName: loss, metricValue: 0.8671}")
        kfp = ["{metricName: ([\\w|-]+), metricValue: ((-?\\d+)(\\.\\d+)?)}"]
        t = "2024-03-04T17:55:08Z"
        self.assertEqual(katib.parse_text(good, ["accuracy", "loss"], kfp), [
            (t, "accuracy", "0.8078"), (t, "loss", "0.5183"), (t, "accuracy", "0.6752"), (t, "loss", "0.3634"),
            (t, "accuracy", "100"), (t, "accuracy", "888.333"), (t, "accuracy", "-0.4759"),
            (katib.ZERO_TIME, "loss", "0.8671")])
        bad_time = ("2024-03-04T17:55:08Z INFO     {metricName: accuracy, metricValue: 0.6752}\n"
                    "invalid INFO     {metricName: loss, metricValue: 0.3634}")
        self.assertEqual(katib.parse_text(bad_time, ["accuracy", "loss"], kfp),
                         [(t, "accuracy", "0.6752"), (katib.ZERO_TIME, "loss", "0.3634")])
        # The default filter, and what a rank prefix in front of the timestamp costs.
        self.assertEqual(katib.parse_text(f"{t} accuracy=0.6 loss=.9 x=-7.53e-05\n[0]: {t} accuracy=0.7", ["accuracy", "loss"]),
                         [(t, "accuracy", "0.6"), (t, "loss", ".9"), (katib.ZERO_TIME, "accuracy", "0.7")])
        self.assertEqual(katib.parse_text("loss=1", ["accuracy", "loss"]), [(katib.ZERO_TIME, "accuracy", "unavailable")])
        self.assertEqual(katib.parse_text("accuracy=nan", ["accuracy"]), [(katib.ZERO_TIME, "accuracy", "")])
        self.assertEqual(katib.early_stopping_failures("x accuracy=nan\naccuracy=1 model=/m\naccuracy=2", ["accuracy"]),
                         ["x accuracy=nan", "accuracy=1 model=/m"])

    def test_json_lines(self):
        # "Positive case for logs in JSON format" and "Invalid timestamp for logs in JSON format"
        good = ('{"checkpoint_path": "", "global_step": "0", "loss": "0.22082142531871796", "timestamp": 1638422847.28721, "trial": "0"}\n'
                '{"acc": "0.9349666833877563", "checkpoint_path": "", "global_step": "0", "timestamp": 1638422847.287801, "trial": "0"}\n'
                '{"checkpoint_path": "", "global_step": "1", "loss": "0.1414974331855774", "timestamp": "2021-12-02T14:27:50.000035161Z", "trial": "0"}\n'
                '{"acc": "0.9586416482925415", "checkpoint_path": "", "global_step": "1", "timestamp": "2021-12-02T14:27:50.000037459Z", "trial": "0"}\n')
        self.assertEqual(katib.parse_json(good, ["acc", "loss"]), [
            ("2021-12-02T05:27:27.000028721Z", "loss", "0.22082142531871796"),
            ("2021-12-02T05:27:27.000287801Z", "acc", "0.9349666833877563"),
            ("2021-12-02T14:27:50.000035161Z", "loss", "0.1414974331855774"),
            ("2021-12-02T14:27:50.000037459Z", "acc", "0.9586416482925415")])
        bad_time = ('{"checkpoint_path": "", "global_step": "0", "loss": "0.22082142531871796", "timestamp": "invalid", "trial": "0"}\n'
                    '{"acc": "0.9349666833877563", "checkpoint_path": "", "global_step": "0", "timestamp": 1638422847, "trial": "0"}')
        self.assertEqual(katib.parse_json(bad_time, ["acc", "loss"]), [
            (katib.ZERO_TIME, "loss", "0.22082142531871796"), ("2021-12-02T05:27:27Z", "acc", "0.9349666833877563")])
        self.assertEqual(katib.parse_json('{"acc": 0.9, "timestamp": "2021-12-02T14:27:50Z"}', ["acc"]),
                         [(katib.ZERO_TIME, "acc", "unavailable")], "a number is not observed")
        with self.assertRaises(katib.JsonCollectionError):
            katib.parse_json('"checkpoint_path": "", "loss": "0.2"\n', ["loss"])

    def test_rfc3339(self):
        for ok in ("2026-12-01T23:16:11.123Z", "2026-12-01T23:16:11Z", "2024-02-29T00:00:00.123456789-07:00"):
            self.assertTrue(katib.go_parse_rfc3339nano(ok), ok)
        for bad in ("2026-12-01 23:16:11Z", "2023-02-29T00:00:00Z", "2026-12-01T23:16:11", "[0]:",
                    "2026-12-01T23:16:11.1234567890Z", "2026-12-01T24:00:00Z"):
            self.assertFalse(katib.go_parse_rfc3339nano(bad), bad)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    args, rest = ap.parse_known_args()
    BUILD = os.path.abspath(args.build_dir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
