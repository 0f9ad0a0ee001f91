from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype import FillValueError, ShapePattern
from zarr_ndarray_dtype.fill import decode_fill, encode_fill


@given(st.binary(max_size=64))
def test_encode_decode_round_trip_for_any_whole_rows(payload: bytes) -> None:
    pattern = ShapePattern.parse((None,))
    text = encode_fill(payload)
    assert text == base64.b64encode(payload).decode()
    assert decode_fill(text, pattern, 1) == (payload, (len(payload),))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("%%%", "not valid padded base64"),
        ("AACAPw", "not valid padded base64"),  # padding missing
        ("AACAP===", "not valid padded base64"),
        ("AA CAPw==", "not valid padded base64"),
        ("AB==", "not canonical"),  # unused bits set
        ("é", "not valid padded base64"),
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
    with pytest.raises(FillValueError, match="exactly 6"):
        decode_fill("", ShapePattern.parse((3,)), 2)
    assert decode_fill(encode_fill(b"\1" * 6), ShapePattern.parse((3,)), 2)[1] == (3,)
    assert decode_fill(encode_fill(b"\0" * 16), ShapePattern.parse((2, None)), 4)[1] == (2, 2)


def test_two_variable_dimensions_allow_only_the_empty_fill() -> None:
    pattern = ShapePattern.parse((None, None))
    assert decode_fill("", pattern, 4) == (b"", (0, 0))
    with pytest.raises(FillValueError, match='only fill value allowed is ""'):
        decode_fill(encode_fill(b"\0" * 4), pattern, 4)
