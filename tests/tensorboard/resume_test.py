"""train_cifar10 --tensorboard-dir across a SIGKILL and a resume, with real processes.

Run A trains with checkpoints every 10 steps and TensorBoard records every 2 steps; it is frozen
(SIGSTOP) when its event file holds records after its newest checkpoint and killed (SIGKILL) there,
so those records are orphans. Run B resumes from the checkpoint (step S) and finishes. Run C trains
the same job without interruption in another folder: the reference.

Checked (docs/KUBEFLOW.md, "TensorBoard"):
  - a --tensorboard-dir that cannot be created is exit 2 with a message naming the flag;
  - every record of every file: both masked CRC32Cs, a tensorboard.Event (vendored proto) whose
    canonical encoding is the record; file_version "brain.Event:2" first, SessionLog START second;
  - B's file sorts after A's; B's START is at S+1; A holds scalars after S (the orphans);
  - what TensorBoard shows, by both of its readers' rules (tfevents.view_legacy / view_rust), is
    the same: each (tag, step) once, steps increasing, the steps <= S from A and the rest from B;
  - the tags: train/loss, train/lr, train/images_per_sec, and epoch/<name> for each name of the
    Katib metric line (read from the runs' stdout, so a renamed metric needs no edit here);
  - the values are those of the run that produced the final model: the last --metrics-file train
    record of each step, the last Katib line of each epoch, and equal to the uninterrupted run C's
    (training resumes bit-exactly).

    resume_test.py --train BIN --make-data BIN
"""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfevents  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, LOG_INTERVAL, CHECKPOINT_EVERY = 3, 40, 2, 10
TRAIN_TAGS = {"train/loss", "train/lr", "train/images_per_sec"}
# Throughput: timing, different in every run, so never compared across runs.
TIMING_TAGS = {"train/images_per_sec", "epoch/images_per_sec"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def train_cmd(args, work):
    return [args.train, "--data-dir", os.path.join(args.root, "data"), "--model-dir", os.path.join(work, "model"),
            "--epochs", str(EPOCHS), "--batch-size", "32", "--log-interval", str(LOG_INTERVAL), "--progress", "plain",
            "--device", "cpu", "--threads", "1", "--workers", "0", "--checkpoint-dir", os.path.join(work, "ckpt"),
            "--checkpoint-every", str(CHECKPOINT_EVERY), "--checkpoint-keep", "0",
            "--metrics-file", os.path.join(work, "metrics.jsonl"), "--tensorboard-dir", os.path.join(work, "tb")]


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        e.pop(k, None)
    return e


def newest_checkpoint(work):
    steps = [int(m.group(1)) for n in os.listdir(os.path.join(work, "ckpt")) if (m := re.match(r"ckpt-(\d+)\.ddpckpt$", n))] \
        if os.path.isdir(os.path.join(work, "ckpt")) else []
    return max(steps, default=-1)


def last_logged_step(work):
    tb = os.path.join(work, "tb")
    if not os.path.isdir(tb) or not tfevents.event_files(tb):
        return -1
    path = os.path.join(tb, tfevents.event_files(tb)[-1])
    steps = [ev.step for ev in tfevents.parse_events(path, allow_torn_tail=True) if ev.HasField("summary")]
    return max(steps, default=-1)


def run_a_until_orphans(args, work):
    """Run A, killed while its event file holds records after its newest checkpoint."""
    log = open(os.path.join(work, "a.log"), "wb")
    p = subprocess.Popen(train_cmd(args, work), stdout=log, stderr=subprocess.STDOUT, env=env())
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        if newest_checkpoint(work) >= 20 and last_logged_step(work) >= newest_checkpoint(work) + 2 * LOG_INTERVAL:
            os.kill(p.pid, signal.SIGSTOP)  # frozen: what is on disk now is what a SIGKILL leaves
            if last_logged_step(work) > newest_checkpoint(work):
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                return newest_checkpoint(work), last_logged_step(work)
            os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.002)
    p.kill()
    p.wait()
    fail("run A ended (%s) before it could be killed after a checkpoint; see %s/a.log" % (p.returncode, work))


