"""Side by side with Parquet: the same ragged cells in an ``ndarray`` array and in a Parquet file.

1,000,000 cells of ``(n, 2)`` float32, n ~ Poisson(8), standard normal values, on local disk:
here chunks of 100,000 cells with ``vlen-ndarray`` and zstd level 3; there a
``list<fixed_size_list<float32, 2>>`` column (what nd-arrow's bridge and the store tool's export
write), zstd level 3, row groups of 100,000 rows. Measured in one process, the two taking turns:

  write          write_columnar(arr, values, offsets)   |  pq.write_table(table, ...)
  whole read     read_columnar(arr)                     |  pq.read_table(path)
  one cell       read_columnar(arr, slice(i, i + 1))    |  the row's row group, sliced
  one cell a[i]  arr[i]                                 |  (the same Parquet read)
  bytes on disk  every chunk object                     |  the file

Ratios are ours / Parquet's (minima of the rounds; at most 1.0 means ours is as fast or as
small). No assertions.

Run:  python benchmarks/bench_parquet.py [--cells N] [--repeats N]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr
from _machine import describe
from _timing import rounds, spread
from zarr.codecs import ZstdCodec

from zarr_ndarray_dtype import NDArrayDType, read_columnar, write_columnar
from zarr_vlen_ndarray import VlenNDArrayCodec

ROWS = 100_000  # cells of a chunk, rows of a row group


def data(cells: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    offsets = np.zeros(cells + 1, np.int64)
    np.cumsum(rng.poisson(8, cells), out=offsets[1:])
    return rng.standard_normal((int(offsets[-1]), 2)).astype(np.float32), offsets


def table(values: np.ndarray, offsets: np.ndarray) -> pa.Table:
    pairs = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), 2)
    return pa.table({"cells": pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pairs)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args, _ = parser.parse_known_args()
    print(describe())
    values, offsets = data(args.cells)
    root = Path(tempfile.mkdtemp())
    array = zarr.create_array(
        root / "cells.zarr", shape=(args.cells,), chunks=(ROWS,), overwrite=True,
        dtype=NDArrayDType("float32", (None, 2)), serializer=VlenNDArrayCodec(),
        compressors=ZstdCodec(level=3),
    )  # fmt: skip
    parquet = root / "cells.parquet"
    arrow = table(values, offsets)
    i = args.cells * 7 // 10 + 3  # a cell in a chunk (row group) of its own

    def parquet_cell() -> pa.Table:
        return pq.ParquetFile(parquet).read_row_group(i // ROWS).slice(i % ROWS, 1)

    ops = {
        "write": {
            "ours": lambda: write_columnar(array, values, offsets),
            "parquet": lambda: pq.write_table(
                arrow, parquet, compression="zstd", compression_level=3, row_group_size=ROWS
            ),
        },
        "whole read": {
            "ours": lambda: read_columnar(array),
            "parquet": lambda: pq.read_table(parquet),
        },
        "one cell, columnar": {
            "ours": lambda: read_columnar(array, slice(i, i + 1)),
            "parquet": parquet_cell,
        },
        "one cell, a[i]": {"ours": lambda: array[i], "parquet": parquet_cell},
    }
    print(f"{args.cells:,} cells of (n, 2) float32, n ~ Poisson(8), zstd 3, {ROWS:,} a chunk")
    head = ("ours min / median s", "Parquet min / median s", "ours / Parquet")
    print(f"{'':<20} {head[0]:>22} {head[1]:>24} {head[2]:>15}")
    for name, pair in ops.items():
        times = rounds(pair, args.repeats)
        ratio = min(times["ours"]) / min(times["parquet"])
        print(
            f"{name:<20} {spread(times['ours']):>22} {spread(times['parquet']):>24} {ratio:>15.2f}"
        )
    cell = array[i]
    want = values[offsets[i] : offsets[i + 1]]
    assert cell.tobytes() == want.tobytes(), "the benchmark read the wrong cell"
    ours = sum(p.stat().st_size for p in (root / "cells.zarr").rglob("*") if p.is_file())
    theirs = parquet.stat().st_size
    print(f"{'bytes on disk':<20} {ours:>22,} {theirs:>24,} {ours / theirs:>15.2f}")


if __name__ == "__main__":
    main()
