"""Kernel classification rules: data, not code.

Rules come from TOML files of the shape of `sql/kernel_rules.toml` (the defaults, which give
figures comparable everywhere): `[[class]]` rules with an optional `category`, an optional
`pattern` (a regular expression on the lower-cased kernel name) and a `class`; `[[collective]]`
rules with an optional `pattern` and a `collective`. Rules are tried in order and the first
match wins; a user's rules (`--rules FILE`, or `_tracewh/kernel_rules.toml` in the warehouse)
come before the defaults, so they add to or override them.
"""

import hashlib
import importlib.resources
import json
import re
import tomllib
from pathlib import Path

from .errors import UsageError

CLASSES = ("communication", "computation", "memory", "sync", "other")
WAREHOUSE_RULES = Path("_tracewh") / "kernel_rules.toml"


def load_rules(path=None, text=None):
    """[(target, category, pattern, value)] from a TOML file (or text), checked."""
    label = str(path) if path else "kernel rules"
    try:
        document = tomllib.loads(text if text is not None else Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{label}: cannot read rules: {error}") from None
    rules = []
    for target, value_key in (("class", "class"), ("collective", "collective")):
        for index, rule in enumerate(document.get(target, [])):
            where = f"{label}: [[{target}]] #{index + 1}"
            if not isinstance(rule, dict) or not isinstance(rule.get(value_key), str):
                raise UsageError(f"{where}: needs a string '{value_key}'")
            if target == "class" and rule[value_key] not in CLASSES:
                raise UsageError(f"{where}: class must be one of {', '.join(CLASSES)}")
            pattern = rule.get("pattern")
            if pattern is not None:
                try:
                    re.compile(pattern)
                except (re.error, TypeError) as error:
                    raise UsageError(f"{where}: bad pattern {pattern!r}: {error}") from None
            rules.append((target, rule.get("category"), pattern, rule[value_key]))
    return rules


def default_rules():
    text = importlib.resources.files("tracewh.sql").joinpath("kernel_rules.toml").read_text()
    return load_rules(text=text)


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
