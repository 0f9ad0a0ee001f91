"""The ``ndarray`` data type as a zarr-python ``ZDType`` (the glue between zarr and the pure rules).

JSON form (Zarr v3 only)::

    {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [null, 2]}}

Each array element is an ndarray of ``dtype`` whose shape matches ``shape``, where ``null``
marks a variable dimension. In memory zarr holds elements in object arrays; cells read back are
read-only ndarrays and fill cells are immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, overload

import numpy as np
from zarr.core.dtype.wrapper import ZDType

from zarr_ndarray_dtype._compat import DataTypeValidationError
from zarr_ndarray_dtype.cells import VlenScalar, box, check_bool_bytes, coerce_cell, frozen_cell
from zarr_ndarray_dtype.errors import CellError, FillValueError, NDArrayDTypeError
from zarr_ndarray_dtype.fill import decode_fill, encode_fill
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern, parse_element_dtype

__all__ = ["DTYPE_NAME", "NDArray", "NDArrayDType"]

DTYPE_NAME: Literal["ndarray"] = "ndarray"

_V2_MESSAGE = (
    "The ndarray data type is defined for Zarr format 3 only; create the array with "
    "zarr_format=3 (the default)."
)


@lru_cache(maxsize=256)
def _default_fill(item: str, dims: tuple[int | None, ...]) -> np.ndarray:
    pattern = ShapePattern(dims)
    nbytes = np.dtype(item).itemsize * int(np.prod(pattern.empty_shape, dtype=np.int64))
    return box(frozen_cell(bytes(nbytes), item, pattern.empty_shape))


@dataclass(frozen=True, kw_only=True, slots=True)
class NDArray(ZDType[np.dtypes.ObjectDType, np.ndarray]):  # type: ignore[type-var]
    """The ``ndarray`` data type: elements are ndarrays of ``dtype`` shaped like ``shape``.

    ``dtype`` is one of :data:`~zarr_ndarray_dtype.pattern.ELEMENT_DTYPES` (numpy dtypes and
    spellings such as ``np.float32`` or ``"<f4"`` are accepted and normalized); ``shape`` is a
    non-empty sequence of integers >= 1 and ``None`` (a variable dimension).

    >>> NDArray(dtype="float32", shape=(None, 2)).to_json(zarr_format=3)
    {'name': 'ndarray', 'configuration': {'dtype': 'float32', 'shape': [None, 2]}}
    """

    dtype_cls: ClassVar[type[np.dtypes.ObjectDType]] = np.dtypes.ObjectDType
    _zarr_v3_name: ClassVar[Literal["ndarray"]] = DTYPE_NAME

    dtype: str
    shape: tuple[int | None, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", parse_element_dtype(self.dtype))
        object.__setattr__(self, "shape", ShapePattern.parse(self.shape).dims)

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
    def from_native_dtype(cls, dtype: object) -> NDArray:
        raise DataTypeValidationError(
            f"Cannot infer an ndarray data type from the numpy dtype {dtype!r}: object arrays are "
            "ambiguous; pass dtype=NDArray(dtype=..., shape=...) explicitly."
        )

    def to_native_dtype(self) -> np.dtypes.ObjectDType:
        return np.dtype(object)  # type: ignore[return-value]

    # ------------------------------------------------------------------ JSON
    @classmethod
    def _check_json_v3(cls, data: object) -> bool:
        return isinstance(data, dict) and data.get("name") == DTYPE_NAME

    @classmethod
    def _from_json_v2(cls, data: object) -> NDArray:
        raise DataTypeValidationError(f"{data!r} is not an ndarray data type: {_V2_MESSAGE}")

    @classmethod
    def _from_json_v3(cls, data: object) -> NDArray:
        # zarr offers every registered type every data type JSON and swallows only
        # DataTypeValidationError: anything else raised here would break opening all arrays.
        if not cls._check_json_v3(data):
            raise DataTypeValidationError(f"{data!r} is not an ndarray data type.")
        assert isinstance(data, dict)
        if set(data) != {"name", "configuration"}:
            raise DataTypeValidationError(
                f"ndarray data type JSON {data!r} must have exactly the keys 'name' and "
                "'configuration'."
            )
        config = data["configuration"]
        if not isinstance(config, dict) or set(config) != {"dtype", "shape"}:
            raise DataTypeValidationError(
                f"ndarray configuration {config!r} must be an object with exactly the keys "
                "'dtype' and 'shape'."
            )
        name = config["dtype"]
        if not isinstance(name, str) or name not in ELEMENT_DTYPES:
            raise DataTypeValidationError(
                f"ndarray configuration dtype {name!r} must be one of {', '.join(ELEMENT_DTYPES)}."
            )
        try:
            pattern = ShapePattern.from_json(config["shape"])
        except NDArrayDTypeError as exc:
            raise DataTypeValidationError(str(exc)) from exc
        return cls(dtype=name, shape=pattern.dims)

    @overload
    def to_json(self, zarr_format: Literal[2]) -> Any: ...
    @overload
    def to_json(self, zarr_format: Literal[3]) -> Any: ...
    def to_json(self, zarr_format: Any) -> Any:
        if zarr_format == 3:
            return {
                "name": DTYPE_NAME,
                "configuration": {"dtype": self.dtype, "shape": self.pattern.to_json()},
            }
        raise ValueError(_V2_MESSAGE + f" (got zarr_format={zarr_format!r})")

    # ------------------------------------------------------------------ cells
    def coerce_cell(self, data: object) -> np.ndarray:
        """``data`` as a contiguous little-endian cell matching the pattern (lossless only)."""
        return coerce_cell(data, self.pattern, self.item_dtype)

    def payload_to_cell(self, payload: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
        """The read-only cell stored as ``payload`` (raw little-endian C-order bytes)."""
        raw = (
            np.frombuffer(payload, dtype=np.uint8)
            if not isinstance(payload, np.ndarray)
            else (payload.reshape(-1).view(np.uint8))
        )
        item = self.item_dtype
        if raw.size % item.itemsize:
            raise CellError(
                f"a payload of {raw.size} bytes is not a whole number of {item.itemsize}-byte "
                f"{self.dtype} items."
            )
        values = raw.view(item)
        if item.kind == "b":
            check_bool_bytes(values)
        try:
            shape = self.pattern.shape_for_items(values.size)
        except NDArrayDTypeError as exc:
            raise CellError(str(exc)) from exc
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
        cell = self.coerce_cell(data)
        if len(self.variable_axes) >= 2 and cell.size:
            raise FillValueError(
                f"a fill cell of shape {cell.shape} is not allowed for pattern "
                f"{self.pattern.to_json()}: with two or more variable dimensions the fill value "
                'can only be the empty element (JSON ""); omit fill_value or pass None.'
            )
        if len(self.variable_axes) >= 2:
            cell = cell.reshape(self.pattern.empty_shape)
        return box(cell)

    def default_scalar(self) -> np.ndarray:
        """The empty element (variable extents 0), or the zero element for all-fixed patterns."""
        return _default_fill(self.dtype, self.shape)

    def to_json_scalar(self, data: object, *, zarr_format: Any) -> str:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        cell = self.cast_scalar(data)[()]
        return encode_fill(np.ascontiguousarray(cell).tobytes())

    def from_json_scalar(self, data: Any, *, zarr_format: Any) -> np.ndarray:
        if zarr_format != 3:
            raise ValueError(_V2_MESSAGE)
        item = self.item_dtype
        payload, shape = decode_fill(data, self.pattern, item.itemsize)
        cell = frozen_cell(payload, item, shape)
        if item.kind == "b":
            try:
                check_bool_bytes(cell)
            except CellError as exc:
                raise FillValueError(f"fill_value {data!r}: {exc}") from exc
        return box(cell)

    def __repr__(self) -> str:
        return f"NDArray(dtype={self.dtype!r}, shape={self.shape!r})"


#: Alias for import sites that already use ``numpy.typing.NDArray``.
NDArrayDType = NDArray

__all__ += ["VlenScalar"]
