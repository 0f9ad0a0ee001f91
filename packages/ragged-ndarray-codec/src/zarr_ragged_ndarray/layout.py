"""The ``ragged-ndarray`` chunk layout, vectorized over whole chunks (pure numpy; no zarr)::

    u32le count                                  number of elements in the chunk
    count * k u32le extents                      each element's k variable extents
    zero bytes up to a multiple of min(s, 8)     s: the item size; from the chunk start
    values                                       every element's items, C order, little-endian

Sizes live apart from the values, so decoding needs no scan: the extent table gives every
offset, the values are one aligned view. Every header field is checked against the bytes
present before anything it sizes is allocated; errors are :class:`RaggedLayoutError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

# U32_MAX: the limit of the element count and of every extent. MAX_ELEMENT_NBYTES: the
# element-size limit (SPEC 1.2), numpy's limit on an array's bytes too, so no array, not even an
# empty one, has a shape that passes it.
from zarr_ndarray_dtype.pattern import MAX_ELEMENT_NBYTES, U32_MAX

__all__ = [
    "EXTENT_NBYTES", "HEADER_NBYTES", "U32_MAX", "DecodedLayout", "RaggedLayoutError",
    "alignment", "decode_layout", "encode_layout", "values_start",
]  # fmt: skip

#: Bytes of the leading element count.
HEADER_NBYTES: Final = 4
#: Bytes of each entry of the extent table.
EXTENT_NBYTES: Final = 4


class RaggedLayoutError(ValueError):
    """A chunk does not follow the ``ragged-ndarray`` layout (or cannot be encoded in it)."""


def alignment(itemsize: int) -> int:
    """The alignment of the values, counted from the chunk start: ``min(itemsize, 8)``."""
    return min(itemsize, 8)


def values_start(count: int, k: int, itemsize: int) -> int:
    """Offset of the values: header, extent table, then zero padding up to the alignment."""
    table_end = HEADER_NBYTES + EXTENT_NBYTES * count * k
    return -(-table_end // alignment(itemsize)) * alignment(itemsize)


def encode_layout(
    extents: npt.NDArray[np.integer], values: npt.NDArray[np.uint8], itemsize: int
) -> npt.NDArray[np.uint8]:
    """One chunk from the ``(count, k)`` extent table and the concatenated value bytes.

    The caller guarantees that ``values`` holds exactly the items the table describes (the cells
    module builds both from the same cells). Raises :class:`RaggedLayoutError` for a count or an
    extent that does not fit a u32le.
    """
    count, k = extents.shape
    if count > U32_MAX:
        raise RaggedLayoutError(
            f"a ragged-ndarray chunk holds at most {U32_MAX} elements (the count is a u32le), "
            f"got {count}; use smaller chunks."
        )
    if extents.size and (int(np.max(extents)) > U32_MAX or int(np.min(extents)) < 0):
        flat = int(np.argmax((extents > U32_MAX) | (extents < 0)))
        element, axis = divmod(flat, k)
        raise RaggedLayoutError(
            f"element {element} (C order) of the chunk has the variable extent "
            f"{int(extents[element, axis])}, but extents are u32le, at most {U32_MAX}; split the "
            "element."
        )
    start = values_start(count, k, itemsize)
    out = np.zeros(start + values.size, dtype=np.uint8)
    out[:HEADER_NBYTES].view("<u4")[0] = count
    table_end = HEADER_NBYTES + EXTENT_NBYTES * count * k
    out[HEADER_NBYTES:table_end].view("<u4")[:] = extents.reshape(-1)
    out[start:] = values.reshape(-1)
    return out


@dataclass(frozen=True)
class DecodedLayout:
    """A checked chunk: the extent table, each element's item count and offsets, the values."""

    extents: npt.NDArray[np.int64]  # (count, k)
    items: npt.NDArray[np.int64]  # (count,): items of each element
    offsets: npt.NDArray[np.int64]  # (count + 1,): item offsets into ``values``, from 0
    values: npt.NDArray[np.uint8]  # the value bytes (a view of the chunk when it is aligned)


def _fail(where: str, problem: str) -> RaggedLayoutError:
    return RaggedLayoutError(f"cannot decode {where}: {problem}")


def element_items(
    extents: npt.NDArray[np.uint32], fixed_items: int, cap: int
) -> npt.NDArray[np.uint64]:
    """Items of each element, ``prod(row) * fixed_items``, with every value above ``cap`` set to
    ``cap + 1`` (so products of hostile extents never wrap around). ``cap`` must be < 2**63."""
    count, k = extents.shape
    over = np.uint64(cap + 1)
    if count and k and int(np.max(extents)) ** k * fixed_items <= cap:
        # No product can pass cap (the common case: one reduction, then plain products).
        items = np.full(count, fixed_items, dtype=np.uint64)
        for column in extents.T:  # k columns: a loop over axes, not elements
            items *= column
        return items
    limit = np.uint64(cap)
    items = np.full(count, min(fixed_items, cap + 1), dtype=np.uint64)
    for column in extents.T.astype(np.uint64):
        safe = np.maximum(column, np.uint64(1))
        fits = items <= limit // safe
        items = np.where(fits, items * column, over)
        items = np.where(column == 0, np.uint64(0), np.minimum(items, over))
    return items


