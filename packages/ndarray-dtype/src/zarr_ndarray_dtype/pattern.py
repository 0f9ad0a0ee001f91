"""The shape-pattern grammar, the element dtypes and every numeric limit (pure logic, no zarr).
A pattern is fixed extents (>= 1) and ``None`` (variable): all-fixed, one variable dimension
(its extent follows from the size) or several (the shape is stored with the element)."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.errors import ElementDTypeError, ShapePatternError

# The limits and parse_element_dtype are importable too (the codec packages use them).
__all__ = ["ELEMENT_DTYPES", "ShapePattern"]

#: The element dtypes, by their JSON names (no byte-order prefix; elements are little-endian).
ELEMENT_DTYPES: Final = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip
#: The element-size limit (SPEC 1.2): itemsize times the product of the nonzero extents, so
#: every element has a shape that arrays indexed by signed 64-bit byte counts can hold.
MAX_ELEMENT_NBYTES: Final = 2**63 - 1
#: The largest fixed extent (SPEC 1.3/6): the largest integer every JSON parser reads exactly.
MAX_FIXED_EXTENT: Final = 2**53 - 1
#: The largest u32le: the limit of every stored extent, frame length and element count of both
#: codecs' chunks (SPEC 2.4, 5.3).
U32_MAX: Final = 0xFFFF_FFFF

_DTYPE_RULE = (
    "the element dtype must be one of " + ", ".join(ELEMENT_DTYPES) + " (little-endian or "
    "native byte order; numpy dtype objects, scalar types and spellings such as '<f4' are accepted)"
)


def parse_element_dtype(value: object) -> str:
    """The JSON name of an element dtype given as a name, numpy dtype, type or spelling; refuses
    ``None`` (numpy would read float64), big-endian requests and other dtypes."""
    if isinstance(value, str) and value in ELEMENT_DTYPES:
        return value
    if value is None:
        raise ElementDTypeError(f"dtype=None is not allowed: {_DTYPE_RULE}; pass e.g. 'float32'.")
    if isinstance(value, bool | int | float) or (isinstance(value, str) and value.strip() != value):
        raise ElementDTypeError(f"dtype={value!r} is not a dtype: {_DTYPE_RULE}.")
    try:
        native = np.dtype(value)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise ElementDTypeError(f"dtype={value!r} is not understood: {_DTYPE_RULE}.") from exc
    if native.byteorder == ">":
        raise ElementDTypeError(
            f"dtype={value!r} requests big-endian byte order, but ndarray elements are always "
            f"little-endian; pass {native.newbyteorder('<').name!r} instead."
        )
    if native.name not in ELEMENT_DTYPES or native.fields or native.subdtype:
        raise ElementDTypeError(f"dtype={value!r} (numpy {native}) is not allowed: {_DTYPE_RULE}.")
    return native.name


def _parse_extent(value: object, index: int, shape: object) -> int | None:
    if value is None:
        return None
    where = f"shape={shape!r}: entry {index} is {value!r} ({type(value).__name__})"
    try:
        if isinstance(value, bool | np.bool_ | str | bytes | float | np.inexact):
            raise TypeError
        extent = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ShapePatternError(
            f"{where}; shape dimensions must be integers or None (a variable dimension): pass "
            "an int such as 2, not 2.0, '2' or a boolean (SPEC 1.3/5)."
        ) from None
    if extent < 1:
        raise ShapePatternError(
            f"{where}; fixed shape dimensions must be >= 1 (None, a variable dimension, also "
            "admits extent 0) (SPEC 1.3/5)."
        )
    if extent > MAX_FIXED_EXTENT:
        raise ShapePatternError(
            f"{where}, above the largest fixed extent {MAX_FIXED_EXTENT} (2**53 - 1, the largest "
            "integer every JSON reader holds exactly) (SPEC 1.3/6)."
        )
    return extent


@dataclass(frozen=True, slots=True)
class ShapePattern:
    """A validated shape pattern: a tuple of fixed extents (int >= 1) and ``None`` entries.
    It prints as its JSON, e.g. ``[null, 2]``."""

    dims: tuple[int | None, ...]

    @classmethod
    def parse(cls, shape: object, itemsize: int = 1) -> ShapePattern:
        """Validate user input (int-likes and ``None``) into a pattern whose elements have items
        of ``itemsize`` bytes (for the element-size limit)."""
        if isinstance(shape, str | bytes) or not isinstance(shape, Sequence | np.ndarray):
            raise ShapePatternError(
                f"shape={shape!r} is not a sequence: shape dimensions must be integers or None, "
                "in a non-empty tuple such as (None, 2) (SPEC 1.3/4)."
            )
        dims = tuple(_parse_extent(v, i, shape) for i, v in enumerate(shape))
        if not dims:
            raise ShapePatternError(
                f"shape={shape!r} is empty; a pattern needs at least one dimension, e.g. (None,) "
                "for 1-D elements of any length (SPEC 1.3/4)."
            )
        fixed = math.prod(d for d in dims if d is not None)
        if fixed * itemsize > MAX_ELEMENT_NBYTES:
            raise ShapePatternError(
                f"shape={shape!r}: the fixed extents multiply to {fixed} items of {itemsize} "
                f"bytes, more than the {MAX_ELEMENT_NBYTES} bytes (2**63 - 1) an element may "
                "have; use smaller extents (SPEC 1.3/6)."
            )
        return cls(dims)

    @classmethod
    def from_json(cls, data: object, itemsize: int = 1) -> ShapePattern:
        """Parse the JSON ``shape`` strictly: a list of integers >= 1 and nulls (``2.0`` reaches
        Python as a float and is refused, as SPEC 1.3/5 requires)."""
        if not isinstance(data, list | tuple):
            raise ShapePatternError(
                f"shape {data!r} is not a JSON array; expected e.g. [null, 2] (SPEC 1.3/4)."
            )
        return cls.parse(list(data), itemsize)

    def to_json(self) -> list[int | None]:
        return list(self.dims)

    def __str__(self) -> str:
        return "[" + ", ".join("null" if d is None else str(d) for d in self.dims) + "]"

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def variable_axes(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.dims) if d is None)

    @property
    def is_fixed(self) -> bool:
        return None not in self.dims

    @property
    def is_leading_variable(self) -> bool:
        """True for exactly ``[null, d1, ..., dk]`` (k >= 0): the vlen-ndarray codec's patterns."""
        return self.dims[0] is None and None not in self.dims[1:]

    @property
    def needs_shapes(self) -> bool:
        """Whether cells need a stored shape (two or more variable dimensions)."""
        return self.dims.count(None) >= 2

    @property
    def fixed_items(self) -> int:
        """Items in the fixed part: the product of the fixed extents (1 if there are none)."""
        return math.prod(d for d in self.dims if d is not None)

    @property
    def empty_shape(self) -> tuple[int, ...]:
        """The shape of the empty element (variable extents 0); the full shape if all-fixed."""
        return tuple(0 if d is None else d for d in self.dims)

    def matches(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == len(self.dims) and all(
            d is None or d == s for d, s in zip(self.dims, shape, strict=True)
        )

    def shape_for_items(self, items: int) -> tuple[int, ...]:
        """The element shape holding ``items`` items (at most one variable dimension); refuses
        a count that is not a whole number of fixed parts."""
        if self.needs_shapes:
            raise ShapePatternError(
                f"pattern {self} has {self.dims.count(None)} variable dimensions; their extents "
                "are ambiguous from a length alone, so such elements need a stored shape."
            )
        fixed = self.fixed_items
        if self.is_fixed and items != fixed:
            raise ShapePatternError(
                f"{items} items do not match the fixed element size of shape {self.dims}, "
                f"which holds exactly {fixed}."
            )
        if items % fixed:
            raise ShapePatternError(
                f"{items} items are not a whole number of {fixed}-item rows for pattern {self}."
            )
        return tuple(items // fixed if d is None else d for d in self.dims)

    def shapes_for_items(self, items: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The ``(count, ndim)`` shapes of cells of ``items`` items each (vectorized
        :meth:`shape_for_items`; the counts are whole numbers of fixed parts)."""
        out = np.empty((items.size, self.ndim), dtype=np.int64)
        for axis, extent in enumerate(self.dims):
            out[:, axis] = items // self.fixed_items if extent is None else extent
        return out
