"""Narrow, fail-safe hooks into zarr-python, installed once on import.

zarr has no extension point through which a data type picks its serializer, adapts ``bytes``,
checks its codecs, or reads and writes its own elements; so each hook wraps one zarr function
and acts ONLY for the ``ndarray`` data type. A target that is missing or whose signature changed
(a zarr release that moved it) is left alone, with one :class:`HookWarning` saying what that
costs: importing this package never breaks zarr. :data:`TARGETS` is the one table of them.

Object reads and writes (``a[sel]``, ``a[sel] = cells``) of an ``ndarray`` array go through the
columnar engine, whatever codec pipeline zarr is configured with: every cell is converted and
checked before any chunk is stored, a bad one named by its index; a scalar selection gives the
cell itself.
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
    dist, cls_name = (
        ("zarr-vlen-ndarray", "VlenNDArrayCodec")
        if name == VLEN
        else ("zarr-ragged-ndarray", "RaggedNDArrayCodec")
    )
    from zarr.registry import get_codec_class

    try:
        return get_codec_class(name)()
    except Exception:  # KeyError up to zarr 3.3, UnknownCodecError later
        raise NDArrayDTypeError(
            f"no serializer for {dtype!r}: the pattern {dtype.pattern.to_json()} is served by the "
            f"{name!r} codec, which is not installed. Run `pip install {dist}` "
            f"and pass serializer={dist.replace('-', '_')}.{cls_name}()."
        ) from None


def _is_ndarray(dtype: Any) -> bool:
    return isinstance(dtype, NDArrayDType)


# ------------------------------------------------------------------------- object reads


def _bounds(selection: Any, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], Any]:
    """The smallest box of a chunk of ``shape`` holding the cells a zarr chunk selection picks
    (``(starts, stops)``), and the selection relative to that box."""
    starts, stops, local = [], [], []
    for item, n in zip(selection, shape, strict=True):
        picked = np.arange(n)[item]
        a = int(picked.min()) if picked.size else 0
        b = int(picked.max()) + 1 if picked.size else 0
        if isinstance(item, slice):
            item = slice(item.start - a if item.start is not None else None,
                         item.stop - a if item.stop is not None else None, item.step)  # fmt: skip
        elif isinstance(item, np.ndarray) and item.dtype == bool:
            item = item[a:b]
        else:
            item = np.asarray(item) - a
        starts.append(a)
        stops.append(b)
        local.append(item)
    return tuple(starts), tuple(stops), tuple(local)


async def _parts(layout: Layout, indexer: Any) -> list[tuple[Box, Any, Any, np.ndarray]]:
    """For every chunk a zarr indexer touches: the box of cells it picks there, its selection
    in that box, where they go in the selection, and the box's cells (a writable object
    array of read-only cells)."""
    found = []
    for projection in indexer:
        coords, chunk_selection, out_selection = projection[:3]
        origin = [c * g for c, g in zip(coords, layout.chunks, strict=True)]
        region = [
            min(g, n - o) for o, g, n in zip(origin, layout.chunks, layout.shape, strict=True)
        ]
        lo, hi, local = _bounds(chunk_selection, tuple(region))
        starts = tuple(o + a for o, a in zip(origin, lo, strict=True))
        stops = tuple(o + b for o, b in zip(origin, hi, strict=True))
        found.append((Box(starts, stops, ()), local, out_selection))
    cells = await asyncio.gather(*(_objects(layout, box) for box, _, _ in found))
    return [(*part, objects) for part, objects in zip(found, cells, strict=True)]


async def _objects(layout: Layout, box: Box) -> np.ndarray:
    """The cells of ``box``, read-only views of one read-only buffer of the engine's."""
    cells = await _engine.read(layout, box)
    owner = cells.values if cells.values.base is None else cells.values.base
    owner.flags.writeable = False  # no cell can be made writable again
    extents = box.extents
    return cut(cells.values, cells.offsets, cells.shapes, layout.dtype.pattern).reshape(extents)


async def read(array: Any, indexer: Any, layout: Layout) -> Any:
    """The cells ``indexer`` selects, as zarr returns a selection: an object array of read-only
    cells, or the cell itself for a scalar selection."""
    box = _compat.basic_box(indexer)
    shape = tuple(int(n) for n in indexer.shape)
    if box is not None:
        out = (await _objects(layout, Box(*box, ()))).reshape(shape)
    else:
        out = np.empty(shape, dtype=object)
        drop = tuple(getattr(indexer, "drop_axes", ()))
        for _, local, out_selection, cells in await _parts(layout, indexer):
            picked = cells[local]
            out[out_selection] = picked.squeeze(axis=drop) if drop else picked
        out = out.reshape(indexer.sel_shape) if hasattr(indexer, "sel_shape") else out
    return out[()] if not out.shape else out  # a scalar selection: the cell itself


