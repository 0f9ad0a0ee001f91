"""Narrow, fail-safe hooks into zarr-python, installed once on import.

zarr has no extension point through which a data type picks its serializer, adapts ``bytes``,
checks its codecs and metadata, or takes part in object writes and reads; so each hook wraps one
zarr function and acts ONLY for the ``ndarray`` data type. A target that is missing or whose
signature changed (a zarr release that moved it) is left alone, with one :class:`HookWarning`
saying what that costs: importing this package never breaks zarr.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zarr import AsyncArray
from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype import _compat, _objects
from zarr_ndarray_dtype.codecs import (
    BYTES,
    VLEN,
    FixedCellBytesCodec,
    check_bytes_codec,
    check_codecs,
    check_document,
    serializer_name,
)
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import HookWarning, NDArrayDTypeError

__all__ = ["install", "installed", "serializer_for"]

_MARK = "_zarr_ndarray_dtype_hook"
# Targets already warned about in this process (warn once each).
_warned: set[str] = set()


def serializer_for(dtype: NDArray) -> Any:
    """The array -> bytes codec that serves ``dtype``'s pattern (instantiated)."""
    name = serializer_name(dtype.pattern)
    if name == BYTES:
        return BytesCodec(endian="little")
    if name == VLEN:
        return _registered(name, dtype, "zarr-vlen-ndarray", "VlenNDArrayCodec")
    # A variable dimension elsewhere, or two or more: elements need their stored shape.
    return _registered(name, dtype, "zarr-ragged-ndarray", "RaggedNDArrayCodec")


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


def _is_ndarray(dtype: Any) -> bool:
    return isinstance(dtype, NDArray)


# --------------------------------------------------------------------------- the wrappers


def _default_serializer(original: Callable[..., Any]) -> Callable[..., Any]:
    def default_serializer_v3(dtype: Any) -> Any:
        return serializer_for(dtype) if _is_ndarray(dtype) else original(dtype)

    return default_serializer_v3


def _evolve(original: Callable[..., Any]) -> Callable[..., Any]:
    def evolve_from_array_spec(self: BytesCodec, array_spec: Any) -> Any:
        dtype = getattr(array_spec, "dtype", None)
        if not _is_ndarray(dtype):
            return original(self, array_spec)
        check_bytes_codec(self.endian, dtype)
        # Same endian setting as given: BytesCodec(endian=None) for 1-byte items stays None.
        return FixedCellBytesCodec(endian=_compat.endian_name(self.endian))  # type: ignore[arg-type]

    return evolve_from_array_spec


def _validate_codecs(original: Callable[..., Any]) -> Callable[..., Any]:
    def validate_codecs(codecs: Any, dtype: Any) -> Any:
        if _is_ndarray(dtype):
            check_codecs(codecs, dtype)
        return original(codecs, dtype)

    return validate_codecs


