"""Shims for the supported pyarrow releases (>= 18). Each names the release that needs it."""

from __future__ import annotations

import ctypes
import struct

import pyarrow as pa

__all__ = [
    "PYARROW_VERSION",
    "VARIABLE_SHAPE_TENSOR_IN_CPP",
    "extension_keys",
    "import_with_field",
]


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


PYARROW_VERSION = _version(pa.__version__)

# pyarrow >= 24: the C++ library registers arrow.variable_shape_tensor, so an array imported
# through the C data interface with that tag becomes the extension type. pyarrow 18-23 has no such
# type (and Python has no factory for it through 26): callers get the tagged storage instead.
VARIABLE_SHAPE_TENSOR_IN_CPP = PYARROW_VERSION >= (24, 0)


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ArrowSchema (a stable ABI)."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def _read_metadata(address: int) -> dict[bytes, bytes]:
    """Decode the C data interface metadata encoding: int32 count, then (int32 len, bytes) pairs."""
    out: dict[bytes, bytes] = {}
    if not address:
        return out
    (count,) = struct.unpack("=i", ctypes.string_at(address, 4))
    pos = address + 4
    for _ in range(count):
        (klen,) = struct.unpack("=i", ctypes.string_at(pos, 4))
        key = ctypes.string_at(pos + 4, klen)
        pos += 4 + klen
        (vlen,) = struct.unpack("=i", ctypes.string_at(pos, 4))
        value = ctypes.string_at(pos + 4, vlen)
        pos += 4 + vlen
        out[key] = value
    return out


def extension_keys(t: pa.DataType) -> dict[bytes, bytes]:
    """``ARROW:extension:*`` keys of a type, including C++-only extension types.

    pyarrow exposes no serialized metadata for extension types implemented in C++ (such as
    ``arrow.variable_shape_tensor`` on pyarrow >= 24); exporting the type through the C data
    interface yields it, as every pyarrow >= 14 supports.
    """
    schema = _ArrowSchema()
    t._export_to_c(ctypes.addressof(schema))
    try:
        return _read_metadata(schema.metadata or 0)
    finally:
        if schema.release:
            _RELEASE(schema.release)(ctypes.byref(schema))


def import_with_field(field: pa.Field, storage: pa.Array) -> pa.Array:
    """The array ``storage`` typed by ``field``'s metadata, as a C data interface import does.

    With a canonical extension tag the C++ library knows (``arrow.variable_shape_tensor`` on
    pyarrow >= 24), the result is that extension array; otherwise the storage comes back as it is.
    """
    _, array_capsule = storage.__arrow_c_array__()
    return pa.Array._import_from_c_capsule(field.__arrow_c_schema__(), array_capsule)
