"""The SQL library in `sql/`: its modules, what each reads, the order a connection defines them
in, the public views with their helpers inlined, the live switch and the fingerprint.

Each module's header declares what it reads (`-- Reads: a, b`): dependency order and the
tables a query needs come from those declarations (tests/test_library.py checks each one
against the SQL). Modules named with a leading `_` are internal helpers, building blocks
rather than contracts: they are not published. A public view that reads one is published
with the helper's SELECT defined first in its WITH clause, as a CTE of the helper's name
(sqlglot), so every connection, `tracewh.duckdb`, the Spark script and `tracewh views` hold the
public views only.
"""

import functools
import hashlib
import importlib.resources
import itertools
import json
import os
import re
from pathlib import Path

from ..peaks import default_peaks
from ..rules import default_rules, rules_fingerprint

_HEADER_COMMENT = re.compile(r"\A((?:--[^\n]*\n|\s*\n)+)")
_FIELD = re.compile(r"^-- (Reads|Parameters):(.*(?:\n--  +\S.*)*)", re.MULTILINE)
_DEFINES = re.compile(r"CREATE OR REPLACE (?:VIEW|MACRO) (\w+)")
# How helpers are inlined into the views that read them (2: as CTEs, each once, see `_inline`;
# 3: those of _STREAMED not materialized): part of the inlined library's cache key and of the
# fingerprint, so that a change of it publishes the views again, as a change of their SQL does.
INLINING = 3

# Helpers whose CTE is not materialized (DuckDB's NOT MATERIALIZED; Spark and Trino have no
# such word, see dialects._statements): each place that reads one computes it again, fused
# with that place's filters and joins. `_host_layers` is a filter of call_tree (31M rows over
# 64 ranks of the 254 MB trace), which its CTE wrote whole before any join read it: over those
# ranks, recorded without shapes (0 rows), op_perf took 6.3 -> 1.3-1.4 s of CPU, gemm_shapes
# 6.9-7.0 -> 1.4 s, op_stats_by_shape 5.6-5.7 -> 0.2 s (see docs/query-speed.md).
_STREAMED = frozenset({"_host_layers"})


def library():
    """The SQL library: {module name: (description, SQL text)}, from the `sql` package, helpers
    included (see `public_library` for what is published)."""
    views = {}
    resources = importlib.resources.files("tracewh.sql").iterdir()
    for resource in sorted(resources, key=lambda r: r.name):
        if resource.name.endswith(".sql"):
            text = resource.read_text()
            views[resource.name[:-4]] = (describe(text), text)
    return views


def is_internal(name):
    """A helper view: a building block of public views, not a contract of its own."""
    return name.startswith("_")


def header(sql_text):
    """A module's header comment (the `--` lines before its SQL)."""
    match = _HEADER_COMMENT.match(sql_text)
    return match.group(1) if match else ""


def _header_field(sql_text, field):
    """The comma-separated items of a header line `-- <field>: a, b` (continued on lines
    `--   c, d`), or None without one."""
    for name, value in _FIELD.findall(header(sql_text)):
        if name == field:
            text = " ".join(line.lstrip("-").strip() for line in value.splitlines())
            return [item.strip() for item in text.split(",") if item.strip()]
    return None


def declared_reads(sql_text):
    """The tables, views and macros a module's `-- Reads:` header line names."""
    reads = _header_field(sql_text, "Reads")
    if reads is None:
        raise RuntimeError(f"a library module has no '-- Reads:' header line: {sql_text[:80]!r}")
    return reads


def parameter_types(sql_text):
    """{parameter: DuckDB type} of a macro module's `-- Parameters: name TYPE, ...` line:
    Spark's SQL functions need typed parameters, DuckDB's macros have none to read."""
    items = _header_field(sql_text, "Parameters") or []
    return dict(item.split(None, 1) for item in items)


def defines(sql_text):
    """The views and macros a module defines."""
    return _DEFINES.findall(sql_text)


