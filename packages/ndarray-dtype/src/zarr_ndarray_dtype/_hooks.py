"""Narrow, fail-safe hooks into zarr-python, installed once on import: :data:`TARGETS`, the one
table of the zarr functions replaced, what each buys and what would retire it.

Each hook acts ONLY for the ``ndarray`` data type. A target that is missing or whose signature
changed (a zarr release that moved it) is left alone with one :class:`HookWarning`: importing
this package never breaks zarr. Object reads and writes of ``ndarray`` arrays go through the
columnar engine under any codec pipeline: every cell is checked before any chunk is stored (a
bad one named by its index), and a scalar selection gives the cell itself.
"""

from __future__ import annotations

import asyncio
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
from zarr_ndarray_dtype._grid import Box
from zarr_ndarray_dtype._store import Layout
from zarr_ndarray_dtype.codecs import (
    BYTES,
    VLEN,
    FixedCellBytesCodec,
    check_bytes_codec,
    check_codecs,
    serializer_name,
)
from zarr_ndarray_dtype.dtype import NDArrayDType, _FillCell, frozen_cell
from zarr_ndarray_dtype.errors import CellError, HookWarning, NDArrayDTypeError

__all__ = ["TARGETS", "install", "installed", "serializer_for"]

_MARK = "_zarr_ndarray_dtype_hook"
_warned: set[str] = set()  # targets already warned about in this process (warn once each)


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


async def _cells(layout: Layout, box: Box) -> np.ndarray:
    """The cells of ``box``: an object array of read-only views of one read-only buffer."""
    cells = await _engine.read(layout, box)
    owner = cells.values if cells.values.base is None else cells.values.base
    owner.flags.writeable = False  # no cell can be made writable again
    return cut(cells.values, cells.offsets, cells.shapes, layout.dtype.pattern).reshape(box.extents)


def _within(selection: Any, region: tuple[int, ...]) -> tuple[Box, tuple[Any, ...]]:
    """The smallest box of a chunk (cells ``region``) holding what a zarr chunk selection picks,
    and the selection relative to that box."""
    starts, stops, local = [], [], []
    for item, n in zip(selection, region, strict=True):
        picked = np.arange(n)[item]
        a, b = (int(picked.min()), int(picked.max()) + 1) if picked.size else (0, 0)
        if isinstance(item, slice):
            item = slice(None if item.start is None else item.start - a,
                         None if item.stop is None else item.stop - a, item.step)  # fmt: skip
        else:
            item = item[a:b] if np.asarray(item).dtype == np.bool_ else np.asarray(item) - a
        starts.append(a)
        stops.append(b)
        local.append(item)
    return Box(tuple(starts), tuple(stops), ()), tuple(local)


async def _parts(layout: Layout, indexer: Any) -> list[tuple[Box, Any, Any, np.ndarray]]:
    """For every chunk a zarr indexer touches: the box of the cells it picks there, its
    selection in that box, where they go in the selection, and the box's cells."""
    found = []
    for coords, chunk_selection, out_selection, *_ in indexer:
        origin = [c * g for c, g in zip(coords, layout.chunks, strict=True)]
        region = tuple(
            min(g, n - o) for o, g, n in zip(origin, layout.chunks, layout.shape, strict=True)
        )
        box, local = _within(chunk_selection, region)
        starts = tuple(o + a for o, a in zip(origin, box.starts, strict=True))
        stops = tuple(o + b for o, b in zip(origin, box.stops, strict=True))
        found.append((Box(starts, stops, ()), local, out_selection))
    cells = await asyncio.gather(*(_cells(layout, box) for box, _, _ in found))
    return [(*part, objects) for part, objects in zip(found, cells, strict=True)]


async def read(indexer: Any, layout: Layout) -> Any:
    """The cells ``indexer`` selects as zarr returns a selection: an object array of read-only
    cells, or the cell itself for a scalar selection."""
    box = _compat.basic_box(indexer)
    if box is not None:
        out = (await _cells(layout, Box(*box, ()))).reshape(tuple(indexer.shape))
    else:
        out = np.empty(tuple(indexer.shape), dtype=object)
        drop = tuple(getattr(indexer, "drop_axes", ()))
        for _, local, out_selection, cells in await _parts(layout, indexer):
            out[out_selection] = cells[local].squeeze(axis=drop) if drop else cells[local]
        out = out.reshape(indexer.sel_shape) if hasattr(indexer, "sel_shape") else out
    return out[()] if not out.shape else out


def plain_fill(result: Any) -> Any:
    """``result`` of zarr's own read (arrays the engine leaves to zarr) with every fill cell a
    plain read-only ndarray: zarr puts the fill value's own object at every unwritten cell."""
    if type(result) is _FillCell:
        return np.asarray(frozen_cell(result.tobytes(), result.dtype, result.shape)).view(
            np.ndarray
        )
    if not (isinstance(result, np.ndarray) and result.dtype == np.object_):
        return result
    hits = [i for i, cell in enumerate(result.flat) if type(cell) is _FillCell]
    if not hits:
        return result
    flat, holder = result.reshape(-1).copy(), np.empty(1, dtype=object)
    holder[0] = plain_fill(flat[hits[0]])
    flat[hits] = holder
    return flat.reshape(result.shape)


def _distribute(value: Any, shape: tuple[int, ...]) -> np.ndarray:
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


