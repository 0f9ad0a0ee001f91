"""The ``ragged-ndarray`` array -> bytes codec, ``{"name": "ragged-ndarray", "configuration":
{}}``, for ``ndarray`` elements of every pattern with a ``null`` (``[2, null]``, ``[null, null]``,
...; ``vlen-ndarray`` is the default of ``[null, d1..dk]``), its block codec and registration.

A chunk is laid out as :mod:`zarr_ragged_ndarray.layout` says; :class:`RaggedBlocks` decodes it
with one vectorized pass over the extent table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from zarr.registry import register_codec

import zarr_ndarray_dtype
from zarr_ndarray_dtype import CellError, CodecMetadataError, NDArrayDType
from zarr_ndarray_dtype.blocks import (
    ColumnsBlock,
    FlatCells,
    cell_shapes,
    check_bool_bytes,
)
from zarr_ndarray_dtype.codecs import NDArrayBytesCodec
from zarr_ragged_ndarray.layout import RaggedLayoutError, decode_layout, encode_layout

__all__ = ["CODEC_NAME", "CodecMetadataError", "RaggedBlocks", "RaggedNDArrayCodec", "register"]

CODEC_NAME = "ragged-ndarray"


class RaggedBlocks:
    """The codec's block codec: chunk bytes <-> :class:`FlatCells` through the layout."""

    name = CODEC_NAME

    def decode(
        self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArrayDType, where: str
    ) -> ColumnsBlock:
        """Check one chunk of ``count`` elements; its cells, values a view of ``raw`` when it
        is aligned. Raises :class:`~zarr_ragged_ndarray.layout.RaggedLayoutError`."""
        item, pattern, axes = dtype.item_dtype, dtype.pattern, list(dtype.pattern.variable_axes)
        raw = raw.reshape(-1).view(np.uint8)
        try:
            extents, offsets, values = decode_layout(
                raw, count, len(axes), item.itemsize, pattern.fixed_items
            )
            if item.kind == "b":
                check_bool_bytes(values, nbytes=np.diff(offsets))
        except (RaggedLayoutError, CellError) as exc:
            rule = " (SPEC 5.4/7)" if isinstance(exc, CellError) else ""
            raise RaggedLayoutError(
                f"cannot decode the {CODEC_NAME!r} {where} for {dtype!r}: {exc}{rule}"
            ) from exc
        shapes = None
        if pattern.needs_shapes:  # the full shapes: the variable extents and the fixed ones
            shapes = np.tile(np.array(pattern.empty_shape, dtype=np.int64), (count, 1))
            shapes[:, axes] = extents
        return ColumnsBlock(FlatCells(values.view(item), offsets, shapes))

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> npt.NDArray[np.uint8]:
        """One chunk from cells: the table of their variable extents, then their values."""
        extents = cell_shapes(cells, dtype.pattern)[:, list(dtype.pattern.variable_axes)]
        raw = np.ascontiguousarray(cells.values).reshape(-1).view(np.uint8)
        return encode_layout(extents, raw, dtype.item_dtype.itemsize)


@dataclass(frozen=True)
class RaggedNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements of any pattern with a variable dimension."""

    codec_name = CODEC_NAME
    block_codec: ClassVar[RaggedBlocks] = RaggedBlocks()

    # dtype / chunk_grid are annotated loosely: their types differ across zarr releases.
    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        """Refuse, at array creation, anything but an ``ndarray`` pattern with a ``null``."""
        if not isinstance(dtype, NDArrayDType) or dtype.pattern.is_fixed:
            pattern = (
                f" with the pattern {json.dumps(dtype.pattern.to_json())}"
                if isinstance(dtype, NDArrayDType)
                else ""
            )
            raise ValueError(
                f"the {CODEC_NAME!r} codec serves only the 'ndarray' data type with a shape "
                f"pattern that has at least one variable dimension (null), not {dtype!r}"
                f"{pattern}: {self.serves_instead(dtype)} (SPEC 5.2/1)."
            )


def register() -> None:
    """Register ``ragged-ndarray`` and ``ndarray`` with zarr; calling it again is a no-op."""
    zarr_ndarray_dtype.register()
    register_codec(CODEC_NAME, RaggedNDArrayCodec)
