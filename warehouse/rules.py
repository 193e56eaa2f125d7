"""Kernel classification rules: data, not code.

Rules come from TOML files of the shape of `sql/kernel_rules.toml` (the defaults, which give
figures comparable everywhere): `[[class]]` rules with an optional `category`, an optional
`pattern` (a regular expression on the lower-cased kernel name) and a `class`; `[[collective]]`
rules with an optional `category`, an optional `pattern` and a `collective`. Rules are tried in
order and the first match wins; a user's rules (`--rules FILE`, or `_tracewh/kernel_rules.toml`
in the warehouse) come before the defaults, so they add to or override them.

A file is checked whole when it is read, so that a mistake is one error line naming the file and
the rule, not a rule silently ignored or every later query failing: unknown tables and keys (a
typo would drop a rule), values that are not strings, and patterns the engines cannot run.
"""

import functools
import hashlib
import importlib.resources
import json
import re
import reprlib
import tomllib
from pathlib import Path

import re2

from . import storage
from .errors import UsageError
from .storage.names import did_you_mean

CLASSES = ("communication", "computation", "memory", "sync", "other")
WAREHOUSE_RULES = Path("_tracewh") / "kernel_rules.toml"
# The keys of each kind of rule; the last is the rule's value (what it assigns).
KEYS = {"class": ("category", "pattern", "class"),
        "collective": ("category", "pattern", "collective")}
MAX_NESTING = 100  # groups within groups in a pattern; Java's regex refuses 2,000


def load_rules(path=None, text=None):
    """[(target, category, pattern, value)] from a TOML file (or text), checked."""
    label = str(path) if path else "kernel rules"
    document = read_tables(label, "rules", path, text, KEYS)
    return [_rule(f"{label}: [[{target}]] #{index + 1}", target, rule)
            for target in KEYS for index, rule in enumerate(document.get(target, []))]


