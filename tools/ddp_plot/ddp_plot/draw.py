"""The picture: one panel per kind of curve that some run has, one colour per run, written as PNG and
SVG with matplotlib's Agg backend (no display needed).

The SVG keeps its text as text (svg.fonttype none: searchable, smaller) and names what it draws:
each panel's group is "panel-<name>", each curve's "line-<series>-<run index>", so a reader (and
tests/plot) can find a curve's points and its axis' tick labels."""
import os

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import MaxNLocator  # noqa: E402

from . import runs  # noqa: E402

DPI = 100
PANEL_INCHES = (5.0, 4.0)


class Panel:
    def __init__(self, name, ylabel, curves, per_epoch):
        self.name = name
        self.ylabel = ylabel
        self.curves = curves  # (series, legend suffix, line style, marker)
        # Per-epoch values are drawn against the epoch when every point of the panel knows it
        # (metrics files do, event files do not); else against the global step.
        self.per_epoch = per_epoch


PANELS = (
    Panel("loss", "loss", ((runs.TRAIN_LOSS, "train", "-", None), (runs.EVAL_LOSS, "eval", "--", "o")), False),
    Panel("accuracy", "test accuracy", ((runs.ACCURACY, None, "-", "o"),), True),
    Panel("auc", "validation AUC (mean of columns)", ((runs.AUC, None, "-", "o"),), True),
    Panel("images_per_sec", "images/s (all ranks)", ((runs.IMAGES_PER_SEC, None, "-", None),), False),
)


def panels_for(run_list):
    """The panels some run has points for, in PANELS' order."""
    return [p for p in PANELS if any(r.series[c[0]] for r in run_list for c in p.curves)]


def _x_by_epoch(panel, run_list):
    points = [pt for r in run_list for c in panel.curves for pt in r.series[c[0]]]
    return panel.per_epoch and all(epoch is not None for _, epoch, _ in points)


def _save(fig, path, fmt):
    # Written beside and renamed: an image viewer or a web page never reads half a file.
    partial = path + ".partial"
    try:
        fig.savefig(partial, format=fmt, dpi=DPI, metadata={"Date": None} if fmt == "svg" else None)
        os.replace(partial, path)
    except OSError as e:
        raise OSError("%s: cannot write: %s" % (path, e.strerror or e)) from None


def render(run_list, out_prefix, size=None):
    """Writes out_prefix.png and out_prefix.svg; returns their paths. `size`: (width, height) in
    pixels of the PNG, else PANEL_INCHES per panel."""
    panels = panels_for(run_list)
    columns = len(panels) if len(panels) <= 3 else 2
    rows = (len(panels) + columns - 1) // columns
    if size:
        inches = (size[0] / DPI, size[1] / DPI)
    else:
        inches = (PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows)
    # Every point drawn (no path simplification), and tick labels that read as the numbers themselves
    # (no offset like "+2.2" in the axis corner).
    style = {"svg.fonttype": "none", "path.simplify": False, "axes.formatter.useoffset": False}
    with matplotlib.rc_context(style):
        fig = Figure(figsize=inches, dpi=DPI, layout="constrained")
        for i, panel in enumerate(panels):
            ax = fig.add_subplot(rows, columns, i + 1)
            ax.set_gid("panel-" + panel.name)
            by_epoch = _x_by_epoch(panel, run_list)
            for index, run in enumerate(run_list):
                for series, suffix, style, marker in panel.curves:
                    points = run.series[series]
                    if not points:
                        continue
                    xs = [epoch if by_epoch else step for step, epoch, _ in points]
                    ys = [value for _, _, value in points]
                    label = run.label + (" " + suffix if suffix else "")
                    (line,) = ax.plot(xs, ys, linestyle=style, marker=marker, markersize=4, color="C%d" % (index % 10),
                                      label=label)
                    line.set_gid("line-%s-%d" % (series, index))
            ax.set_xlabel("epoch" if by_epoch else "global step")
            # Steps and epochs are whole numbers; one tick is enough for a run of one epoch (MaxNLocator
            # would fall back to fractions of it).
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            ax.set_ylabel(panel.ylabel)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        written = []
        for fmt in ("png", "svg"):
            path = "%s.%s" % (out_prefix, fmt)
            _save(fig, path, fmt)
            written.append(path)
    return written
