"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zarr_ndarray_dtype.testing import readme_examples, run_script

BLOCKS = readme_examples(Path(__file__).resolve().parents[1] / "README.md")
# A block whose first line is "# needs: module>=version, module" runs only where those import.
NEEDS = re.compile(r"# needs: (.*)\n")


def skip_unless_importable(code: str) -> None:
    needs = NEEDS.match(code)
    for requirement in needs.group(1).split(",") if needs else ():
        module, _, minversion = requirement.strip().partition(">=")
        pytest.importorskip(module, minversion=minversion or None)


def test_the_readme_has_examples() -> None:
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS.values(), ids=BLOCKS.keys())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    skip_unless_importable(code)
    run_script(code, tmp_path)