@functools.cache
def _modules_and_needs():
    """({module: SQL text}, {module: [the modules whose views or macros it reads]}). A
    module's needs are also those of its live twin, which may read what the module as
    written does not (_host_ancestors' reads op_kernels): one order serves both."""
    modules = {name: text for name, (_, text) in library().items()}
    twins = dict(_live_texts())
    reads = {name: {*declared_reads(text), *declared_reads(twins.get(name, text))}
             for name, text in modules.items()}
    needs = {name: sorted({_defined_by()[read] for read in reads[name]
                           if _defined_by().get(read, name) != name})
             for name in modules}
    return modules, needs


@functools.cache
def _defined_by():
    """{view or macro name: the library module that defines it}."""
    return {defined: name for name, (_, text) in library().items()
            for defined in defines(text)}


def tables_read_by(*names):
    """The tables that tables, library views or macros read, through every view they read:
    what a connection for a query of them must list files of. The live modules' reading
    counts too (custom rules swap them in)."""
    return {name for name in _reached(names) if name in _table_names()}


def modules_read_by(*names):
    """The library modules that views or macros read, themselves included, through every
    module they read: what a connection for a query of them must define (defining all of
    the library binds some 60 views, about 1 s)."""
    return {name for name in _reached(names) if name not in _table_names()}


def modules_reaching(*names):
    """The public modules that read any of `names` (views, macros, helpers), directly or not,
    or define one of them."""
    targets = {_defined_by().get(name, name) for name in names}
    return {module for module in published_modules() if targets & _reached([module])}


def defines_name(name):
    """Whether `name` is a table or a view or macro of the library (its public modules')."""
    return name in _table_names() or defines_public(name)


def defines_public(name):
    """Whether `name` is a view or macro of the library's public modules."""
    return name in _defined_by() and not is_internal(_defined_by()[name])


def names_reached(*names):
    """Every module and table `names` read, directly or not, themselves included: of them,
    the tables are those a query of `names` reads (see `tables_read_by`, which tells them
    from the modules by the schema)."""
    return _reached(names)


def names_reached_past(names, past):
    """`names_reached(*names)` where the modules `past` are read from elsewhere (their marts):
    the tables among them are those a question of `names` scans."""
    return _reached(names, frozenset(past))


def _table_names():
    """The warehouse's tables (imported here: their Arrow types import pyarrow, which a
    query answered from tracewh.duckdb does without)."""
    from ..storage.schema import TABLES

    return TABLES


def _reached(names, past=()):
    """Every module and table `names` (views, macros, tables) read, directly or not, and
    their own modules; what the modules `past` read is not followed."""
    modules, _ = _modules_and_needs()
    live = dict(_live_texts())
    seen, pending = set(), [_defined_by().get(name, name) for name in names]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in past:
            continue
        for text in (modules.get(current), live.get(current)):
            if text is not None:
                pending += [_defined_by().get(read, read) for read in declared_reads(text)]
    return seen


@functools.cache
def library_modules_in_order():
    """{module name: SQL text}, helpers included, each module after those whose views or
    macros it uses, so that a connection defines every view once (defining in file order took
    56 attempts for 25 modules, each failed one binding its inputs for nothing)."""
    modules, needs = _modules_and_needs()
    ordered, visiting = {}, set()

    def place(name):
        if name in ordered:
            return
        if name in visiting:
            raise RuntimeError(f"the SQL library's views depend on each other in a cycle "
                               f"through {name}")
        visiting.add(name)
        for needed in needs[name]:
            place(needed)
        ordered[name] = modules[name]

    for name in sorted(modules):
        place(name)
    return ordered


def library_in_order():
    """The library's SQL texts in the order `library_modules_in_order` defines them."""
    return tuple(library_modules_in_order().values())


def published_modules(live=()):
    """{public module: SQL text} in dependency order, each reading no helper: a helper a view
    reads, and those it reads, are CTEs of the view's WITH clause (see `_inline`). The
    helpers named in `live` are replaced by their sql/live/ twins, which compute at query time
    what the originals read as measured at ingest (see `live_helpers`). A module that reads no
    helper keeps its text as written."""
    return _inlined_library(live)["public"]


