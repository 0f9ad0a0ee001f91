"""Ragged Dask arrays into ``ndarray`` arrays and back, block by block (the ``dask`` extra,
imported only when these functions run).

``dask.array.to_zarr`` hands zarr the dtype ``object``, which zarr refuses as ambiguous, and
checks no block against the shards of an array it creates. :func:`to_zarr` writes object Dask
arrays of cells, every block through :func:`dask.array.store` (blocks must not share a shard, or
unsharded a chunk: :func:`check_blocks`, which the xarray writer asks too); :func:`map_columnar`
and :func:`read_columnar_blocks` read a block a task as :class:`~zarr_ndarray_dtype.Columnar`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import numpy.typing as npt
import zarr

from zarr_ndarray_dtype._cell_ids import data_type_and_codec
from zarr_ndarray_dtype._compat import regular_chunk_shape
from zarr_ndarray_dtype._grid import Selection, resolve
from zarr_ndarray_dtype.columnar import Columnar, read_columnar
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import BlockAlignmentError

if TYPE_CHECKING:
    import dask.array as da
    from dask.delayed import Delayed

__all__ = ["check_blocks", "map_columnar", "read_columnar_blocks", "to_zarr", "shard_or_chunk"]

Blocks = tuple[tuple[int, ...], ...]


def _dask() -> Any:
    try:
        import dask
        import dask.array
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "zarr_ndarray_dtype.dask needs dask: pip install 'zarr-ndarray-dtype[dask]'"
        ) from exc
    return dask


# ---------------------------------------------------------------------------- the rule


def shard_or_chunk(array: Any) -> tuple[tuple[int, ...], str]:
    """The cells one write of ``array`` may rewrite as a whole, and their name: the shard
    shape of a sharded array (zarr rewrites a whole shard object on a partial write), else the
    chunk shape."""
    unit = regular_chunk_shape(array.metadata)
    if unit is None:
        raise ValueError(
            f"{array.metadata.chunk_grid!r} is not a regular chunk grid; blocks are written in "
            "parallel only into arrays with a regular grid: create the array with chunks= (and "
            "shards=) of one shape"
        )
    return unit, "chunk" if array.shards is None else "shard"


def check_blocks(
    blocks: Blocks,
    starts: Sequence[int],
    unit: Sequence[int],
    kind: str,
    *,
    what: str = "to_zarr",
    keys: Sequence[Hashable] | None = None,
    rechunk: str = "darr.rechunk",
    error: type[Exception] = BlockAlignmentError,
) -> None:
    """Refuse Dask ``blocks`` (a Dask array's ``.chunks``) written from ``starts`` on that end
    inside a ``unit`` (``kind``: "shard" or "chunk"; see :func:`shard_or_chunk`): the two blocks
    meeting there would each rewrite it, and one task would undo the other's cells.

    Only edges between blocks count: the first block may start and the last one end anywhere.
    The message names the first such axis by ``keys`` (default: its number) and shows the fix
    as one call of ``rechunk`` with every axis that needs it, and is raised as ``error``
    prefixed by ``what``.

    >>> check_blocks(((64, 64, 8),), (0,), (64,), "shard")
    >>> check_blocks(((37, 64), (64, 64)), (0, 10), (64, 64), "shard")
    Traceback (most recent call last):
    ...
    zarr_ndarray_dtype.errors.BlockAlignmentError: to_zarr: dask blocks along axis 0 end at 37, \
inside a shard (64 cells along it) that the next block writes too (zarr rewrites a whole shard \
on a partial write: the two tasks would race); rechunk so that blocks end on multiples of the \
shard along every axis: darr.rechunk({0: 64, 1: (54,) + (64,) + (10,)})
    """
    fixes = {}
    first = None
    for axis, (sizes, start, size) in enumerate(zip(blocks, starts, unit, strict=True)):
        edges = start + np.cumsum(sizes[:-1], dtype=np.int64)
        inside = edges[edges % size != 0]
        if not inside.size:
            continue
        key = axis if keys is None else keys[axis]
        fixes[key] = _aligned(start, sum(sizes), size)
        if first is None:
            where = f"axis {axis}" if keys is None else repr(key)
            first = f"{where} end at {int(inside[0])}, inside a {kind} ({size} cells along it)"
    if first is not None:
        mapping = ", ".join(f"{key!r}: {fix}" for key, fix in fixes.items())
        raise error(
            f"{what}: dask blocks along {first} that the next block writes too (zarr rewrites "
            f"a whole {kind} on a partial write: the two tasks would race); rechunk so that "
            f"blocks end on multiples of the {kind} along every axis: {rechunk}({{{mapping}}})"
        )


def _aligned(start: int, extent: int, size: int) -> str:
    """Block sizes of ``extent`` cells from ``start`` that end on multiples of ``size``, as the
    shortest Python expression (``64``, or ``(54,) + (64,) * 3 + (10,)`` off the grid)."""
    if not start % size:
        return str(size)
    first = min(extent, size - start % size)
    whole, last = divmod(extent - first, size)
    parts = [f"({first},)", *([f"({size},)" + f" * {whole}" * (whole > 1)] if whole else [])]
    return " + ".join(parts + ([f"({last},)"] if last else []))


# ------------------------------------------------------------------------------- write


@overload
def to_zarr(
    darr: da.Array,
    store: Any,
    *,
    name: str | None = ...,
    dtype: NDArray | None = ...,
    chunks: int | Sequence[int] | None = ...,
    shards: int | Sequence[int] | Mapping[str, Any] | None = ...,
    region: Selection | None = ...,
    overwrite: bool = ...,
    compute: Literal[True] = ...,
    **create_kwargs: Any,
) -> zarr.Array: ...


@overload
def to_zarr(
    darr: da.Array,
    store: Any,
    *,
    name: str | None = ...,
    dtype: NDArray | None = ...,
    chunks: int | Sequence[int] | None = ...,
    shards: int | Sequence[int] | Mapping[str, Any] | None = ...,
    region: Selection | None = ...,
    overwrite: bool = ...,
    compute: Literal[False],
    **create_kwargs: Any,
) -> Delayed: ...


def to_zarr(
    darr: da.Array,
    store: Any,
    *,
    name: str | None = None,
    dtype: NDArray | None = None,
    chunks: int | Sequence[int] | None = None,
    shards: int | Sequence[int] | Mapping[str, Any] | None = None,
    region: Selection | None = None,
    overwrite: bool = False,
    compute: bool = True,
    **create_kwargs: Any,
) -> zarr.Array | Delayed:
    """Write the object Dask array ``darr`` of cells into an ``ndarray`` array, block by block.

    ``store`` is where to create a new array (anything ``zarr.create_array`` takes, with
    ``name``, ``overwrite`` and ``create_kwargs``; ``dtype`` is needed, the cells being known
    only once computed; chunks default to the Dask blocks, and with ``shards`` (a shape or
    zarr's mapping) ``chunks`` is the inner chunk shape), or an existing ``ndarray``
    ``zarr.Array``, written whole or at ``region`` (step-1 slices, the shape of ``darr``).

    A task a block writes ``array[region] = block``; blocks ending inside a shard (unsharded: a
    chunk) would race, and :func:`check_blocks` refuses them before anything is created. A cell
    that does not fit fails its block's task, other blocks may be written. Returns the array,
    or with ``compute=False`` a ``dask.delayed`` object that writes and returns it.
    """
    dask = _dask()
    if darr.dtype != object:
        raise TypeError(
            f"to_zarr writes Dask arrays of cells (dtype object, each element one ndarray), got "
            f"dtype {darr.dtype}; wrap the cells in an object array (e.g. darr.map_blocks(f, "
            "dtype=object) with f returning an object array of cells)"
        )
    if any(np.isnan(n) for n in darr.shape):
        raise ValueError(
            f"to_zarr: the Dask array's shape {darr.shape} is unknown along some axis; compute "
            "it first: darr.compute_chunk_sizes()"
        )
    if isinstance(store, zarr.Array):
        given = {"name": name, "chunks": chunks, "shards": shards, "overwrite": overwrite or None}
        extra = sorted([k for k, v in given.items() if v is not None] + list(create_kwargs))
        if extra:
            raise TypeError(
                f"to_zarr: {extra} describe a new array, but store is an existing zarr.Array, "
                "written as it is; leave them out, or pass a store to create a new array"
            )
        array, starts = store, _start_in(store, darr, dtype, region)
    elif region is not None:
        raise ValueError(
            "to_zarr: region= writes into an existing array; pass the array itself: "
            "to_zarr(darr, zarr.open_array(store, path=..., mode='r+'), region=...)"
        )
    else:
        create = {"name": name, "overwrite": overwrite, **create_kwargs}
        array, starts = _new_array(darr, store, dtype, chunks, shards, create), (0,) * darr.ndim
    region = tuple(slice(s, s + n) for s, n in zip(starts, darr.shape, strict=True))
    # dask's own store: a task a block, ``target[region of the block] = block``; no lock, the
    # blocks share no shard (checked above).
    stored = dask.array.store(darr, _Target(array), regions=region, lock=False, compute=compute)
    return array if compute else dask.delayed(_written)(array, stored)


def _new_array(
    darr: Any, store: Any, dtype: NDArray | None, chunks: Any, shards: Any, create: Any
) -> zarr.Array:
    """The array a Dask array is written into, created after its blocks were checked."""
    if not isinstance(dtype, NDArray):
        raise TypeError(
            f"to_zarr needs dtype=NDArray(dtype=..., shape=(...)) to create an array, got "
            f"{dtype!r} (the cells of a Dask array are known only once computed)"
        )
    ndim = darr.ndim
    inner = _extents(chunks, "chunks", ndim) or tuple(max(c[0], 1) for c in darr.chunks)
    mapping = isinstance(shards, Mapping)  # a shape, or zarr's {"shape": ..., ...}
    outer = _extents(shards["shape"] if mapping else shards, "shards", ndim)
    if outer is not None and chunks is None:
        raise ValueError(
            f"to_zarr: with shards={outer}, pass chunks= (the shape of the inner chunks "
            "a shard holds; each must divide the shard)"
        )
    check_blocks(darr.chunks, (0,) * ndim, outer or inner, "chunk" if outer is None else "shard")
    zdtype: Any = dtype  # zarr's annotation names its own data types
    sharding = shards if mapping else outer
    return zarr.create_array(
        store, shape=darr.shape, dtype=zdtype, chunks=inner, shards=sharding, **create
    )


def _start_in(
    array: zarr.Array, darr: Any, dtype: NDArray | None, region: Selection | None
) -> tuple[int, ...]:
    """Where the Dask array starts in the existing ``array`` (everything checked)."""
    stored = data_type_and_codec(array, "to_zarr")[0]
    if dtype is not None and dtype != stored:
        raise ValueError(
            f"to_zarr: dtype={dtype!r} differs from the array's data type {stored!r}; an "
            "existing array keeps its data type: leave dtype out"
        )
    box = resolve(... if region is None else region, tuple(array.shape), "to_zarr")
    if len(box.shape) != array.ndim or box.shape != tuple(darr.shape):
        raise ValueError(
            f"to_zarr: the Dask array of shape {tuple(darr.shape)} does not fit "
            + (f"region {box.slices} (shape {box.shape}) of " if region is not None else "")
            + f"the array of shape {tuple(array.shape)}; pass region= as one slice per axis, "
            "the shape of the Dask array"
        )
    unit, kind = shard_or_chunk(array)
    check_blocks(darr.chunks, box.starts, unit, kind)
    return box.starts


def _extents(value: int | Sequence[int] | None, what: str, ndim: int) -> tuple[int, ...] | None:
    """``chunks`` or ``shards`` as one int per axis (an int stands for every axis)."""
    if value is None:
        return None
    if isinstance(value, int | np.integer):
        return (int(value),) * ndim
    extents = tuple(value)
    if len(extents) != ndim or not all(isinstance(n, int | np.integer) for n in extents):
        raise TypeError(
            f"to_zarr: {what}={value!r} must be an int or a tuple of {ndim} ints (one per axis)"
        )
    return tuple(int(n) for n in extents)


class _Target:
    """What dask stores into: the array, refusing a worker's copy of a ``MemoryStore``."""

    def __init__(self, array: zarr.Array) -> None:
        self.array = array

    def __setitem__(self, region: Any, block: np.ndarray) -> None:
        _refuse_lost_copy(self.array)
        self.array[region] = block


def _written(array: zarr.Array, stored: Any) -> zarr.Array:
    return array


def _refuse_lost_copy(array: zarr.Array) -> None:
    """A distributed worker holds its own copy of a ``MemoryStore``: writes to it are lost."""
    distributed = sys.modules.get("distributed")
    if distributed is None or not isinstance(array.store, zarr.storage.MemoryStore):
        return
    try:
        distributed.get_worker()
    except ValueError:  # not in a worker
        return
    raise ValueError(
        "to_zarr: the array lives in a zarr.storage.MemoryStore, which a distributed worker "
        "receives as its own copy: what it writes there is lost. Write to a store every worker "
        "reaches (a directory, object storage), or compute on the threaded scheduler"
    )


# -------------------------------------------------------------------------------- read


def _blocks(array: Any, chunks: Any, what: str) -> Blocks:
    """The blocks of a lazy read: ``chunks`` (anything Dask's ``normalize_chunks`` takes) or,
    by default, the array's write unit (whole shards, else chunks: whole stored objects)."""
    data_type_and_codec(array, what)
    normalize = _dask().array.core.normalize_chunks
    shape = tuple(int(n) for n in array.shape)
    return tuple(normalize(shard_or_chunk(array)[0] if chunks is None else chunks, shape))


def map_columnar(
    array: Any,
    fn: Callable[[Columnar], Any],
    *,
    dtype: npt.DTypeLike,
    trailing: Sequence[int] = (),
    chunks: Any = None,
) -> da.Array:
    """A Dask array whose every block is ``fn`` of that block's cells as
    :class:`~zarr_ndarray_dtype.Columnar` (read by one task with ``read_columnar``).

    ``fn(col)`` returns an array of ``dtype`` of shape ``col.shape + trailing``: one result of
    shape ``trailing`` per cell (e.g. per-cell means of ``(n, 2)`` cells: ``trailing=(2,)``).
    Blocks are ``chunks`` (an int, a tuple, or a tuple of block sizes per axis, as Dask takes
    them), by default the array's shards (else its chunks), so each task fetches whole objects.
    ``fn`` runs where the task runs: on a distributed cluster it must be importable there.
    """
    da = _dask().array
    blocks = _blocks(array, chunks, "map_columnar")
    extra = tuple(int(n) for n in trailing)
    out = blocks + tuple((n,) for n in extra)
    return da.map_blocks(
        _map_columnar_block,  # its name names the tasks (dask >= 2024.1 deprecates token=)
        dtype=dtype,
        chunks=out,
        meta=np.empty((0,) * len(out), dtype=dtype),
        array=array,
        fn=fn,
    )


def _map_columnar_block(
    array: Any, fn: Callable[[Columnar], Any], block_info: Any = None
) -> np.ndarray:
    """One task of :func:`map_columnar`."""
    info = block_info[None]
    location = info["array-location"][: array.ndim]
    cells = read_columnar(array, tuple(slice(a, b) for a, b in location))
    result = np.asarray(fn(cells))
    if result.shape != tuple(info["chunk-shape"]):
        raise ValueError(
            f"map_columnar: fn returned shape {result.shape} for a block of {cells.shape} "
            f"cells; it must return one result per cell, shape {tuple(info['chunk-shape'])} "
            "(the block's shape, then trailing=)"
        )
    return result


def read_columnar_blocks(array: Any, chunks: Any = None) -> np.ndarray:
    """The cells of an ``ndarray`` array as an object ndarray (one entry per block, in the
    grid of blocks) of ``dask.delayed`` objects, each reading its block with ``read_columnar``
    as :class:`~zarr_ndarray_dtype.Columnar` when computed. Blocks are as in
    :func:`map_columnar` (default: the array's shards, else its chunks)."""
    dask = _dask()
    blocks = _blocks(array, chunks, "read_columnar_blocks")
    edges = [np.concatenate(([0], np.cumsum(sizes))).tolist() for sizes in blocks]
    source = dask.delayed(array, pure=False)  # one graph node every task refers to
    read = dask.delayed(read_columnar, pure=True)
    grid = np.empty(tuple(len(sizes) for sizes in blocks), dtype=object)
    for index in np.ndindex(grid.shape):
        box = tuple(slice(e[i], e[i + 1]) for e, i in zip(edges, index, strict=True))
        grid[index] = read(source, box)
    return grid
