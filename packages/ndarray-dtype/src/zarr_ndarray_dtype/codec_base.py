"""The zarr glue both ``ndarray`` array -> bytes codecs share (thin: no wire rule lives here).

``vlen-ndarray`` and ``ragged-ndarray`` are parameter-free, variable-length codecs of the
``ndarray`` data type. :class:`NDArrayBytesCodec` is all they do alike for zarr: strict metadata
(:mod:`zarr_ndarray_dtype.codec_json`), no array-spec evolution, no predictable encoded size,
and the object path: a chunk of cell objects gathered into columns and encoded by the codec's
:class:`~zarr_ndarray_dtype.blocks.BlockCodec`, and decoded by it and cut into read-only cells.
A codec subclasses it as a frozen dataclass with its block codec and its ``validate``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from zarr.abc.codec import ArrayBytesCodec

from zarr_ndarray_dtype import codec_json
from zarr_ndarray_dtype._columns import FillCell
from zarr_ndarray_dtype._gather import gather_cells
from zarr_ndarray_dtype._views import cut_cells
from zarr_ndarray_dtype.blocks import BlockCodec
from zarr_ndarray_dtype.dtype import NDArray

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.common import JSON

__all__ = ["SERVES_FIXED", "NDArrayBytesCodec", "serves_other_dtype"]


class NDArrayBytesCodec(ArrayBytesCodec):
    """Base of a parameter-free array -> bytes codec of ``ndarray`` elements."""

    #: The codec's metadata name, e.g. ``"vlen-ndarray"``.
    codec_name: ClassVar[str]
    #: Raised for bad metadata; ``not_object_error`` (when set) for metadata that is no object.
    metadata_error: ClassVar[type[ValueError]]
    not_object_error: ClassVar[type[ValueError] | None] = None
    #: The codec's chunk bytes <-> cells (what the columnar engine uses too).
    block_codec: ClassVar[BlockCodec]

    # A plain class attribute (an annotation would make it a dataclass field).
    is_fixed_size = False

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        codec_json.parse_codec_metadata(
            data, cls.codec_name, cls.metadata_error, cls.not_object_error
        )
        return cls()

    def to_dict(self) -> dict[str, JSON]:
        return {"name": self.codec_name, "configuration": {}}

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        return self

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        raise NotImplementedError(
            f"the {self.codec_name!r} codec is variable-length: the encoded size depends on "
            "the data"
        )

    @classmethod
    def decode_chunk(cls, raw: Any, shape: tuple[int, ...], dtype: NDArray) -> np.ndarray:
        """One chunk's bytes as an object array of ``shape`` holding read-only cells.

        Raises the codec's ValueError naming the problem for a chunk that breaks its rules.
        """
        flat = np.asarray(raw).reshape(-1).view(np.uint8)
        block = cls.block_codec.decode(flat, math.prod(shape), dtype, f"chunk of shape {shape}")
        cells = block.cells()
        return cut_cells(cells.values, cells.offsets, cells.shapes, dtype.pattern).reshape(shape)

    @classmethod
    def encode_chunk(cls, cells: np.ndarray, dtype: NDArray, fill_value: Any = None) -> Any:
        """The bytes the codec writes for an object array of cells (any shape and memory order;
        C order on the wire); never modifies the cells. A missing cell (``None``) is the fill
        cell (``fill_value``, default the data type's default), as SPEC 1.5 says for every
        codec."""
        fill = FillCell(dtype, dtype.default_scalar() if fill_value is None else fill_value)
        # ravel(order="C") copies (object pointers only) when the chunk is F-ordered or strided.
        flat = np.asarray(cells, dtype=object).ravel(order="C").tolist()
        return cls.block_codec.encode(gather_cells(flat, dtype, fill), dtype, "chunk")

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        dtype = self.ndarray_dtype(chunk_spec)
        shape = tuple(int(n) for n in chunk_spec.shape)
        cells = self.decode_chunk(chunk_bytes.as_numpy_array(), shape, dtype)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(cells)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        dtype = self.ndarray_dtype(chunk_spec)
        encoded = self.encode_chunk(chunk_array.as_numpy_array(), dtype, chunk_spec.fill_value)
        return chunk_spec.prototype.buffer.from_array_like(encoded)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return self._decode_sync(chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self._encode_sync(chunk_array, chunk_spec)

    def ndarray_dtype(self, chunk_spec: ArraySpec) -> NDArray:
        """The chunk's ``ndarray`` data type (``validate`` refuses any other at creation)."""
        dtype = chunk_spec.dtype
        if not isinstance(dtype, NDArray):
            raise TypeError(
                f"the {self.codec_name!r} codec got a chunk of data type {dtype!r}; it serves "
                "only the 'ndarray' data type."
            )
        return dtype


#: What serves an all-fixed ``ndarray`` pattern (for the codecs' error messages).
SERVES_FIXED = (
    "all-fixed patterns are served by the core 'bytes' codec: "
    "serializer=zarr.codecs.BytesCodec(endian='little')"
)


def serves_other_dtype(dtype: Any, ndarray_hint: str) -> str:
    """What serves a data type other than ``ndarray`` (for the codecs' error messages).

    ``ndarray_hint`` shows the ``ndarray`` data type the codec serves, e.g.
    ``"dtype=zarr_ndarray_dtype.NDArray(dtype=..., shape=(None, None))"``.
    """
    name = str(getattr(dtype, "_zarr_v3_name", type(dtype).__name__))
    if name in {"variable_length_bytes", "bytes"}:
        return "raw variable-length bytes are served by zarr's 'vlen-bytes' codec"
    if name in {"string", "variable_length_utf8"}:
        return "strings are served by zarr's 'vlen-utf8' codec"
    return (
        "fixed-size data types are served by the core 'bytes' codec; for ragged ndarray "
        f"elements use {ndarray_hint}"
    )
