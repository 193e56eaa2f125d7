"""The SQL library in other engines' dialects (Spark, Trino) via sqlglot, and as one script
(DuckDB or Spark SQL) that defines a warehouse's tables, rules table, views and macros.

Beyond sqlglot's translation:
- percentile_disc stays exact: sqlglot turns it into approximate percentiles, so it is written
  as the nearest-rank value it is, `element_at(array_sort(values), ceil(p * count))` (an
  actual value, of the input's type: Spark's own percentile_disc answers a DOUBLE);
- DuckDB's NOT MATERIALIZED hint on CTEs is dropped (Spark and Trino inline CTEs);
- on Spark, views are temporary (the tables they read are temporary views) and table macros
  become SQL table functions, their parameters typed and qualified by the function's name
  (so that no column of the same name can capture them). Trino has no SQL table functions:
  a macro prints as its body with the parameters as placeholders.
"""

import re

import duckdb
import sqlglot
from sqlglot import exp

from tracewh.ingest.schema import TABLES

from .errors import UsageError
from .query import (empty_select, library_connection, library_modules_in_order,
                    live_replacements, scan_select, sql_string, typed_columns)
from .rules import RULES_TABLE, rules_rows

DIALECTS = ("duckdb", "spark", "trino")
_MACRO = re.compile(r"CREATE OR REPLACE MACRO (\w+)\((.*?)\) AS TABLE\s*(.*?;)", re.DOTALL)
# The library's macro parameters, by name, and their types (DuckDB's names).
PARAMETER_TYPES = {"base": "VARCHAR", "new": "VARCHAR", "threshold_pct": "DOUBLE",
                   "min_ns": "BIGINT", "key_by": "VARCHAR", "phase_filter": "VARCHAR",
                   "rank_filter": "INTEGER"}
# percentile_disc(p) WITHIN GROUP (ORDER BY x), exactly: the value of rank ceil(p * n).
_NEAREST_RANK = ("ELEMENT_AT(ARRAY_SORT(ARRAY_AGG(x) FILTER (WHERE x IS NOT NULL)), "
                 "CAST(GREATEST(1, CEIL(p * COUNT(x))) AS INT))")


def transpile(sql_text, dialect, macro_columns=None):
    """A library module's SQL in `dialect`, as a script. `macro_columns` ({macro: [(column,
    DuckDB type)]}, by default found by describing the macros in DuckDB) types Spark's table
    functions."""
    if dialect == "duckdb":
        return sql_text
    return "".join(f"{statement};\n" for statement in
                   transpile_statements(sql_text, dialect, macro_columns))


def transpile_statements(sql_text, dialect, macro_columns=None):
    """The statements of a library module in `dialect` (not DuckDB), without their ';'."""
    macros = _MACRO.findall(sql_text)
    if not macros:
        return _statements(sql_text, dialect)
    if dialect != "spark":
        return [f"-- table macro {name}({' '.join(params.split())}): parameters are "
                f"placeholders\n{statement}"
                for name, params, body in macros for statement in _statements(body, dialect)]
    columns = macro_columns if macro_columns is not None else describe_macros()
    return [_spark_function(name, [p.strip() for p in params.split(",")], body, columns[name])
            for name, params, body in macros]


def _statements(sql_text, dialect, parameters_of=None):
    statements = []
    for tree in sqlglot.parse(sql_text, read="duckdb"):
        for cte in tree.find_all(exp.CTE):
            # NOT MATERIALIZED is DuckDB's hint to let a run filter into a CTE used twice
            # (else it reads every file); Spark and Trino inline CTEs and have no such word.
            cte.set("materialized", None)
        for within in list(tree.find_all(exp.WithinGroup)):
            if isinstance(within.this, exp.PercentileDisc):
                within.replace(_nearest_rank(within))
        if parameters_of is not None:
            _qualify_parameters(tree, *parameters_of)
        text = tree.sql(dialect=dialect, pretty=True)
        if dialect == "spark":
            text = text.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMPORARY VIEW", 1)
        statements.append(text)
    return statements


def _nearest_rank(within):
    (ordered,) = within.expression.expressions
    if ordered.args.get("desc"):
        raise ValueError("percentile_disc ordered DESC is not translated")
    return sqlglot.parse_one(_NEAREST_RANK, read="trino").transform(
        lambda node: (ordered.this.copy() if isinstance(node, exp.Column) and node.name == "x"
                      else within.this.this.copy() if isinstance(node, exp.Column)
                      and node.name == "p" else node))


def _qualify_parameters(tree, function, parameters):
    for column in list(tree.find_all(exp.Column)):
        if not column.table and column.name in parameters:
            column.set("table", exp.to_identifier(function))


def _spark_function(name, parameters, body, columns):
    signature = ", ".join(f"{p} {spark_type(PARAMETER_TYPES[p])}" for p in parameters)
    returns = ", ".join(f"{_spark_name(column)} {spark_type(type_)}" for column, type_ in columns)
    (query,) = _statements(body, "spark", parameters_of=(name, set(parameters)))
    return (f"CREATE OR REPLACE TEMPORARY FUNCTION {name}({signature})\n"
            f"RETURNS TABLE ({returns})\nRETURN\n{query}")


