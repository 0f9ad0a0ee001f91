"""Benchmark the vlen-ndarray codec against zarr-vlen-ndarray 0.2.0 and zarr's native vlen-bytes.

Workloads (issue 3), each stored raw and with zstd level 3:
  a: 1,000,000 cells of (n, 2) float32, n ~ Poisson(8), chunks of 100,000
  b:   100,000 cells of (n,) uint64,    n ~ Poisson(50), chunks of 10,000
  c:    10,000 cells of (n, 3, 2) float64, n ~ Poisson(8), chunks of 1,000
Implementations, all on the same data (saved once to .npy files), same machine, same zarr:
  ours   this repository's zarr_vlen_ndarray (ndarray + vlen-ndarray)
  0.2.0  the published zarr-vlen-ndarray 0.2.0, run with $ZVN020_PYTHON (an isolated venv)
  iii    zarr's native bytes type + vlen-bytes, cells pre-encoded as bytes (conversion not timed)
  iv     iii plus the per-cell conversions its user pays: tobytes() on write,
         np.frombuffer(...).reshape(...) on read
Metrics: whole-array write (arr[:] = cells) and read (arr[:]) through a MemoryStore; one-chunk
encode and decode through the array's own codecs (serializer, then zstd when used); peak extra
memory (tracemalloc, separate runs) of a write followed by a read whose result is kept, relative
to the payload (the cells' raw bytes), and the two parts of it that stay held: the MemoryStore's
chunks and the read's result (for small cells mostly the per-cell ndarray/bytes objects).

Every implementation runs in its own fresh subprocess; the implementations alternate, rounds
repeat, and each number is the best seen. Ratios are other / ours (above 1: ours is faster or
smaller). There are no assertions: this prints a table (tests judge correctness, not speed).

Run:  ZVN020_PYTHON=/path/to/venv/bin/python python benchmarks/bench_codec.py [--quick]
      [--rounds N] [--workloads abc] [--profile]
      (without ZVN020_PYTHON the 0.2.0 column is left empty)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _machine import describe
from _timing import best_time

IMPLS = ("ours", "0.2.0", "iii", "iv")
WORKLOADS: dict[str, dict[str, Any]] = {
    "a": {"cells": 1_000_000, "chunk": 100_000, "dtype": "float32", "fixed": (2,), "mean": 8},
    "b": {"cells": 100_000, "chunk": 10_000, "dtype": "uint64", "fixed": (), "mean": 50},
    "c": {"cells": 10_000, "chunk": 1_000, "dtype": "float64", "fixed": (3, 2), "mean": 8},
}
REPEATS = 3  # whole-array operations, inside one worker process; the best is kept
CHUNK_REPEATS = 7  # one-chunk encode/decode (cheap, and the noisiest)


# ============================================================== worker (runs in a subprocess)


def _cells(data: Path) -> tuple[np.ndarray, dict[str, Any]]:
    meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
    flat = np.load(data / "flat.npy")
    rows = np.load(data / "rows.npy")
    offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    cells = np.empty(rows.size, dtype=object)
    bounds = offsets.tolist()
    for i in range(rows.size):
        cells[i] = flat[bounds[i] : bounds[i + 1]]
    return cells, meta


class _Setup:
    """One implementation's array factory, cell conversion and chunk codecs."""

    def __init__(self, impl: str, meta: dict[str, Any], zstd: bool) -> None:
        import zarr
        from zarr.core.array_spec import ArrayConfig, ArraySpec
        from zarr.core.buffer import default_buffer_prototype

        self.impl = impl
        self.zarr = zarr
        self.fixed = tuple(meta["fixed"])
        self.item = np.dtype(meta["dtype"])
        self.chunk = meta["chunk"]
        self.compressors = [zarr.codecs.ZstdCodec(level=3)] if zstd else None
        self.prototype = default_buffer_prototype()
        if impl in ("ours", "0.2.0"):
            from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec

            self.dtype: Any = NDArray(dtype=meta["dtype"], shape=(None, *self.fixed))
            self.serializer: Any = VlenNDArrayCodec()
        else:
            from zarr.codecs import VLenBytesCodec
            from zarr.dtype import VariableLengthBytes

            self.dtype = VariableLengthBytes()
            self.serializer = VLenBytesCodec()
        self.spec = ArraySpec(
            shape=(self.chunk,),
            dtype=self.dtype,
            fill_value=self.dtype.default_scalar(),
            config=ArrayConfig.from_dict({}),
            prototype=self.prototype,
        )
        self.loop = asyncio.new_event_loop()

    def create(self) -> Any:
        return self.zarr.create_array(
            self.zarr.storage.MemoryStore(),
            shape=(self.n,),
            chunks=(self.chunk,),
            dtype=self.dtype,
            serializer=self.serializer,
            compressors=self.compressors,
        )

    # conversions a user of the bytes type pays (iv) ------------------------------------
    @staticmethod
    def to_bytes(cells: np.ndarray) -> np.ndarray:
        out = np.empty(cells.size, dtype=object)
        out[:] = [c.tobytes() for c in cells]
        return out

    def from_bytes(self, payloads: np.ndarray) -> np.ndarray:
        item, shape = self.item, (-1, *self.fixed)
        out = np.empty(payloads.size, dtype=object)
        out[:] = [np.frombuffer(p, dtype=item).reshape(shape) for p in payloads]
        return out

    # one chunk through the array's codecs ---------------------------------------------
    def encode(self, chunk: np.ndarray) -> Any:
        nd = self.prototype.nd_buffer.from_numpy_array(chunk)
        out = self.loop.run_until_complete(self.serializer._encode_single(nd, self.spec))
        if self.compressors:
            out = self.loop.run_until_complete(self.compressors[0]._encode_single(out, self.spec))
        return out

    def decode(self, framed: Any) -> np.ndarray:
        if self.compressors:
            framed = self.loop.run_until_complete(
                self.compressors[0]._decode_single(framed, self.spec)
            )
        nd = self.loop.run_until_complete(self.serializer._decode_single(framed, self.spec))
        return nd.as_numpy_array()


