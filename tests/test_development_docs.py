"""docs/development.md's layout table and bench/README.md name every
module of the tree, so a contributor finds each one where the docs say."""
from __future__ import annotations

import subprocess

from tests.conftest import ROOT

# Outside the layout table: the tests' own files, the guests' (their README
# names them), and package markers.
UNLISTED = ("tests/", "guest/")


def modules(under: str = "") -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=30, check=True).stdout.split()
    return [p for p in listed if p.startswith(under) and not p.startswith(UNLISTED)
            and not p.endswith("__init__.py")]


def test_the_layout_table_names_every_module():
    layout = (ROOT / "docs" / "development.md").read_text()
    missing = [p for p in modules() if f"`{p.rsplit('/', 1)[-1]}`" not in layout]
    assert not missing, f"docs/development.md's layout does not name {missing}"


def test_bench_readme_names_every_script():
    readme = (ROOT / "bench" / "README.md").read_text()
    missing = [p for p in modules("bench/") if f"`{p.rsplit('/', 1)[-1]}`" not in readme]
    assert not missing, f"bench/README.md does not name {missing}"
