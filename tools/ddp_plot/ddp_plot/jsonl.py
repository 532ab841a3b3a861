"""Reads a trainer's --metrics-file (src/trainer/reporter.h): one JSON object per line,
  {"type":"train","step","epoch","train_loss","images_per_sec"}            every --log-interval steps
  {"type":"eval","step","epoch","eval_loss","accuracy"|"auc",...}         after every evaluation
  {"type":"summary",...}                                                  at the end (not plotted)
Numbers are null where the trainer had NaN or infinity. Other types and fields are left alone, so
records added later do not break the plot."""
import json
import math

from . import runs
from .problems import InputError, warn

# What each record type contributes: series name -> field. The images_per_sec of an eval record is
# its epoch's average, already drawn finer by the train records; RANZCR's eval train_loss likewise.
FIELDS = {
    "train": {runs.TRAIN_LOSS: "train_loss", runs.IMAGES_PER_SEC: "images_per_sec"},
    "eval": {runs.EVAL_LOSS: "eval_loss", runs.ACCURACY: "accuracy", runs.AUC: "auc"},
}


def _integer(record, key, where, required):
    value = record.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError("%s: \"%s\" of a \"%s\" record must be a non-negative integer, found %s"
                         % (where, key, record["type"], json.dumps(value)))
    return value


def _number(record, key, where):
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InputError("%s: \"%s\" is %s, not a number" % (where, key, json.dumps(value)))
    return float(value)


def read(path, data):
    """The Run of a metrics file whose bytes are `data`. A last line without its newline that is no
    JSON is what a run killed in the middle of a write leaves: skipped with a warning."""
    run = runs.Run(path)
    lines = data.split(b"\n")
    # The text after the last newline: empty when the file ends with one.
    ends_complete = lines[-1] == b""
    if ends_complete:
        lines.pop()
    for number, raw in enumerate(lines, 1):
        where = "%s:%d" % (path, number)
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            if number == len(lines) and not ends_complete:
                warn("%s: the last line is cut off (a run killed while writing it?): skipped (%s)" % (where, e))
                continue
            raise InputError("%s: not JSON: %s" % (where, e)) from None
        if not isinstance(record, dict):
            raise InputError("%s: a JSON %s, not an object" % (where, type(record).__name__))
        kind = record.get("type")
        if kind not in FIELDS:
            continue
        step = _integer(record, "step", where, required=True)
        epoch = _integer(record, "epoch", where, required=False)
        for name, key in FIELDS[kind].items():
            if key in record:
                run.add(name, step, epoch, _number(record, key, where))
    return run
