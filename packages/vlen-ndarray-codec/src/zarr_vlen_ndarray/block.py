"""One chunk of the ``vlen-ndarray`` codec as a block: framed bytes <-> ``(values, offsets)``.

The one chunk encoder and the one chunk decoder of the package (pure numpy; no zarr). Every
path that reads or writes a chunk's bytes is to go through here: the codec (which then cuts the
block into per-cell views), the columnar path (which keeps the block), and the store tool.

* :func:`decode_block` unframes a chunk, checks that every element is a whole number of rows
  and, for bool elements, that every byte is 0x00 or 0x01, and returns ``values`` of shape
  ``(total, d1, ..., dk)`` plus int64 ``offsets``: element ``i`` is
  ``values[offsets[i]:offsets[i + 1]]``, elements in the chunk's C order. It is two steps, also
  usable apart by a caller that assembles many chunks into one output (the columnar read):
  :func:`plan_block` checks the framing and locates the elements
  (:func:`~zarr_vlen_ndarray.framing.scan_frames`; nothing copied), and
  :func:`extract_block` copies a run of elements straight into a caller-provided slice
  (:func:`~zarr_vlen_ndarray.framing.unframe_into`) and applies the bool-byte rule there.
* :func:`encode_block` is its inverse. The u32le limits of the framing (element count, element
  byte length) are checked only in :func:`~zarr_vlen_ndarray.framing.encode_frames`; this module
  adds the element's rows to the message.

Every error is a :class:`~zarr_vlen_ndarray.framing.FramingError` (a ValueError) that names the
chunk (``where``), the data type and the rule.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, NDArray
from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_vlen_ndarray.cells import trailing_dims
from zarr_vlen_ndarray.framing import (
    U32_MAX,
    FramingError,
    encode_frames,
    scan_frames,
    unframe_into,
)

__all__ = [
    "CODEC_NAME",
    "BlockPlan",
    "decode_block",
    "encode_block",
    "extract_block",
    "offsets_from_rows",
    "plan_block",
]

#: The codec's name in zarr metadata (and in every chunk error message).
CODEC_NAME = "vlen-ndarray"


def offsets_from_rows(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The int64 offsets (one more entry than ``rows``, from 0) of elements of ``rows`` rows."""
    offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    return offsets


def _rows_of(dtype: NDArray, fixed: tuple[int, ...]) -> str:
    """What one unit of an element's byte length is, for framing messages."""
    return f"rows of {dtype.dtype} x {fixed}" if fixed else f"{dtype.dtype} items"


class BlockPlan:
    """A checked chunk whose elements are located but not copied yet (see :func:`plan_block`)."""

    __slots__ = ("dtype", "framed", "nbytes", "starts", "where")

    def __init__(
        self,
        framed: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        nbytes: npt.NDArray[np.int64],
        dtype: NDArray,
        where: str,
    ) -> None:
        #: The chunk's bytes (referenced, not copied: drop the plan to release them).
        self.framed = framed
        #: Byte offset of each element's length prefix, and each element's byte length.
        self.starts = starts
        self.nbytes = nbytes
        self.dtype = dtype
        self.where = where

    def rows(self, a: int = 0, b: int | None = None) -> npt.NDArray[np.int64]:
        """The leading extent (rows) of elements ``a`` to ``b - 1`` (a new array)."""
        return self.nbytes[a:b] // self.dtype.fixed_nbytes


def _failed(where: str, dtype: NDArray, exc: Exception) -> FramingError:
    return FramingError(f"cannot decode the {CODEC_NAME!r} {where} for {dtype!r}: {exc}")


def plan_block(
    framed: npt.NDArray[np.uint8], count: int, dtype: NDArray, *, where: str = "chunk"
) -> BlockPlan:
    """Check one chunk of ``count`` elements of ``dtype`` and locate its elements (no copy).

    ``framed`` is the chunk's bytes (any shape; read as flat ``uint8``). Raises
    :class:`FramingError` for a chunk that breaks the framing or holds an element that is not
    a whole number of rows; ``where`` names the chunk in error messages (e.g. ``"chunk 'c/3'"``
    or ``"chunk of shape (4, 5)"``).
    """
    fixed = trailing_dims(dtype)
    raw = np.ascontiguousarray(np.asarray(framed).reshape(-1).view(np.uint8))
    try:
        starts, nbytes = scan_frames(raw, count, dtype.fixed_nbytes, what=_rows_of(dtype, fixed))
    except FramingError as exc:
        raise _failed(where, dtype, exc) from exc
    return BlockPlan(raw, starts, nbytes, dtype, where)


