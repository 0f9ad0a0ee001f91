"""The ``ndarray`` data type as a zarr-python ``ZDType`` (Zarr v3 only), e.g.
``{"name": "ndarray", "configuration": {"dtype": "float32", "shape": [null, 2]}}``: its JSON
(SPEC 1.3), its fill value (SPEC 1.5) and the immutable fill cell zarr holds. Elements are
ndarrays of ``dtype`` matching ``shape`` (``null``: a variable extent), in object arrays."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast, overload

import numpy as np
import numpy.typing as npt
from zarr.dtype import ZDType

from zarr_ndarray_dtype._compat import ClaimedJSONError, DataTypeValidationError
from zarr_ndarray_dtype.blocks import ColumnsBlock, FlatCells
from zarr_ndarray_dtype.cells import check_bool_bytes, coerce_cell, convert, unbox
from zarr_ndarray_dtype.errors import (
    CellError,
    CellTypeError,
    ElementDTypeError,
    FillValueError,
    FillValueTypeError,
    MetadataError,
    NDArrayDTypeError,
    ShapePatternError,
    deprecated,
)
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern, parse_element_dtype

if TYPE_CHECKING:
    from typing import Self

    # zarr declares the V3 spec type nowhere public; an annotation only.
    from zarr.core.dtype.common import DTypeSpec_V3  # noqa: TID251
    from zarr.dtype import DTypeSpec_V2
    from zarr.types import JSON, DTypeJSON, ZarrFormat

# Also importable: claims_ndarray, encode_fill, decode_fill (the tool reads documents with them).
__all__ = ["DTYPE_NAME", "NDArrayDType"]

DTYPE_NAME: Literal["ndarray"] = "ndarray"

_V2_MESSAGE = (
    "'ndarray' is a Zarr v3-only data type: it is defined for Zarr format 3 only; create the "
    "array with zarr_format=3 (the default)."
)


def claims_ndarray(data: object) -> bool:
    """Whether JSON names this data type: its name, bare or as an object's, or 0.1.x's spelling."""
    named = isinstance(data, Mapping) and data.get("name") == DTYPE_NAME
    return data == DTYPE_NAME or named or _legacy_spelling(data) is not None


def _legacy_spelling(data: object) -> str | None:
    """How to rewrite the data type zarr-vlen-ndarray 0.1.x wrote (SPEC 2.6), else None."""
    if not isinstance(data, Mapping) or data.get("name") != "vlen-ndarray":
        return None
    config = data.get("configuration")
    if not isinstance(config, Mapping) or "inner_shape" not in config:
        return None
    inner = config["inner_shape"]
    shape = json.dumps([None, *inner]) if isinstance(inner, list) else "[null, d1, ..., dk]"
    return (
        "; it is the zarr-vlen-ndarray 0.1.x spelling: rewrite it as "
        f'{{"name": "{DTYPE_NAME}", "configuration": {{"dtype": {json.dumps(config.get("dtype"))}, '
        f'"shape": {shape}}}}} (SPEC 2.6; the chunks are unchanged)'
    )


@functools.cache
def _refusal(kind: type[NDArrayDTypeError]) -> type[NDArrayDTypeError]:
    """``kind`` that is zarr's ``DataTypeValidationError`` too (the ``ZDType`` contract), of the
    sort zarr's registry passes on rather than try the next data type (zarr >= 3.4)."""
    reduce = {"__reduce__": lambda exc: (kind, exc.args)}  # unpickles as ``kind``
    return cast("type[NDArrayDTypeError]", type(kind.__name__, (kind, ClaimedJSONError), reduce))


# ------------------------------------------------------------------------------ fill values


def encode_fill(payload: bytes) -> str:
    """The JSON fill value of an element's little-endian C-order bytes: padded base64."""
    return base64.b64encode(payload).decode("ascii")