def read_tables(label, what, path, text, kinds):
    """The TOML document of a data file (kernel rules, device peaks) whose top level holds
    arrays of tables of the `kinds` only, read from `path` (or `text`) and checked; a mistake
    is a UsageError naming `label`."""
    try:
        document = tomllib.loads(text if text is not None else Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{label}: cannot read {what}: {error}") from None
    tables_list = " and ".join(f"[[{kind}]]" for kind in kinds)
    for key, tables in document.items():
        if key not in kinds:
            raise UsageError(f"{label}: unknown key {key!r}: a {what} file holds "
                             f"{tables_list} tables{did_you_mean(key, kinds)}")
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise UsageError(f"{label}: {key!r} must be [[{key}]] tables")
    return document


def check_keys(where, table, keys):
    """Refuse a key of `table` (one [[...]] entry) that is not one of `keys`: a typo would
    drop the value silently."""
    for key in table:
        if key not in keys:
            raise UsageError(f"{where}: unknown key {key!r}: use {', '.join(keys)}"
                             f"{did_you_mean(key, keys)}")


def check_pattern(where, pattern):
    """Refuse a regular expression that DuckDB and Spark would not both run alike."""
    problem = _pattern_problem(pattern)
    if problem:
        raise UsageError(f"{where}: bad pattern {reprlib.repr(pattern)}: {problem}")


def _rule(where, target, rule):
    """(target, category, pattern, value) of one rule table, checked."""
    keys = KEYS[target]
    check_keys(where, rule, keys)
    for key, value in rule.items():
        if not isinstance(value, str):
            raise UsageError(f"{where}: {key!r} must be a string, not {value!r}")
    category, pattern, value = (rule.get(key) for key in keys)
    if value is None:
        raise UsageError(f"{where}: needs a string {target!r}")
    if target == "class" and value not in CLASSES:
        raise UsageError(f"{where}: class must be one of {', '.join(CLASSES)}")
    if pattern is not None:
        check_pattern(where, pattern)
    return target, category, pattern, value


# RE2 forms that Java's regex refuses or reads otherwise: a named group (?P<name>...), a single
# byte \C, a POSIX class [[:alpha:]] (a set of ':', 'a', 'l'... to Java), the ungreedy flag U.
_NOT_JAVA = re.compile(r"\(\?P<|(?<!\\)\\C|\[:\^?[a-z]+:\]|\(\?[a-zA-Z-]*U")


def _pattern_problem(pattern):
    """Why `pattern` cannot classify kernels, or None. DuckDB runs it with RE2 (regexp_matches),
    Spark with Java's java.util.regex (the transpiled SQL), the ingest with RE2 too
    (`matches`). RE2 is the stricter: it refuses lookaround and backreferences, which Java
    (and Python's re) accept, so RE2 is the check; the few RE2 forms Java refuses or reads
    otherwise are refused besides, and so is deep nesting, which Java refuses (RE2 does not)."""
    if _nesting(pattern) > MAX_NESTING:
        return f"groups nest more than {MAX_NESTING} deep"
    unlike = _NOT_JAVA.search(pattern)
    if unlike:
        return f"{unlike.group()!r} is not read alike by DuckDB's RE2 and Spark's Java regex"
    try:
        _compiled(pattern)
    except re2.error as error:
        message = error.args[0] if error.args else "not a regular expression"
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        return f"{message} (patterns are RE2: no lookaround, no backreferences)"
    return None


def matches(pattern, text):
    """Whether RE2, the engine of DuckDB's regexp_matches, finds `pattern` in `text`: the one
    matcher outside SQL (the ingest classifies kernels with it), so a rule means the same at
    ingest and in the views. RE2 is a C++ library without threads of its own: safe in the
    ingest's forked workers, where a DuckDB connection is not."""
    return _compiled(pattern).search(text) is not None


_QUIET = re2.Options()
_QUIET.log_errors = False  # a bad pattern is the UsageError's one line, not a log line too


@functools.lru_cache(maxsize=1024)
def _compiled(pattern):
    return re2.compile(pattern, options=_QUIET)


def _nesting(pattern):
    """How deep groups nest in `pattern` (escaped characters and [...] sets do not count)."""
    depth = deepest = 0
    in_set = False
    characters = iter(pattern)
    for character in characters:
        if character == "\\":
            next(characters, None)  # the escaped character
        elif in_set:
            in_set = character != "]"
        elif character == "[":
            in_set = True
        elif character == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif character == ")":
            depth -= 1
    return deepest


def default_rules():
    return list(_default_rules())


@functools.cache
def _default_rules():
    """The shipped rules, read and checked once per process: a query asks for them several
    times, and checking opens a DuckDB."""
    text = importlib.resources.files("tracewh.sql").joinpath("kernel_rules.toml").read_text()
    return tuple(load_rules(text=text))


def rules_fingerprint(rules):
    """A short stable digest of a rule list: marks what cached classifications assumed."""
    return hashlib.sha256(json.dumps(rules).encode()).hexdigest()[:16]


def effective_rules(warehouse_root, rules_file=None):
    """User rules first (--rules, then the warehouse's file), then the defaults."""
    rules = []
    if rules_file is not None:
        rules += load_rules(rules_file)
    stored = storage.location(warehouse_root) / WAREHOUSE_RULES
    if isinstance(stored, Path) and stored.is_file():  # an object store's: --rules FILE
        rules += load_rules(stored)
    return rules + default_rules()


RULES_TABLE = ("CREATE OR REPLACE TABLE kernel_class_rules (target VARCHAR, priority INTEGER, "
               "category VARCHAR, pattern VARCHAR, value VARCHAR)")


def rules_rows(rules):
    """The rows of table kernel_class_rules: (target, priority, category, pattern, value)."""
    return [(t, i, c, p, v) for i, (t, c, p, v) in enumerate(rules)]


def insert_rows(connection, table, rows):
    """Insert `rows` (tuples of one width) into `table` in one statement. DuckDB's executemany
    runs a statement per row, ~0.3 ms each: the 105 device peaks and 17 kernel rules took
    0.04 s of every connection (a query, the refresh), a tenth of a small query's time."""
    if not rows:
        return
    row = "(" + ", ".join("?" * len(rows[0])) + ")"
    connection.execute(f"INSERT INTO {table} VALUES " + ", ".join([row] * len(rows)),
                       [value for values in rows for value in values])


def create_rules_table(connection, rules):
    connection.execute(RULES_TABLE)
    insert_rows(connection, "kernel_class_rules", rules_rows(rules))
