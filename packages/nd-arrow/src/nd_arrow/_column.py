"""The pyarrow extension type :class:`NdType` (registered on import) and :class:`NdColumn`, built
from numpy arrays and variables or from checked Arrow data (pyarrow or any PyCapsule exporter),
decoded to numpy (zero-copy views where values have no nulls)."""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._format import Mask
from nd_arrow._storage import (
    StorageParts,
    arrow_to_numpy,
    assemble,
    attr_rows,
    encode_attrs,
    is_string_dtype,
    numpy_to_arrow,
    parse_storage_type,
    storage_type,
    validate_storage,
)
from nd_arrow._variable import NdVariable, trusted_variable

Row = NdVariable | np.ndarray | None  # a row as given to a builder


class NdType(pa.ExtensionType):  # type: ignore[misc]
    """``nd_arrow.array``: one named N-d array per row, on a Struct storage (checked against the
    layout: :class:`InvalidEncodingError`); serializes ``{"version":1}``."""

    def __init__(self, storage: pa.DataType) -> None:
        # The parsed storage type (readers need not parse it again): the list item field of
        # ``values`` (name, type, nullability) and one field per attribute key.
        self.layout = parse_storage_type(storage)
        self.value_field, self.attr_fields = self.layout
        super().__init__(storage, fmt.EXTENSION_NAME)

    @classmethod
    def from_value_type(
        cls,
        value_type: pa.DataType,
        attr_fields: Sequence[pa.Field] = (),
        *,
        values_nullable: bool = True,
    ) -> NdType:
        """The type with values of ``value_type`` and the given attribute fields."""
        return cls(storage_type(value_type, attr_fields, values_nullable=values_nullable))

    @property
    def value_type(self) -> pa.DataType:
        return self.value_field.type

    @property
    def version(self) -> int:
        return fmt.ENCODING_VERSION

    def __arrow_ext_serialize__(self) -> bytes:
        return fmt.EXTENSION_METADATA

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> NdType:
        fmt.parse_extension_metadata(serialized)
        return cls(storage_type)

    def __arrow_ext_class__(self) -> type[pa.ExtensionArray]:
        return NdExtensionArray  # (defined below, beside the column it decodes through)

    def __arrow_ext_scalar_class__(self) -> type[pa.ExtensionScalar]:
        return NdScalar

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.storage_type,)

    def __hash__(self) -> int:
        return hash((fmt.EXTENSION_NAME, str(self.storage_type)))

    def __repr__(self) -> str:
        return f"NdType(value_type={self.value_type}, attrs={[f.name for f in self.attr_fields]})"


def register() -> None:
    """Register :class:`NdType` with pyarrow; a repeated registration is a no-op."""
    # ArrowKeyError: registered already, by a re-import or another implementation of the name.
    with contextlib.suppress(pa.ArrowKeyError):
        pa.register_extension_type(NdType.from_value_type(pa.float64()))


def _extension_name(field: pa.Field) -> str | None:
    if isinstance(field.type, pa.BaseExtensionType):
        return str(field.type.extension_name)
    name = (field.metadata or {}).get(fmt.EXTENSION_NAME_KEY)
    return None if name is None else name.decode("utf-8", "replace")


def is_nd_field(field: pa.Field) -> bool:
    """True when ``field`` is an nd column, registered or read as a plain tagged struct."""
    return _extension_name(field) == fmt.EXTENSION_NAME


def is_global_attributes_field(field: pa.Field) -> bool:
    """True when ``field`` is the global-attributes column of an encoded record batch."""
    return _extension_name(field) == fmt.GLOBAL_ATTRIBUTES_EXTENSION


def global_attributes_field(attrs_type: pa.StructType) -> pa.Field:
    """The ``__global_attrs__`` field: a Struct tagged ``nd_arrow.global_attributes``."""
    # Key order as pyarrow writes registered extension types: metadata, then name.
    tag = fmt.GLOBAL_ATTRIBUTES_EXTENSION.encode()
    meta = {fmt.EXTENSION_METADATA_KEY: fmt.EXTENSION_METADATA, fmt.EXTENSION_NAME_KEY: tag}
    return pa.field(fmt.GLOBAL_ATTRIBUTES_FIELD, attrs_type, nullable=True, metadata=meta)


def untagged(meta: dict[bytes, bytes] | None) -> dict[bytes, bytes] | None:
    """Field metadata without the extension keys (None when nothing is left)."""
    tags = (fmt.EXTENSION_NAME_KEY, fmt.EXTENSION_METADATA_KEY)
    return {k: v for k, v in (meta or {}).items() if k not in tags} or None


