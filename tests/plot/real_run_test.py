"""ddp-plot on a real run: make_cifar10_synthetic writes a small set, ddprun trains 2 train_cifar10
ranks on it for 2 epochs with --metrics-file and --tensorboard-dir, and ddp-plot draws both. Checks:
the PNG has the size asked for and is a picture (many colours, not blank); the SVG's panels are the
run's (loss, accuracy, images/s; no AUC); every curve's points, read back through its axes' tick
labels, are the records' steps and values, the event file's and the metrics file's alike; the
accuracy panel of a metrics file alone is drawn against the epoch.

    python3 real_run_test.py --plot P --ddprun D --train T --make-data M
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import picture  # noqa: E402

ARGS = None
SIZE = (1500, 420)


class RealRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ddp-plot-run-")
        work = cls.tmp.name
        cls.metrics = os.path.join(work, "run", "metrics.jsonl")
        cls.tb = os.path.join(work, "run", "tb")
        subprocess.run([ARGS.make_data, "--out", os.path.join(work, "data"), "--train", "800", "--test", "200",
                        "--layout", "bin", "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
        # 800 images / (2 ranks x 20) = 20 steps an epoch, a train record every 4: 10 train and 2 eval records.
        log = os.path.join(work, "train.log")
        with open(log, "w") as out:
            rc = subprocess.run([ARGS.ddprun, "--standalone", "--nproc-per-node", "2", ARGS.train,
                                 "--data-dir", os.path.join(work, "data"), "--model-dir", os.path.join(work, "model"),
                                 "--epochs", "2", "--batch-size", "20", "--threads", "1", "--log-interval", "4",
                                 "--progress", "plain", "--metrics-file", cls.metrics, "--tensorboard-dir", cls.tb],
                                stdout=out, stderr=subprocess.STDOUT, timeout=240).returncode
        if rc != 0:
            with open(log) as f:
                raise AssertionError("training exited %d:\n%s" % (rc, f.read()[-4000:]))
        with open(cls.metrics) as f:
            records = [json.loads(line) for line in f]
        cls.train = [r for r in records if r["type"] == "train"]
        cls.eval = [r for r in records if r["type"] == "eval"]
        assert len(cls.train) >= 5 and len(cls.eval) == 2, records
        cls.out = os.path.join(work, "pictures", "curves")
        cls.plot = subprocess.run([ARGS.plot, cls.metrics, cls.tb, "--out", cls.out, "--size", "%dx%d" % SIZE],
                                  capture_output=True, text=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertEqual(self.plot.returncode, 0, self.plot.stderr)

    def test_prints_what_it_wrote(self):
        self.assertEqual(self.plot.stdout.split(), [self.out + ".png", self.out + ".svg"])
        # No warning of ours (matplotlib may say it builds its font cache on a fresh machine).
        self.assertNotIn("ddp-plot:", self.plot.stderr)

    def test_png_is_a_picture_of_the_size_asked(self):
        self.assertEqual(picture.png_size(self.out + ".png"), SIZE)
        colours, not_white = picture.png_variety(self.out + ".png")
        # Two runs' colours with anti-aliasing, black text and grey grid: hundreds; a blank page has 1.
        self.assertGreater(colours, 50)
        self.assertGreater(not_white, 0.02)

    def test_panels_are_the_runs(self):
        svg = picture.Svg(self.out + ".svg")
        self.assertEqual(svg.panels(), ["accuracy", "images_per_sec", "loss"])
        texts = svg.texts()
        for label in ("metrics.jsonl train", "metrics.jsonl eval", "tb train", "tb eval"):
            self.assertIn(label, texts)

    def assertCurve(self, svg, panel, gid, want_x, want_y):
        points = svg.line_data(panel, gid)
        self.assertEqual(len(points), len(want_x), "%s: %s" % (gid, points))
        x_span = max(want_x) - min(want_x) or 1
        y_span = max(want_y) - min(want_y) or abs(want_y[0]) or 1
        for (x, y), wx, wy in zip(points, want_x, want_y):
            self.assertAlmostEqual(x, wx, delta=0.005 * x_span, msg="%s x" % gid)
            # The curve's pixel, through the tick labels, within 0.5% of the values' spread (%.6g in the
            # metrics file, float32 in the event file: both far closer than that).
            self.assertAlmostEqual(y, wy, delta=0.005 * y_span, msg="%s y" % gid)

    def test_curves_are_the_records(self):
        svg = picture.Svg(self.out + ".svg")
        steps = [r["step"] for r in self.train]
        eval_steps = [r["step"] for r in self.eval]
        for run in (0, 1):  # 0: the metrics file, 1: the event files, the same numbers
            self.assertCurve(svg, "loss", "line-train_loss-%d" % run, steps, [r["train_loss"] for r in self.train])
            self.assertCurve(svg, "loss", "line-eval_loss-%d" % run, eval_steps, [r["eval_loss"] for r in self.eval])
            self.assertCurve(svg, "images_per_sec", "line-images_per_sec-%d" % run, steps,
                             [r["images_per_sec"] for r in self.train])
            # The event files know no epochs: with them in the picture, accuracy is drawn by step.
            self.assertCurve(svg, "accuracy", "line-accuracy-%d" % run, eval_steps, [r["accuracy"] for r in self.eval])

    def test_metrics_file_alone_draws_accuracy_by_epoch(self):
        out = os.path.join(self.tmp.name, "alone", "curves")
        p = subprocess.run([ARGS.plot, self.metrics, "--out", out, "--label", "cifar"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        svg = picture.Svg(out + ".svg")
        self.assertCurve(svg, "accuracy", "line-accuracy-0", [r["epoch"] for r in self.eval],
                         [r["accuracy"] for r in self.eval])
        self.assertIn("epoch", svg.texts())
        self.assertIn("cifar train", svg.texts())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for flag in ("--plot", "--ddprun", "--train", "--make-data"):
        parser.add_argument(flag, required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
