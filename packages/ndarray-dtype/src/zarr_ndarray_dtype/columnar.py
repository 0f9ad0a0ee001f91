"""Columnar access to the cells of ``ndarray`` arrays, with no Python object per cell:
:class:`Columnar`, reads and writes of one array or of row-aligned arrays, batch by batch.
Arrays the engine leaves to zarr (an irregular grid, ``transpose``, nested sharding) go
through zarr's object path."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from zarr_ndarray_dtype import _compat, _engine
from zarr_ndarray_dtype._columns import check_columns, check_out, cut, gather
from zarr_ndarray_dtype._grid import Box, Selection, cell_at, resolve, slabs
from zarr_ndarray_dtype._store import Layout, block_codec_of
from zarr_ndarray_dtype.blocks import FlatCells, cell_shapes
from zarr_ndarray_dtype.dtype import NDArrayDType
from zarr_ndarray_dtype.errors import AlignmentError

__all__ = [
    "Columnar",
    "iter_columnar",
    "read_aligned",
    "read_columnar",
    "write_aligned",
    "write_columnar",
]


class Columnar:
    """Cells as columns: cell ``i`` is ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``.

    ``offsets`` (int64, from 0, one more than the cells) index the first axis of ``values`` (the
    element dtype, little-endian): rows of ``(total_rows, d1, ..., dk)`` values for patterns
    ``[null, d1..dk]`` (Arrow's ``list<fixed_size_list>``, awkward's ``var * d1 * ... * T``),
    else items of flat values. ``shapes`` is the ``(count, ndim)`` int64 table of the cells'
    shapes, ``shape`` the selection's (cells in C order), ``data_type`` the cells'
    :class:`~zarr_ndarray_dtype.NDArrayDType`. ``values, offsets = col`` unpacks the columns.
    """

    __slots__ = ("_shapes", "data_type", "offsets", "shape", "values")

    def __init__(
        self,
        data_type: NDArrayDType,
        values: np.ndarray,
        offsets: npt.NDArray[np.int64],
        shapes: npt.NDArray[np.int64] | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        self.data_type, self.values, self.offsets = data_type, values, offsets
        self._shapes = shapes  # None only where the offsets count rows of values
        self.shape = (offsets.size - 1,) if shape is None else tuple(int(n) for n in shape)

    @property
    def shapes(self) -> npt.NDArray[np.int64]:
        """The ``(count, ndim)`` int64 shape of every cell (from row offsets on first use)."""
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

    def cells(self) -> np.ndarray:
        """The cells as an object array of ``shape``, read-only views of ``values``."""
        pattern = self.data_type.pattern
        rows = pattern.fixed_items if pattern.is_leading_variable else 1  # offsets count rows
        flat = self.values.reshape(-1)
        return cut(flat, self.offsets * rows, self.shapes, pattern).reshape(self.shape)

    def to_awkward(self) -> Any:
        """The cells as an ``awkward.Array`` over ``values`` (the ``awkward`` extra): see
        :func:`zarr_ndarray_dtype.awkward.to_awkward`."""
        from zarr_ndarray_dtype.awkward import to_awkward

        return to_awkward(self)

    @classmethod
    def from_awkward(cls, array: Any, ndim: int = 1) -> Columnar:
        """The inverse of :meth:`to_awkward`: the first ``ndim`` dimensions of ``array`` index
        the cells. See :func:`zarr_ndarray_dtype.awkward.from_awkward`."""
        from zarr_ndarray_dtype.awkward import from_awkward

        return from_awkward(array, ndim)


def layout_of(array: Any, what: str) -> tuple[NDArrayDType, Layout | None]:
    """The data type and layout (None: left to zarr) of an ``ndarray`` array; an error naming
    ``what`` for any other array, or a serializer without a block codec."""
    dtype = getattr(getattr(array, "metadata", None), "data_type", None)
    if not isinstance(dtype, NDArrayDType):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got data type {dtype!r}; "
            "create it with dtype=zarr_ndarray_dtype.NDArrayDType(dtype=..., shape=(...))"
        )
    layout = Layout.of(array)
    if layout is None and block_codec_of(serializer := _serializer(array.metadata.codecs)) is None:
        raise ValueError(
            f"{what} reads and writes cells stored by the 'vlen-ndarray', 'ragged-ndarray' or "
            f"'bytes' codec; this {list(dtype.shape)} array is stored by "
            f"{serializer.to_dict().get('name')!r}, which gives no columnar access: read it as "
            "a plain zarr array"
        )
    return dtype, layout


def _serializer(codecs: Any) -> Any:
    """The array -> bytes codec of a codec chain (inside sharding when sharded)."""
    from zarr.abc.codec import ArrayBytesCodec

    serializer: Any = next(c for c in codecs if isinstance(c, ArrayBytesCodec))
    return _serializer(serializer.codecs) if hasattr(serializer, "index_codecs") else serializer


async def read_cells(
    array: Any, layout: Layout | None, box: Box, *, copy: bool = True, out: Any = None
) -> FlatCells:
    """The cells of ``box`` through the engine, or zarr's object path for arrays left to it."""
    if layout is not None:
        return await _engine.read(layout, box, copy=copy, out=out)
    objects = await _compat.async_array(array).getitem(box.slices)
    listed = objects.reshape(-1).tolist() if box.extents else [objects]  # 0-d: the cell itself
    cells = gather(listed, array.metadata.data_type)
    if out is None:
        return cells
    values, offsets = out
    if values.size < cells.values.size:
        raise ValueError(
            f"out's values hold {values.size:,} items, but the cells of this selection hold "
            f"{cells.values.size:,}: pass values with room for {cells.values.size:,} items"
        )
    values[: cells.values.size] = cells.values
    offsets[:] = cells.offsets
    return FlatCells(values[: cells.values.size], offsets, cells.shapes)


