"""``NdDataset``: named variables on one shared grid plus global attributes, and the encoding of
datasets as one RecordBatch (FORMAT 7: a row per dataset, an nd column per variable)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from nd_arrow import _format as fmt
from nd_arrow import errors
from nd_arrow._column import (
    NdColumn,
    build_parts,
    global_attributes_field,
    import_arrow,
    is_global_attributes_field,
    is_nd_field,
)
from nd_arrow._storage import attr_rows, attrs_equal, checked_attrs, encode_attrs
from nd_arrow._variable import NdVariable

if TYPE_CHECKING:
    import xarray


class NdDataset:
    """Named variables that share one grid (axes align by name), plus global attributes.

    >>> import numpy as np
    >>> t = NdVariable(np.zeros((2, 3)), ["time", "lat"])
    >>> ds = NdDataset({"t": t, "lat": NdVariable(np.arange(3.0), ["lat"])}, {"title": "demo"})
    >>> ds.sizes
    {'time': 2, 'lat': 3}
    """

    __slots__ = ("_arrays", "_attrs", "_sizes")

    def __init__(
        self, arrays: Mapping[str, NdVariable | np.ndarray], attrs: Mapping[str, Any] | None = None
    ) -> None:
        where = "NdDataset"
        self._arrays = {
            fmt.check_variable_name(name, where): a if isinstance(a, NdVariable) else NdVariable(a)
            for name, a in arrays.items()
        }
        self._attrs = checked_attrs(attrs, f"{where} global")
        self._sizes = fmt.infer_grid(((k, a.dims, a.shape) for k, a in self._arrays.items()), where)

    @property
    def arrays(self) -> dict[str, NdVariable]:
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

    def __getitem__(self, name: str) -> NdVariable:
        return self._arrays[name]

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def __len__(self) -> int:
        return len(self._arrays)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdDataset):
            return NotImplemented
        return self._arrays == other._arrays and attrs_equal(self._attrs, other._attrs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sizes={self._sizes}, arrays={list(self._arrays)})"

    @classmethod
    def from_xarray(cls, dataset: xarray.Dataset) -> NdDataset:
        """Data variables and coordinates as variables, ``Dataset.attrs`` as global attributes."""
        arrays = {n: NdVariable.from_xarray(v) for n, v in dataset.variables.items()}
        return cls(arrays, dict(dataset.attrs))  # type: ignore[arg-type]

    def to_xarray(self, coords: Sequence[str] | None = None) -> xarray.Dataset:
        """An ``xarray.Dataset``: variables named like their only dimension, and those in
        ``coords``, become coordinates; the rest data variables; global attributes ``attrs``.
        Nulls are filled as :meth:`NdVariable.to_xarray` does."""
        import xarray as xr  # the optional extra, imported only here

        wanted = set(coords or ())
        if missing := wanted - set(self._arrays):
            raise errors.InvalidArgumentError(f"coords {sorted(missing)} are not in the dataset")
        data_vars: dict[str, xr.Variable] = {}
        coord_vars: dict[str, xr.Variable] = {}
        for name, arr in self._arrays.items():
            var = arr.to_xarray().variable
            (coord_vars if name in wanted or arr.dims == (name,) else data_vars)[name] = var
        return xr.Dataset(data_vars, coords=coord_vars, attrs=dict(self._attrs))

    # Arrow: one dataset is the encoded RecordBatch of one row (see encode_batches).

    @classmethod
    def from_arrow(cls, data: Any) -> NdDataset:
        """The dataset of a one-row encoded RecordBatch or Table, or of any object of the Arrow
        PyCapsule interface exporting one (``__arrow_c_array__`` or ``__arrow_c_stream__``)."""
        batches = decode_batches(data)
        if len(batches) != 1:
            raise errors.InvalidArgumentError(
                f"{cls.__name__}.from_arrow: the data has {len(batches)} rows; an encoded dataset "
                "is one row. Use decode_batches for several"
            )
        return batches[0]

    def to_arrow(self) -> pa.RecordBatch:
        """This dataset encoded as a RecordBatch of one row (see :func:`encode_batches`)."""
        return encode_batches([self])

    def __arrow_c_schema__(self) -> object:
        """ArrowSchema capsule of the encoded batch (nd columns tagged ``nd_arrow.array``)."""
        return self.to_arrow().schema.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """ArrowSchema and ArrowArray capsules of the encoded one-row RecordBatch."""
        return self.to_arrow().__arrow_c_array__(requested_schema)  # type: ignore[no-any-return]

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """ArrowArrayStream capsule yielding the encoded one-row RecordBatch."""
        return pa.Table.from_batches([self.to_arrow()]).__arrow_c_stream__(requested_schema)


def encode_batches(
    batches: Sequence[NdDataset], value_types: Mapping[str, pa.DataType] | None = None
) -> pa.RecordBatch:
    """One RecordBatch with a row per dataset and an nd column per variable (in the order met; a
    null cell where a dataset lacks it), then ``__global_attrs__`` where any dataset has some.
    ``value_types`` optionally fixes a variable's Arrow value type."""
    columns, fields, types = [], [], value_types or {}
    for name in fmt.merge_keys(b.arrays for b in batches):
        items = [b.arrays.get(name) for b in batches]
        try:
            col = NdColumn(build_parts(items, None, types.get(name), f"variable {name!r}"))
        except errors.SchemaMismatchError as exc:
            raise errors.SchemaMismatchError(f"{exc} (rows are datasets)") from exc
        columns.append(col.to_arrow())
        fields.append(pa.field(name, col.type, nullable=True))
    global_attrs = encode_attrs([b.attrs for b in batches], "dataset")
    if global_attrs is not None:
        columns.append(global_attrs)
        fields.append(global_attributes_field(global_attrs.type))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def decode_batches(data: Any) -> list[NdDataset]:
    """The datasets of an encoded RecordBatch or Table (or a PyCapsule exporter of one), one per
    row. The ``__global_attrs__`` column is recognised by its extension tag (registered or as
    plain field metadata) wherever it stands; any column that is neither an nd column nor the
    global attributes is a :class:`SchemaMismatchError` (FORMAT 7)."""
    data = import_arrow(data, "encoded batch", table=True)
    columns: dict[str, NdColumn] = {}
    global_attrs: Callable[[int], dict[str, Any]] | None = None
    for field, col in zip(data.schema, data.columns, strict=True):
        if is_nd_field(field):
            if field.name == fmt.GLOBAL_ATTRIBUTES_FIELD:
                raise errors.InvalidArgumentError(
                    f"encoded batch: the nd column {fmt.GLOBAL_ATTRIBUTES_FIELD!r} uses the name "
                    "reserved for global attributes; variables may not be named so (FORMAT 7/2)"
                )
            columns[field.name] = NdColumn.from_arrow(col, field)
        elif is_global_attributes_field(field):
            if global_attrs is not None:
                raise errors.SchemaMismatchError(
                    "encoded batch: two global attributes columns (FORMAT 7/1)"
                )
            if (version := (field.metadata or {}).get(fmt.EXTENSION_METADATA_KEY)) is not None:
                try:
                    fmt.parse_extension_metadata(version, fmt.GLOBAL_ATTRIBUTES_EXTENSION)
                except errors.NdArrowError as exc:
                    raise type(exc)(f"encoded batch: {exc} (FORMAT 7/4)") from exc
            arr = col.combine_chunks()  # (a Table)
            arr = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
            if not pa.types.is_struct(arr.type):
                raise errors.SchemaMismatchError(
                    f"encoded batch: column {field.name!r} is tagged as global attributes but has "
                    f"type {arr.type}; it must be a Struct with one child per key (FORMAT 7/4)"
                )
            global_attrs = attr_rows(arr)
        else:
            raise errors.SchemaMismatchError(
                f"encoded batch: column {field.name!r} of type {field.type} is neither an nd "
                f"column nor the {fmt.GLOBAL_ATTRIBUTES_FIELD!r} column (FORMAT 7/1)"
            )
    rows = {name: col.to_pylist() for name, col in columns.items()}
    out: list[NdDataset] = []
    for r in range(data.num_rows):
        arrays = {name: vals[r] for name, vals in rows.items() if vals[r] is not None}
        try:
            out.append(NdDataset(arrays, {} if global_attrs is None else global_attrs(r)))  # type: ignore[arg-type]
        except errors.NdArrowError as exc:
            raise type(exc)(f"encoded batch row {r}: {exc}") from exc
    return out
