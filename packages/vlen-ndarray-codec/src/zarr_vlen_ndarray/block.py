"""One ``vlen-ndarray`` chunk: framed bytes <-> cells (pure numpy; no zarr), the codec's one
decoder and one encoder (:class:`VlenBlocks`, for its object path and the columnar engine).

:func:`decode` checks the framing, that every element is a whole number of rows and, for bool
elements, every byte; it locates the elements without copying them (:class:`FramedBlock`), so
cells are copied once, straight to their place. :func:`encode` frames cells. Every error is a
:class:`~zarr_vlen_ndarray.framing.FramingError` naming the chunk, the data type and the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, NDArrayDType
from zarr_ndarray_dtype.blocks import Block, ColumnsBlock, FlatCells, check_bool_bytes, offsets_of
from zarr_vlen_ndarray.framing import U32_MAX, FramingError, encode_frames, gather_into, scan_frames

__all__ = ["CODEC_NAME", "FramedBlock", "VlenBlocks", "decode", "encode"]

#: The codec's name in zarr metadata (and in every chunk error message).
CODEC_NAME = "vlen-ndarray"


class FramedBlock:
    """A checked chunk whose elements are located, not copied (a block of the engine)."""

    shapes: npt.NDArray[np.int64] | None = None  # the shapes follow from the sizes

    def __init__(
        self,
        framed: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        nbytes: npt.NDArray[np.int64],
        item: np.dtype[Any],
    ) -> None:
        self.framed, self.starts, self.item = framed, starts, item
        self.sizes = np.floor_divide(nbytes, item.itemsize, out=nbytes)  # 16 bytes a cell, all

    def copy(
        self, cells: npt.NDArray[np.intp] | slice, out: npt.NDArray[np.uint8], dst: Any
    ) -> None:
        nbytes = self.sizes[cells] * self.item.itemsize
        gather_into(self.framed, self.starts[cells], nbytes, out, dst)

    def cells(self) -> FlatCells:
        offsets = offsets_of(self.sizes)
        values = np.empty(int(offsets[-1]), dtype=self.item)
        self.copy(slice(None), values.view(np.uint8), 0)  # back to back
        return FlatCells(values, offsets, None)


def _failed(where: str, dtype: NDArrayDType, exc: Exception) -> FramingError:
    return FramingError(f"cannot decode the {CODEC_NAME!r} {where} for {dtype!r}: {exc}")


def _rows_of(dtype: NDArrayDType) -> str:
    """What one unit of an element's byte length is, for framing messages."""
    fixed = dtype.shape[1:]
    return f"rows of {dtype.dtype} x {tuple(fixed)}" if fixed else f"{dtype.dtype} items"


def decode(
    framed: npt.NDArray[np.uint8], count: int, dtype: NDArrayDType, where: str = "chunk"
) -> Block:
    """Check one chunk of ``count`` elements of ``dtype`` (bytes, read as flat uint8).

    ``where`` names the chunk in error messages (e.g. ``"chunk 'c/3'"``). Raises
    :class:`FramingError` for a chunk that breaks the framing, holds an element that is not a
    whole number of rows, or (bool elements) holds a byte other than 0x00 / 0x01.
    """
    raw = np.ascontiguousarray(np.asarray(framed).reshape(-1).view(np.uint8))
    try:
        starts, nbytes = scan_frames(raw, count, dtype.fixed_nbytes, what=_rows_of(dtype))
    except FramingError as exc:
        raise _failed(where, dtype, exc) from exc
    block = FramedBlock(raw, starts, nbytes, dtype.item_dtype)
    if dtype.item_dtype.kind != "b":
        return block
    cells = block.cells()  # bool bytes are checked on every decode, all at once
    try:
        check_bool_bytes(cells.values, nbytes=block.sizes)
    except CellError as exc:
        raise _failed(where, dtype, CellError(f"{exc} (SPEC 2.5/6)")) from exc
    return ColumnsBlock(cells)


def encode(
    cells: FlatCells, dtype: NDArrayDType, where: str = "chunk", limit: int = U32_MAX
) -> npt.NDArray[np.uint8]:
    """Frame ``cells`` (valid cells of ``dtype``, C-contiguous values) as one chunk.

    Raises :class:`FramingError` when the element count or an element's byte length does not
    fit the u32le fields (``limit`` lowers that bound, for tests).
    """
    unit = dtype.item_dtype.itemsize
    nbytes = cells.sizes * unit
    payload = np.ascontiguousarray(cells.values).reshape(-1).view(np.uint8)
    try:
        return encode_frames(payload, nbytes, limit=limit)
    except FramingError as exc:
        if exc.element is not None:
            bad = exc.element
            rows = int(cells.sizes[bad]) // dtype.pattern.fixed_items
            raise FramingError(
                f"the {CODEC_NAME!r} codec cannot encode element {bad} (C order) of the {where}: "
                f"its {rows} rows are {int(nbytes[bad])} bytes; {exc}"
            ) from exc
        raise FramingError(
            f"the {CODEC_NAME!r} codec cannot encode a {where} of {nbytes.size} elements for "
            f"{dtype!r}: {exc}"
        ) from exc


class VlenBlocks:
    """The codec's block codec: :func:`decode` and :func:`encode`, with the u32 bound read from
    ``limit()`` at every encode (0.2.0's tests lower ``zarr_vlen_ndarray.codec.U32_MAX``)."""

    name = CODEC_NAME

    def __init__(self, limit: Callable[[], int]) -> None:
        self.limit = limit

    def decode(
        self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArrayDType, where: str
    ) -> Block:
        return decode(raw, count, dtype, where)

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> npt.NDArray[np.uint8]:
        return encode(cells, dtype, where, self.limit())
