"""The README's Python examples run as written and print what their comments say."""

from __future__ import annotations

from pathlib import Path

import pytest
from _zrn_support import assert_printed_as_commented, readme_examples, run_script

BLOCKS = readme_examples(Path(__file__).resolve().parents[1] / "README.md")


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS.values(), ids=BLOCKS.keys())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    assert_printed_as_commented(code, run_script(code, tmp_path).stdout)
