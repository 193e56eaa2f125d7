"""The SQL library in other engines' dialects (Spark, Trino) via sqlglot, and as one script
(DuckDB or Spark SQL) that defines a warehouse's tables, rules table, views and macros.

Beyond sqlglot's translation:
- percentile_disc stays exact: sqlglot turns it into approximate percentiles, so it is written
  as the nearest-rank value it is, `element_at(array_sort(values), ceil(p * count))` (an
  actual value, of the input's type: Spark's own percentile_disc answers a DOUBLE);
- DuckDB's list_sum (a sum of an array's elements) becomes Spark's `aggregate` and Trino's
  `reduce` with an adding lambda (sqlglot passes it through untranslated);
- DuckDB's NOT MATERIALIZED hint on CTEs is dropped (Spark and Trino inline CTEs);
- on Spark, views are temporary (the tables they read are temporary views) and table macros
  become SQL table functions, their parameters typed and qualified by the function's name
  (so that no column of the same name can capture them). Trino has no SQL table functions:
  a macro prints as its body with the parameters as placeholders.
"""

import re

import sqlglot
from sqlglot import exp

from ..errors import UsageError
from .library import library_for, modules_reaching, parameter_types, published_modules
from ..peaks import COLUMNS as PEAKS_COLUMNS, PEAKS_TABLE, default_peaks, peaks_rows
from .define import library_connection
from ..rules import RULES_TABLE, rules_rows
from ..storage.schema import TABLES
from .table_sql import empty_select, scan_select, sql_string, typed_columns

DIALECTS = ("duckdb", "spark", "trino")
_MACRO = re.compile(r"CREATE OR REPLACE MACRO (\w+)\((.*?)\) AS TABLE\s*(.*?;)", re.DOTALL)
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
    types = parameter_types(sql_text)
    return [_spark_function(name, [p.strip() for p in params.split(",")], body, columns[name],
                            types)
            for name, params, body in macros]


def _statements(sql_text, dialect, parameters_of=None):
    statements = []
    for tree in sqlglot.parse(sql_text, read="duckdb"):
        for cte in tree.find_all(exp.CTE):
            # NOT MATERIALIZED is DuckDB's hint to let a run filter into a CTE used twice
            # (else it reads every file); Spark and Trino inline CTEs and have no such word.
            cte.set("materialized", None)
        for call in list(tree.find_all(exp.Anonymous)):
            if call.name.lower() == "list_sum":
                call.replace(_array_sum(call, dialect))
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


_ARRAY_SUMS = {"spark": "AGGREGATE(x, CAST(0 AS BIGINT), (a, v) -> a + v)",
               "trino": "REDUCE(x, CAST(0 AS BIGINT), (a, v) -> a + v, a -> a)"}


def _array_sum(call, dialect):
    (array,) = call.expressions
    return sqlglot.parse_one(_ARRAY_SUMS[dialect], read=dialect).transform(
        lambda node: array.copy() if isinstance(node, exp.Column) and node.name == "x"
        else node)


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


def _spark_function(name, parameters, body, columns, types):
    signature = ", ".join(f"{p} {spark_type(types[p])}" for p in parameters)
    returns = ", ".join(f"{_spark_name(column)} {spark_type(type_)}" for column, type_ in columns)
    (query,) = _statements(body, "spark", parameters_of=(name, set(parameters)))
    return (f"CREATE OR REPLACE TEMPORARY FUNCTION {name}({signature})\n"
            f"RETURNS TABLE ({returns})\nRETURN\n{query}")


def describe_macros():
    """{macro: [(column, DuckDB type)]} of the library's table macros, from DuckDB."""
    connection = library_connection()
    found = {}
    for text in published_modules().values():
        for name, params, _ in _MACRO.findall(text):
            arguments = ", ".join(f"CAST(NULL AS {parameter_types(text)[p.strip()]})"
                                  for p in params.split(","))
            rows = connection.execute(f"DESCRIBE SELECT * FROM {name}({arguments})").fetchall()
            found[name] = [(row[0], row[1]) for row in rows]
    return found


def spark_type(duckdb_type):
    return exp.DataType.build(duckdb_type, dialect="duckdb").sql("spark")


def _spark_name(name):
    return "`" + name.replace("`", "``") + "`"


def _spark_string(text):
    """A Spark string literal of `text`, each `$` written as the escape \\u0024: Spark
    substitutes ${env:NAME} and the like in the SQL text before it parses it (see
    SPARK_SCRIPT_SETTINGS), also in a session that has substitution on (`spark.register`)."""
    return exp.Literal.string(text).sql("spark").replace("$", "\\u0024")


