"""Tests for zarr_ndarray_dtype.dtype: the ZDType, its JSON and its fill value JSON."""

from __future__ import annotations

import base64
import json
import pickle

import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from ndarray_dtype_testing import ToyCodec, element_dtypes, patterns
from zarr.dtype import data_type_registry

import zarr_ndarray_dtype
from zarr_ndarray_dtype import (
    ELEMENT_DTYPES,
    ElementDTypeError,
    FillValueError,
    MetadataError,
    NDArrayDType,
    ShapePattern,
    ShapePatternError,
    unbox,
)
from zarr_ndarray_dtype import dtype as dtype_module
from zarr_ndarray_dtype._compat import ClaimedJSONError, DataTypeValidationError
from zarr_ndarray_dtype.blocks import FlatCells
from zarr_ndarray_dtype.dtype import (
    FillBlock,
    FillCell,
    _FillCell,
    decode_fill,
    encode_fill,
    fill_scalar,
    frozen_cell,
)


def test_ndarray_is_a_deprecated_alias() -> None:
    for module in (zarr_ndarray_dtype, dtype_module):
        with pytest.warns(DeprecationWarning, match="use NDArrayDType"):
            assert module.NDArray is NDArrayDType
    assert repr(NDArrayDType("int8", (2,))) == "NDArrayDType(dtype='int8', shape=(2,))"
    assert "NDArray" not in zarr_ndarray_dtype.__all__
    with pytest.raises(AttributeError, match="no attribute 'NDArrayX'"):
        zarr_ndarray_dtype.NDArrayX  # noqa: B018


def test_positional_arguments() -> None:
    assert NDArrayDType("float32", (None, 2)) == NDArrayDType(dtype="float32", shape=(None, 2))
    assert NDArrayDType(np.int8) == NDArrayDType(dtype="int8", shape=(None,))
    with pytest.raises(TypeError, match="positional"):
        NDArrayDType("float32", (None,), 3)  # type: ignore[call-arg]


def test_frozen_hashable_and_normalized() -> None:
    a = NDArrayDType(dtype=np.float32, shape=[None, np.int64(2)])
    b = NDArrayDType(dtype="<f4", shape=(None, 2))
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a.dtype == "float32" and a.shape == (None, 2)
    with pytest.raises(AttributeError):
        a.dtype = "int8"  # type: ignore[misc]
    assert a.item_dtype == np.dtype("<f4")
    assert a.fixed_nbytes == 8 and a.variable_axes == (0,)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"dtype": "float32", "shape": (None, 2.5)}, ShapePatternError),
        ({"dtype": "float32", "shape": ("2",)}, ShapePatternError),
        ({"dtype": "float32", "shape": (True,)}, ShapePatternError),
        ({"dtype": "float32", "shape": (0,)}, ShapePatternError),
        ({"dtype": "float32", "shape": ()}, ShapePatternError),
        ({"dtype": None, "shape": (None,)}, ElementDTypeError),
        ({"dtype": ">f4", "shape": (None,)}, ElementDTypeError),
        ({"dtype": "U5", "shape": (None,)}, ElementDTypeError),
    ],
)
def test_constructor_refusals(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        NDArrayDType(**kwargs)


@given(element_dtypes, patterns)
def test_json_round_trip_over_the_grammar(name: str, dims: tuple) -> None:
    dt = NDArrayDType(dtype=name, shape=dims)
    doc = dt.to_json(zarr_format=3)
    assert doc == {"name": "ndarray", "configuration": {"dtype": name, "shape": list(dims)}}
    again = json.loads(json.dumps(doc))
    assert NDArrayDType.from_json(again, zarr_format=3) == dt
    assert data_type_registry.match_json(again, zarr_format=3) == dt


# The registry's vectors (every rule of SPEC 1.3 and 1.5) run in test_registry.py.


def test_ndarray_json_breaking_a_rule_names_it() -> None:
    """Every refusal is zarr's DataTypeValidationError (the ZDType contract) and ours, naming
    the rule; zarr >= 3.4's registry passes a document that names ``ndarray`` on."""
    doc = {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [None, 1.0]}}
    with pytest.raises(
        ShapePatternError, match=r"No Zarr data type found .* \(SPEC 1\.3/5\)"
    ) as info:
        NDArrayDType.from_json(doc, zarr_format=3)  # type: ignore[arg-type]
    assert isinstance(info.value, DataTypeValidationError)
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args
    with pytest.raises(DataTypeValidationError, match=r"SPEC 1\.3/5"):
        NDArrayDType._from_json_v3(doc)  # type: ignore[arg-type]
    for bad, error in (
        (
            {"name": "ndarray", "configuration": {"dtype": "float128", "shape": [None]}},
            ElementDTypeError,
        ),
        ({"name": "ndarray", "configuration": {"dtype": "int8"}}, MetadataError),
        ("ndarray", MetadataError),
    ):
        with pytest.raises(error) as info:
            NDArrayDType.from_json(bad, zarr_format=3)  # type: ignore[arg-type]
        assert isinstance(info.value, DataTypeValidationError)
    legacy = {"name": "vlen-ndarray", "configuration": {"dtype": "int8", "inner_shape": [2]}}
    with pytest.raises(DataTypeValidationError, match=r'"shape": \[null, 2\]\}\} \(SPEC 2\.6'):
        NDArrayDType.from_json(legacy, zarr_format=3)  # type: ignore[arg-type]


