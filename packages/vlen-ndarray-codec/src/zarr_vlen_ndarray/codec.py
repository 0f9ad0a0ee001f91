"""The ``vlen-ndarray`` array -> bytes codec (the glue between zarr and the pure layers).

Metadata: ``{"name": "vlen-ndarray", "configuration": {}}`` (the configuration may be omitted;
when present it must be empty). The codec serves the ``ndarray`` data type with shape patterns
``[null, d1, ..., dk]`` (k >= 0).

A chunk is framed exactly like zarr's ``vlen-bytes`` (see :mod:`zarr_vlen_ndarray.framing`),
each element's payload being its raw little-endian C-order bytes, elements in the chunk's C
order. Decoding infers each element's leading extent from its byte length. So a chunk is
byte-identical to ``bytes`` + ``vlen-bytes`` holding ``cell.tobytes()``.

Encoding gathers all cells into one block with a single ``np.concatenate`` (cells that are not
already plain arrays of the element dtype are converted one by one first) and frames it in one
pass; decoding unframes into one block and cuts it into read-only views.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

# VLenBytes and parse_named_configuration were module attributes in 0.2.0; kept importable.
from numcodecs.vlen import VLenBytes as VLenBytes

# ArrayBytesCodec was a module attribute in 0.2.0 (the codec base); kept importable.
from zarr.abc.codec import ArrayBytesCodec as ArrayBytesCodec
from zarr.core.common import parse_named_configuration as parse_named_configuration

from zarr_ndarray_dtype import NDArray, codec_json, readonly_cells
from zarr_ndarray_dtype.codec_base import SERVES_FIXED, NDArrayBytesCodec, serves_other_dtype
from zarr_vlen_ndarray.block import CODEC_NAME, decode_block, encode_block, offsets_from_rows
from zarr_vlen_ndarray.cells import gather_cells

# A module attribute of 0.2.0's codec module (the limit and its checks live in framing).
from zarr_vlen_ndarray.framing import U32_MAX as U32_MAX

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
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


def _chunk_size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


@dataclass(frozen=True)
class VlenNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements with one leading variable dimension."""

    codec_name = CODEC_NAME
    metadata_error = CodecMetadataError
    not_object_error = CodecMetadataTypeError

    # dtype / chunk_grid are annotated loosely (as in 0.2.0): their types differ by zarr release.
    def validate(self, *, shape: ChunkCoords, dtype: Any, chunk_grid: Any) -> None:
        """Refuse, at array creation, any data type other than ``ndarray [null, d1..dk]``."""
        # Each message starts with 0.2.0's words (code may match them), then explains.
        if not isinstance(dtype, NDArray):
            raise ValueError(
                f"The {CODEC_NAME!r} codec is only compatible with the 'ndarray' data type, got "
                f"{dtype}: the {CODEC_NAME!r} codec serves only the 'ndarray' data type with a "
                f"shape pattern [null, d1, ..., dk], not {dtype!r}: {_serves_instead(dtype)}."
            )
        if not dtype.pattern.is_leading_variable:
            raise ValueError(
                f"The {CODEC_NAME!r} codec serves only shape patterns with exactly one variable "
                f"dimension, in the leading position (e.g. [None, 2]); got the pattern "
                f"{list(dtype.shape)}: the {CODEC_NAME!r} codec serves only shape patterns with "
                f"one variable dimension in the leading position, [null, d1, ..., dk]; {dtype!r} "
                f"has the pattern {json.dumps(dtype.pattern.to_json())}: "
                f"{_serves_instead(dtype)}."
            )

    # ------------------------------------------------------------------ decode
    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        dtype = self.ndarray_dtype(chunk_spec)
        shape = tuple(chunk_spec.shape)
        cells = decode_chunk(chunk_bytes.as_numpy_array(), shape, dtype)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(cells)

    # ------------------------------------------------------------------ encode
    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        dtype = self.ndarray_dtype(chunk_spec)
        framed = encode_chunk(chunk_array.as_numpy_array(), dtype)
        return chunk_spec.prototype.buffer.from_bytes(framed)  # type: ignore[arg-type]


def encode_chunk(cells: np.ndarray, dtype: NDArray) -> npt.NDArray[np.uint8]:
    """Frame a chunk (any shape, any memory order) of cells of ``dtype``; C order on the wire.

    The input is never modified. Raises ValueError for more than 2**32 - 1 cells or a cell of
    more than 2**32 - 1 bytes, and the data type's cell errors for cells that do not fit.
    """
    # ravel(order="C") copies (object pointers only) when the chunk is F-ordered or strided.
    block, rows = gather_cells(cells.ravel(order="C").tolist(), dtype)
    # U32_MAX is read at call time, so 0.2.0's tests can lower it on this module.
    return encode_block(block, offsets_from_rows(rows), dtype, limit=U32_MAX)


def decode_chunk(raw: np.ndarray, shape: tuple[int, ...], dtype: NDArray) -> np.ndarray:
    """Unframe one chunk into an object array of ``shape`` holding read-only cells.

    Raises :class:`FramingError` (a ValueError) naming the chunk problem.
    """
    values, offsets = decode_block(raw, _chunk_size(shape), dtype, where=f"chunk of shape {shape}")
    return readonly_cells(values, offsets).reshape(shape)
