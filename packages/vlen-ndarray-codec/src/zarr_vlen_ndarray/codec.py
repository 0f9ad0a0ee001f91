"""The ``vlen-ndarray`` array -> bytes codec: ``{"name": "vlen-ndarray", "configuration": {}}``
for ``ndarray`` elements of pattern ``[null, d1, ..., dk]``.

A chunk is framed exactly like zarr's ``vlen-bytes`` (:mod:`zarr_vlen_ndarray.framing`), each
payload an element's raw little-endian C-order bytes: byte-identical to ``bytes`` +
``vlen-bytes`` of ``cell.tobytes()``. Its block codec is :mod:`zarr_vlen_ndarray.block`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

# VLenBytes and parse_named_configuration were module attributes in 0.2.0; kept importable.
from numcodecs.vlen import VLenBytes as VLenBytes

# ArrayBytesCodec was a module attribute in 0.2.0 (the codec base); kept importable.
from zarr.abc.codec import ArrayBytesCodec as ArrayBytesCodec

from zarr_ndarray_dtype import NDArray, codec_json
from zarr_ndarray_dtype.codec_base import SERVES_FIXED, NDArrayBytesCodec, serves_other_dtype
from zarr_vlen_ndarray._compat import parse_named_configuration as parse_named_configuration
from zarr_vlen_ndarray.block import CODEC_NAME, VlenBlocks

# A module attribute of 0.2.0's codec module (the limit and its checks live in framing).
from zarr_vlen_ndarray.framing import U32_MAX as U32_MAX

if TYPE_CHECKING:
    from zarr.core.common import ChunkCoords

__all__ = ["CODEC_NAME", "CodecMetadataError", "VlenNDArrayCodec", "parse_codec_metadata"]


class CodecMetadataError(ValueError):
    """The codec's JSON metadata is not ``{"name": "vlen-ndarray", "configuration": {}}``."""


class CodecMetadataTypeError(CodecMetadataError, TypeError):
    """The codec's JSON metadata is not a JSON object at all (0.2.0 raised TypeError here)."""


def parse_codec_metadata(data: object) -> None:
    """Check codec metadata strictly: name ``vlen-ndarray``, optional empty configuration."""
    codec_json.parse_codec_metadata(data, CODEC_NAME, CodecMetadataError, CodecMetadataTypeError)


def _serves_instead(dtype: Any) -> str:
    """What serves a data type or pattern this codec does not (for error messages)."""
    if isinstance(dtype, NDArray):
        pattern = dtype.pattern
        if pattern.is_fixed:
            return SERVES_FIXED
        # Served by the sibling package's codec (named, never imported: packages do not import
        # their siblings).
        what = (
            "a single variable dimension outside the leading position"
            if len(pattern.variable_axes) == 1
            else "two or more variable dimensions (each element needs a stored shape)"
        )
        return (
            f"{what} is served by the 'ragged-ndarray' codec: pip install zarr-ragged-ndarray "
            "and pass serializer=zarr_ragged_ndarray.RaggedNDArrayCodec(), or omit serializer= "
            "to get it by default"
        )
    return serves_other_dtype(
        dtype, "dtype=zarr_vlen_ndarray.NDArray(dtype=..., shape=(None, ...))"
    )


@dataclass(frozen=True)
class VlenNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements with one leading variable dimension."""

    codec_name = CODEC_NAME
    metadata_error = CodecMetadataError
    not_object_error = CodecMetadataTypeError
    # U32_MAX is read at every encode, so 0.2.0's tests can lower it on this module.
    block_codec: ClassVar[VlenBlocks] = VlenBlocks(limit=lambda: U32_MAX)

    # dtype / chunk_grid are annotated loosely (as in 0.2.0): their types differ by zarr release.
    def validate(self, *, shape: ChunkCoords, dtype: Any, chunk_grid: Any) -> None:
        """Refuse, at array creation, any data type other than ``ndarray [null, d1..dk]``."""
        # 0.2.0's phrases ("only compatible", "exactly one variable dimension") are kept.
        if not isinstance(dtype, NDArray):
            raise ValueError(
                f"The {CODEC_NAME!r} codec is only compatible with the 'ndarray' data type with a "
                f"shape pattern [null, d1, ..., dk], got {dtype!r}: {_serves_instead(dtype)} "
                "(SPEC 2.3/1)."
            )
        if not dtype.pattern.is_leading_variable:
            raise ValueError(
                f"The {CODEC_NAME!r} codec serves only shape patterns with exactly one variable "
                f"dimension, in the leading position ([null, d1, ..., dk]); {dtype!r} has the "
                f"pattern {json.dumps(dtype.pattern.to_json())}: {_serves_instead(dtype)} "
                "(SPEC 2.3/1)."
            )
