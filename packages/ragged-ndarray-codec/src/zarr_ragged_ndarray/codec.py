"""The ``ragged-ndarray`` array -> bytes codec (the glue between zarr and the pure layers).

Metadata: ``{"name": "ragged-ndarray", "configuration": {}}`` (the configuration may be omitted;
when present it must be empty). The codec serves the ``ndarray`` data type with every shape
pattern that has at least one ``null``: ``[2, null]``, ``[null, null]``, ``[null, 3, null]`` and
also ``[null, d1, ..., dk]`` (where ``vlen-ndarray`` is the default).

A chunk is laid out as :mod:`zarr_ragged_ndarray.layout` describes: the element count, a table
of every element's variable extents, zero padding to the values' alignment, then the values.
Elements are in the chunk's C order. Encoding gathers every cell with one ``np.concatenate``;
decoding is a vectorized computation over the extent table and cuts the values (a view of the
chunk) into read-only cells.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray, codec_json
from zarr_ndarray_dtype.codec_base import SERVES_FIXED, NDArrayBytesCodec, serves_other_dtype
from zarr_ragged_ndarray.cells import (
    cut_cells,
    fill_cell,
    full_shapes,
    gather_cells,
    variable_extents,
)
from zarr_ragged_ndarray.layout import RaggedLayoutError, decode_layout, encode_layout

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer

__all__ = [
    "CODEC_NAME",
    "CodecMetadataError",
    "RaggedNDArrayCodec",
    "decode_chunk",
    "decode_values",
    "encode_chunk",
    "encode_values",
    "parse_codec_metadata",
]

CODEC_NAME = "ragged-ndarray"


class CodecMetadataError(ValueError):
    """The codec's JSON metadata is not ``{"name": "ragged-ndarray", "configuration": {}}``."""


def parse_codec_metadata(data: object) -> None:
    """Check codec metadata strictly: name ``ragged-ndarray``, optional empty configuration."""
    codec_json.parse_codec_metadata(data, CODEC_NAME, CodecMetadataError)


def _serves_instead(dtype: Any) -> str:
    """What serves a data type this codec does not (for error messages)."""
    if isinstance(dtype, NDArray):
        return SERVES_FIXED
    return serves_other_dtype(
        dtype, "dtype=zarr_ndarray_dtype.NDArray(dtype=..., shape=(None, None))"
    )


@dataclass(frozen=True)
class RaggedNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements of any pattern with a variable dimension."""

    codec_name = CODEC_NAME
    metadata_error = CodecMetadataError

    # dtype / chunk_grid are annotated loosely: their types differ across zarr releases.
    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        """Refuse, at array creation, anything but an ``ndarray`` pattern with a ``null``."""
        if not isinstance(dtype, NDArray) or dtype.pattern.is_fixed:
            pattern = (
                f" with the pattern {json.dumps(dtype.pattern.to_json())}"
                if isinstance(dtype, NDArray)
                else ""
            )
            raise ValueError(
                f"the {CODEC_NAME!r} codec serves only the 'ndarray' data type with a shape "
                f"pattern that has at least one variable dimension (null), not {dtype!r}"
                f"{pattern}: {_serves_instead(dtype)}."
            )

    # ------------------------------------------------------------------ decode
    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        dtype = self.ndarray_dtype(chunk_spec)
        cells = decode_chunk(chunk_bytes.as_numpy_array(), tuple(chunk_spec.shape), dtype)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(cells)

    # ------------------------------------------------------------------ encode
    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        dtype = self.ndarray_dtype(chunk_spec)
        fill = fill_cell(dtype, chunk_spec.fill_value)
        encoded = encode_chunk(chunk_array.as_numpy_array(), dtype, fill)
        return chunk_spec.prototype.buffer.from_bytes(encoded)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- columnar chunk form


def encode_values(
    values: np.ndarray, shapes: npt.NDArray[np.int64], dtype: NDArray
) -> npt.NDArray[np.uint8]:
    """One chunk from flat ``values`` (element dtype, LE) and the ``(count, ndim)`` shapes."""
    extents = variable_extents(shapes, dtype)
    raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    return encode_layout(extents, raw, dtype.item_dtype.itemsize)


def decode_values(
    raw: npt.NDArray[np.uint8], count: int, dtype: NDArray, where: str
) -> tuple[np.ndarray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(values, shapes, offsets)`` of one checked chunk of ``count`` elements.

    ``values`` is flat, of the element dtype (a view of ``raw`` when aligned); cell ``i`` is
    ``values[offsets[i]:offsets[i + 1]]`` shaped ``shapes[i]``. Raises
    :class:`~zarr_ragged_ndarray.layout.RaggedLayoutError` naming the problem.
    """
    item = dtype.item_dtype
    pattern = dtype.pattern
    layout = decode_layout(
        raw.reshape(-1).view(np.uint8),
        count,
        len(pattern.variable_axes),
        item.itemsize,
        pattern.fixed_items,
        where=where,
    )
    if item.kind == "b" and layout.values.size and int(np.max(layout.values)) > 1:
        at = int(np.flatnonzero(layout.values > 1)[0])
        element = int(np.searchsorted(layout.offsets, at, side="right")) - 1
        raise RaggedLayoutError(
            f"cannot decode {where}: element {element} (C order) holds the byte "
            f"0x{int(layout.values[at]):02x}, but bool items must be 0x00 or 0x01 (the chunk is "
            "corrupt or was written with another element dtype)"
        )
    return layout.values.view(item), full_shapes(layout.extents, dtype), layout.offsets


# ------------------------------------------------------------------------------ object form


def encode_chunk(
    cells: np.ndarray, dtype: NDArray, fill: np.ndarray | None = None
) -> npt.NDArray[np.uint8]:
    """Encode a chunk (any shape, any memory order) of cells of ``dtype``; C order on the wire.

    ``None`` cells encode as ``fill`` (default: the empty element). The input is never modified.
    Raises :class:`~zarr_ragged_ndarray.layout.RaggedLayoutError` for a count or extent beyond
    u32le and the data type's cell errors for cells that do not fit.
    """
    # ravel(order="C") copies (object pointers only) when the chunk is F-ordered or strided.
    flat = np.asarray(cells, dtype=object).ravel(order="C")
    values, shapes = gather_cells(flat.tolist(), dtype, fill)
    return encode_values(values, shapes, dtype)


def decode_chunk(raw: np.ndarray, shape: tuple[int, ...], dtype: NDArray) -> np.ndarray:
    """Decode one chunk into an object array of ``shape`` holding read-only cells.

    Raises :class:`~zarr_ragged_ndarray.layout.RaggedLayoutError` (a ValueError) naming the
    problem.
    """
    where = f"a {CODEC_NAME!r} chunk of shape {shape} for {dtype!r}"
    values, shapes, offsets = decode_values(raw, math.prod(shape), dtype, where)
    return cut_cells(values, shapes, offsets, dtype).reshape(shape)
