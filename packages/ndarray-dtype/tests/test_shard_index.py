"""Tests for zarr_ndarray_dtype.shard_index: the shard index rules both codec packages use."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_ndarray_dtype.shard_index import (
    MISSING,
    ShardIndexError,
    index_region,
    inner_range,
    parse_index_pairs,
)


def _index(pairs: list[tuple[int, int]], order: str = "<") -> np.ndarray:
    return np.frombuffer(np.array(pairs, dtype=f"{order}u8").tobytes(), np.uint8)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pairs_in_either_byte_order(order: str) -> None:
    data = _index([(0, 4), (MISSING, MISSING), (4, 6)], order)
    pairs = parse_index_pairs(data, 3, order == ">", "c/0", 10)
    assert pairs.tolist() == [[0, 4], [MISSING, MISSING], [4, 6]]
    assert [inner_range(pairs, i) for i in range(3)] == [(0, 4), None, (4, 6)]


def test_wrong_index_size_is_refused() -> None:
    with pytest.raises(ShardIndexError, match="holds 16 bytes after decoding, not the 32"):
        parse_index_pairs(_index([(0, 1)]), 2, False, "c/0", None)


@pytest.mark.parametrize("pair", [(11, 0), (4, 7), (2**63, 2**63)])
def test_range_outside_the_shard_is_refused(pair: tuple[int, int]) -> None:
    with pytest.raises(ShardIndexError, match=r"inner chunk 1 claims bytes .* has 10 bytes"):
        parse_index_pairs(_index([(0, 2), pair]), 2, False, "c/0", 10)
    # Without a known size (a ranged read) the ranges are not checked here.
    assert parse_index_pairs(_index([(0, 2), pair]), 2, False, "c/0", None)[1].tolist() == [*pair]


@pytest.mark.parametrize("at_start", [True, False])
def test_index_region(at_start: bool) -> None:
    blob = np.arange(40, dtype=np.uint8)
    region = index_region(blob, 16, at_start, "c/0")
    assert region.tolist() == (list(range(16)) if at_start else list(range(24, 40)))
    with pytest.raises(ShardIndexError, match="fewer than its 16-byte index: the shard is trunc"):
        index_region(blob[:15], 16, at_start, "c/0")
