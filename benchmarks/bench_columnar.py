"""Benchmark columnar access (read_columnar / write_columnar) against the object-array path.

Workload (a) of issue 3: 1,000,000 cells of (n, 2) float32, n ~ Poisson(8), chunks of 100,000,
stored raw and with zstd level 3, in a MemoryStore. Measured in one process, same data:

  columnar read    read_columnar(arr) -> (values, offsets)
  read into out=   read_columnar(arr, out=buffers): the same read into the caller's arrays,
                   as a worker reading block after block does (no fresh output pages); with
                   the page faults and the system CPU seconds of one read beside both
  object read      arr[:] (this project's codec: an object array of read-only cells)
  vlen-bytes read  arr[:] on zarr's own bytes + vlen-bytes array of the same cells pre-encoded
                   as bytes (returns bytes objects, does no typing)
  columnar write   write_columnar(arr, values, offsets)
  object write     arr[:] = cells (an object array of the same cells)

Each operation is repeated (default 5 times, alternating between implementations); the table
shows the minimum and the median in seconds and ratios of minima (other / columnar; above 1 means
columnar is faster). Targets (issue 10, raw): columnar read >= 5x object read, >= 1.5x the
throughput of the vlen-bytes read (ratio >= 1.5); columnar write >= 3x object write. The peak
memory of read_columnar on this workload (with zstd) is measured by bench_shards.py, as RSS in a
fresh process. No assertions.

Run:  python benchmarks/bench_columnar.py [--small] [--repeats N]
(Other options that ``nox -s bench -- ...`` passes to every script are ignored.)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _timing import rounds
from zarr.codecs import VLenBytesCodec, ZstdCodec
from zarr.dtype import VariableLengthBytes

from zarr_ndarray_dtype import read_columnar, write_columnar
from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec


def make_data(cells: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = rng.poisson(8, cells).astype(np.int64)
    offsets = np.zeros(cells + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    values = rng.standard_normal((int(offsets[-1]), 2)).astype(np.float32)
    return values, offsets


def object_cells(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.empty(len(offsets) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = values[offsets[i] : offsets[i + 1]]
    return out


def bytes_cells(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    raw = values.tobytes()
    unit = values.itemsize * 2
    out = np.empty(len(offsets) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = raw[offsets[i] * unit : offsets[i + 1] * unit]
    return out


def create(cells: int, chunk: int, zstd: bool, *, native: bool = False) -> Any:
    compressors = [ZstdCodec(level=3)] if zstd else None
    if native:
        return zarr.create_array(
            zarr.storage.MemoryStore(),
            shape=(cells,),
            chunks=(chunk,),
            dtype=VariableLengthBytes(),
            serializer=VLenBytesCodec(),
            compressors=compressors,
        )
    return zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=(cells,),
        chunks=(chunk,),
        dtype=NDArray(dtype="float32", shape=(None, 2)),
        serializer=VlenNDArrayCodec(),
        compressors=compressors,
    )


def run(cells: int, chunk: int, zstd: bool, repeats: int) -> dict[str, list[float]]:
    values, offsets = make_data(cells)
    objects = object_cells(values, offsets)
    blobs = bytes_cells(values, offsets)
    ours = create(cells, chunk, zstd)
    ours_obj = create(cells, chunk, zstd)
    native = create(cells, chunk, zstd, native=True)
    native[:] = blobs
    write_columnar(ours, values, offsets)
    ours_obj[:] = objects

    # Sanity: both of our paths store the same bytes and read back the same data.
    store_a = ours.store_path.store._store_dict
    store_b = ours_obj.store_path.store._store_dict
    same = {k: v.to_bytes() for k, v in store_a.items() if k != "zarr.json"} == {
        k: v.to_bytes() for k, v in store_b.items() if k != "zarr.json"
    }
    got_v, got_o = read_columnar(ours)
    if not (same and np.array_equal(got_v, values) and np.array_equal(got_o, offsets)):
        raise SystemExit("columnar and object paths disagree: refusing to report timings")

    buffers = (np.empty_like(values), np.empty_like(offsets))
    ops: dict[str, Callable[[], Any]] = {
        "columnar read": lambda: read_columnar(ours),
        "read into out=": lambda: read_columnar(ours, out=buffers),
        "object read": lambda: ours_obj[:],
        "vlen-bytes read": lambda: native[:],
        "columnar write": lambda: write_columnar(ours, values, offsets),
        "object write": lambda: ours_obj.__setitem__(slice(None), objects),
    }
    times = rounds(ops, repeats)
    for name in ("columnar read", "read into out="):
        print(f"  {name}: {kernel_work(ops[name])}")
    return times


def kernel_work(fn: Callable[[], Any], calls: int = 3) -> str:
    """Minor page faults and system CPU seconds of one call (the mean of ``calls``)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(calls):
        fn()
    after = resource.getrusage(resource.RUSAGE_SELF)
    faults = (after.ru_minflt - before.ru_minflt) / calls
    return (
        f"{faults:,.0f} page faults, {(after.ru_stime - before.ru_stime) / calls:.3f} s system CPU"
    )


def main() -> None:
    # zarr warns that its own variable_length_bytes type has no v3 spec yet (not ours).
    warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", "--quick", action="store_true", help="a tenth of the cells")
    parser.add_argument("--repeats", type=int, default=5, help="rounds (default 5)")
    args, _ = parser.parse_known_args()
    cells, chunk = (100_000, 10_000) if args.small else (1_000_000, 100_000)
    print(describe())
    print(f"\ncolumnar access, workload (a): {cells:,} cells of (n, 2) float32, n ~ Poisson(8), ")
    print(f"chunks of {chunk:,}; zarr {zarr.__version__}; {args.repeats} rounds, min / median (s)")
    for zstd in (False, True):
        print(f"\n[{'zstd 3' if zstd else 'raw'}] kernel work of one read:")
        times = run(cells, chunk, zstd, args.repeats)
        best = {k: min(v) for k, v in times.items()}
        label = "zstd 3" if zstd else "raw"
        print(f"\n[{label}]")
        print(f"{'operation':<18}{'min s':>9}{'median s':>10}{'vs columnar':>13}")
        for name, values in times.items():
            base = "columnar read" if "read" in name else "columnar write"
            ratio = best[name] / best[base]
            print(f"{name:<18}{min(values):>9.4f}{statistics.median(values):>10.4f}{ratio:>12.2f}x")
        print(
            f"targets: object read / columnar read = "
            f"{best['object read'] / best['columnar read']:.1f}x (>= 5), "
            f"vlen-bytes read / columnar read = "
            f"{best['vlen-bytes read'] / best['columnar read']:.2f} (>= 1.5), "
            f"object write / columnar write = "
            f"{best['object write'] / best['columnar write']:.1f}x (>= 3)"
        )


if __name__ == "__main__":
    main()
