"""The library on local Spark: `tracewh.spark.register` defines every table, the rules table,
every view and every macro in a SparkSession, and each answers row for row as DuckDB does
(integers exact, doubles to 1e-9). Marker `spark`: needs pyspark (`make test` installs the
spark extra) and Java 17+."""

import datetime
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracewh.ingest.workers import die_with
from tracewh.query.dialects import describe_macros, script, script_text, spark_omitted
from tracewh.query.library import library_modules_in_order, parameter_types, public_library
from tracewh.storage.catalog import EMPTY_SNAPSHOT
from tracewh.rules import default_rules, effective_rules

from .conftest import EXAMPLES, SHARED, connect

pytestmark = pytest.mark.spark
pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (the spark "
                                  "extra: make test installs it)")

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json.gz"))
DEEPSEEK_TRAIN = SHARED / "deepseek-profile-data" / "train.json"
ANNOTATED = SHARED / "hta" / "with_gpu_user_annotation"
# TraceLens's H100 inference trace: [memory] events, for the memory views
WITH_MEMORY = SHARED / "tracelens" / "h100" / "Falconsai_nsfw_image_detection__1016002.json.gz"
GRAPH_REPLAY = SHARED / "tracelens" / "inference" / "vllm_decode_full_graph_execution.json.gz"
GRAPH_CAPTURE = SHARED / "tracelens" / "inference" / "vllm_decode_full_capture"
SCRIPT_QUERY = "overlap WHERE run = 'dlrm-half'"


