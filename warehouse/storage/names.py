"""Run, phase and tag names, and ranks: they become directory names (`run=<run>`,
`rank=<rank>`), Delta partition values and SQL literals. Names keep to an alphabet that is safe
in all of them, and that Spark and Hive do not skip (paths starting with `_` or `.` are hidden
to them); ranks to the range of their int32 column."""

import difflib
import operator
import re

from ..errors import UsageError

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
RANK_MAX = 2**31 - 1  # rank is an int32 partition column (schema.py)


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
    words, users type either). A refusal echoes `value` as typed."""
    return check_name("phase", value).lower()


def rank_problem(value):
    """What makes `value` no rank ("is not an integer", "is outside 0..2147483647"), or None.
    A rank beyond the int32 column is committed as a partition value that Delta cannot parse
    back: every later read of the table would fail. A bool is not a rank, though Python
    counts it an int; a NumPy integer is one."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        return "is not an integer"
    if not 0 <= operator.index(value) <= RANK_MAX:
        return f"is outside 0..{RANK_MAX}"
    return None


def check_rank(value):
    """`value` as an int if it is a rank, else raise UsageError saying why."""
    problem = rank_problem(value)
    if problem is not None:
        raise UsageError(f"invalid rank {value!r}: it {problem}")
    return operator.index(value)


def check_partition(run, phase, rank):
    """Raise UsageError unless run, phase and rank can all be partition values: the last
    guard before anything is written under `run=<run>/phase=<phase>/rank=<rank>`, whatever
    gave them."""
    check_name("run", run)
    check_name("phase", phase)
    check_rank(rank)


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


def did_you_mean(name, candidates):
    """'; did you mean 'a', 'b'?' with the candidates closest to a mistyped name, or ''."""
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""
