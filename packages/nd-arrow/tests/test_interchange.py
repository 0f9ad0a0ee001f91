"""The Arrow PyCapsule interface: columns and nd batches exchanged with other Arrow engines.

Each engine is optional (the nd_arrow sessions also run at the pyarrow floor without them); a test
skips when its engine is not installed. Where the engine keeps field metadata, the extension name
and metadata must survive; where it drops them (DuckDB), the plain storage struct must still decode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from nd_arrow import (
    EXTENSION_NAME,
    InvalidArgumentError,
    NdVariable,
    NdType,
    NdColumn,
    NdDataset,
    decode_batches,
    encode_batches,
)
from nd_arrow._format import EXTENSION_METADATA, EXTENSION_METADATA_KEY, EXTENSION_NAME_KEY

TAGS = {EXTENSION_NAME_KEY: EXTENSION_NAME.encode(), EXTENSION_METADATA_KEY: EXTENSION_METADATA}


def column() -> NdColumn:
    return NdColumn.from_arrays(
        [
            NdVariable(np.arange(6.0).reshape(2, 3), ["time", "lat"], {"units": "K"}),
            None,
            NdVariable(np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False]), ["lat"]),
        ]
    )


def batch() -> NdDataset:
    return NdDataset(
        {
            "t": NdVariable(np.arange(6.0).reshape(2, 3), ["time", "lat"], {"units": "K"}),
            "lat": NdVariable(np.array([1.0, 2.0, 3.0]), ["lat"]),
        },
        {"title": "demo"},
    )


def tags_of(metadata: Any) -> dict[bytes, bytes]:
    """The extension keys of a metadata mapping (engines differ in key and value types)."""
    out = {}
    for k, v in dict(metadata or {}).items():
        kb = k.encode() if isinstance(k, str) else bytes(k)
        if kb in TAGS:
            out[kb] = v.encode() if isinstance(v, str) else bytes(v)
    return out


# ------------------------------------------------------------------------------------ pyarrow


def test_column_exports_the_tagged_schema() -> None:
    col = column()
    field = pa.Field._import_from_c_capsule(col.__arrow_c_schema__())
    assert isinstance(field.type, NdType) and field.type == col.type
    schema_capsule, array_capsule = col.__arrow_c_array__()
    arr = pa.Array._import_from_c_capsule(schema_capsule, array_capsule)
    assert isinstance(arr.type, NdType)
    assert NdColumn.from_arrow(arr) == col


def test_pyarrow_imports_columns_and_batches() -> None:
    col, b = column(), batch()
    assert NdColumn.from_arrow(pa.array(col)) == col
    rb = pa.record_batch(b)
    assert rb.num_rows == 1 and isinstance(rb.schema.field("t").type, NdType)
    assert NdDataset.from_arrow(rb) == b
    assert NdDataset.from_arrow(pa.table(b)) == b
    reader = pa.RecordBatchReader.from_stream(b)
    assert decode_batches(reader.read_all()) == [b]


class Exporter:
    """A minimal foreign object of the PyCapsule interface (only the dunder methods)."""

    def __init__(self, data: Any, stream: bool) -> None:
        self._data, self._stream = data, stream

    def __getattr__(self, name: str) -> Any:
        if name == ("__arrow_c_stream__" if self._stream else "__arrow_c_array__"):
            return getattr(self._data, name)
        raise AttributeError(name)


@pytest.mark.parametrize("stream", [False, True])
def test_from_arrow_accepts_any_exporter(stream: bool) -> None:
    col, b = column(), batch()
    data = pa.chunked_array([col.to_arrow()]) if stream else col.to_arrow()
    assert NdColumn.from_arrow(Exporter(data, stream)) == col
    encoded = encode_batches([b, b])
    table = pa.Table.from_batches([encoded]) if stream else encoded
    assert decode_batches(Exporter(table, stream)) == [b, b]
    with pytest.raises(InvalidArgumentError, match="has 2 rows"):
        NdDataset.from_arrow(Exporter(table, stream))


def test_non_arrow_input_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="PyCapsule interface"):
        NdColumn.from_arrow([1, 2, 3])
    with pytest.raises(InvalidArgumentError, match="PyCapsule interface"):
        decode_batches({"t": [1.0]})


# ------------------------------------------------------------------------------------- arro3


def test_arro3_keeps_the_extension_both_ways() -> None:
    arro3 = pytest.importorskip("arro3.core")
    col, b = column(), batch()
    arr = arro3.Array.from_arrow(col)
    assert tags_of(arr.field.metadata) == TAGS
    assert NdColumn.from_arrow(arr) == col
    chunked = arro3.ChunkedArray.from_arrow(pa.chunked_array([col.to_arrow(), col.to_arrow()]))
    assert len(NdColumn.from_arrow(chunked)) == 2 * len(col)
    rb = arro3.RecordBatch.from_arrow(b)
    assert tags_of(rb.schema.field("t").metadata) == TAGS
    assert NdDataset.from_arrow(rb) == b
    table = arro3.Table.from_arrow(b)
    assert NdDataset.from_arrow(table) == b


# ------------------------------------------------------------------------------------ polars


def test_polars_both_ways() -> None:
    pl = pytest.importorskip("polars")
    col, b = column(), batch()
    series = pl.Series("c", col)
    df = pl.DataFrame(b)
    if int(pl.__version__.split(".")[0]) >= 2:
        # Polars 2 keeps Arrow extension types as its Extension dtype, name and metadata intact.
        assert series.dtype.ext_name() == EXTENSION_NAME
        assert series.dtype.ext_metadata() == EXTENSION_METADATA.decode()
        back = pa.chunked_array(series)
        assert isinstance(back.type, NdType)
        assert NdDataset.from_arrow(df) == b
    assert NdColumn.from_arrow(series) == col
    assert NdColumn.from_arrow(df.get_column("t")).to_pylist() == [b["t"]]


# ------------------------------------------------------------------------------------ DuckDB


def test_duckdb_reads_the_storage_and_drops_the_tags() -> None:
    duckdb = pytest.importorskip("duckdb")
    b = batch()
    con = duckdb.connect()
    con.register("nd", pa.table(b))
    # Into DuckDB through the stream capsule: the storage struct is queryable.
    got = con.execute("select t.dim_names, t.dim_sizes, t.values from nd").fetchall()
    assert got == [(["time", "lat"], [2, 3], list(np.arange(6.0)))]
    stream_rows = duckdb.connect().execute("select count(*) from b").fetchall()
    assert stream_rows == [(1,)]
    # Out of DuckDB: the extension keys are gone, the plain struct still decodes.
    out = pa.table(con.sql("select t, lat from nd"))  # the relation's stream capsule
    assert not isinstance(out.schema.field("t").type, pa.BaseExtensionType)
    assert tags_of(out.schema.field("t").metadata) == {}
    assert NdColumn.from_arrow(out.column("t")).to_pylist() == [b["t"]]
    assert NdColumn.from_arrow(out.column("lat")).to_pylist() == [b["lat"]]


# --------------------------------------------------------------------------------- nanoarrow


def test_nanoarrow_keeps_the_extension_both_ways() -> None:
    na = pytest.importorskip("nanoarrow")
    col, b = column(), batch()
    arr = na.Array(col)
    assert tags_of(arr.schema.metadata) == TAGS
    assert NdColumn.from_arrow(arr) == col
    assert NdColumn.from_arrow(na.c_array(col)) == col
    stream = na.ArrayStream(b)
    assert tags_of(stream.schema.field(0).metadata) == TAGS
    assert NdDataset.from_arrow(na.Array(b)) == b
