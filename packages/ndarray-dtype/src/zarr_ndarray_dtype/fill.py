"""Fill values: strict base64 of the fill element's little-endian C-order bytes (pure logic).

The JSON ``fill_value`` of an ``ndarray`` array is standard padded base64 (RFC 4648 section 4).
Decoding is strict: text outside the alphabet, wrong padding and non-canonical encodings are
refused rather than read as some other value, and the decoded length must fit the pattern.
"""

from __future__ import annotations

import base64
import binascii

from zarr_ndarray_dtype.errors import FillValueError, FillValueTypeError
from zarr_ndarray_dtype.pattern import ShapePattern

__all__ = ["decode_fill", "encode_fill"]


def encode_fill(payload: bytes) -> str:
    """The JSON fill value for an element with these little-endian C-order bytes."""
    return base64.b64encode(payload).decode("ascii")


def decode_fill(
    text: object, pattern: ShapePattern, itemsize: int
) -> tuple[bytes, tuple[int, ...]]:
    """Decode and check a JSON fill value; return the element bytes and the element shape."""
    if not isinstance(text, str):
        raise FillValueTypeError(
            f"Invalid type: {text!r}. Expected a base64-encoded string: fill_value {text!r} is a "
            f"{type(text).__name__}; an ndarray fill value must be the base64 string of the "
            'element\'s bytes ("" for the empty element) (SPEC 1.5/1).'
        )
    try:
        payload = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not valid padded base64 ({exc}); it must be the "
            'standard base64 of the element\'s little-endian bytes, e.g. "" for the empty element '
            "(SPEC 1.5/2)."
        ) from exc
    if encode_fill(payload) != text:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not canonical base64 (its padding or unused bits differ "
            f"from the encoding of the same bytes, {encode_fill(payload)[:40]!r}); write the "
            "canonical form (SPEC 1.5/2)."
        )
    n_variable = len(pattern.variable_axes)
    if n_variable >= 2 and payload:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not empty, but pattern {pattern.to_json()} has "
            f"{n_variable} variable dimensions, whose extents a fill value cannot carry; the only "
            'fill value allowed is "" (the empty element) (SPEC 1.5/3).'
        )
    if n_variable >= 2:
        return payload, pattern.empty_shape
    row = itemsize * pattern.fixed_items
    if pattern.is_fixed and len(payload) != row:
        raise FillValueError(
            f"fill_value decodes to {len(payload)} bytes, but an element of the fixed shape "
            f"{pattern.empty_shape} has exactly {row}; encode one whole element (SPEC 1.5/3)."
        )
    if len(payload) % row:
        raise FillValueError(
            f"fill_value decodes to {len(payload)} bytes, not a whole number of {row}-byte rows "
            f"of pattern {pattern.to_json()}; encode one whole element (SPEC 1.5/3)."
        )
    return payload, pattern.shape_for_items(len(payload) // itemsize)