def inlined_helper(name, live=()):
    """The CREATE VIEW of the helper `name`, the helpers it reads inlined as in the public
    views: for code that asks a helper's question itself (a mart computed in Python)."""
    return _inlined_library(live)["helpers"][name]


def helper_select(name, live=()):
    """The SELECT of `inlined_helper(name, live)`: no connection defines a helper (the public
    views inline them), so code that asks its question asks this."""
    return view_select(inlined_helper(name, live))


def module_select(name, live=()):
    """The SELECT of module `name` as written (its sql/live/ twin's where `live` names it),
    reading its helpers by name: for a connection on which those helpers are defined, their
    rows computed once for every view that reads them."""
    return view_select(_module_text(name, live))


def helpers_read(name, live=()):
    """The helpers module `name` reads directly (as written, or its live twin)."""
    return [read for read in declared_reads(_module_text(name, live)) if is_internal(read)]


def _module_text(name, live):
    """Module `name` as written, or its sql/live/ twin where `live` names it."""
    return dict(_live_texts())[name] if name in live else library_modules_in_order()[name]


def view_select(sql_text):
    """The SELECT of a module that is one CREATE VIEW."""
    match = _CREATE_VIEW.search(sql_text)
    if match is None:
        raise RuntimeError(f"not a CREATE VIEW module: {sql_text[:80]!r}")
    return sql_text[match.end():].strip().rstrip(";")


_CREATE_VIEW = re.compile(r"CREATE OR REPLACE VIEW\s+\w+\s+AS\s", re.IGNORECASE)


@functools.cache
def _inlined_library(live):
    """{"public": published_modules, "helpers": {helper: its CREATE VIEW, inlined}}.

    Inlining parses and writes ~25 modules with sqlglot (1-2 s), which every command's process
    would pay on its first connection: the result is kept in the user's cache directory under
    a digest of the library's texts, so it is computed once per library, not per command."""
    digest = hashlib.sha256(json.dumps([INLINING, library_in_order(), _live_texts(), live])
                            .encode()).hexdigest()[:16]
    cached = cache_directory() / f"library-{digest}.json"
    try:
        return json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    inlined = _inlined_modules(live)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_name(f".{cached.name}.{os.getpid()}")
        temporary.write_text(json.dumps(inlined), encoding="utf-8")
        os.replace(temporary, cached)
    except OSError:
        pass  # an unwritable cache costs the inlining again, nothing else
    return inlined


