"""IPC and Parquet helpers that keep the ``nd_arrow.array`` type: every nd column read is checked
against all row rules, and given the registered type when it was read without it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from nd_arrow._column import NdColumn, NdType, import_arrow, is_nd_field, untagged
from nd_arrow.errors import NotSupportedError

Source = Any  # a path, a file object, a pyarrow NativeFile or buffer


def rewrap(table: pa.Table) -> pa.Table:
    """Every nd column of ``table`` checked and given the registered type, also those read as
    plain tagged Structs (the field's other metadata is kept); other columns as they are."""
    columns, fields = [], []
    for field, col in zip(table.schema, table.columns, strict=True):
        if is_nd_field(field):
            chunks = [NdColumn.from_arrow(chunk, field).to_arrow() for chunk in col.chunks]
            nd_type = chunks[0].type if chunks else NdColumn.from_arrow(col, field).type
            col = pa.chunked_array(chunks, type=nd_type)
            field = pa.field(field.name, nd_type, field.nullable, metadata=untagged(field.metadata))
        columns.append(col)
        fields.append(field)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def write_ipc(data: pa.Table | pa.RecordBatch, sink: Source, *, stream: bool = False) -> None:
    """Write an Arrow IPC file (or stream with ``stream=True``)."""
    table = import_arrow(data, "write_ipc", table=True)
    with (pa.ipc.new_stream if stream else pa.ipc.new_file)(sink, table.schema) as writer:
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


def write_parquet(data: pa.Table | pa.RecordBatch, where: Source, **kwargs: Any) -> None:
    """Write Parquet keeping list item names (``item``) and the Arrow schema (extension type);
    ``timestamp[s]`` values are written (exactly) as ``timestamp[ms]``: Parquet has no seconds."""
    # Items keep the name ``item`` (Parquet's compliant name is ``element``; readers take either);
    # Parquet has no slot for extension types: they live in the stored Arrow schema.
    kwargs.setdefault("use_compliant_nested_type", False)
    kwargs.setdefault("store_schema", True)
    table = import_arrow(data, "write_parquet", table=True)
    for i, field in enumerate(table.schema):
        # pyarrow restores plain timestamp[s] columns from the stored schema, but an extension
        # type whose storage changed would come back as a plain struct: nd columns recast first.
        t = field.type.storage_type if isinstance(field.type, pa.BaseExtensionType) else field.type
        vt = t.field(0).type.value_type if is_nd_field(field) else None
        if vt is None or not pa.types.is_timestamp(vt) or vt.unit != "s":
            continue
        item = t.field(0).type.value_field.with_type(pa.timestamp("ms", vt.tz))
        nd_type = NdType(pa.struct([t.field(0).with_type(pa.list_(item)), *list(t)[1:]]))
        chunks = []
        for chunk in table.column(i).chunks:
            storage = chunk.storage if isinstance(chunk.type, pa.BaseExtensionType) else chunk
            try:
                cast = storage.cast(nd_type.storage_type)
            except pa.ArrowInvalid as exc:
                raise NotSupportedError(
                    f"Parquet has no seconds unit and these timestamp[s] values do not fit in "
                    f"milliseconds ({exc}); write them with write_ipc instead"
                ) from exc
            chunks.append(pa.ExtensionArray.from_storage(nd_type, cast))
        column = pa.chunked_array(chunks, type=nd_type)
        table = table.set_column(i, field.with_type(nd_type), column)
    pq.write_table(table, where, **kwargs)


def read_parquet(source: Source, **kwargs: Any) -> pa.Table:
    """Read Parquet; nd columns are checked and carry the extension type."""
    return rewrap(pq.read_table(source, **kwargs))