def plain_fill(result: Any) -> Any:
    """``result`` of zarr's own read with every fill cell a plain read-only ndarray (zarr puts
    the fill value's own object, a :class:`_FillCell`, at every unwritten cell)."""
    if type(result) is _FillCell:
        return np.asarray(frozen_cell(result.tobytes(), result.dtype, result.shape)).view(
            np.ndarray
        )
    if not isinstance(result, np.ndarray) or result.dtype != object:
        return result
    flat = result.reshape(-1)
    hits = [i for i, cell in enumerate(flat.tolist()) if type(cell) is _FillCell]
    if hits:
        result = result.copy()
        holder = np.empty(1, dtype=object)
        holder[0] = plain_fill(flat[hits[0]])
        result.reshape(-1)[hits] = holder
    return result


# ------------------------------------------------------------------------ object writes


def _distribute(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The cell every selected position receives: an object array of the selection's shape.

    One cell for a selection of one (whatever it is); an object array broadcast as numpy does;
    a list (or tuple) holding one entry per position along the selection's axes.
    """
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
        _nested(cells, value)
    elif isinstance(value, np.ndarray) and value.ndim:
        raise CellError(
            f"a {value.dtype} array of shape {value.shape} is no set of cells for a selection of "
            f"shape {shape}: pass an object array of shape {shape} holding one cell each (or "
            "write columns with write_columnar)"
        )
    else:
        cells.fill(value)  # one object for every position (None: the fill cell)
    return cells


def _nested(cells: np.ndarray, value: list[Any] | tuple[Any, ...]) -> None:
    """Fill ``cells`` from nested sequences, one level per axis of ``cells``."""
    if len(value) != cells.shape[0]:
        raise CellError(
            f"a sequence of {len(value)} cells does not fit a selection of {cells.shape[0]} "
            "along its axis: pass one cell per selected position"
        )
    for i, item in enumerate(value):
        if cells.ndim == 1:
            cells[i] = item
        elif isinstance(item, list | tuple):
            _nested(cells[i], item)
        else:
            raise CellError(
                f"a sequence of cells nests {cells.ndim} levels deep for a selection of shape "
                f"{cells.shape}, but its entry {i} is a {type(item).__name__}"
            )


def _namer(indexer: Any, chunks: tuple[int, ...] | None) -> Callable[[int], str]:
    """Names the ``i``-th cell of a write (C order of the selection) by its array index (its
    place in the selection where the grid is not regular)."""

    def name(i: int) -> str:
        box = _compat.basic_box(indexer)
        if box is not None:
            extents = [b - a for a, b in zip(*box, strict=True)]
            local = np.unravel_index(i, extents) if extents else ()
            return f"cell {tuple(a + int(k) for a, k in zip(box[0], local, strict=True))}"
        if chunks is None:
            return f"cell {i} of the selection"
        where = np.zeros((*indexer.shape, len(chunks)), np.int64)
        for projection in indexer:
            coords, chunk_selection, out_selection = projection[:3]
            origin = np.array(coords, np.int64) * np.array(chunks, np.int64)
            grid = np.moveaxis(np.indices(chunks, np.int64), 0, -1) + origin
            target = where[out_selection]
            where[out_selection] = grid[chunk_selection].reshape(target.shape)
        return f"cell {tuple(int(c) for c in where.reshape(-1, len(chunks))[i])}"

    return name


async def write(array: Any, indexer: Any, value: Any, zarr_write: Callable[[Any], Any]) -> None:
    """Write ``value`` into the cells ``indexer`` selects of the ``ndarray`` AsyncArray
    ``array``; ``zarr_write(cells)`` is zarr's own write of that selection."""
    dtype: NDArrayDType = array.metadata.data_type
    shape = tuple(int(n) for n in indexer.shape)
    layout = Layout.of(array)
    chunks = getattr(array.metadata.chunk_grid, "chunk_shape", None)
    fill = FillCell(dtype, array.metadata.fill_value)  # a missing cell (None) is the fill
    checked = gather(
        list(_distribute(value, shape).reshape(-1)), dtype, fill, _namer(indexer, chunks)
    )
    box = _compat.basic_box(indexer)
    if layout is not None and box is not None:
        await _engine.write([(layout, Box(*box, ()), checked)])
        return
    exact = cut(checked.values, checked.offsets, checked.shapes, dtype.pattern).reshape(shape)
    if layout is None:
        await zarr_write(exact)
        return
    drop = tuple(getattr(indexer, "drop_axes", ()))
    parts = await _parts(layout, indexer)  # every part read before any is written
    for _, local, out_selection, cells in parts:
        picked = exact[out_selection]
        if drop:
            picked = np.expand_dims(picked, drop)
        cells[local] = picked
    jobs = [(layout, part, gather(list(c.reshape(-1)), dtype)) for part, _, _, c in parts]
    await _engine.write(jobs)


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


def _create_pipeline(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_codec_pipeline(metadata: Any, *, store: Any = None) -> Any:
        dtype = getattr(metadata, "data_type", None)
        if not isinstance(dtype, NDArrayDType):
            return original(metadata, store=store)
        check_codecs(metadata.codecs, dtype)
        if get_pipeline_class().__module__.startswith("zarr."):
            return original(metadata, store=store)
        # Another project's pipeline (zarrs) cannot run these codecs; zarr's own serves the
        # object path of arrays the engine leaves to zarr (the engine itself needs none).
        pipeline = _compat.batched_pipeline().from_codecs(metadata.codecs)
        chunks = getattr(metadata.chunk_grid, "chunk_shape", (1,) * len(metadata.shape))
        return pipeline.evolve_from_array_spec(
            _compat.array_spec(tuple(chunks), dtype, metadata.fill_value)
        )

    return create_codec_pipeline


def _set_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _set_selection(
        self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
    ) -> None:
        if fields or not _is_ndarray(getattr(self.metadata, "data_type", None)):
            return await original(self, indexer, value, prototype=prototype, fields=fields)

        async def zarr_write(cells: Any) -> None:
            await original(self, indexer, cells, prototype=prototype, fields=fields)

        await write(self, indexer, value, zarr_write)

    return _set_selection


def _get_selection(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _get_selection(
        self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
    ) -> Any:
        layout = None
        if not fields and _is_ndarray(getattr(self.metadata, "data_type", None)):
            layout = Layout.of(self)
            if layout is None:
                result = await original(self, indexer, prototype=prototype, out=out, fields=fields)
                return plain_fill(result)
        if layout is None:
            return await original(self, indexer, prototype=prototype, out=out, fields=fields)
        result = await read(self, indexer, layout)
        if out is None:
            return result
        target = out.as_ndarray_like()
        target[...] = result
        return target

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

    @property
    def attribute(self) -> str:
        return self.name.rsplit(".", 1)[1]

    def current(self) -> Any:
        """The function zarr has there now (defined on that very class), or None."""
        owner = self.owner()
        if isinstance(owner, type):
            return owner.__dict__.get(self.attribute)
        return getattr(owner, self.attribute, None)


#: Every zarr function replaced, what it buys, and what would retire it (README "Hooks").
TARGETS = (
    _Target(
        "zarr.core.array.default_serializer_v3", _compat.array_module, ("dtype",),
        _default_serializer,
        "arrays of the 'ndarray' data type get no default serializer, so pass one explicitly: "
        "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() for patterns [null, d1, ..., dk], "
        "serializer=zarr.codecs.BytesCodec(endian='little') for all-fixed ones",
    ),
    _Target(
        "zarr.codecs.BytesCodec.evolve_from_array_spec", lambda: BytesCodec,
        ("self", "array_spec"), _evolve,
        "a plain 'bytes' codec is not adapted to the 'ndarray' data type: all-fixed arrays "
        "lose their endian setting when created and their object reads through zarr fail",
    ),
    _Target(
        "zarr.core.array.create_codec_pipeline", _compat.array_module, ("metadata", "*store"),
        _create_pipeline,
        "an ndarray array with a codec that cannot serve it (e.g. vlen-bytes) is not refused "
        "when it is created or opened, and another project's codec pipeline (zarrs) refuses "
        "to open ndarray arrays",
    ),
    _Target(
        "zarr.AsyncArray._set_selection", lambda: AsyncArray,
        ("self", "indexer", "value", "*prototype", "*fields"), _set_selection,
        "object writes (array[...] = cells) go through zarr's codec pipeline chunk by chunk: a "
        "cell that does not fit stops the write after earlier chunks are stored",
    ),
    _Target(
        "zarr.AsyncArray._get_selection", lambda: AsyncArray,
        ("self", "indexer", "*prototype", "*out", "*fields"), _get_selection,
        "object reads go through zarr's codec pipeline: a scalar selection is wrapped in 0-d "
        "object arrays and unwritten cells read as the fill value's own object",
    ),
)  # fmt: skip


def _problem(target: _Target, function: object) -> str | None:
    """Why ``function`` cannot be wrapped as ``target`` (``None`` if it can)."""
    if function is None:
        return "does not exist"
    try:
        parameters = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "has no inspectable signature"
    got = tuple(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name for p in parameters)
    if got != target.parameters:
        expected = ", ".join(target.parameters)
        return f"has the signature ({', '.join(got)}), not the expected ({expected})"
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
    setattr(target.owner(), target.attribute, wrapped)


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
    for target in TARGETS:
        try:
            _install(target)
        except Exception as exc:  # never break the host: warn and step aside
            _warn_once(target, f"could not be wrapped ({type(exc).__name__}: {exc})")


def installed() -> dict[str, bool]:
    """Which hooks are active in this process (by target name)."""
    return {t.name: bool(getattr(t.current(), _MARK, False)) for t in TARGETS}
