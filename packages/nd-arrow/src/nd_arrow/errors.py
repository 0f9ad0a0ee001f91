"""Exceptions of nd-arrow, one subclass per error kind of the format (the Rust crate
``nd-arrow-array``'s kinds); messages name the offending row or value, the rule and the fix."""

from __future__ import annotations

__all__ = ["NdArrowError", "InvalidArgumentError", "InvalidAttributeError"]
__all__ += ["InvalidDimensionsError", "InvalidEncodingError", "NotSupportedError"]
__all__ += ["SchemaMismatchError", "ShapeMismatchError"]


class NdArrowError(ValueError):
    """Base class of every error raised by nd-arrow for bad input or bad storage."""


class InvalidDimensionsError(NdArrowError):
    """Dimension names or sizes break a rule: rank mismatch, empty or duplicate names, overflow."""


class ShapeMismatchError(NdArrowError):
    """The number of values does not match the dimension sizes, or shapes cannot be aligned."""


class InvalidAttributeError(NdArrowError):
    """An attribute key or value is unusable, or one key carries two different types."""


class InvalidEncodingError(NdArrowError):
    """Storage or extension metadata does not follow the ``nd_arrow.array`` layout."""


class SchemaMismatchError(NdArrowError):
    """Value types or fields disagree between rows, columns or record batches."""


class InvalidArgumentError(NdArrowError):
    """An argument passed to the API is unusable."""


class NotSupportedError(NdArrowError):
    """The input is well-formed but cannot be represented (unknown version, complex values...)."""
