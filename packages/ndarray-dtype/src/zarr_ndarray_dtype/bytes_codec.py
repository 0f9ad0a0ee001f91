"""The core ``bytes`` codec for all-fixed ``ndarray`` patterns.

For an all-fixed pattern such as ``[3, 2]`` a chunk is the elements' little-endian C-order bytes
packed back to back in the chunk's C order: exactly what zarr's ``bytes`` codec (``endian:
"little"``) writes for a plain array of shape ``chunk_shape + (3, 2)``. zarr's own
``BytesCodec`` cannot do this for an object-backed data type (it reinterprets the object array's
pointers), so :mod:`zarr_ndarray_dtype._hooks` swaps in :class:`FixedCellBytesCodec` when a
``bytes`` codec meets an ``ndarray`` data type. It serializes to the very same metadata
(``{"name": "bytes", "configuration": {"endian": "little"}}``), so stores stay plain Zarr v3.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype._columns import FillCell
from zarr_ndarray_dtype._compat import endian_name
from zarr_ndarray_dtype._gather import gather_cells
from zarr_ndarray_dtype._views import cut_cells
from zarr_ndarray_dtype.blocks import Block, Cells, ColumnsBlock
from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.dtype import NDArray
from zarr_ndarray_dtype.errors import CellError, NDArrayDTypeError

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec

__all__ = ["FixedBlocks", "FixedCellBytesCodec", "check_bytes_codec"]


def check_bytes_codec(endian: object, dtype: Any) -> None:
    """Refuse, at array creation, a ``bytes`` codec that cannot serve this ``ndarray`` type."""
    if not dtype.pattern.is_fixed:
        raise NDArrayDTypeError(
            f"the 'bytes' codec cannot serve {dtype!r}: its pattern {dtype.pattern.to_json()} has "
            "variable dimensions, so elements have no fixed size. Use "
            "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() (pip install zarr-vlen-ndarray) for "
            "patterns [null, d1, ..., dk] (SPEC 1.6/2)."
        )
    name = endian_name(endian)
    if name == "big":
        raise NDArrayDTypeError(
            f"the 'bytes' codec with endian='big' cannot serve {dtype!r}: ndarray elements are "
            "little-endian by definition; use BytesCodec(endian='little') (SPEC 1.6/3)."
        )
    if name is None and dtype.item_dtype.itemsize > 1:
        raise NDArrayDTypeError(
            f"the 'bytes' codec without an endian setting cannot serve {dtype!r}, whose "
            f"{dtype.dtype} items are multi-byte; use BytesCodec(endian='little') (SPEC 1.6/3)."
        )


def _ndarray_dtype(spec: ArraySpec) -> NDArray:
    dtype = spec.dtype
    if not isinstance(dtype, NDArray):
        raise NDArrayDTypeError(
            f"FixedCellBytesCodec serves only the 'ndarray' data type with an all-fixed pattern, "
            f"not {dtype!r}; use zarr.codecs.BytesCodec for other data types."
        )
    return dtype


class FixedBlocks:
    """The block codec of all-fixed patterns (for the columnar engine and the object path): a
    chunk is its cells' little-endian bytes back to back."""

    name = "bytes"

    def decode(self, raw: Any, count: int, dtype: NDArray, where: str) -> Block:
        expected = count * dtype.fixed_nbytes
        if raw.size != expected:
            raise CellError(
                f"'bytes' {where} of {dtype!r} holds {raw.size} bytes, but {count} elements of "
                f"shape {dtype.pattern.empty_shape} need exactly {expected}; the chunk is "
                "truncated or corrupt (SPEC 1.6/5)."
            )
        values = np.frombuffer(raw.tobytes(), dtype=dtype.item_dtype)  # aligned, writable
        if values.dtype.kind == "b":
            try:
                check_bool_bytes(values)
            except CellError as exc:
                raise CellError(f"'bytes' {where} of {dtype!r}: {exc} (SPEC 1.6/6)") from exc
        offsets = np.arange(count + 1, dtype=np.int64) * dtype.pattern.fixed_items
        return ColumnsBlock(Cells(values, offsets, None))

    def encode(self, cells: Cells, dtype: NDArray, where: str) -> Any:
        return np.ascontiguousarray(cells.values).reshape(-1).view(np.uint8)


class FixedCellBytesCodec(BytesCodec):
    """``bytes`` (little-endian) over cells of an all-fixed ``ndarray`` pattern.

    Not re-decorated as a dataclass: it keeps ``BytesCodec``'s own ``__init__``, which parses
    ``endian`` differently across zarr releases.

    Promises inherited from ``BytesCodec`` that do not hold here are withdrawn:

    * ``is_fixed_size`` is False: zarr's fixed-size fast paths (e.g. the bulk shard read of
      ``FusedCodecPipeline`` of zarr >= 3.3) size chunks from ``dtype.item_size``, which an
      object-backed data type does not have; they fall back to reading the shard index.
    * ``compute_encoded_size`` ignores the in-memory byte length (object pointers) and returns
      the exact stored size, elements times the element's bytes.
    * ``evolve_from_array_spec`` is its own: it checks the data type and returns the codec
      unchanged, so the codec works whether or not the ``bytes`` hook is installed.
    """

    is_fixed_size = False
    block_codec = FixedBlocks()

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        check_bytes_codec(self.endian, _ndarray_dtype(array_spec))
        return self

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        return math.prod(_chunk_spec.shape) * _ndarray_dtype(_chunk_spec).fixed_nbytes

    def _encode_cells(self, chunk_array: Any, chunk_spec: Any) -> Any:
        dtype = _ndarray_dtype(chunk_spec)
        cells = np.asarray(chunk_array.as_ndarray_like(), dtype=object).ravel(order="C")
        fill = FillCell(dtype, chunk_spec.fill_value)  # a missing cell (None) is the fill cell
        encoded = FixedBlocks().encode(gather_cells(cells.tolist(), dtype, fill), dtype, "chunk")
        return chunk_spec.prototype.buffer.from_array_like(encoded)

    def _decode_cells(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        dtype = _ndarray_dtype(chunk_spec)
        shape = tuple(int(n) for n in chunk_spec.shape)
        raw = np.asarray(chunk_bytes.as_numpy_array()).reshape(-1).view(np.uint8)
        cells = FixedBlocks().decode(raw, math.prod(shape), dtype, "chunk").cells()
        out = cut_cells(cells.values, cells.offsets, None, dtype.pattern).reshape(shape)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(out)

    def _encode_sync(self, chunk_array: Any, chunk_spec: Any) -> Any:
        return self._encode_cells(chunk_array, chunk_spec)

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return self._decode_cells(chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_array: Any, chunk_spec: Any) -> Any:
        return self._encode_cells(chunk_array, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return self._decode_cells(chunk_bytes, chunk_spec)
