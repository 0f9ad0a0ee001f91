"""Shims for the supported pyarrow releases (>= 18). Each names the release that needs it."""

from __future__ import annotations

import ctypes

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


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def extension_keys(t: pa.DataType) -> dict[bytes, bytes]:
    """``ARROW:extension:*`` keys of a type, also of extension types implemented in C++ only
    (``arrow.variable_shape_tensor`` on pyarrow >= 24), whose metadata pyarrow does not expose
    (through 26): read from the type exported through the C data interface."""
    schema, items = _ArrowSchema(), []
    t._export_to_c(ctypes.addressof(schema))
    try:
        pos = schema.metadata or 0
        count = ctypes.c_int32.from_address(pos).value if pos else 0
        for _ in range(2 * count):  # keys and values alternate, each after its int32 length
            size = ctypes.c_int32.from_address(pos + 4).value
            items.append(ctypes.string_at(pos + 8, size))
            pos += 4 + size
    finally:
        if schema.release:
            _RELEASE(schema.release)(ctypes.byref(schema))
    return dict(zip(items[::2], items[1::2], strict=True))


def import_with_field(field: pa.Field, storage: pa.Array) -> pa.Array:
    """``storage`` typed by ``field``'s metadata as a C data interface import does it: with a tag
    the C++ library knows (``arrow.variable_shape_tensor`` on pyarrow >= 24), that type."""
    _, array_capsule = storage.__arrow_c_array__()
    return pa.Array._import_from_c_capsule(field.__arrow_c_schema__(), array_capsule)
