"""Ragged Dask arrays into ``ndarray`` arrays and back, a block a task (the ``dask`` extra):
``dask.array.to_zarr`` hands zarr the dtype ``object`` and checks no block against the shards."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import numpy.typing as npt
import zarr

from zarr_ndarray_dtype import Columnar, NDArrayDType, read_columnar
from zarr_ndarray_dtype.errors import BlockAlignmentError

if TYPE_CHECKING:
    import dask.array as da
    from dask.delayed import Delayed

# shard_or_chunk: importable (the xarray writer asks it), not listed.
__all__ = ["check_blocks", "map_columnar", "read_columnar_blocks", "to_zarr"]


def _data_type(array: Any, what: str) -> NDArrayDType:
    dtype = getattr(getattr(array, "metadata", None), "data_type", None)
    if not isinstance(dtype, NDArrayDType):
        raise TypeError(
            f"{what} needs a zarr array of the 'ndarray' data type, got data type {dtype!r}; "
            "create it with dtype=zarr_ndarray_dtype.NDArrayDType(dtype=..., shape=(...))"
        )
    return dtype


def shard_or_chunk(array: zarr.Array) -> tuple[tuple[int, ...], str]:
    """The cells one write of ``array`` may rewrite whole, and their name: the shard shape
    (zarr rewrites a whole shard on a partial write), else the chunk shape (zarr: regular grids)."""
    return (array.shards, "shard") if array.shards else (array.chunks, "chunk")


def check_blocks(
    blocks: tuple[tuple[int, ...], ...],
    starts: Sequence[int],
    unit: Sequence[int],
    kind: str,
    *,
    what: str = "to_zarr",
    keys: Sequence[Hashable] | None = None,
    rechunk: str = "darr.rechunk",
    error: type[Exception] = BlockAlignmentError,
) -> None:
    """The one rule of which blocks may be written in parallel: refuse Dask ``blocks`` (its
    ``.chunks``) written from ``starts`` that end inside a ``unit`` (a ``kind``, as from
    :func:`shard_or_chunk`). The ``error`` (prefixed by ``what``) names the first such axis (by
    ``keys``) and the ``rechunk`` that fixes all, e.g. ``darr.rechunk({0: (54,) + (64,) * 3})``."""
    fixes, first = {}, ""
    for axis, (sizes, start, size) in enumerate(zip(blocks, starts, unit, strict=True)):
        edges = start + np.cumsum(sizes[:-1], dtype=np.int64)
        if not (inside := edges[edges % size != 0]).size:
            continue
        key = axis if keys is None else keys[axis]
        where = f"axis {axis}" if keys is None else repr(key)
        first = first or f"{where} end at {inside[0]}, inside a {kind} ({size} cells along it)"
        lead = min(sum(sizes), size - start % size)
        whole, last = divmod(sum(sizes) - lead, size)
        parts = [f"({lead},)"] + [f"({size},)" + f" * {whole}" * (whole > 1)] * (whole > 0)
        fixes[key] = " + ".join(parts + [f"({last},)"] * (last > 0)) if start % size else str(size)
    if first:
        mapping = ", ".join(f"{key!r}: {fix}" for key, fix in fixes.items())
        raise error(
            f"{what}: dask blocks along {first} that the next block writes too (zarr rewrites "
            f"a whole {kind} on a partial write: the two tasks would race); rechunk so that "
            f"blocks end on multiples of the {kind} along every axis: {rechunk}({{{mapping}}})"
        )


@overload
def to_zarr(darr: da.Array, store: Any, *, compute: Literal[False], **kwargs: Any) -> Delayed: ...
@overload
def to_zarr(
    darr: da.Array, store: Any, *, compute: Literal[True] = ..., **kwargs: Any
) -> zarr.Array: ...
def to_zarr(
    darr: da.Array,
    store: Any,
    *,
    dtype: NDArrayDType | None = None,
    region: slice | tuple[slice, ...] | None = None,
    compute: bool = True,
    **create_kwargs: Any,
) -> zarr.Array | Delayed:
    """Write the object Dask array ``darr`` of cells, a block a task, into a new ``ndarray``
    array at ``store`` (``create_kwargs`` as ``zarr.create_array`` takes them; chunks default
    to the Dask blocks) or into an existing one, whole or at ``region`` (step-1 slices).
    :func:`check_blocks` runs before anything is created. Returns the array, or with
    ``compute=False`` a ``dask.delayed`` object that writes and returns it."""
    import dask.array  # the dask extra

    if darr.dtype != object:
        raise TypeError(
            f"to_zarr writes Dask arrays of cells (dtype object), got dtype {darr.dtype}; "
            "make each block an object array of cells (darr.map_blocks(f, dtype=object))"
        )
    if any(np.isnan(n) for n in darr.shape):
        raise ValueError(f"to_zarr: shape {darr.shape} is unknown: darr.compute_chunk_sizes()")
    target, starts = store, (0,) * darr.ndim
    if isinstance(store, zarr.Array):
        stored = _data_type(store, "to_zarr")
        if extra := sorted(create_kwargs) + ["dtype"] * (dtype not in (None, stored)):
            raise TypeError(
                f"to_zarr: {extra} describe a new array, but store is an existing zarr.Array of "
                f"{stored!r}, written as it is: leave them out, or pass a store to create one"
            )
        parts = region if isinstance(region, tuple) else (region or slice(None),)
        parts += (slice(None),) * (store.ndim - len(parts))  # step-1 slices, darr's shape
        picked = [range(n)[p] for p, n in zip(parts, store.shape, strict=False)]
        fits = [(len(r), r.step) if isinstance(r, range) else r for r in picked]
        if len(parts) != store.ndim or fits != [(n, 1) for n in darr.shape]:
            raise ValueError(
                f"to_zarr: the Dask array of shape {darr.shape} does not fit region {region!r} "
                f"of the array of shape {store.shape}; pass one step-1 slice per axis"
            )
        starts = tuple(r.start for r in picked)
    elif region is not None:
        raise ValueError(
            "to_zarr: region= writes into an existing array; pass the array itself: "
            "to_zarr(darr, zarr.open_array(store, path=..., mode='r+'), region=...)"
        )
    elif not isinstance(dtype, NDArrayDType):
        raise TypeError(
            f"to_zarr needs dtype=NDArrayDType(dtype=..., shape=(...)) to create an array, got "
            f"{dtype!r} (the cells of a Dask array are known only once computed)"
        )
    else:  # zarr normalises chunks and shards, first of a probe in memory
        chunks = create_kwargs.get("chunks") or tuple(max(c[0], 1) for c in darr.chunks)
        create_kwargs |= {"shape": darr.shape, "dtype": dtype, "chunks": chunks}
        grid = ("shape", "dtype", "chunks", "shards", "serializer")
        target = zarr.create_array({}, **{k: v for k, v in create_kwargs.items() if k in grid})
    check_blocks(darr.chunks, starts, *shard_or_chunk(target))
    if not isinstance(store, zarr.Array):
        target = zarr.create_array(store, **create_kwargs)
    regions = tuple(slice(s, s + n) for s, n in zip(starts, darr.shape, strict=True))
    # a task a block, ``target[its region] = block``; no lock: the blocks share no shard
    writes = dask.array.store(darr, _Target(target), regions=regions, lock=False, compute=compute)
    return target if compute else dask.delayed(lambda _: target)(writes)  # type: ignore[attr-defined]


class _Target:
    """What dask stores into: the array. A copy of it (a worker's, through pickle) refuses to
    write into a ``MemoryStore``: what it wrote there would be lost."""

    def __init__(self, array: zarr.Array, copied: bool = False) -> None:
        self.array, self.copied = array, copied

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Target, (self.array, True))

    def __setitem__(self, region: Any, block: np.ndarray) -> None:
        if self.copied and isinstance(self.array.store, zarr.storage.MemoryStore):
            raise ValueError(
                "to_zarr: a worker's copy of a zarr.storage.MemoryStore loses what it writes: "
                "write to a store all workers reach (a directory, object storage), or use threads"
            )
        self.array[region] = block


def map_columnar(
    array: zarr.Array,
    fn: Callable[[Columnar], Any],
    *,
    dtype: npt.DTypeLike,
    trailing: Sequence[int] = (),
    chunks: Any = None,
) -> da.Array:
    """A Dask array whose every block is ``fn`` (importable where the tasks run) of that block's
    cells as ``Columnar``: an array of ``dtype`` and shape ``col.shape + trailing``. Blocks are
    ``chunks`` as Dask takes them, by default the array's shards, else its chunks."""
    return _blocks(array, chunks, fn, dtype, trailing)


def read_columnar_blocks(array: zarr.Array, chunks: Any = None) -> np.ndarray:
    """The grid of an array's blocks (as in :func:`map_columnar`), ``dask.delayed`` objects of
    each block's ``Columnar``."""
    return _blocks(array, chunks, None, object).to_delayed()


def _blocks(array: Any, chunks: Any, fn: Any, dtype: Any, trailing: Sequence[int] = ()) -> Any:
    """A Dask array of ``fn`` of each block's cells (``fn`` None: the cells themselves)."""
    import dask.array  # the dask extra

    what = "read_columnar_blocks" if fn is None else "map_columnar"
    _data_type(array, what)
    unit = shard_or_chunk(array)[0] if chunks is None else chunks  # whole stored objects
    blocks = dask.array.core.normalize_chunks(unit, array.shape)  # type: ignore[no-untyped-call]
    blocks += tuple((n,) for n in trailing)
    meta = np.empty((0,) * len(blocks), dtype=dtype)
    return dask.array.map_blocks(  # type: ignore[no-untyped-call]
        _columnar_block, dtype=dtype, chunks=blocks, meta=meta, array=array, fn=fn
    )


def _columnar_block(array: Any, fn: Callable[[Columnar], Any] | None, block_info: Any) -> Any:
    info = block_info[None]
    cells = read_columnar(array, tuple(slice(*s) for s in info["array-location"][: array.ndim]))
    if fn is None:
        return cells
    if (result := np.asarray(fn(cells))).shape != tuple(info["chunk-shape"]):
        raise ValueError(
            f"map_columnar: fn returned shape {result.shape} for a block of {cells.shape} cells; "
            f"it must return one per cell, shape {tuple(info['chunk-shape'])} (then trailing=)"
        )
    return result
