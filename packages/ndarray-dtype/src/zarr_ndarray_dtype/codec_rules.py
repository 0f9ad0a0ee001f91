"""Which codecs an ``ndarray`` array may have (SPEC 1.6), over zarr.json and over zarr's codecs.

zarr-python reads an array document in its own words before any code of ours runs: a fill value
it cannot read becomes ``TypeError("Invalid fill_value")``, a codec written as a bare string
``TypeError("Expected dict ...")``, and the ``bytes`` codec without ``endian`` silently becomes
``endian: "little"`` on zarr 3.1.x. :func:`check_document` checks those parts of a document of
the ``ndarray`` data type first, so every refusal names the rule of SPEC.md it breaks.
:func:`check_codecs` checks the codec chain zarr built (at creation and on open, sharding's
inner chain included): the array -> bytes codec must be one this data type defines, the only
array -> array codec is ``transpose``. ``_hooks`` calls both from zarr's metadata code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec

from zarr_ndarray_dtype import codec_json
from zarr_ndarray_dtype.bytes_codec import check_bytes_codec
from zarr_ndarray_dtype.codec_base import NDArrayBytesCodec
from zarr_ndarray_dtype.dtype import NDArray, claims_ndarray
from zarr_ndarray_dtype.errors import MetadataError
from zarr_ndarray_dtype.pattern import ShapePattern

__all__ = [
    "BYTES",
    "RAGGED",
    "SHARDING",
    "VLEN",
    "check_codecs",
    "check_document",
    "serializer_name",
]

BYTES = "bytes"
VLEN = "vlen-ndarray"
RAGGED = "ragged-ndarray"
SHARDING = "sharding_indexed"
TRANSPOSE = "transpose"
#: The array -> bytes codecs SPEC.md defines for the data type.
_SERIALIZERS = (BYTES, VLEN, RAGGED)


def serializer_name(pattern: ShapePattern) -> str:
    """The array -> bytes codec a writer uses for ``pattern`` (SPEC 1.6's table)."""
    if pattern.is_fixed:
        return BYTES
    return VLEN if pattern.is_leading_variable else RAGGED


def check_document(document: Mapping[str, Any]) -> None:
    """Refuse an array document (parsed zarr.json) of the ``ndarray`` data type that breaks a
    rule of SPEC.md zarr reads in its own words: the data type object (1.3), the fill value
    (1.5), the metadata of the codecs of Part 2 and 5 (2.2, 5.1: zarr refuses a bare string or
    a configuration that is no object itself), the ``bytes`` codec's ``endian`` (1.6/2, 1.6/3),
    in sharding's inner chain too. Documents of other data types are not looked at."""
    if not claims_ndarray(document.get("data_type")):
        return
    dtype = NDArray.from_json(document["data_type"], zarr_format=3)
    if "fill_value" in document:
        dtype.from_json_scalar(document["fill_value"], zarr_format=3)
    _check_entries(document.get("codecs"), dtype)


def _check_entries(entries: object, dtype: NDArray) -> None:
    if not isinstance(entries, list):
        return  # zarr refuses a codecs member that is no list
    for entry in entries:
        name = entry if isinstance(entry, str) else None
        if isinstance(entry, Mapping):
            name = entry.get("name")
        if name in (VLEN, RAGGED):  # zarr refuses some forms in its own words: ours first
            codec_json.parse_codec_metadata(entry, name, MetadataError)
        if not isinstance(entry, Mapping):
            continue
        config = entry.get("configuration")
        config = config if isinstance(config, Mapping) else {}
        if name == BYTES:
            check_bytes_codec(config.get("endian"), dtype)
        elif name == SHARDING:
            _check_entries(config.get("codecs"), dtype)


def check_codecs(codecs: Iterable[Any], dtype: NDArray) -> None:
    """Refuse a codec chain (zarr codec objects) that cannot serve ``dtype``: an array -> bytes
    codec other than ``bytes``, ``vlen-ndarray`` and ``ragged-ndarray`` (1.6/1), looked for
    inside ``sharding_indexed`` too, or an array -> array codec other than ``transpose`` (1.6/4);
    whether ``bytes`` (1.6/2, 1.6/3) and the codecs of Part 2 and 5 (their own ``validate``)
    serve the pattern, at every level."""
    for codec in codecs:
        name = _name(codec)
        if isinstance(codec, ArrayArrayCodec) and name != TRANSPOSE:
            raise MetadataError(
                f"the array -> array codec {name!r} cannot serve {dtype!r}: it computes on "
                "numbers, and the elements of an ndarray array are arrays; the only array -> "
                "array codec for this data type is 'transpose', which reorders elements "
                "(SPEC 1.6/4)."
            )
        if not isinstance(codec, ArrayBytesCodec):
            continue
        if name == SHARDING and hasattr(codec, "codecs"):
            check_codecs(codec.codecs, dtype)
        elif isinstance(codec, NDArrayBytesCodec):
            # Its own check of the pattern (2.3/1, 5.2/1): zarr 3.1 does not ask the codecs
            # inside a shard.
            validate: Any = codec.validate  # annotated loosely by our codecs, not by zarr
            validate(shape=(), dtype=dtype, chunk_grid=None)
        elif name == BYTES:
            check_bytes_codec(getattr(codec, "endian", None), dtype)
        elif name not in _SERIALIZERS:
            serves = serializer_name(dtype.pattern)
            raise MetadataError(
                f"the {name!r} codec cannot serve {dtype!r}: an ndarray array is serialized "
                "by 'bytes', 'vlen-ndarray' or 'ragged-ndarray', its pattern "
                f"{dtype.pattern.to_json()} by {serves!r}; to read the elements as raw bytes "
                "instead, downgrade the store to variable_length_bytes (SPEC 2.6) (SPEC 1.6/1)."
            )


def _name(codec: Any) -> str:
    """A codec object's name in metadata."""
    try:
        name = codec.to_dict()["name"]
    except Exception:  # a codec that cannot say: its class name still identifies it
        return type(codec).__name__
    return str(name)
