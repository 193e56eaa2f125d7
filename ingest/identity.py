"""Where a trace belongs: its run, phase and rank, from options, the trace, or its file name."""

import json
import re
from pathlib import Path

from tracewh.errors import TraceError
from tracewh.storage.names import check_name, check_phase, rank_problem, sanitise_name

from .sources import is_object

KNOWN_PHASES = ("train", "prefill", "decode", "eval", "inference", "warmup")
CAPTURE_PHASE = "capture"
CAPTURE_CALL = "StreamBeginCapture"  # cudaStreamBeginCapture, hipStreamBeginCapture
# At most 40 digits, here and in _DIGITS: Python refuses int() of thousands of digits, and
# 40 are more than any rank has.
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d{1,40})", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z]+")
# (cli_hint, library_hint): how to give a trace its rank when its own cannot be one
_GIVE_RANK = (": pass --rank", ": give its rank (rank=)")
_DIGITS = re.compile(r"[0-9]{1,40}")


def resolve_run(option, path):
    """--run, else the name of the input's directory (sanitised)."""
    if option is not None:
        return check_name("run", option)
    parent = path.parent.name if is_object(path) else Path(path).resolve().parent.name
    return sanitise_name(parent, "default")


def _file_name(path):
    return path.name if is_object(path) else Path(path).name


def resolve_phase(option, path):
    """--phase, else a known phase word in the file name, else 'unknown'."""
    if option is not None:
        return check_phase(option)
    words = {w.lower() for w in _WORDS.findall(_file_name(path))}
    for phase in KNOWN_PHASES:
        if phase in words:
            return phase
    return "unknown"


def capture_phase(option, phase, runtime_names):
    """The phase of a trace recorded while CUDA/HIP graphs were captured: `capture` when its
    runtime calls (the distinct names `runtime_names` yields) begin a stream capture and no
    --phase was given, else `phase`. Its graphs' launches are what the replays of the same
    run are attributed through (sql/_graph_replay.sql)."""
    if option is None and any(CAPTURE_CALL in name for name in runtime_names):
        return CAPTURE_PHASE
    return phase


def resolve_rank(option, distributed_info, path):
    """--rank, else distributedInfo.rank, else a number in the file name, else 0. A rank the
    trace or its name gives that cannot be one (beyond the int32 column, negative, not an
    integer) fails the file, naming it: falling through to the next source would file the
    trace under a rank it is not (2**31 became rank 0)."""
    if option is not None:
        return option  # checked by ingest_options
    given = distributed_info.get("rank")  # null: as if absent (null_rank_note says so)
    if given is not None:
        rank = _number(given)
        problem = rank_problem(rank)
        if problem is not None:
            shown = json.dumps(given)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            raise TraceError(path, f"distributedInfo.rank {shown} {problem}", *_GIVE_RANK)
        return rank
    match = _RANK_IN_NAME.search(_file_name(path))
    if match is None:
        return 0
    rank = int(match.group(1))
    problem = rank_problem(rank)
    if problem is not None:
        raise TraceError(path, f"rank {rank} from the file name {problem}", *_GIVE_RANK)
    return rank


def null_rank_note(option, distributed_info, path):
    """The trace's warning when no --rank is given and distributedInfo.rank is null (a writer
    that knew no rank): null counts as absent, and the note says which rank that gave."""
    if option is not None or "rank" not in distributed_info or distributed_info["rank"] is not None:
        return None
    match = _RANK_IN_NAME.search(_file_name(path))
    where = f"{int(match.group(1))} from the file name" if match else "0 (none in the file name)"
    return f"distributedInfo.rank is null: rank {where}"


def world_size(distributed_info):
    """distributedInfo.world_size, or None when it is not an int32 (its column's type)."""
    size = _number(distributed_info.get("world_size"))
    if isinstance(size, bool) or not isinstance(size, int) or not -(2**31) <= size < 2**31:
        return None
    return size


def _number(value):
    """distributedInfo numbers are ints in most traces and strings of digits in some: the
    int of such a string, else `value` as it is."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return value
