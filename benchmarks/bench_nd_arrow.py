"""Benchmark nd-arrow columns against PyPI ``ndarrow`` and ``pa.array`` of nested Python lists.

Workloads (issue 4):
  ragged: 1,000,000 rows of (n, 2) float32, n ~ Poisson(8), dims ("point", "xy")
  fixed:  10,000 rows of (64, 64) float64, dims ("y", "x")
Operations:
  build          a column (Arrow array) from a list of numpy arrays; each copies the values once
                 into one new buffer (ndarrow: TensorArray / RaggedTensorArray.from_numpy)
  to numpy list  an array made before back to a list of numpy arrays, one zero-copy view per row:
                 nd-arrow: NdColumn.to_numpy_list of a column read (and checked) before;
                 ndarrow: list(arr.to_numpy()) (TensorArray.to_numpy gives one (N, 64, 64) array,
                 list() cuts it into the same per-row views; RaggedTensorArray.to_numpy gives the
                 list itself); lists: to_pylist + np.array per row
  check          nd-arrow only: NdColumn.from_arrow, the check of every row rule of FORMAT.md
                 section 4 on the bare Arrow array; ndarrow checks nothing
  check+to list  the Arrow array to the list, nd-arrow's check included (ndarrow and lists: the
                 same call as in "to numpy list", timed again beside it)
  IPC round trip a one-column table to an in-memory IPC stream and back; the stream sizes are
                 printed beside the time ratio, since the bytes a format carries bound its copy
And, where zarr and zarr-vlen-ndarray are installed, the zarr bridge on one 1-D array of
(n, 2) float32 cells (n ~ Poisson(8), 10,000-cell chunks, no compression): nd_arrow.from_zarr
against zarr_vlen_ndarray.read_columnar, warm and as the first call of a fresh process (where
pa.array would import pandas, if installed).

What bounds each comparison (like for like: both sides return the same objects):
  build          both copy every value once into fresh memory; on the fixed workload that copy
                 (328 MB) is nearly all of the time, so parity is the bound
  to numpy list  both make one numpy view per row; on the fixed workload both end in one list()
                 over one reshaped array, so numpy's cost of a view is the bound for both (parity)
  check+to list  nd-arrow also checks the format's row rules, which ndarrow has none of: the
                 "check" row is what that costs, and bounds the ratio where the views are cheap
  IPC round trip the bytes: ragged rows carry their dimension names and sizes (about 27 bytes
                 per row here) that ndarrow keeps once in its type; fixed rows carry them too,
                 0.1% of the bytes

The contenders of one operation run in turn, round after round (each round starting with the
next one), in this process on the same data, so a change of load on the machine hits them
alike; fast operations get more rounds (column n). Every time is printed as the minimum and the
median of the rounds (the list-of-lists path takes seconds a call and runs once, but for IPC).
Ratios are ndarrow / nd-arrow (above 1: nd-arrow is faster) of the minima, and the median of the
rounds' own ratios (the two ran back to back). The machine line (cores, memcpy bandwidth) is
printed before and after. No assertions: tests judge correctness, this reports.
Run:  python benchmarks/bench_nd_arrow.py [--small] [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from _machine import copy_bandwidth, describe

from nd_arrow import NdColumn

try:
    import ndarrow
except ImportError:  # the comparison column is left empty without it
    ndarrow = None

Times = list[float]


def in_turn(
    fns: dict[str, Callable[[], Any]], rounds: int, budget: float = 2.0
) -> dict[str, Times]:
    """Wall times of each callable, called in turn round after round: at least ``rounds`` rounds,
    and more (up to ten times as many) while the rounds so far took under ``budget`` seconds, so
    that fast operations get a steady median.

    Each round starts with the next contender, so none always runs after the same other one.
    Before every call the garbage is collected and Arrow's memory pool hands back what it keeps,
    so no call pays for, or profits from, the memory of another. A result is dropped before the
    next call.
    """
    times: dict[str, Times] = {name: [] for name in fns}
    names = list(fns)
    pool = pa.default_memory_pool()
    start = time.perf_counter()
    i = 0
    while i < rounds or (i < 10 * rounds and time.perf_counter() - start < budget):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            fn = fns[name]
            gc.collect()
            pool.release_unused()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            del out
        i += 1
    return times


def once(fn: Callable[[], Any]) -> tuple[Times, Any]:
    """One timed call (for paths that take seconds) and its result."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return [time.perf_counter() - t0], out


