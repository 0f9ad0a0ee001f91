"""The shard index of zarr's ``sharding_indexed`` codec: locate, decode and check it, and the
order inner chunks are laid out in (pure logic).

A shard holds its inner chunks back to back and an index of ``(offset, nbytes)`` uint64 pairs,
one pair per inner chunk in C order over the inner chunk grid, at the start or the end of the
shard; an inner chunk the shard does not hold is ``(MISSING, MISSING)``. The codec packages read
shards below zarr's codec pipeline; this module is the one home of the index rules they share
(the zarr glue that runs the index codecs is :mod:`zarr_ndarray_dtype.chunk_codecs`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = [
    "MISSING",
    "ShardIndexError",
    "index_region",
    "inner_range",
    "out_of_range",
    "parse_index_pairs",
    "write_order",
]

#: Offset and length of an inner chunk that a shard does not hold.
MISSING = 2**64 - 1


class ShardIndexError(ValueError):
    """A shard or its index is corrupt (bad size, checksum, or a range outside the shard)."""


def index_region(
    blob: npt.NDArray[np.uint8], index_nbytes: int, at_start: bool, key: str
) -> npt.NDArray[np.uint8]:
    """The stored index bytes of a whole shard ``blob`` (a view); refuses a truncated shard."""
    size = blob.size
    if size < index_nbytes:
        raise ShardIndexError(
            f"shard {key!r} has {size} bytes, fewer than its {index_nbytes}-byte index: "
            "the shard is truncated"
        )
    at = 0 if at_start else size - index_nbytes
    return blob[at : at + index_nbytes]


def parse_index_pairs(
    data: npt.NDArray[np.uint8], count: int, big_endian: bool, key: str, size: int | None
) -> npt.NDArray[np.uint64]:
    """The ``(count, 2)`` pairs of a decoded index; every range checked against ``size`` if known.

    ``data`` is the index after its bytes -> bytes codecs (e.g. ``crc32c``) are undone.
    """
    if data.size != 16 * count:
        raise ShardIndexError(
            f"shard {key!r}: its index holds {data.size} bytes after decoding, not the "
            f"{16 * count} of {count} (offset, nbytes) pairs"
        )
    order = ">" if big_endian else "<"
    pairs = data.view(f"{order}u8").astype(np.uint64).reshape(count, 2)
    present = ~((pairs[:, 0] == MISSING) & (pairs[:, 1] == MISSING))
    if size is not None and present.any():
        starts, lengths = pairs[present, 0], pairs[present, 1]
        # Compare without overflow: start <= size and length <= size - start.
        bad = (starts > size) | (lengths > np.uint64(size) - np.minimum(starts, np.uint64(size)))
        if bad.any():
            which = int(np.flatnonzero(present)[int(np.argmax(bad))])
            raise out_of_range(key, which, pairs, size)
    return pairs


def inner_range(pairs: npt.NDArray[np.uint64], local: int) -> tuple[int, int] | None:
    """``(start, length)`` of inner chunk ``local``; None when the shard does not hold it."""
    start, length = int(pairs[local, 0]), int(pairs[local, 1])
    if start == MISSING and length == MISSING:
        return None
    return start, length


def out_of_range(
    key: str, which: int, pairs: npt.NDArray[np.uint64], size: int | str
) -> ShardIndexError:
    """The error for inner chunk ``which`` whose range lies outside a shard of ``size`` bytes."""
    return ShardIndexError(
        f"shard {key!r}: inner chunk {which} claims bytes [{int(pairs[which, 0])}, "
        f"+{int(pairs[which, 1])}) but the shard has {size} bytes; the shard index is corrupt"
    )


@lru_cache(maxsize=64)
def write_order(grid: tuple[int, ...], order: str = "morton") -> npt.NDArray[np.intp]:
    """The inner chunks of a shard with ``grid`` inner chunks per axis, as flat C-order indices
    (their places in the shard index), in the order their bytes follow one another.

    The index does not constrain this order; zarr-python writes ``"morton"`` (Z-order: the bits of
    the coordinates interleaved, axis 0 first at each bit, an axis dropping out once its own bits
    are used up, as ``(extent - 1).bit_length()`` counts them) unless told otherwise. It also knows
    ``"lexicographic"`` (C order; also what its ``"unordered"`` gives today) and
    ``"colexicographic"`` (F order). Following it makes shards written here byte-identical to
    zarr's own. The result is read-only (it is cached per grid and order).
    """
    out = _write_order(grid, order)
    out.flags.writeable = False
    return out


def _write_order(grid: tuple[int, ...], order: str) -> npt.NDArray[np.intp]:
    count = math.prod(grid)
    flat = np.arange(count, dtype=np.intp)
    if order == "colexicographic":
        return flat.reshape(grid).ravel(order="F")
    if order in ("lexicographic", "unordered"):
        return flat
    if order != "morton":
        raise ValueError(
            f"unknown inner chunk order {order!r}: expected 'morton', 'lexicographic', "
            "'colexicographic' or 'unordered'"
        )
    coords = np.unravel_index(flat, grid) if grid else ()
    bits = [(extent - 1).bit_length() for extent in grid]
    code = np.zeros(count, dtype=np.uint64)
    out_bit = 0
    for bit in range(max(bits, default=0)):
        for axis, axis_bits in enumerate(bits):
            if bit < axis_bits:
                along = (coords[axis] >> bit) & 1
                code |= along.astype(np.uint64) << np.uint64(out_bit)
                out_bit += 1
    return flat[np.argsort(code, kind="stable")]