def _namer(indexer: Any, chunks: tuple[int, ...] | None) -> Callable[[int], str]:
    """Names the ``i``-th cell of a write (C order of the selection) by its array index (by
    its place in the selection where the grid is not regular)."""

    def name(i: int) -> str:
        if (box := _compat.basic_box(indexer)) is not None:
            local = np.unravel_index(i, [b - a for a, b in zip(*box, strict=True)])
            return f"cell {tuple(a + int(k) for a, k in zip(box[0], local, strict=True))}"
        if chunks is None:
            return f"cell {i} of the selection"
        where = np.zeros((*indexer.shape, len(chunks)), np.int64)
        for coords, chunk_selection, out_selection, *_ in indexer:
            grid = np.moveaxis(np.indices(chunks, np.int64), 0, -1) + np.multiply(coords, chunks)
            where[out_selection] = grid[chunk_selection].reshape(where[out_selection].shape)
        return f"cell {tuple(where.reshape(-1, len(chunks))[i].tolist())}"

    return name


async def write(array: Any, indexer: Any, value: Any, zarr_write: Callable[[Any], Any]) -> None:
    """Write ``value`` into the cells ``indexer`` selects of the AsyncArray ``array``, every
    cell checked first (``zarr_write(cells)`` is zarr's own write, for arrays it keeps)."""
    dtype: NDArrayDType = array.metadata.data_type
    shape = tuple(int(n) for n in indexer.shape)
    layout = Layout.of(array)
    chunks = getattr(array.metadata.chunk_grid, "chunk_shape", None)
    fill = FillCell(dtype, array.metadata.fill_value)  # a missing cell (None) is the fill
    checked = gather(list(_distribute(value, shape).flat), dtype, fill, _namer(indexer, chunks))
    if layout is not None and (box := _compat.basic_box(indexer)) is not None:
        await _engine.write([(layout, Box(*box, ()), checked)])
        return
    exact = cut(checked.values, checked.offsets, checked.shapes, dtype.pattern).reshape(shape)
    if layout is None:
        await zarr_write(exact)
        return
    drop = tuple(getattr(indexer, "drop_axes", ()))
    parts = await _parts(layout, indexer)  # every part read before any is written
    for _, local, out_selection, cells in parts:
        cells[local] = np.expand_dims(exact[out_selection], drop) if drop else exact[out_selection]
    await _engine.write([(layout, box, gather(list(c.flat), dtype)) for box, _, _, c in parts])


# --------------------------------------------------------------------------- the wrappers


def _ndarray(dtype: Any) -> bool:
    return isinstance(dtype, NDArrayDType)


def _default_serializer(original: Callable[..., Any]) -> Callable[..., Any]:
    def default_serializer_v3(dtype: Any) -> Any:
        return serializer_for(dtype) if _ndarray(dtype) else original(dtype)

    return default_serializer_v3


def _evolve(original: Callable[..., Any]) -> Callable[..., Any]:
    def evolve_from_array_spec(self: BytesCodec, array_spec: Any) -> Any:
        if not _ndarray(dtype := getattr(array_spec, "dtype", None)):
            return original(self, array_spec)
        check_bytes_codec(self.endian, dtype)
        # the same endian setting: BytesCodec(endian=None) for 1-byte items stays None
        return FixedCellBytesCodec(endian=_compat.endian_name(self.endian))  # type: ignore[arg-type]

    return evolve_from_array_spec


def _create_pipeline(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_codec_pipeline(metadata: Any, *, store: Any = None) -> Any:
        if not isinstance(dtype := getattr(metadata, "data_type", None), NDArrayDType):
            return original(metadata, store=store)
        check_codecs(metadata.codecs, dtype)
        if get_pipeline_class().__module__.startswith("zarr."):
            return original(metadata, store=store)
        # another project's pipeline (zarrs) cannot run these codecs: zarr's own serves the
        # object path of arrays the engine leaves to zarr (the engine needs none)
        chunks = getattr(metadata.chunk_grid, "chunk_shape", (1,) * len(metadata.shape))
        pipeline = _compat.batched_pipeline().from_codecs(metadata.codecs)
        return pipeline.evolve_from_array_spec(
            _compat.array_spec(tuple(chunks), dtype, metadata.fill_value)
        )

    return create_codec_pipeline


def _set_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _set_selection(
        self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
    ) -> None:
        if fields or not _ndarray(getattr(self.metadata, "data_type", None)):
            return await original(self, indexer, value, prototype=prototype, fields=fields)

        async def zarr_write(cells: Any) -> None:
            await original(self, indexer, cells, prototype=prototype, fields=fields)

        await write(self, indexer, value, zarr_write)

    return _set_selection


def _get_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _get_selection(
        self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
    ) -> Any:
        if fields or not _ndarray(getattr(self.metadata, "data_type", None)):
            return await original(self, indexer, prototype=prototype, out=out, fields=fields)
        if (layout := Layout.of(self)) is None:
            result = await original(self, indexer, prototype=prototype, out=out, fields=fields)
            return plain_fill(result)
        result = await read(indexer, layout)
        if out is None:
            return result
        target = out.as_ndarray_like()
        target[...] = result
        return target

    return _get_selection


# ----------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class _Target:
    """One zarr function replaced: where, the signature every release 3.1.0-3.4.x has
    (``*name``: keyword-only), what it buys, what retires it, what zarr does without it."""

    name: str
    owner: Callable[[], Any]  # the module or class holding it (looked up when installing)
    parameters: tuple[str, ...]
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
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
            wrapped = target.wrap(current)
            wrapped.__wrapped__ = current  # type: ignore[attr-defined]
            setattr(wrapped, _MARK, True)
            setattr(target.owner(), target.name.rsplit(".", 1)[1], wrapped)
        except Exception as exc:  # never break the host: warn and step aside
            _warn_once(target, f"could not be wrapped ({type(exc).__name__}: {exc})")


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
