from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _nd_strategies import nd_arrays
from hypothesis import given, settings
from hypothesis import strategies as st

from nd_arrow import (
    InvalidArgumentError,
    NdColumn,
    NdDataset,
    NdVariable,
    SchemaMismatchError,
    ShapeMismatchError,
    decode_batches,
    encode_batches,
)


def batch(n: int, with_lat: bool = True, attrs: dict | None = None) -> NdDataset:
    arrays = {"t": NdVariable(np.zeros((n, 3)), ["time", "lat"])}
    if with_lat:
        arrays["lat"] = NdVariable(np.arange(3.0), ["lat"])
    return NdDataset(arrays, attrs)


def test_encode_layout() -> None:
    rb = encode_batches([batch(2, attrs={"title": "a"}), batch(1, with_lat=False)])
    assert rb.schema.names == ["t", "lat", "__global_attrs__"]
    assert rb.num_rows == 2
    assert rb.column(1).is_null().to_pylist() == [False, True]
    meta = rb.schema.field("__global_attrs__").metadata
    assert meta[b"ARROW:extension:name"] == b"nd_arrow.global_attributes"


def test_no_global_attrs_no_column() -> None:
    rb = encode_batches([batch(1), batch(2)])
    assert rb.schema.names == ["t", "lat"]
    assert decode_batches(rb) == [batch(1), batch(2)]


def test_grid_and_names() -> None:
    b = batch(2)
    assert b.sizes == {"time": 2, "lat": 3} and b.dims == ("time", "lat")
    assert "t" in b and len(b) == 2 and b["lat"].shape == (3,)
    with pytest.raises(ShapeMismatchError, match="'lat' has size 3"):
        NdDataset(
            {"t": NdVariable(np.zeros((1, 3)), ["x", "lat"]), "u": NdVariable(np.zeros(2), ["lat"])}
        )
    with pytest.raises(InvalidArgumentError, match="may not be named"):
        NdDataset({"__global_attrs__": np.zeros(1)})


def test_value_type_mismatch_between_batches() -> None:
    b2 = NdDataset({"t": NdVariable(np.zeros((1, 3), np.int32), ["time", "lat"])})
    with pytest.raises(SchemaMismatchError, match="variable 't': row 1 has dtype int32"):
        encode_batches([batch(1), b2])


def test_decode_refuses_foreign_columns() -> None:
    rb = encode_batches([batch(1)])
    bad = rb.append_column("plain", pa.array([1]))
    with pytest.raises(SchemaMismatchError, match="column 'plain' of type int64 is neither"):
        decode_batches(bad)


def test_decode_refuses_nd_column_named_global_attrs() -> None:
    col = NdColumn.from_arrays([np.zeros(1)]).to_arrow()
    rb = pa.RecordBatch.from_arrays([col], names=["__global_attrs__"])
    with pytest.raises(InvalidArgumentError, match="reserved for global attributes"):
        decode_batches(rb)


def test_decode_checks_grid_per_row() -> None:
    t = NdColumn.from_arrays([np.zeros((1, 3))], dims=["time", "lat"]).to_arrow()
    lat = NdColumn.from_arrays([np.zeros(2)], dims=["lat"]).to_arrow()
    rb = pa.RecordBatch.from_arrays([t, lat], names=["t", "lat"])
    with pytest.raises(ShapeMismatchError, match="encoded batch row 0"):
        decode_batches(rb)


@given(st.data())
@settings(max_examples=40, deadline=None)
def test_roundtrip_random_batches(data: st.DataObject) -> None:
    batches = []
    for _ in range(data.draw(st.integers(1, 4))):
        arrays = {}
        for name, dtype in (("a", "float32"), ("b", "int16"), ("c", "str")):
            if data.draw(st.booleans()):
                arr = data.draw(nd_arrays(dtype, {"u": "str"}, max_rank=2))
                # keep each batch's grid consistent: prefix dims with the variable name
                arrays[name] = NdVariable(
                    arr.values, [f"{name}{d}" for d in arr.dims], arr.attrs, mask=arr.mask
                )
        attrs = data.draw(st.dictionaries(st.sampled_from(["title", "id"]), st.text(max_size=3)))
        batches.append(NdDataset(arrays, attrs))
    if not any(len(b) for b in batches):
        return
    assert decode_batches(encode_batches(batches)) == batches