def worker(impl: str, data: Path, zstd: bool, memory: bool) -> dict[str, Any]:
    cells, meta = _cells(data)
    setup = _Setup(impl, meta, zstd)
    setup.n = cells.size
    payload = int(sum(c.nbytes for c in cells))
    # The input a user of each implementation holds before writing.
    source = setup.to_bytes(cells) if impl == "iii" else cells

    def write(arr: Any) -> None:
        arr[:] = setup.to_bytes(source) if impl == "iv" else source

    def read(arr: Any) -> np.ndarray:
        out = arr[:]
        return setup.from_bytes(out) if impl == "iv" else out

    if memory:
        arr = setup.create()
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        write(arr)
        stored, write_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = read(arr)
        held, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del result
        return {
            "peak": max(write_peak, read_peak) - base,  # the whole write-then-read sequence
            "store": stored - base,  # what the MemoryStore holds after the write
            "result": held - stored,  # what the read's result holds
            "payload": payload,
        }

    # One chunk first, in a clean process (the whole-array runs below fragment the heap).
    timings: dict[str, Any] = {}
    chunk = source[: setup.chunk]
    if impl == "iv":
        timings["encode"] = best_time(lambda: setup.encode(setup.to_bytes(chunk)), CHUNK_REPEATS)
        framed = setup.encode(setup.to_bytes(chunk))
        timings["decode"] = best_time(
            lambda: setup.from_bytes(setup.decode(framed).ravel()), CHUNK_REPEATS
        )
    else:
        timings["encode"] = best_time(lambda: setup.encode(chunk), CHUNK_REPEATS)
        framed = setup.encode(chunk)
        timings["decode"] = best_time(lambda: setup.decode(framed), CHUNK_REPEATS)
    arr = setup.create()
    write(arr)  # warm up (imports, first allocation)
    timings["write"] = best_time(lambda: write(arr), REPEATS)
    timings["read"] = best_time(lambda: read(arr), REPEATS)
    timings["payload"] = payload
    return timings


