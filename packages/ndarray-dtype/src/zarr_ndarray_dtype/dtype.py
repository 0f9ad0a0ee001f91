"""The ``ndarray`` data type as a zarr-python ``ZDType``: its JSON (SPEC 1.3) and its fill value
(SPEC 1.5), for Zarr v3 only::

    {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [null, 2]}}

Each array element is an ndarray of ``dtype`` whose shape matches ``shape`` (``null``: a
variable dimension). zarr holds elements in object arrays; cells read back are read-only.
"""

from __future__ import annotations

import base64
import binascii
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

import numpy as np
from zarr.dtype import ZDType

from zarr_ndarray_dtype._compat import DataTypeValidationError
from zarr_ndarray_dtype.cells import (
    check_bool_bytes,
    coerce_cell,
    describe,
    fill_scalar,
    frozen_cell,
)
from zarr_ndarray_dtype.errors import (
    CellError,
    CellTypeError,
    ElementDTypeError,
    FillValueError,
    FillValueTypeError,
    MetadataError,
    NDArrayDTypeError,
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
    if data == DTYPE_NAME:
        return True
    return isinstance(data, Mapping) and (
        data.get("name") == DTYPE_NAME or _legacy_spelling(data) is not None
    )


def _legacy_spelling(data: object) -> str | None:
    """How to rewrite the data type zarr-vlen-ndarray 0.1.x wrote (SPEC 2.6), else None."""
    if not isinstance(data, Mapping) or data.get("name") != "vlen-ndarray":
        return None
    config = data.get("configuration")
    if not isinstance(config, Mapping) or "inner_shape" not in config:
        return None
    inner = config["inner_shape"]
    shape = json.dumps([None, *inner]) if isinstance(inner, list) else "[null, d1, ..., dk]"
    dtype = json.dumps(config.get("dtype"))
    return (
        "; it is the zarr-vlen-ndarray 0.1.x spelling: rewrite it as "
        f'{{"name": "{DTYPE_NAME}", "configuration": {{"dtype": {dtype}, "shape": {shape}}}}} '
        "(SPEC 2.6; the chunks are unchanged)"
    )


def encode_fill(payload: bytes) -> str:
    """The JSON fill value of an element with these little-endian C-order bytes: standard
    padded base64 (RFC 4648 section 4)."""
    return base64.b64encode(payload).decode("ascii")


def decode_fill(
    text: object, pattern: ShapePattern, itemsize: int
) -> tuple[bytes, tuple[int, ...]]:
    """Decode and check a JSON fill value strictly (SPEC 1.5): canonical base64 only, of a
    length that fits the pattern. Returns the element bytes and the element shape."""
    if not isinstance(text, str):
        raise FillValueTypeError(
            f"Invalid type: {text!r}. Expected a base64-encoded string: fill_value {text!r} is a "
            f"{type(text).__name__}; an ndarray fill value must be the base64 string of the "
            'element\'s bytes ("" for the empty element) (SPEC 1.5/1).'
        )
    try:
        payload = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not valid padded base64 ({exc}); it must be the "
            'standard base64 of the element\'s little-endian bytes, e.g. "" for the empty element '
            "(SPEC 1.5/2)."
        ) from exc
    if encode_fill(payload) != text:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not canonical base64 (its padding or unused bits differ "
            f"from the encoding of the same bytes, {encode_fill(payload)[:40]!r}); write the "
            "canonical form (SPEC 1.5/2)."
        )
    n_variable = len(pattern.variable_axes)
    if n_variable >= 2 and payload:
        raise FillValueError(
            f"fill_value {text[:40]!r} is not empty, but pattern {pattern.to_json()} has "
            f"{n_variable} variable dimensions, whose extents a fill value cannot carry; the only "
            'fill value allowed is "" (the empty element) (SPEC 1.5/3).'
        )
    if n_variable >= 2:
        return payload, pattern.empty_shape
    row = itemsize * pattern.fixed_items
    if pattern.is_fixed and len(payload) != row:
        raise FillValueError(
            f"fill_value decodes to {len(payload)} bytes, but an element of the fixed shape "
            f"{pattern.empty_shape} has exactly {row}; encode one whole element (SPEC 1.5/3)."
        )
    if len(payload) % row:
        raise FillValueError(
            f"fill_value decodes to {len(payload)} bytes, not a whole number of {row}-byte rows "
            f"of pattern {pattern.to_json()}; encode one whole element (SPEC 1.5/3)."
        )
    return payload, pattern.shape_for_items(len(payload) // itemsize)


@lru_cache(maxsize=256)
def _default_fill(item: str, dims: tuple[int | None, ...]) -> np.ndarray:
    pattern = ShapePattern(dims)
    nbytes = np.dtype(item).itemsize * int(np.prod(pattern.empty_shape, dtype=np.int64))
    return fill_scalar(frozen_cell(bytes(nbytes), item, pattern.empty_shape))


@dataclass(frozen=True, slots=True)
class NDArrayDType(ZDType[np.dtypes.ObjectDType, np.ndarray]):  # type: ignore[type-var]
    """The ``ndarray`` data type: elements are ndarrays of ``dtype`` shaped like ``shape``.

    ``dtype`` is one of :data:`~zarr_ndarray_dtype.pattern.ELEMENT_DTYPES` (numpy dtypes and
    spellings such as ``np.float32`` or ``"<f4"`` are accepted and normalized); ``shape`` is a
    non-empty sequence of integers >= 1 and ``None`` (a variable dimension). Both may be given
    by position too, as for ``np.dtype``: ``NDArrayDType("float32", (None, 2))``.

    >>> NDArrayDType(dtype="float32", shape=(None, 2)).to_json(zarr_format=3)
    {'name': 'ndarray', 'configuration': {'dtype': 'float32', 'shape': [None, 2]}}
    """

    dtype_cls: ClassVar[type[np.dtypes.ObjectDType]] = np.dtypes.ObjectDType
    _zarr_v3_name: ClassVar[Literal["ndarray"]] = DTYPE_NAME
    #: The array -> bytes codec 0.2.0 named for this type (kept for code that reads it; the
    #: serializer is chosen per pattern, see ``zarr_ndarray_dtype._hooks.serializer_for``).
    object_codec_id: ClassVar[str] = "vlen-ndarray"

    dtype: str = "float32"
    shape: tuple[int | None, ...] = (None,)

    def __post_init__(self) -> None:
        name = parse_element_dtype(self.dtype)
        dims = ShapePattern.parse(self.shape, np.dtype(name).itemsize).dims
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "shape", dims)

    # ------------------------------------------------------------------ derived properties
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
        """Bytes of the fixed part: a whole element if all-fixed, else one unit of the variable
        extent(s) (``itemsize`` times the product of the fixed extents)."""
        return self.item_dtype.itemsize * self.pattern.fixed_items

    # ------------------------------------------------------------------ native dtype
    @classmethod
    def from_native_dtype(cls, dtype: np.dtype[Any]) -> Self:  # type: ignore[override]
        raise DataTypeValidationError(
            f"Cannot infer 'ndarray' from the native dtype {dtype}; construct "
            "NDArrayDType(dtype=..., shape=...) explicitly: object arrays are ambiguous, so pass "
            "dtype=NDArrayDType(dtype=..., shape=...) when creating the array."
        )

    def to_native_dtype(self) -> np.dtypes.ObjectDType:
        return np.dtype(object)  # type: ignore[return-value]

    # ------------------------------------------------------------------ JSON
    @classmethod
    def _check_json_v2(cls, data: DTypeJSON) -> bool:
        """Always False: the ``ndarray`` data type does not exist in Zarr format 2."""
        return False

    @classmethod
    def _check_json_v3(cls, data: DTypeJSON) -> bool:
        """True for exactly the documents :meth:`_from_json_v3` accepts; never raises."""
        try:
            cls._parse_json_v3(data)
        except Exception:
            return False
        return True

    @classmethod
    def from_json(cls, data: DTypeJSON, *, zarr_format: ZarrFormat) -> Self:
        """The data type of a JSON document (zarr's registry asks every registered type).

        A Zarr v3 document that names this data type (``"ndarray"``, or the 0.1.x spelling
        ``vlen-ndarray`` with ``inner_shape``) but breaks a rule is refused with the error
        naming that rule (a :class:`~zarr_ndarray_dtype.errors.NDArrayDTypeError`, which zarr's
        registry passes on: no other data type can claim the name). Any other document gets
        zarr's ``DataTypeValidationError``, so zarr tries the next registered type.
        """
        if zarr_format == 3 and claims_ndarray(data):
            try:
                return cls._parse_json_v3(data)
            except NDArrayDTypeError as exc:
                # zarr's own phrase first (0.2.0 and its users match on it), then the rule.
                raise type(exc)(f"No Zarr data type found that matches {data!r}: {exc}") from None
        if zarr_format == 2:
            return cls._from_json_v2(data)
        return cls._from_json_v3(data)

    @classmethod
    def _from_json_v2(cls, data: DTypeJSON) -> Self:
        raise DataTypeValidationError(f"{data!r} is not an ndarray data type: {_V2_MESSAGE}")

    @classmethod
    def _from_json_v3(cls, data: DTypeJSON) -> Self:
        # zarr offers every registered type every data type JSON and swallows only
        # DataTypeValidationError: anything else raised here would break opening all arrays.
        try:
            return cls._parse_json_v3(data)
        except NDArrayDTypeError as exc:
            raise DataTypeValidationError(
                f"Invalid JSON representation of NDArrayDType: {exc}"
            ) from exc

    @classmethod
    def _parse_json_v3(cls, data: object) -> Self:
        """The one JSON rule (SPEC 1.3); raises the error naming the rule broken."""
        if not isinstance(data, Mapping) or data.get("name") != DTYPE_NAME:
            what = "the bare string" if data == DTYPE_NAME else "not the object"
            raise MetadataError(
                f"the data type is {what} {data!r}; an ndarray data type is always the object "
                f'{{"name": "{DTYPE_NAME}", "configuration": {{"dtype": ..., "shape": [...]}}}}'
                f"{_legacy_spelling(data) or ''} (SPEC 1.3/1)."
            )
        if set(data) != {"name", "configuration"}:
            raise MetadataError(
                f"the data type {data!r} must have exactly the members 'name' and "
                "'configuration' (SPEC 1.3/1)."
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
                f"the configuration dtype {name!r} must be one of "
                f"{', '.join(ELEMENT_DTYPES)}, spelled exactly so (SPEC 1.3/3)."
            )
        itemsize = np.dtype(name).itemsize
        return cls(dtype=name, shape=ShapePattern.from_json(config["shape"], itemsize).dims)

    @overload
    def to_json(self, zarr_format: Literal[2]) -> DTypeSpec_V2: ...
    @overload
    def to_json(self, zarr_format: Literal[3]) -> DTypeSpec_V3: ...
    def to_json(self, zarr_format: ZarrFormat) -> DTypeSpec_V2 | DTypeSpec_V3:
        if zarr_format == 3:
            return {
                "name": DTYPE_NAME,
                "configuration": {"dtype": self.dtype, "shape": self.pattern.to_json()},
            }  # type: ignore[return-value]
        raise ValueError(_V2_MESSAGE + f" (got zarr_format={zarr_format!r})")

    # ------------------------------------------------------------------ cells
    def coerce_cell(self, data: object) -> np.ndarray:
        """``data`` as a contiguous little-endian cell matching the pattern (lossless only).

        Raises :class:`CellTypeError` (a ``TypeError`` and a ``ValueError``, as 0.2.0 raised
        ``TypeError``) for anything that is not a cell of this type.
        """
        try:
            return coerce_cell(data, self.pattern, self.item_dtype)
        except CellError as exc:
            raise CellTypeError(str(exc)) from None

    def payload_to_cell(self, payload: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
        """The read-only cell stored as ``payload`` (raw little-endian C-order bytes).

        The length gives the variable extent: with no variable dimension it must be the element
        size exactly; with one, a whole number of :attr:`fixed_nbytes` rows; with two or more
        only the empty payload has a defined shape (all variable extents 0).
        """
        raw = (
            payload.reshape(-1).view(np.uint8)
            if isinstance(payload, np.ndarray)
            else np.frombuffer(payload, dtype=np.uint8)
        )
        unit = self.fixed_nbytes
        pattern = self.pattern
        if raw.size % unit:
            raise CellError(
                f"Payload of {raw.size} bytes is not a whole number of {unit}-byte items for the "
                f"data type {self}: a cell of pattern {pattern.to_json()} is a whole number of "
                f"{unit}-byte rows; the payload is truncated or belongs to another type."
            )
        rows = raw.size // unit
        n_variable = len(pattern.variable_axes)
        if n_variable == 0 and rows != 1:
            raise CellError(
                f"Payload of {raw.size} bytes does not match the fixed element size of {unit} "
                f"bytes for the data type {self}: every element of the all-fixed pattern "
                f"{pattern.to_json()} has exactly {unit} bytes."
            )
        if n_variable >= 2 and rows:
            raise CellError(
                f"Payload of {raw.size} bytes is ambiguous for the data type {self}: a pattern "
                "with multiple variable dimensions only has a well-defined shape for the empty "
                "payload; such elements need a codec that stores each element's shape."
            )
        values = raw.view(self.item_dtype)
        if values.dtype.kind == "b":
            check_bool_bytes(values)
        shape = pattern.empty_shape if n_variable >= 2 else pattern.shape_for_items(values.size)
        cell = values.reshape(shape)
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
        try:
            cell = self.coerce_cell(data)
        except CellTypeError as exc:
            raise CellTypeError(
                f"Cannot convert {describe(data)} to a scalar of {self}: {exc}"
            ) from None
        if len(self.variable_axes) >= 2 and cell.size:
            raise FillValueError(
                f"a fill cell of shape {cell.shape} is not allowed for pattern "
                f"{self.pattern.to_json()}: with two or more variable dimensions the fill value "
                'can only be the empty element (JSON ""); omit fill_value or pass None '
                "(SPEC 1.5/3)."
            )
        if len(self.variable_axes) >= 2:
            cell = cell.reshape(self.pattern.empty_shape)
        return fill_scalar(cell)

    def default_scalar(self) -> np.ndarray:
        """The empty element (variable extents 0), or the zero element for all-fixed patterns."""
        return _default_fill(self.dtype, self.shape)

    def to_json_scalar(self, data: object, *, zarr_format: ZarrFormat) -> JSON:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        cell = self.cast_scalar(data)[()]
        return encode_fill(np.ascontiguousarray(cell).tobytes())

    def from_json_scalar(self, data: JSON, *, zarr_format: ZarrFormat) -> np.ndarray:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        item = self.item_dtype
        payload, shape = decode_fill(data, self.pattern, item.itemsize)
        cell = frozen_cell(payload, item, shape)
        if item.kind == "b":
            try:
                check_bool_bytes(cell)
            except CellError as exc:
                raise FillValueError(f"fill_value {data!r}: {exc} (SPEC 1.5/4)") from exc
        return fill_scalar(cell)

    def __repr__(self) -> str:
        return f"NDArrayDType(dtype={self.dtype!r}, shape={self.shape!r})"


def __getattr__(name: str) -> Any:
    if name == "NDArray":  # the name of 0.2.0 and 0.3.0, too close to numpy.typing.NDArray
        warnings.warn(
            "zarr_ndarray_dtype.NDArray is deprecated: use NDArrayDType (the same class)",
            DeprecationWarning,
            stacklevel=2,
        )
        return NDArrayDType
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
