"""The wording of counts."""

from __future__ import annotations

from zarr_ndarray_tool._text import counted


def test_counts_of_one_are_singular() -> None:
    assert [counted(n, "cell") for n in (0, 1, 2)] == ["0 cells", "1 cell", "2 cells"]
