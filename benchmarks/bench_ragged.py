"""Benchmark the ragged-ndarray codec (issue 12): every measure side by side, in one run.

  decode       one 100,000-cell chunk of workload (a) (``[null, 2]`` float32, n ~ Poisson(8)):
               ragged-ndarray's decode vs vlen-ndarray's (its pure-Python path; its compiled
               kernel where the vlen package has one); also both without making the cells
               (ragged's table -> offsets computation vs vlen's framing scan); and the cells alone
               (ragged's cutting of the decoded values) vs the cheapest view numpy makes at all,
               one row view per cell made by iterating the values' rows: the floor of any decode
               that returns ndarray cells
  size         the same chunk stored with zstd level 3: ragged-ndarray bytes / vlen-ndarray bytes
  read         100,000 ``[null, null]`` float32 cells, h and w uniform in 1..64, chunks of
               10,000, through ``arr[:]``: vs today's workaround, a ``variable_length_bytes``
               array plus an (n, 2) int64 shapes array, each cell ``np.frombuffer(...).reshape``
  columnar     ``read_columnar`` of that array vs ``arr[:]`` of a plain float32 array holding the
               same payload bytes in the same number of chunks (throughput ratio)
  shards       a (256, 256) grid of ``[null, null]`` float32 cells (h, w uniform in 1..16) in
               shards of (128, 128) with inner chunks of (32, 32), zstd 3: ``write_columnar``
               (shards built directly) vs ``arr[...] = cells`` through zarr's object path, each
               into a fresh array

Each timing is the best of ``--repeats`` runs, the contenders alternating in one process on the
same data. Ratios are other / ragged for times (above 1: ragged is faster) and ragged / vlen for
sizes. No assertions: this prints a table (tests judge correctness, not speed).

Run:  python benchmarks/bench_ragged.py [--quick] [--repeats N]
(Other options that ``nox -s bench -- ...`` passes to every script are ignored.)
"""

from __future__ import annotations

import argparse
import itertools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _timing import best_time
from numcodecs import Zstd
from zarr.dtype import VariableLengthBytes

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_dtype._columns import cut as cut_cells
from zarr_ragged_ndarray import RaggedNDArrayCodec, read_columnar, write_columnar
from zarr_ragged_ndarray.codec import RaggedBlocks
from zarr_vlen_ndarray import VlenNDArrayCodec
from zarr_vlen_ndarray.framing import decode_frames as vlen_frames

ragged_decode = RaggedNDArrayCodec.decode_chunk
ragged_encode = RaggedNDArrayCodec.encode_chunk
vlen_decode = VlenNDArrayCodec.decode_chunk
vlen_encode = VlenNDArrayCodec.encode_chunk

A_DTYPE = NDArrayDType(dtype="float32", shape=(None, 2))
NN_DTYPE = NDArrayDType(dtype="float32", shape=(None, None))