def extract_block(plan: BlockPlan, a: int, b: int, out: np.ndarray) -> None:
    """Copy elements ``a`` to ``b - 1`` of a planned chunk into ``out``, back to back.

    ``out`` is a writable C-contiguous array of the element dtype and shape
    ``(plan.rows(a, b).sum(), d1, ..., dk)``, typically a slice of one output shared by many
    chunks. For bool elements, raises :class:`FramingError` naming the element when a copied
    byte is not 0x00 / 0x01 (the rule of :func:`zarr_ndarray_dtype.cells.check_bool_bytes`).
    """
    fixed = trailing_dims(plan.dtype)
    item = plan.dtype.item_dtype
    if out.dtype != item or out.shape[1:] != fixed or not out.flags.c_contiguous:
        raise TypeError(
            f"out must be a C-contiguous {item} array of shape (rows, "
            f"{', '.join(map(str, fixed))}), got {out.dtype} with shape {out.shape}"
        )
    raw = out.reshape(-1).view(np.uint8)
    nbytes = plan.nbytes[a:b]
    unframe_into(plan.framed, plan.starts[a:b], nbytes, raw)
    if item.kind == "b":
        try:
            # a empty elements first, so that the message counts elements from the chunk's start
            check_bool_bytes(raw, nbytes=nbytes if not a else np.r_[np.zeros(a, np.int64), nbytes])
        except CellError as exc:
            raise _failed(plan.where, plan.dtype, exc) from exc


def decode_block(
    framed: npt.NDArray[np.uint8], count: int, dtype: NDArray, *, where: str = "chunk"
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Unframe one chunk of ``count`` elements of ``dtype`` into ``(values, offsets)``.

    ``framed`` is the chunk's bytes (any shape; read as flat ``uint8``). ``values`` is a new,
    writable, C-contiguous array of shape ``(total, d1, ..., dk)`` and the element dtype
    (little-endian) that no one else references; ``offsets`` is int64 with ``count + 1``
    entries starting at 0. ``where`` names the chunk in error messages (e.g. ``"chunk 'c/3'"``
    or ``"chunk of shape (4, 5)"``). This is :func:`plan_block` then :func:`extract_block` of
    every element into a new array.

    Raises :class:`FramingError` for a chunk that breaks the framing, holds an element that is
    not a whole number of rows, or (bool elements) holds a byte other than 0x00 / 0x01.
    """
    plan = plan_block(framed, count, dtype, where=where)
    offsets = offsets_from_rows(plan.rows())
    values = np.empty((int(offsets[-1]), *trailing_dims(dtype)), dtype=dtype.item_dtype)
    extract_block(plan, 0, count, values)
    return values, offsets


def encode_block(
    values: np.ndarray,
    offsets: npt.NDArray[np.int64],
    dtype: NDArray,
    *,
    where: str = "chunk",
    limit: int = U32_MAX,
) -> npt.NDArray[np.uint8]:
    """Frame the elements ``values[offsets[i]:offsets[i + 1]]`` (in order) as one chunk.

    ``values`` has shape ``(total, d1, ..., dk)`` and exactly the element dtype (little-endian;
    bool values stored as given, see :func:`zarr_ndarray_dtype.cells.bool_bytes_as_01`);
    ``offsets`` has one entry more than there are elements, starts at 0, never decreases and
    ends at ``total``. Returns the framed chunk as a new 1-D ``uint8`` array. Raises
    :class:`FramingError` when the element count or an element's byte length does not fit the
    u32le fields, and ValueError / TypeError for values or offsets of the wrong form.
    """
    fixed = trailing_dims(dtype)
    item = dtype.item_dtype
    if values.dtype != item or values.shape[1:] != fixed or values.ndim != len(fixed) + 1:
        raise TypeError(
            f"values for {dtype!r} must be a {item} array of shape (total, "
            f"{', '.join(map(str, fixed))}), got {values.dtype} with shape {values.shape}"
        )
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size == 0 or int(offsets[0]) != 0:
        raise ValueError(
            f"offsets must be a 1-D array of elements + 1 entries starting at 0, got {offsets!r}"
        )
    rows = np.diff(offsets)
    nbytes = rows * dtype.fixed_nbytes
    payload = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    try:
        return encode_frames(payload, nbytes, limit=limit)
    except FramingError as exc:
        if exc.element is not None:
            bad = exc.element
            raise FramingError(
                f"the {CODEC_NAME!r} codec cannot encode element {bad} (C order) of the {where}: "
                f"its {int(rows[bad])} rows are {int(nbytes[bad])} bytes; {exc}"
            ) from exc
        raise FramingError(
            f"the {CODEC_NAME!r} codec cannot encode a {where} of {rows.size} elements for "
            f"{dtype!r}: {exc}"
        ) from exc
