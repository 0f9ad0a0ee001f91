"""Narrow, fail-safe hooks into zarr-python, installed on import: :data:`TARGETS` is the one
table of the zarr functions replaced, what each buys and what would retire it.

Each hook acts only for the ``ndarray`` data type; a target missing or changed in a zarr release
is left alone with one :class:`HookWarning`, so importing this package never breaks zarr. Object
reads and writes go through the columnar engine under any codec pipeline: every cell is checked
before any chunk is stored (a bad one named by its index), a scalar selection gives the cell.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr import AsyncArray
from zarr.codecs.bytes import BytesCodec
from zarr.registry import get_pipeline_class

from zarr_ndarray_dtype import _compat, _engine
from zarr_ndarray_dtype._columns import FillCell, cut, gather
from zarr_ndarray_dtype._grid import Box, Shape, cell_at
from zarr_ndarray_dtype._store import Layout
from zarr_ndarray_dtype.codecs import (
    BYTES,
    VLEN,
    FixedCellBytesCodec,
    check_bytes_codec,
    check_codecs,
    serializer_name,
)
from zarr_ndarray_dtype.dtype import NDArrayDType, _FillCell
from zarr_ndarray_dtype.errors import CellError, HookWarning, NDArrayDTypeError

__all__ = ["TARGETS", "install", "installed", "serializer_for"]

_MARK = "_zarr_ndarray_dtype_hook"
_warned: set[str] = set()  # targets already warned about in this process (warn once each)
Fn = Callable[..., Any]
_Parts = list[tuple[Box, tuple[Any, ...], Any]]  # what _compat.chunk_boxes gives


def serializer_for(dtype: NDArrayDType) -> Any:
    """The array -> bytes codec that serves ``dtype``'s pattern (instantiated)."""
    name = serializer_name(dtype.pattern)
    if name == BYTES:
        return BytesCodec(endian="little")
    dist, codec = (
        ("zarr-vlen-ndarray", "VlenNDArrayCodec")
        if name == VLEN
        else ("zarr-ragged-ndarray", "RaggedNDArrayCodec")
    )
    try:
        from zarr.registry import get_codec_class  # looked up now: tests replace it

        return get_codec_class(name)()
    except Exception:  # KeyError up to zarr 3.3, UnknownCodecError later
        raise NDArrayDTypeError(
            f"no serializer for {dtype!r}: its pattern {dtype.pattern.to_json()} is served by the "
            f"{name!r} codec, which is not installed: pip install {dist}, and pass "
            f"serializer={dist.replace('-', '_')}.{codec}()"
        ) from None


# ------------------------------------------------------------------- object reads and writes


async def _cells(layout: Layout, boxes: list[Box]) -> list[np.ndarray]:
    """The cells of every box: object arrays of read-only views of read-only buffers."""

    async def one(box: Box) -> np.ndarray:
        cells = await _engine.read(layout, box)
        owner = cells.values if cells.values.base is None else cells.values.base
        owner.flags.writeable = False  # no cell can be made writable again
        return cut(cells.values, cells.offsets, cells.shapes, layout.dtype.pattern).reshape(
            box.extents
        )

    return list(await asyncio.gather(*(one(box) for box in boxes)))


def _place(indexer: Any, parts: _Parts, blocks: list[np.ndarray], out: np.ndarray) -> None:
    """Put what every part selects of its block (a box of cells each) where it goes in ``out``
    (of the indexer's shape)."""
    drop = tuple(getattr(indexer, "drop_axes", ()))  # int axes of an orthogonal selection
    for (_, local, out_selection), block in zip(parts, blocks, strict=True):
        out[out_selection] = block[local].squeeze(axis=drop)


async def read(indexer: Any, layout: Layout) -> Any:
    """The cells ``indexer`` selects as zarr returns a selection: an object array of read-only
    cells, or the cell itself for a scalar selection."""
    if (box := _compat.basic_box(indexer)) is not None:
        out = (await _cells(layout, [box]))[0].reshape(box.shape)
    else:
        parts = _compat.chunk_boxes(indexer, layout.chunks)
        out = np.empty(tuple(indexer.shape), dtype=object)
        _place(indexer, parts, await _cells(layout, [b for b, _, _ in parts]), out)
        out = out.reshape(getattr(indexer, "sel_shape", out.shape))  # of coordinates, a mask
    return out[()] if not out.shape else out


