"""Error types. Every failure a user can cause is one of these: the CLI prints the message on
one line and exits with `exit_code`, without a traceback."""


class TracewhError(Exception):
    """Base class: a problem to report to the user, not a bug."""

    exit_code = 2


class UsageError(TracewhError):
    """A bad option value: an unsafe name, an unknown run, a malformed tag."""


def printable(path):
    """A path as text that can always be printed and stored: bytes of a file name that are not
    UTF-8 (held by Python as surrogates) are shown as \\x escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class TraceError(TracewhError):
    """An input file that cannot be ingested: truncated, corrupt or not a trace."""

    def __init__(self, path, problem):
        super().__init__(f"{printable(path)}: {problem}")
        self.path = str(path)
        self.problem = problem

    def __reduce__(self):
        return (type(self), (self.path, self.problem))


class QueryError(TracewhError):
    """SQL that DuckDB rejects, or a statement refused by the read-only guard."""


class WarehouseError(TracewhError):
    """The warehouse directory is not usable (not a warehouse, unreadable manifest)."""


class FollowUpFailed(WarehouseError):
    """What a command does after its work failed (bringing the marts and tracewh.duckdb up
    to date, rolling back an interrupted commit): the work stands. `done` is its result (an
    ingest's outcomes, a vacuum's counts), for the command to report before this error."""

    def __init__(self, message, done=None):
        super().__init__(message)
        self.done = done


class WarehouseBusy(WarehouseError):
    """Another writer held the warehouse's lock for longer than the caller would wait."""


class RefreshInterrupted(TracewhError):
    """Ctrl-C while the marts and tracewh.duckdb were being derived: the commits stand."""

    exit_code = 128 + 2  # the shell's status for a command ended by SIGINT
