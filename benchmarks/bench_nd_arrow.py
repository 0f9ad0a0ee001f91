"""Benchmark nd-arrow columns against PyPI ``ndarrow`` and ``pa.array`` of nested Python lists.

Workloads (issue 4):
  ragged: 1,000,000 rows of (n, 2) float32, n ~ Poisson(8), dims ("point", "xy")
  fixed:  10,000 rows of (64, 64) float64, dims ("y", "x")
Operations:
  build          a column (Arrow array) from a list of numpy arrays
  to numpy list  the column back to a list of numpy arrays (nd-arrow: NdColumn.to_numpy_list on
                 a column read before; ndarrow: to_numpy, as a list; lists: to_pylist + np.array)
  check+to list  the same from the bare Arrow array, including nd-arrow's check of every row rule
                 (NdColumn.from_arrow); ndarrow checks nothing, so its time is the one above
  IPC round trip write a table to an in-memory IPC stream and read it back
And, where zarr and zarr-vlen-ndarray are installed, the zarr bridge on one 1-D array of
(n, 2) float32 cells (n ~ Poisson(8), 10,000-cell chunks, no compression): nd_arrow.from_zarr
against zarr_vlen_ndarray.read_columnar, warm (best of a few) and as the first call of a fresh
process (where pa.array would import pandas, if installed).

Every number is the best of a few repeats, measured in this run; ratios are other / nd-arrow
(above 1 means nd-arrow is faster). No assertions: this reports, CI's tests judge correctness.
Run:  python benchmarks/bench_nd_arrow.py [--small]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from _machine import describe

from nd_arrow import NdColumn

try:
    import ndarrow
except ImportError:  # the comparison column is left empty without it
    ndarrow = None


def best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Minimum wall time over ``repeats`` calls, and the first call's result.

    Later results are dropped before the next call, so no run pays for the garbage of another.
    """
    first = None
    times = []
    for i in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if i == 0:
            first = out
        del out
    return min(times), first


