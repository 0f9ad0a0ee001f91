from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from ndarray_dtype_testing import patterns

from zarr_ndarray_dtype import ElementDTypeError, ShapePattern, ShapePatternError
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, parse_element_dtype


@pytest.mark.parametrize("name", ELEMENT_DTYPES)
def test_every_element_dtype_by_name_numpy_object_and_type(name: str) -> None:
    native = np.dtype(name)
    assert parse_element_dtype(name) == name
    assert parse_element_dtype(native) == name
    assert parse_element_dtype(native.type) == name
    assert parse_element_dtype(native.newbyteorder("<")) == name


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [("<f4", "float32"), ("=i8", "int64"), ("|u1", "uint8"), ("?", "bool")],
)
def test_numpy_spellings_normalize(spelling: str, expected: str) -> None:
    assert parse_element_dtype(spelling) == expected


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (None, "dtype=None"),
        (">f4", "big-endian"),
        (np.dtype(">i2"), "big-endian"),
        ("U3", "not allowed"),
        ("object", "not allowed"),
        ("datetime64[s]", "not allowed"),
        ("no-such-dtype", "not understood"),
        (1.5, "not a dtype"),
        (True, "not a dtype"),
        (np.dtype([("a", "<f4")]), "not allowed"),
        (np.dtype(("<f4", (2,))), "not allowed"),
    ],
)
def test_bad_element_dtypes_are_refused_naming_the_rule(bad: object, fragment: str) -> None:
    with pytest.raises(ElementDTypeError, match=fragment):
        parse_element_dtype(bad)


def test_big_endian_message_names_the_fix() -> None:
    with pytest.raises(ElementDTypeError, match="'float32'"):
        parse_element_dtype(">f4")


@pytest.mark.parametrize(
    ("shape", "dims"),
    [
        ((None,), (None,)),
        ([None, 2], (None, 2)),
        ((3, 2), (3, 2)),
        ((2, None), (2, None)),
        ((None, None, 4), (None, None, 4)),
        ((np.int64(3), np.uint8(2)), (3, 2)),
        (np.array([3, 2]), (3, 2)),
    ],
)
def test_parse_accepts_integer_likes_and_none(shape: object, dims: tuple) -> None:
    parsed = ShapePattern.parse(shape)
    assert parsed.dims == dims
    assert all(type(d) is int or d is None for d in parsed.dims)


@pytest.mark.parametrize(
    ("shape", "fragment"),
    [
        ((None, 2.5), "not 2.0"),
        ((None, 2.0), "not 2.0"),
        (("2",), "'2'"),
        ((True,), "boolean"),
        ((np.True_,), "boolean"),
        ((0,), ">= 1"),
        ((None, -3), ">= 1"),
        ((), "empty"),
        ([], "empty"),
        ("2", "not a sequence"),
        (3, "not a sequence"),
        (None, "not a sequence"),
        ((object(),), "integers or None"),
        ((2**40, 2**40), "multiply"),
    ],
)
def test_parse_refuses_what_json_refuses(shape: object, fragment: str) -> None:
    with pytest.raises(ShapePatternError, match=fragment):
        ShapePattern.parse(shape)


@pytest.mark.parametrize("bad", [[2.0], [True], ["2"], [], [0], [None, 2.5], "x", None, {"a": 1}])
def test_from_json_is_strict(bad: object) -> None:
    with pytest.raises(ShapePatternError):
        ShapePattern.from_json(bad)


@given(patterns)
def test_json_round_trip_over_the_whole_grammar(dims: tuple) -> None:
    pattern = ShapePattern.parse(dims)
    assert ShapePattern.from_json(pattern.to_json()) == pattern
    assert pattern.variable_axes == tuple(i for i, d in enumerate(dims) if d is None)
    assert pattern.matches(tuple(0 if d is None else d for d in dims))
    assert pattern.is_fixed == (None not in dims)


@given(patterns)
def test_shape_for_items_inverts_the_element_size(dims: tuple) -> None:
    pattern = ShapePattern.parse(dims)
    if len(pattern.variable_axes) > 1:
        with pytest.raises(ShapePatternError, match="ambiguous from a length"):
            pattern.shape_for_items(0)
        return
    for extent in (0, 1, 3):
        shape = tuple(extent if d is None else d for d in dims)
        items = int(np.prod(shape))
        if pattern.is_fixed and extent != 1:
            continue
        assert pattern.shape_for_items(items) == shape


def test_shape_for_items_refuses_partial_rows() -> None:
    with pytest.raises(ShapePatternError, match="whole number"):
        ShapePattern.parse((None, 3)).shape_for_items(7)
    with pytest.raises(ShapePatternError, match="exactly 6"):
        ShapePattern.parse((3, 2)).shape_for_items(5)


def test_leading_variable_classification() -> None:
    assert ShapePattern.parse((None,)).is_leading_variable
    assert ShapePattern.parse((None, 3, 2)).is_leading_variable
    assert not ShapePattern.parse((2, None)).is_leading_variable
    assert not ShapePattern.parse((None, None)).is_leading_variable
    assert not ShapePattern.parse((3,)).is_leading_variable


def test_a_pattern_prints_as_its_json() -> None:
    assert str(ShapePattern.parse((None,))) == "[null]"
    assert str(ShapePattern.parse((None, 2))) == "[null, 2]"
    assert ShapePattern.parse((None, None)).needs_shapes
    assert not ShapePattern.parse((2, None)).needs_shapes