def _from_dict(original: Callable[..., Any]) -> Callable[..., Any]:
    def from_dict(cls: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(data, Mapping):
            check_document(data)
        return original(cls, data, *args, **kwargs)

    return from_dict


def _set_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _set_selection(
        self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
    ) -> None:
        if fields or not _is_ndarray(getattr(self.metadata, "data_type", None)):
            return await original(self, indexer, value, prototype=prototype, fields=fields)

        async def zarr_write(cells: Any) -> None:
            await original(self, indexer, cells, prototype=prototype, fields=fields)

        await _objects.write(self, indexer, value, zarr_write)

    return _set_selection


def _get_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _get_selection(
        self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
    ) -> Any:
        result = await original(self, indexer, prototype=prototype, out=out, fields=fields)
        if _is_ndarray(getattr(self.metadata, "data_type", None)):
            return _objects.plain_fill(result)
        return result

    return _get_selection


# ----------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class _Target:
    """One zarr function a hook wraps, and what zarr does without the hook."""

    name: str
    owner: Callable[[], Any]  # the module or class holding it (looked up when installing)
    parameters: tuple[str, ...]  # as in every release 3.1.0-3.4.x ("*name": keyword-only)
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
    without: str  # the consequence of running without the hook
    forwards_keywords: bool = False  # optional keyword-only parameters may follow

    @property
    def attribute(self) -> str:
        return self.name.rsplit(".", 1)[1]

    def current(self) -> Any:
        """The function zarr has there now (a classmethod's function), or None."""
        owner = self.owner()
        found = owner.__dict__.get(self.attribute) if isinstance(owner, type) else None
        if found is None and not isinstance(owner, type):
            found = getattr(owner, self.attribute, None)
        return found.__func__ if isinstance(found, classmethod) else found


SERIALIZER_TARGET = "zarr.core.array.default_serializer_v3"
EVOLVE_TARGET = "zarr.codecs.BytesCodec.evolve_from_array_spec"
CODECS_TARGET = "zarr.core.metadata.v3.validate_codecs"
DOCUMENT_TARGET = "zarr.core.metadata.v3.ArrayV3Metadata.from_dict"
SET_TARGET = "zarr.AsyncArray._set_selection"
GET_TARGET = "zarr.AsyncArray._get_selection"

_TARGETS = (
    _Target(
        SERIALIZER_TARGET, _compat.array_module, ("dtype",), _default_serializer,
        "arrays of the 'ndarray' data type get no default serializer, so pass one explicitly: "
        "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() for patterns [null, d1, ..., dk], "
        "serializer=zarr_ndarray_dtype.FixedCellBytesCodec(endian='little') for all-fixed ones",
    ),
    _Target(
        EVOLVE_TARGET, lambda: BytesCodec, ("self", "array_spec"), _evolve,
        "a plain 'bytes' codec is not adapted to the 'ndarray' data type: create all-fixed "
        "arrays with serializer=zarr_ndarray_dtype.FixedCellBytesCodec(endian='little'); "
        "reopening such an array (whose metadata names 'bytes') fails until "
        "zarr-ndarray-dtype supports this zarr release (pip install -U zarr-ndarray-dtype)",
    ),
    _Target(
        CODECS_TARGET, _compat.metadata_module, ("codecs", "dtype"), _validate_codecs,
        "an ndarray array with a codec that cannot serve it (e.g. vlen-bytes) is not refused "
        "when it is created or opened; its reads give raw bytes and its writes fail",
    ),
    _Target(
        DOCUMENT_TARGET, _compat.metadata_class, ("cls", "data"), _from_dict,
        "bad ndarray metadata (data type, fill value, codec entries) is refused in zarr's "
        "words (e.g. TypeError: Invalid fill_value), without the rule of SPEC.md it breaks",
        forwards_keywords=True,  # from_dict's ``path`` in zarr 3.4
    ),
    _Target(
        SET_TARGET, lambda: AsyncArray,
        ("self", "indexer", "value", "*prototype", "*fields"), _set_selection,
        "object writes (array[...] = cells) convert and store chunk by chunk: a cell that does "
        "not fit stops the write after earlier chunks are stored; write_columnar checks "
        "everything first",
    ),
    _Target(
        GET_TARGET, lambda: AsyncArray,
        ("self", "indexer", "*prototype", "*out", "*fields"), _get_selection,
        "unwritten cells read as the fill value's own object, whose == compares whole cells",
    ),
)  # fmt: skip


def _problem(target: _Target, function: object) -> str | None:
    """Why ``function`` cannot be wrapped as ``target`` (``None`` if it can)."""
    if function is None:
        return "does not exist"
    if not callable(function):
        return f"is {function!r}, not a function"
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return "has no inspectable signature"
    got = tuple(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name for p in parameters)
    expected = target.parameters
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    kinds_ok = all(p.default is p.empty for p in parameters if p.kind in positional) and all(
        target.forwards_keywords and p.kind is p.KEYWORD_ONLY and p.default is not p.empty
        for p in parameters[len(expected) :]
    )
    if got[: len(expected)] != expected or not kinds_ok:
        return f"has the signature ({', '.join(got)}), not the expected ({', '.join(expected)})"
    return None


def _install(target: _Target) -> None:
    current = target.current()
    if getattr(current, _MARK, False):
        return
    problem = _problem(target, current)
    if problem is not None:
        _warn_once(target, problem)
        return
    wrapped = target.wrap(current)
    wrapped.__wrapped__ = current  # type: ignore[attr-defined]
    setattr(wrapped, _MARK, True)
    owner = target.owner()
    is_classmethod = isinstance(owner, type) and isinstance(
        owner.__dict__.get(target.attribute), classmethod
    )
    setattr(owner, target.attribute, classmethod(wrapped) if is_classmethod else wrapped)


def _warn_once(target: _Target, problem: str) -> None:
    if target.name in _warned:
        return
    _warned.add(target.name)
    version = getattr(__import__("zarr"), "__version__", "unknown")
    warnings.warn(
        f"zarr-ndarray-dtype left zarr {version} untouched: {target.name} {problem}. "
        f"Consequence: {target.without}.",
        HookWarning,
        stacklevel=3,
    )


def install() -> None:
    """Install every hook whose target zarr has as expected; never raises. Idempotent."""
    for target in _TARGETS:
        try:
            _install(target)
        except Exception as exc:  # never break the host: warn and step aside
            _warn_once(target, f"could not be wrapped ({type(exc).__name__}: {exc})")


def installed() -> dict[str, bool]:
    """Which hooks are active in this process (by target name)."""
    active = {}
    for target in _TARGETS:
        try:
            active[target.name] = bool(getattr(target.current(), _MARK, False))
        except Exception:  # pragma: no cover - zarr without that module
            active[target.name] = False
    return active
