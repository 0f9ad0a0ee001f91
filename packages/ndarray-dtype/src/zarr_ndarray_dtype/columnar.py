"""Columnar access to ``ndarray`` arrays, no Python object per cell: :class:`Columnar`, reads
and writes of one array or of row-aligned arrays, batch by batch. Arrays the engine leaves to
zarr (an irregular grid, ``transpose``, nested sharding) go through zarr's object path."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.codec import ArrayBytesCodec
from zarr.codecs import ShardingCodec

from zarr_ndarray_dtype import _compat, _engine
from zarr_ndarray_dtype._columns import check_columns, check_out, cut, gather
from zarr_ndarray_dtype._grid import Box, Selection, Shape, cell_at, resolve, slabs
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
    """Cells as columns: cell ``i`` is ``values[offsets[i]:offsets[i + 1]].reshape(shapes[i])``,
    cells in C order of ``shape``, of the data type ``data_type``; ``values, offsets = col``.

    ``offsets`` (int64, from 0) index the first axis of ``values`` (the element dtype, little
    endian): rows of ``(total_rows, d1, ..., dk)`` values for patterns ``[null, d1..dk]``
    (Arrow's ``list<fixed_size_list>``), else items of flat values. ``shapes`` is the
    ``(count, ndim)`` int64 table of the cells' shapes."""

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
            table[:, 0], table[:, 1:] = np.diff(self.offsets), self.values.shape[1:]
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
        items = self.offsets * math.prod(self.values.shape[1:])  # of rows of values: items
        cells = cut(self.values.reshape(-1), items, self.shapes, self.data_type.pattern)
        return cells.reshape(self.shape)

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
    if (layout := Layout.of(array)) is None:
        serializer = next(c for c in array.metadata.codecs if isinstance(c, ArrayBytesCodec))
        while isinstance(serializer, ShardingCodec):  # its inner chunks' serializer
            serializer = next(c for c in serializer.codecs if isinstance(c, ArrayBytesCodec))
        if block_codec_of(serializer) is None:
            raise ValueError(
                f"{what} reads and writes cells stored by the 'vlen-ndarray', 'ragged-ndarray' "
                f"or 'bytes' codec; this {list(dtype.shape)} array is stored by "
                f"{serializer.to_dict().get('name')!r}, which gives no columnar access: read it "
                "as a plain zarr array"
            )
    return dtype, layout


async def _read(
    array: Any, layout: Layout | None, box: Box, shape: Shape, *, copy: bool = True, out: Any = None
) -> Columnar:
    """The cells of ``box`` as :class:`Columnar` of ``shape``, through the engine, or zarr's
    object path for arrays left to it."""
    dtype: NDArrayDType = array.metadata.data_type
    if layout is not None:
        cells = await _engine.read(layout, box, copy=copy, out=out)
    else:
        objects = await _compat.async_array(array).getitem(box.slices)  # 0-d: the cell
        cells = gather(objects.reshape(-1).tolist() if box.extents else [objects], dtype)
        if out is not None:
            (values, offsets), items = out, cells.values.size
            if values.size < items:
                raise ValueError(
                    f"out's values hold {values.size:,} items, but the cells of this selection "
                    f"hold {items:,}: pass values with room for {items:,} items"
                )
            values[:items], offsets[:] = cells.values, cells.offsets
            cells = FlatCells(values[:items], offsets, cells.shapes)
    pattern = dtype.pattern
    if not pattern.is_leading_variable:
        return Columnar(dtype, cells.values, cells.offsets, cell_shapes(cells, pattern), shape)
    if pattern.fixed_items != 1:
        cells.offsets[:] //= pattern.fixed_items  # items to rows, in place: the read's own array
    return Columnar(dtype, cells.values.reshape(-1, *pattern.dims[1:]), cells.offsets, None, shape)


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
    return _compat.run(_read(array, layout, box, box.shape, out=out))


def iter_columnar(
    array: zarr.Array, selection: Selection = ..., *, values: bool = True
) -> Iterator[tuple[tuple[slice, ...], Columnar]]:
    """Read ``selection`` batch by batch: ``(slices, col)`` pairs in C order of the selection,
    ``slices`` the batch's box in the array, ``col`` its cells (``col.shape`` the box's
    extents); a batch is a slab of whole shards (or chunks) where the selection allows.
    ``values=False`` checks every chunk but copies no values (``col.values`` is empty)."""
    layout = layout_of(array, "iter_columnar")[1]
    box = resolve(selection, array.metadata.shape, "iter_columnar")
    units = [box.extents] if layout is None else [layout.chunks, layout.inner]
    across = math.prod(box.extents[1:]) * units[0][0] if box.extents else 1
    for part in slabs(box, units, lambda: max(across, _engine.FIRST_BATCH_CELLS)):
        yield part.slices, _compat.run(_read(array, layout, part, part.extents, copy=values))


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


def _aligned(
    arrays: Mapping[str, Any] | Any, selection: Selection, what: str
) -> tuple[dict[str, tuple[Any, Layout | None]], Box]:
    """The ``ndarray`` arrays of a mapping or a group by name, with their layouts, checked (of
    patterns ``[null, d1..dk]`` and one shape), and the box of ``selection``."""
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
    shapes = {name: tuple(array.shape) for name, array in members.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{n!r} {shape}" for n, shape in shapes.items())
        raise AlignmentError(f"{what}: the arrays have different shapes ({listed})")
    box = resolve(selection, next(iter(shapes.values())), what)
    return {name: (array, layouts[name]) for name, array in members.items()}, box


def read_aligned(
    arrays: Mapping[str, zarr.Array] | zarr.Group, selection: Selection = ...
) -> dict[str, Columnar]:
    """Read ``selection`` of row-aligned ``ndarray`` arrays (a mapping by name, or a group's) at
    once as :class:`Columnar`, one per array, all sharing one ``offsets`` array. All have one
    shape and patterns ``[null, d1..dk]``; a cell whose row counts differ between them raises
    :class:`~zarr_ndarray_dtype.errors.AlignmentError` naming it, the arrays and their extents.
    """
    members, box = _aligned(arrays, selection, "read_aligned")

    async def read_all() -> list[Columnar]:
        return list(await asyncio.gather(*(_read(*m, box, box.shape) for m in members.values())))

    cols = dict(zip(members, _compat.run(read_all()), strict=True))
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
    members, box = _aligned(arrays, selection, "write_aligned")
    if unknown := sorted(set(values) - set(members)):
        raise ValueError(
            f"write_aligned: no array named {unknown} among {sorted(members)}: name the arrays "
            "to write by their keys"
        )
    jobs, count = [], math.prod(box.extents)
    for name in values:
        array, layout = members[name]
        cells = check_columns(values[name], offsets, array.metadata.data_type, count)
        if layout is None:
            raise ValueError(f"write_aligned: array {name!r} is left to zarr: use write_columnar")
        jobs.append((layout, box, cells))
    _compat.run(_engine.write(jobs))
