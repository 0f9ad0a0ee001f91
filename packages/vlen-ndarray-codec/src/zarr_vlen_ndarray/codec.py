"""The ``vlen-ndarray`` array -> bytes codec, ``{"name": "vlen-ndarray", "configuration": {}}``,
for ``ndarray`` elements of pattern ``[null, d1, ..., dk]``, its block codec and registration.

A chunk is framed exactly like zarr's ``vlen-bytes`` (:mod:`zarr_vlen_ndarray.framing`), each
payload an element's raw little-endian C-order bytes: byte-identical to ``bytes`` +
``vlen-bytes`` of ``cell.tobytes()``. :class:`VlenBlocks` is the one decoder and encoder of a
chunk, for the codec's object path and the columnar engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

# Module attributes of 0.2.0's codec module, kept importable: VLenBytes, ArrayBytesCodec (the
# codec base), NDArray, parse_named_configuration and U32_MAX (read at every encode, so 0.2.0's
# tests can lower it here).
from numcodecs.vlen import VLenBytes as VLenBytes
from zarr.abc.codec import ArrayBytesCodec as ArrayBytesCodec
from zarr.registry import register_codec

import zarr_ndarray_dtype
from zarr_ndarray_dtype import CellError, CodecMetadataError, NDArrayDType
from zarr_ndarray_dtype import NDArrayDType as NDArray  # noqa: F401  (0.2.0's name, kept)
from zarr_ndarray_dtype.blocks import Block, ColumnsBlock, FlatCells, check_bool_bytes, offsets_of
from zarr_ndarray_dtype.codecs import NDArrayBytesCodec
from zarr_vlen_ndarray._compat import parse_named_configuration as parse_named_configuration
from zarr_vlen_ndarray.framing import U32_MAX, FramingError, encode_frames, gather_into, scan_frames

if TYPE_CHECKING:
    ChunkCoords = tuple[int, ...]  # zarr's name of a chunk shape, 0.2.0's annotation

__all__ = ["CODEC_NAME", "CodecMetadataError", "VlenBlocks", "VlenNDArrayCodec", "register"]

#: The codec's name in zarr metadata (and in every chunk error message).
CODEC_NAME = "vlen-ndarray"


@dataclass
class _FramedBlock:
    """A checked chunk whose elements are located, not copied (a block of the engine)."""

    framed: npt.NDArray[np.uint8]
    starts: npt.NDArray[np.int64]  # where each element's length prefix is
    sizes: npt.NDArray[np.int64]  # the item count of each element
    item: np.dtype[Any]
    shapes: npt.NDArray[np.int64] | None = None  # the shapes follow from the sizes

    def copy(
        self, cells: npt.NDArray[np.intp] | slice, out: npt.NDArray[np.uint8], dst: Any
    ) -> None:
        nbytes = self.sizes[cells] * self.item.itemsize
        gather_into(self.framed, self.starts[cells], nbytes, out, dst)

    def cells(self) -> FlatCells:
        offsets = offsets_of(self.sizes)
        values = np.empty(int(offsets[-1]), dtype=self.item)
        self.copy(slice(None), values.view(np.uint8), 0)  # back to back
        return FlatCells(values, offsets, None)


class VlenBlocks:
    """The codec's block codec: framed chunk bytes <-> cells (pure numpy)."""

    name = CODEC_NAME

    def decode(
        self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArrayDType, where: str
    ) -> Block:
        """Check one chunk (``where`` names it, e.g. ``"chunk 'c/3'"``): its framing, that each
        element is a whole number of rows and, for bool elements, every byte is 0x00 or 0x01.
        The elements are located, not copied. Raises :class:`FramingError`."""
        raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
        fixed = dtype.shape[1:]
        rows = f"rows of {dtype.dtype} x {tuple(fixed)}" if fixed else f"{dtype.dtype} items"
        try:
            starts, nbytes = scan_frames(raw, count, dtype.fixed_nbytes, what=rows)
            sizes = np.floor_divide(nbytes, dtype.item_dtype.itemsize, out=nbytes)  # in place
            block = _FramedBlock(raw, starts, sizes, dtype.item_dtype)
            if dtype.item_dtype.kind != "b":
                return block
            cells = block.cells()  # bool bytes are checked on every decode, all at once
            check_bool_bytes(cells.values, nbytes=block.sizes)
        except (FramingError, CellError) as exc:
            rule = " (SPEC 2.5/6)" if isinstance(exc, CellError) else ""
            raise FramingError(
                f"cannot decode the {CODEC_NAME!r} {where} for {dtype!r}: {exc}{rule}"
            ) from exc
        return ColumnsBlock(cells)

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> npt.NDArray[np.uint8]:
        """Frame ``cells`` (valid cells of ``dtype``) as one chunk. Raises :class:`FramingError`
        when the element count or an element's byte length passes this module's ``U32_MAX``."""
        nbytes = cells.sizes * dtype.item_dtype.itemsize
        payload = np.ascontiguousarray(cells.values).reshape(-1).view(np.uint8)
        try:
            return encode_frames(payload, nbytes, limit=U32_MAX)
        except FramingError as exc:
            if (bad := exc.element) is None:
                what = f"a {where} of {nbytes.size} elements for {dtype!r}"
            else:
                rows, size = int(cells.sizes[bad]) // dtype.pattern.fixed_items, int(nbytes[bad])
                what = f"element {bad} (C order) of the {where}: its {rows} rows are {size} bytes"
            raise FramingError(f"the {CODEC_NAME!r} codec cannot encode {what}; {exc}") from exc


@dataclass(frozen=True)
class VlenNDArrayCodec(NDArrayBytesCodec):
    """Array -> bytes codec for ``ndarray`` elements with one leading variable dimension."""

    codec_name = CODEC_NAME
    block_codec: ClassVar[VlenBlocks] = VlenBlocks()

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