def test_zarr_names_the_rule_a_document_claiming_ndarray_breaks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """zarr's registry tries the next data type on a DataTypeValidationError; ours is of the
    kind it passes on (zarr >= 3.4), so opening the array names the rule, not skips it."""
    doc = {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [None, 1.0]}}
    zarr.create_array(
        tmp_path, shape=(2,), dtype=NDArrayDType("float32", (None, 1)), serializer=ToyCodec()
    )
    meta = json.loads((tmp_path / "zarr.json").read_text())
    (tmp_path / "zarr.json").write_text(json.dumps({**meta, "data_type": doc}))
    if ClaimedJSONError is DataTypeValidationError:  # zarr < 3.4 skips it: its own words
        with pytest.raises(ValueError, match="No Zarr data type found that matches"):
            zarr.open_array(tmp_path, mode="r")
        return
    with pytest.raises(ShapePatternError, match=r"No Zarr data type found .* \(SPEC 1\.3/5\)"):
        data_type_registry.match_json(doc, zarr_format=3)  # type: ignore[arg-type]
    with pytest.raises(ShapePatternError, match=r"entry 1 is 1\.0 .* \(SPEC 1\.3/5\)"):
        zarr.open_array(tmp_path, mode="r")


@pytest.mark.parametrize(
    "foreign",
    [
        "int32",
        {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}},
        {"name": "struct", "configuration": {"fields": []}},
        [1, 2],
        None,
        42,
    ],
)
def test_foreign_json_raises_only_datatypevalidationerror(foreign: object) -> None:
    with pytest.raises(DataTypeValidationError):
        NDArrayDType.from_json(foreign, zarr_format=3)  # type: ignore[arg-type]
    with pytest.raises(DataTypeValidationError):
        NDArrayDType.from_json(foreign, zarr_format=2)  # type: ignore[arg-type]


def test_native_dtype_is_never_inferred() -> None:
    with pytest.raises(DataTypeValidationError):
        NDArrayDType.from_native_dtype(np.dtype(object))
    assert NDArrayDType(dtype="int8", shape=(None,)).to_native_dtype() == np.dtype(object)


def test_zarr_v2_is_refused_clearly() -> None:
    dt = NDArrayDType(dtype="float32", shape=(None,))
    with pytest.raises(ValueError, match="Zarr format 3 only"):
        dt.to_json(zarr_format=2)
    with pytest.raises(ValueError, match="Zarr format 3 only"):
        zarr.create_array(store={}, shape=(2,), dtype=dt, zarr_format=2, serializer="auto")


def test_int_data_types_still_work_after_import() -> None:
    arr = zarr.create_array(store={}, shape=(3,), dtype="int32")
    arr[:] = [1, 2, 3]
    assert arr[:].tolist() == [1, 2, 3]


# ---------------------------------------------------------------- fill values


def test_default_fills() -> None:
    assert unbox(NDArrayDType(dtype="float32", shape=(None, 2)).default_scalar()).shape == (0, 2)
    zero = unbox(NDArrayDType(dtype="int16", shape=(3, 2)).default_scalar())
    assert zero.shape == (3, 2) and not zero.any()
    assert (
        NDArrayDType(dtype="uint8", shape=(None, None)).to_json_scalar(
            NDArrayDType(dtype="uint8", shape=(None, None)).default_scalar(), zarr_format=3
        )
        == ""
    )


