"""Reads the trainers' TensorBoard event files (--tensorboard-dir; src/trainer/tensorboard_writer.h):
TFRecord-framed tensorboard.Event messages, fields from tensorboard/compat/proto/event.proto and
summary.proto:
  Event       1 wall_time (double)  2 step (int64)  3 file_version  5 summary  7 session_log
  Summary     1 value (repeated)
  Value       1 tag (string)  2 simple_value (float)
  SessionLog  1 status (START = 1)
Scalars come from simple_value (what the trainers write); other values (images, histograms, tensor
scalars) are skipped. A folder's files are read in name order, as TensorBoard reads them."""
import math
import os

from . import runs, tfrecord, wire
from .problems import InputError, warn

PREFIX = "events.out.tfevents."
# The trainers' tags (reporter.h): train/* per log interval, epoch/<Katib name> per evaluation.
TAGS = {
    "train/loss": runs.TRAIN_LOSS,
    "train/images_per_sec": runs.IMAGES_PER_SEC,
    "epoch/eval_loss": runs.EVAL_LOSS,
    "epoch/accuracy": runs.ACCURACY,
    "epoch/auc": runs.AUC,
}
SESSION_START = 1


def parse_event(data):
    """(step, session START or not, [(tag, value)]) of one record; wire.WireError when malformed."""
    step, start, scalars = 0, False, []
    for number, kind, value in wire.fields(data, "Event"):
        if number == 2:
            wire.expect(number, kind, wire.VARINT, "Event")
            step = wire.as_int64(value)
        elif number == 5:
            wire.expect(number, kind, wire.LENGTH_DELIMITED, "Event")
            scalars.extend(_summary(value))
        elif number == 7:
            wire.expect(number, kind, wire.LENGTH_DELIMITED, "Event")
            for n, k, v in wire.fields(value, "SessionLog"):
                if n == 1:
                    wire.expect(n, k, wire.VARINT, "SessionLog")
                    start = v == SESSION_START
    return step, start, scalars


def _summary(data):
    for number, kind, value in wire.fields(data, "Summary"):
        if number != 1:
            continue
        wire.expect(number, kind, wire.LENGTH_DELIMITED, "Summary")
        tag, simple = None, None
        for n, k, v in wire.fields(value, "Summary.Value"):
            if n == 1:
                wire.expect(n, k, wire.LENGTH_DELIMITED, "Summary.Value")
                try:
                    tag = v.decode("utf-8")
                except UnicodeDecodeError:
                    raise wire.WireError("Summary.Value: a tag that is not UTF-8") from None
            elif n == 2:
                wire.expect(n, k, wire.FIXED32, "Summary.Value")
                simple = wire.as_float(v)
        if tag is not None and simple is not None:
            yield tag, simple


def event_files(folder):
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith(PREFIX))
    except OSError as e:
        raise InputError("%s: cannot list the folder: %s" % (folder, e.strerror)) from None
    if not names:
        raise InputError("%s: a folder without %s* files (is it the --tensorboard-dir?)" % (folder, PREFIX))
    return [os.path.join(folder, n) for n in names]


def read(path, files):
    """The Run of the event files `files` (one file, or a folder's in name order) named `path`."""
    run = runs.Run(path)
    for name in files:
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            raise InputError("%s: cannot read: %s" % (name, e.strerror)) from None
        records, torn = tfrecord.split_records(data, name)
        for index, (offset, body) in enumerate(records, 1):
            try:
                step, start, scalars = parse_event(body)
            except wire.WireError as e:
                raise InputError("%s: record %d at offset %d is no Event: %s" % (name, index, offset, e)) from None
            if start:
                # A (re)started run: what earlier attempts logged from here on was lost with them.
                run.drop_from(step)
            for tag, value in scalars:
                if tag in TAGS:
                    run.add(TAGS[tag], step, None, value if math.isfinite(value) else None)
        if torn:
            # One write(2) per event makes this rare, but a killed writer or a full disk leaves it.
            warn("%s: the last record is cut off (%s): skipped" % (name, torn))
    return run
