"""Two narrow hooks into zarr-python, installed once on import.

zarr has no extension point through which a data type chooses its serializer or adapts the core
``bytes`` codec, so both hooks wrap a zarr function and act ONLY when the data type is an
``ndarray``; every other data type goes to zarr's original code unchanged.

1. ``zarr.core.array.default_serializer_v3`` (looked up as a module global by every release
   3.1.0-3.4.x): without ``serializer=``, an ``ndarray`` array gets the codec that serves its
   pattern, or a creation-time error naming the package and the ``serializer=`` to pass (zarr
   would otherwise pick ``bytes`` and fail on the first write).
2. ``BytesCodec.evolve_from_array_spec`` (called for every codec when array metadata is built, at
   creation and on open, in every release): refuses ``bytes`` with a variable pattern or big
   endian at creation, and swaps in :class:`~zarr_ndarray_dtype.bytes_codec.FixedCellBytesCodec`
   for all-fixed patterns.
"""

from __future__ import annotations

from typing import Any

import zarr.core.array as _zarr_array
from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype.bytes_codec import FixedCellBytesCodec, check_bytes_codec
from zarr_ndarray_dtype.dtype import NDArray
from zarr_ndarray_dtype.errors import NDArrayDTypeError

__all__ = ["install", "serializer_for"]

_MARK = "_zarr_ndarray_dtype_hook"
VLEN_CODEC_NAME = "vlen-ndarray"
RAGGED_CODEC_NAME = "ragged-ndarray"


def serializer_for(dtype: NDArray) -> Any:
    """The array -> bytes codec that serves ``dtype``'s pattern (instantiated)."""
    pattern = dtype.pattern
    if pattern.is_fixed:
        return BytesCodec(endian="little")
    if pattern.is_leading_variable:
        return _registered(VLEN_CODEC_NAME, dtype, "zarr-vlen-ndarray", "VlenNDArrayCodec")
    # A variable dimension elsewhere, or two or more: elements need their stored shape.
    return _registered(RAGGED_CODEC_NAME, dtype, "zarr-ragged-ndarray", "RaggedNDArrayCodec")


def _registered(name: str, dtype: NDArray, dist: str, cls_name: str) -> Any:
    """An instance of the codec registered with zarr as ``name``, or an error naming ``dist``."""
    from zarr.registry import get_codec_class

    try:
        codec_cls = get_codec_class(name)
    except Exception:  # KeyError up to zarr 3.3, UnknownCodecError later
        module = dist.replace("-", "_")
        raise NDArrayDTypeError(
            f"no serializer for {dtype!r}: the pattern {dtype.pattern.to_json()} is served by the "
            f"{name!r} codec, which is not installed. Run `pip install {dist}` "
            f"and pass serializer={module}.{cls_name}()."
        ) from None
    return codec_cls()


def _wrap_default_serializer(original: Any) -> Any:
    def default_serializer_v3(dtype: Any) -> Any:
        if isinstance(dtype, NDArray):
            return serializer_for(dtype)
        return original(dtype)

    default_serializer_v3.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(default_serializer_v3, _MARK, True)
    return default_serializer_v3


def _wrap_evolve(original: Any) -> Any:
    def evolve_from_array_spec(self: BytesCodec, array_spec: Any) -> Any:
        dtype = array_spec.dtype
        if isinstance(dtype, NDArray):
            check_bytes_codec(self.endian, dtype)
            if type(self) is FixedCellBytesCodec:
                return self
            return FixedCellBytesCodec(endian="little")
        return original(self, array_spec)

    evolve_from_array_spec.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(evolve_from_array_spec, _MARK, True)
    return evolve_from_array_spec


def install() -> None:
    """Install both hooks; a second call (or a second import of this package) is a no-op."""
    current = _zarr_array.default_serializer_v3
    if not getattr(current, _MARK, False):
        _zarr_array.default_serializer_v3 = _wrap_default_serializer(current)  # type: ignore[assignment]
    evolve = BytesCodec.evolve_from_array_spec
    if not getattr(evolve, _MARK, False):
        BytesCodec.evolve_from_array_spec = _wrap_evolve(evolve)  # type: ignore[method-assign]
