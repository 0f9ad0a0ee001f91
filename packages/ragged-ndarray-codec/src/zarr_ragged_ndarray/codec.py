"""The ``ragged-ndarray`` array -> bytes codec: ``{"name": "ragged-ndarray", "configuration":
{}}`` for ``ndarray`` elements of every pattern with a ``null`` (``[2, null]``,
``[null, null]``, ...; ``vlen-ndarray`` is the default of ``[null, d1..dk]``).

A chunk is laid out as :mod:`zarr_ragged_ndarray.layout` says; :class:`RaggedBlocks`, the
codec's block codec, decodes it with one vectorized pass over the extent table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import NDArray, codec_json
from zarr_ndarray_dtype.blocks import Block, Cells, ColumnsBlock, cell_shapes, needs_shapes
from zarr_ndarray_dtype.codec_base import SERVES_FIXED, NDArrayBytesCodec, serves_other_dtype
from zarr_ragged_ndarray.layout import RaggedLayoutError, decode_layout, encode_layout

__all__ = [
    "CODEC_NAME",
    "CodecMetadataError",
    "RaggedBlocks",
    "RaggedNDArrayCodec",
    "decode_values",
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


# ---------------------------------------------------------------------- columnar chunk form


def encode_values(
    values: np.ndarray, shapes: npt.NDArray[np.int64], dtype: NDArray
) -> npt.NDArray[np.uint8]:
    """One chunk from flat ``values`` (element dtype, LE) and the ``(count, ndim)`` shapes."""
    extents = shapes[:, list(dtype.pattern.variable_axes)]
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
            "corrupt or was written with another element dtype) (SPEC 5.4/7)"
        )
    return layout.values.view(item), _full_shapes(layout.extents, dtype), layout.offsets


class RaggedBlocks:
    """The codec's block codec: :func:`decode_values` and :func:`encode_values` on cells."""

    name = CODEC_NAME

    def decode(self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArray, where: str) -> Block:
        values, shapes, offsets = decode_values(
            raw, count, dtype, f"the {CODEC_NAME!r} {where} for {dtype!r}"
        )
        return ColumnsBlock(Cells(values, offsets, shapes if needs_shapes(dtype.pattern) else None))

    def encode(self, cells: Cells, dtype: NDArray, where: str) -> npt.NDArray[np.uint8]:
        return encode_values(cells.values, cell_shapes(cells, dtype.pattern), dtype)


def _full_shapes(extents: npt.NDArray[np.int64], dtype: NDArray) -> npt.NDArray[np.int64]:
    """The ``(count, ndim)`` full shapes from the variable extents and the pattern's fixed ones."""
    pattern = dtype.pattern
    shapes = np.empty((extents.shape[0], pattern.ndim), dtype=np.int64)
    shapes[:, list(pattern.variable_axes)] = extents
    for axis, extent in enumerate(pattern.dims):
        if extent is not None:
            shapes[:, axis] = extent
    return shapes


@dataclass(frozen=True)
class RaggedNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements of any pattern with a variable dimension."""

    codec_name = CODEC_NAME
    metadata_error = CodecMetadataError
    block_codec: ClassVar[RaggedBlocks] = RaggedBlocks()

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
                f"{pattern}: {_serves_instead(dtype)} (SPEC 5.2/1)."
            )