def ipc_stream(arr: pa.Array) -> pa.Buffer:
    table = pa.table({"x": arr})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def ipc_roundtrip(arr: pa.Array) -> pa.Array:
    return pa.ipc.open_stream(ipc_stream(arr)).read_all().column("x").chunk(0)


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


Row = tuple[str, str, Times, Times | None, Times | None]
#: IPC stream bytes of one workload: nd-arrow, ndarrow (None without it), lists.
StreamBytes = tuple[int, int | None, int]


def measure(
    name: str, arrays: list[np.ndarray], dims: list[str], rounds: int
) -> tuple[list[Row], StreamBytes]:
    """The timing rows of one workload (workload, operation, nd-arrow, ndarrow, lists) and the
    IPC stream sizes."""
    dtype = arrays[0].dtype
    nested_type = pa.list_(pa.list_(pa.from_numpy_dtype(dtype)))
    nd_arr = NdColumn.from_arrays(arrays, dims=dims).to_arrow()
    read_back = NdColumn.from_arrow(nd_arr)
    # The list-of-lists path takes seconds per call: once each, IPC aside.
    py_build, py_arr = once(lambda: pa.array([x.tolist() for x in arrays], type=nested_type))
    py_list, _ = once(lambda: [np.array(v, dtype=dtype) for v in py_arr.to_pylist()])
    ops: dict[str, dict[str, Callable[[], Any]]] = {
        "build": {"nd": lambda: NdColumn.from_arrays(arrays, dims=dims)},
        "to numpy list": {"nd": read_back.to_numpy_list},
        "check": {"nd": lambda: NdColumn.from_arrow(nd_arr)},
        "check+to list": {"nd": lambda: NdColumn.from_arrow(nd_arr).to_numpy_list()},
        "IPC round trip": {"nd": lambda: ipc_roundtrip(nd_arr)},
    }
    if ndarrow is not None:
        cls = ndarrow.RaggedTensorArray if name.startswith("ragged") else ndarrow.TensorArray
        nda_arr = cls.from_numpy(arrays)
        ops["build"]["ndarrow"] = lambda: cls.from_numpy(arrays)
        ops["to numpy list"]["ndarrow"] = lambda: list(nda_arr.to_numpy())
        ops["check+to list"]["ndarrow"] = ops["to numpy list"]["ndarrow"]
        ops["IPC round trip"]["ndarrow"] = lambda: ipc_roundtrip(nda_arr)
    ops["IPC round trip"]["lists"] = lambda: ipc_roundtrip(py_arr)
    once_only = {"build": py_build, "to numpy list": py_list, "check+to list": py_list}
    rows = []
    for op, fns in ops.items():
        times = in_turn(fns, rounds)
        py = times.get("lists", once_only.get(op))
        rows.append((name, op, times["nd"], times.get("ndarrow"), py))
    nda_bytes = ipc_stream(nda_arr).size if ndarrow is not None else None
    return rows, (ipc_stream(nd_arr).size, nda_bytes, ipc_stream(py_arr).size)


_FIRST_CALL = """
import statistics, time, numpy as np, zarr, nd_arrow
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
reads, froms = [], []
for _ in range(ROUNDS):
    t = time.perf_counter(); read_columnar(array); reads.append(time.perf_counter() - t)
    t = time.perf_counter(); nd_arrow.from_zarr(array, dims=("point", "xy"))
    froms.append(time.perf_counter() - t)
print(t1 - t0, t2 - t1, min(reads), min(froms), statistics.median(reads), statistics.median(froms))
"""


def zarr_rows(small: bool, rounds: int) -> list[tuple[str, float, float]]:
    """(measure, read_columnar s, from_zarr s); empty without zarr and zarr-vlen-ndarray."""
    if any(importlib.util.find_spec(m) is None for m in ("zarr", "zarr_vlen_ndarray")):
        return []
    n_cells = 100_000 if small else 1_000_000
    code = _FIRST_CALL.replace("N_CELLS", str(n_cells)).replace("ROUNDS", str(rounds))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    first_read, first_from, min_read, min_from, med_read, med_from = map(float, out)
    return [
        (f"first call in a process, {n_cells:,} cells", first_read, first_from),
        (f"warm, min of {rounds}, {n_cells:,} cells", min_read, min_from),
        (f"warm, median of {rounds}, {n_cells:,} cells", med_read, med_from),
    ]


