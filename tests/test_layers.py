"""The package's layers, as docs/layout.md draws them, read from the modules'
imports (every import, also those inside functions): a rule broken here is a room leaning on
one it should not know."""

import ast

import pytest

from .conftest import ROOT

# The folders of the repository and the packages they install as.
PACKAGES = {"warehouse": "tracewh", "ingest": "tracewh.ingest"}
# The base: the warehouse's contracts, which import nothing of tracewh but each other.
BASE = {"tracewh.storage.schema", "tracewh.storage.layout", "tracewh.storage.parquet",
        "tracewh.storage.names", "tracewh.errors", "tracewh.allocator"}
# What the ingest builds on, besides the base: the kernel rules it classifies by, the
# catalog's StagedTrace, what it hands the commit, the batch commit of an engine's
# workers' files (storage.batch), which they write into the warehouse themselves, and the
# storage backends (tracewh.storage: location, of) that s3:// trace objects are read with.
INGEST_USES = BASE | {"tracewh.rules", "tracewh.storage", "tracewh.storage.catalog",
                      "tracewh.storage.batch"}
# The modules that start an ingest, the only ones of tracewh that import tracewh.ingest.
INGEST_STARTERS = {"tracewh.api", "tracewh.torch", "tracewh.commands.ingest"}


def _module_name(path):
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    parts = [PACKAGES[folder], *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports():
    """{module: {tracewh module it imports}}, relative imports resolved."""
    found = {}
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = _module_name(path)
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            imported = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom):
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    module = (f"{base}.{node.module}" if node.module else base) if node.level \
                        else node.module
                    imported.add(module)
                    imported |= {f"{module}.{alias.name}" for alias in node.names}
            found[name] = {m for m in imported if m == "tracewh" or m.startswith("tracewh.")}
    return found


IMPORTS = _imports()
MODULES = set(IMPORTS)


def _modules_among(imported):
    """The modules (not names inside them) that `imported` holds; `from . import x` names
    the package `tracewh` too, which holds nothing but `open`."""
    return {name for name in imported if name in MODULES and name != "tracewh"}


def test_the_walk_sees_every_layer():
    """The rules below would pass vacuously over a walk that found nothing."""
    assert BASE | INGEST_STARTERS <= MODULES
    assert "tracewh.ingest.pipeline" in IMPORTS["tracewh.api"]
    assert "tracewh.storage.schema" in IMPORTS["tracewh.storage.catalog"]
    assert all(LAYERS), "a layer's subpackage is gone"


@pytest.mark.parametrize("module", sorted(BASE))
def test_the_base_imports_only_the_base(module):
    assert _modules_among(IMPORTS[module]) <= BASE


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("tracewh.ingest")))
def test_the_ingest_builds_on_the_base(module):
    outside = {m for m in _modules_among(IMPORTS[module]) if not m.startswith("tracewh.ingest")}
    assert outside <= INGEST_USES, f"{module} imports {sorted(outside - INGEST_USES)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if not m.startswith("tracewh.ingest")))
def test_only_the_modules_that_start_an_ingest_import_it(module):
    ingest = {m for m in IMPORTS[module] if m.startswith("tracewh.ingest")}
    assert module in INGEST_STARTERS or not ingest, f"{module} imports {sorted(ingest)}"




def _package(name):
    """The modules of one subpackage of tracewh (its __init__ included)."""
    return {m for m in MODULES if m == f"tracewh.{name}" or m.startswith(f"tracewh.{name}.")}


# The layers above the ingest, bottom up, as docs/layout.md lists them: a subpackage of
# warehouse/ each, so the folder tree shows the architecture (the surface at the top level).
LAYERS = [
    BASE,
    (_package("storage") - BASE) | {"tracewh.rules", "tracewh.peaks"},
    _package("query"),
    _package("derived"),
    _package("analyses") | _package("output"),
    {"tracewh", "tracewh.api", "tracewh.spark", "tracewh.torch", "tracewh.cli",
     "tracewh.entry", "tracewh.__main__"},
    _package("commands"),
]


def test_every_module_is_in_a_layer():
    unplaced = {m for m in MODULES if not m.startswith("tracewh.ingest")} - set().union(*LAYERS)
    assert not unplaced, f"add {sorted(unplaced)} to a layer (and to docs/layout.md)"


@pytest.mark.parametrize("level", range(len(LAYERS)))
def test_a_layer_imports_only_itself_and_those_below(level):
    below = set().union(*LAYERS[:level + 1])
    for module in sorted(LAYERS[level] & MODULES):
        above = {m for m in _modules_among(IMPORTS[module])
                 if not m.startswith("tracewh.ingest") and m not in below}
        assert not above, f"{module} imports {sorted(above)} from a layer above its own"
