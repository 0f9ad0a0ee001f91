"""Narrow, fail-safe hooks into zarr-python, installed once on import.

zarr has no extension point through which a data type chooses its serializer, adapts the core
``bytes`` codec, or checks the codecs and the metadata document of its arrays, so each hook
wraps a zarr function and acts ONLY when the data type is an ``ndarray``; every other data type
goes to zarr's original code unchanged, and what the user passed (a serializer, a
``BytesCodec`` endian setting) is never rewritten.

1. ``zarr.core.array.default_serializer_v3(dtype)`` (looked up as a module global by every
   release 3.1.0-3.4.x): without ``serializer=``, an ``ndarray`` array gets the codec that serves
   its pattern, or a creation-time error naming the package and the ``serializer=`` to pass (zarr
   would otherwise pick ``bytes`` and fail on the first write).
2. ``BytesCodec.evolve_from_array_spec(self, array_spec)`` (called for every codec when array
   metadata is built, at creation and on open, in every release): refuses ``bytes`` with a
   variable pattern or big endian at creation, and swaps in
   :class:`~zarr_ndarray_dtype.bytes_codec.FixedCellBytesCodec` (same endian setting, same
   metadata) for all-fixed patterns.
3. ``zarr.core.metadata.v3.validate_codecs(codecs, dtype)`` (a module global of every release,
   called whenever array metadata is built): refuses codecs that cannot serve the data type,
   e.g. ``vlen-bytes`` (SPEC 1.6/1), at creation and on open, before anything is written or read.
4. ``zarr.core.metadata.v3.ArrayV3Metadata.from_dict(cls, data, ...)`` (every stored array
   document is read through it): checks a document of the ``ndarray`` data type first
   (:func:`~zarr_ndarray_dtype.codec_rules.check_document`), so a bad data type, fill value or
   codec entry is refused with the rule of SPEC.md it breaks, not in zarr's generic words.
5. ``AsyncArray._set_selection`` and ``_get_selection`` (every write and read of every
   release): object writes of ``ndarray`` arrays are checked whole before anything is stored
   and fill cells read as plain arrays (:mod:`zarr_ndarray_dtype._objects`).

Installing can never raise and never breaks zarr: zarr >= 3.4.1 imports this package through the
``zarr.data_type`` entry point while it resolves ANY data type. If a target is missing or its
signature is not the one above (a zarr release that moved it), the hook is not installed, zarr
is left untouched, and one :class:`HookWarning` per target says what that costs.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype import _objects
from zarr_ndarray_dtype._compat import endian_name
from zarr_ndarray_dtype.bytes_codec import FixedCellBytesCodec, check_bytes_codec
from zarr_ndarray_dtype.codec_rules import (
    BYTES,
    VLEN,
    check_codecs,
    check_document,
    serializer_name,
)
from zarr_ndarray_dtype.dtype import NDArray
from zarr_ndarray_dtype.errors import HookWarning, NDArrayDTypeError

__all__ = ["install", "installed", "serializer_for"]

_MARK = "_zarr_ndarray_dtype_hook"

SERIALIZER_TARGET = "zarr.core.array.default_serializer_v3"
EVOLVE_TARGET = "zarr.codecs.BytesCodec.evolve_from_array_spec"
SET_TARGET = "zarr.AsyncArray._set_selection"
GET_TARGET = "zarr.AsyncArray._get_selection"
CODECS_TARGET = "zarr.core.metadata.v3.validate_codecs"
DOCUMENT_TARGET = "zarr.core.metadata.v3.ArrayV3Metadata.from_dict"
# The parameters each target had in every release 3.1.0-3.4.x, which the wrappers forward
# ("*name": keyword-only); optional keyword-only parameters may follow where the wrapper passes
# keywords on (from_dict's ``path`` in 3.4).
EXPECTED_PARAMETERS: dict[str, tuple[str, ...]] = {
    SERIALIZER_TARGET: ("dtype",),
    EVOLVE_TARGET: ("self", "array_spec"),
    CODECS_TARGET: ("codecs", "dtype"),
    DOCUMENT_TARGET: ("cls", "data"),
    SET_TARGET: ("self", "indexer", "value", "*prototype", "*fields"),
    GET_TARGET: ("self", "indexer", "*prototype", "*out", "*fields"),
}
#: The targets whose wrapper passes on keyword arguments (from_dict's ``path`` in zarr 3.4).
FORWARDS_KEYWORDS = frozenset({DOCUMENT_TARGET})
_INSTEAD: dict[str, str] = {
    SERIALIZER_TARGET: (
        "arrays of the 'ndarray' data type get no default serializer, so pass one explicitly: "
        "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() for patterns [null, d1, ..., dk], "
        "serializer=zarr_ndarray_dtype.FixedCellBytesCodec(endian='little') for all-fixed ones"
    ),
    EVOLVE_TARGET: (
        "a plain 'bytes' codec is not adapted to the 'ndarray' data type: create all-fixed "
        "arrays with serializer=zarr_ndarray_dtype.FixedCellBytesCodec(endian='little'); "
        "reopening such an array (whose metadata names 'bytes') fails until "
        "zarr-ndarray-dtype supports this zarr release (pip install -U zarr-ndarray-dtype)"
    ),
    SET_TARGET: (
        "object writes (array[...] = cells) convert and store chunk by chunk: a cell that does "
        "not fit stops the write after earlier chunks are stored; write_columnar checks "
        "everything first"
    ),
    GET_TARGET: (
        "unwritten cells read as the fill value's own object, whose == compares whole cells"
    ),
    CODECS_TARGET: (
        "an ndarray array with a codec that cannot serve it (e.g. vlen-bytes) is not refused "
        "when it is created or opened; its reads give raw bytes and its writes fail"
    ),
    DOCUMENT_TARGET: (
        "bad ndarray metadata (data type, fill value, codec entries) is refused in zarr's "
        "words (e.g. TypeError: Invalid fill_value), without the rule of SPEC.md it breaks"
    ),
}
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


def _wrap_default_serializer(original: Callable[..., Any]) -> Callable[..., Any]:
    def default_serializer_v3(dtype: Any) -> Any:
        if isinstance(dtype, NDArray):
            return serializer_for(dtype)
        return original(dtype)

    default_serializer_v3.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(default_serializer_v3, _MARK, True)
    return default_serializer_v3


def _wrap_evolve(original: Callable[..., Any]) -> Callable[..., Any]:
    def evolve_from_array_spec(self: BytesCodec, array_spec: Any) -> Any:
        dtype = getattr(array_spec, "dtype", None)
        if isinstance(dtype, NDArray):
            check_bytes_codec(self.endian, dtype)
            # Same endian setting as given: BytesCodec(endian=None) for 1-byte items stays None.
            return FixedCellBytesCodec(endian=endian_name(self.endian))  # type: ignore[arg-type]
        return original(self, array_spec)

    evolve_from_array_spec.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(evolve_from_array_spec, _MARK, True)
    return evolve_from_array_spec


def _wrap_validate_codecs(original: Callable[..., Any]) -> Callable[..., Any]:
    def validate_codecs(codecs: Any, dtype: Any) -> Any:
        if isinstance(dtype, NDArray):
            check_codecs(codecs, dtype)
        return original(codecs, dtype)

    validate_codecs.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(validate_codecs, _MARK, True)
    return validate_codecs


def _wrap_from_dict(original: Callable[..., Any]) -> classmethod[Any, Any, Any]:
    def from_dict(cls: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(data, Mapping):
            check_document(data)
        return original(cls, data, *args, **kwargs)

    from_dict.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(from_dict, _MARK, True)
    return classmethod(from_dict)


def _zarr_version() -> str:
    try:
        import zarr

        return str(zarr.__version__)
    except Exception:  # pragma: no cover - zarr without a version
        return "unknown"


def _warn_once(target: str, problem: str) -> None:
    if target in _warned:
        return
    _warned.add(target)
    warnings.warn(
        f"zarr-ndarray-dtype left zarr {_zarr_version()} untouched: {target} {problem}. "
        f"Consequence: {_INSTEAD[target]}.",
        HookWarning,
        stacklevel=3,
    )


def _signature_problem(target: str, function: object) -> str | None:
    """Why ``function`` cannot be wrapped as ``target`` (``None`` if it can)."""
    if not callable(function):
        return f"is {function!r}, not a function"
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return "has no inspectable signature"
    got = tuple(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name for p in parameters)
    expected = EXPECTED_PARAMETERS[target]
    # Positional parameters have no default; keyword-only ones beyond those expected are
    # optional, and allowed only where the wrapper passes keywords on.
    kinds_ok = all(
        p.default is p.empty
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ) and all(
        target in FORWARDS_KEYWORDS and p.kind is p.KEYWORD_ONLY and p.default is not p.empty
        for p in list(parameters)[len(expected) :]
    )
    if got[: len(expected)] != expected or not kinds_ok:
        return f"has the signature ({', '.join(got)}), not the expected ({', '.join(expected)})"
    return None


def _wrap_set_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _set_selection(
        self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
    ) -> None:
        if fields or not isinstance(getattr(self.metadata, "data_type", None), NDArray):
            return await original(self, indexer, value, prototype=prototype, fields=fields)

        async def zarr_write(cells: Any) -> None:
            await original(self, indexer, cells, prototype=prototype, fields=fields)

        await _objects.write(self, indexer, value, zarr_write)

    _set_selection.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(_set_selection, _MARK, True)
    return _set_selection


def _wrap_get_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _get_selection(
        self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
    ) -> Any:
        result = await original(self, indexer, prototype=prototype, out=out, fields=fields)
        if isinstance(getattr(self.metadata, "data_type", None), NDArray):
            return _objects.plain_fill(result)
        return result

    _get_selection.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(_get_selection, _MARK, True)
    return _get_selection


def _install_method_hook(target: str, wrap: Callable[..., Any]) -> None:
    import zarr

    name = target.rsplit(".", 1)[1]
    current = zarr.AsyncArray.__dict__.get(name)
    if getattr(current, _MARK, False):
        return
    problem = "does not exist" if current is None else _signature_problem(target, current)
    if problem is not None:
        _warn_once(target, problem)
        return
    setattr(zarr.AsyncArray, name, wrap(current))


def _install_serializer_hook() -> None:
    import zarr.core.array as zarr_array

    current = getattr(zarr_array, "default_serializer_v3", None)
    if getattr(current, _MARK, False):
        return
    problem = (
        "does not exist" if current is None else _signature_problem(SERIALIZER_TARGET, current)
    )
    if problem is not None:
        _warn_once(SERIALIZER_TARGET, problem)
        return
    assert current is not None
    zarr_array.default_serializer_v3 = _wrap_default_serializer(current)


def _install_evolve_hook() -> None:
    current = BytesCodec.__dict__.get("evolve_from_array_spec")
    if getattr(current, _MARK, False):
        return
    problem = "does not exist" if current is None else _signature_problem(EVOLVE_TARGET, current)
    if problem is not None:
        _warn_once(EVOLVE_TARGET, problem)
        return
    assert current is not None
    BytesCodec.evolve_from_array_spec = _wrap_evolve(current)  # type: ignore[method-assign]


def _install_codecs_hook() -> None:
    import zarr.core.metadata.v3 as zarr_v3

    current = getattr(zarr_v3, "validate_codecs", None)
    if getattr(current, _MARK, False):
        return
    problem = "does not exist" if current is None else _signature_problem(CODECS_TARGET, current)
    if problem is not None:
        _warn_once(CODECS_TARGET, problem)
        return
    assert current is not None
    zarr_v3.validate_codecs = _wrap_validate_codecs(current)


def _install_document_hook() -> None:
    from zarr.core.metadata.v3 import ArrayV3Metadata

    current = ArrayV3Metadata.__dict__.get("from_dict")
    function = current.__func__ if isinstance(current, classmethod) else None
    if getattr(function, _MARK, False):
        return
    problem: str | None = "does not exist" if current is None else "is not a classmethod"
    if function is not None:
        problem = _signature_problem(DOCUMENT_TARGET, function)
    if problem is not None or function is None:
        _warn_once(DOCUMENT_TARGET, problem or "is not a function")
        return
    ArrayV3Metadata.from_dict = _wrap_from_dict(function)  # type: ignore[method-assign, assignment]


def install() -> None:
    """Install the hooks where zarr has the expected targets; never raises.

    A second call (or a second import of this package) is a no-op.
    """
    for target, step in (
        (SERIALIZER_TARGET, _install_serializer_hook),
        (EVOLVE_TARGET, _install_evolve_hook),
        (SET_TARGET, lambda: _install_method_hook(SET_TARGET, _wrap_set_selection)),
        (GET_TARGET, lambda: _install_method_hook(GET_TARGET, _wrap_get_selection)),
        (CODECS_TARGET, _install_codecs_hook),
        (DOCUMENT_TARGET, _install_document_hook),
    ):
        try:
            step()
        except Exception as exc:  # never break the host: warn and step aside
            _warn_once(target, f"could not be wrapped ({type(exc).__name__}: {exc})")


def installed() -> dict[str, bool]:
    """Which hooks are active in this process (by target name)."""
    try:
        import zarr.core.array as zarr_array

        serializer = getattr(zarr_array, "default_serializer_v3", None)
    except Exception:  # pragma: no cover - zarr without that module
        serializer = None
    import zarr

    evolve = BytesCodec.__dict__.get("evolve_from_array_spec")
    try:
        import zarr.core.metadata.v3 as zarr_v3

        codecs = getattr(zarr_v3, "validate_codecs", None)
        from_dict = getattr(zarr_v3.ArrayV3Metadata.__dict__.get("from_dict"), "__func__", None)
    except Exception:  # pragma: no cover - zarr without that module
        codecs = from_dict = None
    methods = {
        t: zarr.AsyncArray.__dict__.get(t.rsplit(".", 1)[1]) for t in (SET_TARGET, GET_TARGET)
    }
    return {
        SERIALIZER_TARGET: bool(getattr(serializer, _MARK, False)),
        EVOLVE_TARGET: bool(getattr(evolve, _MARK, False)),
        **{t: bool(getattr(m, _MARK, False)) for t, m in methods.items()},
        CODECS_TARGET: bool(getattr(codecs, _MARK, False)),
        DOCUMENT_TARGET: bool(getattr(from_dict, _MARK, False)),
    }
