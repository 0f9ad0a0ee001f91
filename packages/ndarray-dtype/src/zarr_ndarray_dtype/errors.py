"""The exceptions of the ``ndarray`` data type (pure): every one a ``ValueError``, as 0.2.0
raised, those about a value's type a ``TypeError`` too. A message names the value, the rule and
the fix; a refusal of metadata or of a stored chunk ends with its rule, e.g. ``(SPEC 1.3/5)``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = [
    "AlignmentError", "BlockAlignmentError", "CellError", "CellTypeError", "CodecMetadataError",
    "ElementDTypeError", "FillValueError", "FillValueTypeError", "HookWarning", "MetadataError",
    "NDArrayDTypeError", "ShapePatternError", "StoredChunkError",
]  # fmt: skip


class NDArrayDTypeError(ValueError):
    """Base class of every error raised by ``zarr_ndarray_dtype``."""


class MetadataError(NDArrayDTypeError):
    """Array metadata of an ``ndarray`` array (its data type or codecs) breaks a rule of SPEC.md."""


class CodecMetadataError(MetadataError):
    """A codec's JSON breaks its rule, e.g. is not ``{"name": "vlen-ndarray"}`` (SPEC 2.2, 5.1)."""


class CodecMetadataTypeError(CodecMetadataError, TypeError):
    """Codec metadata that is not a JSON object at all (0.2.0 raised ``TypeError`` here)."""


class ElementDTypeError(NDArrayDTypeError):
    """The element dtype is not one of the 14 allowed little-endian scalar types."""


class ShapePatternError(NDArrayDTypeError):
    """The shape pattern breaks the grammar (non-empty; each entry an int >= 1 or null)."""


class FillValueError(NDArrayDTypeError):
    """A fill value cannot be encoded or decoded for this data type."""


class FillValueTypeError(FillValueError, TypeError):
    """A JSON fill value is not a string at all (0.2.0 raised ``TypeError`` here)."""


class CellError(NDArrayDTypeError):
    """A cell (one array element) does not fit the data type: wrong shape or bad values."""


class CellTypeError(CellError, TypeError):
    """A cell's values cannot be converted to the element dtype without losing information."""


class StoredChunkError(NDArrayDTypeError):
    """A stored chunk (or shard) does not read through its codecs."""

    @classmethod
    def of(cls, what: str, failure: BaseException) -> StoredChunkError:
        """The error for ``what`` (e.g. "the stored chunk 'c/1'") that failed with ``failure``."""
        return cls(
            f"{what} does not decode ({type(failure).__name__}: {failure}): it is corrupt or was "
            "written with other codecs"
        )


class BlockAlignmentError(NDArrayDTypeError):
    """Dask blocks to be written in parallel end inside a shard (or chunk) they would share."""


class AlignmentError(NDArrayDTypeError):
    """Arrays read or written together as aligned differ in shape or in a cell's leading extent."""


class HookWarning(UserWarning):
    """zarr lacks a function this package adapts (a zarr release moved it): zarr is left as is."""


def deprecated(module: str, aliases: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each renamed name (``aliases``: old name -> the object,
    what to use instead) for one more release, with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name not in aliases:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        found, instead = aliases[name]
        warnings.warn(f"{module}.{name} is deprecated: {instead}", DeprecationWarning, stacklevel=2)
        return found

    return __getattr__
