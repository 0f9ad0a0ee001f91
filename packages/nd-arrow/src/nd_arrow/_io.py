"""IPC and Parquet helpers that keep the ``nd_arrow.array`` type: every nd column read is checked
against all row rules, and given the registered type when it was read without it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nd_arrow._column import NdColumn
from nd_arrow._extension import is_nd_field
from nd_arrow._format import EXTENSION_METADATA_KEY, EXTENSION_NAME_KEY
from nd_arrow.errors import NotSupportedError

__all__ = ["read_ipc", "read_parquet", "rewrap", "write_ipc", "write_parquet"]

Source = Any  # a path, a file object, a pyarrow NativeFile or buffer


def _as_table(data: pa.Table | pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data


def rewrap(table: pa.Table) -> pa.Table:
    """Check every nd column of ``table`` and give it the registered extension type.

    Columns read without registration (plain Structs whose field metadata carries
    ``ARROW:extension:name = nd_arrow.array``) become :class:`NdArrayType` columns; the field's
    other metadata is kept. Other columns pass through unchanged.
    """
    columns = []
    fields = []
    for i, field in enumerate(table.schema):
        col = table.column(i)
        if not is_nd_field(field):
            columns.append(col)
            fields.append(field)
            continue
        chunks = [NdColumn.from_arrow(chunk, field).to_arrow() for chunk in col.chunks]
        ext_type = chunks[0].type if chunks else NdColumn.from_arrow(col, field).type
        meta = {
            k: v
            for k, v in (field.metadata or {}).items()
            if k not in (EXTENSION_NAME_KEY, EXTENSION_METADATA_KEY)
        }
        columns.append(pa.chunked_array(chunks, type=ext_type))
        fields.append(pa.field(field.name, ext_type, field.nullable, metadata=meta or None))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def write_ipc(data: pa.Table | pa.RecordBatch, sink: Source, *, stream: bool = False) -> None:
    """Write an Arrow IPC file (or stream with ``stream=True``)."""
    table = _as_table(data)
    opener = pa.ipc.new_stream if stream else pa.ipc.new_file
    with opener(sink, table.schema) as writer:
        writer.write_table(table)


def read_ipc(source: Source) -> pa.Table:
    """Read an Arrow IPC file or stream; nd columns are checked and carry the extension type."""
    if isinstance(source, bytes | bytearray | memoryview):
        source = pa.py_buffer(source)
    try:
        reader: Any = pa.ipc.open_file(source)
    except pa.ArrowInvalid:
        if hasattr(source, "seek"):
            source.seek(0)
        reader = pa.ipc.open_stream(source)
    return rewrap(reader.read_all())


def _seconds_to_millis(chunk: pa.Array) -> pa.Array:
    """An nd chunk with timestamp[s] values recast to timestamp[ms] (exact)."""
    storage = chunk.storage if isinstance(chunk.type, pa.BaseExtensionType) else chunk
    values_list = storage.field(0)
    old_item = values_list.type.value_field
    new_type = pa.timestamp("ms", old_item.type.tz)
    item = pa.field(old_item.name, new_type, old_item.nullable)
    try:
        cast_values = values_list.values.cast(new_type)
    except pa.ArrowInvalid as exc:
        raise NotSupportedError(
            f"Parquet has no seconds unit and these timestamp[s] values do not fit in "
            f"milliseconds ({exc}); write them with write_ipc instead"
        ) from exc
    new_values = pa.ListArray.from_arrays(values_list.offsets, cast_values, type=pa.list_(item))
    children = [new_values, *(storage.field(i) for i in range(1, storage.type.num_fields))]
    fields = [
        pa.field(f.name, c.type, f.nullable) for f, c in zip(storage.type, children, strict=True)
    ]
    mask = storage.is_null() if storage.null_count else None
    new_storage = pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    return NdColumn.from_arrow(new_storage).to_arrow()


def _parquet_ready(table: pa.Table) -> pa.Table:
    """Parquet has no seconds unit: nd columns of timestamp[s] are written as timestamp[ms].

    (pyarrow restores plain timestamp[s] columns from the stored Arrow schema, but an extension
    type whose storage changed would come back as a plain struct.)
    """
    for i, field in enumerate(table.schema):
        if not is_nd_field(field):
            continue
        t = field.type.storage_type if isinstance(field.type, pa.BaseExtensionType) else field.type
        vt = t.field(0).type.value_type
        if pa.types.is_timestamp(vt) and vt.unit == "s":
            chunks = [_seconds_to_millis(c) for c in table.column(i).chunks]
            new_type = chunks[0].type if chunks else field.type
            col = pa.chunked_array(chunks, type=new_type)
            table = table.set_column(i, field.with_type(new_type), col)
    return table


def write_parquet(data: pa.Table | pa.RecordBatch, where: Source, **kwargs: Any) -> None:
    """Write Parquet keeping list item names (``item``) and the Arrow schema (extension type).

    Parquet has no seconds unit, so nd columns of ``timestamp[s]`` values are written (exactly)
    as ``timestamp[ms]`` and read back in milliseconds.
    """
    # List items keep the name ``item`` (Parquet's compliant name is ``element``; readers take
    # either), and Parquet, which has no slot for extension types, keeps them in the stored
    # Arrow schema.
    kwargs.setdefault("use_compliant_nested_type", False)
    kwargs.setdefault("store_schema", True)
    pq.write_table(_parquet_ready(_as_table(data)), where, **kwargs)


def read_parquet(source: Source, **kwargs: Any) -> pa.Table:
    """Read Parquet; nd columns are checked and carry the extension type."""
    return rewrap(pq.read_table(source, **kwargs))