def encoded_field(logical: pa.Field) -> pa.Field:
    """The nd field for a logical field: same name and metadata, values of its type, nullable."""
    nd_type = NdType.from_value_type(logical.type)
    return pa.field(logical.name, nd_type, nullable=True, metadata=untagged(logical.metadata))


def logical_field(encoded: pa.Field) -> pa.Field:
    """The logical field of an nd field: element type, field metadata minus the extension keys."""
    t = encoded.type
    item = parse_storage_type(getattr(t, "storage_type", t)).value_field
    return pa.field(encoded.name, item.type, item.nullable, metadata=untagged(encoded.metadata))


def encoded_schema(logical: pa.Schema) -> pa.Schema:
    """Every field of ``logical`` as an nd field (see :func:`encoded_field`)."""
    return pa.schema([encoded_field(f) for f in logical], metadata=logical.metadata)


def logical_schema(encoded: pa.Schema) -> pa.Schema:
    """Every nd field of ``encoded`` as its logical field (see :func:`logical_field`)."""
    fields = [logical_field(f) for f in encoded if is_nd_field(f)]
    return pa.schema(fields, metadata=encoded.metadata)


def import_arrow(data: Any, where: str, *, table: bool = False) -> Any:
    """pyarrow arrays as they are (``table``: RecordBatches and Tables, as a Table); other Arrow
    libraries' objects (arro3, polars, DuckDB, nanoarrow, ...) through pyarrow's PyCapsule
    import, which restores registered extension types from the exported schema."""
    kinds = (pa.RecordBatch, pa.Table) if table else (pa.Array, pa.ChunkedArray)
    importers: dict[str, Callable[[Any], Any]] = (  # a stream is a whole table
        {"__arrow_c_stream__": pa.table, "__arrow_c_array__": pa.record_batch}
        if table
        else {"__arrow_c_array__": pa.array, "__arrow_c_stream__": pa.chunked_array}
    )
    try:
        for method, importer in importers.items():
            if not isinstance(data, kinds) and hasattr(data, method):
                data = importer(data)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise errors.InvalidArgumentError(
            f"{where}: pyarrow could not import the Arrow data of {type(data).__name__}: {exc}"
        ) from exc
    if isinstance(data, pa.RecordBatch):  # pa.table(batch) imports pandas
        return pa.Table.from_batches([data])
    if isinstance(data, kinds):
        return data
    raise errors.InvalidArgumentError(
        f"{where}: expected a pyarrow {' or '.join(k.__name__ for k in kinds)}, or an object of "
        f"the Arrow PyCapsule interface ({' / '.join(importers)}), got {type(data).__name__}"
    )


def _common_dtype(arrays: Sequence[np.ndarray | None], where: str) -> np.dtype[Any] | None:
    """The value dtype of the non-null rows (object for strings), refusing a row of another."""
    if not (dtypes := [(i, a.dtype) for i, a in enumerate(arrays) if a is not None]):
        return None
    first = dtypes[0][1]
    for i, dtype in dtypes:
        if dtype != first and not (is_string_dtype(dtype) and is_string_dtype(first)):
            raise errors.SchemaMismatchError(
                f"{where}: row {i} has dtype {dtype} but earlier rows have {first}; all rows "
                "of a column share one value type. Cast first or pass value_type="
            )
    return np.dtype(object) if is_string_dtype(first) else first


def build_parts(items: Sequence[Any], dims: Any, value_type: Any, where: str) -> StorageParts:
    """Storage of rows given as variables, numpy arrays or None (a null row): the values of all
    rows are copied once, and of each row only its shape is read."""
    items = list(items)
    kinds = set(map(type, items))
    parts = None
    if np.ndarray in kinds and kinds <= {np.ndarray, type(None)}:
        parts = _build_joined(items, dims, value_type, where)
    return _build_rows(items, dims, value_type, where) if parts is None else parts


