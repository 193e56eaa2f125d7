"""Error types. Every failure a user can cause is one of these: the CLI prints the message on
one line and exits with `exit_code`, without a traceback.

Messages name files, runs and kernels, whose text is hostile: `escaped` (also what the terminal
table shows trace text by) keeps a name's control characters from reaching a terminal or a log
(an ESC sequence retitling the terminal, a newline forging a line of its own)."""

import re

INTERRUPTED = 128 + 2  # the shell's status for a command ended by SIGINT (Ctrl-C)
HINT = "\0"  # where in a message the CLI's hint goes (no path or name holds a NUL)


class TracewhError(Exception):
    """Base class: a problem to report to the user, not a bug. The message says what is wrong
    in the library's terms; at HINT in it (else at its end) the command line puts `cli_hint`,
    the option that does what was refused (" (use --allow-write to run them)"), and the
    library `library_hint`, its own words for the same, if any (", replacing it")."""

    exit_code = 2

    def __init__(self, message, cli_hint="", library_hint=""):
        message = HINT.join(map(escaped, message.split(HINT)))  # one line, whatever it names
        self._template = message if HINT in message else message + HINT
        super().__init__(self._template.replace(HINT, library_hint))
        self.cli_hint = cli_hint
        self.library_hint = library_hint

    def cli_message(self):
        """The message as the command line prints it, with its hint."""
        return getattr(self, "_template", str(self)).replace(HINT, self.cli_hint)


class UsageError(TracewhError):
    """A bad option value: an unsafe name, an unknown run, a malformed tag."""


# C0 (newline and tab included), DEL and C1: an ESC (or C1's CSI) starts a terminal's escape
# sequence (colours, moving the cursor, rewriting the title), a newline starts a line
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escaped(text):
    """`text` with its control characters shown as \\xNN: one line, inert on a terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def path_text(path):
    """A path as text that can always be stored: bytes of a file name that are not UTF-8
    (held by Python as surrogates) are shown as \\x escapes, the rest kept exactly."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable(path):
    """A path or name as text that can always be printed on one line: `path_text`, its
    control characters `escaped`."""
    return escaped(path_text(path))


class TraceError(TracewhError):
    """An input file that cannot be ingested: truncated, corrupt or not a trace."""

    def __init__(self, path, problem, cli_hint="", library_hint=""):
        super().__init__(f"{printable(path)}: {problem}", cli_hint, library_hint)
        self.path = str(path)
        self.problem = problem

    def __reduce__(self):  # raised in an ingest worker, it crosses to the parent whole
        return (type(self), (self.path, self.problem, self.cli_hint, self.library_hint))


class QueryError(TracewhError):
    """SQL that DuckDB rejects, or a statement refused by the read-only guard."""


class WarehouseError(TracewhError):
    """The warehouse directory is not usable (not a warehouse, a damaged log, read-only)."""


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

    exit_code = INTERRUPTED
