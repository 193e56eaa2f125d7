"""Which runs, phases and ranks a command names: checked against the warehouse, with errors
that say what there is instead (close run names, a run's phases and ranks)."""

import contextlib
import difflib
import logging

from .errors import UsageError


def known_runs(connection):
    return [row[0] for row in connection.execute("SELECT run FROM runs ORDER BY first_seq")
            .fetchall()]


def check_runs(known, *runs):
    """Refuse a run that is not among `known` (the warehouse's runs), suggesting close names
    rather than listing what may be thousands of runs."""
    for run in runs:
        if run in known:
            continue
        if not known:
            raise UsageError(f"unknown run {run!r}: the warehouse is empty")
        runs_word = "run" if len(known) == 1 else "runs"
        raise UsageError(f"unknown run {run!r}{did_you_mean(run, known)} (`tracewh runs` "
                         f"lists the {len(known)} {runs_word})")


def did_you_mean(name, candidates):
    """'; did you mean 'a', 'b'?' with the candidates closest to a mistyped name, or ''."""
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


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
                             f"{_ranges(ranks)})")


def _ranges(numbers):
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
        raise UsageError(f"{subject} is not in the warehouse (`tracewh runs` lists the runs)")
    if phase is None:
        if len(phases) > 1:
            raise UsageError(f"{subject} has phases {', '.join(phases)}: pick one with --phase")
        return phases[0]
    if phase not in phases:
        raise UsageError(f"{subject} has no phase {phase!r} (its phases: {', '.join(phases)})")
    return phase


def runs_a_query_names(sql):
    """(the runs a query can only be about, the table or view it reads), or None when that
    cannot be told for sure: one SELECT from one table or library view (no join, subquery,
    CTE or set operation) whose WHERE requires `run = 'x'` or `run IN ('x', 'y')`. Every
    library view's rows of a run come from that run's rows alone, so such a query reads just
    those runs' files."""
    import sqlglot
    from sqlglot import exp

    try:
        with _quiet(logging.getLogger("sqlglot")):
            statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        return None
    select = statements[0]
    sources = list(select.find_all(exp.Table))
    where = select.find(exp.Where)
    if (len(sources) != 1 or not isinstance(sources[0].this, exp.Identifier)  # not a macro
            or select.find(exp.With, exp.Join, exp.Subquery, exp.Union, exp.Intersect,
                           exp.Except) or where is None):
        return None
    runs = None
    for condition in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        named = _runs_of(condition)
        if named is not None:
            runs = named if runs is None else runs & named
    return None if runs is None else (runs, sources[0].name.lower())


@contextlib.contextmanager
def _quiet(logger):
    """Without `logger`'s warnings: sqlglot warns on stderr of every statement it parses as a
    mere command (EXPLAIN, PRAGMA...), which is no news to the user and would make a refusal
    or an answer two lines."""
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _runs_of(condition):
    """{'x'} for `run = 'x'`, {'x', 'y'} for `run IN ('x', 'y')`, else None."""
    from sqlglot import exp

    def is_run(node):
        return isinstance(node, exp.Column) and node.name.lower() == "run"

    def literal(node):
        return isinstance(node, exp.Literal) and node.is_string

    if isinstance(condition, exp.EQ):
        left, right = condition.this, condition.expression
        if is_run(right):
            left, right = right, left
        if is_run(left) and literal(right):
            return {right.this}
    if (isinstance(condition, exp.In) and is_run(condition.this) and condition.expressions
            and all(literal(item) for item in condition.expressions)):
        return {item.this for item in condition.expressions}
    return None