def run_to_end(args, work, name):
    with open(os.path.join(work, name + ".log"), "wb") as log:
        rc = subprocess.run(train_cmd(args, work), stdout=log, stderr=subprocess.STDOUT, env=env(), timeout=300).returncode
    if rc != 0:
        fail("run %s exited %d; see %s/%s.log" % (name, rc, work, name))


def check_file_shapes(tb):
    pb = tfevents.event_module()
    for name in tfevents.event_files(tb):
        events = tfevents.parse_events(os.path.join(tb, name))
        if len(events) < 3 or events[0].WhichOneof("what") != "file_version" or events[0].file_version != "brain.Event:2":
            fail("%s: first record is not file_version brain.Event:2: %r" % (name, events[:1]))
        if events[1].WhichOneof("what") != "session_log" or events[1].session_log.status != pb.SessionLog.START:
            fail("%s: second record is not a SessionLog START" % name)
        steps = [ev.step for ev in events[2:]]
        if any(ev.WhichOneof("what") != "summary" for ev in events[2:]) or steps != sorted(steps):
            fail("%s: after the START, summaries in step order expected" % name)
        if any(s <= events[1].step - 1 for s in steps):
            fail("%s: a record at or before the resumed step %d" % (name, events[1].step - 1))


def check_unwritable_dir(args):
    """A folder that cannot be made is exit 2 naming the flag, before any training."""
    blocker = os.path.join(args.root, "a-file")
    open(blocker, "w").close()
    cmd = train_cmd(args, os.path.join(args.root, "unwritable"))
    cmd[cmd.index("--tensorboard-dir") + 1] = os.path.join(blocker, "tb")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env(), timeout=120)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 2 or "--tensorboard-dir " + os.path.join(blocker, "tb") not in out:
        fail("--tensorboard-dir under a file: exit %d, expected 2 and a message naming the flag:\n%s" % (p.returncode, out))


