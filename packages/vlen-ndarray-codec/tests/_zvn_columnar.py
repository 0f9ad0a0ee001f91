"""Shared helpers of the columnar tests (1-d and N-d): arrays, columns and the object-path twin."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import zarr
from _zvn_helpers import object_array, random_cell
from _zvn_support import zarr_own_writes
from zarr.codecs import ZstdCodec

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_dtype._grid import resolve
from zarr_vlen_ndarray import VlenNDArrayCodec, write_columnar

F32x2 = NDArrayDType(dtype="float32", shape=(None, 2))


def _dims(extents: int | tuple[int, ...]) -> tuple[int, ...]:
    return (extents,) if isinstance(extents, int) else tuple(extents)


def make(
    store: dict[str, Any],
    shape: int | tuple[int, ...],
    chunks: int | tuple[int, ...],
    dtype: NDArrayDType = F32x2,
    *,
    zstd: bool = False,
    shards: int | tuple[int, ...] | None = None,
    fill: Any = None,
    write_empty_chunks: bool = False,
    index_location: str = "end",
    order: str = "C",
) -> Any:
    """A vlen-ndarray array in ``store`` (an int shape, chunk or shard means a 1-d one)."""
    kwargs: dict[str, Any] = {}
    if shards is not None:
        kwargs["shards"] = {"shape": _dims(shards), "index_location": index_location}
    if fill is not None:
        kwargs["fill_value"] = fill
    return zarr.create_array(
        store,
        shape=_dims(shape),
        chunks=_dims(chunks),
        dtype=dtype,
        serializer=VlenNDArrayCodec(),
        compressors=[ZstdCodec(level=3)] if zstd else None,
        config={"write_empty_chunks": write_empty_chunks, "order": order},
        **kwargs,
    )


def objects(store: dict[str, Any]) -> dict[str, bytes]:
    """Every stored object but the metadata, as bytes."""
    return {k: v.to_bytes() for k, v in store.items() if k != "zarr.json"}


def columns(cells: list[np.ndarray], dtype: NDArrayDType) -> tuple[np.ndarray, np.ndarray]:
    """``(values, offsets)`` of cells laid end to end along their first axis."""
    fixed = tuple(int(d) for d in dtype.shape[1:])
    rows = np.array([len(c) for c in cells], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    values = np.concatenate(cells, axis=0) if cells else np.empty((0, *fixed), dtype.item_dtype)
    return values, offsets


def random_cells(dtype: NDArrayDType, count: int, seed: int, mean: float = 3.0) -> list[np.ndarray]:
    """``count`` seeded random cells with a Poisson(``mean``) number of rows each."""
    rng = np.random.default_rng(seed)
    return [random_cell(rng, dtype, int(r)) for r in rng.poisson(mean, count)]


def write_both(
    shape: int | tuple[int, ...],
    chunks: int | tuple[int, ...],
    writes: list[tuple[Any, list[np.ndarray]]],
    dtype: NDArrayDType = F32x2,
    *,
    check_each: bool = False,
    guard: Callable[[], AbstractContextManager[Any]] = nullcontext,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply the same writes through the object path and the columnar path; both stores.

    ``check_each``: the two stores must hold the same objects after every write, not only at the
    end. ``guard()`` is entered around each columnar write. ``kwargs`` go to :func:`make`.
    """
    ref_store: dict[str, Any] = {}
    col_store: dict[str, Any] = {}
    ref = make(ref_store, shape, chunks, dtype, **kwargs)
    col = make(col_store, shape, chunks, dtype, **kwargs)
    for selection, cells in writes:
        box = resolve(selection, _dims(shape), "test")
        with zarr_own_writes():
            ref[box.slices] = object_array(cells, box.extents)
        with guard():
            write_columnar(col, *columns(cells, dtype), selection=selection)
        if check_each:
            assert objects(ref_store) == objects(col_store), f"after writing {selection}"
    return ref_store, col_store
