"""Benchmark the writes users make: conversions on write, and one-cell and small-region writes.

Conversions (the cells in another dtype than the array's, as zagg and HyperSpy hand them over):

  zagg      65,536 (n, 2) cells, n ~ Poisson(30): float64 centroids into a float32 array (and
            the same cells into a float64 array, the same-dtype baseline); one shard of 65,536
            in inner chunks of 4,096, zstd 3
  hyperspy  a 256 x 256 scan of (n, 2) cells, n ~ Poisson(30): int64 peak positions into a
            float64 array (baseline: float64 positions); shards of 64 x 64 in inner chunks of
            16 x 16, zstd 3

each written whole through the object path (``array[...] = cells``), ``write_columnar``,
``zarr_ndarray_dtype.dask.to_zarr`` (threaded, a block a shard) and the xarray writer
(``zarr_ndarray_dtype.xarray.to_zarr``), into a MemoryStore. The table shows min / median
seconds of the converted write and of the same-dtype one, and their ratio (target <= 1.5).

Small writes (zarr's object path rewrites the chunk a write touches):

  one cell    100 writes of one (5, 2) float32 cell into a 4,096-cell chunk (zstd 3), against
              100 writes of one row of 10 float32 into a plain float32 array of 4,096 x 10 in
              one chunk (the same bytes per cell); target: ratio <= 5
  a region    100 writes of 64 cells (rows 100..163) against 64 rows of the plain array

No assertions; every figure beside the machine's copy bandwidth.

Run:  python benchmarks/bench_writes.py [--small] [--repeats N]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _timing import rounds
from zarr.codecs import ZstdCodec

import zarr_vlen_ndarray
from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_dtype.dask import to_zarr as dask_to_zarr

POISSON = 30
ZSTD = ZstdCodec(level=3)


def _cells(counts: np.ndarray, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Object cells of (n, 2) in ``dtype`` (whole numbers, so every conversion here is exact),
    with their columns."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(counts.reshape(-1))]).astype(np.int64)
    values = rng.integers(0, 4096, (int(offsets[-1]), 2)).astype(dtype)
    cells = np.empty(counts.size, dtype=object)
    cells[:] = [values[a:b] for a, b in itertools.pairwise(offsets.tolist())]
    return cells.reshape(counts.shape), values, offsets


def _array(
    shape: tuple[int, ...], chunks: tuple[int, ...], shards: tuple[int, ...], item: str
) -> Any:
    return zarr.create_array(
        {}, shape=shape, chunks=chunks, shards=shards, compressors=ZSTD,
        dtype=NDArrayDType(dtype=item, shape=(None, 2)),
    )  # fmt: skip


def _paths(
    cells: np.ndarray, values: np.ndarray, offsets: np.ndarray, layout: dict[str, Any], item: str
) -> dict[str, Callable[[], Any]]:
    """The four ways of writing the same cells into a fresh array of element dtype ``item``."""
    import dask.array as da
    import xarray as xr

    from zarr_ndarray_dtype.xarray import to_zarr as xarray_to_zarr

    shape = cells.shape
    dims = ["y", "x"][-len(shape) :]
    darr = da.from_array(cells, chunks=layout["shards"])
    dtype = NDArrayDType(dtype=item, shape=(None, 2))
    encoding = {"v": {"dtype": dtype, "chunks": layout["chunks"], "shards": layout["shards"]}}
    encoding["v"]["compressors"] = ZSTD

    def objects() -> None:
        _array(shape, item=item, **layout)[...] = cells

    def columns() -> None:
        zarr_vlen_ndarray.write_columnar(_array(shape, item=item, **layout), values, offsets)

    def dask() -> None:
        dask_to_zarr(darr, _array(shape, item=item, **layout))

    def xarray() -> None:
        ds = xr.Dataset({"v": (dims, cells)})
        xarray_to_zarr(ds, zarr.storage.MemoryStore(), mode="w", encoding=encoding)

    return {
        "object path": objects,
        "write_columnar": columns,
        "dask.to_zarr": dask,
        "xarray": xarray,
    }


def conversions(repeats: int, small: bool) -> list[tuple[str, list[float], list[float]]]:
    rng = np.random.default_rng(0)
    workloads = [
        ("zagg f64 -> f32", (4096 if small else 65536,), (4096,), (4096 if small else 65536,),
         ("float64", "float32"), ("float32", "float32")),
        ("hyperspy i64 -> f64", (64, 64) if small else (256, 256), (16, 16), (64, 64),
         ("int64", "float64"), ("float64", "float64")),
    ]  # fmt: skip
    rows = []
    for name, shape, chunks, shards, (given, item), (same_given, same_item) in workloads:
        counts = rng.poisson(POISSON, shape)
        layout = {"chunks": chunks, "shards": shards}
        converted = _paths(*_cells(counts, given, 1), layout, item)
        same = _paths(*_cells(counts, same_given, 1), layout, same_item)
        for path in converted:
            ops = {"converted": converted[path], "same": same[path]}
            for op in ops.values():  # imports, thread pools and caches before the clock
                op()
            times = rounds(ops, repeats)
            rows.append((f"{name}, {path}", times["converted"], times["same"]))
    return rows


def small_writes(repeats: int) -> list[tuple[str, list[float], list[float]]]:
    rng = np.random.default_rng(2)
    counts = rng.poisson(5, 4096)
    cells = _cells(counts, "float32", 3)[0]
    ours = zarr.create_array(
        {}, shape=(4096,), chunks=(4096,), compressors=ZSTD,
        dtype=NDArrayDType(dtype="float32", shape=(None, 2)),
    )  # fmt: skip
    ours[:] = cells
    plain = zarr.create_array(
        {}, shape=(4096, 10), chunks=(4096, 10), dtype="float32", compressors=ZSTD
    )
    plain[:] = 1.0
    one = np.ones((5, 2), np.float32)
    row = np.full(10, 2.0, np.float32)
    region = np.empty(64, dtype=object)
    region[:] = [np.full((5, 2), i, np.float32) for i in range(64)]
    rows = np.full((64, 10), 3.0, np.float32)

    def each(write: Callable[[int], None]) -> Callable[[], None]:
        return lambda: [write(i) for i in range(100)]

    def one_cell(i: int) -> None:
        ours[i] = one

    def one_row(i: int) -> None:
        plain[i] = row

    def cells64(i: int) -> None:
        ours[100:164] = region

    def rows64(i: int) -> None:
        plain[100:164] = rows

    table = []
    for name, mine, theirs in (
        ("100 one-cell writes into a 4,096-cell chunk", one_cell, one_row),
        ("100 writes of 64 cells into it", cells64, rows64),
    ):
        times = rounds({"ours": each(mine), "plain": each(theirs)}, repeats)
        table.append((name, times["ours"], times["plain"]))
    return table


def _print(
    title: str, head: tuple[str, str, str], rows: list[tuple[str, list[float], list[float]]]
) -> None:
    print(f"\n{title}")
    print(f"{'':<44} {head[0]:>17} {head[1]:>17} {head[2]:>8}")
    for name, a, b in rows:
        ratio = min(a) / min(b)
        print(
            f"{name:<44} {min(a):8.3f} / {statistics.median(a):6.3f} "
            f"{min(b):8.3f} / {statistics.median(b):6.3f} {ratio:8.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a sixteenth of the cells")
    parser.add_argument("--repeats", type=int, default=3)
    args, _ = parser.parse_known_args()
    warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
    print(f"bench_writes: {describe()}; zarr {zarr.__version__}")
    _print(
        "conversion writes (s, min / median; ratio converted / same dtype, target <= 1.5)",
        ("converted", "same dtype", "ratio"),
        conversions(args.repeats, args.small),
    )
    _print(
        "small writes (s, min / median; ratio ours / plain float32 array, target <= 5)",
        ("ours", "plain", "ratio"),
        small_writes(args.repeats),
    )


if __name__ == "__main__":
    main()
