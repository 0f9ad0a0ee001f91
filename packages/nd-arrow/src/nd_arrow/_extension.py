"""The ``nd_arrow.array`` pyarrow extension type, its registration, and field helpers.

A leaf over the format and the storage layout: the column and conversions import it, never the
other way round. The type is registered by name once per process (a repeat is a no-op), and
readers here recognise nd columns by that name, so a foreign class registered under it decodes the
same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa

from nd_arrow._format import (
    ENCODING_VERSION,
    EXTENSION_METADATA,
    EXTENSION_METADATA_KEY,
    EXTENSION_NAME,
    EXTENSION_NAME_KEY,
    GLOBAL_ATTRIBUTES_EXTENSION,
    GLOBAL_ATTRIBUTES_FIELD,
    parse_extension_metadata,
)
from nd_arrow._storage import StorageLayout, parse_storage_type, storage_type

__all__ = [
    "NdArrayType",
    "encoded_field",
    "encoded_schema",
    "global_attributes_field",
    "is_global_attributes_field",
    "is_nd_field",
    "logical_field",
    "logical_schema",
    "register",
]


class NdArrayType(pa.ExtensionType):  # type: ignore[misc]
    """``nd_arrow.array``: one named N-d array per row, on a Struct storage.

    Built from a storage type (checked against the layout; :class:`InvalidEncodingError` if it
    breaks it) or, more conveniently, with :meth:`from_value_type`. Serializes ``{"version":1}``.
    """

    # The classes pyarrow wraps this type's arrays and scalars in. Theirs decode with NdColumn,
    # which imports this module, so nd_arrow._column sets them where it defines them.
    _array_class: ClassVar[type[pa.ExtensionArray]] = pa.ExtensionArray
    _scalar_class: ClassVar[type[pa.ExtensionScalar]] = pa.ExtensionScalar

    def __init__(self, storage: pa.DataType) -> None:
        self._layout: StorageLayout = parse_storage_type(storage)
        super().__init__(storage, EXTENSION_NAME)

    @classmethod
    def from_value_type(
        cls,
        value_type: pa.DataType,
        attr_fields: Sequence[pa.Field] = (),
        *,
        values_nullable: bool = True,
    ) -> NdArrayType:
        """The type with values of ``value_type`` and the given attribute fields."""
        return cls(storage_type(value_type, attr_fields, values_nullable=values_nullable))

    @property
    def layout(self) -> StorageLayout:
        """The parsed storage type (a reader of this type's arrays need not parse it again)."""
        return self._layout

    @property
    def value_type(self) -> pa.DataType:
        """Arrow type of the elements."""
        return self._layout.value_type

    @property
    def value_field(self) -> pa.Field:
        """The list item field of ``values`` (name, type, nullability)."""
        return self._layout.value_field

    @property
    def attr_fields(self) -> tuple[pa.Field, ...]:
        """One field per attribute key (empty without attributes)."""
        return self._layout.attr_fields

    @property
    def version(self) -> int:
        return ENCODING_VERSION

    def __arrow_ext_serialize__(self) -> bytes:
        return EXTENSION_METADATA

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> NdArrayType:
        parse_extension_metadata(serialized)
        return cls(storage_type)

    def __arrow_ext_class__(self) -> type[pa.ExtensionArray]:
        return self._array_class

    def __arrow_ext_scalar_class__(self) -> type[pa.ExtensionScalar]:
        return self._scalar_class

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.storage_type,)

    def __hash__(self) -> int:
        return hash((EXTENSION_NAME, str(self.storage_type)))

    def __repr__(self) -> str:
        keys = [f.name for f in self.attr_fields]
        return f"NdArrayType(value_type={self.value_type}, attrs={keys})"


def register() -> None:
    """Register :class:`NdArrayType` with pyarrow; a repeated registration is a no-op."""
    # ArrowKeyError: already registered by a re-import or another implementation of the name.
    with contextlib.suppress(pa.ArrowKeyError):
        pa.register_extension_type(NdArrayType.from_value_type(pa.float64()))


def _extension_name(field: pa.Field) -> str | None:
    t = field.type
    if isinstance(t, pa.BaseExtensionType):
        return str(t.extension_name)
    meta = field.metadata or {}
    name = meta.get(EXTENSION_NAME_KEY)
    return name.decode("utf-8", "replace") if name is not None else None


def is_nd_field(field: pa.Field) -> bool:
    """True when ``field`` is an nd column, registered or read as a plain tagged struct."""
    return _extension_name(field) == EXTENSION_NAME


def is_global_attributes_field(field: pa.Field) -> bool:
    """True when ``field`` is the global-attributes column of an encoded record batch."""
    return _extension_name(field) == GLOBAL_ATTRIBUTES_EXTENSION


def global_attributes_field(attrs_type: pa.StructType) -> pa.Field:
    """The ``__global_attrs__`` field: a Struct tagged ``nd_arrow.global_attributes``."""
    return pa.field(
        GLOBAL_ATTRIBUTES_FIELD,
        attrs_type,
        nullable=True,
        # Key order as pyarrow writes registered extension types: metadata, then name.
        metadata={
            EXTENSION_METADATA_KEY: EXTENSION_METADATA,
            EXTENSION_NAME_KEY: GLOBAL_ATTRIBUTES_EXTENSION.encode(),
        },
    )


def _strip_extension_keys(meta: dict[bytes, bytes] | None) -> dict[bytes, bytes] | None:
    if not meta:
        return None
    out = {k: v for k, v in meta.items() if k not in (EXTENSION_NAME_KEY, EXTENSION_METADATA_KEY)}
    return out or None


def encoded_field(logical: pa.Field) -> pa.Field:
    """The nd field for a logical field: same name and metadata, values of its type, nullable."""
    return pa.field(
        logical.name,
        NdArrayType.from_value_type(logical.type),
        nullable=True,
        metadata=_strip_extension_keys(logical.metadata),
    )


def logical_field(encoded: pa.Field) -> pa.Field:
    """The logical field of an nd field: element type, field metadata minus the extension keys."""
    t = encoded.type
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    layout = parse_storage_type(storage)
    return pa.field(
        encoded.name,
        layout.value_type,
        nullable=layout.value_field.nullable,
        metadata=_strip_extension_keys(encoded.metadata),
    )


def encoded_schema(logical: pa.Schema) -> pa.Schema:
    """Every field of ``logical`` as an nd field (see :func:`encoded_field`)."""
    return pa.schema([encoded_field(f) for f in logical], metadata=logical.metadata)


def logical_schema(encoded: pa.Schema) -> pa.Schema:
    """Every nd field of ``encoded`` as its logical field (see :func:`logical_field`)."""
    return pa.schema(
        [logical_field(f) for f in encoded if is_nd_field(f)], metadata=encoded.metadata
    )


register()
