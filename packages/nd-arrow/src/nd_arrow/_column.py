"""``NdColumn``: a column of ``nd_arrow.array`` from checked Arrow input (pyarrow or any Arrow
PyCapsule exporter), decoded to numpy (zero-copy views where values have no nulls); and the
type's array and scalar classes, which decode through it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._array import NdArray, trusted_array
from nd_arrow._attrs import AttrDecoder
from nd_arrow._builder import build_parts
from nd_arrow._extension import NdArrayType
from nd_arrow._format import (
    EXTENSION_METADATA_KEY,
    EXTENSION_NAME,
    EXTENSION_NAME_KEY,
    parse_extension_metadata,
)
from nd_arrow._interchange import import_array
from nd_arrow._ragged import offsets_of
from nd_arrow._storage import StorageParts
from nd_arrow._storage_check import validate_storage
from nd_arrow._values import arrow_to_numpy
from nd_arrow.errors import NotSupportedError, SchemaMismatchError

__all__ = ["NdArrayScalar", "NdColumn", "NdExtensionArray", "parts_of"]

ArrayInput = NdArray | np.ndarray | None


def _shaped(values: npt.NDArray[Any], shape: Sequence[int], row: int) -> npt.NDArray[Any]:
    """Row ``row``'s values in its shape; a valid row numpy cannot hold (no values, but sizes
    whose non-zero ones times the item size pass 2**63 - 1 bytes) is refused as FORMAT §4 says."""
    try:
        return values.reshape(shape)
    except ValueError as exc:
        raise NotSupportedError(
            f"nd column: row {row} has the sizes {list(shape)} and no values, a valid row (FORMAT "
            f"4/4) whose shape numpy cannot hold: its non-zero sizes times the {values.itemsize}-"
            "byte items pass 2**63 - 1 bytes"
        ) from exc


class NdColumn:
    """A column of N-d arrays: build with :meth:`from_arrays` or :meth:`from_arrow`.

    >>> import numpy as np
    >>> col = NdColumn.from_arrays([np.ones((2, 2)), None], dims=["y", "x"])
    >>> len(col), col[1] is None, col[0].sizes
    (2, True, {'y': 2, 'x': 2})
    """

    __slots__ = ("_attrs", "_flat", "_names", "_parts", "_type")

    def __init__(self, parts: StorageParts, dtype: NdArrayType | None = None) -> None:
        """Wrap checked parts; ``dtype`` is their type when the caller has it."""
        self._parts = parts
        self._type = NdArrayType(parts.storage.type) if dtype is None else dtype
        self._flat: tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None] | None = None
        self._attrs: AttrDecoder | None = None
        self._names: list[tuple[str, ...] | None] | None = None

    # ----------------------------------------------------------------------------------- build

    @classmethod
    def from_arrays(
        cls,
        arrays: Sequence[ArrayInput],
        dims: Sequence[str] | None = None,
        *,
        value_type: pa.DataType | None = None,
    ) -> NdColumn:
        """A column with one row per item: an :class:`NdArray`, a numpy array or None (null row).

        ``dims`` names the axes of plain numpy arrays (default ``dim_0, dim_1, ...``); NdArrays
        keep their own. ``value_type`` casts the values to an Arrow type (required when no row
        has values to take it from).
        """
        items = arrays if isinstance(arrays, list) else list(arrays)
        return cls(build_parts(items, dims, value_type, "nd column"))

    @classmethod
    def from_arrow(
        cls, data: pa.Array | pa.ChunkedArray, field: pa.Field | None = None
    ) -> NdColumn:
        """A column from Arrow data, checking every rule of the format.

        Accepts an extension array of ``nd_arrow.array`` (this package's class or another
        registered under the name), a chunked array of them, the plain storage Struct as read
        without registration, or any object of the Arrow PyCapsule interface
        (``__arrow_c_array__`` or ``__arrow_c_stream__``: arro3, polars, nanoarrow, ...). With
        ``field`` given, a plain struct must carry the extension keys in its metadata.
        """
        data = import_array(data, "NdColumn.from_arrow")
        if isinstance(data, pa.ChunkedArray):
            chunks = data.chunks
            dtype = data.type
        else:
            chunks = [data]
            dtype = data.type
        own = dtype if isinstance(dtype, NdArrayType) else None  # its layout is known
        if isinstance(dtype, pa.BaseExtensionType):
            if dtype.extension_name != EXTENSION_NAME:
                raise SchemaMismatchError(
                    f"NdColumn.from_arrow: extension type {dtype.extension_name!r} is not "
                    f"{EXTENSION_NAME!r}"
                )
            serialize = getattr(dtype, "__arrow_ext_serialize__", None)
            if serialize is not None and own is None:
                parse_extension_metadata(serialize())
            chunks = [c.storage for c in chunks]
            dtype = dtype.storage_type
        elif field is not None:
            meta = field.metadata or {}
            name = meta.get(EXTENSION_NAME_KEY)
            if name != EXTENSION_NAME.encode():
                raise SchemaMismatchError(
                    f"NdColumn.from_arrow: field {field.name!r} is not tagged "
                    f"{EXTENSION_NAME!r} (ARROW:extension:name is {name!r})"
                )
            parse_extension_metadata(meta.get(EXTENSION_METADATA_KEY, b""))
        if len(chunks) == 1:
            storage = chunks[0]
        elif chunks:
            storage = pa.concat_arrays(chunks)
        else:
            storage = pa.array([], dtype)
        layout = None if own is None else own.layout
        return cls(validate_storage(storage, layout=layout), own)

    def to_arrow(self) -> pa.ExtensionArray:
        """The column as a pyarrow extension array of :class:`NdArrayType`."""
        return pa.ExtensionArray.from_storage(self._type, self._parts.storage)

    # Arrow PyCapsule interface: any Arrow library imports the column with its extension type
    # (the name and metadata travel in the exported schema).

    def __arrow_c_schema__(self) -> object:
        """An ArrowSchema capsule: the storage Struct tagged ``nd_arrow.array``."""
        return self._type.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """ArrowSchema and ArrowArray capsules of the column (``requested_schema`` as pyarrow
        handles it: an equal schema, or a cast pyarrow can do)."""
        return self.to_arrow().__arrow_c_array__(requested_schema)  # type: ignore[no-any-return]

    @property
    def type(self) -> NdArrayType:
        return self._type

    @property
    def value_type(self) -> pa.DataType:
        return self._type.value_type

    @property
    def storage(self) -> pa.StructArray:
        return self._parts.storage

    @property
    def null_count(self) -> int:
        return self._parts.null_count

    def __len__(self) -> int:
        return len(self._parts)

    def __repr__(self) -> str:
        return f"NdColumn(len={len(self)}, value_type={self.value_type}, nulls={self.null_count})"

    def _flat_values(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
        if self._flat is None:
            self._flat = arrow_to_numpy(self._parts.values)
        return self._flat

    def _row_dims(self) -> list[tuple[str, ...] | None]:
        if self._names is None:
            p = self._parts
            off = p.dim_offsets
            rank = np.diff(off)
            valid_ranks = rank[p.valid]
            words = p.name_dict
            out: list[tuple[str, ...] | None]
            uniform = None
            if len(valid_ranks) and valid_ranks.min() == valid_ranks.max():
                r = int(valid_ranks[0])
                starts = off[:-1][p.valid]
                block = p.name_codes[starts[:, None] + np.arange(r)]
                if (block == block[0]).all():
                    uniform = tuple(words[c] for c in block[0].tolist())
            if uniform is not None:
                out = [uniform if v else None for v in p.valid.tolist()]
            else:
                codes = p.name_codes.tolist()
                ol = off.tolist()
                out = [
                    tuple(words[c] for c in codes[ol[i] : ol[i + 1]]) if v else None
                    for i, v in enumerate(p.valid.tolist())
                ]
            self._names = out
        return self._names

    def _attr_decoder(self) -> AttrDecoder:
        if self._attrs is None:
            self._attrs = AttrDecoder(self._parts.attrs)
        return self._attrs

    def _views(
        self,
    ) -> tuple[list[npt.NDArray[Any] | None], list[npt.NDArray[np.bool_] | None] | None]:
        """Per-row value views (None for null rows) and per-row masks (None without nulls)."""
        p = self._parts
        n = len(p)
        if n == 0:
            return [], None
        flat, mask = self._flat_values()
        off = p.value_offsets
        doff = p.dim_offsets
        common = p.row_shape
        if mask is None and common is not None:
            # Every row has one rank and one inner shape (found once, when the parts were made).
            lo, hi = int(off[0]), int(off[-1])
            if common.first is not None:  # and one shape: one reshape
                with contextlib.suppress(ValueError):  # rows numpy cannot hold: row by row
                    return list(flat[lo:hi].reshape(n, common.first, *common.inner)), None
            inner = math.prod(common.inner)
            if inner:  # rows of one block, sliced
                block = flat[lo:hi].reshape(-1, *common.inner)
                rows = (off - lo) // inner if inner > 1 else off - lo
                return [block[a:b] for a, b in itertools.pairwise(rows.tolist())], None
        sizes = p.sizes.tolist()
        ol = off.tolist()
        dl = doff.tolist()
        valid = p.valid.tolist()
        views: list[npt.NDArray[Any] | None] = []
        masks: list[npt.NDArray[np.bool_] | None] | None = None
        if mask is None:
            for i in range(n):
                if valid[i]:
                    views.append(_shaped(flat[ol[i] : ol[i + 1]], sizes[dl[i] : dl[i + 1]], i))
                else:
                    views.append(None)
            return views, None
        nulls_before = offsets_of(mask)  # nulls before each value position
        row_nulls = (nulls_before[off[1:]] - nulls_before[off[:-1]]).tolist()
        masks = []
        for i in range(n):
            if not valid[i]:
                views.append(None)
                masks.append(None)
                continue
            shape = sizes[dl[i] : dl[i + 1]]
            views.append(_shaped(flat[ol[i] : ol[i + 1]], shape, i))
            masks.append(mask[ol[i] : ol[i + 1]].reshape(shape) if row_nulls[i] else None)
        return views, masks

    def to_numpy_list(self) -> list[npt.NDArray[Any] | None]:
        """One numpy array per row (None for null rows; masked arrays where values are null).

        Without element nulls the arrays are zero-copy views of the column's value buffer.
        """
        views, masks = self._views()
        if masks is None:
            return views
        return [
            v if m is None else np.ma.MaskedArray(v, mask=m)
            for v, m in zip(views, masks, strict=True)
        ]

    def to_pylist(self) -> list[NdArray | None]:
        """One :class:`NdArray` per row (None for null rows)."""
        views, masks = self._views()
        names = self._row_dims()
        dec = self._attr_decoder()
        row = dec.row
        if masks is None:
            masks = [None] * len(views)
        return [
            None if v is None else trusted_array(v, m, names[i] or (), row(i))
            for i, (v, m) in enumerate(zip(views, masks, strict=True))
        ]

    def __iter__(self) -> Iterator[NdArray | None]:
        return iter(self.to_pylist())

    @overload
    def __getitem__(self, index: int) -> NdArray | None: ...
    @overload
    def __getitem__(self, index: slice) -> NdColumn: ...
    def __getitem__(self, index: int | slice) -> NdArray | NdColumn | None:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                idx = pa.array(np.arange(start, stop, step, dtype=np.int64))
                return NdColumn(validate_storage(self._parts.storage.take(idx)))
            return NdColumn(validate_storage(self._parts.storage.slice(start, stop - start)))
        n = len(self)
        i = int(index)
        if i < -n or i >= n:
            raise IndexError(f"row {index} is out of range for an nd column of {n} rows")
        i %= n if n else 1
        p = self._parts
        if not p.valid[i]:
            return None
        flat, mask = self._flat_values()
        a, b = int(p.value_offsets[i]), int(p.value_offsets[i + 1])
        d0, d1 = int(p.dim_offsets[i]), int(p.dim_offsets[i + 1])
        shape = tuple(p.sizes[d0:d1].tolist())
        m = None
        if mask is not None and mask[a:b].any():
            m = mask[a:b].reshape(shape)
        dims = tuple(p.name_dict[c] for c in p.name_codes[d0:d1].tolist())
        return trusted_array(_shaped(flat[a:b], shape, i), m, dims, self._attr_decoder().row(i))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdColumn):
            return NotImplemented
        return len(self) == len(other) and all(
            a == b for a, b in zip(self.to_pylist(), other.to_pylist(), strict=True)
        )

    __hash__ = None  # type: ignore[assignment]


class NdExtensionArray(pa.ExtensionArray):  # type: ignore[misc]
    """pyarrow array class of :class:`NdArrayType` columns, with decoding shortcuts."""

    def to_column(self) -> NdColumn:
        return NdColumn.from_arrow(self)

    def to_numpy_list(self) -> list[npt.NDArray[Any] | None]:
        return self.to_column().to_numpy_list()


class NdArrayScalar(pa.ExtensionScalar):  # type: ignore[misc]
    """One row of an nd column; ``as_py()`` gives an :class:`NdArray` or None for a null row."""

    def as_py(self, **kwargs: Any) -> NdArray | None:  # kwargs: pyarrow 20-24 pass maps_as_pydicts
        if not self.is_valid:
            return None
        return NdColumn.from_arrow(pa.repeat(self.value, 1))[0]


# Fill the type's hooks once: pyarrow wraps every nd array and scalar in these classes.
NdArrayType._array_class = NdExtensionArray
NdArrayType._scalar_class = NdArrayScalar


def parts_of(column: NdColumn) -> StorageParts:
    """The checked storage parts of a column (package-internal: tensor, zarr bridge, batch)."""
    return column._parts
