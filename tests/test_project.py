"""The repository itself: what `make` does, what the README promises, and a suite that runs
without ../shared."""

import os
import re
import shutil
import subprocess
import sys
import zipfile

from .conftest import ROOT


def test_the_suite_collects_without_shared(tmp_path):
    """Tests that need ../shared skip; none may fail at collection when it is absent."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests")], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "TRACEWH_TEST_SHARED": str(tmp_path / "absent")})
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(r"^\d+ tests collected", result.stdout, re.MULTILINE), result.stdout[-500:]


def test_the_demo_has_its_own_warehouse_that_clean_removes():
    makefile = (ROOT / "Makefile").read_text()
    demo = re.search(r"^DEMO_WAREHOUSE := (\S+)$", makefile, re.MULTILINE).group(1)
    assert demo != "warehouse" and not (ROOT / demo / "__init__.py").exists()
    assert f"/{demo}/" in (ROOT / ".gitignore").read_text().splitlines()
    clean = re.search(r"^clean:\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "$(DEMO_WAREHOUSE)" in clean


def test_readme_makefile_and_pyproject_agree_on_python():
    required = re.search(r'requires-python = ">=(\d+\.\d+)"',
                         (ROOT / "pyproject.toml").read_text()).group(1)
    assert re.findall(r"Python (\d+\.\d+)\+", (ROOT / "Makefile").read_text()) == [required]
    assert set(re.findall(r"Python (\d+\.\d+)\+", (ROOT / "README.md").read_text())) == {required}


def test_the_installed_package_is_tracewh_alone(tmp_path):
    """`pip install` puts one top-level package, `tracewh`, into site-packages (not names such
    as `warehouse` or `sql` that clash with other projects), with the SQL library inside it."""
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside it
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "*.egg-info", "build",
                                                                "demo-warehouse", "tests"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                    "--wheel-dir", str(tmp_path), str(source)], check=True)
    wheel, = tmp_path.glob("tracewh-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "tracewh", next(n.split("/")[0] for n in names if ".dist-info/" in n)}
    assert {"tracewh/cli.py", "tracewh/ingest/pipeline.py", "tracewh/sql/overlap.sql",
            "tracewh/sql/kernel_rules.toml", "tracewh/sql/live/_trace_class_time.sql"} <= set(names)
