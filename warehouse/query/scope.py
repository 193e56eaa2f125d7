"""Which runs, phases and ranks a command names: checked against the warehouse, with errors
that say what there is instead (close run names, a run's phases and ranks)."""

from ..errors import HINT, UsageError
from ..storage.names import did_you_mean


def _runs_listed(what):
    """(cli_hint, library_hint): where `what` (the runs) are listed."""
    return f" (`tracewh runs` lists {what})", f" (Warehouse.runs() lists {what})"


def check_runs(known, *runs):
    """Refuse a run that is not among `known` (the warehouse's runs), suggesting close names
    rather than listing what may be thousands of runs."""
    for run in runs:
        if run in known:
            continue
        if not known:
            raise UsageError(f"unknown run {run!r}: the warehouse is empty")
        runs_word = "run" if len(known) == 1 else "runs"
        raise UsageError(f"unknown run {run!r}{did_you_mean(run, known)}{HINT}",
                         *_runs_listed(f"the {len(known)} {runs_word}"))


def check_scope(connection, runs, phase, rank):
    """Refuse --phase or --rank where a run has no such phase or rank: comparing against
    nothing would report every kernel removed (or added) and no regression."""
    for run in runs:
        phases, ranks = connection.execute(
            "SELECT list(DISTINCT phase ORDER BY phase), list(DISTINCT rank ORDER BY rank) "
            "FROM traces WHERE run = ? AND (? IS NULL OR phase = ?)",
            [run, phase, phase]).fetchone()
        if phase is not None and not phases:
            raise UsageError(f"run {run!r} has no phase {phase!r}")
        if rank is not None and rank not in ranks:
            where = f" in phase {phase!r}" if phase is not None else ""
            raise UsageError(f"run {run!r} has no rank {rank}{where} (its ranks: "
                             f"{rank_ranges(ranks)})")


def rank_ranges(numbers):
    """0-7, 9 for [0, 1, ..., 7, 9]."""
    groups = []
    for number in numbers:
        if groups and number == groups[-1][1] + 1:
            groups[-1][1] = number
        else:
            groups.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in groups)


def choose_phase(connection, run, phase, rank=None):
    """The phase a command about one run (or one rank of it) works on: the one given, or the
    only one there is."""
    where, values = ("run = ?", [run]) if rank is None else ("run = ? AND rank = ?", [run, rank])
    phases = [row[0] for row in connection.execute(
        f"SELECT DISTINCT phase FROM traces WHERE {where} ORDER BY phase", values).fetchall()]
    subject = f"run {run!r}" if rank is None else f"rank {rank} of run {run!r}"
    if not phases:
        ranks = [] if rank is None else [row[0] for row in connection.execute(
            "SELECT DISTINCT rank FROM traces WHERE run = ? ORDER BY rank", [run]).fetchall()]
        if ranks:
            raise UsageError(f"run {run!r} has no rank {rank} (its ranks: {rank_ranges(ranks)})")
        raise UsageError(f"{subject} is not in the warehouse{HINT}", *_runs_listed("the runs"))
    if phase is None:
        if len(phases) > 1:
            raise UsageError(f"{subject} has phases {', '.join(phases)}: pick one",
                             cli_hint=" with --phase")
        return phases[0]
    if phase not in phases:
        raise UsageError(f"{subject} has no phase {phase!r} (its phases: {', '.join(phases)})")
    return phase
