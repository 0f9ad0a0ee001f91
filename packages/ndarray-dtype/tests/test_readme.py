"""The README's Python examples run as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from _zdt_support import readme_examples, run_script, skip_unless_importable

BLOCKS = readme_examples(Path(__file__).resolve().parents[1] / "README.md")


def test_the_readme_has_examples() -> None:
    assert BLOCKS


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS.values(), ids=BLOCKS.keys())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    skip_unless_importable(code)
    run_script(code, tmp_path)
