"""NdColumn, the extension type and the Arrow PyCapsule interface. The other Arrow engines
(arro3, polars, DuckDB, nanoarrow) are optional: a test skips where its engine is missing; where
an engine keeps field metadata the extension tag must survive, where it drops it (DuckDB) the
plain storage struct must still decode."""

from __future__ import annotations

import importlib
import importlib.util
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _nd_strategies import DTYPES, columns, nd_arrays
from hypothesis import given, settings
from hypothesis import strategies as st

import nd_arrow
from nd_arrow import (
    EXTENSION_NAME,
    InvalidArgumentError,
    InvalidDimensionsError,
    InvalidEncodingError,
    NdColumn,
    NdDataset,
    NdType,
    NdVariable,
    NotSupportedError,
    SchemaMismatchError,
    decode_batches,
    encode_batches,
    encoded_field,
    encoded_schema,
    is_global_attributes_field,
    is_nd_field,
    logical_field,
    logical_schema,
    register,
)
from nd_arrow._format import EXTENSION_METADATA, EXTENSION_METADATA_KEY, EXTENSION_NAME_KEY


def storage_bytes(arr: pa.Array) -> bytes:
    """IPC bytes of an array: equality that treats NaN like any other bit pattern."""
    batch = pa.record_batch({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def ipc_roundtrip(arr: pa.Array) -> pa.ChunkedArray:
    table = pa.table({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().column("x")


@given(columns())
@settings(max_examples=150, deadline=None)
def test_roundtrip_rows(case: tuple[str, list[NdVariable | None]]) -> None:
    _, rows = case
    col = NdColumn.from_arrays(rows)
    assert len(col) == len(rows)
    assert col.to_pylist() == rows
    assert [col[i] for i in range(len(rows))] == rows
    back = NdColumn.from_arrow(ipc_roundtrip(col.to_arrow()))
    assert back.to_pylist() == rows
    assert storage_bytes(back.storage) == storage_bytes(col.storage)
    for got, row in zip(col.to_numpy_list(), rows, strict=True):
        if row is None:
            assert got is None
            continue
        want = row.to_numpy()
        assert isinstance(got, np.ma.MaskedArray) == isinstance(want, np.ma.MaskedArray)
        assert NdVariable(got, row.dims, row.attrs) == row


@given(st.sampled_from(DTYPES), st.data())
@settings(max_examples=60, deadline=None)
def test_plain_numpy_fast_path_matches_general_path(dtype: str, data: st.DataObject) -> None:
    shape_tail = data.draw(st.lists(st.integers(0, 3), max_size=3))
    arrays = []
    for _ in range(data.draw(st.integers(1, 5))):
        row = data.draw(nd_arrays(dtype))
        lead = data.draw(st.integers(0, 3))
        filler = np.full(1, "" if row.dtype.kind == "O" else 0).astype(row.dtype)
        arrays.append(np.resize(row.values if row.values.size else filler, (lead, *shape_tail)))
        if data.draw(st.booleans()):
            arrays.append(None)
    dims = [f"d{i}" for i in range(1 + len(shape_tail))]
    fast = NdColumn.from_arrays(arrays, dims=dims)
    general = NdColumn.from_arrays([None if a is None else NdVariable(a, dims) for a in arrays])
    assert storage_bytes(fast.storage) == storage_bytes(general.storage)
    assert fast.to_pylist() == general.to_pylist()


def test_zero_copy_views_share_the_buffer() -> None:
    arrays = [np.arange(2 * n, dtype=np.float32).reshape(n, 2) for n in (3, 0, 5)]
    col = NdColumn.from_arrow(NdColumn.from_arrays(arrays, dims=["point", "xy"]).to_arrow())
    views = col.to_numpy_list()
    base = col.storage.field(0).values.buffers()[1]
    for v in views:
        assert v is not None
        assert v.base is not None
        ptr = v.__array_interface__["data"][0]
        assert base.address <= ptr <= base.address + base.size
    for v, a in zip(views, arrays, strict=True):
        np.testing.assert_array_equal(v, a)


def test_same_shape_rows_use_one_reshape() -> None:
    arrays = [np.full((4, 4), i, np.float64) for i in range(5)]
    views = NdColumn.from_arrays(arrays, dims=["y", "x"]).to_numpy_list()
    assert all(v is not None and v.shape == (4, 4) for v in views)
    assert [float(v[0, 0]) for v in views if v is not None] == [0, 1, 2, 3, 4]


@given(
    st.sampled_from(["float32", "int64", "uint8", "bool"]),
    st.lists(st.integers(0, 4), min_size=1, max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
    st.booleans(),
    st.integers(0, 2),
)
@settings(max_examples=80, deadline=None)
def test_rows_of_one_inner_shape_decode_to_views(
    dtype: str, leads: list[int], inner: list[int], one_shape: bool, start: int
) -> None:
    """Rows of one rank and trailing sizes (one block, a slice per row) and rows of one shape
    (one reshape) come back equal, as views of the value buffer, also from a sliced array."""
    if one_shape:
        leads = [leads[0]] * len(leads)
    rng = np.random.default_rng(len(leads))
    arrays = [(rng.random((lead, *inner)) * 100).astype(dtype) for lead in leads]
    arr = NdColumn.from_arrays(arrays).to_arrow().slice(min(start, len(arrays)))
    got = NdColumn.from_arrow(arr).to_numpy_list()
    assert len(got) == len(arrays[start:])
    for g, a in zip(got, arrays[start:], strict=True):
        assert g is not None
        assert g.shape == a.shape
        assert g.dtype == a.dtype
        np.testing.assert_array_equal(g, a)
        assert not g.flags.owndata


def test_string_rows_of_other_lengths() -> None:
    """numpy string rows of other lengths (<U3, <U6) are one value type, on the fast path too."""
    arrays = [np.array(["a", "bcd"]), np.array(["efghij"]), None]
    fast = NdColumn.from_arrays(arrays, dims=["x"])
    general = NdColumn.from_arrays([None if a is None else NdVariable(a, ["x"]) for a in arrays])
    assert storage_bytes(fast.storage) == storage_bytes(general.storage)
    assert fast.value_type == pa.string()
    assert [None if v is None else v.tolist() for v in fast.to_numpy_list()] == [
        ["a", "bcd"],
        ["efghij"],
        None,
    ]


def test_type_and_extension_array() -> None:
    col = NdColumn.from_arrays([np.zeros(2, np.int16)], dims=["x"])
    arr = col.to_arrow()
    assert isinstance(arr.type, NdType)
    assert arr.type.value_type == pa.int16()
    assert arr.type.attr_fields == ()
    assert arr.to_numpy_list()[0].dtype == np.int16


def test_slicing_and_negative_index() -> None:
    arrays = [np.full((i + 1,), i) for i in range(5)]
    col = NdColumn.from_arrays(arrays, dims=["x"])
    sub = col[1:4]
    assert len(sub) == 3
    assert sub[0] == NdVariable(arrays[1], ["x"])
    assert col[-1] == NdVariable(arrays[4], ["x"])
    assert col[::2].to_pylist() == [NdVariable(arrays[i], ["x"]) for i in (0, 2, 4)]
    sliced = NdColumn.from_arrow(col.to_arrow().slice(2, 2))
    assert sliced.to_pylist() == [NdVariable(arrays[i], ["x"]) for i in (2, 3)]
    with pytest.raises(IndexError, match="row 5 is out of range"):
        col[5]


def test_chunked_input_is_concatenated() -> None:
    a = NdColumn.from_arrays([np.ones(1)], dims=["x"]).to_arrow()
    b = NdColumn.from_arrays([np.zeros(2)], dims=["x"]).to_arrow()
    col = NdColumn.from_arrow(pa.chunked_array([a, b]))
    assert [r.shape for r in col if r is not None] == [(1,), (2,)]


def test_value_type_cast_and_empty_column() -> None:
    col = NdColumn.from_arrays([np.arange(3)], dims=["x"], value_type=pa.float32())
    assert col.value_type == pa.float32()
    empty = NdColumn.from_arrays([None, None], value_type=pa.int8())
    assert empty.to_pylist() == [None, None]
    with pytest.raises(InvalidArgumentError, match="pass value_type="):
        NdColumn.from_arrays([None])
    with pytest.raises(NotSupportedError, match="complex"):  # value_type= casts supported values
        NdColumn.from_arrays([np.zeros(2, complex)], value_type=pa.float64())
    with pytest.raises(InvalidArgumentError, match="cannot convert numpy float64 values to Arrow"):
        NdColumn.from_arrays([np.array([0.5])], value_type=pa.int8())


def test_mixed_dtypes_are_refused() -> None:
    with pytest.raises(SchemaMismatchError, match="row 1 has dtype int32 but earlier rows"):
        NdColumn.from_arrays([np.zeros(1), np.zeros(1, np.int32)], dims=["x"])
    with pytest.raises(
        SchemaMismatchError, match=r"row 1 has dtype \|S2 but earlier rows have <U3"
    ):
        NdColumn.from_arrays([np.array(["abc"]), np.array([b"de"])], dims=["x"])


def test_dims_checked_on_the_way_in() -> None:
    with pytest.raises(InvalidDimensionsError, match="2 dimension names"):
        NdColumn.from_arrays([np.zeros(3)], dims=["a", "b"])
    with pytest.raises(InvalidDimensionsError, match="appears twice"):
        NdColumn.from_arrays([np.zeros((1, 1))], dims=["a", "a"])
    with pytest.raises(InvalidDimensionsError, match=r"row 0: .*names must not be empty"):
        NdColumn.from_arrays([np.zeros(1), np.zeros((1, 2))], dims=[""])


def test_mixed_ranks_with_default_names() -> None:
    col = NdColumn.from_arrays([np.zeros(2), np.zeros((1, 2)), np.array(3.0)])
    assert [r.dims for r in col if r is not None] == [("dim_0",), ("dim_0", "dim_1"), ()]


def test_scalar_as_py() -> None:
    row = NdVariable(np.arange(4).reshape(2, 2), ["a", "b"], {"k": 1})
    arr = NdColumn.from_arrays([row, None]).to_arrow()
    assert arr[0].as_py() == row
    assert arr[1].as_py() is None
    assert arr.to_pylist() == [row, None]


# ---------------------------------------------------------------------------- the extension type


def write_read(table: pa.Table) -> pa.Table:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return pa.ipc.open_file(sink.getvalue()).read_all()


class OtherVersion(pa.ExtensionType):
    """Writes nd_arrow.array with another version, as a future writer would."""

    def __init__(self, storage: pa.DataType, meta: bytes) -> None:
        self.meta = meta
        super().__init__(storage, "nd_arrow.array")

    def __arrow_ext_serialize__(self) -> bytes:
        return self.meta

    @classmethod
    def __arrow_ext_deserialize__(cls, storage: pa.DataType, serialized: bytes) -> OtherVersion:
        return cls(storage, serialized)


def test_registered_and_idempotent() -> None:
    register()
    register()
    # A second copy of the module (as pytest's import modes can produce) registers again.
    spec = importlib.util.spec_from_file_location("nd_arrow_ext_copy", nd_arrow._column.__file__)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    col = NdColumn.from_arrays([np.ones(2)], dims=["x"])
    back = write_read(pa.table({"a": col.to_arrow()}))
    assert back.schema.field("a").type.extension_name == "nd_arrow.array"
    assert NdColumn.from_arrow(back.column("a")).to_pylist() == col.to_pylist()


def test_serialized_metadata_and_field_tags() -> None:
    t = NdType.from_value_type(pa.float32())
    assert t.__arrow_ext_serialize__() == b'{"version":1}'
    assert t.extension_name == "nd_arrow.array"
    schema = write_read(pa.table({"a": NdColumn.from_arrays([np.ones(1, np.float32)]).to_arrow()}))
    assert is_nd_field(schema.schema.field("a"))


@pytest.mark.parametrize(
    ("meta", "error", "match"),
    [
        (b'{"version":2}', NotSupportedError, "version 2 is not supported"),
        (b'{"version":"1"}', InvalidEncodingError, "is not an integer"),
        (b"{}", InvalidEncodingError, "has no 'version' key"),
        (b"not json", InvalidEncodingError, "is not JSON"),
    ],
)
def test_bad_metadata_fails_the_read(meta: bytes, error: type, match: str) -> None:
    storage = NdColumn.from_arrays([np.ones(1)]).storage
    arr = pa.ExtensionArray.from_storage(OtherVersion(storage.type, meta), storage)
    table = pa.table({"a": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    with pytest.raises(error, match=match):
        pa.ipc.open_file(sink.getvalue()).read_all()


def test_extra_metadata_keys_are_ignored() -> None:
    storage = NdColumn.from_arrays([np.ones(1)]).storage
    t = NdType.__arrow_ext_deserialize__(storage.type, b'{"version":1,"future":true}')
    assert t == NdType(storage.type)


def test_deserialize_builds_from_the_given_storage() -> None:
    storage = NdColumn.from_arrays([NdVariable(np.ones(1, np.int8), ["x"], {"u": "m"})]).storage
    t = NdType.__arrow_ext_deserialize__(storage.type, b'{"version":1}')
    assert t.value_type == pa.int8()
    assert [f.name for f in t.attr_fields] == ["u"]
    with pytest.raises(InvalidEncodingError):
        NdType.__arrow_ext_deserialize__(pa.int32(), b'{"version":1}')


def test_hash_eq_pickle() -> None:
    a = NdType.from_value_type(pa.int32())
    b = NdType.from_value_type(pa.int32())
    c = NdType.from_value_type(pa.int64())
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert pickle.loads(pickle.dumps(a)) == a
    assert len({a, b, c}) == 2


def test_foreign_class_under_the_same_name_decodes() -> None:
    storage = NdColumn.from_arrays([np.arange(3.0)], dims=["x"]).storage
    arr = pa.ExtensionArray.from_storage(OtherVersion(storage.type, b'{"version":1}'), storage)
    assert NdColumn.from_arrow(arr)[0] == NdVariable(np.arange(3.0), ["x"])
    bad = pa.ExtensionArray.from_storage(OtherVersion(storage.type, b'{"version":3}'), storage)
    with pytest.raises(NotSupportedError):
        NdColumn.from_arrow(bad)


def test_plain_struct_with_field_tags() -> None:
    col = NdColumn.from_arrays([np.arange(3.0)], dims=["x"])
    tagged = pa.field(
        "a",
        col.storage.type,
        metadata={
            "ARROW:extension:name": "nd_arrow.array",
            "ARROW:extension:metadata": '{"version":1}',
        },
    )
    assert NdColumn.from_arrow(col.storage, tagged).to_pylist() == col.to_pylist()
    from nd_arrow import SchemaMismatchError

    with pytest.raises(SchemaMismatchError, match="is not tagged"):
        NdColumn.from_arrow(col.storage, pa.field("a", col.storage.type))


def test_logical_and_encoded_fields() -> None:
    logical = pa.field("t", pa.float32(), metadata={"units": "K"})
    enc = encoded_field(logical)
    assert isinstance(enc.type, NdType) and enc.nullable
    assert enc.metadata == {b"units": b"K"}
    back = logical_field(enc)
    assert back.type == pa.float32() and back.metadata == {b"units": b"K"}
    schema = pa.schema([logical, pa.field("n", pa.int8())])
    assert logical_schema(encoded_schema(schema)).types == schema.types
    assert not is_global_attributes_field(enc)


# ----------------------------------------------------------------- the Arrow PyCapsule interface


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
