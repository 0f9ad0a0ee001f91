"""The ``ragged-ndarray`` chunk layout, vectorized over whole chunks (pure numpy; no zarr)::

    u32le count                                  number of elements in the chunk
    count * k u32le extents                      each element's k variable extents
    zero bytes up to a multiple of min(s, 8)     s: the item size; from the chunk start
    values                                       every element's items, C order, little-endian

The extent table gives every offset, so decoding needs no scan, and the values are one aligned
view. Every header field is checked against the bytes present before anything it sizes is
allocated.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import offsets_of

# U32_MAX: the limit of the count and of every extent. MAX_ELEMENT_NBYTES: the element-size limit
# (SPEC 1.2), numpy's limit on an array's bytes too, so no array, not even an empty one, passes it.
from zarr_ndarray_dtype.pattern import MAX_ELEMENT_NBYTES, U32_MAX

__all__ = [
    "EXTENT_NBYTES", "HEADER_NBYTES", "U32_MAX", "RaggedLayoutError", "alignment",
    "decode_layout", "element_items", "encode_layout", "values_start",
]  # fmt: skip

#: Bytes of the leading element count.
HEADER_NBYTES = 4
#: Bytes of each entry of the extent table.
EXTENT_NBYTES = 4


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
    extents: npt.NDArray[np.int64], values: npt.NDArray[np.uint8], itemsize: int
) -> npt.NDArray[np.uint8]:
    """One chunk from the ``(count, k)`` extent table and the value bytes it describes (the
    caller builds both from the same cells). Raises :class:`RaggedLayoutError` for a count or an
    extent that does not fit a u32le."""
    count, k = extents.shape
    if count > U32_MAX:
        raise RaggedLayoutError(
            f"a ragged-ndarray chunk holds at most {U32_MAX} elements (the count is a u32le), "
            f"got {count}; use smaller chunks."
        )
    if extents.size and (int(np.max(extents)) > U32_MAX or int(np.min(extents)) < 0):
        element, axis = divmod(int(np.argmax((extents > U32_MAX) | (extents < 0))), k)
        raise RaggedLayoutError(
            f"element {element} (C order) of the chunk has the variable extent "
            f"{int(extents[element, axis])}, but extents are u32le, at most {U32_MAX}; split the "
            "element."
        )
    start = values_start(count, k, itemsize)
    out = np.zeros(start + values.size, dtype=np.uint8)
    out[: HEADER_NBYTES + EXTENT_NBYTES * extents.size].view("<u4")[:] = np.append(count, extents)
    out[start:] = values.reshape(-1)
    return out


def element_items(
    extents: npt.NDArray[np.uint32], fixed_items: int, cap: int
) -> npt.NDArray[np.uint64]:
    """Items of each element, ``prod(row) * fixed_items``, with every value above ``cap`` set to
    ``cap + 1`` (so products of hostile extents never wrap around). ``cap`` must be < 2**63."""
    count, k = extents.shape
    if count and k and int(np.max(extents)) ** k * fixed_items <= cap:
        # No product can pass cap (the common case: one reduction, then plain products).
        items = np.full(count, fixed_items, dtype=np.uint64)
        for column in extents.T:  # k columns: a loop over axes, not elements
            items *= column
        return items
    over, limit = np.uint64(cap + 1), np.uint64(cap)
    items = np.full(count, min(fixed_items, cap + 1), dtype=np.uint64)
    for column in extents.T.astype(np.uint64):
        fits = items <= limit // np.maximum(column, np.uint64(1))
        items = np.where(fits, items * column, over)
        items = np.where(column == 0, np.uint64(0), np.minimum(items, over))
    return items


def decode_layout(
    raw: npt.NDArray[np.uint8], count: int, k: int, itemsize: int, fixed_items: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Check a chunk (1-D ``uint8``) of ``count`` elements against the layout; return its
    ``(count, k)`` extent table, its elements' item offsets and its value bytes (a view of
    ``raw`` where aligned). Fixed extents are >= 1, so ``fixed_items`` is too.

    Raises :class:`RaggedLayoutError` naming the first problem and the rule it breaks.
    """
    size, table_end = raw.size, HEADER_NBYTES + EXTENT_NBYTES * count * k
    start = values_start(count, k, itemsize)
    if size < HEADER_NBYTES:
        raise RaggedLayoutError(
            f"the chunk has {size} bytes, fewer than the {HEADER_NBYTES}-byte element count "
            "(short header) (SPEC 5.4/1)"
        )
    if (stored := int(raw[:HEADER_NBYTES].view("<u4")[0])) != count:
        raise RaggedLayoutError(
            f"the chunk says it holds {stored} elements, but the chunk shape holds {count} "
            "(count mismatch) (SPEC 5.4/2)"
        )
    if size < start:
        part = "table" if size < table_end else "padding"
        raise RaggedLayoutError(
            f"the extent table of {count} x {k} u32le and the padding after it need {start} "
            f"bytes, but the chunk has {size} (truncated {part}) (SPEC 5.4/3)"
        )
    if (padding := raw[table_end:start]).any():
        raise RaggedLayoutError(
            f"padding bytes {table_end}..{start - 1} must be zero, got {padding.tobytes().hex()} "
            "(nonzero padding) (SPEC 5.4/4)"
        )
    table, values = raw[HEADER_NBYTES:table_end].view("<u4").reshape(count, k), raw[start:]
    cap = values.size // itemsize  # no element can hold more items than the chunk has values
    items = element_items(table, fixed_items, cap)
    if count and int(np.max(items)) > cap:
        bad = int(np.argmax(items > np.uint64(cap)))
        raise RaggedLayoutError(
            f"element {bad} (C order) has the variable extents {table[bad].tolist()}, more items "
            f"than the {values.size} value bytes present hold (SPEC 5.4/5)"
        )
    unit = fixed_items * itemsize
    if count and k and int(np.max(table)) ** k * unit > MAX_ELEMENT_NBYTES:
        # Only elements with no items can get here (the others fit in the bytes present).
        nonzero = element_items(np.maximum(table, 1), unit, MAX_ELEMENT_NBYTES)
        if int(np.max(nonzero)) > MAX_ELEMENT_NBYTES:
            bad = int(np.argmax(nonzero > np.uint64(MAX_ELEMENT_NBYTES)))
            raise RaggedLayoutError(
                f"element {bad} (C order) has the variable extents {table[bad].tolist()}: its "
                f"nonzero extents times the {itemsize}-byte items pass numpy's limit of "
                f"{MAX_ELEMENT_NBYTES} bytes, so no array, not even an empty one, has that shape "
                "(element-size limit) (SPEC 5.4/8)"
            )
    # Each entry is <= cap: a float64 sum bounds the total before the exact int64 sum.
    if count and float(items.sum(dtype=np.float64)) > cap * (1 + 1e-9) + 1:
        raise RaggedLayoutError(
            f"the extent table describes more items than the {values.size} value bytes present "
            "hold (values shorter than the table says) (SPEC 5.4/5)"
        )
    offsets = offsets_of(items.astype(np.int64))
    if (expected := int(offsets[-1]) * itemsize) != values.size:
        rule = "values shorter than the table says) (SPEC 5.4/5"
        if expected < values.size:
            rule = "values longer than the table says; the chunk ends after them) (SPEC 5.4/6"
        raise RaggedLayoutError(
            f"the extent table describes {expected} value bytes, but {values.size} are present "
            f"({rule})"
        )
    if (raw.ctypes.data + start) % alignment(itemsize):
        values = values.copy()  # unaligned source buffer: one copy makes typed views aligned
    return table.astype(np.int64), offsets, values