def _cells(times: Times | None, width: int, scale: float, digits: int) -> str:
    """Minimum and median of ``times`` (times ``scale``), or dashes."""
    if times is None:
        return f"{'-':>{width}} {'-':>{width}}"
    low, mid = min(times) * scale, statistics.median(times) * scale
    return f"{low:{width}.{digits}f} {mid:{width}.{digits}f}"


def _ratios(other: Times | None, nd: Times) -> str:
    """other / nd-arrow: of the minima, and the median of the rounds' ratios (each round runs the
    two back to back, so a slow change of load cancels)."""
    if other is None or len(other) != len(nd):
        return f"{'-':>5} {'-':>5}"
    by_min = min(other) / min(nd)
    by_round = statistics.median(o / n for o, n in zip(other, nd, strict=True))
    return f"{by_min:5.2f} {by_round:5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", "--quick", action="store_true", help="a tenth of the rows")
    parser.add_argument("--rounds", type=int, default=9, help="rounds per operation (9)")
    args, _ = parser.parse_known_args()  # other benchmarks' options are ignored
    print(describe())
    print(
        f"pyarrow {pa.__version__}, numpy {np.__version__}, "
        f"ndarrow {getattr(ndarrow, '__version__', 'not installed')}; "
        f"min and median of >= {args.rounds} rounds (column n), contenders in turn"
    )
    rows: list[Row] = []
    stream_bytes: dict[str, StreamBytes] = {}
    for name, (arrays, dims) in workloads(args.small).items():
        timed, stream_bytes[name] = measure(name, arrays, dims, args.rounds)
        rows += timed
    head = (
        f"{'workload':<28} {'operation':<15} {'nd-arrow ms':>19} {'ndarrow ms':>19} "
        f"{'lists ms':>17} {'ndarrow/nd':>11} {'lists/nd':>8} {'n':>3}"
    )
    mid = "min   median"
    print(head)
    print(f"{'':<44}{mid:>19} {mid:>19} {mid:>17} {'min rounds':>11} {'med':>8}")
    print("-" * len(head))
    ipc_times = {}
    for name, op, nd, nda, py in rows:
        py_ratio = f"{statistics.median(py) / statistics.median(nd):8.1f}" if py else f"{'-':>8}"
        print(
            f"{name:<28} {op:<15} {_cells(nd, 9, 1e3, 3)} {_cells(nda, 9, 1e3, 3)} "
            f"{_cells(py, 8, 1e3, 1)} {_ratios(nda, nd):>11} {py_ratio} {len(nd):3}"
        )
        if op == "IPC round trip":
            ipc_times[name] = (nd, nda)
    print()
    head = (
        f"{'IPC stream bytes':<28} {'nd-arrow':>12} {'ndarrow':>12} {'lists':>12} "
        f"{'ndarrow/nd bytes':>16} {'time (rounds)':>13}"
    )
    print(head)
    print("-" * len(head))
    for name, (nd_b, nda_b, py_b) in stream_bytes.items():
        nd_t, nda_t = ipc_times[name]
        if nda_b is None or nda_t is None:
            print(f"{name:<28} {nd_b:12,} {'-':>12} {py_b:12,} {'-':>16} {'-':>13}")
            continue
        time_ratio = statistics.median(o / n for o, n in zip(nda_t, nd_t, strict=True))
        print(
            f"{name:<28} {nd_b:12,} {nda_b:12,} {py_b:12,} {nda_b / nd_b:16.3f} {time_ratio:13.2f}"
        )
    bridge = zarr_rows(args.small, args.rounds)
    if bridge:
        print()
        head = f"{'zarr bridge':<40} {'read_columnar s':>15} {'from_zarr s':>12} {'extra s':>8}"
        print(head)
        print("-" * len(head))
        for what, read, bridged in bridge:
            print(f"{what:<40} {read:15.4f} {bridged:12.4f} {bridged - read:8.4f}")
    print(f"\nmemcpy after the run: {copy_bandwidth() / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