def _build_joined(items: list[Any], dims: Any, value_type: Any, where: str) -> StorageParts | None:
    """Plain numpy arrays: numpy's join checks ranks, trailing shapes and dtypes in one copy of
    the values; None where ranks or trailing shapes differ (then row by row)."""
    arrays = [a for a in items if a is not None]
    k, rank = len(arrays), arrays[0].ndim
    join = np.stack if rank == 0 else np.concatenate
    try:
        try:
            joined = join(arrays, dtype=arrays[0].dtype, casting="no")
        except TypeError:  # dtypes differ: refused with the row named, or strings made objects
            joined = join(arrays, dtype=_common_dtype(items, where), casting="same_kind")
    except errors.NdArrowError:
        raise
    except ValueError:
        return None
    names = fmt.check_dim_names(dims, rank, where)
    lead = np.fromiter(map(len, arrays), np.int64, k) if rank else np.ones(k, np.int64)
    inner = joined.shape[1:]
    fmt.check_dim_size(max(int(np.max(lead)) if rank else 0, *inner, 0), where)
    sizes = np.empty((k, rank), np.int64)
    for j, size in enumerate(inner, 1):  # column by column (broadcasting short rows is slow)
        sizes[:, j] = size
    if rank:
        sizes[:, 0] = lead
    flat = joined.reshape(-1)
    flat = flat.astype(object) if flat.dtype.kind == "U" else flat
    values = numpy_to_arrow(flat, None, value_type, where)
    null_rows = None if k == len(items) else np.fromiter((a is None for a in items), np.bool_)
    return assemble(
        values, lead * math.prod(inner), rank, sizes.reshape(-1), names, None, null_rows
    )


def _build_rows(items: list[Any], dims: Any, value_type: Any, where: str) -> StorageParts:
    """Any mix of variables, numpy arrays and None, row by row."""
    rows: list[NdVariable | None] = []
    for i, item in enumerate(items):
        try:
            is_row = item is None or isinstance(item, NdVariable)
            rows.append(item if is_row else NdVariable(item, dims))
        except (errors.InvalidDimensionsError, errors.InvalidArgumentError) as exc:
            raise type(exc)(f"{where}: row {i}: {exc}") from exc
    present = [r for r in rows if r is not None]
    if not present and value_type is None:
        raise errors.InvalidArgumentError(
            f"{where}: no row has values to take the value type from; pass value_type="
        )
    dtype = _common_dtype([None if r is None else r.values for r in rows], where)
    if present:
        flat = np.concatenate([r.values.reshape(-1) for r in present]).astype(dtype, copy=False)
        mask = None
        if any(r.mask is not None for r in present):
            masks = (np.zeros(r.values.shape, bool) if r.mask is None else r.mask for r in present)
            mask = np.concatenate([m.reshape(-1) for m in masks])
        values = numpy_to_arrow(flat, mask, value_type, where)
    else:
        values = pa.array([], value_type)
    index: dict[str, int] = {}  # the distinct names, and every row's names as codes into them
    codes = None
    if len(dim_sets := {r.dims for r in present}) == 1:  # one set of names (the common case)
        index = dict.fromkeys(dim_sets.pop(), 0)
    else:
        every_dim = (d for r in present for d in r.dims)
        codes = np.fromiter((index.setdefault(d, len(index)) for d in every_dim), np.int64)
    sizes = np.fromiter(itertools.chain.from_iterable(r.shape for r in present), np.int64)
    counts = np.fromiter((r.values.size for r in present), np.int64, len(present))
    ranks = np.fromiter((r.ndim for r in present), np.int64, len(present))
    null_rows = np.array([r is None for r in rows], np.bool_)
    attrs = encode_attrs([None if r is None else r.attrs for r in rows], f"{where} row")
    return assemble(values, counts, ranks, sizes, list(index), codes, null_rows, attrs)