def plain_fill(result: Any) -> Any:
    """``result`` of zarr's own read (of arrays the engine leaves to zarr) with every fill cell
    a plain read-only ndarray: zarr puts the fill value's own object at every unwritten cell."""
    if type(result) is _FillCell:
        return result.view(np.ndarray)  # over the fill's bytes: never writable
    if isinstance(result, np.ndarray) and result.dtype == object:
        return _plain(result, out=np.empty(result.shape, dtype=object))
    return result


_plain = np.frompyfunc(lambda c: c.view(np.ndarray) if type(c) is _FillCell else c, 1, 1)


def _distribute(value: Any, shape: Shape) -> np.ndarray:
    """The cell every selected position receives, as an object array of the selection's shape:
    one cell for a selection of one; an object array, broadcast as numpy does; nested lists
    (or tuples), one entry per position along each axis; one object for every position."""
    cells = np.empty(shape, dtype=object)
    if not shape:
        cells[()] = value
    elif isinstance(value, np.ndarray) and value.dtype == object:
        try:
            cells[...] = value
        except ValueError as exc:
            raise CellError(
                f"an object array of shape {value.shape} does not fit a selection of shape "
                f"{shape}: pass one cell per selected position ({exc})"
            ) from None
    elif isinstance(value, list | tuple):
        if len(value) != shape[0]:
            raise CellError(
                f"a sequence of {len(value)} cells does not fit a selection of {shape[0]} along "
                "its axis: pass one cell per selected position"
            )
        for i, item in enumerate(value):
            if len(shape) > 1 and not isinstance(item, list | tuple):
                raise CellError(
                    f"a sequence of cells nests {len(shape)} levels deep for a selection of "
                    f"shape {shape}, but its entry {i} is a {type(item).__name__}"
                )
            cells[i] = item if len(shape) == 1 else _distribute(item, shape[1:])
    elif isinstance(value, np.ndarray) and value.ndim:
        raise CellError(
            f"a {value.dtype} array of shape {value.shape} is no set of cells for a selection of "
            f"shape {shape}: pass an object array of shape {shape} holding one cell each (or "
            "write columns with write_columnar)"
        )
    else:
        cells.fill(value)  # None: the fill cell
    return cells


async def write(array: Any, indexer: Any, value: Any, zarr_write: Callable[[Any], Any]) -> None:
    """Write ``value`` into the cells ``indexer`` selects of the AsyncArray ``array``, every
    cell checked first (``zarr_write(cells)`` is zarr's own write, for arrays it keeps)."""
    meta, layout = array.metadata, Layout.of(array)
    shape, box = tuple(int(n) for n in indexer.shape), _compat.basic_box(indexer)
    chunks = getattr(meta.chunk_grid, "chunk_shape", None)  # None: not a regular grid

    def name(i: int) -> str:  # cell i (C order of the selection) by its index in the array
        if box is not None:
            return f"cell {cell_at(box, i)}"
        if chunks is None:
            return f"cell {i} of the selection"
        parts = _compat.chunk_boxes(indexer, tuple(chunks))
        flat = [np.ravel_multi_index(tuple(np.mgrid[b.slices]), meta.shape) for b, _, _ in parts]
        positions = np.empty(shape, np.int64)
        _place(indexer, parts, flat, positions)
        return f"cell {tuple(int(k) for k in np.unravel_index(positions.flat[i], meta.shape))}"

    fill = FillCell(meta.data_type, meta.fill_value)  # a missing cell (None) is the fill
    checked = gather(list(_distribute(value, shape).flat), meta.data_type, fill, name)
    if layout is not None and box is not None:
        await _engine.write([(layout, box, checked)])
        return
    exact = cut(checked.values, checked.offsets, checked.shapes, meta.data_type.pattern)
    exact = exact.reshape(shape)
    if layout is None:
        await zarr_write(exact)
        return
    parts = _compat.chunk_boxes(indexer, layout.chunks)
    blocks = await _cells(layout, [b for b, _, _ in parts])  # all read before any is written
    drop = tuple(getattr(indexer, "drop_axes", ()))
    for (_, local, out_selection), block in zip(parts, blocks, strict=True):
        block[local] = np.expand_dims(exact[out_selection], drop)
    cells = [gather(list(block.flat), meta.data_type) for block in blocks]
    await _engine.write([(layout, b, c) for (b, _, _), c in zip(parts, cells, strict=True)])


