"""``NdRecordBatch``: named arrays on one shared grid plus global attributes, and the dataset
encoding of several of them as one Arrow RecordBatch (one row per nd batch, one nd column per
variable, and a last ``__global_attrs__`` column when any batch has global attributes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from nd_arrow._array import NdArray
from nd_arrow._attrs import AttrDecoder, attr_type, attrs_equal, encode_attrs
from nd_arrow._builder import build_parts
from nd_arrow._column import NdColumn
from nd_arrow._extension import (
    global_attributes_field,
    is_global_attributes_field,
    is_nd_field,
)
from nd_arrow._format import (
    EXTENSION_METADATA_KEY,
    GLOBAL_ATTRIBUTES_EXTENSION,
    GLOBAL_ATTRIBUTES_FIELD,
    check_attr_keys,
    check_variable_name,
    infer_grid,
    merge_keys,
    parse_extension_metadata,
)
from nd_arrow._interchange import import_table
from nd_arrow._values import fill_nulls
from nd_arrow.errors import InvalidArgumentError, NdArrowError, SchemaMismatchError

if TYPE_CHECKING:
    import xarray

__all__ = ["NdRecordBatch", "decode_batches", "encode_batches"]


class NdRecordBatch:
    """Named arrays that share one grid (axes align by name), plus global attributes.

    >>> import numpy as np
    >>> t = NdArray(np.zeros((2, 3)), ["time", "lat"])
    >>> b = NdRecordBatch({"t": t, "lat": NdArray(np.arange(3.0), ["lat"])}, {"title": "demo"})
    >>> b.sizes
    {'time': 2, 'lat': 3}
    """

    __slots__ = ("_arrays", "_attrs", "_sizes")

    def __init__(
        self,
        arrays: Mapping[str, NdArray | np.ndarray],
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        out: dict[str, NdArray] = {}
        for name, arr in arrays.items():
            check_variable_name(name, "NdRecordBatch")
            out[name] = arr if isinstance(arr, NdArray) else NdArray(arr)
        attr_dict = dict(attrs) if attrs else {}
        check_attr_keys(attr_dict, "NdRecordBatch")
        for key, value in attr_dict.items():
            attr_type(value, f"NdRecordBatch global attribute {key!r}")
        self._sizes = infer_grid(((k, a.dims, a.shape) for k, a in out.items()), "NdRecordBatch")
        self._arrays, self._attrs = out, attr_dict

    @property
    def arrays(self) -> dict[str, NdArray]:
        return self._arrays

    @property
    def attrs(self) -> dict[str, Any]:
        return self._attrs

    @property
    def sizes(self) -> dict[str, int]:
        """The inferred grid: dimension name -> size."""
        return dict(self._sizes)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self._sizes)

    def __getitem__(self, name: str) -> NdArray:
        return self._arrays[name]

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def __len__(self) -> int:
        return len(self._arrays)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdRecordBatch):
            return NotImplemented
        return (
            self._arrays.keys() == other._arrays.keys()
            and all(self._arrays[k] == other._arrays[k] for k in self._arrays)
            and attrs_equal(self._attrs, other._attrs)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NdRecordBatch(sizes={self._sizes}, arrays={list(self._arrays)})"

    @classmethod
    def from_xarray(cls, dataset: xarray.Dataset) -> NdRecordBatch:
        """Data variables and coordinates as arrays, ``Dataset.attrs`` as global attributes."""
        arrays = {}
        for name, var in dataset.variables.items():
            if not isinstance(name, str):
                raise InvalidArgumentError(f"Dataset variable {name!r} is not named by a string")
            arrays[name] = NdArray.from_xarray(var)
        return cls(arrays, dict(dataset.attrs))

    def to_xarray(self, coords: Sequence[str] | None = None) -> xarray.Dataset:
        """An ``xarray.Dataset``: arrays named like their only dimension, and those in
        ``coords``, become coordinates; the rest data variables; global attributes ``attrs``.
        Nulls are filled as :meth:`NdArray.to_xarray` does."""
        import xarray as xr  # the optional extra, imported only here

        wanted = set(coords or ())
        missing = wanted - set(self._arrays)
        if missing:
            raise InvalidArgumentError(f"coords {sorted(missing)} are not arrays of the batch")
        data_vars: dict[str, xr.Variable] = {}
        coord_vars: dict[str, xr.Variable] = {}
        for name, arr in self._arrays.items():
            var = xr.Variable(arr.dims, fill_nulls(arr.values, arr.mask), attrs=dict(arr.attrs))
            if name in wanted or arr.dims == (name,):
                coord_vars[name] = var
            else:
                data_vars[name] = var
        return xr.Dataset(data_vars, coords=coord_vars, attrs=dict(self._attrs))

    # Arrow: one nd batch is the encoded RecordBatch of one row (see encode_batches).

    @classmethod
    def from_arrow(cls, data: Any) -> NdRecordBatch:
        """The nd batch of a one-row encoded RecordBatch or Table, or of any object of the Arrow
        PyCapsule interface exporting one (``__arrow_c_array__`` or ``__arrow_c_stream__``)."""
        batches = decode_batches(data)
        if len(batches) != 1:
            raise InvalidArgumentError(
                f"NdRecordBatch.from_arrow: the data has {len(batches)} rows; an encoded nd batch "
                "is one row. Use decode_batches for several"
            )
        return batches[0]

    def to_arrow(self) -> pa.RecordBatch:
        """This nd batch encoded as a RecordBatch of one row (see :func:`encode_batches`)."""
        return encode_batches([self])

    def __arrow_c_schema__(self) -> object:
        """ArrowSchema capsule of the encoded batch (nd columns tagged ``nd_arrow.array``)."""
        return self.to_arrow().schema.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """ArrowSchema and ArrowArray capsules of the encoded one-row RecordBatch."""
        return self.to_arrow().__arrow_c_array__(requested_schema)  # type: ignore[no-any-return]

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """ArrowArrayStream capsule yielding the encoded one-row RecordBatch."""
        table = pa.Table.from_batches([self.to_arrow()])
        return table.__arrow_c_stream__(requested_schema)


def encode_batches(
    batches: Sequence[NdRecordBatch],
    value_types: Mapping[str, pa.DataType] | None = None,
) -> pa.RecordBatch:
    """One RecordBatch with a row per nd batch and an nd column per variable.

    Columns follow the order in which variables first appear; a batch lacking a variable gets a
    null cell. ``value_types`` optionally fixes a variable's Arrow value type.
    """
    types = dict(value_types or {})
    names = merge_keys(b.arrays for b in batches)
    columns: list[pa.Array] = []
    fields: list[pa.Field] = []
    for name in names:
        items = [b.arrays.get(name) for b in batches]
        try:
            col = NdColumn(build_parts(items, None, types.get(name), f"variable {name!r}"))
        except SchemaMismatchError as exc:
            raise SchemaMismatchError(f"{exc} (rows are nd batches)") from exc
        columns.append(col.to_arrow())
        fields.append(pa.field(name, col.type, nullable=True))
    global_attrs = encode_attrs([b.attrs for b in batches], "nd batch")
    if global_attrs is not None:
        columns.append(global_attrs)
        fields.append(global_attributes_field(global_attrs.type))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def decode_batches(data: Any) -> list[NdRecordBatch]:
    """The nd batches of an encoded RecordBatch or Table (or a PyCapsule exporter of one), one
    per row.

    The ``__global_attrs__`` column is recognised by its extension tag (registered or as plain
    field metadata) wherever it stands; any column that is neither an nd column nor the global
    attributes is a :class:`SchemaMismatchError`.
    """
    data = import_table(data, "encoded batch")
    n = data.num_rows
    columns: dict[str, NdColumn] = {}
    global_attrs: AttrDecoder | None = None
    for i, field in enumerate(data.schema):
        col = data.column(i)
        if is_nd_field(field):
            if field.name == GLOBAL_ATTRIBUTES_FIELD:
                raise InvalidArgumentError(
                    f"encoded batch: the nd column {GLOBAL_ATTRIBUTES_FIELD!r} uses the name "
                    "reserved for global attributes; variables may not be named so (FORMAT 7/2)"
                )
            columns[field.name] = NdColumn.from_arrow(col, field)
        elif is_global_attributes_field(field):
            if global_attrs is not None:
                raise SchemaMismatchError(
                    "encoded batch: two global attributes columns (FORMAT 7/1)"
                )
            meta = field.metadata or {}
            if EXTENSION_METADATA_KEY in meta:
                try:
                    parse_extension_metadata(
                        meta[EXTENSION_METADATA_KEY], GLOBAL_ATTRIBUTES_EXTENSION
                    )
                except NdArrowError as exc:
                    raise type(exc)(f"encoded batch: {exc} (FORMAT 7/4)") from exc
            arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            if isinstance(arr.type, pa.BaseExtensionType):
                arr = arr.storage
            if not pa.types.is_struct(arr.type):
                raise SchemaMismatchError(
                    f"encoded batch: column {field.name!r} is tagged as global attributes but has "
                    f"type {arr.type}; it must be a Struct with one child per key (FORMAT 7/4)"
                )
            global_attrs = AttrDecoder(arr)
        else:
            raise SchemaMismatchError(
                f"encoded batch: column {field.name!r} of type {field.type} is neither an nd "
                f"column nor the {GLOBAL_ATTRIBUTES_FIELD!r} column (FORMAT 7/1)"
            )
    rows = {name: col.to_pylist() for name, col in columns.items()}
    out: list[NdRecordBatch] = []
    for r in range(n):
        arrays = {name: vals[r] for name, vals in rows.items() if vals[r] is not None}
        attrs = global_attrs.row(r) if global_attrs is not None else {}
        try:
            out.append(NdRecordBatch(arrays, attrs))  # type: ignore[arg-type]
        except NdArrowError as exc:
            raise type(exc)(f"encoded batch row {r}: {exc}") from exc
    return out