def _shaped(values: npt.NDArray[Any], shape: Sequence[int], row: int) -> npt.NDArray[Any]:
    """Row ``row``'s values in its shape; a valid row numpy cannot hold (no values, but sizes
    whose non-zero ones times the item size pass 2**63 - 1 bytes) is refused (FORMAT 4)."""
    try:
        return values.reshape(shape)
    except ValueError as exc:
        raise errors.NotSupportedError(
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

    def __init__(self, parts: StorageParts, dtype: NdType | None = None) -> None:
        """Wrap checked parts; ``dtype`` is their type when the caller has it."""
        self._parts = parts
        self._type = NdType(parts.storage.type) if dtype is None else dtype

    @classmethod
    def from_arrays(
        cls, arrays: Sequence[Row], dims: Sequence[str] | None = None, *, value_type: Any = None
    ) -> NdColumn:
        """A column with one row per item: an :class:`NdVariable`, a numpy array or None (a null
        row). ``dims`` names the axes of plain numpy arrays (default ``dim_0, dim_1, ...``);
        ``value_type`` casts the values (required when no row has values to take it from)."""
        return cls(build_parts(arrays, dims, value_type, "nd column"))

    @classmethod
    def from_arrow(cls, data: Any, field: pa.Field | None = None) -> NdColumn:
        """A column of Arrow data, checked against every rule of the format: an ``nd_arrow.array``
        extension array (of this package's class or another registered under the name), chunked
        or not, its plain storage Struct (with ``field``, the struct must carry the extension
        keys), or any object of the Arrow PyCapsule interface (arro3, polars, nanoarrow, ...)."""
        data = import_arrow(data, "NdColumn.from_arrow")
        chunks, dtype = data.chunks if isinstance(data, pa.ChunkedArray) else [data], data.type
        own = dtype if isinstance(dtype, NdType) else None  # its layout is known
        if isinstance(dtype, pa.BaseExtensionType):
            if dtype.extension_name != fmt.EXTENSION_NAME:
                raise errors.SchemaMismatchError(
                    f"NdColumn.from_arrow: extension type {dtype.extension_name!r} is not "
                    f"{fmt.EXTENSION_NAME!r}"
                )
            if own is None and hasattr(dtype, "__arrow_ext_serialize__"):
                fmt.parse_extension_metadata(dtype.__arrow_ext_serialize__())
            chunks, dtype = [c.storage for c in chunks], dtype.storage_type
        elif field is not None:
            meta = field.metadata or {}
            if (name := meta.get(fmt.EXTENSION_NAME_KEY)) != fmt.EXTENSION_NAME.encode():
                raise errors.SchemaMismatchError(
                    f"NdColumn.from_arrow: field {field.name!r} is not tagged "
                    f"{fmt.EXTENSION_NAME!r} (ARROW:extension:name is {name!r})"
                )
            fmt.parse_extension_metadata(meta.get(fmt.EXTENSION_METADATA_KEY, b""))
        if len(chunks) != 1:
            chunks = [pa.concat_arrays(chunks) if chunks else pa.array([], dtype)]
        return cls(validate_storage(chunks[0], layout=None if own is None else own.layout), own)

    def to_arrow(self) -> pa.ExtensionArray:
        """The column as a pyarrow extension array of :class:`NdType`."""
        return pa.ExtensionArray.from_storage(self._type, self._parts.storage)

    # The Arrow PyCapsule interface: any Arrow library imports the column with its type.

    def __arrow_c_schema__(self) -> object:
        """An ArrowSchema capsule: the storage Struct tagged ``nd_arrow.array``."""
        return self._type.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """ArrowSchema and ArrowArray capsules of the column (``requested_schema`` as pyarrow
        handles it: an equal schema, or a cast pyarrow can do)."""
        return self.to_arrow().__arrow_c_array__(requested_schema)  # type: ignore[no-any-return]

    @property
    def type(self) -> NdType:
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

    @cached_property
    def _flat(self) -> tuple[npt.NDArray[Any], Mask | None]:
        return arrow_to_numpy(self._parts.values)

    @cached_property
    def _attr_row(self) -> Callable[[int], dict[str, Any]]:
        return attr_rows(self._parts.attrs)

    @cached_property
    def _row_dims(self) -> list[tuple[str, ...] | None]:
        """Every row's dimension names (None for null rows), made once where all rows share them."""
        p = self._parts
        valid, words, codes = p.valid.tolist(), p.name_dict, p.name_codes
        ranks = np.diff(p.dim_offsets)[p.valid]
        if len(ranks) and ranks.min() == ranks.max():
            block = codes[p.dim_offsets[:-1][p.valid, None] + np.arange(ranks[0])]
            if (block == block[0]).all():
                shared = tuple(words[c] for c in block[0].tolist())
                return [shared if v else None for v in valid]
        off, flat = p.dim_offsets.tolist(), codes.tolist()
        return [
            tuple(words[c] for c in flat[off[i] : off[i + 1]]) if v else None
            for i, v in enumerate(valid)
        ]

    def _views(self) -> tuple[list[npt.NDArray[Any] | None], list[Mask | None]]:
        """Per-row value views and masks (None for null rows and rows without nulls)."""
        p, n = self._parts, len(self._parts)
        flat, mask = self._flat
        off, shape = p.value_offsets, p.row_shape
        if mask is None and shape is not None:  # one rank and inner shape for every row
            lo, hi = int(off[0]), int(off[-1])
            if shape.first is not None:  # and one shape: one reshape (row by row where too big)
                with contextlib.suppress(ValueError):
                    return list(flat[lo:hi].reshape(n, shape.first, *shape.inner)), [None] * n
            if inner := math.prod(shape.inner):  # rows of one block, sliced
                block, rows = flat[lo:hi].reshape(-1, *shape.inner), ((off - lo) // inner).tolist()
                return [block[a:b] for a, b in itertools.pairwise(rows)], [None] * n
        sizes, ol, dl = p.sizes.tolist(), off.tolist(), p.dim_offsets.tolist()  # lists: faster
        views: list[npt.NDArray[Any] | None] = [None] * n
        masks: list[Mask | None] = [None] * n
        for i in np.flatnonzero(p.valid).tolist():
            views[i] = _shaped(flat[ol[i] : ol[i + 1]], shape := sizes[dl[i] : dl[i + 1]], i)
            if mask is not None and (m := mask[ol[i] : ol[i + 1]]).any():
                masks[i] = m.reshape(shape)
        return views, masks

    def _row(self, i: int) -> tuple[npt.NDArray[Any], Mask | None, tuple[str, ...]]:
        """The values, mask and dimension names of valid row ``i``."""
        (flat, mask), p = self._flat, self._parts
        (a, b), (d0, d1) = p.value_offsets[i : i + 2].tolist(), p.dim_offsets[i : i + 2].tolist()
        shape = p.sizes[d0:d1].tolist()
        m = None if mask is None or not mask[a:b].any() else mask[a:b].reshape(shape)
        dims = tuple(p.name_dict[c] for c in p.name_codes[d0:d1].tolist())
        return _shaped(flat[a:b], shape, i), m, dims

    def to_numpy_list(self) -> list[npt.NDArray[Any] | None]:
        """One numpy array per row (None for null rows; masked arrays where values are null);
        zero-copy views of the column's value buffer where values have no nulls."""
        views, masks = self._views()
        return [
            v if m is None else np.ma.MaskedArray(v, mask=m)
            for v, m in zip(views, masks, strict=True)
        ]

    def to_pylist(self) -> list[NdVariable | None]:
        """One :class:`NdVariable` per row (None for null rows)."""
        (views, masks), names, attrs = self._views(), self._row_dims, self._attr_row
        return [
            None if v is None else trusted_variable(v, masks[i], names[i] or (), attrs(i))
            for i, v in enumerate(views)
        ]

    def __iter__(self) -> Iterator[NdVariable | None]:
        return iter(self.to_pylist())

    @overload
    def __getitem__(self, index: int) -> NdVariable | None: ...
    @overload
    def __getitem__(self, index: slice) -> NdColumn: ...
    def __getitem__(self, index: int | slice) -> NdVariable | NdColumn | None:
        p, n = self._parts, len(self)
        if isinstance(index, slice):
            picked = range(*index.indices(n))
            if picked.step == 1:
                return NdColumn(validate_storage(p.storage.slice(picked.start, len(picked))))
            return NdColumn(validate_storage(p.storage.take(pa.array(picked))))
        if not -n <= index < n:
            raise IndexError(f"row {index} is out of range for an nd column of {n} rows")
        i = int(index) % n
        return trusted_variable(*self._row(i), self._attr_row(i)) if p.valid[i] else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdColumn):
            return NotImplemented
        return len(self) == len(other) and self.to_pylist() == other.to_pylist()

    __hash__ = None  # type: ignore[assignment]


class NdExtensionArray(pa.ExtensionArray):  # type: ignore[misc]
    """pyarrow array class of :class:`NdType` columns, with decoding shortcuts."""

    def to_column(self) -> NdColumn:
        return NdColumn.from_arrow(self)

    def to_numpy_list(self) -> list[npt.NDArray[Any] | None]:
        return self.to_column().to_numpy_list()


class NdScalar(pa.ExtensionScalar):  # type: ignore[misc]
    """One row of an nd column; ``as_py()`` gives an :class:`NdVariable`, None for a null row."""

    def as_py(self, **kwargs: Any) -> NdVariable | None:  # pyarrow 20-24 pass maps_as_pydicts
        return NdColumn.from_arrow(pa.repeat(self.value, 1))[0] if self.is_valid else None


try:
    register()
except Exception as exc:  # never break the import: columns still read as tagged plain structs
    warnings.warn(f"nd_arrow.array is not registered: {exc}", RuntimeWarning, stacklevel=1)
