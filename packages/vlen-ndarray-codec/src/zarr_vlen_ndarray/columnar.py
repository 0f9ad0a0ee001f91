"""Columnar access to ``[null, d1, ..., dk]`` cells: flat rows plus row offsets.

Cell ``i`` of a selection is ``values[offsets[i]:offsets[i + 1]]``: ``values`` has shape
``(total, d1, ..., dk)`` and the element dtype (little-endian), ``offsets`` is int64 with one
entry more than there are cells, from 0. This is the layout of an Arrow list column, so millions
of cells move without one Python object per cell. :class:`Columnar` carries the two (it unpacks
as ``values, offsets``) and the selection's shape.

These functions are the shared columnar engine (:mod:`zarr_ndarray_dtype.columnar`, which serves
every pattern and both codecs) with offsets counted in rows. Stored chunks are byte-identical to
``array[selection] = cells``; selections are an int, a slice with step 1, ``...`` or a tuple of
those, one per axis (ints drop their axis from the shape, as in numpy).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype.columnar import read_cells, served, write_cells
from zarr_ndarray_dtype.columns import check_columns
from zarr_ndarray_dtype.grid import Selection, resolve

__all__ = ["Columnar", "check_columnar", "read_columnar", "write_columnar"]


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


def _rows_dtype(array: Any, what: str) -> tuple[NDArray, tuple[int, ...]]:
    """The data type of an array whose cells have a ``[null, d1..dk]`` pattern, and its ``dk``."""
    dtype = served(array, what)[0]
    if not dtype.pattern.is_leading_variable:
        raise ValueError(
            f"{what} of zarr_vlen_ndarray counts rows of the pattern [null, d1, ..., dk]; this "
            f"array's pattern is {json.dumps(dtype.pattern.to_json())}: use "
            f"zarr_ndarray_dtype.columnar.{what} (also zarr_ragged_ndarray.{what}), which takes "
            "every pattern as flat values, a shape table and offsets"
        )
    return dtype, tuple(d for d in dtype.shape[1:] if d is not None)


def read_columnar(array: Any, selection: Selection = ...) -> Columnar:
    """Read the cells ``selection`` of an array of ``[null, d1..dk]`` cells as :class:`Columnar`.

    Unwritten chunks read as fill cells; a corrupt chunk raises the codec's ValueError
    (:class:`~zarr_vlen_ndarray.framing.FramingError`) naming it.

    >>> import zarr, numpy as np
    >>> from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
    >>> g = zarr.create_array({}, shape=(2, 3), chunks=(1, 2), serializer=VlenNDArrayCodec(),
    ...                       dtype=NDArray(dtype="int16", shape=(None,)))
    >>> write_columnar(g, np.arange(4, dtype=np.int16), np.array([0, 1, 1, 2, 2, 3, 4]))
    >>> col = read_columnar(g, (slice(None), 1))
    >>> col.values.tolist(), col.offsets.tolist(), col.shape
    ([2], [0, 0, 1], (2,))
    """
    dtype, rows = _rows_dtype(array, "read_columnar")
    cells, box = read_cells(array, selection, "read_columnar")
    offsets = cells.offsets  # the engine's own array: items to rows in place
    if dtype.pattern.fixed_items != 1:
        offsets //= dtype.pattern.fixed_items
    return Columnar(cells.values.reshape(-1, *rows), offsets, box.shape)


def check_columnar(
    values: Any, offsets: Any, dtype: NDArray, cells: int | None = None
) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """Check ``(values, offsets)`` against ``dtype`` (a ``[null, d1..dk]`` pattern); return
    C-contiguous LE values of shape ``(total, d1, ..., dk)`` and int64 row offsets.

    ``offsets`` must be integers, start at 0, never decrease and end at ``len(values)`` (with
    ``cells + 1`` entries when ``cells`` is given); ``values`` must convert to the element dtype
    without changing any value. Raises ValueError / TypeError naming the problem.
    """
    rows = tuple(d for d in dtype.shape[1:] if d is not None)
    checked = check_columns(values, offsets, dtype, cells, rows=rows)
    return checked.values.reshape(-1, *rows), checked.offsets // dtype.pattern.fixed_items


def write_columnar(array: Any, values: Any, offsets: Any, selection: Selection = ...) -> None:
    """Write ``(values, offsets)`` into the cells ``selection`` (C order) of an array of
    ``[null, d1..dk]`` cells: the inverse of :func:`read_columnar`.

    The columns are checked as a whole first (:func:`check_columnar`), so nothing is written when
    any cell does not fit, nor when a stored chunk the write keeps cells of is corrupt.
    """
    dtype, rows = _rows_dtype(array, "write_columnar")
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), "write_columnar")
    cells = check_columns(values, offsets, dtype, math.prod(box.extents), rows=rows)
    write_cells(array, cells, box, "write_columnar")
