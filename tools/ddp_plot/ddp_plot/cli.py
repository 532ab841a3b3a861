"""The ddp-plot command: arguments, reading every input, naming the runs, drawing."""
import argparse
import os
import sys

from . import events, jsonl, tfrecord
from .problems import PROG, InputError

DESCRIPTION = """\
Draws the training curves of one or several runs: loss (train and eval), test accuracy or
validation AUC, and images per second, one line per run, to OUT.png and OUT.svg. Prints the paths
it wrote.

Each INPUT is a trainer's --metrics-file (JSON lines: x axis the global step, and the epoch for
per-epoch values) or its --tensorboard-dir (a folder of events.out.tfevents.* files, or one such
file; every record's CRC32C is checked; x axis the global step). Records a resumed run wrote again
are shown once, from the attempt that went on, as TensorBoard shows them.
"""

EPILOG = """\
A last line cut off in the middle (a run killed while writing it), and likewise a last event record
cut short, is skipped with a warning. Any other bad input stops with a message naming the file and
the line or record, exit code 2: a missing file, a line that is not JSON, a damaged event record
(CRC mismatch), a run with nothing to plot. Without matplotlib (Debian: python3-matplotlib, which
the ddp-tools package recommends) the inputs are still read and checked, then exit code 3.

example:
  ddp-plot /shared/runs/a/metrics.jsonl /shared/runs/b/metrics.jsonl --out /shared/runs/curves
  ddp-plot /shared/tensorboard/cifar10-job --label cifar10 --out curves
"""

EXIT_BAD_INPUT = 2
EXIT_NO_MATPLOTLIB = 3


def _size(text):
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not WIDTHxHEIGHT in pixels (e.g. 1500x400)" % text) from None
    if not (50 <= width <= 20000 and 50 <= height <= 20000):
        raise argparse.ArgumentTypeError("'%s': width and height must be 50 to 20000 pixels" % text)
    return width, height


def parser():
    p = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="a metrics file, an event file or a folder of them")
    p.add_argument("--out", default="curves", metavar="OUT",
                   help="where to write: OUT.png and OUT.svg (default: curves; folders are created)")
    p.add_argument("--label", action="append", default=[], metavar="NAME",
                   help="the legend name of each INPUT in order, once per INPUT (default: the file or folder name)")
    p.add_argument("--size", type=_size, metavar="WxH", help="the PNG's width and height in pixels "
                   "(default: 500x400 per panel)")
    return p


def read_input(path):
    """The Run of one INPUT; which reader is decided by what the path is and by its first bytes."""
    if os.path.isdir(path):
        return events.read(path, events.event_files(path))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror)) from None
    # An event file keeps its name's prefix when the trainer writes it; a renamed one still starts
    # with a record header whose CRC holds, which no JSON text does.
    if os.path.basename(path).startswith(events.PREFIX) or tfrecord.looks_like_tfrecord(data[:tfrecord.HEADER_BYTES]):
        return events.read(path, [path])
    return jsonl.read(path, data)


def name_runs(run_list):
    """Each run's file or folder name, with as many parent folders as it takes to tell them apart
    (run1/metrics.jsonl, run2/metrics.jsonl)."""
    parts = [os.path.normpath(os.path.abspath(r.path)).split(os.sep) for r in run_list]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            break
        depth += 1
    for run, name in zip(run_list, names):
        run.label = name


def main(argv=None):
    arguments = parser()
    args = arguments.parse_args(argv)
    if args.label and len(args.label) != len(args.inputs):
        arguments.error("--label given %d times for %d inputs: give it once per INPUT, or not at all"
                       % (len(args.label), len(args.inputs)))
    try:
        run_list = [read_input(path) for path in args.inputs]
        for run in run_list:
            if run.empty():
                raise InputError("%s: no plottable records (no train or eval record with a loss, accuracy, AUC or "
                                 "images/s; event files: no train/ or epoch/ scalar)" % run.path)
        name_runs(run_list)
        for run, label in zip(run_list, args.label):
            run.label = label
        try:
            # Imported here, not at the top: --help and the checks of the inputs work without it.
            from . import draw
        except ImportError as e:
            print("%s: error: drawing needs matplotlib, which %s cannot import (%s); on Debian: "
                  "apt-get install python3-matplotlib" % (PROG, sys.executable, e), file=sys.stderr)
            return EXIT_NO_MATPLOTLIB
        out = args.out
        for suffix in (".png", ".svg"):  # --out curves.png means the prefix curves
            if out.endswith(suffix):
                out = out[:-len(suffix)]
        folder = os.path.dirname(out)
        if folder:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as e:
                raise InputError("--out %s: cannot create the folder %s: %s" % (args.out, folder, e.strerror)) from None
        written = draw.render(run_list, out, args.size)
    except (InputError, OSError) as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in written:
        print(path)
    return 0
