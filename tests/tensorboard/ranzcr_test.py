"""train_ranzcr --tensorboard-dir: a real run on a small synthetic set, its event file parsed with
TensorBoard's Event message (tfevents.py). Checked: the file's shape (file_version, START at step 1,
summaries in step order), the tags (train/loss, train/lr, train/images_per_sec, and epoch/<name> for
each name of the Katib line on stdout), train/loss equal to the --metrics-file train records, train/lr
positive, the epoch/ values equal to the Katib lines.

    ranzcr_test.py --train BIN --make-data BIN
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfevents  # noqa: E402
from resume_test import TRAIN_TAGS, check_file_shapes, close, f32, fail, katib_lines, last_metrics  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--make-data", required=True)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="tb-ranzcr-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        data, work = os.path.join(root, "data"), os.path.join(root, "run")
        os.makedirs(work)
        subprocess.run([args.make_data, "--out", data, "--images", "120", "--size", "64", "--patients", "40",
                        "--seed", "1", "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            env.pop(k, None)
        with open(os.path.join(work, "r.log"), "wb") as log:
            rc = subprocess.run([args.train, "--data-dir", data, "--image-size", "32", "--batch-size", "16",
                                 "--epochs", "2", "--workers", "1", "--threads", "1", "--progress", "plain",
                                 "--device", "cpu", "--log-interval", "2", "--model-dir", os.path.join(work, "model"),
                                 "--metrics-file", os.path.join(work, "metrics.jsonl"),
                                 "--tensorboard-dir", os.path.join(work, "tb")],
                                stdout=log, stderr=subprocess.STDOUT, env=env, timeout=600).returncode
        if rc != 0:
            fail("train_ranzcr exited %d:\n%s" % (rc, open(os.path.join(work, "r.log"), errors="replace").read()))
        tb = os.path.join(work, "tb")
        check_file_shapes(tb)
        if len(tfevents.event_files(tb)) != 1:
            fail("expected one event file, found %s" % tfevents.event_files(tb))
        view = tfevents.view_legacy(tb)
        katib = katib_lines(work, ["r"])
        tags = TRAIN_TAGS | {"epoch/" + n for values in katib.values() for n in values}
        if set(view) != tags or len(katib) != 2:
            fail("tags %s, expected %s (Katib lines: %s)" % (sorted(view), sorted(tags), katib))
        metrics = last_metrics(work)
        for step, value, _ in view["train/loss"]:
            if not close(value, f32(metrics[("train", step)]["train_loss"])):
                fail("train/loss step %d: %r, the metrics file says %r" % (step, value, metrics[("train", step)]["train_loss"]))
        if not all(v > 0 and math.isfinite(v) for _, v, _ in view["train/lr"]):
            fail("train/lr: %s" % view["train/lr"])
        for tag in tags - TRAIN_TAGS:
            for step, value, _ in view[tag]:
                want = katib[metrics[("eval", step)]["epoch"]][tag[len("epoch/"):]]
                if not want.matches(value):
                    fail("%s step %d: %r, the Katib line says %r" % (tag, step, value, want))
        print("OK: %s" % ", ".join("%s x%d" % (t, len(view[t])) for t in sorted(view)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
