"""What Katib's metrics collector makes of a trial's output: a reimplementation, written from its Go
source (kubeflow/katib v0.19.0), so tests can check our trainers' output the way Katib reads it.

  pkg/metricscollector/v1beta1/file-metricscollector/file-metricscollector.go
    parseLogsInTextFormat  TEXT (and StdOut, which is TEXT on a file): a line is looked at only if it
                           contains a metric name (strings.Contains); its timestamp is its first
                           word (strings.SplitN(line, " ", 2)) when time.Parse(time.RFC3339Nano, ...)
                           takes it, else the zero time; every match of the filter regex anywhere on
                           the line whose name (group 1) is a metric gives an observation with the
                           value text of group 2.
    parseLogsInJsonFormat  JSON: every non-empty line must unmarshal into a JSON object (any other
                           line fails the whole collection); "timestamp" (string: RFC3339Nano; or a
                           number of seconds); a metric is observed only when its value is a string.
    newObservationLog      no observation of the objective (the first metric): one "unavailable".
  pkg/metricscollector/v1beta1/common/const.go
    DefaultFilter          ([\\w|-]+)\\s*=\\s*([+-]?\\d*(\\.\\d+)?([Ee][+-]?\\d+)?)
    TimeStampJsonKey       "timestamp"
  cmd/metricscollector/v1beta1/file-metricscollector/main.go
    watchMetricsFile       with early-stopping rules, every line containing a rule's metric name:
                           strconv.ParseFloat of group 2 of every filter match, klog.Fatalf on failure.
  pkg/webhook/v1beta1/pod/utils.go
    wrapWorkerContainer    StdOut: the primary container runs
                           sh -c "<command and args joined by spaces> 1>/var/log/katib/metrics.log 2>&1 && ..."
"""
import datetime
import decimal
import json
import re

DEFAULT_FILTER = r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)"
ZERO_TIME = "0001-01-01T00:00:00Z"  # time.Time{}.UTC().Format(time.RFC3339)
UNAVAILABLE = "unavailable"  # consts.UnavailableMetricValue
# Go's \w, \d and \s are ASCII-only (RE2); Go's \s is [\t\n\f\r ].
_GO_FLAGS = re.ASCII
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))")


def go_parse_rfc3339nano(text):
    """True when Go's time.Parse(time.RFC3339Nano, text) succeeds: the fixed-width fields, in range
    (day within its month, hour < 24, minute and second < 60), an optional '.' fraction of 1-9
    digits, 'Z' or a numeric offset below 24:00."""
    m = _RFC3339.fullmatch(text)
    if not m:
        return False
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        datetime.datetime(y if y > 0 else 1, mo, d, h, mi, s)
    except ValueError:
        return False
    if m.group(9) is not None and (int(m.group(9)) > 23 or int(m.group(10)) > 59):
        return False
    return True


def _observation_log(mlogs, metrics):
    if not any(name == metrics[0] for _, name, _ in mlogs):
        return [(ZERO_TIME, metrics[0], UNAVAILABLE)]
    return mlogs


def parse_text(text, metrics, filters=None):
    """parseLogsInTextFormat: [(timestamp, name, value text)] of the lines of `text` (split at "\\n")."""
    regs = [re.compile(f, _GO_FLAGS) for f in (filters or [DEFAULT_FILTER])]
    mlogs = []
    for line in text.split("\n"):
        if not any(m in line for m in metrics):
            continue
        timestamp = ZERO_TIME
        parts = line.split(" ", 1)
        if len(parts) == 2 and go_parse_rfc3339nano(parts[0]):
            timestamp = parts[0]
        for reg in regs:
            for match in reg.finditer(line):
                name, value = match.group(1).strip(), (match.group(2) or "").strip()
                if name in metrics:
                    mlogs.append((timestamp, name, value))
    return _observation_log(mlogs, metrics)


class JsonCollectionError(Exception):
    """The whole JSON collection fails (parseLogsInJsonFormat returns an error)."""


def _go_json_timestamp(value):
    """parseTimestamp: a string must parse as RFC3339Nano and is kept as written; a number is printed
    with strconv.FormatFloat(f, 'f', -1, 64) and split at '.': the digits after it become a count of
    nanoseconds as they stand (1638422847.28721 -> 28721 ns, Katib's own test expects
    2021-12-02T05:27:27.000028721Z), then time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano)."""
    if isinstance(value, str):
        return value if value and go_parse_rfc3339nano(value) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = format(decimal.Decimal(repr(float(value))), "f")  # shortest round-trip digits, no exponent
        sec, _, frac = text.partition(".")
        nsec = int(frac) if frac else 0
        return go_format_rfc3339nano(int(sec) + nsec // 10**9, nsec % 10**9)
    return None


def go_format_rfc3339nano(sec, nsec):
    """time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano): the fraction without trailing zeros."""
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=sec)
    frac = f"{nsec:09d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def parse_json(text, metrics):
    """parseLogsInJsonFormat: [(timestamp, name, value text)]; JsonCollectionError for a bad line."""
    mlogs = []
    for line in text.split("\n"):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise JsonCollectionError(f"not JSON: {line[:80]!r}: {e}")
        if obj is None:
            obj = {}  # json.Unmarshal of null into a map leaves it nil: no error, no metrics
        if not isinstance(obj, dict):
            raise JsonCollectionError(f"not a JSON object: {line[:80]!r}")
        timestamp = ZERO_TIME
        if "timestamp" in obj:
            timestamp = _go_json_timestamp(obj["timestamp"]) or ZERO_TIME
        for m in metrics:
            if isinstance(obj.get(m), str):
                mlogs.append((timestamp, m, obj[m]))
    return _observation_log(mlogs, metrics)


def early_stopping_failures(text, rule_names, filters=None):
    """watchMetricsFile (TEXT): the lines on which Katib's early-stopping reader would exit fatally
    (a filter match whose value strconv.ParseFloat refuses, on a line containing a rule's name)."""
    regs = [re.compile(f, _GO_FLAGS) for f in (filters or [DEFAULT_FILTER])]
    bad = []
    for line in text.split("\n"):
        if not any(r in line for r in rule_names):
            continue
        for reg in regs:
            for match in reg.finditer(line):
                if not go_parse_float(match.group(2).strip()):
                    bad.append(line)
    return bad


_GO_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def go_parse_float(text):
    """True when strconv.ParseFloat(text, 64) succeeds (decimal forms; the filter never yields hex)."""
    return _GO_FLOAT.fullmatch(text) is not None


def stdout_wrapper(argv, log_path):
    """The sh -c script Katib's webhook gives the primary container for the StdOut collector (without
    the pid-file bookkeeping after it): argv joined by single spaces, unquoted."""
    return " ".join(argv) + f" 1>{log_path} 2>&1"
