"""Tests for zarr_ndarray_dtype.codec_json: the strict metadata of a parameter-free codec."""

from __future__ import annotations

import pytest

from zarr_ndarray_dtype.codec_json import parse_codec_metadata


class MetaError(ValueError):
    pass


class NotObjectError(MetaError, TypeError):
    pass


@pytest.mark.parametrize("data", [{"name": "x-codec"}, {"name": "x-codec", "configuration": {}}])
def test_accepted(data: object) -> None:
    parse_codec_metadata(data, "x-codec", MetaError)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"name": "x-codec", "extra": 1}, "unexpected keys \\['extra'\\]"),
        ({"name": "other"}, "does not name the 'x-codec' codec"),
        ({"name": "x-codec", "configuration": []}, "is not a JSON object"),
        ({"name": "x-codec", "configuration": {"a": 1}}, "takes no parameters"),
    ],
)
def test_refused(data: object, match: str) -> None:
    with pytest.raises(MetaError, match=match) as info:
        parse_codec_metadata(data, "x-codec", MetaError, NotObjectError)
    assert type(info.value) is MetaError


def test_not_an_object_raises_the_given_class() -> None:
    with pytest.raises(NotObjectError, match="is not a JSON object; expected"):
        parse_codec_metadata("x-codec", "x-codec", MetaError, NotObjectError)
    with pytest.raises(MetaError) as info:
        parse_codec_metadata(["x-codec"], "x-codec", MetaError)
    assert type(info.value) is MetaError
