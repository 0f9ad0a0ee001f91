"""Shims for the supported pyarrow releases (>= 18). Each names the release that needs it."""

from __future__ import annotations

import ctypes
import struct

import pyarrow as pa

# pyarrow >= 24: the C++ library registers arrow.variable_shape_tensor, so an array imported
# through the C data interface with that tag becomes the extension type. pyarrow 18-23 has no such
# type (and Python has no factory for it through 26): callers get the tagged storage instead.
VARIABLE_SHAPE_TENSOR_IN_CPP = int(pa.__version__.split(".")[0]) >= 24


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


def extension_keys(t: pa.DataType) -> dict[bytes, bytes]:
    """``ARROW:extension:*`` keys of a type, also of extension types implemented in C++ only
    (``arrow.variable_shape_tensor`` on pyarrow >= 24), whose serialized metadata pyarrow does not
    expose (through 26): the type is exported through the C data interface and the schema's
    metadata read (int32 count, then int32-length-prefixed keys and values)."""
    schema = _ArrowSchema()
    t._export_to_c(ctypes.addressof(schema))
    out: dict[bytes, bytes] = {}
    try:
        pos = schema.metadata or 0

        def take() -> bytes:
            nonlocal pos
            (size,) = struct.unpack("=i", ctypes.string_at(pos, 4))
            pos += 4 + size
            return ctypes.string_at(pos - size, size)

        if pos:
            (count,) = struct.unpack("=i", ctypes.string_at(pos, 4))
            pos += 4
            for _ in range(count):
                key = take()
                out[key] = take()
    finally:
        if schema.release:
            ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))(schema.release)(
                ctypes.byref(schema)
            )
    return out


def import_with_field(field: pa.Field, storage: pa.Array) -> pa.Array:
    """The array ``storage`` typed by ``field``'s metadata, as a C data interface import does.

    With a canonical extension tag the C++ library knows (``arrow.variable_shape_tensor`` on
    pyarrow >= 24), the result is that extension array; otherwise the storage comes back as it is.
    """
    _, array_capsule = storage.__arrow_c_array__()
    return pa.Array._import_from_c_capsule(field.__arrow_c_schema__(), array_capsule)