# ------------------------------------------------------------------------------ the hooks
# Each is called as ``hook(original, *arguments)``, ``original`` the zarr function it replaces.


def _ndarray(dtype: Any) -> bool:
    return isinstance(dtype, NDArrayDType)


def _default_serializer(original: Fn, dtype: Any) -> Any:
    return serializer_for(dtype) if _ndarray(dtype) else original(dtype)


def _evolve(original: Fn, self: BytesCodec, array_spec: Any) -> Any:
    if not _ndarray(dtype := getattr(array_spec, "dtype", None)):
        return original(self, array_spec)
    check_bytes_codec(self.endian, dtype)
    # the same endian setting: BytesCodec(endian=None) for 1-byte items stays None
    return FixedCellBytesCodec(endian=_compat.endian_name(self.endian))  # type: ignore[arg-type]


def _create_pipeline(original: Fn, metadata: Any, *, store: Any = None) -> Any:
    if not _ndarray(dtype := getattr(metadata, "data_type", None)):
        return original(metadata, store=store)
    check_codecs(metadata.codecs, dtype)
    if get_pipeline_class().__module__.startswith("zarr."):
        return original(metadata, store=store)
    # another project's pipeline (zarrs) cannot run these codecs: zarr's own serves the object
    # path of arrays the engine leaves to zarr (the engine needs none)
    chunks = getattr(metadata.chunk_grid, "chunk_shape", (1,) * len(metadata.shape))
    pipeline = _compat.batched_pipeline().from_codecs(metadata.codecs)
    return pipeline.evolve_from_array_spec(
        _compat.array_spec(tuple(chunks), dtype, metadata.fill_value)
    )


async def _set_selection(
    original: Fn, self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
) -> None:
    def zarr_write(cells: Any) -> Any:
        return original(self, indexer, cells, prototype=prototype, fields=fields)

    if fields or not _ndarray(getattr(self.metadata, "data_type", None)):
        return await zarr_write(value)
    await write(self, indexer, value, zarr_write)


async def _get_selection(
    original: Fn, self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
) -> Any:
    def zarr_read() -> Any:
        return original(self, indexer, prototype=prototype, out=out, fields=fields)

    if fields or not _ndarray(getattr(self.metadata, "data_type", None)):
        return await zarr_read()
    if (layout := Layout.of(self)) is None:
        return plain_fill(await zarr_read())
    result = await read(indexer, layout)
    if out is None:
        return result
    target = out.as_ndarray_like()
    target[...] = result
    return target


# ----------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class _Target:
    """One zarr function replaced: where, the signature every release 3.1.0-3.4.x has
    (``*name``: keyword-only), what it buys, what retires it, what zarr does without it."""

    name: str
    owner: Callable[[], Any]  # the module or class holding it (looked up when installing)
    parameters: tuple[str, ...]
    hook: Fn  # called as hook(original, *arguments)
    buys: str
    retired_by: str
    without: str

    def current(self) -> Any:
        """The function zarr has there now (defined on that very class), or None."""
        owner, attribute = self.owner(), self.name.rsplit(".", 1)[1]
        return (
            owner.__dict__.get(attribute)
            if isinstance(owner, type)
            else getattr(owner, attribute, None)
        )


