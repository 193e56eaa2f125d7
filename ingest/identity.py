"""Where a trace belongs: its run, phase and rank, from options, the trace, or its file name."""

import re
from pathlib import Path

from tracewh.names import check_name, check_phase, sanitise_name

KNOWN_PHASES = ("train", "prefill", "decode", "eval", "inference", "warmup")
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z]+")


def resolve_run(option, path):
    """--run, else the name of the input's directory (sanitised)."""
    if option is not None:
        return check_name("run", option)
    parent = Path(path).resolve().parent.name
    return sanitise_name(parent, "default")


def resolve_phase(option, path):
    """--phase, else a known phase word in the file name, else 'unknown'."""
    if option is not None:
        return check_phase(option)
    words = {w.lower() for w in _WORDS.findall(Path(path).name)}
    for phase in KNOWN_PHASES:
        if phase in words:
            return phase
    return "unknown"


def resolve_rank(option, distributed_info, path):
    """--rank, else distributedInfo.rank, else a number in the file name, else 0."""
    if option is not None:
        return option
    rank = _as_int(distributed_info.get("rank"))
    if rank is not None and rank >= 0:
        return rank
    match = _RANK_IN_NAME.search(Path(path).name)
    return int(match.group(1)) if match else 0


def world_size(distributed_info):
    return _as_int(distributed_info.get("world_size"))


def _as_int(value):
    """distributedInfo numbers are ints in most traces and strings in some."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**31) <= value < 2**31 else None
    if isinstance(value, str) and value.isdigit():
        return _as_int(int(value))
    return None
