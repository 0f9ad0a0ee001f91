"""Benchmark the two framing kernels of zarr_vlen_ndarray side by side: compiled (C) vs pure numpy.

Workload (a), one chunk: 100,000 cells of (n, 2) float32, n ~ Poisson(8) (8-byte rows, ~6.4 MB
of payload). Measured for each kernel, in this one process, alternating, best of the repeats:
  scan     the prefix scan alone (starts and lengths of every element)
  unframe  the payload extraction alone (given the scan) into a preallocated output (``gather``)
  frame    the framing alone (count, prefixes, payloads into a new buffer)
  decode   the whole ``decode_frames`` (header checks, scan, unframe)
  encode   the whole ``encode_frames`` (length checks, frame)
Then, for the kernel in use: ``decode_frames`` of 8 such chunks one after the other vs in 2 threads
(the C loops release the GIL, so threads can overlap them; this machine's cores are shared, so
this shows whether they overlap at all rather than a clean scaling).
Ratios are python / c (above 1: the C kernel is faster). The machine's memcpy speed (np.copyto of
a 256 MB buffer) is printed beside them: a frame or unframe cannot beat one copy of the payload.
There are no assertions: this prints a table (tests judge correctness, not speed).

Run:  python benchmarks/bench_framing.py [--quick] [--repeats N]
      (other options, e.g. those ``nox -s bench -- ARGS`` passes to every script, are ignored)
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from _timing import best_time

from zarr_vlen_ndarray import _framing_ref, framing

CELLS = 100_000
MEAN_ROWS = 8
ROW_NBYTES = 8  # (2,) float32
MEMCPY_NBYTES = 256 * 2**20
TARGET_SCAN = 20.0


def memcpy_gbps(repeats: int) -> float:
    src = np.ones(MEMCPY_NBYTES, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in first
    return MEMCPY_NBYTES / best_time(lambda: np.copyto(dst, src), repeats) / 1e9


def workload(cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    rows = rng.poisson(MEAN_ROWS, cells).astype(np.int64)
    values = rng.standard_normal((int(rows.sum()), 2)).astype(np.float32)
    payload = values.reshape(-1).view(np.uint8)
    nbytes = rows * ROW_NBYTES
    framed = framing.encode_frames(payload, nbytes)
    return payload, nbytes, framed


def measure(
    kernel: Any, payload: np.ndarray, nbytes: np.ndarray, framed: np.ndarray, repeats: int
) -> dict[str, float]:
    count = nbytes.size
    scanned = kernel.scan(framed, count, ROW_NBYTES)
    assert scanned is not None
    starts, lengths = scanned
    out = np.empty(int(lengths.sum()), dtype=np.uint8)
    dst = np.zeros(count, dtype=np.int64)
    np.cumsum(lengths[:-1], out=dst[1:])
    framed_out = np.empty(framed.size, dtype=np.uint8)

    def whole(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            saved = framing._kernel
            framing._kernel = kernel
            try:
                return fn()
            finally:
                framing._kernel = saved

        return run

    return {
        "scan": best_time(lambda: kernel.scan(framed, count, ROW_NBYTES), repeats),
        "unframe": best_time(lambda: kernel.gather(framed, starts, lengths, out, dst), repeats),
        "frame": best_time(lambda: kernel.frame(payload, nbytes, framed_out), repeats),
        "decode": best_time(
            whole(lambda: framing.decode_frames(framed, count, ROW_NBYTES)), repeats
        ),
        "encode": best_time(whole(lambda: framing.encode_frames(payload, nbytes)), repeats),
    }


def threads(framed: np.ndarray, count: int, repeats: int) -> tuple[float, float]:
    """Seconds to decode 8 chunks sequentially and in 2 threads (kernel in use)."""
    chunks = [framed.copy() for _ in range(8)]

    def one(chunk: np.ndarray) -> Any:
        return framing.decode_frames(chunk, count, ROW_NBYTES)

    sequential = best_time(lambda: [one(c) for c in chunks], repeats)
    with ThreadPoolExecutor(2) as pool:
        parallel = best_time(lambda: list(pool.map(one, chunks)), repeats)
    return sequential, parallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", "--small", action="store_true", help="1/10 of the chunk")
    parser.add_argument("--repeats", type=int, default=15, help="timings per measure (best kept)")
    args, _ = parser.parse_known_args()
    cells = CELLS // 10 if args.quick else CELLS

    kernels: dict[str, Any] = {"python": _framing_ref}
    try:
        kernels["c"] = importlib.import_module("zarr_vlen_ndarray._framing_c")
    except ImportError as exc:
        print(f"the C kernel is not built here ({exc}); timing the reference kernel only")

    payload, nbytes, framed = workload(cells)
    print(
        f"framing kernels, workload (a) one chunk: {cells:,} cells of (n, 2) float32, "
        f"n ~ Poisson({MEAN_ROWS}); payload {payload.size / 1e6:.1f} MB, chunk "
        f"{framed.size / 1e6:.1f} MB; framing.BACKEND = {framing.BACKEND!r}"
    )
    gbps = memcpy_gbps(max(3, args.repeats // 3))
    print(f"memcpy (np.copyto of 256 MB): {gbps:.2f} GB/s -> one copy of this payload: "
          f"{payload.size / gbps / 1e6:.2f} ms")  # fmt: skip

    results: dict[str, dict[str, float]] = {name: {} for name in kernels}
    for _ in range(2):  # alternate the kernels; keep the best of both rounds
        for name, kernel in kernels.items():
            for key, value in measure(kernel, payload, nbytes, framed, args.repeats).items():
                results[name][key] = min(value, results[name].get(key, value))

    header = f"{'measure':<9}{'python ms':>11}{'c ms':>9}{'python/c':>10}{'c GB/s':>9}  (payload/s)"
    print(header)
    print("-" * len(header))
    for key in ("scan", "unframe", "frame", "decode", "encode"):
        py = results["python"][key]
        line = f"{key:<9}{py * 1e3:>11.3f}"
        if "c" in results:
            c = results["c"][key]
            line += f"{c * 1e3:>9.3f}{py / c:>9.1f}x{payload.size / c / 1e9:>9.2f}"
        print(line)
    sequential, parallel = threads(framed, nbytes.size, max(3, args.repeats // 3))
    print(
        f"\ndecode_frames of 8 chunks ({framing.BACKEND} kernel, {os.cpu_count()} CPUs): "
        f"sequential {sequential * 1e3:.1f} ms, 2 threads {parallel * 1e3:.1f} ms "
        f"({sequential / parallel:.2f}x)"
    )
    if "c" in results:
        ratio = results["python"]["scan"] / results["c"]["scan"]
        per_cell = results["c"]["scan"] / cells * 1e9
        verdict = "met" if ratio >= TARGET_SCAN else "NOT met"
        print(
            f"\ntarget: one-chunk prefix scan, kernel vs fallback >= {TARGET_SCAN:.0f}x: "
            f"{ratio:.1f}x ({verdict}); C scan {per_cell:.2f} ns per cell"
        )


if __name__ == "__main__":
    main()
