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

import duckdb

from .errors import UsageError
from .scope import did_you_mean

CLASSES = ("communication", "computation", "memory", "sync", "other")
WAREHOUSE_RULES = Path("_tracewh") / "kernel_rules.toml"
# The keys of each kind of rule; the last is the rule's value (what it assigns).
KEYS = {"class": ("category", "pattern", "class"),
        "collective": ("category", "pattern", "collective")}
MAX_NESTING = 100  # groups within groups in a pattern; Java's regex refuses 2,000


def load_rules(path=None, text=None):
    """[(target, category, pattern, value)] from a TOML file (or text), checked."""
    label = str(path) if path else "kernel rules"
    try:
        document = tomllib.loads(text if text is not None else Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{label}: cannot read rules: {error}") from None
    for key, tables in document.items():
        if key not in KEYS:
            raise UsageError(f"{label}: unknown key {key!r}: a rules file holds [[class]] and "
                             f"[[collective]] tables{did_you_mean(key, KEYS)}")
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise UsageError(f"{label}: {key!r} must be [[{key}]] tables")
    # A DuckDB of its own, in memory, closed after: one left open would be copied, threads and
    # all, into the ingest's forked workers.
    with duckdb.connect() as engine:
        return [_rule(f"{label}: [[{target}]] #{index + 1}", target, rule, engine)
                for target in KEYS for index, rule in enumerate(document.get(target, []))]


def _rule(where, target, rule, engine):
    """(target, category, pattern, value) of one rule table, checked."""
    keys = KEYS[target]
    for key, value in rule.items():
        if key not in keys:
            raise UsageError(f"{where}: unknown key {key!r}: use {', '.join(keys)}"
                             f"{did_you_mean(key, keys)}")
        if not isinstance(value, str):
            raise UsageError(f"{where}: {key!r} must be a string, not {value!r}")
    category, pattern, value = (rule.get(key) for key in keys)
    if value is None:
        raise UsageError(f"{where}: needs a string {target!r}")
    if target == "class" and value not in CLASSES:
        raise UsageError(f"{where}: class must be one of {', '.join(CLASSES)}")
    if pattern is not None:
        problem = _pattern_problem(pattern, engine)
        if problem:
            raise UsageError(f"{where}: bad pattern {reprlib.repr(pattern)}: {problem}")
    return target, category, pattern, value


# RE2 forms that Java's regex refuses or reads otherwise: a named group (?P<name>...), a single
# byte \C, a POSIX class [[:alpha:]] (a set of ':', 'a', 'l'... to Java), the ungreedy flag U.
_NOT_JAVA = re.compile(r"\(\?P<|(?<!\\)\\C|\[:\^?[a-z]+:\]|\(\?[a-zA-Z-]*U")


def _pattern_problem(pattern, engine):
    """Why `pattern` cannot classify kernels, or None. DuckDB runs it with RE2 (regexp_matches),
    Spark with Java's java.util.regex (the transpiled SQL). RE2 is the stricter: it refuses
    lookaround and backreferences, which Java (and Python's re) accept, so RE2 is the check,
    here DuckDB's own (`engine`); the few RE2 forms Java refuses or reads otherwise are
    refused besides, and so is deep nesting, which Java refuses (RE2 does not)."""
    if _nesting(pattern) > MAX_NESTING:
        return f"groups nest more than {MAX_NESTING} deep"
    unlike = _NOT_JAVA.search(pattern)
    if unlike:
        return f"{unlike.group()!r} is not read alike by DuckDB's RE2 and Spark's Java regex"
    try:
        engine.execute("SELECT regexp_matches('', ?)", [pattern])
    except duckdb.Error as error:
        return (str(error).removeprefix("Invalid Input Error: ")
                + " (patterns are RE2: no lookaround, no backreferences)")
    return None


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
    stored = Path(warehouse_root) / WAREHOUSE_RULES
    if stored.is_file():
        rules += load_rules(stored)
    return rules + default_rules()


RULES_TABLE = ("CREATE OR REPLACE TABLE kernel_class_rules (target VARCHAR, priority INTEGER, "
               "category VARCHAR, pattern VARCHAR, value VARCHAR)")


def rules_rows(rules):
    """The rows of table kernel_class_rules: (target, priority, category, pattern, value)."""
    return [(t, i, c, p, v) for i, (t, c, p, v) in enumerate(rules)]


def create_rules_table(connection, rules):
    connection.execute(RULES_TABLE)
    connection.executemany("INSERT INTO kernel_class_rules VALUES (?, ?, ?, ?, ?)",
                           rules_rows(rules))
