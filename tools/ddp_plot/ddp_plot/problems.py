"""How ddp-plot tells the user about bad input: InputError for what stops the plot (exit 2, the
project's code for a permanent failure: running again will not help), warn() for what it skips."""
import sys

PROG = "ddp-plot"


class InputError(Exception):
    """Input that cannot be plotted; the message names the file and the line or record."""


def warn(message):
    print("%s: warning: %s" % (PROG, message), file=sys.stderr)
