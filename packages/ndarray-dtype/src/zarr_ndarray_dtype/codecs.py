"""The zarr glue of the ``ndarray`` serializers (the codec author's module): the strict codec
JSON (SPEC 2.2, 5.1), which codecs an array may have (SPEC 1.6), :class:`NDArrayBytesCodec` (what
both codecs do alike for zarr, the object path through their block codec included) and zarr's
``bytes`` over all-fixed cells."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec
from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype._columns import cut, gather
from zarr_ndarray_dtype._compat import endian_name
from zarr_ndarray_dtype.blocks import Block, BlockCodec, ColumnsBlock, FlatCells
from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.dtype import FillCell, NDArrayDType
from zarr_ndarray_dtype.errors import (
    CellError,
    CodecMetadataError,
    CodecMetadataTypeError,
    MetadataError,
    NDArrayDTypeError,
)
from zarr_ndarray_dtype.pattern import ShapePattern

if TYPE_CHECKING:
    from typing import Self

    # zarr declares the chunk spec of its codec protocol nowhere public; an annotation only.
    from zarr.abc.buffer import Buffer, NDBuffer
    from zarr.core.array_spec import ArraySpec  # noqa: TID251
    from zarr.types import JSON

# Also importable: the codec names, check_bytes_codec, FixedCellBytesCodec and FixedBlocks
# (zarr_ndarray_dtype's hooks use them).
__all__ = ["NDArrayBytesCodec", "check_codecs", "parse_codec_metadata", "serializer_name"]

BYTES, VLEN, RAGGED = "bytes", "vlen-ndarray", "ragged-ndarray"
SHARDING, TRANSPOSE = "sharding_indexed", "transpose"
#: The section of SPEC.md with each codec's metadata rules (1: the object, 2: its configuration).
_SECTIONS = {VLEN: "2.2", RAGGED: "5.1"}


# ------------------------------------------------------------------------------ the rules


def parse_codec_metadata(data: object, name: str) -> None:
    """Refuse metadata of the parameter-free codec ``name`` other than ``{"name": name,
    "configuration": {}}`` (the configuration optional; SPEC 2.2, 5.1): CodecMetadataError."""
    section = _SECTIONS.get(name, "?")
    form = f'{{"name": "{name}", "configuration": {{}}}}'
    if not isinstance(data, Mapping):
        raise CodecMetadataTypeError(
            f"codec metadata {data!r} is not a JSON object; expected {form} (SPEC {section}/1)."
        )
    extra = sorted(set(data) - {"name", "configuration"})
    if extra or data.get("name") != name:
        problem = f"has unexpected keys {extra}" if extra else f"does not name the {name!r} codec"
        raise CodecMetadataError(
            f"codec metadata {dict(data)!r} {problem}; expected {form}, the configuration "
            f"optional (SPEC {section}/1)."
        )
    config = data.get("configuration", {})
    if not isinstance(config, Mapping) or config:
        problem = "is not a JSON object" if not isinstance(config, Mapping) else "is not empty"
        raise CodecMetadataError(
            f"the {name!r} codec configuration {config!r} {problem}: the codec takes no "
            "parameters (the element dtype and shape belong to the 'ndarray' data type); use "
            f"{{}} or omit it (SPEC {section}/2)."
        )


def serializer_name(pattern: ShapePattern) -> str:
    """The array -> bytes codec a writer uses for ``pattern`` (SPEC 1.6's table)."""
    if pattern.is_fixed:
        return BYTES
    return VLEN if pattern.is_leading_variable else RAGGED


def check_codecs(codecs: Iterable[Any], dtype: NDArrayDType) -> None:
    """Refuse a chain of codec objects, sharding's inner chain included, that cannot serve
    ``dtype`` (SPEC 1.6): another serializer or array -> array codec, or one of ours that does
    not serve the pattern."""
    for codec in codecs:
        try:
            name = str(codec.to_dict()["name"])
        except Exception:  # a codec that cannot say: its class name still identifies it
            name = type(codec).__name__
        if isinstance(codec, ArrayArrayCodec) and name != TRANSPOSE:
            raise MetadataError(
                f"the array -> array codec {name!r} cannot serve {dtype!r}: it computes on "
                "numbers, and the elements of an ndarray array are arrays; the only array -> "
                "array codec for this data type is 'transpose' (SPEC 1.6/4)."
            )
        if not isinstance(codec, ArrayBytesCodec):
            continue
        if name == SHARDING and hasattr(codec, "codecs"):
            check_codecs(codec.codecs, dtype)
        elif isinstance(codec, NDArrayBytesCodec):  # its own check (zarr 3.1 asks no inner codec)
            validate: Any = codec.validate  # annotated loosely by our codecs, not by zarr
            validate(shape=(), dtype=dtype, chunk_grid=None)
        elif name == BYTES:
            check_bytes_codec(getattr(codec, "endian", None), dtype)
        elif name not in (VLEN, RAGGED):
            raise MetadataError(
                f"the {name!r} codec cannot serve {dtype!r}: an ndarray array is serialized "
                f"by 'bytes', 'vlen-ndarray' or 'ragged-ndarray', its pattern {dtype.pattern} by "
                f"{serializer_name(dtype.pattern)!r}; to read the elements as raw bytes instead, "
                "downgrade the store to variable_length_bytes (SPEC 2.6) (SPEC 1.6/1)."
            )


def install_hint(dist: str) -> str:
    """How to install a codec package: its README's line (it is not on PyPI, nor the data type)."""
    folder = f"./packages/{dist.removeprefix('zarr-')}-codec"
    return f"python -m pip install ./packages/ndarray-dtype {folder} ({dist} once released)"


def check_bytes_codec(endian: object, dtype: Any) -> None:
    """Refuse a ``bytes`` codec that cannot serve this ``ndarray`` type."""
    if not dtype.pattern.is_fixed:
        raise NDArrayDTypeError(
            f"the 'bytes' codec cannot serve {dtype!r}: its pattern {dtype.pattern} has variable "
            "dimensions, so elements have no fixed size. Use serializer=zarr_vlen_ndarray."
            f"VlenNDArrayCodec() ({install_hint('zarr-vlen-ndarray')}) for patterns "
            "[null, d1, ..., dk] (SPEC 1.6/2)."
        )
    name = endian_name(endian)
    if name == "big" or (name is None and dtype.item_dtype.itemsize > 1):
        what = "with endian='big'" if name == "big" else "without an endian setting"
        raise NDArrayDTypeError(
            f"the 'bytes' codec {what} cannot serve {dtype!r}: ndarray elements are "
            "little-endian by definition; use BytesCodec(endian='little') (SPEC 1.6/3)."
        )


# ----------------------------------------------------------------- the codecs' zarr glue


class _ObjectPath:
    """zarr's object path of a serializer of the data type: cell objects <-> its block codec."""

    block_codec: ClassVar[BlockCodec]

    @classmethod
    def decode_chunk(cls, raw: Any, shape: tuple[int, ...], dtype: NDArrayDType) -> np.ndarray:
        """One chunk's bytes as an object array of ``shape`` holding read-only cells."""
        shape = tuple(int(n) for n in shape)
        flat = np.asarray(raw).reshape(-1).view(np.uint8)
        cells = cls.block_codec.decode(flat, math.prod(shape), dtype, f"chunk of shape {shape}")
        return cut(*cells.cells(), dtype.pattern).reshape(shape)

    @classmethod
    def encode_chunk(cls, cells: np.ndarray, dtype: NDArrayDType, fill_value: Any = None) -> Any:
        """The bytes the codec writes for an object array of cells (C order on the wire; a
        missing cell, ``None``, is the fill cell: SPEC 1.5)."""
        fill = FillCell(dtype, dtype.default_scalar() if fill_value is None else fill_value)
        flat = np.asarray(cells, dtype=object).ravel(order="C").tolist()
        return cls.block_codec.encode(gather(flat, dtype, fill), dtype, "chunk")

    def _chunk_dtype(self, spec: ArraySpec) -> NDArrayDType:
        if not isinstance(spec.dtype, NDArrayDType):
            raise CodecMetadataTypeError(
                f"{type(self).__name__} got a chunk of data type {spec.dtype!r}; it serves only "
                "the 'ndarray' data type."
            )
        return spec.dtype

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        dtype = self._chunk_dtype(chunk_spec)
        cells = self.decode_chunk(chunk_bytes.as_numpy_array(), chunk_spec.shape, dtype)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(cells)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        dtype = self._chunk_dtype(chunk_spec)
        encoded = self.encode_chunk(chunk_array.as_numpy_array(), dtype, chunk_spec.fill_value)
        return chunk_spec.prototype.buffer.from_array_like(encoded)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return self._decode_sync(chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self._encode_sync(chunk_array, chunk_spec)


class NDArrayBytesCodec(_ObjectPath, ArrayBytesCodec):
    """Base of a parameter-free serializer of ``ndarray`` elements: a subclass (a frozen
    dataclass) gives its ``codec_name``, ``block_codec`` and ``validate``."""

    codec_name: ClassVar[str]
    is_fixed_size = False  # a plain class attribute (an annotation would make it a field)

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        parse_codec_metadata(data, cls.codec_name)
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
    def serves_instead(cls, dtype: Any) -> str:
        """What serves a data type or pattern this codec does not (for error messages; the
        sibling codec is named, never imported)."""
        if isinstance(dtype, NDArrayDType) and dtype.pattern.is_fixed:
            return "all-fixed patterns are served by the 'bytes' codec: BytesCodec(endian='little')"
        if isinstance(dtype, NDArrayDType):
            what = "two or more variable dimensions (each element needs a stored shape)"
            if not dtype.pattern.needs_shapes:
                what = "a single variable dimension outside the leading position"
            return (
                f"{what} is served by the 'ragged-ndarray' codec: "
                f"{install_hint('zarr-ragged-ndarray')}, and pass "
                "serializer=zarr_ragged_ndarray.RaggedNDArrayCodec() (or omit it)"
            )
        name = str(getattr(dtype, "_zarr_v3_name", type(dtype).__name__))
        if name in {"variable_length_bytes", "bytes", "string", "variable_length_utf8"}:
            codec = "vlen-bytes" if "bytes" in name else "vlen-utf8"
            return f"variable-length bytes and strings are served by zarr's '{codec}' codec"
        return (
            "fixed-size data types are served by the core 'bytes' codec; for ragged elements "
            "pass dtype=zarr_ndarray_dtype.NDArrayDType(dtype=..., shape=(None, ...))"
        )


# ------------------------------------------------------------------- all-fixed patterns


class FixedBlocks:
    """The block codec of all-fixed patterns: the cells' little-endian bytes back to back."""

    name = BYTES

    def decode(self, raw: Any, count: int, dtype: NDArrayDType, where: str) -> Block:
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
        return ColumnsBlock(FlatCells(values, offsets, None))

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> Any:
        return np.ascontiguousarray(cells.values).reshape(-1).view(np.uint8)


class FixedCellBytesCodec(_ObjectPath, BytesCodec):
    """``bytes`` (little-endian) over cells of an all-fixed pattern: the hooks swap it in for
    zarr's, which would reinterpret the object array's pointers; the metadata is the same. Not
    ``is_fixed_size`` (zarr would size chunks from an ``item_size`` the type lacks)."""

    is_fixed_size = False
    block_codec = FixedBlocks()

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        check_bytes_codec(self.endian, self._chunk_dtype(array_spec))
        return self

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        return math.prod(_chunk_spec.shape) * self._chunk_dtype(_chunk_spec).fixed_nbytes
