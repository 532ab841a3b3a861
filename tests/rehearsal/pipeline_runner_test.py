#!/usr/bin/python3
"""pipeline_runner.py with the released backends' rules (kfp_backend.py) on the compiled hybrid
pipeline, without root or binaries: the committed pipeline fails on each released backend the way
that backend fails it."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import kfp_backend  # noqa: E402
import kfp_components  # noqa: E402
import pipeline_runner as pr  # noqa: E402

SPEC = pr.load(os.path.join(REPO, "pipelines", "hybrid-training.yaml"))


def plan(version, runtime, seed=None):
    b = kfp_backend.Backend(version, seed)
    with tempfile.TemporaryDirectory() as out:
        return pr.plan(SPEC, b.root_inputs(SPEC, {"training_runtime": runtime, "bucket": "b"}), b, out)


class TodaysPipeline(unittest.TestCase):
    def test_nested_placeholders_are_order_dependent_up_to_2_16(self):
        for v in ("2.0", "2.5", "2.16"):
            with self.assertRaisesRegex(kfp_backend.KfpError, "Go map order"):
                plan(v, "kubernetes")

    def test_if_present_reaches_the_launcher_up_to_2_16(self):
        with self.assertRaises(kfp_components.ComponentExit) as cm:
            kfp_components.launch_pytorchjob(plan("2.16", "kubernetes", seed=2)[0].argv)
        self.assertEqual(cm.exception.exit_code, 2)

    def test_defaults_missing_on_2_17(self):
        with self.assertRaisesRegex(kfp_backend.KfpError, "parameter 'version' not found in executor input"):
            plan("2.17", "kubernetes")


if __name__ == "__main__":
    unittest.main(verbosity=1)