def _element_shape(nbytes: int, pattern: ShapePattern, itemsize: int) -> tuple[int, ...] | str:
    """The shape of the element stored in ``nbytes`` bytes, or why no element has that size."""
    if nbytes % itemsize:
        return f"{nbytes} bytes, not a whole number of {itemsize}-byte items."
    if pattern.needs_shapes and not nbytes:
        return pattern.empty_shape
    try:
        return pattern.shape_for_items(nbytes // itemsize)
    except ShapePatternError as exc:
        return f"{nbytes} bytes: {exc}"


def decode_fill(
    text: object, pattern: ShapePattern, itemsize: int
) -> tuple[bytes, tuple[int, ...]]:
    """The bytes and shape of the element a JSON fill value encodes, checked (SPEC 1.5)."""
    if not isinstance(text, str):
        raise FillValueTypeError(
            f"Invalid type: {text!r}. Expected a base64-encoded string: fill_value {text!r} is a "
            f"{type(text).__name__}; an ndarray fill value must be the base64 string of the "
            'element\'s bytes ("" for the empty element) (SPEC 1.5/1).'
        )
    try:
        payload = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        payload = None
    if payload is None or encode_fill(payload) != text:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not canonical padded base64 (RFC 4648: padded, no "
            "unused bits set); write the standard base64 of the element's little-endian bytes, "
            'e.g. "" for the empty element (SPEC 1.5/2).'
        )
    shape = _element_shape(len(payload), pattern, itemsize)
    if isinstance(shape, str):
        fix = 'The only fill value allowed is ""' if pattern.needs_shapes else "Encode one element"
        raise FillValueError(f"fill_value {text[:40]!r} decodes to {shape} {fix} (SPEC 1.5/3).")
    return payload, shape


class _FillCell(np.ndarray):  # type: ignore[type-arg]
    """An immutable fill cell whose ``==`` compares whole cells to one ``bool``, as zarr
    truth-tests each comparison of a chunk's cells with the fill (a subclass's ``__eq__`` wins on
    either side). Equal: the same shape and, converted as a write would, the same bytes (SPEC
    1.5, as :meth:`FillCell.matches`)."""

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        if type(other) is np.ndarray and other.shape != self.shape:
            return False  # fast path: zarr compares every cell of a chunk with the fill
        try:
            arr = np.asarray(unbox(other))
            if arr.dtype == object and arr.size:  # zarr hands a scalar write over so
                arr = np.asarray(arr.tolist())
            if arr.shape != self.shape:
                return False
            return not self.size or convert(arr, self.dtype, "cell").tobytes() == self.tobytes()
        except (TypeError, ValueError):  # not an array, or values a write would refuse
            return False

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.dtype.str, self.shape, self.tobytes()))

    def __reduce__(self) -> Any:
        return (frozen_cell, (self.tobytes(), self.dtype.str, self.shape))


class _FillScalar(np.ndarray):  # type: ignore[type-arg]
    """A 0-d object array holding one cell, so numpy broadcasts the cell as a single scalar."""

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return bool(self[()] == unbox(other))

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self[()])

    def __reduce__(self) -> Any:
        return (fill_scalar, (self[()],))


def frozen_cell(data: bytes, dtype: str | np.dtype[Any], shape: tuple[int, ...]) -> _FillCell:
    """An immutable fill cell over ``data`` (backed by ``bytes``: never writable)."""
    return np.frombuffer(bytes(data), dtype=np.dtype(dtype)).reshape(shape).view(_FillCell)


def fill_scalar(cell: np.ndarray) -> np.ndarray:
    """Wrap ``cell`` (made immutable) in a read-only 0-d object array that acts as one scalar."""
    if not isinstance(cell, _FillCell) or cell.flags.writeable:
        cell = frozen_cell(np.ascontiguousarray(cell).tobytes(), cell.dtype, cell.shape)
    owner = np.empty((), dtype=object)
    owner[()] = cell
    owner.flags.writeable = False
    return owner.view(_FillScalar)