def _columnar(dtype: NDArrayDType, cells: FlatCells, shape: tuple[int, ...]) -> Columnar:
    pattern = dtype.pattern
    if not pattern.is_leading_variable:
        return Columnar(dtype, cells.values, cells.offsets, cell_shapes(cells, pattern), shape)
    offsets = cells.offsets  # the engine's own array: items to rows in place
    if pattern.fixed_items != 1:
        offsets //= pattern.fixed_items
    return Columnar(dtype, cells.values.reshape(-1, *pattern.dims[1:]), offsets, None, shape)


def read_columnar(
    array: zarr.Array,
    selection: Selection = ...,
    *,
    out: tuple[np.ndarray, npt.NDArray[np.int64]] | Columnar | None = None,
) -> Columnar:
    """Read the cells ``selection`` (ints, slices of step 1 and ``...``; ints drop their axis)
    of an ``ndarray`` array as :class:`Columnar`. Unwritten chunks read as fill cells; a corrupt
    chunk raises a ValueError naming it.

    ``out=(values, offsets)`` (or an earlier :class:`Columnar`) fills those arrays instead of new
    ones, numpy's ``out=``: ``values`` C-contiguous of the element dtype with room for the
    selection's items (any shape), ``offsets`` int64 of one entry more than the cells; the
    result's columns are views of them. Too small ``values`` raise a ValueError naming the items
    needed; after an error the arrays' contents are unspecified.

    >>> import zarr, numpy as np
    >>> from zarr_ndarray_dtype import NDArrayDType
    >>> import zarr_vlen_ndarray  # the codec of [null, d1..dk]
    >>> a = zarr.create_array({}, shape=(3,), chunks=(2,),
    ...                       dtype=NDArrayDType(dtype="int16", shape=(None, 2)))
    >>> a[0] = np.array([[1, 2], [3, 4]], np.int16)
    >>> col = read_columnar(a)
    >>> col.values.tolist(), col.offsets.tolist(), col.shapes.tolist()
    ([[1, 2], [3, 4]], [0, 2, 2, 2], [[2, 2], [0, 2], [0, 2]])
    """
    dtype, layout = layout_of(array, "read_columnar")
    box = resolve(selection, array.metadata.shape, "read_columnar")
    if out is not None:
        out = check_out(out, dtype, math.prod(box.extents))
    return _columnar(dtype, _compat.run(read_cells(array, layout, box, out=out)), box.shape)


def iter_columnar(
    array: zarr.Array, selection: Selection = ..., *, values: bool = True
) -> Iterator[tuple[tuple[slice, ...], Columnar]]:
    """Read ``selection`` batch by batch: ``(slices, col)`` pairs in C order of the selection,
    ``slices`` the batch's box in the array, ``col`` its cells (``col.shape`` the box's
    extents); a batch is a slab of whole shards (or chunks) where the selection allows.
    ``values=False`` checks every chunk but copies no values (``col.values`` is empty)."""
    dtype, layout = layout_of(array, "iter_columnar")
    box = resolve(selection, array.metadata.shape, "iter_columnar")
    units = [box.extents] if layout is None else [layout.chunks, layout.inner]
    across = math.prod(box.extents[1:]) * units[0][0] if box.extents else 1
    for part in slabs(box, units, lambda: max(across, _engine.FIRST_BATCH_CELLS)):
        cells = _compat.run(read_cells(array, layout, part, copy=values))
        yield part.slices, _columnar(dtype, cells, part.extents)


def write_columnar(
    array: zarr.Array,
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    selection: Selection = ...,
    *,
    shapes: npt.ArrayLike | None = None,
) -> None:
    """Write columnar cells into ``selection`` of an ``ndarray`` array, the inverse of
    :func:`read_columnar` (cells in C order of the selection). ``values`` is flat, or rows of
    ``(total_rows, d1, ..., dk)`` for ``[null, d1..dk]``; ``shapes``, a ``(cells, ndim)`` table,
    is needed for two or more variable dimensions (and checked when given). Nothing is written
    when a cell does not fit (values convert only without loss) or a stored chunk the write
    keeps is corrupt; the chunks are byte-identical to zarr's own object writes."""
    dtype, layout = layout_of(array, "write_columnar")
    box = resolve(selection, array.metadata.shape, "write_columnar")
    cells = check_columns(values, offsets, dtype, math.prod(box.extents), shapes=shapes)
    if layout is not None:
        _compat.run(_engine.write([(layout, box, cells)]))
    else:
        exact = cut(cells.values, cells.offsets, cells.shapes, dtype.pattern)
        array[box.slices] = exact.reshape(box.extents)


