"""Run, phase and tag names: they become directory names (`run=<run>`) and SQL literals, so they
keep to an alphabet that is safe in both, and that Spark and Hive do not skip (paths starting
with `_` or `.` are hidden to them)."""

import re

from .errors import UsageError

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def check_name(kind, value):
    """Return `value` if it is a safe name, else raise UsageError saying why."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        raise UsageError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def check_phase(value):
    """A phase name, case-folded: `Train` and `train` are one phase (file names give lower-case
    words, users type either)."""
    return check_name("phase", value.lower() if isinstance(value, str) else value)


def sanitise_name(value, fallback):
    """Turn a default taken from a path (a directory name) into a safe name."""
    cleaned = _UNSAFE_CHARS.sub("_", value).strip("._-")[:128]
    return cleaned or fallback


def parse_tag(text):
    """Parse KEY=VALUE into a (key, value) pair of safe names."""
    key, sep, value = text.partition("=")
    if not sep:
        raise UsageError(f"invalid tag {text!r}: expected KEY=VALUE")
    return check_name("tag key", key), check_name("tag value", value)