def describe_macros():
    """{macro: [(column, DuckDB type)]} of the library's table macros, from DuckDB."""
    connection = library_connection()
    found = {}
    for text in library_modules_in_order().values():
        for name, params, _ in _MACRO.findall(text):
            arguments = ", ".join(f"CAST(NULL AS {PARAMETER_TYPES[p.strip()]})"
                                  for p in params.split(","))
            rows = connection.execute(f"DESCRIBE SELECT * FROM {name}({arguments})").fetchall()
            found[name] = [(row[0], row[1]) for row in rows]
    return found


def spark_type(duckdb_type):
    return exp.DataType.build(duckdb_type, dialect="duckdb").sql("spark")


def _spark_name(name):
    return "`" + name.replace("`", "``") + "`"


def _spark_string(text):
    return exp.Literal.string(text).sql("spark")


def script(dialect, snapshot, root, rules):
    """The statements that define, in a DuckDB connection or a SparkSession, every table at
    `snapshot` (over its live files, by name), the rules table, then the library in
    dependency order (with the sql/live/ modules where the rules need them)."""
    if dialect == "duckdb":
        return _duckdb_script(snapshot, root, rules)
    if dialect == "spark":
        return _spark_script(snapshot, root, rules)
    raise UsageError(f"no script for {dialect}: Trino reads the tables through its own "
                     "catalogs (Delta Lake or Hive connector); print its views without --script")


def _duckdb_script(snapshot, root, rules):
    paths = snapshot.paths(root)
    statements = [f"CREATE OR REPLACE VIEW {table.name} AS " + (
        scan_select(table, "[" + ", ".join(map(sql_string, paths[table.name])) + "]")
        if paths.get(table.name) else empty_select(table)) for table in TABLES.values()]
    statements.append(RULES_TABLE)
    statements.append("INSERT INTO kernel_class_rules VALUES "
                      + _rules_values(rules, sql_string))
    live = live_replacements(snapshot, rules)
    return statements + [live.get(name, text).strip().rstrip(";")
                         for name, text in library_modules_in_order().items()]


def _rules_values(rules, string):
    """The rows of the rules table as SQL VALUES rows, strings quoted by `string`."""
    def literal(value):
        return ("NULL" if value is None else str(value) if isinstance(value, int)
                else string(value))

    return ", ".join("(" + ", ".join(map(literal, row)) + ")" for row in rules_rows(rules))


def _spark_script(snapshot, root, rules):
    paths = snapshot.paths(root)
    live = live_replacements(snapshot, rules)
    statements = [statement for table in TABLES.values()
                  for statement in _spark_table(table, root, paths.get(table.name, []))]
    statements.append(_spark_rules(rules))
    macro_columns = describe_macros()
    for name, text in library_modules_in_order().items():
        statements += transpile_statements(live.get(name, text), "spark", macro_columns)
    return statements


def _spark_table(table, root, paths):
    """A temporary view of the table over its live files: the table's directory, its files
    kept by name (`pathGlobFilter` takes {a,b,...}; names are unique: each holds its trace's
    id), with the Hive partitions typed by the schema. The path is the directory itself, not a
    glob: Spark looks for a streaming sink's metadata in a single path and logs a stack trace
    for every path that is not a real file or directory."""
    if not paths:
        return [f"CREATE OR REPLACE TEMPORARY VIEW {table.name} AS "
                + sqlglot.transpile(empty_select(table), read="duckdb", write="spark")[0]]
    directory = f"{root}/{table.name}"
    names = sorted(path.rsplit("/", 1)[1] for path in paths)
    columns = typed_columns(table)
    schema = ", ".join(f"{_spark_name(name)} {spark_type(type_)}" for name, type_ in columns)
    listed = ", ".join(_spark_name(name) for name, _ in columns)
    files = f"tracewh_files_{table.name}"
    return [f"CREATE OR REPLACE TEMPORARY VIEW {files} ({schema}) USING parquet OPTIONS ("
            f"path {_spark_string(directory)}, "
            f"pathGlobFilter {_spark_string('{' + ','.join(names) + '}')})",
            f"CREATE OR REPLACE TEMPORARY VIEW {table.name} AS SELECT {listed} FROM {files}"]


def _spark_rules(rules):
    rows = _rules_values(rules, _spark_string)
    return ("CREATE OR REPLACE TEMPORARY VIEW kernel_class_rules AS SELECT "
            "CAST(target AS STRING) AS target, CAST(priority AS INT) AS priority, "
            "CAST(category AS STRING) AS category, CAST(pattern AS STRING) AS pattern, "
            f"CAST(value AS STRING) AS value FROM VALUES {rows} "
            "AS rules(target, priority, category, pattern, value)")


def script_text(statements):
    return "".join(f"{statement};\n\n" for statement in statements)