def script(dialect, snapshot, root, rules, peaks=None):
    """The statements that define, in a DuckDB connection or a SparkSession, every table at
    `snapshot` (over its live files, by name), the rules and device peaks tables (`peaks`:
    the defaults unless given), then the library in dependency order (public views only,
    helpers inlined; the sql/live/ helpers where the rules need them)."""
    peaks = default_peaks() if peaks is None else peaks
    if dialect == "duckdb":
        return _duckdb_script(snapshot, root, rules, peaks)
    if dialect == "spark":
        return _spark_script(snapshot, root, rules, peaks)
    raise UsageError(f"no script for {dialect}: Trino reads the tables through its own "
                     "catalogs (Delta Lake or Hive connector); print its views without --script")


def _duckdb_script(snapshot, root, rules, peaks):
    paths = snapshot.paths(root)
    statements = [f"CREATE OR REPLACE VIEW {table.name} AS " + (
        scan_select(table, "[" + ", ".join(map(sql_string, paths[table.name])) + "]")
        if paths.get(table.name) else empty_select(table)) for table in TABLES.values()]
    statements.append(RULES_TABLE)
    statements.append("INSERT INTO kernel_class_rules VALUES "
                      + _values(rules_rows(rules), sql_string))
    statements.append(PEAKS_TABLE)
    statements.append("INSERT INTO device_peaks VALUES " + _values(peaks_rows(peaks), sql_string))
    return statements + [text.strip().rstrip(";")
                         for text in library_for(snapshot, rules).values()]


def _values(rows, string):
    """Rows of a data table (kernel rules, device peaks) as SQL VALUES rows, strings quoted
    by `string`."""
    def literal(value):
        return ("NULL" if value is None else repr(value) if isinstance(value, (int, float))
                else string(value))

    return ", ".join("(" + ", ".join(map(literal, row)) + ")" for row in rows)


# Spark's analyser copies a view's or CTE's whole plan into every place that reads it, and the
# host call tree (_host_layers: a windowed pass per thread and layer) is read through many such
# places: with the default 1 GB driver module_stats exhausts it while being defined, and with
# 4 GB collective_calls ran 11 minutes over DeepSeek's one-rank step and failed. Until the call
# tree is kept as a table at ingest, the Spark script leaves out every module that reads it;
# and run_metrics with its readers (the metric diffs): with 4 GB and broadcast joins off, one
# query of it over the test warehouse (DLRM's 8 ranks, DeepSeek's step) ran over 9 minutes;
# and stream_queue with its summary (one query ran over 6 minutes there); and step_bottleneck,
# whose live measure reads its rank restriction in several places (4 GB ran out of heap while
# planning it over the test warehouse); and the critical path's views (critical_path reads the
# collective matching and walks the ranks' paths with a recursive query; the Spark test of
# the three job-path views failed and ran for minutes each over the test warehouse).
SPARK_OMITS_READERS_OF = ("_host_layers", "run_metrics", "stream_queue", "step_bottleneck",
                          "critical_path_edges")


def spark_omitted():
    """The public modules the Spark script leaves out (see SPARK_OMITS_READERS_OF)."""
    return modules_reaching(*SPARK_OMITS_READERS_OF)


def _spark_script(snapshot, root, rules, peaks):
    paths = snapshot.paths(root)
    statements = [statement for table in TABLES.values()
                  for statement in _spark_table(table, root, paths.get(table.name, []))]
    statements.append(_spark_rules(rules))
    statements.append(_spark_peaks(peaks))
    macro_columns = describe_macros()
    omitted = spark_omitted()
    for name, text in library_for(snapshot, rules).items():
        if name not in omitted:
            statements += transpile_statements(text, "spark", macro_columns)
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
    rows = _values(rules_rows(rules), _spark_string)
    return ("CREATE OR REPLACE TEMPORARY VIEW kernel_class_rules AS SELECT "
            "CAST(target AS STRING) AS target, CAST(priority AS INT) AS priority, "
            "CAST(category AS STRING) AS category, CAST(pattern AS STRING) AS pattern, "
            f"CAST(value AS STRING) AS value FROM VALUES {rows} "
            "AS rules(target, priority, category, pattern, value)")


def _spark_peaks(peaks):
    """The device peaks as a temporary view of typed VALUES."""
    spark_types = {"INTEGER": "INT", "VARCHAR": "STRING", "DOUBLE": "DOUBLE"}
    casts = ", ".join(f"CAST({name} AS {spark_types[type_]}) AS {name}"
                      for name, type_ in PEAKS_COLUMNS)
    names = ", ".join(name for name, _ in PEAKS_COLUMNS)
    return (f"CREATE OR REPLACE TEMPORARY VIEW device_peaks AS SELECT {casts} FROM VALUES "
            f"{_values(peaks_rows(peaks), _spark_string)} AS peaks({names})")


# The printed Spark script starts here: Spark (and spark-sql's --hivevar) substitutes
# ${env:NAME}, ${system:NAME} and variables in the SQL text, string literals included, before
# parsing it; a rules or peaks file could copy the Spark user's secrets into a table.
SPARK_SCRIPT_SETTINGS = ("SET spark.sql.variable.substitute=false",)


def script_text(statements):
    return "".join(f"{statement};\n\n" for statement in statements)
