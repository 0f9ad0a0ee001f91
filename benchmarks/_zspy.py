"""Layout (ii) of bench_hyperspy.py: zspy as HyperSpy 2.5 / rosettasciio 0.15 write and read it,
timed in a venv of zarr 2.18.7 + numcodecs 0.15.2 (``$ZARR2_PYTHON``), which runs this file.

What rosettasciio writes for eager ragged data: in a ``NestedDirectoryStore`` (an ``FSStore``
with "/" keys on S3), the group ``Experiments/vectors`` holds ``data``, an object array of one
chunk whose cells are flattened in C order (``VLenArray('<f8')``), and ``_ragged_shapes_data``
beside it (the cells' shapes, ``VLenArray('<i8')``), both compressed by blosc(zstd, clevel 1,
shuffle), HyperSpy's default ("blosc"), or by zstd level 3 ("zstd3", like for like with the
zarr 3 layouts). Its write flattens the cells (a copy of each, raveled), then stores both
arrays; its read loads both arrays, then copies and reshapes every cell (the dask task that runs
this around the one chunk is left out).

Run by bench_hyperspy.py as ``_zspy.py DATA STORE [options]``: the cells are DATA/values.npy,
DATA/offsets.npy and DATA/shape.json; both layouts are written once, a line of JSON says it is
ready, then each line on stdin names an op ("write blosc", "cells zstd3", "one blosc", ...) and
is answered by its seconds (JSON). With ``--rss LAYOUT`` it prints the peak extra RSS (bytes)
of one read of the cells instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import zarr
from _rss import peak_extra
from _timing import rounds

warnings.filterwarnings("ignore", category=FutureWarning)  # zarr 2's NestedDirectoryStore
COMPRESSORS = {
    "blosc": numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE),
    "zstd3": numcodecs.Zstd(level=3),
}


def flatten(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What rosettasciio's writer makes of numeric cells: each one copied and raveled (C order),
    and its shape as an int64 vector."""
    flat = np.empty(cells.shape, dtype=object)
    shapes = np.empty(cells.shape, dtype=object)
    for index, cell in np.ndenumerate(cells):
        copy = np.array(cell)
        flat[index], shapes[index] = copy.ravel(), np.array(copy.shape)
    return flat, shapes


def unflatten(flat: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """What rosettasciio's reader makes of them: each cell copied and reshaped (C order)."""
    cells = np.empty(flat.shape, dtype=object)
    for index, cell in np.ndenumerate(flat):
        cells[index] = np.array(cell).reshape(shapes[index])
    return cells


class Zspy:
    """The two arrays of one layout, as rosettasciio makes them."""

    def __init__(self, store: Any, layout: str, shape: tuple[int, ...]) -> None:
        group = zarr.open_group(store, mode="a", path=f"{layout}/Experiments/vectors")
        kwds = {"chunks": shape, "dtype": object, "exact": True, "compressor": COMPRESSORS[layout]}
        codecs = (numcodecs.VLenArray("<f8"), numcodecs.VLenArray("<i8"))
        self.data, self.shapes = (
            group.require_dataset(key, shape, object_codec=codec, **kwds)
            for key, codec in zip(("data", "_ragged_shapes_data"), codecs, strict=True)
        )

    def write(self, cells: np.ndarray) -> None:
        flat, shapes = flatten(cells)
        self.data[...] = flat
        self.shapes[...] = shapes

    def cells(self, where: Any = ...) -> np.ndarray:
        return unflatten(self.data[where], self.shapes[where])

    def columnar(self) -> tuple[np.ndarray, np.ndarray]:
        """Both arrays read, the cells' rows joined: values and row offsets."""
        flat, shapes = self.data[...].reshape(-1), self.shapes[...].reshape(-1)
        offsets = np.zeros(flat.size + 1, dtype=np.int64)
        np.cumsum(np.fromiter((s[0] for s in shapes), np.int64, flat.size), out=offsets[1:])
        return np.concatenate(flat).reshape(-1, 2), offsets


def open_store(where: str, endpoint: str | None) -> Any:
    if endpoint is None:
        return zarr.storage.NestedDirectoryStore(where)
    options = {"endpoint_url": endpoint, "region_name": "us-east-1"}
    return zarr.storage.FSStore(
        where, dimension_separator="/", key="testing", secret="testing", client_kwargs=options
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("store")
    parser.add_argument("--endpoint", help="S3 endpoint (STORE is then s3://bucket/prefix)")
    parser.add_argument("--position", type=int, nargs=2, default=(0, 0))
    parser.add_argument("--region", type=int, nargs=3, default=(0, 0, 1), help="ROW COL SIDE")
    parser.add_argument("--rss", choices=COMPRESSORS)
    args = parser.parse_args()
    shape = tuple(json.loads((args.data / "shape.json").read_text()))
    store = open_store(args.store, args.endpoint)
    layouts = {name: Zspy(store, name, shape) for name in COMPRESSORS}
    if args.rss:
        print(json.dumps(peak_extra(layouts[args.rss].cells)[0]))
        return
    values = np.load(args.data / "values.npy")
    bounds = np.load(args.data / "offsets.npy").tolist()
    cells = np.empty(len(bounds) - 1, dtype=object)
    cells[:] = [values[a:b] for a, b in pairwise(bounds)]
    cells = cells.reshape(shape)
    for zspy in layouts.values():
        zspy.write(cells)
    row, col, side = args.region
    region = (slice(row, row + side), slice(col, col + side))
    i, j = args.position
    one = (slice(i, i + 1), slice(j, j + 1))  # a 1 x 1 region: the cell, unflattened
    ops: dict[str, Callable[[], Any]] = {}
    for name, zspy in layouts.items():
        ops |= {
            f"write {name}": lambda z=zspy: z.write(cells),
            f"cells {name}": zspy.cells,
            f"columnar {name}": zspy.columnar,
            f"flat {name}": lambda z=zspy: z.data[...],
            f"one {name}": lambda z=zspy: z.cells(one),
            f"region {name}": lambda z=zspy: z.cells(region),
        }
    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        name = line.strip()
        print(json.dumps(rounds({name: ops[name]}, 1)[name][0]), flush=True)


if __name__ == "__main__":
    main()