def decode_layout(
    raw: npt.NDArray[np.uint8],
    count: int,
    k: int,
    itemsize: int,
    fixed_items: int,
    *,
    where: str = "a ragged-ndarray chunk",
) -> DecodedLayout:
    """Check a chunk of ``count`` elements against the layout and return its parts.

    ``raw`` is the chunk as a 1-D uint8 array (fixed extents are >= 1, so ``fixed_items`` is
    too). Raises :class:`RaggedLayoutError` naming the first problem: short header, count
    mismatch, truncated table or padding, nonzero padding, extent products that overflow (also
    those of elements with no items: numpy cannot make a shape whose nonzero extents pass
    ``MAX_ELEMENT_NBYTES``) or exceed the bytes present, values shorter or longer than the table
    says.
    """
    start = _check_header(raw, count, k, itemsize, where)
    table = raw[HEADER_NBYTES : HEADER_NBYTES + EXTENT_NBYTES * count * k].view("<u4")
    table = table.reshape(count, k)
    values = raw[start:]
    items, offsets = _check_items(table, values.size, itemsize, fixed_items, where)
    if (raw.ctypes.data + start) % alignment(itemsize):
        values = values.copy()  # unaligned source buffer: one copy makes typed views aligned
    return DecodedLayout(table.astype(np.int64), items.astype(np.int64), offsets, values)


def _check_header(raw: npt.NDArray[np.uint8], count: int, k: int, itemsize: int, where: str) -> int:
    """Where the values of a chunk start, once its count, table and padding are checked."""
    size = raw.size
    if size < HEADER_NBYTES:
        raise _fail(
            where,
            f"the chunk has {size} bytes, fewer than the {HEADER_NBYTES}-byte element count "
            "(short header); the chunk is truncated (SPEC 5.4/1)",
        )
    stored = int(raw[:HEADER_NBYTES].view("<u4")[0])
    if stored != count:
        raise _fail(
            where,
            f"the chunk says it holds {stored} elements, but the chunk shape holds {count} "
            "(count mismatch); the chunk belongs to another array or is corrupt (SPEC 5.4/2)",
        )
    table_end = HEADER_NBYTES + EXTENT_NBYTES * count * k
    start = values_start(count, k, itemsize)
    if size < table_end:
        raise _fail(
            where,
            f"the extent table of {count} x {k} u32le needs bytes up to {table_end}, but the "
            f"chunk has {size} (truncated table) (SPEC 5.4/3)",
        )
    if size < start:
        raise _fail(
            where,
            f"the padding before the values needs bytes up to {start}, but the chunk has "
            f"{size} (truncated padding) (SPEC 5.4/3)",
        )
    padding = raw[table_end:start]
    if padding.any():
        raise _fail(
            where,
            f"padding bytes {table_end}..{start - 1} must be zero, got "
            f"{padding.tobytes().hex()} (nonzero padding) (SPEC 5.4/4)",
        )
    return start


def _check_items(
    table: npt.NDArray[np.uint32], nbytes: int, itemsize: int, fixed_items: int, where: str
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Every element's item count and their offsets, once they are checked against the
    ``nbytes`` value bytes present (and numpy's limit on an empty element's shape)."""
    count, k = table.shape
    cap = nbytes // itemsize  # no element can hold more items than the chunk has values
    items = element_items(table, fixed_items, cap)
    if count and int(np.max(items)) > cap:
        bad = int(np.argmax(items > np.uint64(cap)))
        raise _fail(
            where,
            f"element {bad} (C order) has the variable extents {table[bad].tolist()}, i.e. more "
            f"items than the {nbytes} value bytes present hold (extent product overflows or "
            "exceeds the bytes present) (SPEC 5.4/5)",
        )
    unit = fixed_items * itemsize
    if count and k and int(np.max(table)) ** k * unit > MAX_ELEMENT_NBYTES:
        # Only elements with no items can get here (the others fit in the bytes present).
        nonzero_nbytes = element_items(np.maximum(table, 1), unit, MAX_ELEMENT_NBYTES)
        if int(np.max(nonzero_nbytes)) > MAX_ELEMENT_NBYTES:
            bad = int(np.argmax(nonzero_nbytes > np.uint64(MAX_ELEMENT_NBYTES)))
            raise _fail(
                where,
                f"element {bad} (C order) has the variable extents {table[bad].tolist()}: its "
                f"nonzero extents times the {itemsize}-byte items pass numpy's limit of "
                f"{MAX_ELEMENT_NBYTES} bytes, so no array, not even an empty one, has that shape "
                "(element-size limit); the chunk is corrupt (SPEC 5.4/8)",
            )
    # Each entry is <= cap; a float64 sum bounds the total before the exact int64 sum.
    if count and float(items.sum(dtype=np.float64)) > float(cap) * (1 + 1e-9) + 1:
        raise _fail(
            where,
            f"the extent table describes more items than the {nbytes} value bytes present hold "
            "(values shorter than the table says) (SPEC 5.4/5)",
        )
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(items.astype(np.int64), out=offsets[1:])
    expected = int(offsets[-1]) * itemsize
    if nbytes < expected:
        bad = int(np.argmax(offsets[1:] * itemsize > nbytes))
        raise _fail(
            where,
            f"the extent table describes {expected} value bytes but {nbytes} are present; "
            f"element {bad} (C order) runs past the end (values shorter than the table says) "
            "(SPEC 5.4/5)",
        )
    if nbytes > expected:
        raise _fail(
            where,
            f"{nbytes - expected} bytes follow the {expected} value bytes the extent table "
            "describes (values longer than the table says); the chunk ends after the values "
            "(SPEC 5.4/6)",
        )
    return items, offsets
