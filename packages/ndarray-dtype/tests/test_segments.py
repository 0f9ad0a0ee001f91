"""Tests for zarr_ndarray_dtype.segments: both copy strategies give the naive result."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_ndarray_dtype import segments
from zarr_ndarray_dtype.segments import assemble, offsets_of


def _naive(sources, which, starts, sizes):  # type: ignore[no-untyped-def]
    parts = [sources[w][s : s + n] for w, s, n in zip(which, starts, sizes, strict=True)]
    return np.concatenate(parts) if parts else np.empty(0, sources[0].dtype)


@pytest.mark.parametrize("runs_by_slices", [True, False])
def test_assemble_matches_naive(runs_by_slices: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not runs_by_slices:  # force the fancy-index gather
        monkeypatch.setattr(segments, "_SLICE_RUNS", 0)
        monkeypatch.setattr(segments, "_SLICE_RUN_ITEMS", 10**9)
    rng = np.random.default_rng(0)
    sources = [rng.standard_normal(500).astype(np.float32) for _ in range(3)]
    n = 400
    which = rng.integers(0, 3, n).astype(np.intp)
    sizes = rng.integers(0, 5, n).astype(np.int64)
    starts = np.array([rng.integers(0, 500 - s + 1) for s in sizes], dtype=np.int64)
    # a long in-order run from source 0
    which[:50] = 0
    starts[:50] = offsets_of(sizes[:50])[:-1]
    values, offsets = assemble(sources, which, starts, sizes, np.dtype(np.float32))
    assert values.tobytes() == _naive(sources, which, starts, sizes).tobytes()
    assert offsets.tolist() == offsets_of(sizes).tolist()


def test_assemble_empty() -> None:
    values, offsets = assemble(
        [np.zeros(3)], np.zeros(0, np.intp), np.zeros(0, np.int64), np.zeros(0, np.int64),
        np.dtype(np.float64),
    )  # fmt: skip
    assert values.size == 0
    assert offsets.tolist() == [0]
