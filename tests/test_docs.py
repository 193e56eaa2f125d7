"""The documentation: the README stays a ten-minute introduction, the pages of docs/ that list
what the code defines are what docs/generate.py writes from it (so they cannot drift), every
page is in the index, and every link between them resolves."""

import importlib.util
import re

import pytest

from .conftest import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated():
    return _generator().pages()


def test_the_generator_writes_the_reference_pages(generated):
    assert set(generated) == {"views.md", "tables.md", "cli.md", "index.md"}


@pytest.mark.parametrize("page", ["views.md", "tables.md", "cli.md", "index.md"])
def test_committed_pages_are_what_the_code_generates(page, generated):
    """After a new view, column, option or page, `make docs` writes the pages again."""
    committed = (DOCS / page).read_text() if (DOCS / page).exists() else ""
    assert committed == generated[page], f"docs/{page} is stale: run `make docs`"


def test_the_generated_pages_list_everything_the_code_defines(generated):
    """Not a copy of a stale page: every public view, table and command is on its page."""
    from tracewh.cli import COMMANDS
    from tracewh.query.library import public_library
    from tracewh.storage.schema import TABLES

    assert all(f"\n### {name}\n" in generated["views.md"] for name in public_library())
    assert all(f"\n## {name}\n" in generated["tables.md"] for name in TABLES)
    assert all(f"\n## tracewh {name}\n" in generated["cli.md"] for name in COMMANDS)
    assert "--fail-on-regression" in generated["cli.md"]


def test_the_index_links_every_page():
    linked = set(LINK.findall((DOCS / "index.md").read_text()))
    pages = {path.name for path in DOCS.glob("*.md")} - {"index.md"}
    assert pages - linked == set(), "pages not in docs/index.md: run `make docs`"


def test_a_new_page_reaches_the_index(tmp_path):
    """The index is made from the pages on disk: a page added by hand is listed, by its title
    and first sentence, once the generator runs."""
    generator = _generator()
    index = generator.index_page({"zz-new.md": "# A new page\n\nWhat it says. More of it.\n",
                                  "views.md": "# Views\n\nEvery view.\n"})
    assert "- [Views](views.md): Every view.\n- [A new page](zz-new.md): What it says.\n" in index


def _documents():
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("document", _documents(), ids=lambda path: path.name)
def test_every_relative_link_resolves(document):
    """Nothing moved out of the README left a link behind it."""
    for target in LINK.findall(document.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        assert resolved.exists(), f"{document.name}: {target}"
        if anchor and resolved.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", resolved.read_text(), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{document.name}: {target}"


def test_the_readme_is_an_introduction():
    """What a newcomer needs in ten minutes: what it is, the two commands, an example, the
    commands one line each, and where to read more; the reference lives in docs/."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "make demo" in readme and "make test" in readme
    assert "](docs/index.md)" in readme
    rows = re.findall(r"^\| `([a-z-]+)[ `]", readme, re.MULTILINE)
    from tracewh.cli import COMMANDS
    assert set(COMMANDS) <= set(rows) | {"vacuum"}  # `optimize`, `vacuum` share a row
    assert all(len(line) <= 200 for line in readme.splitlines() if line.startswith("|"))