# ==================================================================== driver (main process)


def make_data(root: Path, quick: bool) -> dict[str, Path]:
    rng = np.random.default_rng(20260101)
    out = {}
    for name, spec in WORKLOADS.items():
        n = spec["cells"] // (10 if quick else 1)
        chunk = spec["chunk"] // (10 if quick else 1)
        rows = rng.poisson(spec["mean"], n).astype(np.int64)
        shape = (int(rows.sum()), *spec["fixed"])
        if np.dtype(spec["dtype"]).kind == "f":
            flat = rng.random(shape).astype(spec["dtype"])
        else:
            flat = rng.integers(0, 2**63, size=shape, dtype=np.int64).astype(spec["dtype"])
        folder = root / name
        folder.mkdir(parents=True)
        np.save(folder / "flat.npy", flat)
        np.save(folder / "rows.npy", rows)
        meta = {"dtype": spec["dtype"], "fixed": list(spec["fixed"]), "chunk": chunk, "cells": n}
        (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        out[name] = folder
    return out


def python_for(impl: str) -> str | None:
    return os.environ.get("ZVN020_PYTHON") if impl == "0.2.0" else sys.executable


def run_worker(impl: str, data: Path, zstd: bool, memory: bool) -> dict[str, Any] | None:
    python = python_for(impl)
    if not python:
        return None
    cmd = [python, "-W", "ignore", str(Path(__file__).resolve()), "--worker", impl, str(data)]
    cmd += ["--zstd"] if zstd else []
    cmd += ["--memory"] if memory else []
    # Run from the data folder so that a checkout on sys.path cannot shadow the installed 0.2.0.
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=data)
    if done.returncode != 0:
        print(f"  [{impl} failed: {done.stderr.strip().splitlines()[-1:]}]", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ms":
        return f"{value * 1e3:.1f}"
    if unit == "x":
        return f"{value:.2f}"
    return f"{value:.3f}"


def report(name: str, zstd: bool, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec = WORKLOADS[name]
    payload = next((r["payload"] for r in results.values() if r and "payload" in r), 0)
    title = (
        f"workload {name}: {spec['dtype']} cells (n, {', '.join(map(str, spec['fixed']))})"
        f" n~Poisson({spec['mean']}), {'zstd 3' if zstd else 'raw'}, payload {payload / 1e6:.1f} MB"
    ).replace("(n, )", "(n,)")
    print(f"\n{title}")
    head = f"{'metric':<24}" + "".join(f"{i:>10}" for i in IMPLS)
    head += "".join(f"{o + '/ours':>12}" for o in IMPLS[1:])
    print(head)
    rows = [
        ("write (s)", "write", "s"),
        ("read (s)", "read", "s"),
        ("chunk encode (ms)", "encode", "ms"),
        ("chunk decode (ms)", "decode", "ms"),
        ("peak extra / payload", "peak_ratio", "x"),
        ("  held by store", "store_ratio", "x"),
        ("  held by read result", "result_ratio", "x"),
    ]
    ratios: dict[str, Any] = {}
    for label, key, unit in rows:
        values = {i: (results.get(i) or {}).get(key) for i in IMPLS}
        line = f"{label:<24}" + "".join(f"{_fmt(values[i], unit):>10}" for i in IMPLS)
        for other in IMPLS[1:]:
            ours, theirs = values["ours"], values[other]
            ratio = theirs / ours if ours and theirs else None
            ratios[(key, other)] = ratio
            line += f"{_fmt(ratio, 'x'):>12}"
        print(line)
    ratios["peak_ours"] = (results.get("ours") or {}).get("peak_ratio")
    return ratios


def targets(ratios: dict[str, Any]) -> None:
    """The issue's targets on workload a (raw), as measured above. Informational only."""

    def show(text: str, value: float | None, ok: Callable[[float], bool]) -> None:
        verdict = "-" if value is None else ("met" if ok(value) else "MISSED")
        shown = "-" if value is None else f"{value:.2f}"
        print(f"  {text:<52}{shown:>8}  {verdict}")

    print("\ntargets on workload a (raw):")
    show("chunk encode speed-up vs 0.2.0 (>= 8)", ratios.get(("encode", "0.2.0")), lambda v: v >= 8)
    show("chunk decode speed-up vs 0.2.0 (>= 8)", ratios.get(("decode", "0.2.0")), lambda v: v >= 8)
    show("write speed-up vs 0.2.0 (>= 5)", ratios.get(("write", "0.2.0")), lambda v: v >= 5)
    show("read speed-up vs 0.2.0 (>= 8)", ratios.get(("read", "0.2.0")), lambda v: v >= 8)
    show("read speed-up vs (iv) (>= 2)", ratios.get(("read", "iv")), lambda v: v >= 2)
    show(
        "write time / (iv) write time (<= 1.5)",
        _inv(ratios.get(("write", "iv"))),
        lambda v: v <= 1.5,
    )
    show("peak extra memory / payload (<= 3)", ratios.get("peak_ours"), lambda v: v <= 3)


def _inv(value: float | None) -> float | None:
    return 1 / value if value else None


def profile(data: Path) -> None:
    """cProfile of ours on workload a (raw): where write and read time goes."""
    import cProfile
    import pstats

    cells, meta = _cells(data)
    setup = _Setup("ours", meta, zstd=False)
    setup.n = cells.size
    arr = setup.create()
    arr[:] = cells
    for label, stmt in (
        ("write", lambda: arr.__setitem__(slice(None), cells)),
        ("read", arr.__getitem__),
    ):
        prof = cProfile.Profile()
        prof.enable()
        stmt() if label == "write" else stmt(slice(None))
        prof.disable()
        print(f"\nprofile of ours, workload a raw, {label} (top 12 by own time):")
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", "--small", action="store_true", help="1/10 of every workload")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--profile", action="store_true", help="cProfile ours on workload a")
    parser.add_argument(
        "--workloads", default="abc", help="which workloads to run, e.g. 'a' (default 'abc')"
    )
    parser.add_argument("--worker", nargs=2, metavar=("IMPL", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--zstd", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args, _unknown = parser.parse_known_args()  # other benchmarks' options are ignored

    if args.worker:
        impl, data = args.worker
        print(json.dumps(worker(impl, Path(data), args.zstd, args.memory)))
        return

    print(describe())
    if not os.environ.get("ZVN020_PYTHON"):
        print("ZVN020_PYTHON is not set: the 0.2.0 column stays empty", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench_codec_") as tmp:
        folders = make_data(Path(tmp), args.quick)
        summary: dict[str, Any] = {}
        for name, folder in folders.items():
            if name not in args.workloads:
                continue
            for zstd in (False, True):
                best: dict[str, dict[str, Any]] = {i: {} for i in IMPLS}
                for round_ in range(args.rounds):
                    order = IMPLS[round_ % 2 :: 1] + IMPLS[: round_ % 2]  # alternate who goes first
                    for impl in order:
                        got = run_worker(impl, folder, zstd, memory=False)
                        if got is None:
                            continue
                        for key, value in got.items():
                            if key == "payload":
                                best[impl][key] = value
                            else:
                                best[impl][key] = min(value, best[impl].get(key, value))
                for impl in IMPLS:
                    mem = run_worker(impl, folder, zstd, memory=True)
                    if mem is not None:
                        best[impl]["peak_ratio"] = mem["peak"] / mem["payload"]
                        best[impl]["store_ratio"] = mem["store"] / mem["payload"]
                        best[impl]["result_ratio"] = mem["result"] / mem["payload"]
                ratios = report(name, zstd, best)
                if name == "a" and not zstd:
                    summary = ratios
        targets(summary)
        if args.profile:
            profile(folders["a"])


if __name__ == "__main__":
    main()
