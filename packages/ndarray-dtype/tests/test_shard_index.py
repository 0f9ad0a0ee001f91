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
    write_order,
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


def _zarr_morton(grid: tuple[int, ...]) -> list[int]:
    """zarr's own Morton order of a shard's inner chunks, as flat C-order indices."""
    import zarr.core.indexing as indexing

    if hasattr(indexing, "morton_order_coords"):  # zarr >= 3.3.0
        coords = list(indexing.morton_order_coords(grid))
    else:  # zarr 3.1.x and 3.2.x
        coords = list(indexing.morton_order_iter(grid))
    return [int(np.ravel_multi_index(c, grid)) for c in coords]


@pytest.mark.parametrize(
    "grid", [(1,), (6,), (2, 2), (3, 5), (4, 4), (1, 7), (5, 1), (3, 3, 3), (2, 3, 4, 5), (9, 2)]
)
def test_morton_order_is_zarrs(grid: tuple[int, ...]) -> None:
    order = write_order(grid)
    assert order.tolist() == _zarr_morton(grid)
    assert sorted(order.tolist()) == list(range(int(np.prod(grid))))


def test_other_orders() -> None:
    assert write_order((2, 3), "lexicographic").tolist() == [0, 1, 2, 3, 4, 5]
    assert write_order((2, 3), "unordered").tolist() == [0, 1, 2, 3, 4, 5]
    assert write_order((2, 3), "colexicographic").tolist() == [0, 3, 1, 4, 2, 5]
    # (4, 4): Z-order visits 2x2 blocks, axis 0 moving first within each.
    assert write_order((4, 4)).tolist()[:8] == [0, 4, 1, 5, 8, 12, 9, 13]
    with pytest.raises(ValueError, match="unknown inner chunk order 'hilbert'"):
        write_order((2, 2), "hilbert")
