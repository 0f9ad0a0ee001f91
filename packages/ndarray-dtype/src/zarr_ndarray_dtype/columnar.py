"""Columnar access to the cells of any ``ndarray`` array, of any rank and either codec:
:class:`Columnar`, :func:`read_columnar` and :func:`write_columnar`, with no Python object per
cell.

Chunks go through zarr's own pipeline (:mod:`zarr_ndarray_dtype._cell_ids`): zarr fetches,
decompresses, cuts shards and merges partial chunks; the array's codec contributes only its
:class:`~zarr_ndarray_dtype.blocks.BlockCodec`. Reads stream in batches of whole chunks into
one output; writes check every cell and every stored chunk they merge before storing any.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from zarr_ndarray_dtype._cell_ids import data_type_and_codec
from zarr_ndarray_dtype._columns import check_columns
from zarr_ndarray_dtype._compat import regular_chunk_shape
from zarr_ndarray_dtype._grid import Box, Selection, resolve, slabs
from zarr_ndarray_dtype._read import Scan, read_cells, scan_cells
from zarr_ndarray_dtype._write import write_cells
from zarr_ndarray_dtype.blocks import cell_shapes
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray

__all__ = ["Columnar", "Scan", "iter_columnar", "read_columnar", "scan_cells", "write_columnar"]


class Columnar:
    """Cells as columns: cell ``i`` is ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``.

    ``offsets`` (int64, one entry more than there are cells, from 0) index the first axis of
    ``values`` (the element dtype, little-endian). Where the pattern's only variable dimension
    is the leading one (``[null, d1..dk]``), ``values`` keeps the fixed extents, shape
    ``(total_rows, d1, ..., dk)``, and ``offsets`` count rows: Arrow's
    ``list<fixed_size_list>``, awkward's ``var * d1 * ... * T``. Otherwise ``values`` is flat
    and ``offsets`` count items. ``shapes`` is the ``(count, ndim)`` int64 table of every cell's
    shape, ``shape`` the selection's shape (``math.prod(shape)`` cells, C order) and
    ``data_type`` the cells' :class:`~zarr_ndarray_dtype.NDArray`.

    ``values, offsets = col`` unpacks the two columns.
    """

    __slots__ = ("_shapes", "data_type", "offsets", "shape", "values")

    def __init__(
        self,
        data_type: NDArray,
        values: np.ndarray,
        offsets: npt.NDArray[np.int64],
        shapes: npt.NDArray[np.int64] | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        # ``shapes`` may be None only when it follows from the offsets (rows of ``values``).
        self.data_type = data_type
        self.values = values
        self.offsets = offsets
        self._shapes = shapes
        self.shape = (offsets.size - 1,) if shape is None else tuple(int(n) for n in shape)

    @property
    def shapes(self) -> npt.NDArray[np.int64]:
        """The ``(count, ndim)`` int64 shape of every cell (computed once, on first use, for
        ``[null, d1..dk]``, where the row offsets imply it)."""
        if self._shapes is None:
            table = np.empty((self.offsets.size - 1, self.values.ndim), dtype=np.int64)
            np.subtract(self.offsets[1:], self.offsets[:-1], out=table[:, 0])
            table[:, 1:] = self.values.shape[1:]
            self._shapes = table
        return self._shapes

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.values, self.offsets))

    def __repr__(self) -> str:
        return (
            f"Columnar({self.data_type!r}, shape={self.shape}: values {self.values.shape} "
            f"{self.values.dtype}, offsets up to {int(self.offsets[-1])})"
        )

    def to_awkward(self) -> Any:
        """The cells as an ``awkward.Array`` of type ``shape... * <cell type>``, e.g.
        ``N * var * 2 * float32`` for ``[null, 2]`` (``values`` shared, not copied).

        Needs the ``awkward`` extra; see :func:`zarr_ndarray_dtype.awkward.to_awkward`.
        """
        from zarr_ndarray_dtype.awkward import to_awkward

        return to_awkward(self)

    @classmethod
    def from_awkward(cls, array: Any, ndim: int = 1) -> Columnar:
        """The inverse of :meth:`to_awkward`: the first ``ndim`` dimensions of ``array`` index
        the cells, the rest are each cell's. See :func:`zarr_ndarray_dtype.awkward.from_awkward`.
        """
        from zarr_ndarray_dtype.awkward import from_awkward

        return from_awkward(array, ndim)


def read_columnar(
    array: zarr.Array,
    selection: Selection = ...,
    *,
    out: tuple[np.ndarray, npt.NDArray[np.int64]] | Columnar | None = None,
) -> Columnar:
    """Read the cells ``selection`` of an ``ndarray`` array as :class:`Columnar`.

    ``selection`` is an int, a slice with step 1, ``...`` or a tuple of those, one per axis
    (ints drop their axis from the shape). Unwritten chunks read as fill cells; a corrupt chunk
    raises its codec's ValueError naming it. No Python object is made per cell.

    ``out=(values, offsets)`` (or an earlier :class:`Columnar`, which unpacks so) fills those
    arrays instead of new ones, numpy's ``out=`` convention: ``values`` of the element dtype,
    C-contiguous, with room for the selection's items (its shape does not matter), ``offsets``
    int64 with one entry more than the selection has cells. The result's columns are views of
    them, and an earlier Columnar passed as ``out`` is overwritten. Repeated reads (a worker
    reading block after block) then write pages already in memory instead of new ones the
    kernel must map and zero. Values too small for the selection's items raise ValueError
    naming the items needed; after an error the arrays' contents are unspecified.

    >>> import zarr, numpy as np
    >>> from zarr_ndarray_dtype import NDArrayDType as NDArray
    >>> import zarr_vlen_ndarray  # the codec of [null, d1..dk]
    >>> a = zarr.create_array({}, shape=(3,), chunks=(2,),
    ...                       dtype=NDArray(dtype="int16", shape=(None, 2)))
    >>> a[0] = np.array([[1, 2], [3, 4]], np.int16)
    >>> col = read_columnar(a)
    >>> col.values.tolist(), col.offsets.tolist(), col.shapes.tolist()
    ([[1, 2], [3, 4]], [0, 2, 2, 2], [[2, 2], [0, 2], [0, 2]])
    """
    dtype = data_type_and_codec(array, "read_columnar")[0]
    cells, box = read_cells(array, selection, "read_columnar", out)
    pattern = dtype.pattern
    if not pattern.is_leading_variable:
        shapes = cell_shapes(cells, pattern)
        return Columnar(dtype, cells.values, cells.offsets, shapes, box.shape)
    offsets = cells.offsets  # the engine's own array: items to rows in place
    if pattern.fixed_items != 1:
        offsets //= pattern.fixed_items
    values = cells.values.reshape(-1, *pattern.dims[1:])
    return Columnar(dtype, values, offsets, None, box.shape)


def write_columnar(
    array: zarr.Array,
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    selection: Selection = ...,
    *earlier_form: object,
    shapes: npt.ArrayLike | None = None,
) -> None:
    """Write columnar cells into ``selection`` of an ``ndarray`` array: the inverse of
    :func:`read_columnar`, with the same rule (cell ``i`` is
    ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``, cells in C order of the selection).

    ``values`` is flat, or for ``[null, d1..dk]`` of shape ``(total_rows, d1, ..., dk)`` with
    ``offsets`` counting rows. ``shapes`` (a ``(cells, ndim)`` integer table) is needed only
    for patterns with two or more variable dimensions; given for any pattern, it is checked.
    ``write_columnar(b, col.values, col.offsets, shapes=col.shapes)`` of ``col =
    read_columnar(a)`` stores chunks byte-identical to ``b[...] = a[...]``.

    Everything is checked first, so nothing is written when any cell does not fit (values
    convert to the element dtype only without loss), nor when a stored chunk the write keeps
    cells of is corrupt. (``earlier_form`` only catches calls of the earlier signature, to
    name the new one.)
    """
    if earlier_form or np.ndim(offsets) == 2:  # a shape table where the offsets go
        raise TypeError(
            "write_columnar takes (array, values, offsets, selection=..., *, shapes=None): the "
            "earlier call write_columnar(array, values, shapes, offsets, selection) is now "
            "write_columnar(array, values, offsets, selection, shapes=shapes)"
        )
    dtype = data_type_and_codec(array, "write_columnar")[0]
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), "write_columnar")
    cells = check_columns(values, offsets, dtype, math.prod(box.extents), shapes=shapes)
    write_cells(array, cells, box, "write_columnar")


def iter_columnar(
    array: zarr.Array, selection: Selection = ..., *, values: bool = True
) -> Iterator[tuple[tuple[slice, ...], Columnar]]:
    """Read ``selection`` batch by batch: ``(slices, col)`` pairs in C order of the selection,
    ``slices`` the batch's box in array coordinates (one slice per axis), ``col`` its cells
    (``col.shape`` the box's extents). Batches are whole shards (or chunks) where the selection
    allows. ``values=False`` checks every chunk as a read does but copies no values:
    ``col.values`` is empty, ``col.offsets`` and ``col.shapes`` are filled."""
    dtype = data_type_and_codec(array, "iter_columnar")[0]
    box = resolve(selection, tuple(int(n) for n in array.metadata.shape), "iter_columnar")
    unit = regular_chunk_shape(array.metadata) or box.extents
    rows = math.prod(box.extents[1:]) * (unit[0] if unit else 1)
    for part in (
        slabs(box, [unit] if unit else [()], lambda: max(rows, 4096)) if box.extents else [box]
    ):
        part = Box(part.starts, part.stops, part.extents)
        if values:
            col = read_columnar(array, part.slices)
        else:
            scan = scan_cells(array, part.slices, "iter_columnar")
            shapes = cell_shapes(scan.cells, dtype.pattern)
            trailing = dtype.pattern.dims[1:] if dtype.pattern.is_leading_variable else ()
            empty = np.empty((0, *trailing), dtype.item_dtype)  # type: ignore[type-var]
            off = scan.cells.offsets
            if dtype.pattern.is_leading_variable and dtype.pattern.fixed_items != 1:
                off = off // dtype.pattern.fixed_items
            col = Columnar(dtype, empty, off, shapes, part.extents)
        yield part.slices, col