def cache_directory():
    """The user's cache of what tracewh makes once per library: $XDG_CACHE_HOME/tracewh, else
    ~/.cache/tracewh. Safe to delete at any time."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tracewh"


def _inlined_modules(live):
    """published_modules' work, where its cache misses: sqlglot (~0.07 s to import) is
    imported here only, not by every command that reads the library."""
    import sqlglot

    replacements = {name: text for name, text in _live_texts() if name in live}
    selects, reads, inlined = {}, {}, {"public": {}, "helpers": {}}
    for name, text in library_modules_in_order().items():
        text = replacements.get(name, text)
        helpers = [read for read in declared_reads(text) if is_internal(read)]
        if is_internal(name):
            selects[name] = sqlglot.parse_one(text, read="duckdb").expression
            reads[name] = helpers
        if helpers:
            text = _inline(text, _helpers_in_order(helpers, reads), selects)
        inlined["helpers" if is_internal(name) else "public"][name] = text
    return inlined


def _helpers_in_order(helpers, reads):
    """`helpers` and every helper they read ({helper: the helpers it reads}), directly or
    not, each after those it reads."""
    ordered = {}

    def place(name):
        if name not in ordered:
            for read in reads[name]:
                place(read)
            ordered[name] = True

    for name in helpers:
        place(name)
    return list(ordered)


def _inline(sql_text, helpers, selects):
    """`sql_text` (one CREATE VIEW) with the `helpers` it reads (and those they read, in
    that order) defined first in its WITH clause, each once, as a CTE of the helper's name
    and SELECT. A helper read in several places is then planned once: inlined as a subquery
    in each place, op_perf held _op_models' 60 kB of SQL twice (and _dtypes once per operand
    of each model), and DuckDB spent more time planning it than running it (0.7 s of CPU
    against 0.25 s now, over one rank of TraceLens's H100 trace)."""
    import sqlglot
    from sqlglot import exp

    if _macro_text(sql_text):
        raise RuntimeError("a table macro reads a helper view: inline it by hand")
    tree = sqlglot.parse_one(sql_text, read="duckdb")
    query = tree.expression
    ctes = [exp.CTE(this=selects[name].copy(), alias=exp.TableAlias(this=exp.to_identifier(name)),
                    materialized=False if name in _STREAMED else None)
            for name in helpers]
    with_ = query.args.get("with_")
    if with_ is None:
        query.set("with_", exp.With(expressions=ctes))
    else:
        with_.set("expressions", [*ctes, *with_.expressions])
    return header(sql_text) + tree.sql(dialect="duckdb", pretty=True, comments=False) + ";\n"


def _macro_text(sql_text):
    return "CREATE OR REPLACE MACRO" in sql_text


def public_library():
    """{public view or macro module: (description, published SQL)}, by name: what `tracewh
    views` lists and prints."""
    published = published_modules()
    return {name: (describe(published[name]), published[name]) for name in sorted(published)}


def library_fingerprint(rules):
    """A digest of what derived answers follow from besides the data: the SQL library (its
    live modules too), the kernel rules and the device peaks."""
    text = json.dumps([INLINING, library_in_order(), _live_texts(), rules, default_peaks()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(sql_text):
    """The first sentence of a module's header comment."""
    lines = [line.lstrip("-").strip() for line in header(sql_text).splitlines()]
    paragraph = " ".join(itertools.takewhile(bool, itertools.dropwhile(lambda x: not x, lines)))
    sentence, dot, _ = paragraph.partition(". ")
    return sentence.rstrip(":") + ("." if dot and not sentence.endswith(".") else "")


def live_helpers(snapshot, rules):
    """THE live switch: which helpers a connection over `snapshot` with `rules` replaces by
    their sql/live/ twins, which compute at query time (slower, the same figures) what the
    originals read as measured at ingest. Every connection, `tracewh.duckdb` and the Spark
    script decide here.

    The class intervals and lengths (`gpu_intervals`, `gpu_time`), the steps' figures
    (`step_time`) and the ops' (`op_time`, `op_call_time`, whose communication time follows
    the classes) were measured with the default kernel rules: when the effective rules
    differ, or the snapshot holds traces classified under other rules, none of them holds;
    nor do the step and annotation windows' overlap (`window_time`). The ops' and windows'
    figures also do not hold in a warehouse created before `op_time` (or `op_call_time`,
    `window_time`) existed (its older traces have none): there their helpers alone are live.
    The host call tree (`call_tree`, `kernel_ops`, `kernel_attribution`, `call_ancestors`,
    `backward_links`) follows no rules: each is live only in a warehouse created before its
    table existed."""
    trees = {"_host_layers": "call_tree", "_kernel_ops": "kernel_ops",
             "_kernel_attribution": "kernel_attribution",
             "_host_ancestors": "call_ancestors", "_backward_links": "backward_links"}
    stored = {"_op_time": "op_time", "_op_call_time": "op_call_time",
              "_op_calls_live_traces": "op_call_time", "_window_time": "window_time", **trees}
    if not (rules == default_rules()
            and set(snapshot.class_rules) <= {rules_fingerprint(rules)}):
        live = {name for name, _ in _live_texts()} - set(trees)
    else:
        live = set()
    live |= {helper for helper, table in stored.items() if table not in snapshot.versions}
    return tuple(name for name, _ in _live_texts() if name in live)


def library_for(snapshot, rules):
    """{public module: SQL} a connection over `snapshot` with `rules` defines, in order."""
    return published_modules(live_helpers(snapshot, rules))


@functools.cache
def _live_texts():
    live = importlib.resources.files("tracewh.sql").joinpath("live")
    return tuple((resource.name[:-4], resource.read_text())
                 for resource in sorted(live.iterdir(), key=lambda r: r.name)
                 if resource.name.endswith(".sql"))
