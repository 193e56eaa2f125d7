"""The repository itself: what `make` does, what the README promises, and a suite that runs
without ../shared."""

import os
import re
import subprocess
import sys

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