@given(element_dtypes, patterns, st.data())
def test_fill_json_round_trip_over_the_grammar(name: str, dims: tuple, data: st.DataObject) -> None:
    dt = NDArrayDType(dtype=name, shape=dims)
    n_var = len(dt.variable_axes)
    extent = 0 if n_var >= 2 else data.draw(st.integers(0, 3))
    shape = tuple(extent if d is None else d for d in dims)
    raw = data.draw(st.binary(min_size=0, max_size=0)) if 0 in shape else None
    size = int(np.prod(shape)) * dt.item_dtype.itemsize
    raw = data.draw(st.binary(min_size=size, max_size=size))
    if dt.item_dtype.kind == "b":
        raw = bytes(b & 1 for b in raw)
    cell = np.frombuffer(raw, dtype=dt.item_dtype).reshape(shape)
    text = dt.to_json_scalar(cell, zarr_format=3)
    back = unbox(dt.from_json_scalar(text, zarr_format=3))
    assert back.shape == shape and back.tobytes() == raw
    assert dt.to_json_scalar(back, zarr_format=3) == text


def test_nonempty_fill_with_two_variable_dims_is_refused_on_write_and_read() -> None:
    dt = NDArrayDType(dtype="float32", shape=(None, None))
    with pytest.raises(FillValueError, match="empty element"):
        dt.cast_scalar(np.ones((1, 1), "<f4"))
    with pytest.raises(FillValueError):
        dt.to_json_scalar(np.ones((1, 1), "<f4"), zarr_format=3)
    with pytest.raises(FillValueError):
        dt.from_json_scalar("AACAPw==", zarr_format=3)
    assert not dt._check_scalar(np.ones((1, 1), "<f4"))
    assert dt._check_scalar(None)


def test_bool_fill_bytes_must_be_zero_or_one() -> None:
    dt = NDArrayDType(dtype="bool", shape=(2,))
    assert unbox(dt.from_json_scalar("AAE=", zarr_format=3)).tolist() == [False, True]
    with pytest.raises(FillValueError, match="0x02"):
        dt.from_json_scalar("AAI=", zarr_format=3)


def test_fill_read_from_metadata_is_immutable(store: dict) -> None:
    dt = NDArrayDType(dtype="int16", shape=(2,))
    arr = zarr.create_array(store=store, shape=(4,), chunks=(2,), dtype=dt, fill_value=[7, 8])
    out = arr[:]
    assert all(np.array_equal(c, [7, 8]) for c in out)
    with pytest.raises(ValueError, match="read-only"):
        out[0][0] = 1
    with pytest.raises(ValueError, match="WRITEABLE"):
        out[0].flags.writeable = True
    assert json.loads(store["zarr.json"].to_bytes())["fill_value"] == "BwAIAA=="
    assert np.array_equal(unbox(zarr.open_array(store=store)[3]), [7, 8])


@pytest.mark.parametrize("bad", ["%%%", "AACAPw", 5, "AAAAAAAAAAAAAAA="])
def test_invalid_fill_in_stored_metadata_is_refused_on_open(store: dict, bad: object) -> None:
    zarr.create_array(store=store, shape=(2,), dtype=NDArrayDType(dtype="int16", shape=(2,)))
    doc = json.loads(store["zarr.json"].to_bytes())
    doc["fill_value"] = bad
    store["zarr.json"] = zarr.core.buffer.cpu.Buffer.from_bytes(json.dumps(doc).encode())
    with pytest.raises((TypeError, ValueError)):
        zarr.open_array(store=store)


@pytest.mark.parametrize("name", ELEMENT_DTYPES)
def test_payload_to_cell(name: str) -> None:
    dt = NDArrayDType(dtype=name, shape=(None, 2))
    raw = np.zeros((3, 2), dtype=dt.item_dtype).tobytes()
    cell = dt.payload_to_cell(raw)
    assert cell.shape == (3, 2) and not cell.flags.writeable
    with pytest.raises(ValueError, match="whole number"):
        dt.payload_to_cell(raw[:-1])


@pytest.mark.parametrize(
    ("shape", "fill"),
    [
        ((None,), [np.nan]),
        ((None,), np.array([np.nan], "f4")),
        ((None,), [float("nan"), np.nan]),
        ((None, 2), np.full((1, 2), np.nan)),
        ((2, 2), [[np.nan, np.nan], [np.nan, 1.0]]),
    ],
)
def test_nan_fills_create_the_array_without_warnings(shape: tuple, fill: object) -> None:
    """numpy's all-NaN warnings are errors here (filterwarnings): none may be raised."""
    array = zarr.create_array(
        store={},
        shape=(2,),
        dtype=NDArrayDType("float32", shape),
        fill_value=fill,
        serializer=ToyCodec() if None in shape else "auto",
    )
    assert np.array_equal(unbox(array.metadata.fill_value), np.asarray(fill, "f4"), equal_nan=True)
    with pytest.raises(ValueError, match=r"shape \(\), which does not match pattern \[null\]"):
        NDArrayDType("float32", (None,)).cast_scalar(float("nan"))  # a cell is an array


