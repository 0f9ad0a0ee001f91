"""The ``vlen-ndarray`` array -> bytes codec, ``{"name": "vlen-ndarray", "configuration": {}}``,
for ``ndarray`` elements of pattern ``[null, d1, ..., dk]``, and its registration.

A chunk is framed exactly like zarr's ``vlen-bytes`` (:mod:`zarr_vlen_ndarray.framing`), each
payload an element's raw little-endian C-order bytes: byte-identical to ``bytes`` +
``vlen-bytes`` of ``cell.tobytes()``. Its block codec is :mod:`zarr_vlen_ndarray.block`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

# Module attributes of 0.2.0's codec module, kept importable: VLenBytes, ArrayBytesCodec (the
# codec base), NDArray, parse_named_configuration and U32_MAX (read at every encode, so 0.2.0's
# tests can lower it here).
from numcodecs.vlen import VLenBytes as VLenBytes
from zarr.abc.codec import ArrayBytesCodec as ArrayBytesCodec
from zarr.registry import register_codec

import zarr_ndarray_dtype
from zarr_ndarray_dtype import CodecMetadataError, NDArrayDType
from zarr_ndarray_dtype import NDArrayDType as NDArray  # noqa: F401  (0.2.0's name, kept)
from zarr_ndarray_dtype.codecs import NDArrayBytesCodec
from zarr_vlen_ndarray._compat import parse_named_configuration as parse_named_configuration
from zarr_vlen_ndarray.block import CODEC_NAME, VlenBlocks
from zarr_vlen_ndarray.framing import U32_MAX as U32_MAX

if TYPE_CHECKING:
    ChunkCoords = tuple[int, ...]  # zarr's name of a chunk shape, 0.2.0's annotation

__all__ = ["CODEC_NAME", "CodecMetadataError", "VlenNDArrayCodec", "register"]


@dataclass(frozen=True)
class VlenNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements with one leading variable dimension."""

    codec_name = CODEC_NAME
    block_codec: ClassVar[VlenBlocks] = VlenBlocks(limit=lambda: U32_MAX)

    # dtype / chunk_grid are annotated loosely (as in 0.2.0): their types differ by zarr release.
    def validate(self, *, shape: ChunkCoords, dtype: Any, chunk_grid: Any) -> None:
        """Refuse, at array creation, any data type other than ``ndarray [null, d1..dk]``."""
        # 0.2.0's phrases ("only compatible", "exactly one variable dimension") are kept.
        if not isinstance(dtype, NDArrayDType):
            raise ValueError(
                f"The {CODEC_NAME!r} codec is only compatible with the 'ndarray' data type with a "
                f"shape pattern [null, d1, ..., dk], got {dtype!r}: "
                f"{self.serves_instead(dtype)} (SPEC 2.3/1)."
            )
        if not dtype.pattern.is_leading_variable:
            raise ValueError(
                f"The {CODEC_NAME!r} codec serves only shape patterns with exactly one variable "
                f"dimension, in the leading position ([null, d1, ..., dk]); {dtype!r} has the "
                f"pattern {json.dumps(dtype.pattern.to_json())}: {self.serves_instead(dtype)} "
                "(SPEC 2.3/1)."
            )


def register() -> None:
    """Register ``vlen-ndarray`` and ``ndarray`` with zarr; calling it again is a no-op."""
    zarr_ndarray_dtype.register()
    register_codec(CODEC_NAME, VlenNDArrayCodec)