def side_by_side(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Best time of each, the contenders alternating round by round."""
    out = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            out[name] = min(out[name], best_time(fn, 1))
    return out


def object_cells(arrays: list[np.ndarray]) -> np.ndarray:
    cells = np.empty(len(arrays), dtype=object)
    cells[:] = arrays
    return cells


def workload_a(count: int, rng: np.random.Generator) -> np.ndarray:
    rows = rng.poisson(8, count)
    flat = rng.standard_normal((int(rows.sum()), 2)).astype(np.float32)
    bounds = np.concatenate([[0], np.cumsum(rows)]).tolist()
    return object_cells([flat[a:b] for a, b in itertools.pairwise(bounds)])


@contextmanager
def vlen_framing(kernel: str) -> Iterator[bool]:
    """Run vlen-ndarray on its ``"python"`` (reference) or ``"c"`` framing kernel; yields
    whether that kernel is available in the installed package."""
    from zarr_vlen_ndarray import _framing_ref, framing

    chosen: Any = _framing_ref
    if kernel == "c":
        try:
            from zarr_vlen_ndarray import _framing_c

            chosen = _framing_c
        except ImportError:
            yield False
            return
    saved = framing._kernel
    framing._kernel = chosen
    try:
        yield True
    finally:
        framing._kernel = saved


def measure_chunk(count: int, repeats: int) -> dict[str, float]:
    cells = workload_a(count, np.random.default_rng(0))
    ragged = ragged_encode(cells, A_DTYPE)
    vlen = vlen_encode(cells, A_DTYPE)
    found: dict[str, float] = {}
    for kernel in ("python", "c"):
        with vlen_framing(kernel) as available:
            if not available:
                continue
            times = side_by_side(
                {
                    "ragged": lambda: ragged_decode(ragged, (count,), A_DTYPE),
                    "vlen": lambda: vlen_decode(vlen, (count,), A_DTYPE),
                },
                repeats,
            )
            layout = side_by_side(
                {
                    "ragged": lambda: RaggedBlocks().decode(ragged, count, A_DTYPE, "bench"),
                    "vlen": lambda: vlen_frames(vlen, count, A_DTYPE.fixed_nbytes, what="bench"),
                },
                repeats,
            )
        found |= {
            f"layout_ragged_{kernel}_s": layout["ragged"],
            f"layout_vlen_{kernel}_s": layout["vlen"],
            f"decode_ragged_{kernel}_s": times["ragged"],
            f"decode_vlen_{kernel}_s": times["vlen"],
        }
    values, offsets, shapes = RaggedBlocks().decode(ragged, count, A_DTYPE, "bench").cells()
    block = values.reshape(-1, 2)
    cut = side_by_side(
        {
            # cut_cells freezes what it is given: a fresh view each time.
            "ragged": lambda: cut_cells(values.view(), offsets, shapes, A_DTYPE.pattern),
            # Iterating a 2-D array makes one row view per step, with no index to parse.
            "floor": lambda: np.fromiter(block[:count], dtype=object, count=count),
        },
        repeats,
    )
    found |= {"cells_ragged_s": cut["ragged"], "cells_floor_s": cut["floor"]}
    zstd = Zstd(level=3)
    return found | {
        "size_ragged": float(len(zstd.encode(ragged.tobytes()))),
        "size_vlen": float(len(zstd.encode(vlen.tobytes()))),
        "raw_ragged": float(ragged.size),
        "raw_vlen": float(vlen.size),
    }


def measure_arrays(count: int, chunk: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    hw = rng.integers(1, 65, size=(count, 2))
    sizes = hw.prod(axis=1)
    flat = rng.standard_normal(int(sizes.sum())).astype(np.float32)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    starts, table = bounds[:-1], hw.tolist()
    cells = object_cells(
        [flat[a : a + h * w].reshape(h, w) for a, (h, w) in zip(starts, table, strict=True)]
    )
    ragged = zarr.create_array(
        zarr.storage.MemoryStore(), shape=(count,), chunks=(chunk,), dtype=NN_DTYPE,
        serializer=RaggedNDArrayCodec(), compressors=None,
    )  # fmt: skip
    ragged[:] = cells
    with warnings.catch_warnings():  # zarr warns that variable_length_bytes is not in the spec
        warnings.simplefilter("ignore")
        raw = zarr.create_array(
            zarr.storage.MemoryStore(), shape=(count,), chunks=(chunk,),
            dtype=VariableLengthBytes(), compressors=None,
        )  # fmt: skip
        payloads = np.empty(count, dtype=object)
        payloads[:] = [c.tobytes() for c in cells]
        raw[:] = payloads
    shapes = zarr.create_array(
        zarr.storage.MemoryStore(), shape=(count, 2), chunks=(chunk, 2), dtype="int64",
        compressors=None,
    )  # fmt: skip
    shapes[:] = hw
    plain = zarr.create_array(
        zarr.storage.MemoryStore(), shape=(flat.size,), chunks=(-(-flat.size // (count // chunk)),),
        dtype="float32", compressors=None,
    )  # fmt: skip
    plain[:] = flat

    def workaround() -> list[np.ndarray]:
        blobs = raw[:]
        table = shapes[:].tolist()
        return [np.frombuffer(b, dtype="<f4").reshape(s) for b, s in zip(blobs, table, strict=True)]

    # Two separate alternations: object reads leave ~100,000 objects to free, which would bias
    # whichever bulk read follows them.
    times = side_by_side({"ragged": lambda: ragged[:], "workaround": workaround}, repeats)
    times |= side_by_side(
        {"columnar": lambda: read_columnar(ragged), "plain": lambda: plain[:]}, repeats
    )
    return {f"{k}_s": v for k, v in times.items()} | {"payload_bytes": float(flat.nbytes)}


def measure_sharded_write(side: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(2)
    count = side * side
    hw = rng.integers(1, 17, size=(count, 2)).astype(np.int64)
    sizes = hw.prod(axis=1)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    flat = rng.standard_normal(int(offsets[-1])).astype(np.float32)
    bounds, table = offsets.tolist(), hw.tolist()
    cells = object_cells(
        [flat[a : a + h * w].reshape(h, w) for a, (h, w) in zip(bounds, table, strict=False)]
    ).reshape(side, side)
    inner, shard = max(1, side // 8), max(1, side // 2)

    def fresh() -> Any:
        return zarr.create_array(
            zarr.storage.MemoryStore(), shape=(side, side), chunks=(inner, inner),
            shards=(shard, shard), dtype=NN_DTYPE, serializer=RaggedNDArrayCodec(),
            compressors=zarr.codecs.ZstdCodec(level=3),
        )  # fmt: skip

    def direct() -> None:
        write_columnar(fresh(), flat, offsets, shapes=hw)

    def objects() -> None:
        fresh()[...] = cells

    times = side_by_side({"direct": direct, "objects": objects}, repeats)
    return {f"shard_{k}_s": v for k, v in times.items()} | {"shard_bytes": float(flat.nbytes)}


#: One printed line: measure, detail, ratio (None: not measured here), target.
Row = tuple[str, str, float | None, str]


def ms(first: float, second: float) -> str:
    return f"{first * 1e3:8.1f} ms / {second * 1e3:8.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", "--small", action="store_true", help="1/10 of every size")
    parser.add_argument("--repeats", type=int, default=5, help="alternating rounds (default 5)")
    args, _ = parser.parse_known_args()
    scale = 10 if args.quick else 1
    chunk_cells = 100_000 // scale
    array_cells = 100_000 // scale

    a = measure_chunk(chunk_cells, args.repeats)
    b = measure_arrays(array_cells, 10_000 // scale, args.repeats)
    side = 256 if not args.quick else 64
    c = measure_sharded_write(side, args.repeats)
    mb = b["payload_bytes"] / 1e6
    print(describe())
    print(f"bench_ragged: {chunk_cells:,}-cell chunk of (n, 2) float32; {array_cells:,} cells of")
    print(f"(h, w) float32 ({mb:.0f} MB payload); best of {args.repeats}, alternating")
    print()

    def timed(name: str, other: str, ours: str, target: str) -> Row:
        """A row comparing two timings of ``a``: other / ragged (above 1: ragged is faster)."""
        return name, ms(a[other], a[ours]), a[other] / a[ours], target

    rows: list[Row] = []
    for kernel, label, target in (("python", "pure-Python", ">= 5x"), ("c", "compiled", ">= 1x")):
        name = f"decode one chunk, vs vlen-ndarray ({label} framing)"
        if f"decode_vlen_{kernel}_s" not in a:
            rows.append((name, "not built here", None, target))
            continue
        rows.append(timed(name, f"decode_vlen_{kernel}_s", f"decode_ragged_{kernel}_s", target))
        rows.append(
            timed(
                "  the same without making cells (sizes, offsets, values)",
                f"layout_vlen_{kernel}_s",
                f"layout_ragged_{kernel}_s",
                "(info)",
            )
        )
    rows += [
        timed(
            "  the cells alone, vs numpy's floor (a row view per cell)",
            "cells_floor_s",
            "cells_ragged_s",
            "(info)",
        ),
        (
            "stored size with zstd 3, ragged / vlen",
            f"{a['size_ragged'] / 1e6:8.3f} MB / {a['size_vlen'] / 1e6:8.3f} MB",
            a["size_ragged"] / a["size_vlen"],
            "<= 1.0x",
        ),
        (
            "read [null, null] cells, vs vlen-bytes + shapes workaround",
            f"{b['workaround_s'] * 1e3:8.1f} ms / {b['ragged_s'] * 1e3:8.1f} ms",
            b["workaround_s"] / b["ragged_s"],
            ">= 5x",
        ),
        (
            "read_columnar throughput, vs plain float32 array",
            f"{mb / b['columnar_s']:8.0f} MB/s / {mb / b['plain_s']:8.0f} MB/s",
            b["plain_s"] / b["columnar_s"],
            ">= 0.8x",
        ),
        (
            "write_columnar into shards, vs zarr's object path",
            ms(c["shard_objects_s"], c["shard_direct_s"]),
            c["shard_objects_s"] / c["shard_direct_s"],
            "(info)",
        ),
    ]
    for name, detail, ratio, target in rows:
        shown = "   n/a" if ratio is None else f"{ratio:6.2f}x"
        print(f"  {name:<60} {shown}  (target {target:>7})  {detail}")
    print()
    print(f"  uncompressed chunk: ragged {a['raw_ragged']:,.0f} B, vlen {a['raw_vlen']:,.0f} B")


if __name__ == "__main__":
    main()
