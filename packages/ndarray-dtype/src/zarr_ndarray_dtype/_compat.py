"""Shims for differences between zarr-python releases (the only place that knows about them)."""

from __future__ import annotations

try:  # zarr >= 3.3.0 moved the error here; the old path still works but warns there.
    from zarr.errors import DataTypeValidationError
except ImportError:  # zarr 3.1.x and 3.2.x
    from zarr.core.dtype.common import DataTypeValidationError  # type: ignore[no-redef]

__all__ = ["DataTypeValidationError", "endian_name"]


def endian_name(endian: object) -> str | None:
    """The BytesCodec ``endian`` setting as a string.

    zarr 3.1.x stores an ``Endian`` enum on ``BytesCodec.endian``; later releases may store the
    plain literal. Both are read here.
    """
    if endian is None:
        return None
    return str(getattr(endian, "value", endian))
