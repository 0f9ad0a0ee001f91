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
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
from zarr import registry  # its functions looked up when called: tests replace them
from zarr.codecs.bytes import BytesCodec

from zarr_ndarray_dtype import _compat, _engine
from zarr_ndarray_dtype._columns import cut, gather
from zarr_ndarray_dtype._grid import Box, Shape, cell_at
from zarr_ndarray_dtype._store import Layout
from zarr_ndarray_dtype.codecs import (
    BYTES,
    VLEN,
    FixedCellBytesCodec,
    check_bytes_codec,
    check_codecs,
    install_hint,
    serializer_name,
)
from zarr_ndarray_dtype.dtype import FillCell, NDArrayDType, _FillCell
from zarr_ndarray_dtype.errors import CellError, HookWarning, NDArrayDTypeError

__all__ = ["TARGETS", "install", "installed"]

_MARK = "_zarr_ndarray_dtype_hook"
_warned: set[str] = set()  # targets already warned about in this process (warn once each)
Fn = Callable[..., Any]


async def _cells(layout: Layout, box: Box) -> np.ndarray:
    """The cells of ``box``: an object array of read-only views of one read-only buffer."""
    values, offsets, shapes = await _engine.read(layout, box)
    (values if values.base is None else values.base).flags.writeable = False  # for good
    return cut(values, offsets, shapes, layout.dtype.pattern).reshape(box.extents)


def _place(indexer: Any, parts: list[Any], blocks: list[np.ndarray], out: np.ndarray) -> None:
    """Put what every part selects of its block (its box's cells) where it goes in ``out``."""
    drop = tuple(getattr(indexer, "drop_axes", ()))  # int axes of an orthogonal selection
    for (_, local, out_selection), block in zip(parts, blocks, strict=True):
        out[out_selection] = block[local].squeeze(axis=drop)


def plain_fill(result: Any) -> Any:
    """``result`` of zarr's own read (of arrays the engine leaves to zarr) with every fill cell
    a plain read-only ndarray: zarr puts the fill value's own object at every unwritten cell."""
    if type(result) is _FillCell:
        return result.view(np.ndarray)  # over the fill's bytes: never writable
    if isinstance(result, np.ndarray) and result.dtype == object:
        return _plain(result, out=np.empty(result.shape, dtype=object))
    return result


_plain = np.frompyfunc(lambda c: c.view(np.ndarray) if type(c) is _FillCell else c, 1, 1)


