"""Behaviour code written for zarr-vlen-ndarray 0.2.0 relies on (types, defaults, phrases)."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_ndarray_dtype import CellError, NDArrayDType, unbox


def test_defaults_are_float32_with_one_variable_dimension() -> None:
    assert NDArrayDType() == NDArrayDType(dtype="float32", shape=(None,))
    assert NDArrayDType(dtype="uint64").shape == (None,)
    assert NDArrayDType.object_codec_id == "vlen-ndarray"


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"dtype": "banana"}, "dtype must be one of"),
        ({"dtype": ">f4"}, "big-endian"),
        ({"shape": ()}, "at least one dimension"),
        ({"shape": (None, True)}, "shape dimensions must be integers or None"),
        ({"shape": (None, 2.5)}, "shape dimensions must be integers or None"),
        ({"shape": (None, 0)}, "fixed shape dimensions must be >= 1"),
    ],
)
def test_construction_errors_keep_the_020_phrase_then_explain(kwargs: dict, phrase: str) -> None:
    with pytest.raises(ValueError, match=phrase) as info:
        NDArrayDType(**kwargs)
    message = str(info.value)
    assert len(message) > len(phrase) + 20  # our explanation follows
    assert message.count(phrase) == 1 and message.count("complex128") <= 1  # said once


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (np.ones((2, 3), dtype="<f4"), "expected shape matching"),
        ([[1.0, 2.0], [3.0]], "rectangular array"),
        ("nope", "is a str"),
        (1.5, "expected shape matching"),
        ([[1e40, 0.0]], "too large"),
    ],
)
def test_cells_that_do_not_fit_raise_type_and_value_error(value: object, phrase: str) -> None:
    dt = NDArrayDType(dtype="float32", shape=(None, 2))
    for call in (dt.coerce_cell, dt.cast_scalar):
        with pytest.raises(TypeError, match=phrase) as info:
            call(value)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, CellError)
        assert str(info.value).count(phrase) == 1
    # 0.2.0 matched "Cannot convert" for scalars only; a cell's message leads with the cell.
    with pytest.raises(TypeError, match=r"^Cannot convert"):
        dt.cast_scalar(value)
    with pytest.raises(TypeError, match=r"^cell "):
        dt.coerce_cell(value)


def test_fill_json_of_the_wrong_type_is_a_type_error() -> None:
    dt = NDArrayDType(dtype="float32", shape=(None, 2))
    with pytest.raises(TypeError, match="base64"):
        dt.from_json_scalar(123, zarr_format=3)
    with pytest.raises(ValueError, match="base64"):
        dt.from_json_scalar(123, zarr_format=3)
    assert unbox(dt.from_json_scalar("", zarr_format=3)).shape == (0, 2)  # type: ignore[union-attr]


def test_payload_to_cell_rules() -> None:
    two = NDArrayDType(dtype="float32", shape=(None, None))
    assert two.payload_to_cell(b"").shape == (0, 0)
    with pytest.raises(CellError, match="ambiguous from a length"):
        two.payload_to_cell(b"\x00" * 8)
    fixed = NDArrayDType(dtype="int16", shape=(3, 2))
    cell = np.arange(6, dtype="<i2").reshape(3, 2)
    out = fixed.payload_to_cell(cell.tobytes())
    assert np.array_equal(out, cell) and not out.flags.writeable
    for bad in (b"", cell.tobytes() * 2):
        with pytest.raises(CellError, match="holds exactly 6"):
            fixed.payload_to_cell(bad)
    row = NDArrayDType(dtype="float32", shape=(None, 2))
    with pytest.raises(CellError, match="whole number"):
        row.payload_to_cell(b"\x00" * 12)
    out = row.payload_to_cell(bytearray(np.arange(4, dtype="<f4").tobytes()))
    assert out.shape == (2, 2) and not out.flags.writeable
    with pytest.raises(CellError, match="0x02"):
        NDArrayDType(dtype="bool", shape=(None,)).payload_to_cell(b"\x01\x02")
