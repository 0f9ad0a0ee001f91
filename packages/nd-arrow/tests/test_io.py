from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _nd_strategies import columns
from hypothesis import HealthCheck, given, settings

from nd_arrow import (
    NdColumn,
    NdType,
    NdVariable,
    NotSupportedError,
    ShapeMismatchError,
    read_ipc,
    read_parquet,
    register,
    rewrap,
    write_ipc,
    write_parquet,
)


def table_of(rows: list) -> pa.Table:
    return pa.table({"c": NdColumn.from_arrays(rows).to_arrow(), "n": pa.array(range(len(rows)))})


ROWS = [
    NdVariable(np.arange(6.0).reshape(2, 3), ["time", "lat"], {"units": "K"}),
    None,
    NdVariable(np.ma.masked_array([1.0, 2.0], mask=[False, True]), ["x"]),
]


@given(columns(max_rows=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_parquet_round_trip(case: tuple) -> None:
    dtype, rows = case
    sink = pa.BufferOutputStream()
    try:
        write_parquet(table_of(rows), sink)
    except NotSupportedError:
        # Only timestamp[s] beyond the millisecond range cannot go to Parquet.
        assert dtype == "datetime64[s]"
        secs = np.concatenate([r.values.reshape(-1).view(np.int64) for r in rows if r is not None])
        assert (np.abs(secs) > (2**63 - 1) // 1000).any()
        return
    back = read_parquet(pa.BufferReader(sink.getvalue()))
    assert isinstance(back.schema.field("c").type, NdType)
    got = NdColumn.from_arrow(back.column("c")).to_pylist()
    if dtype == "datetime64[s]":  # Parquet has no seconds: read back in milliseconds
        rows = [
            None
            if r is None
            else NdVariable(r.values.astype("M8[ms]"), r.dims, r.attrs, mask=r.mask)
            for r in rows
        ]
    assert got == rows


def test_parquet_keeps_item_names(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    write_parquet(table_of(ROWS), path)
    arrow_schema = pq.read_table(path).schema
    storage = arrow_schema.field("c").type.storage_type
    assert storage.field("values").type.value_field.name == "item"
    assert "element" not in str(pq.read_metadata(path).schema)


def test_ipc_file_and_stream(tmp_path: Path) -> None:
    for stream in (False, True):
        path = tmp_path / f"x{stream}.arrow"
        write_ipc(table_of(ROWS), str(path), stream=stream)
        back = read_ipc(str(path))
        assert NdColumn.from_arrow(back.column("c")).to_pylist() == ROWS
        assert back.column("n").to_pylist() == [0, 1, 2]


def test_unregistered_reads_are_rewrapped(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    write_parquet(table_of(ROWS), path)
    sink = pa.BufferOutputStream()
    write_ipc(table_of(ROWS), sink)
    pa.unregister_extension_type("nd_arrow.array")
    try:
        plain = pq.read_table(path)
        assert not isinstance(plain.schema.field("c").type, pa.BaseExtensionType)
        assert plain.schema.field("c").metadata[b"ARROW:extension:name"] == b"nd_arrow.array"
        for table in (read_parquet(path), read_ipc(sink.getvalue()), rewrap(plain)):
            assert isinstance(table.schema.field("c").type, NdType)
            assert NdColumn.from_arrow(table.column("c")).to_pylist() == ROWS
    finally:
        register()


def test_reads_check_row_rules() -> None:
    col = NdColumn.from_arrays([np.zeros(3)], dims=["x"])
    st = col.storage
    bad_sizes = pa.ListArray.from_arrays(
        pa.array([0, 1], pa.int32()),
        pa.array([4], pa.uint32()),
        type=st.type.field("dim_sizes").type,
    )
    bad = pa.StructArray.from_arrays([st.field(0), st.field(1), bad_sizes], fields=list(st.type))
    table = pa.table({"c": pa.ExtensionArray.from_storage(col.type, bad)})
    sink = pa.BufferOutputStream()
    write_ipc(table, sink)
    with pytest.raises(ShapeMismatchError, match="row 0 has 3 values but dimension sizes"):
        read_ipc(sink.getvalue())


def test_parquet_timestamp_seconds_read_back_in_milliseconds() -> None:
    """The timestamp[s] branch of write_parquet, every time (not only when hypothesis draws it):
    values (with a null element, a null row and a timezone) come back exactly, in milliseconds."""
    secs = np.array(["1970-01-01T00:00:01", "NaT", "2262-04-11T23:47:16"], "M8[s]")
    rows = [
        NdVariable(secs, ["t"], {"units": "s"}),
        None,
        NdVariable(secs[:1].reshape(1, 1), ["a", "b"]),
    ]
    col = NdColumn.from_arrays(rows)
    assert col.value_type == pa.timestamp("s")
    tz_col = NdColumn.from_arrays(rows, value_type=pa.timestamp("s", "UTC"))
    table = pa.table({"c": col.to_arrow(), "z": tz_col.to_arrow()})
    sink = pa.BufferOutputStream()
    write_parquet(table, sink)
    back = read_parquet(pa.BufferReader(sink.getvalue()))
    assert back.schema.field("c").type.value_type == pa.timestamp("ms")
    assert back.schema.field("z").type.value_type == pa.timestamp("ms", "UTC")
    got = NdColumn.from_arrow(back.column("c")).to_pylist()
    assert got == [
        None if r is None else NdVariable(r.values.astype("M8[ms]"), r.dims, r.attrs, mask=r.mask)
        for r in rows
    ]
    first = got[0]
    assert first is not None and first.mask is not None
    assert first.mask.tolist() == [False, True, False]
    assert first.values[2] == np.datetime64("2262-04-11T23:47:16", "ms")


def test_parquet_timestamp_seconds_beyond_milliseconds_is_refused() -> None:
    far = NdVariable(np.array([2**62], "M8[s]"), ["t"])
    with pytest.raises(NotSupportedError, match="Parquet has no seconds unit"):
        write_parquet(table_of([far]), pa.BufferOutputStream())
