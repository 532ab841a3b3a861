"""ddp-plot on made-up inputs: each class of bad input is exit 2 with a message naming the file and
line or record, never a traceback; a last line or record cut short (a killed writer) is a warning
and the rest is plotted; records a resumed run wrote again are drawn once, with the later values;
a Python without matplotlib gets exit 3 naming the package.

    python3 inputs_test.py --plot tools/ddp_plot/ddp-plot
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import event_bytes  # noqa: E402
import picture  # noqa: E402

PLOT = None


def train(step, loss, epoch=1, rate=1000.0):
    return {"type": "train", "step": step, "epoch": epoch, "train_loss": loss, "images_per_sec": rate}


def evaluation(step, epoch, loss, accuracy):
    return {"type": "eval", "step": step, "epoch": epoch, "eval_loss": loss, "accuracy": accuracy}


class PlotCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ddp-plot-test-")
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write(self, name, data):
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def jsonl(self, name, records, tail=""):
        return self.write(name, "".join(json.dumps(r) + "\n" for r in records) + tail)

    def plot(self, *args):
        out = self.path("out/curves")
        p = subprocess.run([PLOT, *args, "--out", out], capture_output=True, text=True, timeout=120)
        self.assertNotIn("Traceback", p.stderr)
        return p, out

    def assertBadInput(self, args, *needles):
        p, out = self.plot(*args)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertTrue(p.stderr.splitlines()[-1].startswith("ddp-plot: error: "), p.stderr)
        for needle in needles:
            self.assertIn(needle, p.stderr)
        self.assertFalse(os.path.exists(out + ".png"), "a picture despite the error")
        return p.stderr

    def assertPlotted(self, args):
        p, out = self.plot(*args)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), [out + ".png", out + ".svg"])
        return p, picture.Svg(out + ".svg")


class BadInput(PlotCase):
    def test_missing_file(self):
        missing = self.path("nowhere/metrics.jsonl")
        self.assertBadInput([missing], missing, "No such file")

    def test_line_not_json(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3)], tail='{"type":"train",\n' + json.dumps(train(4, 2.2)) + "\n")
        self.assertBadInput([path], path + ":2: not JSON")

    def test_line_not_an_object(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3), [1, 2]])
        self.assertBadInput([path], path + ":2: a JSON list, not an object")

    def test_record_without_step(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3), {"type": "eval", "step": "10", "eval_loss": 1.0}])
        self.assertBadInput([path], path + ":2: \"step\" of a \"eval\" record must be a non-negative integer, found \"10\"")

    def test_value_not_a_number(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3), train(4, "low")])
        self.assertBadInput([path], path + ":2: \"train_loss\" is \"low\", not a number")

    def test_nothing_to_plot(self):
        summary_only = self.jsonl("summary.jsonl", [{"type": "summary", "steps": 10, "accuracy": 0.5}])
        self.assertBadInput([summary_only], summary_only + ": no plottable records")
        empty = self.write("empty.jsonl", "")
        self.assertBadInput([empty], empty + ": no plottable records")

    def test_one_bad_run_of_several(self):
        good = self.jsonl("good.jsonl", [train(2, 2.3), train(4, 2.2)])
        bad = self.jsonl("bad.jsonl", [{"type": "summary"}])
        self.assertBadInput([good, bad], bad + ": no plottable records")

    def test_damaged_event_record(self):
        data = bytearray(event_bytes.event_file([event_bytes.file_version(), event_bytes.scalars(2, {"train/loss": 2.3}),
                                                 event_bytes.scalars(4, {"train/loss": 2.2})]))
        third = len(event_bytes.frame(event_bytes.file_version())) + len(event_bytes.frame(event_bytes.scalars(2, {"train/loss": 2.3})))
        data[third + 20] ^= 0x01  # a bit of the third record's data
        path = self.write("tb/events.out.tfevents.1.host.1", bytes(data))
        self.assertBadInput([path], path + ": record 3 at offset %d: its data fails its CRC32C" % third)
        self.assertBadInput([os.path.dirname(path)], path + ": record 3")

    def test_damaged_event_length(self):
        data = bytearray(event_bytes.event_file([event_bytes.file_version(), event_bytes.scalars(2, {"train/loss": 2.3})]))
        data[0] ^= 0x40
        path = self.write("events.out.tfevents.1.host.1", bytes(data))
        self.assertBadInput([path], path + ": record 1 at offset 0: its length fails its CRC32C")

    def test_event_record_not_an_event(self):
        # CRCs right, the data no protobuf message: a field with wire type 7.
        path = self.write("events.out.tfevents.1.host.1", event_bytes.event_file([event_bytes.file_version(), b"\x0f\x00"]))
        self.assertBadInput([path], path + ": record 2 at offset", "is no Event", "wire type 7")

    def test_event_file_cut_before_any_scalar(self):
        whole = event_bytes.event_file([event_bytes.file_version(), event_bytes.scalars(2, {"train/loss": 2.3})])
        cut = len(event_bytes.frame(event_bytes.file_version())) + 9
        path = self.write("events.out.tfevents.1.host.1", whole[:cut])
        stderr = self.assertBadInput([path], path + ": no plottable records")
        self.assertIn("warning: %s: the last record is cut off (9 bytes of a record header" % path, stderr)

    def test_folder_without_event_files(self):
        folder = self.path("tb")
        os.makedirs(folder)
        self.assertBadInput([folder], folder + ": a folder without events.out.tfevents.* files")

    def test_label_count(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3), train(4, 2.2)])
        p, _ = self.plot(path, "--label", "a", "--label", "b")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--label given 2 times for 1 inputs", p.stderr)


class CutShort(PlotCase):
    """What a writer killed in the middle of a write leaves: warned about, the rest plotted."""

    def test_jsonl_last_line_cut(self):
        records = [train(2, 2.3), train(4, 2.2), train(6, 2.1)]
        path = self.jsonl("m.jsonl", records, tail='{"type":"train","step":8,"tra')
        p, svg = self.assertPlotted([path])
        self.assertIn("warning: %s:4: the last line is cut off" % path, p.stderr)
        points = svg.line_data("loss", "line-train_loss-0")
        self.assertEqual([round(x) for x, _ in points], [2, 4, 6])

    def test_event_file_last_record_cut(self):
        events = [event_bytes.file_version(), event_bytes.session_start(1)]
        events += [event_bytes.scalars(s, {"train/loss": 3.0 - s / 10}) for s in (2, 4, 6, 8)]
        whole = event_bytes.event_file(events)
        path = self.write("tb/events.out.tfevents.1.host.1", whole[:-5])
        p, svg = self.assertPlotted([os.path.dirname(path)])
        self.assertIn("warning: %s: the last record is cut off" % path, p.stderr)
        self.assertIn("(record 6)", p.stderr)
        points = svg.line_data("loss", "line-train_loss-0")
        self.assertEqual([round(x) for x, _ in points], [2, 4, 6])


class Resumed(PlotCase):
    """A job killed after its checkpoint at step 4 logged steps 6 and 8, then resumed from 4 and
    logged 6, 8 and 10 again with other values: each step once, the resumed values."""

    def test_metrics_file(self):
        first = [train(s, 2.0) for s in (2, 4, 6, 8)]
        second = [train(s, 1.0) for s in (6, 8, 10)]
        path = self.jsonl("m.jsonl", first + second)
        _, svg = self.assertPlotted([path])
        points = svg.line_data("loss", "line-train_loss-0")
        self.assertEqual([round(x) for x, _ in points], [2, 4, 6, 8, 10])
        self.assertEqual([round(y, 3) for _, y in points], [2.0, 2.0, 1.0, 1.0, 1.0])

    def test_event_folder(self):
        # Attempt A logged 2..8, resumed attempt B starts (START at 5) and logs 6 and 10 only: A's 8
        # is an orphan too, dropped by the START rule though B never logs step 8.
        a = [event_bytes.file_version(), event_bytes.session_start(1)]
        a += [event_bytes.scalars(s, {"train/loss": 2.0}) for s in (2, 4, 6, 8)]
        b = [event_bytes.file_version(), event_bytes.session_start(5)]
        b += [event_bytes.scalars(s, {"train/loss": 1.0}) for s in (6, 10)]
        self.write("tb/events.out.tfevents.1.host.1", event_bytes.event_file(a))
        self.write("tb/events.out.tfevents.2.host.2", event_bytes.event_file(b))
        _, svg = self.assertPlotted([self.path("tb")])
        points = svg.line_data("loss", "line-train_loss-0")
        self.assertEqual([round(x) for x, _ in points], [2, 4, 6, 10])
        self.assertEqual([round(y, 3) for _, y in points], [2.0, 2.0, 1.0, 1.0])


class WithoutMatplotlib(PlotCase):
    """A Python without matplotlib (the ddp-tools package only recommends it): --help works, bad input
    is still exit 2, good input is exit 3 naming the package to install, and nothing is written.
    A matplotlib that cannot be imported is put first on PYTHONPATH."""

    def setUp(self):
        super().setUp()
        self.write("shadow/matplotlib/__init__.py", "raise ImportError('no matplotlib in this test')\n")
        self.env = dict(os.environ, PYTHONPATH=self.path("shadow"))

    def run_plot(self, *args):
        p = subprocess.run([PLOT, *args], capture_output=True, text=True, timeout=120, env=self.env)
        self.assertNotIn("Traceback", p.stderr)
        return p

    def test_help(self):
        p = self.run_plot("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("exit code 3", p.stdout)

    def test_bad_input_is_still_exit_2(self):
        p = self.run_plot(self.path("missing.jsonl"))
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_good_input_names_the_package(self):
        path = self.jsonl("m.jsonl", [train(2, 2.3), train(4, 2.2)])
        out = self.path("out/curves")
        p = self.run_plot(path, "--out", out)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("ddp-plot: error: drawing needs matplotlib", p.stderr)
        self.assertIn("apt-get install python3-matplotlib", p.stderr)
        self.assertFalse(os.path.exists(self.path("out")), "the --out folder was made though nothing is drawn")


class Crc(unittest.TestCase):
    def test_known_answer(self):
        # RFC 3720 B.4's CRC32C check value; our bitwise one and ddp-plot's table one agree.
        sys.path.insert(0, os.path.dirname(os.path.realpath(PLOT)))
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        from ddp_plot import crc32c
        self.assertEqual(event_bytes.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(crc32c.crc32c(b"123456789"), 0xE3069283)
        for data in (b"", b"a", bytes(range(256)) * 3):
            self.assertEqual(crc32c.masked_crc32c(data), event_bytes.masked(data))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--plot", required=True, help="the ddp-plot program")
    args, rest = parser.parse_known_args()
    PLOT = os.path.abspath(args.plot)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
