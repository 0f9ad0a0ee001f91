"""The columnar form of ``vlen-ndarray`` cells and its rules, shared by every array rank.

Cell ``i`` is ``values[offsets[i]:offsets[i + 1]]``: ``values`` has shape ``(total, d1, ...,
dk)`` and the element dtype (little-endian), ``offsets`` is int64 with one entry more than there
are cells, starting at 0. :class:`Columnar` carries the two (it unpacks as ``values, offsets``)
and the shape of the selection the cells came from, in C order.
:func:`array_dtype` checks that an array can be read this way, :func:`check_columnar` checks
input columns as a whole, and :class:`FillCell` stands for the cells of unwritten chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import CellError, CellTypeError, NDArray, unbox
from zarr_ndarray_dtype.cells import bool_bytes_as_01
from zarr_vlen_ndarray.block import CODEC_NAME
from zarr_vlen_ndarray.cells import trailing_dims

__all__ = ["Columnar", "FillCell", "array_dtype", "check_columnar"]


class Columnar(tuple[np.ndarray, npt.NDArray[np.int64]]):
    """``(values, offsets)`` of a selection's cells, with the selection's ``shape`` beside them.

    A 2-tuple (``values, offsets = read_columnar(a)`` keeps working) with the attributes
    ``values``, ``offsets`` and ``shape``: ``math.prod(shape)`` cells, in C order of the
    selection (``()`` for a single cell picked by ints on every axis).
    """

    shape: tuple[int, ...]

    def __new__(
        cls, values: np.ndarray, offsets: npt.NDArray[np.int64], shape: tuple[int, ...]
    ) -> Columnar:
        self = super().__new__(cls, (values, offsets))
        self.shape = tuple(int(n) for n in shape)
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (self[0], self[1], self.shape)

    @property
    def values(self) -> np.ndarray:
        """The cells' rows, shape ``(total, d1, ..., dk)``."""
        return self[0]

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """int64, one entry more than there are cells, from 0 to ``len(values)``."""
        return self[1]

    def __repr__(self) -> str:
        return f"Columnar(values={self[0]!r}, offsets={self[1]!r}, shape={self.shape!r})"


def array_dtype(array: Any, what: str) -> tuple[NDArray, tuple[int, ...]]:
    """The ``ndarray`` data type and shape of an array (any rank) served by ``vlen-ndarray``."""
    metadata: Any = getattr(getattr(array, "_async_array", array), "metadata", None)
    dtype = getattr(metadata, "data_type", None)
    if not isinstance(dtype, NDArray):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got {dtype!r}; create it "
            "with dtype=zarr_vlen_ndarray.NDArray(dtype=..., shape=(None, ...))"
        )
    if not dtype.pattern.is_leading_variable:
        raise ValueError(
            f"{what} needs the pattern [null, d1, ..., dk] of the {CODEC_NAME!r} codec, got "
            f"{list(dtype.shape)}"
        )
    return dtype, tuple(int(n) for n in metadata.shape)


def check_columnar(
    values: Any, offsets: Any, dtype: NDArray, cells: int | None = None
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Check columnar input against ``dtype``; return C-contiguous LE values and int64 offsets.

    ``offsets`` must be integers, start at 0, never decrease and end at ``len(values)`` (with
    ``cells + 1`` entries when ``cells`` is given); ``values`` must have shape ``(total, d1, ...,
    dk)`` and convert to the element dtype without changing any value (the data type's cell
    rules, applied to the whole block at once). Raises ValueError / TypeError naming the
    problem.
    """
    fixed = trailing_dims(dtype)
    item = dtype.item_dtype
    off = np.asarray(offsets)
    if off.dtype.kind not in "iu":
        raise TypeError(f"offsets must be an integer array, got dtype {off.dtype}")
    if off.ndim != 1 or off.size == 0:
        raise ValueError(f"offsets must be a 1-D array of cells + 1 entries, got shape {off.shape}")
    if cells is not None and off.size != cells + 1:
        raise ValueError(
            f"offsets has {off.size} entries, but {cells} cells need {cells + 1} (one more than "
            "the cells: cell i is values[offsets[i]:offsets[i + 1]])"
        )
    if off.dtype.kind == "u" and off.size and int(off.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"offsets hold {int(off.max())}, beyond the int64 range")
    off = off.astype(np.int64, copy=False)
    if int(off[0]) != 0:
        raise ValueError(f"offsets must start at 0, got {int(off[0])}")
    steps = np.diff(off)
    if steps.size and int(steps.min()) < 0:
        bad = int(np.argmax(steps < 0))
        raise ValueError(
            f"offsets must never decrease, but offsets[{bad + 1}] = {int(off[bad + 1])} < "
            f"offsets[{bad}] = {int(off[bad])}"
        )

    arr = np.asarray(values)
    if arr.dtype == object:
        raise TypeError(
            "values must be a numeric (or bool) array, not an object array; for a list of "
            "cells write array[...] = cells instead"
        )
    if arr.size == 0 and arr.ndim == 1:
        arr = np.empty((0, *fixed), dtype=item)
    if arr.ndim != len(fixed) + 1 or arr.shape[1:] != fixed:
        raise ValueError(
            f"values must have shape (total, {', '.join(map(str, fixed))}) for the pattern "
            f"{list(dtype.shape)}, got {arr.shape}"
            if fixed
            else f"values must be 1-D for the pattern {list(dtype.shape)}, got shape {arr.shape}"
        )
    if int(off[-1]) != arr.shape[0]:
        raise ValueError(
            f"offsets end at {int(off[-1])}, but values has {arr.shape[0]} rows: the last offset "
            "must equal len(values)"
        )
    try:
        block = dtype.coerce_cell(arr)
    except (CellError, CellTypeError) as exc:
        raise type(exc)(f"values do not fit {dtype!r}: {exc}") from exc
    if item.kind == "b":
        block = bool_bytes_as_01(block)  # store bools as 0/1, as the codec does
    return block, off


class FillCell:
    """The fill cell of an array, repeated for cells of chunks that are not stored."""

    def __init__(self, dtype: NDArray, fill_value: Any) -> None:
        cell = unbox(fill_value)
        cell = dtype.coerce_cell(cell) if cell is not None else np.empty((0, *trailing_dims(dtype)))
        self.cell = np.ascontiguousarray(cell, dtype=dtype.item_dtype)
        self.rows = int(self.cell.shape[0])
        self.has_nan = self.cell.dtype.kind in "fc" and bool(np.isnan(self.cell).any())

    def cells(self, count: int) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
        """``count`` fill cells as (values, rows)."""
        values = np.tile(self.cell, (count,) + (1,) * (self.cell.ndim - 1))
        return values, np.full(count, self.rows, dtype=np.int64)

    def equals(self, values: np.ndarray, rows: npt.NDArray[np.int64]) -> bool:
        """Whether every cell equals the fill cell, as zarr's ``==`` against the fill decides."""
        if rows.size and (int(np.min(rows)) != self.rows or int(np.max(rows)) != self.rows):
            return False
        if not self.cell.size or not rows.size:
            return True
        block = values.reshape(rows.size, *self.cell.shape)
        same = block == self.cell
        if self.has_nan:
            same |= np.isnan(block) & np.isnan(self.cell)
        return bool(same.all())
