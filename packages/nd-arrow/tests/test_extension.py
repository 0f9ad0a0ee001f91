from __future__ import annotations

import importlib
import importlib.util
import pickle

import numpy as np
import pyarrow as pa
import pytest

import nd_arrow
from nd_arrow import (
    InvalidEncodingError,
    NdVariable,
    NdType,
    NdColumn,
    NotSupportedError,
    encoded_field,
    encoded_schema,
    is_global_attributes_field,
    is_nd_field,
    logical_field,
    logical_schema,
    register,
)


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