def _distribute(value: Any, shape: Shape) -> list[Any]:
    """The cell of every selected position (C order): ``value`` for a selection of one; from
    an object array, broadcast as numpy does; from nested lists (or tuples), one entry per
    position along each axis; else ``value`` (None: the fill cell) for every position."""
    if not shape:
        return [value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        cells = np.empty(shape, dtype=object)
        try:
            cells[...] = value
            return list(cells.flat)
        except ValueError as exc:
            raise CellError(
                f"an object array of shape {value.shape} does not fit a selection of shape "
                f"{shape}: pass one cell per selected position ({exc})"
            ) from None
    if isinstance(value, list | tuple):
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
        return [cell for item in value for cell in _distribute(item, shape[1:])]
    if isinstance(value, np.ndarray) and value.ndim:
        raise CellError(
            f"a {value.dtype} array of shape {value.shape} is no set of cells for a selection of "
            f"shape {shape}: pass an object array of shape {shape} holding one cell each (or "
            "write columns with write_columnar)"
        )
    return [value] * math.prod(shape)


# ---------------------------------------------------------------------- the hooks
# Each is called as ``hook(original, *arguments)``, ``original`` the zarr function it replaces.


def _default_serializer(original: Fn, dtype: Any) -> Any:
    if not isinstance(dtype, NDArrayDType):
        return original(dtype)
    if (name := serializer_name(dtype.pattern)) == BYTES:
        return BytesCodec(endian="little")
    dist, codec = ("zarr-vlen-ndarray", "VlenNDArrayCodec")
    if name != VLEN:
        dist, codec = ("zarr-ragged-ndarray", "RaggedNDArrayCodec")
    try:
        return registry.get_codec_class(name)()
    except Exception:  # KeyError up to zarr 3.3, UnknownCodecError later
        raise NDArrayDTypeError(
            f"no serializer for {dtype!r}: its pattern {dtype.pattern.to_json()} is served by the "
            f"{name!r} codec, which is not installed: {install_hint(dist)}, and pass "
            f"serializer={dist.replace('-', '_')}.{codec}()"
        ) from None


def _evolve(original: Fn, self: BytesCodec, array_spec: Any) -> Any:
    if not isinstance(dtype := getattr(array_spec, "dtype", None), NDArrayDType):
        return original(self, array_spec)
    check_bytes_codec(self.endian, dtype)
    # the same endian setting: BytesCodec(endian=None) for 1-byte items stays None
    return FixedCellBytesCodec(endian=_compat.endian_name(self.endian))  # type: ignore[arg-type]


def _create_pipeline(original: Fn, metadata: Any, *, store: Any = None) -> Any:
    if not isinstance(dtype := getattr(metadata, "data_type", None), NDArrayDType):
        return original(metadata, store=store)
    check_codecs(metadata.codecs, dtype)
    if registry.get_pipeline_class().__module__.startswith("zarr."):
        return original(metadata, store=store)
    # another project's pipeline (zarrs) cannot run these codecs: zarr's own serves the object
    # path of arrays the engine leaves to zarr (the engine needs none)
    chunks = getattr(metadata.chunk_grid, "chunk_shape", (1,) * len(metadata.shape))
    spec = _compat.array_spec(tuple(chunks), dtype, metadata.fill_value)
    return _compat.BatchedCodecPipeline.from_codecs(metadata.codecs).evolve_from_array_spec(spec)


async def _set_selection(
    original: Fn, self: Any, indexer: Any, value: Any, *, prototype: Any, fields: Any = None
) -> None:
    if fields or not isinstance(dtype := getattr(self.metadata, "data_type", None), NDArrayDType):
        return await original(self, indexer, value, prototype=prototype, fields=fields)
    meta, layout = self.metadata, Layout.of(self)
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

    checked = gather(_distribute(value, shape), dtype, FillCell(dtype, meta.fill_value), name)
    if layout is not None and box is not None:
        return await _engine.write([(layout, box, checked)])
    exact = cut(checked.values, checked.offsets, checked.shapes, dtype.pattern).reshape(shape)
    if layout is None:  # zarr's own write, of exact cells
        return await original(self, indexer, exact, prototype=prototype, fields=fields)
    parts = _compat.chunk_boxes(indexer, layout.chunks)
    blocks = await asyncio.gather(*(_cells(layout, b) for b, _, _ in parts))  # all read first
    drop = tuple(getattr(indexer, "drop_axes", ()))
    for (_, local, out_selection), block in zip(parts, blocks, strict=True):
        block[local] = np.expand_dims(exact[out_selection], drop)
    cells = [gather(list(block.flat), dtype) for block in blocks]
    await _engine.write([(layout, b, c) for (b, _, _), c in zip(parts, cells, strict=True)])


async def _get_selection(
    original: Fn, self: Any, indexer: Any, *, prototype: Any, out: Any = None, fields: Any = None
) -> Any:
    if fields or not isinstance(getattr(self.metadata, "data_type", None), NDArrayDType):
        return await original(self, indexer, prototype=prototype, out=out, fields=fields)
    if (layout := Layout.of(self)) is None:  # zarr's own read
        result = await original(self, indexer, prototype=prototype, out=out, fields=fields)
        return plain_fill(result)
    if (box := _compat.basic_box(indexer)) is not None:
        cells = (await _cells(layout, box)).reshape(box.shape)
    else:
        parts = _compat.chunk_boxes(indexer, layout.chunks)
        cells = np.empty(tuple(indexer.shape), dtype=object)
        blocks = await asyncio.gather(*(_cells(layout, b) for b, _, _ in parts))
        _place(indexer, parts, blocks, cells)
        cells = cells.reshape(getattr(indexer, "sel_shape", cells.shape))  # coordinates, masks
    result = cells[()] if not cells.shape else cells  # a scalar selection: the cell itself
    if out is None:
        return result
    out.as_ndarray_like()[...] = result
    return out.as_ndarray_like()


# ----------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class _Target:
    """One zarr function replaced: its name, the signature every release 3.1.0-3.4.x has
    (``*name``: keyword-only), what it buys, what retires it, what zarr does without it."""

    name: str
    parameters: tuple[str, ...]
    hook: Fn  # called as hook(original, *arguments)
    buys: str
    retired_by: str
    without: str

    def owner(self) -> Any:
        """The module or class holding the function (looked up now: importing zarr imports it)."""
        return functools.reduce(getattr, self.name.split(".")[1:-1], zarr)

    def current(self) -> Any:
        """The function zarr has there now (defined on that very class), or None."""
        return vars(self.owner()).get(self.name.rsplit(".", 1)[1])


TARGETS = (
    _Target(
        "zarr.core.array.default_serializer_v3", ("dtype",), _default_serializer,
        "create_array(dtype=NDArrayDType(...)) without serializer=: the codec of the pattern",
        "a ZDType hook naming its default serializer (none in zarr 3.1-3.4)",
        "arrays of the 'ndarray' data type get no default serializer: pass one, e.g. "
        "serializer=zarr_vlen_ndarray.VlenNDArrayCodec() for patterns [null, d1, ..., dk]",
    ),
    _Target(
        "zarr.codecs.BytesCodec.evolve_from_array_spec", ("self", "array_spec"), _evolve,
        "all-fixed arrays keep 'endian' in their bytes codec and read through zarr's pipeline",
        "zarr keeping a bytes codec's endian for data types it does not know",
        "all-fixed arrays lose their endian setting when created or opened",
    ),
    _Target(
        "zarr.core.array.create_codec_pipeline", ("metadata", "*store"), _create_pipeline,
        "codecs that cannot serve the type refused at creation and opening (SPEC 1.6); the "
        "arrays open under another project's codec pipeline (zarrs, strict or not)",
        "a ZDType codec check in zarr, and pipelines that step aside per array",
        "an ndarray array with e.g. vlen-bytes opens (its reads give raw bytes), and zarrs "
        "refuses to open ndarray arrays",
    ),
    _Target(
        "zarr.AsyncArray._set_selection", ("self", "indexer", "value", "*prototype", "*fields"),
        _set_selection,
        "object writes through the engine: every cell checked first, lists of cells, any "
        "codec pipeline",
        "a data type hook for normalising and writing its values in zarr's setitem",
        "object writes go through zarr's pipeline chunk by chunk: a cell that does not fit "
        "stops the write after earlier chunks are stored",
    ),
    _Target(
        "zarr.AsyncArray._get_selection", ("self", "indexer", "*prototype", "*out", "*fields"),
        _get_selection,
        "object reads through the engine: a scalar selection is the cell, one cell costs one "
        "cell, corrupt chunks are named, any codec pipeline",
        "a data type hook for reading its values in zarr's getitem",
        "object reads go through zarr's pipeline: scalars wrapped in 0-d object arrays, "
        "unwritten cells the fill value's own object",
    ),
)  # fmt: skip


def install() -> None:
    """Install every hook whose target zarr has as expected, else warn once; never raises."""
    for target in TARGETS:
        try:
            if getattr(current := target.current(), _MARK, False):
                continue
            if current is None:
                problem = "does not exist"
            else:
                params = inspect.signature(current).parameters.values()
                got = tuple(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name for p in params)
                if got == target.parameters:
                    hooked = _hooked(target.hook, current)
                    setattr(target.owner(), target.name.rsplit(".", 1)[1], hooked)
                    continue
                expected = ", ".join(target.parameters)
                problem = f"has the signature ({', '.join(got)}), not the expected ({expected})"
        except Exception as exc:  # never break the host: warn and step aside
            problem = f"could not be wrapped ({type(exc).__name__}: {exc})"
        if target.name not in _warned:
            _warned.add(target.name)
            warnings.warn(
                f"zarr-ndarray-dtype left zarr {zarr.__version__} untouched: {target.name} "
                f"{problem}. Consequence: {target.without}.",
                HookWarning,
                stacklevel=2,
            )


def _hooked(hook: Fn, original: Fn) -> Fn:
    @functools.wraps(original)  # its __wrapped__ is the original
    def hooked(*args: Any, **kwargs: Any) -> Any:
        return hook(original, *args, **kwargs)

    setattr(hooked, _MARK, True)
    return hooked


def installed() -> dict[str, bool]:
    """Which hooks are active in this process (by target name)."""
    return {t.name: bool(getattr(t.current(), _MARK, False)) for t in TARGETS}
