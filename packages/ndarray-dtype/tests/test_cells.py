"""Tests for zarr_ndarray_dtype.cells: one cell, the conversion rule, the bool-byte rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ndarray_dtype_testing import element_dtypes

from zarr_ndarray_dtype import CellError, CellTypeError, ShapePattern
from zarr_ndarray_dtype.cells import bool_bytes_as_01, check_bool_bytes, coerce_cell

VAR2 = ShapePattern.parse((None, 2))
F4 = np.dtype("<f4")


def test_lists_and_arrays_become_contiguous_little_endian() -> None:
    cell = coerce_cell([[1, 2], [3, 4]], VAR2, F4)
    assert cell.dtype == F4 and cell.flags.c_contiguous and cell.shape == (2, 2)
    big = np.arange(6, dtype=">f4").reshape(3, 2)
    out = coerce_cell(big, VAR2, F4)
    assert out.dtype.byteorder in "<=" and np.array_equal(out, big)
    fortran = np.asfortranarray(np.arange(6, dtype="<f4").reshape(3, 2))
    assert coerce_cell(fortran, VAR2, F4).flags.c_contiguous


def test_none_and_empty_flat_input_give_the_empty_cell() -> None:
    assert coerce_cell(None, VAR2, F4).shape == (0, 2)
    assert coerce_cell([], VAR2, F4).shape == (0, 2)
    assert coerce_cell(np.array([]), VAR2, F4).shape == (0, 2)
    with pytest.raises(CellError, match="cell is None: None is not a cell"):
        coerce_cell(None, ShapePattern.parse((2,)), F4)


@pytest.mark.parametrize(
    ("data", "dtype", "fragment"),
    [
        (np.array([[0.5, 1.0]]), "<i4", "fractional"),
        (np.array([[-1, 2]]), "<u2", "outside the range"),
        (np.array([[300, 2]]), "<u1", "outside the range"),
        (np.array([[2**40, 0]]), "<i4", "outside the range"),
        (np.array([[2.0**70, 0]]), "<i8", "outside the range"),
        (np.array([[np.nan, 0]]), "<i8", "NaN or infinity"),
        (np.array([[1 + 1j, 0]]), "<f8", "complex"),
        (np.array([[1 + 0j, 0]]), "<i4", "complex"),
        (np.array([[2, 0]]), "|b1", "other than 0 and 1"),
        (np.array([[1e300, 0]]), "<f4", "too large"),
        (np.array([["a", "b"]]), "<f4", "not numeric"),
    ],
)
def test_lossy_casts_are_refused(data: np.ndarray, dtype: str, fragment: str) -> None:
    with pytest.raises(CellTypeError, match=fragment) as info:
        coerce_cell(data, VAR2, np.dtype(dtype))
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (np.array([[1.0, 2.0]]), "<i4"),
        (np.array([[0, 1]]), "|b1"),
        (np.array([[255, 0]], dtype="<i8"), "<u1"),
        (np.array([[0.1, 0.2]]), "<f4"),  # float rounding is not loss of a value
        (np.array([[True, False]]), "<f8"),
        (np.array([[3, 4]]), "<c8"),
        (np.array([[np.inf, np.nan]]), "<f2"),
    ],
)
def test_value_preserving_casts_are_allowed(data: np.ndarray, dtype: str) -> None:
    out = coerce_cell(data, VAR2, np.dtype(dtype))
    assert out.dtype == np.dtype(dtype)
    with np.errstate(all="ignore"):
        assert np.allclose(out.astype("c16"), data.astype("c16"), equal_nan=True, rtol=1e-3)


FLAT = ShapePattern.parse((None,))


@pytest.mark.parametrize(
    ("value", "dtype", "exact"),
    [
        (2**24, "<f4", True),
        (2**24 + 1, "<f4", False),
        (2**24 + 2, "<f4", True),
        (-(2**24) - 1, "<f4", False),
        (2**40, "<f4", True),
        (2**40 + 1, "<f4", False),
        (2**53, "<f8", True),
        (2**53 + 1, "<f8", False),
        (-(2**63), "<f4", True),
        (2**63 - 1, "<f8", False),
        (2**64 - 1, "<f8", False),
        (2**63, "<f8", True),
        (2049, "<f2", False),
        (65504, "<f2", True),
        (2**24 + 1, "<c8", False),
        (2**53 + 1, "<c16", False),
    ],
)
def test_integers_convert_to_floats_only_when_exact(value: int, dtype: str, exact: bool) -> None:
    source = np.array([0, value], dtype=np.uint64 if value >= 2**63 else np.int64)
    target = np.dtype(dtype)
    for data in (source, source.tolist()):
        if exact:
            assert int(coerce_cell(data, FLAT, target)[1].real) == value
            continue
        with pytest.raises(CellTypeError, match=f"holds the integer {value}, which") as info:
            coerce_cell(data, FLAT, target)
        rounded = int(np.array(value).astype(target).real)
        assert f"stored as {rounded}" in str(info.value)
        assert "wider element dtype" in str(info.value)


def test_python_ints_numpy_would_make_float64_stay_exact_or_are_refused() -> None:
    """np.asarray([0, 2**64 - 1]) is float64 (2**64): the ints are kept as ints, or refused."""
    assert coerce_cell([0, 2**64 - 1], FLAT, np.dtype("<u8")).tolist() == [0, 2**64 - 1]
    assert coerce_cell([-1, 2**63], FLAT, np.dtype("<f8")).tolist() == [-1.0, 2.0**63]
    for data in ([-1, 2**64 - 1], [1.5, 2**64 - 1]):
        with pytest.raises(CellTypeError, match=f"holds the integer {2**64 - 1}"):
            coerce_cell(data, FLAT, np.dtype("<f8"))


@given(
    st.sampled_from(["<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]),
    st.sampled_from(["<f2", "<f4", "<f8", "<c8"]),
    st.data(),
)
def test_integer_to_float_refusal_is_exactly_the_round_trip(
    source: str, target: str, data: st.DataObject
) -> None:
    """Accepted iff every value survives int -> float -> int (values within the float's range)."""
    info = np.iinfo(source)
    high = min(int(info.max), 65504) if target == "<f2" else int(info.max)
    low = max(int(info.min), -65504) if target == "<f2" else int(info.min)
    values = data.draw(st.lists(st.integers(low, high), min_size=1, max_size=8))
    arr = np.array(values, dtype=source)
    with np.errstate(all="ignore"):
        back = [int(v.real) for v in arr.astype(target).tolist()]
    if back == values:
        assert coerce_cell(arr, FLAT, np.dtype(target)).tolist() == arr.astype(target).tolist()
    else:
        with pytest.raises(CellTypeError, match="cannot hold exactly"):
            coerce_cell(arr, FLAT, np.dtype(target))


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (np.zeros((2, 3)), "does not match"),
        (np.zeros(4), "does not match"),
        ([[1, 2], [3]], "not a rectangular"),
        ("text", "is a str"),
        (b"raw", "is a bytes"),
        (np.array([object(), object()], dtype=object).reshape(1, 2), "does not convert"),
        ([[1, "x"]], "not numeric"),
    ],
)
def test_shape_and_type_mismatches_are_refused(data: object, fragment: str) -> None:
    with pytest.raises(CellError, match=fragment):
        coerce_cell(data, VAR2, F4)


