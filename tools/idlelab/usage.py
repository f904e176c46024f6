"""User-input errors of the command-line tools (bench, qemu-run, demo): one line naming the
input, exit status 2, never a traceback. argparse's own error() prints the whole usage
first; here the line is the message, and --help still shows the usage."""
import argparse
import math
import sys

# The host tools' exit statuses, defined once (the CLIs' help lists them, and
# docs/exit-codes.md, generated from here by tools/exitdoc); a bench that is interrupted
# exits 128 + the signal instead.
EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_KVM = 0, 1, 2, 3


class UsageError(Exception):
    """Bad user input found after parsing (a file, a folder); the message names it."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit EXIT_USAGE."""

    def error(self, message):
        fail(self.prog, message)


def fail(prog, message):
    """Prints `prog: message` and exits EXIT_USAGE."""
    print(f"{prog}: {message}", file=sys.stderr, flush=True)
    sys.exit(EXIT_USAGE)


def positive_seconds(text):
    """A time limit in seconds: finite and above 0 (0, nan and inf would never end or end
    at once)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds above 0")
    return value


def seconds_or_zero(text):
    """A budget in seconds that may be 0 (off): finite and not negative."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds, 0 or more")
    return value


def finite_number(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number")
    return value


def int_in(lo, hi):
    """An integer in lo..hi."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text!r}: expected an integer in {lo}..{hi}")
        return value
    parse.__name__ = f"int_in_{lo}_{hi}"
    return parse
