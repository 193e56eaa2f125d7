"""Kernel rules files (`--rules FILE`, `_tracewh/kernel_rules.toml`): a mistake is one error
line naming the file and the rule, never a rule silently dropped, a pattern that fails every
later query in DuckDB, or a traceback."""

import json

import pytest
from click.testing import CliRunner

from tracewh.cli import cli
from tracewh.rules import WAREHOUSE_RULES

from .test_diff import WORKER0

CLASS = '[[class]]\ncategory = "kernel"\nclass = "computation"\n'
BAD = {
    "rule table": ('[[rule]]\npattern = "gemm"\nclass = "communication"\n',
                   ": unknown key 'rule': a rules file holds [[class]] and [[collective]] tables"),
    "class key": (CLASS + '[[class]]\npatern = "gemm"\nclass = "communication"\n',
                  ": [[class]] #2: unknown key 'patern': use category, pattern, class; "
                  "did you mean 'pattern'?"),
    "collective key": ('[[collective]]\npattern = "x"\ncollective = "x"\nclass = "sync"\n',
                       ": [[collective]] #1: unknown key 'class': use category, pattern, "
                       "collective"),
    "category type": ('[[class]]\ncategory = 5\nclass = "sync"\n',
                      ": [[class]] #1: 'category' must be a string, not 5"),
    "pattern type": ('[[class]]\npattern = ["gemm"]\nclass = "sync"\n',
                     ": [[class]] #1: 'pattern' must be a string, not ['gemm']"),
    "not tables": ('class = "sync"\n', ": 'class' must be [[class]] tables"),
    "lookahead": (CLASS + '[[class]]\npattern = "gemm(?=_nt)"\nclass = "communication"\n',
                  ": [[class]] #2: bad pattern 'gemm(?=_nt)': invalid perl operator: (?= "
                  "(patterns are RE2: no lookaround, no backreferences)"),
    "backreference": ('[[collective]]\npattern = "(nccl)\\\\1"\ncollective = "x"\n',
                      ": [[collective]] #1: bad pattern '(nccl)\\\\1': invalid escape "
                      "sequence: \\1 (patterns are RE2: no lookaround, no backreferences)"),
    "nesting": ('[[class]]\npattern = "' + "(" * 2000 + "gemm" + ")" * 2000 + '"\n'
                'class = "sync"\n',
                ": [[class]] #1: bad pattern '((((((((((((...)))))))))))))': groups nest more "
                "than 100 deep"),
    "java named group": ('[[class]]\npattern = "(?P<g>gemm)"\nclass = "sync"\n',
                         ": [[class]] #1: bad pattern '(?P<g>gemm)': '(?P<' is not read alike "
                         "by DuckDB's RE2 and Spark's Java regex"),
}
GEMM = "SELECT DISTINCT class FROM kernel_classes WHERE name = 'volta_sgemm_128x32_nt'"


@pytest.fixture(scope="module")
def tracewh(tmp_path_factory):
    """The CLI on a warehouse of DLRM rank 0: tracewh(*args) -> click Result."""
    root = tmp_path_factory.mktemp("rules") / "wh"

    def run(*args):
        return CliRunner().invoke(cli, ["--warehouse", str(root), *map(str, args)])

    assert run("ingest", WORKER0, "--run", "r", "--phase", "train").exit_code == 0
    run.root = root
    return run


@pytest.fixture(params=["--rules", "warehouse"])
def query_with_rules(request, tracewh, tmp_path):
    """query(rules_text, sql) -> (Result, the rules file's path), the rules given by --rules
    or kept in the warehouse's _tracewh/kernel_rules.toml (removed after the test)."""
    stored = tracewh.root / WAREHOUSE_RULES

    def query(text, sql):
        path = tmp_path / "rules.toml" if request.param == "--rules" else stored
        path.write_text(text)
        options = ["--rules", path] if request.param == "--rules" else []
        return tracewh("query", *options, "--format", "json", sql), path

    yield query
    stored.unlink(missing_ok=True)


@pytest.mark.parametrize("case", BAD)
def test_a_bad_rules_file_is_one_error_line(query_with_rules, case):
    text, problem = BAD[case]
    result, path = query_with_rules(text, GEMM)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.output == f"error: {path}{problem}\n"


def test_an_re2_pattern_python_refuses_classifies(query_with_rules):
    """`\\z` is RE2 (and Java) but not Python's re: the rules take what the engines run."""
    result, _ = query_with_rules('[[class]]\npattern = "_nt\\\\z"\nclass = "communication"\n',
                                 GEMM)
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout) == [{"class": "communication"}]


# Patterns and names on which Python's re and RE2 part ways: \d and \w take non-ASCII digits
# and letters in re, not in RE2; \z is RE2's end of text (an error in re, 3.11).
DIVERGING = [(r"gemm\d", "gemm\u0661"), (r"^\w+$", "noyau\u00e9"), (r"_nt\z", "gemm_nt"),
             (r"nccl", "ncclkernel_allreduce"), (r"(?i)GEMM", "sm90_gemm")]


@pytest.mark.parametrize("pattern,name", DIVERGING)
def test_the_ingest_matches_patterns_as_duckdb_does(pattern, name):
    """The ingest classifies kernels (gpu_intervals' classes) with `rules.matches`; the views
    with DuckDB's regexp_matches: the two answer alike where Python's re would not."""
    import duckdb

    from tracewh.rules import matches

    expected = duckdb.execute("SELECT regexp_matches(?, ?)", [name, pattern]).fetchone()[0]
    assert matches(pattern, name) == expected