def test_overflowing_python_ints_are_refused_not_crashing() -> None:
    with pytest.raises(CellError):
        coerce_cell([[2**80, 1]], VAR2, np.dtype("<i8"))


@given(
    element_dtypes.flatmap(
        lambda name: hnp.arrays(
            np.dtype(name).newbyteorder(">") if np.dtype(name).itemsize > 1 else np.dtype(name),
            hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=4).map(
                lambda s: (s[0], 2)
            ),
        )
    )
)
def test_exact_dtype_any_byte_order_round_trips(data: np.ndarray) -> None:
    target = data.dtype.newbyteorder("<")
    out = coerce_cell(data, VAR2, target)
    assert out.dtype == target
    assert out.tobytes() == data.astype(target).tobytes()


def test_python_ints_beyond_64_bits_are_out_of_range_naming_value_and_dtype() -> None:
    for data in ([2**64], [[2**64]], np.array([2**64], dtype=object), [-1, 2**64 - 1]):
        with pytest.raises(CellTypeError, match=r"holds the integer -?\d+, out of range") as info:
            coerce_cell(data, FLAT, np.dtype("<u8"))
        assert "of uint64" in str(info.value)
    with pytest.raises(CellTypeError, match=f"holds the integer {2**64}, out of range.*of int8"):
        coerce_cell([1, 2**64], FLAT, np.dtype("i1"))
    with pytest.raises(CellTypeError, match=f"{2**1100}, too large for .* float32"):
        coerce_cell([2**1100], FLAT, np.dtype("<f4"))
    assert coerce_cell([2**64], FLAT, np.dtype("<f8")).tolist() == [2.0**64]  # exact


def test_nan_cells_convert_without_warnings() -> None:
    """numpy warns of all-NaN reductions; the big-int check must not reduce (filterwarnings)."""
    for data in ([np.nan], [[np.nan, np.nan]], [np.nan, 2**60]):
        cell = coerce_cell(data, ShapePattern.parse((None,) * np.ndim(data)), np.dtype("<f8"))
        assert np.isnan(cell).any()


def test_messages_print_a_pattern_as_json() -> None:
    with pytest.raises(CellError, match=r"does not match pattern \[null\]: ") as info:
        coerce_cell(np.zeros((2, 2)), FLAT, F4)
    assert "(None)" not in str(info.value)


# ------------------------------------------------------------------------ the bool-byte rule


def test_check_bool_bytes_accepts_0_and_1_only() -> None:
    check_bool_bytes(np.array([0, 1, 1, 0], np.uint8).view(bool))
    check_bool_bytes(np.zeros(0, bool))
    with pytest.raises(CellError, match=r"payload byte 2 is 0x02.*0x00 or 0x01"):
        check_bool_bytes(np.array([0, 1, 2, 7], np.uint8).view(bool))


def test_check_bool_bytes_names_the_element_from_its_byte_lengths() -> None:
    raw = np.array([1, 0, 1, 0, 9, 1], np.uint8).view(bool)
    # Elements of 2, 0, 2 and 2 bytes: byte 4 is in element 3 (the empty element 1 holds none).
    with pytest.raises(CellError, match=r"element 3 \(C order\) holds the byte 0x09"):
        check_bool_bytes(raw, nbytes=np.array([2, 0, 2, 2], np.int64))
    with pytest.raises(CellError, match=r"element 0 \(C order\) holds the byte 0x09"):
        check_bool_bytes(raw[4:], nbytes=np.array([2], np.int64))


def test_bool_bytes_as_01() -> None:
    clean = np.array([True, False, True])
    assert bool_bytes_as_01(clean) is clean
    dirty = np.array([0, 1, 2, 255], np.uint8).view(bool)
    fixed = bool_bytes_as_01(dirty)
    assert fixed.dtype == np.bool_
    assert fixed.view(np.uint8).tolist() == [0, 1, 1, 1]
    assert dirty.view(np.uint8).tolist() == [0, 1, 2, 255]  # the input is left alone
    two_d = np.array([[0, 3], [1, 0]], np.uint8).view(bool)
    assert bool_bytes_as_01(two_d).view(np.uint8).tolist() == [[0, 1], [1, 0]]