def last_metrics(work):
    """{(type, step): record} keeping each step's last record: the run that produced the model."""
    out = {}
    with open(os.path.join(work, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] in ("train", "eval"):
                out[(r["type"], r["step"])] = r
    return out


def katib_lines(work, names):
    """{epoch: {name: Printed}} from the Katib metric lines ("... epoch=N name=value ...") of the logs
    `names`, later lines (the resumed run) replacing earlier ones."""
    out = {}
    for name in names:
        with open(os.path.join(work, name + ".log"), errors="replace") as f:
            for line in f:
                pairs = dict(re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=(-?[0-9.eE+-]+|nan|inf)(?=\s|$)", line))
                if "epoch" in pairs and len(pairs) > 1:
                    epoch = int(pairs.pop("epoch"))
                    out[epoch] = {k: Printed(v) for k, v in pairs.items()}
    return out


class Printed(float):
    """A number as the metric line printed it: its value, and how far the unrounded value may be from
    it (half a unit of the last printed decimal: "85.5" is 85.45..85.55, "0.512000" is +-5e-7)."""
    def __new__(cls, text):
        self = super().__new__(cls, text)
        decimals = len(text.split(".", 1)[1].lower().split("e")[0]) if "." in text else 0
        self.tolerance = 0.5 * 10.0 ** -decimals
        return self

    def matches(self, value):
        return abs(value - self) <= self.tolerance + 1e-6 * abs(self)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def close(a, b):
    return abs(a - b) <= 1e-5 * max(1.0, abs(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--make-data", required=True)
    args = ap.parse_args()
    args.root = tempfile.mkdtemp(prefix="tb-resume-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        subprocess.run([args.make_data, "--out", os.path.join(args.root, "data"), "--train", str(32 * STEPS_PER_EPOCH),
                        "--test", "200", "--seed", "3", "--layout", "bin"], check=True, stdout=subprocess.DEVNULL)
        check_unwritable_dir(args)
        work, ref = os.path.join(args.root, "resumed"), os.path.join(args.root, "reference")
        os.makedirs(work)
        os.makedirs(ref)
        ckpt, killed_at = run_a_until_orphans(args, work)
        print("run A: SIGKILL with the newest checkpoint at step %d and records up to step %d" % (ckpt, killed_at))
        run_to_end(args, work, "b")
        run_to_end(args, ref, "c")
        tb = os.path.join(work, "tb")
        files = tfevents.event_files(tb)
        if len(files) != 2:
            fail("expected run A's and run B's event files, found %s" % files)
        check_file_shapes(tb)
        check_file_shapes(os.path.join(ref, "tb"))
        a_file, b_file = files
        b_events = tfevents.parse_events(os.path.join(tb, b_file))
        resumed = b_events[1].step - 1
        if resumed != ckpt:
            fail("run B's START is at step %d, expected the checkpoint's step %d + 1" % (b_events[1].step, ckpt))
        orphans = [ev.step for ev in tfevents.parse_events(os.path.join(tb, a_file)) if ev.step > resumed]
        if not orphans:
            fail("run A holds no record after step %d: the scenario did not leave orphans" % resumed)
        print("run A's file holds %d events after step %d (orphans), up to step %d" % (len(orphans), resumed, max(orphans)))

        legacy, rust = tfevents.view_legacy(tb), tfevents.view_rust(tb)
        if legacy != rust:
            fail("TensorBoard's two readers would show different series:\n%s\n%s" % (legacy, rust))
        katib = katib_lines(work, ["a", "b"])
        tags = TRAIN_TAGS | {"epoch/" + n for values in katib.values() for n in values}
        if len(tags) <= len(TRAIN_TAGS) or set(legacy) != tags:
            fail("tags %s, expected %s" % (sorted(legacy), sorted(tags)))
        reference = tfevents.view_legacy(os.path.join(ref, "tb"))
        metrics = last_metrics(work)
        for tag, records in legacy.items():
            steps = [s for s, _, _ in records]
            if steps != sorted(set(steps)):
                fail("%s: steps not each once and increasing: %s" % (tag, steps))
            if steps != [s for s, _, _ in reference[tag]]:
                fail("%s: steps %s differ from the uninterrupted run's %s" % (tag, steps, [s for s, _, _ in reference[tag]]))
            for step, value, source in records:
                if source != (a_file if step <= resumed else b_file):
                    fail("%s step %d shown from %s" % (tag, step, source))
            if tag in TIMING_TAGS:
                continue  # timing, differs between runs
            ref_values = [v for _, v, _ in reference[tag]]
            if [v for _, v, _ in records] != ref_values:
                fail("%s: values differ from the uninterrupted run's:\n%s\n%s" % (tag, records, ref_values))
            for step, value, _ in records:
                if tag == "train/lr":
                    want, ok = 0.01, close(value, f32(0.01))
                elif tag == "train/loss":
                    want = metrics[("train", step)]["train_loss"]
                    ok = close(value, f32(want))
                else:  # the Katib line's value, to the decimals it prints
                    want = katib[metrics[("eval", step)]["epoch"]][tag[len("epoch/"):]]
                    ok = want.matches(value)
                if not ok:
                    fail("%s step %d: %r, the final run's metrics file says %r" % (tag, step, value, want))
        n = sum(len(r) for r in legacy.values())
        print("OK: %d scalars in %d series, each (tag, step) once, steps <= %d from run A, the rest from run B, "
              "equal to the uninterrupted run" % (n, len(legacy), resumed))
    finally:
        shutil.rmtree(args.root, ignore_errors=True)


if __name__ == "__main__":
    main()