# ------------------------------------------------------------------------- aligned arrays


def _aligned(arrays: Mapping[str, Any] | Any, what: str) -> dict[str, tuple[Any, Layout | None]]:
    """The ``ndarray`` arrays of a mapping, or of a group (its own), with their layouts by name:
    all of leading-variable patterns and of one shape (else an error naming them)."""
    if isinstance(arrays, Mapping):
        members = dict(arrays)
    else:  # a zarr.Group: its ndarray arrays (plain ones are a table's business)
        found = sorted(arrays.arrays(), key=lambda pair: pair[0])
        members = {k: a for k, a in found if isinstance(a.metadata.data_type, NDArrayDType)}
    if not members:
        raise ValueError(f"{what}: no 'ndarray' arrays to read together, got {arrays!r}")
    layouts = {}
    for name, array in members.items():
        dtype, layouts[name] = layout_of(array, f"{what} ({name!r})")
        if not dtype.pattern.is_leading_variable:
            raise ValueError(
                f"{what}: array {name!r} has the pattern {json.dumps(dtype.pattern.to_json())}; "
                "aligned arrays are of leading-variable patterns [null, d1, ..., dk], whose "
                "cells align by their first extent: leave it out"
            )
    if len({tuple(a.shape) for a in members.values()}) > 1:
        listed = ", ".join(f"{n!r} {tuple(a.shape)}" for n, a in members.items())
        raise AlignmentError(f"{what}: the arrays have different shapes ({listed})")
    return {name: (array, layouts[name]) for name, array in members.items()}


def read_aligned(
    arrays: Mapping[str, zarr.Array] | zarr.Group, selection: Selection = ...
) -> dict[str, Columnar]:
    """Read ``selection`` of row-aligned ``ndarray`` arrays (a mapping by name, or a group's) at
    once as :class:`Columnar`, one per array, all sharing one ``offsets`` array. All have one
    shape and patterns ``[null, d1..dk]``; a cell whose row counts differ between them raises
    :class:`~zarr_ndarray_dtype.errors.AlignmentError` naming it, the arrays and their extents.
    """
    members = _aligned(arrays, "read_aligned")
    box = resolve(selection, next(iter(members.values()))[0].shape, "read_aligned")

    async def read_all() -> list[FlatCells]:
        return list(await asyncio.gather(*(read_cells(*m, box) for m in members.values())))

    cols = {
        name: _columnar(array.metadata.data_type, cells, box.shape)
        for (name, (array, _)), cells in zip(members.items(), _compat.run(read_all()), strict=True)
    }
    rows = [np.diff(c.offsets) for c in cols.values()]
    differ = np.flatnonzero(np.any([r != rows[0] for r in rows], axis=0))
    if differ.size:
        at = int(differ[0])  # the first misaligned cell, C order
        extents = ", ".join(f"{n!r}: {int(r[at])} rows" for n, r in zip(cols, rows, strict=True))
        raise AlignmentError(
            f"read_aligned: cell {cell_at(box, at)} has different leading extents ({extents}); "
            "aligned arrays hold as many rows in each array at every cell"
        )
    for col in cols.values():
        col.offsets = next(iter(cols.values())).offsets  # one array, shared
    return cols


def write_aligned(
    arrays: Mapping[str, zarr.Array] | zarr.Group,
    values: Mapping[str, npt.ArrayLike],
    offsets: npt.ArrayLike,
    selection: Selection = ...,
) -> None:
    """Write row-aligned columns (``values`` by array name, rows of ``(total_rows, d1, ...,
    dk)``) with one ``offsets`` into ``selection`` of each named array, the inverse of
    :func:`read_aligned`: every column is checked, and every stored chunk a write keeps read,
    before anything is stored; arrays not named are left as they are."""
    members = _aligned(arrays, "write_aligned")
    if unknown := sorted(set(values) - set(members)):
        raise ValueError(
            f"write_aligned: no array named {unknown} among {sorted(members)}: name the arrays "
            "to write by their keys"
        )
    box = resolve(selection, next(iter(members.values()))[0].shape, "write_aligned")
    jobs = []
    for name in values:
        array, layout = members[name]
        cells = check_columns(
            values[name], offsets, array.metadata.data_type, math.prod(box.extents)
        )
        if layout is None:
            raise ValueError(f"write_aligned: array {name!r} is left to zarr: use write_columnar")
        jobs.append((layout, box, cells))
    _compat.run(_engine.write(jobs))