def test_fill_cells_are_immutable_and_compare_whole() -> None:
    cell = frozen_cell(np.arange(4, dtype="<i2").tobytes(), "<i2", (2, 2))
    assert isinstance(cell, _FillCell)
    with pytest.warns(DeprecationWarning, match="private"):
        assert zarr_ndarray_dtype.VlenScalar is _FillCell
    with pytest.raises(ValueError, match="read-only"):
        cell[0, 0] = 9
    with pytest.raises(ValueError, match="WRITEABLE"):
        cell.flags.writeable = True
    plain = np.arange(4, dtype="<i2").reshape(2, 2)
    assert (cell == plain) is True
    assert (plain == cell) is True  # reflected: the subclass's __eq__ wins
    assert (cell != plain) is False
    assert (cell == plain[:1]) is False
    assert (cell == None) is False  # noqa: E711
    assert hash(cell) == hash(frozen_cell(plain.tobytes(), "<i2", (2, 2)))
    assert pickle.loads(pickle.dumps(cell)) == cell


def test_box_is_one_scalar_for_numpy_and_cannot_be_rebound() -> None:
    fill = fill_scalar(np.zeros((0, 2), "<f4"))
    out = np.empty(3, dtype=object)
    out[:] = fill
    assert all(c is out[0] for c in out)  # one shared object ...
    with pytest.raises(ValueError, match="read-only"):
        out[0][...] = 1  # ... that nobody can change
    with pytest.raises(ValueError, match="read-only"):
        fill[()] = np.ones((1, 2), "<f4")
    assert fill == np.zeros((0, 2), "<f4")
    assert unbox(fill).shape == (0, 2)
    assert unbox(np.array(fill, dtype=object)).shape == (0, 2)
    assert unbox(5) == 5
    assert pickle.loads(pickle.dumps(fill)) == fill


def test_fill_equals_object_arrays_of_the_same_values() -> None:
    """zarr hands scalar writes over as object arrays; an equal one must compare equal."""
    empty = frozen_cell(b"", "<u1", (0, 4))
    assert empty == np.empty((0, 4), dtype=object)
    assert (empty == np.empty((1, 4), dtype=object)) is False
    cell = frozen_cell(np.array([1, 2], "<i2").tobytes(), "<i2", (2,))
    assert cell == np.array([1, 2], dtype=object)
    assert (cell == np.array([1, 3], dtype=object)) is False
    assert (cell == np.array(["a", "b"], dtype=object)) is False


def test_nan_fill_compares_equal_to_itself() -> None:
    cell = frozen_cell(np.array([np.nan], "<f8").tobytes(), "<f8", (1,))
    assert cell == np.array([np.nan])


def test_fill_equality_is_byte_equality() -> None:
    """SPEC 1.5: the same shape and the same bytes (in the element dtype)."""
    zero = frozen_cell(np.zeros(2, "<f4").tobytes(), "<f4", (2,))
    assert (zero == np.array([-0.0, 0.0], "f4")) is False
    assert zero == np.zeros(2, "f8")  # converted as a write would: the same bytes
    nan = frozen_cell(np.array([np.nan], "<f4").tobytes(), "<f4", (1,))
    assert (nan == np.array([0x7FC00001], "<u4").view("f4")) is False
    assert (nan == np.array([np.nan], dtype=object)) is True
    assert (zero == np.array([1e300, 0.0])) is False  # does not convert: not the fill


# ------------------------------------------------------------------ fill value JSON (SPEC 1.5)


@given(st.binary(max_size=64))
def test_encode_decode_round_trip_for_any_whole_rows(payload: bytes) -> None:
    pattern = ShapePattern.parse((None,))
    text = encode_fill(payload)
    assert text == base64.b64encode(payload).decode()
    assert decode_fill(text, pattern, 1) == (payload, (len(payload),))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("%%%", "not canonical padded base64"),
        ("AACAPw", "not canonical padded base64"),  # padding missing
        ("AACAP===", "not canonical padded base64"),
        ("AA CAPw==", "not canonical padded base64"),
        ("AB==", "not canonical"),  # unused bits set
        ("é", "not canonical padded base64"),
        (5, "is a int"),
        (None, "is a NoneType"),
        (["AA=="], "is a list"),
    ],
)
def test_invalid_base64_is_refused(text: object, fragment: str) -> None:
    with pytest.raises(FillValueError, match=fragment):
        decode_fill(text, ShapePattern.parse((None,)), 1)