@pytest.fixture(scope="module")
def multi_run(tmp_path_factory):
    """The 8-rank DLRM step; 4 of its ranks as train and 2 as eval (other ranks, two phases);
    with ../shared, DeepSeek's DualPipe training step (DeepEP kernels), HTA's trace with
    gpu_user_annotation ranges, TraceLens's H100 trace with memory events and its vLLM graph
    replay with the capture of its graph."""
    from tracewh.cli import cli
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("spark") / "wh"
    runner = CliRunner()

    def ingest(*args):
        result = runner.invoke(cli, ["--warehouse", str(root), "ingest", *map(str, args)])
        assert result.exit_code == 0, result.output

    ingest(EXAMPLES, "--run", "dlrm", "--phase", "train")
    ingest(*EXAMPLE_FILES[:4], "--run", "dlrm-half", "--phase", "train")
    ingest(*EXAMPLE_FILES[4:6], "--run", "dlrm-half", "--phase", "eval")
    # a retired file beside the live one in rank 0's directory, until vacuum: not to be read
    ingest(EXAMPLE_FILES[0], "--run", "dlrm-half", "--phase", "train", "--replace")
    if DEEPSEEK_TRAIN.exists():
        ingest(DEEPSEEK_TRAIN, "--run", "deepseek", "--phase", "train", "--rank", "0")
    if ANNOTATED.exists():
        ingest(ANNOTATED, "--run", "annotated", "--phase", "train")
    if WITH_MEMORY.exists():
        ingest(WITH_MEMORY, "--run", "memory", "--phase", "inference")
    if GRAPH_REPLAY.exists():  # a graph replay and its capture (graph_replay_kernels)
        ingest(GRAPH_REPLAY, "--run", "graphs", "--phase", "decode")
        ingest(GRAPH_CAPTURE, "--run", "graphs")
    return root


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: Spark needs Java 17+")
    session = (pyspark_sql.SparkSession.builder.master("local[2]")
               .config("spark.ui.enabled", "false")
               # as the README asks: with the default 1 GB driver, collective_waits
               # (broadcasting a join side), phase_summary and rank_gpu_parts ran out of heap
               .config("spark.driver.memory", "4g")
               .config("spark.sql.autoBroadcastJoinThreshold", "-1")
               # else spark-warehouse/ appears in the checkout
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-dir")))
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               # as docs/readers.md advises: adaptive execution re-plans the views' deep plans
               # at every stage (phase_summary 35 s with it, 5 s without)
               .config("spark.sql.adaptive.enabled", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def registered(spark, multi_run):
    from tracewh.spark import register

    register(spark, multi_run)
    return spark


def _value(value):
    """A value as compared: timestamps as epoch microseconds (DuckDB's are zoned, Spark's
    naive in the session's zone, UTC), everything else as it is."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return round(value.timestamp() * 1e6)
    if isinstance(value, (list, tuple)):
        return tuple(_value(item) for item in value)
    return value


def _sort_key(row):
    return tuple((value is None, str(type(value)), value if value is not None else 0)
                 for value in row)


def _same(duck_rows, spark_rows, what):
    duck = sorted((tuple(map(_value, row)) for row in duck_rows), key=_sort_key)
    other = sorted((tuple(map(_value, row)) for row in spark_rows), key=_sort_key)
    assert len(duck) == len(other), f"{what}: {len(duck)} rows in DuckDB, {len(other)} in Spark"
    for expected, got in zip(duck, other):
        for a, b in zip(expected, got):
            if isinstance(a, float) or isinstance(b, float):
                assert a is not None and b is not None, (what, expected, got)
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (what, expected, got)
            else:
                assert a == b, (what, expected, got)


def _views():
    return [name for name, (_, text) in public_library().items()
            if "CREATE OR REPLACE VIEW" in text and name not in spark_omitted()]


def test_the_spark_script_omits_the_readers_of_the_call_tree_and_run_metrics():
    """The modules Spark cannot define in reasonable memory (see SPARK_OMITS_READERS_OF), and
    only those, are left out; docs/readers.md names each."""
    omitted = spark_omitted()
    assert omitted == {"op_kernels", "op_calls", "op_stats", "op_stats_by_shape", "op_backward",
                       "op_perf", "module_stats", "collective_calls", "run_diff",
                       "op_phase_stats", "gemm_shapes", "op_category_stats",
                       "module_phase_stats",
                       "run_metrics", "run_metric_diff", "stream_queue", "stream_queue_summary",
                       "stream_queue_blocked", "step_bottleneck", "rank_critical_path",
                       "rank_critical_path_breakdown",
                       "critical_path", "critical_path_breakdown", "critical_path_by_name"}
    statements = script("spark", EMPTY_SNAPSHOT, Path("/nowhere"), default_rules())
    defined = " ".join(statements)
    assert not any(f"VIEW {name} " in defined or f"FUNCTION {name}(" in defined
                   for name in omitted)
    assert "VIEW overlap " in defined and "VIEW collective_waits " in defined
    readers = (Path(__file__).resolve().parents[1] / "docs" / "readers.md").read_text()
    section = readers.split("**Spark**")[1]
    assert all(f"`{name}`" in section for name in omitted)


@pytest.mark.parametrize("view", _views())
def test_every_view_answers_on_spark_as_on_duckdb(registered, multi_run, view):
    duck = connect(multi_run).execute(f"SELECT * FROM {view}")
    columns = [d[0] for d in duck.description]
    duck_rows = duck.fetchall()
    spark_frame = registered.sql(f"SELECT * FROM {view}")
    assert spark_frame.columns == columns
    assert duck_rows or not SHARED.exists(), f"{view} has no rows to compare"
    _same(duck_rows, [tuple(row) for row in spark_frame.collect()], view)


def test_no_macro_is_defined_on_spark():
    """Every macro (the diffs) reads a module Spark omits, so the Spark script defines none; when
    one stops doing so, compare its answers with DuckDB's here."""
    from tracewh.query.library import modules_reaching

    assert describe_macros() and all(modules_reaching(name) & spark_omitted()
                                     for name in describe_macros())
    assert "FUNCTION " not in " ".join(script("spark", EMPTY_SNAPSHOT, Path("/nowhere"),
                                               default_rules()))


def test_every_macro_parameter_has_a_type():
    """The other dialects need them; DuckDB's macros are untyped."""
    for text in library_modules_in_order().values():
        assert "CREATE OR REPLACE MACRO" not in text or all(
            name in parameter_types(text) for name in _macro_parameters(text))


def _macro_parameters(text):
    import re

    return [p.strip() for params in re.findall(r"MACRO \w+\((.*?)\) AS TABLE", text, re.DOTALL)
            for p in params.split(",")]


def test_percentiles_are_exact_on_spark(registered, multi_run):
    """p99 of launch latency is an actual latency, the same one as DuckDB's (sqlglot's own
    translation, percentile_approx, answered 636000 for DuckDB's 806000)."""
    query = ("SELECT run, phase, rank, p50_ns, p90_ns, p99_ns FROM launch_latency_summary "
             "ORDER BY run, phase, rank")
    duck = connect(multi_run).execute(query).fetchall()
    spark_rows = [tuple(row) for row in registered.sql(query).collect()]
    assert spark_rows == duck
    latencies = {row[0] for row in connect(multi_run).execute(
        "SELECT launch_latency_ns FROM launch_latency").fetchall()}
    assert all(value in latencies for row in duck for value in row[3:])


def test_the_spark_script_runs_in_a_fresh_session(multi_run, spark, tmp_path):
    """`tracewh views --dialect spark --script` is one runnable script: run statement by
    statement in a new session, `runs` answers (LISTAGG DISTINCT broke it before)."""
    root = multi_run.resolve()
    from tracewh.storage.catalog import Catalog

    statements = script("spark", Catalog(root).snapshot(), root, effective_rules(root))
    session = spark.newSession()
    for statement in statements:
        session.sql(statement)
    runs = {row["run"]: row["phases"] for row in session.sql("SELECT * FROM runs").collect()}
    assert runs["dlrm"] == "train" and runs["dlrm-half"] == "eval,train"
    assert script_text(statements).count(";\n\n") == len(statements)


def test_spark_sessions_end_with_their_parent(tmp_path):
    """A Python process holding a SparkSession, SIGKILLed: its JVM ends too (it reads the
    parent's pipe and exits at EOF)."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    code = ("from pyspark.sql import SparkSession\n"
            "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')"
            ".getOrCreate()\n"
            "print('ready', flush=True)\n"
            "import time; time.sleep(600)\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        assert process.stdout.readline().strip() == "ready"
        jvms = _children(process.pid)
        assert jvms, "no child process of the session's Python process"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in jvms):
        time.sleep(0.1)
    survivors = [pid for pid in jvms if Path(f"/proc/{pid}").exists()]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"the JVM {survivors} outlived its SIGKILLed parent"


def _children(pid):
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_spark_sql_runs_the_printed_script(multi_run, tmp_path):
    """`tracewh views --dialect spark --script > tracewh.sql; spark-sql -f tracewh.sql`, as the
    README says, with pyspark's own spark-sql: the runs and a macro answer as DuckDB's."""
    import pyspark
    from click.testing import CliRunner

    from tracewh.cli import cli

    spark_sql = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    if shutil.which("java") is None or not spark_sql.exists():
        pytest.skip("no java, or pyspark without bin/spark-sql")
    printed = CliRunner().invoke(cli, ["--warehouse", str(multi_run), "views", "--dialect",
                                       "spark", "--script"])
    assert printed.exit_code == 0, printed.output
    script = tmp_path / "tracewh.sql"
    script.write_text(printed.output + "SELECT run, phases FROM runs ORDER BY run;\n"
                      f"SELECT count(*) FROM {SCRIPT_QUERY};\n")
    # In the test's directory: spark-sql leaves metastore_db/, derby.log and spark-warehouse/
    # where it runs. Its JVM (the script execs java) dies with this process, even SIGKILLed.
    result = subprocess.run([str(spark_sql), "--conf", "spark.ui.enabled=false",
                             "--driver-memory", "4g",
                             "--conf", "spark.sql.autoBroadcastJoinThreshold=-1",
                             "--conf", "spark.sql.adaptive.enabled=false", "-f",
                             str(script)], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path, preexec_fn=die_with)
    assert result.returncode == 0, result.stderr[-2000:]
    # Spark logged a stack trace per table when its path was a glob (not a file or directory)
    assert "Exception" not in result.stderr, result.stderr[-2000:]
    duck = connect(multi_run)
    expected = [f"{run}\t{phases}" for run, phases in duck.execute(
        "SELECT run, phases FROM runs ORDER BY run").fetchall()]
    expected.append(str(duck.execute(
        f"SELECT count(*) FROM {SCRIPT_QUERY}").fetchone()[0]))
    assert result.stdout.splitlines()[-len(expected):] == expected


# Spark substitutes ${env:NAME}, ${system:NAME} (and hive variables) in the SQL text before it
# parses it, string literals included, unless spark.sql.variable.substitute is false.
HOSTILE_RULES = ('[[class]]\ncategory = "k${env:HOME}"\n'
                 'pattern = "x${env:PATH}y${system:java.home}"\nclass = "other"\n')


def test_a_rules_file_cannot_make_spark_substitute_variables(multi_run, spark, tmp_path):
    """Issue 42: a rules file whose strings hold ${env:...} copied the Spark user's environment
    into kernel_class_rules. The printed script starts by turning substitution off, and its
    literals escape `$`, so that `register` (in the user's session, substitution on) keeps
    the text too."""
    from click.testing import CliRunner

    from tracewh.cli import cli

    rules = tmp_path / "hostile.toml"
    rules.write_text(HOSTILE_RULES)
    printed = CliRunner().invoke(cli, ["--warehouse", str(multi_run), "views", "--dialect",
                                       "spark", "--script", "--rules", str(rules)])
    assert printed.exit_code == 0, printed.output
    statements = printed.output.split(";\n\n")
    assert statements[0] == "SET spark.sql.variable.substitute=false"
    defines_rules = next(s for s in statements if "VIEW kernel_class_rules " in s)
    for prelude in ([statements[0]], []):  # the printed script; `register`'s statements
        session = spark.newSession()
        for statement in [*prelude, defines_rules]:
            session.sql(statement)
        rows = session.sql("SELECT category, pattern FROM kernel_class_rules "
                           "WHERE priority = 0").collect()
        assert [tuple(row) for row in rows] == [("k${env:HOME}",
                                                 "x${env:PATH}y${system:java.home}")]
