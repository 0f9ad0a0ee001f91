"""The README's Python examples run as written and print what their comments say."""

from __future__ import annotations

from pathlib import Path

import pytest
from _zt_support import (
    assert_entry_point,
    assert_printed_as_commented,
    readme_examples,
    run_script,
    skip_unless_importable,
)

from zarr_ndarray_tool.cli import main

BLOCKS = readme_examples(Path(__file__).resolve().parents[1] / "README.md")


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2  # the example and the Zarr v2 upgrade


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS.values(), ids=BLOCKS.keys())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    skip_unless_importable(code)  # a whole hierarchy's upgrade needs zarr >= 3.1.3
    assert_printed_as_commented(code, run_script(code, tmp_path).stdout)


def test_the_console_script_runs_the_cli() -> None:
    assert_entry_point("console_scripts", "zarr-ndarray", "zarr_ndarray_tool.cli:main", main)