def test_lengths_must_fit_the_pattern() -> None:
    with pytest.raises(FillValueError, match="whole number"):
        decode_fill(encode_fill(b"\0" * 4), ShapePattern.parse((None, 2)), 4)
    with pytest.raises(FillValueError, match="exactly 3"):
        decode_fill("", ShapePattern.parse((3,)), 2)
    assert decode_fill(encode_fill(b"\1" * 6), ShapePattern.parse((3,)), 2)[1] == (3,)
    assert decode_fill(encode_fill(b"\0" * 16), ShapePattern.parse((2, None)), 4)[1] == (2, 2)


def test_two_variable_dimensions_allow_only_the_empty_fill() -> None:
    pattern = ShapePattern.parse((None, None))
    assert decode_fill("", pattern, 4) == (b"", (0, 0))
    with pytest.raises(FillValueError, match='only fill value allowed is ""'):
        decode_fill(encode_fill(b"\0" * 4), pattern, 4)


# ------------------------------------------------------------------------ fill cells, many at once

PAIRS = NDArrayDType(dtype="float32", shape=(None, 2))
ANY2 = NDArrayDType(dtype="float32", shape=(None, None))


def test_fill_cell_matches_by_shape_and_bytes() -> None:
    """SPEC 1.5: equal elements have the same shape and bytes (as the fill value's own ``==``)."""
    fill = FillCell(PAIRS, PAIRS.cast_scalar(np.array([[np.nan, 1.0]], "f4")))
    values = np.array([np.nan, 1, np.nan, 2, -0.0, 0, np.nan, 1], "f4")
    cells = FlatCells(values, np.array([0, 2, 4, 4, 6, 8]), None)
    assert fill.matches(cells).tolist() == [True, False, False, False, True]
    other_nan = np.array([0x7FC00001, 0x3F800000], "<u4").view("f4")  # a NaN with other bits
    assert fill.matches(FlatCells(other_nan, np.array([0, 2]), None)).tolist() == [False]
    zero = FillCell(PAIRS, PAIRS.cast_scalar(np.zeros((1, 2), "f4")))
    assert zero.matches(
        FlatCells(np.array([-0.0, 0.0], "f4"), np.array([0, 2]), None)
    ).tolist() == [
        False  # -0.0 is not 0.0: eliding the chunk would read back 0.0
    ]
    c16 = NDArrayDType(dtype="complex128", shape=(None,))
    one = FillCell(c16, c16.cast_scalar(np.array([1 + 2j])))
    both = FlatCells(np.array([1 + 2j, 1 - 2j]), np.array([0, 1, 2]), None)
    assert one.matches(both).tolist() == [True, False]  # 16-byte items, two words each
    empty = FillCell(ANY2, ANY2.default_scalar())
    shapes = np.array([[0, 0], [0, 3], [1, 1]])
    got = empty.matches(FlatCells(np.zeros(1, "f4"), np.array([0, 0, 0, 1]), shapes))
    assert got.tolist() == [True, False, False]  # an empty (0, 3) cell is not the (0, 0) fill
    tiled = fill.cells(3, with_shapes=True)
    assert tiled.offsets.tolist() == [0, 2, 4, 6]
    assert tiled.shapes is not None and tiled.shapes.tolist() == [[1, 2]] * 3


def test_fill_block_copies_its_one_cell_to_every_place() -> None:
    dtype = NDArrayDType(dtype="int16", shape=(None, 2))
    fill = FillBlock(FillCell(dtype, dtype.cast_scalar(np.array([[5, 6]], np.int16))), False)
    assert fill.sizes.tolist() == [2]
    out = np.zeros(6, np.int16)
    fill.copy(np.zeros(2, np.intp), out.view(np.uint8), np.array([0, 8]))
    assert out.tolist() == [5, 6, 0, 0, 5, 6]
    empty = FillBlock(FillCell(dtype, dtype.default_scalar()), True)
    empty.copy(np.zeros(3, np.intp), out.view(np.uint8), np.zeros(3, np.int64))  # nothing to copy
    assert empty.shapes is not None and empty.shapes.tolist() == [[0, 2]]
    assert empty.cells().offsets.tolist() == [0, 0]