@functools.lru_cache(maxsize=256)
def _default_fill(item: str, dims: tuple[int | None, ...]) -> np.ndarray:
    shape = ShapePattern(dims).empty_shape
    return fill_scalar(np.zeros(shape, dtype=item))


class FillCell:
    """The fill cell of an array: its items and shape, and which cells equal it (SPEC 1.5: the
    same shape and the same bytes, so NaN equals only the same NaN and -0.0 is not 0.0; a chunk
    of them may be left unwritten)."""

    def __init__(self, dtype: NDArrayDType, fill_value: Any) -> None:
        cell = dtype.cast_scalar(fill_value)[()]
        self.shape: tuple[int, ...] = tuple(int(n) for n in cell.shape)
        self.items = np.ascontiguousarray(cell, dtype=dtype.item_dtype).reshape(-1)
        self.size = int(self.items.size)

    def cells(self, count: int, with_shapes: bool) -> FlatCells:
        """``count`` fill cells."""
        shapes = np.tile(np.array(self.shape, np.int64), (count, 1)) if with_shapes else None
        offsets = np.arange(count + 1, dtype=np.int64) * self.size
        return FlatCells(np.tile(self.items, count), offsets, shapes)

    def matches(self, cells: FlatCells) -> npt.NDArray[np.bool_]:
        """Which of ``cells`` equal the fill cell."""
        same = cells.sizes == self.size
        if cells.shapes is not None:
            same &= (cells.shapes == np.array(self.shape, np.int64)).all(axis=1)
        if self.size and same.any():  # the same bytes, compared as words of up to 8 bytes
            at, word = np.flatnonzero(same), np.dtype(f"u{min(self.items.itemsize, 8)}")
            want = self.items.view(word)
            words = np.ascontiguousarray(cells.values).reshape(-1).view(word)
            starts = cells.offsets[at] * (self.items.itemsize // word.itemsize)
            same[at] = (words[starts[:, None] + np.arange(want.size)] == want).all(axis=1)
        return same


class FillBlock(ColumnsBlock):
    """The fill cell as a block of one cell (cell 0), copied to every place asked."""

    def __init__(self, fill: FillCell, with_shapes: bool) -> None:
        super().__init__(fill.cells(1, with_shapes))

    def copy(self, cells: npt.NDArray[np.intp] | slice, out: Any, dst: Any) -> None:
        if isinstance(cells, slice) or not self._raw.size:
            super().copy(cells, out, dst)
        else:  # one store of the cell's bytes at every place
            out[dst[:, None] + np.arange(self._raw.size)] = self._raw


# -------------------------------------------------------------------------------- the type


@dataclass(frozen=True, slots=True)
class NDArrayDType(ZDType[np.dtypes.ObjectDType, np.ndarray]):  # type: ignore[type-var]
    """The ``ndarray`` data type: elements are ndarrays of ``dtype`` (one of ``ELEMENT_DTYPES``,
    or a numpy spelling of it) whose shape matches ``shape`` (integers >= 1 and ``None``, a
    variable dimension); both may be given by position: ``NDArrayDType("float32", (None, 2))``.

    >>> NDArrayDType(dtype="float32", shape=(None, 2)).to_json(zarr_format=3)
    {'name': 'ndarray', 'configuration': {'dtype': 'float32', 'shape': [None, 2]}}
    """

    dtype_cls: ClassVar[type[np.dtypes.ObjectDType]] = np.dtypes.ObjectDType
    _zarr_v3_name: ClassVar[Literal["ndarray"]] = DTYPE_NAME
    #: The serializer 0.2.0 named (the serializer is chosen per pattern: codecs.serializer_name).
    object_codec_id: ClassVar[str] = "vlen-ndarray"

    dtype: str = "float32"
    shape: tuple[int | None, ...] = (None,)

    def __post_init__(self) -> None:
        name = parse_element_dtype(self.dtype)
        dims = ShapePattern.parse(self.shape, np.dtype(name).itemsize).dims
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "shape", dims)

    @property
    def pattern(self) -> ShapePattern:
        return ShapePattern(self.shape)

    @property
    def item_dtype(self) -> np.dtype[Any]:
        """The little-endian numpy dtype of the element's items."""
        return np.dtype(self.dtype).newbyteorder("<")

    @property
    def variable_axes(self) -> tuple[int, ...]:
        return self.pattern.variable_axes

    @property
    def fixed_nbytes(self) -> int:
        """Bytes of the fixed part: a whole element if all-fixed, else one variable step."""
        return self.item_dtype.itemsize * self.pattern.fixed_items

    @classmethod
    def from_native_dtype(cls, dtype: np.dtype[Any]) -> Self:  # type: ignore[override]
        raise DataTypeValidationError(
            f"Cannot infer 'ndarray' from the native dtype {dtype}: object arrays are ambiguous; "
            "construct NDArrayDType(dtype=..., shape=...) and create the array with it as dtype."
        )

    def to_native_dtype(self) -> np.dtypes.ObjectDType:
        return np.dtype(object)  # type: ignore[return-value]

    # -------------------------------------------------------------------------------- JSON
    @classmethod
    def _check_json_v2(cls, data: DTypeJSON) -> bool:
        return False  # the data type does not exist in Zarr format 2

    @classmethod
    def _check_json_v3(cls, data: DTypeJSON) -> bool:
        try:
            cls._from_json_v3(data)
        except DataTypeValidationError:
            return False
        return True

    @classmethod
    def _from_json_v2(cls, data: DTypeJSON) -> Self:
        raise DataTypeValidationError(f"{data!r} is not an ndarray data type: {_V2_MESSAGE}")

    @classmethod
    def _from_json_v3(cls, data: DTypeJSON) -> Self:
        """The one JSON rule (SPEC 1.3). Every refusal is zarr's ``DataTypeValidationError``; of
        a document naming this type, also ours naming the rule (zarr >= 3.4 passes it on)."""
        try:
            return cls._parse_json_v3(data)
        except NDArrayDTypeError as exc:
            if claims_ndarray(data):  # zarr's own phrase first (0.2.0's users match on it)
                message = f"No Zarr data type found that matches {data!r}: {exc}"
                raise _refusal(type(exc))(message) from None  # type: ignore[arg-type]
            raise DataTypeValidationError(f"Invalid JSON of NDArrayDType: {exc}") from exc

    @classmethod
    def _parse_json_v3(cls, data: object) -> Self:
        members = {"name", "configuration"}
        if not (isinstance(data, Mapping) and set(data) == members and data["name"] == DTYPE_NAME):
            raise MetadataError(
                f'the data type {data!r} is not {{"name": "{DTYPE_NAME}", "configuration": '
                '{"dtype": ..., "shape": [...]}}, an object of exactly the members \'name\' and '
                f"'configuration'{_legacy_spelling(data) or ''} (SPEC 1.3/1)."
            )
        config = data["configuration"]
        if not isinstance(config, Mapping) or set(config) != {"dtype", "shape"}:
            raise MetadataError(
                f"the data type configuration {config!r} must be an object with exactly the "
                "members 'dtype' and 'shape' (SPEC 1.3/2)."
            )
        name = config["dtype"]
        if not isinstance(name, str) or name not in ELEMENT_DTYPES:
            raise ElementDTypeError(
                f"the configuration dtype {name!r} must be one of {', '.join(ELEMENT_DTYPES)}, "
                "spelled exactly so (SPEC 1.3/3)."
            )
        itemsize = np.dtype(name).itemsize
        return cls(dtype=name, shape=ShapePattern.from_json(config["shape"], itemsize).dims)

    @overload
    def to_json(self, zarr_format: Literal[2]) -> DTypeSpec_V2: ...
    @overload
    def to_json(self, zarr_format: Literal[3]) -> DTypeSpec_V3: ...
    def to_json(self, zarr_format: ZarrFormat) -> DTypeSpec_V2 | DTypeSpec_V3:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE + f" (got zarr_format={zarr_format!r})")
        config = {"dtype": self.dtype, "shape": self.pattern.to_json()}
        return {"name": DTYPE_NAME, "configuration": config}  # type: ignore[return-value]

    # ------------------------------------------------------------------------------- cells
    def coerce_cell(self, data: object) -> np.ndarray:
        """``data`` as a contiguous little-endian cell (lossless only), else CellTypeError."""
        try:
            return coerce_cell(data, self.pattern, self.item_dtype)
        except CellError as exc:
            raise CellTypeError(str(exc)) from None

    def payload_to_cell(self, payload: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
        """The read-only cell of raw little-endian C-order bytes (its length gives its shape)."""
        raw = np.frombuffer(payload, np.uint8) if not isinstance(payload, np.ndarray) else payload
        values = raw.reshape(-1).view(np.uint8)
        shape = _element_shape(values.size, self.pattern, self.item_dtype.itemsize)
        if isinstance(shape, str):
            raise CellError(f"a payload of {shape} It is truncated or of another data type.")
        if self.item_dtype.kind == "b":
            check_bool_bytes(values)
        cell = values.view(self.item_dtype).reshape(shape)
        cell.flags.writeable = False
        return cell

    # ------------------------------------------------------------------ scalars (fill values)
    def _check_scalar(self, data: object) -> bool:
        try:
            self.cast_scalar(data)
        except (ValueError, TypeError):
            return False
        return True

    def cast_scalar(self, data: object) -> np.ndarray:
        """The fill cell for ``data``, boxed so that zarr treats it as one immutable scalar."""
        cell = data[()] if type(data) is _FillScalar else None  # zarr casts the fill it read
        if cell is None or cell.dtype != self.item_dtype or not self.pattern.matches(cell.shape):
            try:
                cell = self.coerce_cell(data)
            except CellTypeError as exc:
                text = reprlib.repr(data)
                raise CellTypeError(f"Cannot convert {text} to a scalar of {self}: {exc}") from None
        if self.pattern.needs_shapes and cell.size:
            raise FillValueError(
                f"a fill cell of shape {cell.shape} is not allowed for pattern {self.pattern}: "
                "with two or more variable dimensions the fill value can only be the empty "
                'element (JSON ""); omit fill_value or pass None (SPEC 1.5/3).'
            )
        return fill_scalar(cell.reshape(self.pattern.empty_shape) if not cell.size else cell)

    def default_scalar(self) -> np.ndarray:
        """The empty element, or the zero element of an all-fixed pattern."""
        return _default_fill(self.dtype, self.shape)

    def to_json_scalar(self, data: object, *, zarr_format: ZarrFormat) -> JSON:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        return encode_fill(np.ascontiguousarray(self.cast_scalar(data)[()]).tobytes())

    def from_json_scalar(self, data: JSON, *, zarr_format: ZarrFormat) -> np.ndarray:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        payload, shape = decode_fill(data, self.pattern, self.item_dtype.itemsize)
        cell = frozen_cell(payload, self.item_dtype, shape)
        if cell.dtype.kind == "b":
            try:
                check_bool_bytes(cell)
            except CellError as exc:
                raise FillValueError(f"fill_value {data!r}: {exc} (SPEC 1.5/4)") from exc
        return fill_scalar(cell)

    def __repr__(self) -> str:
        return f"NDArrayDType(dtype={self.dtype!r}, shape={self.shape!r})"


# NDArray: the name of 0.2.0 and 0.3.0, too close to numpy.typing.NDArray.
__getattr__ = deprecated(__name__, {"NDArray": (NDArrayDType, "use NDArrayDType")})