def ipc_roundtrip(arr: pa.Array) -> pa.Array:
    table = pa.table({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().column("x").chunk(0)


def workloads(small: bool) -> dict[str, tuple[list[np.ndarray], list[str]]]:
    rng = np.random.default_rng(0)
    n_ragged, n_fixed = (100_000, 1_000) if small else (1_000_000, 10_000)
    counts = rng.poisson(8, n_ragged)
    flat = rng.random((int(counts.sum()), 2), dtype=np.float32)
    ragged = np.split(flat, np.cumsum(counts)[:-1])
    fixed = list(rng.random((n_fixed, 64, 64)))
    return {
        f"ragged {n_ragged:,} x (n,2) f4": (ragged, ["point", "xy"]),
        f"fixed {n_fixed:,} x (64,64) f8": (fixed, ["y", "x"]),
    }


def run(small: bool) -> list[tuple[str, str, float, float | None, float]]:
    rows = []
    for name, (arrays, dims) in workloads(small).items():
        ragged = name.startswith("ragged")
        reps = 5
        slow_reps = 1
        dtype = arrays[0].dtype

        t_nd, col = best(lambda a=arrays, d=dims: NdColumn.from_arrays(a, dims=d), reps)
        nd_arr = col.to_arrow()
        read_back = NdColumn.from_arrow(nd_arr)
        t_nd_views, _ = best(lambda c=read_back: c.to_numpy_list(), reps)
        t_nd_dec, _ = best(lambda x=nd_arr: NdColumn.from_arrow(x).to_numpy_list(), reps)
        t_nd_ipc, _ = best(lambda x=nd_arr: ipc_roundtrip(x), reps)

        t_nda = t_nda_dec = t_nda_ipc = None
        if ndarrow is not None:
            cls = ndarrow.RaggedTensorArray if ragged else ndarrow.TensorArray
            t_nda, nda_arr = best(lambda a=arrays, c=cls: c.from_numpy(a), reps)
            # TensorArray.to_numpy gives one (N, 64, 64) array; list() makes it the same list of
            # per-row arrays the other two paths return.
            t_nda_dec, _ = best(lambda x=nda_arr: list(x.to_numpy()), reps)
            t_nda_ipc, _ = best(lambda x=nda_arr: ipc_roundtrip(x), reps)

        nested_type = pa.list_(pa.list_(pa.from_numpy_dtype(dtype)))
        t_py, py_arr = best(
            lambda a=arrays, t=nested_type: pa.array([x.tolist() for x in a], type=t), slow_reps
        )
        t_py_dec, _ = best(
            lambda x=py_arr, dt=dtype: [np.array(v, dtype=dt) for v in x.to_pylist()], slow_reps
        )
        t_py_ipc, _ = best(lambda x=py_arr: ipc_roundtrip(x), reps)

        rows.append((name, "build", t_nd, t_nda, t_py))
        rows.append((name, "to numpy list", t_nd_views, t_nda_dec, t_py_dec))
        rows.append((name, "check+to list", t_nd_dec, t_nda_dec, t_py_dec))
        rows.append((name, "IPC round trip", t_nd_ipc, t_nda_ipc, t_py_ipc))
    return rows


_FIRST_CALL = """
import time, numpy as np, zarr, nd_arrow
from zarr_vlen_ndarray import NDArray, read_columnar, write_columnar
rng = np.random.default_rng(0)
n = N_CELLS
counts = rng.poisson(8, n)
values = rng.random((int(counts.sum()), 2), dtype=np.float32)
offsets = np.zeros(n + 1, np.int64)
np.cumsum(counts, out=offsets[1:])
array = zarr.create_array(
    {}, shape=(n,), chunks=(10_000,), dtype=NDArray(dtype="float32", shape=(None, 2)),
    compressors=None,
)
write_columnar(array, values, offsets)
t0 = time.perf_counter(); read_columnar(array); t1 = time.perf_counter()
nd_arrow.from_zarr(array, dims=("point", "xy")); t2 = time.perf_counter()
def best(fn):
    times = []
    for _ in range(5):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return min(times)
warm_read = best(lambda: read_columnar(array))
warm_from = best(lambda: nd_arrow.from_zarr(array, dims=("point", "xy")))
print(t1 - t0, t2 - t1, warm_read, warm_from)
"""


def zarr_rows(small: bool) -> list[tuple[str, float, float]]:
    """(measure, read_columnar s, from_zarr s); empty without zarr and zarr-vlen-ndarray."""
    if any(importlib.util.find_spec(m) is None for m in ("zarr", "zarr_vlen_ndarray")):
        return []
    n_cells = 100_000 if small else 1_000_000
    code = _FIRST_CALL.replace("N_CELLS", str(n_cells))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    first_read, first_from, warm_read, warm_from = map(float, out)
    return [
        (f"first call in a process, {n_cells:,} cells", first_read, first_from),
        (f"warm (best of 5), {n_cells:,} cells", warm_read, warm_from),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", "--quick", action="store_true", help="a tenth of the rows")
    args, _ = parser.parse_known_args()  # other benchmarks' options are ignored
    print(describe())
    rows = run(args.small)
    print(
        f"pyarrow {pa.__version__}, numpy {np.__version__}, "
        f"ndarrow {getattr(ndarrow, '__version__', 'not installed')}"
    )
    head = (
        f"{'workload':<28} {'operation':<15} {'nd-arrow s':>10} {'ndarrow s':>10} "
        f"{'lists s':>9} {'ndarrow/nd':>10} {'lists/nd':>9}"
    )
    print(head)
    print("-" * len(head))
    for name, op, nd, nda, py in rows:
        nda_s = f"{nda:10.4f}" if nda is not None else f"{'-':>10}"
        ratio = f"{nda / nd:10.2f}" if nda is not None else f"{'-':>10}"
        print(f"{name:<28} {op:<15} {nd:10.4f} {nda_s} {py:9.3f} {ratio} {py / nd:9.1f}")
    bridge = zarr_rows(args.small)
    if bridge:
        print()
        head = f"{'zarr bridge':<40} {'read_columnar s':>15} {'from_zarr s':>12} {'extra s':>8}"
        print(head)
        print("-" * len(head))
        for what, read, bridged in bridge:
            print(f"{what:<40} {read:15.4f} {bridged:12.4f} {bridged - read:8.4f}")


if __name__ == "__main__":
    main()