TARGETS = (
    _Target(
        "zarr.core.array.default_serializer_v3", _compat.array_module, ("dtype",),
        _default_serializer,
        "create_array(dtype=NDArrayDType(...)) without serializer=: the codec of the pattern",
        "a ZDType hook naming its default serializer (none in zarr 3.1-3.4)",
        "arrays of the 'ndarray' data type get no default serializer: pass one, e.g. "
        "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() for patterns [null, d1, ..., dk]",
    ),
    _Target(
        "zarr.codecs.BytesCodec.evolve_from_array_spec", lambda: BytesCodec,
        ("self", "array_spec"), _evolve,
        "all-fixed arrays keep 'endian' in their bytes codec and read through zarr's pipeline",
        "zarr keeping a bytes codec's endian for data types it does not know",
        "all-fixed arrays lose their endian setting when created or opened",
    ),
    _Target(
        "zarr.core.array.create_codec_pipeline", _compat.array_module, ("metadata", "*store"),
        _create_pipeline,
        "codecs that cannot serve the type refused at creation and opening (SPEC 1.6); the "
        "arrays open under another project's codec pipeline (zarrs, strict or not)",
        "a ZDType codec check in zarr, and pipelines that step aside per array",
        "an ndarray array with e.g. vlen-bytes opens (its reads give raw bytes), and zarrs "
        "refuses to open ndarray arrays",
    ),
    _Target(
        "zarr.AsyncArray._set_selection", lambda: AsyncArray,
        ("self", "indexer", "value", "*prototype", "*fields"), _set_selection,
        "object writes through the engine: every cell checked first, lists of cells, any "
        "codec pipeline",
        "a data type hook for normalising and writing its values in zarr's setitem",
        "object writes go through zarr's pipeline chunk by chunk: a cell that does not fit "
        "stops the write after earlier chunks are stored",
    ),
    _Target(
        "zarr.AsyncArray._get_selection", lambda: AsyncArray,
        ("self", "indexer", "*prototype", "*out", "*fields"), _get_selection,
        "object reads through the engine: a scalar selection is the cell, one cell costs one "
        "cell, corrupt chunks are named, any codec pipeline",
        "a data type hook for reading its values in zarr's getitem",
        "object reads go through zarr's pipeline: scalars wrapped in 0-d object arrays, "
        "unwritten cells the fill value's own object",
    ),
)  # fmt: skip


def _problem(target: _Target, function: object) -> str | None:
    """Why ``function`` cannot be wrapped as ``target`` (``None`` if it can)."""
    if function is None:
        return "does not exist"
    try:
        parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "has no inspectable signature"
    got = tuple(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name for p in parameters)
    if got != target.parameters:
        expected = ", ".join(target.parameters)
        return f"has the signature ({', '.join(got)}), not the expected ({expected})"
    return None


def install() -> None:
    """Install every hook whose target zarr has as expected; never raises. Idempotent."""
    for target in TARGETS:
        try:
            current = target.current()
            if getattr(current, _MARK, False):
                continue
            if (problem := _problem(target, current)) is not None:
                _warn_once(target, problem)
                continue
            setattr(target.owner(), target.name.rsplit(".", 1)[1], _hooked(target.hook, current))
        except Exception as exc:  # never break the host: warn and step aside
            _warn_once(target, f"could not be wrapped ({type(exc).__name__}: {exc})")


def _hooked(hook: Fn, original: Fn) -> Fn:
    @functools.wraps(original)  # its __wrapped__ is the original
    def hooked(*args: Any, **kwargs: Any) -> Any:
        return hook(original, *args, **kwargs)

    setattr(hooked, _MARK, True)
    return hooked


def _warn_once(target: _Target, problem: str) -> None:
    if target.name not in _warned:
        _warned.add(target.name)
        version = getattr(__import__("zarr"), "__version__", "unknown")
        warnings.warn(
            f"zarr-ndarray-dtype left zarr {version} untouched: {target.name} {problem}. "
            f"Consequence: {target.without}.",
            HookWarning,
            stacklevel=3,
        )


def installed() -> dict[str, bool]:
    """Which hooks are active in this process (by target name)."""
    return {t.name: bool(getattr(t.current(), _MARK, False)) for t in TARGETS}
