"""Kernel names are the profiled program's text: Markdown made of them (a diff pasted into a
pull-request comment, `query --format markdown`) must render on GitHub as that text, never as
HTML, links, images, emphasis, mentions or issue references, and never as a megabyte comment.
The Markdown is rendered by cmark-gfm, GitHub's own renderer, with raw HTML let through (GitHub
would sanitise it after; here it must not be there to sanitise), then read as GitHub does:
mentions and references are found in the rendered text."""

import gzip
import json
import re
from collections import Counter
from html.parser import HTMLParser

import cmarkgfm
import pytest
from click.testing import CliRunner
from cmarkgfm.cmark import Options

from tracewh.cli import cli
from tracewh.output import MAX_CELL, WORD_JOINER

from .test_diff import WORKER0, variant

HOSTILE = [
    "<img src=x onerror=alert(7)>",
    "</td></tr></table><h1>INJECTED</h1>",
    "[click](javascript:alert(7))",
    "![pixel](https://example.com/p.png)",
    "<javascript:alert(7)> <https://example.com>",
    "@everyone and @octocat/maintainers, see #1",
    "www.example.com http://example.com ftp://example.com mailto:a@example.com b@example.com",
    "**bold** _em_ ~~gone~~ `code` $x^2$",
    "# heading | pipe \\| escaped pipe \\",
    "two\nlines\r\nand\ra carriage return",
    "&lt;b&gt;entities&lt;/b&gt; &amp; &#64;everyone",
    "[ref]: https://example.com",
]
HUGE = "void huge<" + "x" * 1_000_000 + ">()"
# For the report, which shows short names (cut at `<` and `(`): given to the kernel launched
# most, so that it is in the report's charts and tables.
TEX = '$\\notamacro$ x" onload="go" $x^2$ & &amp;'
SAFE_TAGS = {"h3", "p", "strong", "code", "table", "thead", "tbody", "tr", "th", "td"}
# GitHub's mention and issue-reference patterns (html-pipeline), on the rendered text.
MENTION = re.compile(r"(?:^|\W)@[a-z0-9]", re.IGNORECASE)
REFERENCE = re.compile(r"(?:^|\W)#\d")


class Rendered(HTMLParser):
    """The tags of the HTML GitHub makes of `markdown`, its text, and its tables as lists of
    rows of cell texts (less the invisible word joiners)."""

    def __init__(self, markdown):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.tables = set(), [], []
        self._cell = None
        self.feed(cmarkgfm.github_flavored_markdown_to_html(markdown,
                                                            options=Options.CMARK_OPT_UNSAFE))

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).replace(WORD_JOINER, ""))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def shown(name, limit=None):
    """The text a cell shows: one line, `limit` characters at most (None: Markdown, whole)."""
    name = re.sub(r"\r\n?|\n", " ", name)
    return name if limit is None or len(name) <= limit else name[: limit - 1] + "…"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A warehouse of DLRM rank 0 twice: run `new` has a kernel renamed to each hostile name
    and one to a 1 MB name (kernels launched once, so each name is one event), and its most
    launched kernel renamed to TEX."""
    root = tmp_path_factory.mktemp("hostile")
    document = json.loads(gzip.decompress(WORKER0.read_bytes()))
    counts = Counter(e["name"] for e in document["traceEvents"] if e.get("cat") == "kernel")
    once = [name for name, count in counts.items() if count == 1]
    renames = dict(zip(once, HOSTILE + [HUGE])) | {counts.most_common(1)[0][0]: TEX}
    path = variant(root, "new", lambda e: e.update(name=renames.get(e["name"], e["name"])))

    def tracewh(*args):
        result = CliRunner().invoke(cli, ["--warehouse", str(root / "wh"), *map(str, args)])
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout_bytes.decode()  # as printed: .stdout turns \r\n into \n

    tracewh("ingest", WORKER0, "--run", "base", "--phase", "train")
    tracewh("ingest", path, "--run", "new", "--phase", "train")
    tracewh.root = root
    return tracewh


def assert_inert(markdown):
    rendered = Rendered(markdown)
    assert rendered.tags <= SAFE_TAGS, rendered.tags - SAFE_TAGS
    text = "".join(rendered.text)
    assert not MENTION.search(text) and not REFERENCE.search(text)
    return rendered


@pytest.fixture(scope="module")
def diff(hostile):
    """`diff base new` of every kernel (no noise floor) as (json report, markdown)."""
    args = ("diff", "base", "new", "--min-ns", "0", "--format")
    return json.loads(hostile(*args, "json")), hostile(*args, "markdown")


def test_diff_markdown_shows_every_name_as_its_text(diff):
    """Every kernel of the diff, hostile or real (real names hold `*`, `&`, `<`), renders as
    exactly its name, not cut; no tag, link, image or emphasis survives."""
    report, markdown = diff
    names = [k["name"] for k in report["kernels"] if k["status"] != "unchanged"]
    assert set(HOSTILE) | {HUGE, TEX} <= set(names)
    header, *rows = assert_inert(markdown).tables[0]
    assert [row[header.index("name")] for row in rows] == [shown(name) for name in names]


def test_diff_markdown_keeps_a_megabyte_name_whole_as_json_does(diff):
    """Markdown never cuts a name with an ellipsis: a cut name is no name to search for."""
    report, markdown = diff
    assert [HUGE] in [row[1:2] for row in Rendered(markdown).tables[0]]
    assert HUGE in [k["name"] for k in report["kernels"]]


def test_query_markdown_shows_hostile_names_as_text(hostile):
    sql = "SELECT name, count(*) AS n FROM kernels WHERE run = 'new' GROUP BY name ORDER BY name"
    rows = json.loads(hostile("query", "--format", "json", sql))
    rendered = assert_inert(hostile("query", "--format", "markdown", sql))
    assert rendered.tables == [[["name", "n"]] + [[shown(r["name"]), str(r["n"])]
                                                  for r in rows]]


def test_table_caps_cells_to_one_line_and_csv_keeps_every_character(hostile):
    """A `\\r` in a name would rewrite the terminal's line: the table shows it as a space."""
    sql = ("SELECT name FROM kernels WHERE run = 'new' "
           "AND (length(name) > 100000 OR name LIKE 'two%') ORDER BY length(name)")
    table = hostile("query", "--format", "table", sql)
    lines = table.splitlines()
    assert lines[2:4] == [shown(HOSTILE[9], MAX_CELL), shown(HUGE, MAX_CELL)]
    assert len(lines) == 5 and len(table) < 1000
    assert hostile("query", "--format", "csv", sql) == f'name\n"{HOSTILE[9]}"\n{HUGE}\n'


def test_report_shows_hostile_names_as_text(hostile):
    """The HTML report escapes names in its tables and its SVG charts, and draws `$...$` in a
    name as itself: matplotlib read it as TeX, and `\\notamacro` stopped the report."""
    out = hostile.root / "report.html"
    assert hostile("report", "new", "--out", out).startswith(f"wrote {out} (")
    page = Page(out.read_text())
    assert page.scripts == 1 and not page.handlers
    assert page.text.count(TEX) >= 2  # a table cell, a chart's label


class Page(HTMLParser):
    """The inline scripts, the on* attributes and the text of an HTML page."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.scripts, self.handlers, self.text = 0, [], ""
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        self.handlers += [name for name, _ in attrs if name.startswith("on")]

    def handle_data(self, data):
        self.text += data
