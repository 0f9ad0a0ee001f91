from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from nd_arrow import InvalidAttributeError
from nd_arrow._storage import AttrDecoder, attr_type, attrs_equal, encode_attrs


def test_types() -> None:
    assert attr_type(True, "k") == pa.bool_()
    assert attr_type(1, "k") == pa.int64()
    assert attr_type(np.int16(1), "k") == pa.int16()
    assert attr_type(1.5, "k") == pa.float64()
    assert attr_type("s", "k") == pa.string()
    assert attr_type(b"s", "k") == pa.binary()
    assert attr_type([1.0, 2.0], "k") == pa.list_(pa.float64())
    assert attr_type(np.datetime64("2020-01-01", "s"), "k") == pa.timestamp("s")
    assert attr_type(pa.scalar({"a": 1}), "k") == pa.struct([("a", pa.int64())])


def test_union_of_keys_and_round_trip() -> None:
    rows = [{"units": "K", "range": [0.0, 1.0]}, None, {"scale": np.float32(2)}, {}]
    st = encode_attrs(rows)
    assert st is not None
    assert [st.type.field(i).name for i in range(st.type.num_fields)] == ["units", "range", "scale"]
    dec = AttrDecoder(st)
    back = [dec.row(i) for i in range(4)]
    assert attrs_equal(back[0], rows[0])
    assert back[1] == {} and back[3] == {}
    assert back[2] == {"scale": np.float32(2)} and back[2]["scale"].dtype == np.float32


def test_no_keys_gives_none() -> None:
    assert encode_attrs([None, {}]) is None


def test_type_conflict_names_rows() -> None:
    with pytest.raises(
        InvalidAttributeError, match="row 2: attribute 'k' has type string but int64 in row 0"
    ):
        encode_attrs([{"k": 1}, None, {"k": "x"}])


def test_other_arrow_types_decode_with_as_py() -> None:
    st = pa.StructArray.from_arrays([pa.array([{"a": 1}, None])], names=["nested"])
    dec = AttrDecoder(st)
    assert dec.row(0) == {"nested": {"a": 1}}
    assert dec.row(1) == {}


def test_null_attrs_row_means_no_attributes() -> None:
    st = pa.StructArray.from_arrays([pa.array([1, 2])], names=["k"], mask=pa.array([False, True]))
    dec = AttrDecoder(st)
    assert dec.row(0) == {"k": 1} and dec.row(1) == {}
