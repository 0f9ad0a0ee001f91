"""Aligned arrays as zagg stores them (issue 39): one read of three row-aligned arrays, and the
group exported to Parquet.

The group of `../shared/reference/users-and-peers.md` (zagg): per cell, t-digest centroids
``(n, 2)`` float32 and their ``locations`` and ``times`` ``(n,)`` uint64, n heavy-tailed
(log-normal, median ~50, capped at 8,192); one shard of 1,048,576 cells in 4,096-cell inner
chunks, zstd 3, on a local store (``--cells`` makes it smaller). Measured in one run, the reads
taking turns (min / median s):

  aligned    ``read_aligned(group)``: the three arrays, their alignment checked, one offsets
  separate   ``read_columnar`` of each array, one after another (no alignment check)
  export     ``zarr-ndarray export GROUP --parquet OUT`` (zstd), its size against the store's

Target (issue 39): aligned <= 1.2x separate. No assertions.

Run:  python benchmarks/bench_aligned.py [--cells N] [--repeats N]
(Other options that ``nox -s bench -- ...`` passes to every script are ignored.)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from _machine import describe
from _timing import rounds, spread

import zarr_vlen_ndarray  # noqa: F401  (the codec of [null, 2] and [null])
from zarr_ndarray_dtype import NDArrayDType, read_aligned, read_columnar, write_aligned

SHARD = 1 << 20
INNER = 4096
NAMES = ("centroids", "centroids_locations", "centroids_times")


def zagg_group(root: Path, cells: int) -> zarr.Group:
    rng = np.random.default_rng(0)
    sizes = np.minimum(rng.lognormal(np.log(50), 1.0, cells).astype(np.int64), 8192)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    rows = int(offsets[-1])
    group = zarr.open_group(root / "zagg.zarr", mode="w")
    grid = {
        "shape": (cells,), "chunks": (INNER,), "shards": (min(SHARD, cells),),
        "compressors": zarr.codecs.ZstdCodec(level=3),
    }  # fmt: skip
    group.create_array(NAMES[0], dtype=NDArrayDType("float32", (None, 2)), **grid)
    for name in NAMES[1:]:
        group.create_array(name, dtype=NDArrayDType("uint64", (None,)), **grid)
    columns = {
        NAMES[0]: rng.random((rows, 2), dtype=np.float32),
        NAMES[1]: rng.integers(0, 2**40, rows, dtype=np.uint64),
        NAMES[2]: np.arange(rows, dtype=np.uint64) * 1000,
    }
    write_aligned(group, columns, offsets)
    return group


def stored_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=SHARD, help="cells (multiple of 4096)")
    parser.add_argument("--repeats", type=int, default=5)
    args, _ = parser.parse_known_args()
    print(describe())
    root = Path(tempfile.mkdtemp())
    group = zagg_group(root, args.cells)
    arrays = {name: group[name] for name in NAMES}
    first = read_aligned(arrays)
    rows = first[NAMES[0]].offsets[-1]
    nbytes = sum(c.values.nbytes for c in first.values()) + first[NAMES[0]].offsets.nbytes
    print(f"{args.cells:,} cells, {rows:,} rows, {nbytes / 1e6:.0f} MB of columns")
    times = rounds(
        {
            "aligned": lambda: read_aligned(arrays),
            "separate": lambda: [read_columnar(a) for a in arrays.values()],
        },
        args.repeats,
    )
    ratio_min = min(times["aligned"]) / min(times["separate"])
    ratio_median = np.median(times["aligned"]) / np.median(times["separate"])
    print(f"  read_aligned (3 arrays)         {spread(times['aligned'])} s")
    print(f"  read_columnar x 3, separately   {spread(times['separate'])} s")
    print(f"  aligned / separate: {ratio_min:.2f} (minima), {ratio_median:.2f} (medians);"
          " target <= 1.2")  # fmt: skip

    from zarr_ndarray_tool import api

    out = root / "zagg.parquet"
    t0 = time.perf_counter()
    api.export(str(root / "zagg.zarr"), parquet=out)
    took = time.perf_counter() - t0
    store, parquet = stored_bytes(root / "zagg.zarr"), out.stat().st_size
    print(f"  export GROUP --parquet (zstd): {took:.2f} s; Parquet {parquet / 1e6:.1f} MB, store "
          f"{store / 1e6:.1f} MB: {parquet / store:.2f}x the store")  # fmt: skip


if __name__ == "__main__":
    main()
