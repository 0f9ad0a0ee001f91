"""Workload (z): the sharded layout real users write, on a local store and on S3 (moto).

The layout of `../shared/reference/users-and-peers.md` (zagg): one shard of 1,048,576 cells in
4,096-cell inner chunks, zstd level 3, crc32c shard index at the end, empty inner chunks not
written; cells are (n, 2) float32 t-digest centroids with n heavy-tailed (log-normal, median
~50, capped at 8,192, the cap reached at least once). Everything is measured on the same data,
each operation ``--repeats`` times with the implementations taking turns (min / median), and
reported as ratios against a baseline measured in the same run:

  write    columnar write into the shard  vs  the object path (``arr[:] = cells``), into a
           MemoryStore and a local store; and the bound of any write through zarr: its serial
           part (assembling the shard, storing it) plus framing and zstd of every inner chunk
           spread over the cores
  read     columnar read of the whole shard  vs  the floor "fetch the shard + zstd-decompress
           every inner chunk + one copy" (numcodecs Zstd; on one core, and on every core),
           and vs the object read
  region   columnar read of one inner chunk  vs  the object read of it
  memory   peak extra RSS of ``read_columnar`` in a fresh process / its output (values +
           offsets): (z) from a local store, and workload (a) (1,000,000 cells of (n, 2)
           float32, n ~ Poisson(8), chunks of 100,000, zstd 3); with glibc's defaults and with
           its mmap threshold fixed (``FIXED_MMAP``: freed blocks go back to the system)
  S3       columnar read over an S3-compatible server on 127.0.0.1 (moto, through obstore
           wrapped in zarr's ObjectStore)  vs  fetching the same objects with obstore alone
           (its buffers, uncopied), and the CPU the two need: moto shares the cores;
           on moto as it is, whose ranged GET reads the whole object (its cost is printed), and
           on moto serving ranges at the cost of the range, as S3 does (``_moto_ranged.py``);
           with the GETs zarr makes per read, their bytes, and the seconds with one in flight
           (``_requests.py``), and the read of one inner chunk over S3

Targets (issue 19): write >= 2x the object write; local read within 1.2x of the floor; S3 read
within 1.15x of the obstore fetch; peak extra memory <= 1.3x the output. Issue 29: local read
within 1.3x of the floor with zstd on every core; S3 read within 1.25x of the local read. No
assertions.

Run:  python benchmarks/bench_shards.py [--cells N] [--repeats N] [--no-s3]
(``nox -s bench`` runs it with every other benchmark; unknown options are ignored.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _requests import Counted, report_requests
from _rss import FIXED_MMAP, peak_extra
from _s3 import WithCpu, bucket, moto_s3, one_byte
from _timing import rounds, spread
from numcodecs import Zstd
from zarr.codecs import ZstdCodec

from zarr_ndarray_dtype import read_columnar, write_columnar
from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
from zarr_vlen_ndarray.framing import encode_frames

INNER = 4096
SHARD = 1_048_576
CENTROIDS = NDArray(dtype="float32", shape=(None, 2))


def make_rows(cells: int, seed: int = 0) -> np.ndarray:
    """Heavy-tailed row counts: log-normal with median 50, capped at 8,192 (reached once)."""
    rng = np.random.default_rng(seed)
    rows = np.minimum(np.round(rng.lognormal(np.log(50.0), 1.0, cells)), 8192).astype(np.int64)
    rows[cells // 2] = 8192
    return rows


def offsets_of(rows: np.ndarray) -> np.ndarray:
    offsets = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(rows, out=offsets[1:])
    return offsets


def cells_of(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    bounds = offsets.tolist()
    out = np.empty(len(bounds) - 1, dtype=object)
    out[:] = [values[a:b] for a, b in pairwise(bounds)]
    return out


def create(store: Any, cells: int, path: str, *, inner: int = INNER, shard: int = SHARD) -> Any:
    return zarr.create_array(
        store,
        name=path,
        shape=(cells,),
        chunks=(inner,),
        shards=(min(shard, cells),) if shard else None,
        dtype=CENTROIDS,
        serializer=VlenNDArrayCodec(),
        compressors=[ZstdCodec(level=3)],
        overwrite=True,
    )


def floor_read(shard_file: Path, n_inner: int, pool: ThreadPoolExecutor | None = None) -> Any:
    """Fetch the shard, zstd-decompress every inner chunk (on one core, or in ``pool``'s
    threads: numcodecs' zstd releases the GIL), copy the payloads into one block."""
    blob = np.frombuffer(shard_file.read_bytes(), dtype=np.uint8)
    index = blob[-(16 * n_inner + 4) : -4].view("<u8").reshape(-1, 2)
    zstd = Zstd()
    spans = [(int(a), int(n)) for a, n in index.tolist() if a != 2**64 - 1]

    def decode(span: tuple[int, int]) -> np.ndarray:
        return np.frombuffer(zstd.decode(blob[span[0] : span[0] + span[1]]), dtype=np.uint8)

    return np.concatenate(list(pool.map(decode, spans) if pool else map(decode, spans)))


def write_parts(values: np.ndarray, offsets: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
    """What any shard write through zarr does, piece by piece, on one core: frame and compress
    every inner chunk, then assemble the shard (its bytes, for storing them alone)."""
    raw = values.reshape(-1).view(np.uint8)
    nbytes = np.diff(offsets) * values.strides[0]
    starts = offsets * values.strides[0]
    bounds = [*range(0, offsets.size - 1, INNER), offsets.size - 1]
    zstd = Zstd(level=3)
    t0 = time.perf_counter()
    framed = [
        encode_frames(raw[int(starts[a]) : int(starts[b])], nbytes[a:b])
        for a, b in pairwise(bounds)
    ]
    t1 = time.perf_counter()
    packed = [np.frombuffer(zstd.encode(f), np.uint8) for f in framed]
    del framed
    t2 = time.perf_counter()
    shard = np.concatenate(packed)
    t3 = time.perf_counter()
    return {"frame": t1 - t0, "zstd": t2 - t1, "assemble": t3 - t2}, shard


# ------------------------------------------------------------------- memory, fresh process


def rss_child(store_dir: str, path: str) -> None:
    """(In a fresh process) peak RSS above the baseline while ``read_columnar`` reads the
    array, and its output's bytes, as JSON on stdout."""
    array = zarr.open_array(zarr.storage.LocalStore(store_dir), path=path, mode="r")
    read_columnar(array, slice(0, 1))  # imports, codecs, the event loop: before the baseline
    extra, (values, offsets) = peak_extra(lambda: read_columnar(array))
    print(json.dumps({"extra": extra, "output": values.nbytes + offsets.nbytes}))


def rss_of_read(store_dir: Path, path: str, runs: int, env: dict[str, str]) -> list[float]:
    """Peak extra RSS of a whole ``read_columnar`` / its output, in ``runs`` fresh processes."""
    out = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, __file__, "--rss-child", str(store_dir), path],
            capture_output=True, text=True, check=True, env={**os.environ, **env},
        )  # fmt: skip
        got = json.loads(done.stdout.splitlines()[-1])
        out.append(got["extra"] / got["output"])
    return out


def workload_a(store: Any) -> None:
    """Workload (a) with zstd 3 (bench_columnar.py), written into ``store`` as array "a"."""
    rng = np.random.default_rng(0)
    offsets = offsets_of(rng.poisson(8, 1_000_000).astype(np.int64))
    values = rng.standard_normal((int(offsets[-1]), 2)).astype(np.float32)
    write_columnar(create(store, 1_000_000, "a", inner=100_000, shard=0), values, offsets)


# ------------------------------------------------------------------------------------ S3


def s3_run(
    values: np.ndarray, offsets: np.ndarray, cells: int, repeats: int, ranges_as_s3: bool,
    counted: dict[str, tuple[int, int, float]],
) -> dict[str, list[float]]:  # fmt: skip
    """The S3 rows on one server; the GETs of its reads go into ``counted``."""
    import obstore

    with moto_s3(ranges_as_s3) as endpoint:
        s3 = bucket(endpoint)
        write_columnar(create(zarr.storage.ObjectStore(s3), cells, "centroids"), values, offsets)
        store = Counted(zarr.storage.ObjectStore(s3))
        array = zarr.open_array(store, path="centroids")
        keys = [k for page in obstore.list(s3) for k in (m["path"] for m in page)]
        chunk_keys = [k for k in keys if not k.endswith("zarr.json")]

        def fetch() -> list[Any]:  # obstore's buffers, as obstore hands them (no copy)
            return [obstore.get(s3, k).bytes() for k in chunk_keys]

        fetching = WithCpu(fetch, endpoint.pid)
        label = f"whole read, {'ranges as S3' if ranges_as_s3 else 'moto as it is'}"
        region = slice(cells // 2 // INNER * INNER, (cells // 2 // INNER + 1) * INNER)
        ops = store.per_call(
            {
                label: lambda: read_columnar(array),
                "one inner chunk": lambda: read_columnar(array, region),
            }
        )
        reading = WithCpu(ops[label], endpoint.pid)
        times = rounds({"range": lambda: one_byte(s3, chunk_keys[0]), "fetch": fetching}, repeats)
        # moto as it is reads the whole object for every ranged GET: its read runs once
        times |= rounds({"read": reading}, repeats if ranges_as_s3 else 1)
        if ranges_as_s3:
            times |= rounds({"region read": ops["one inner chunk"]}, repeats)
        counted |= store.calls
        times["fetch cpu"] = fetching.of_fastest(times["fetch"])
        times["read cpu"] = reading.of_fastest(times["read"])
    return times


# ---------------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=SHARD, help="cells (multiple of 4096)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-s3", action="store_true", help="skip the moto S3 server part")
    parser.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    args, _unknown = parser.parse_known_args()
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    cells = max(INNER, args.cells // INNER * INNER)
    print(f"== bench_shards: workload (z), {cells:,} cells, inner chunks {INNER}, zstd 3")
    print(describe())

    rows = make_rows(cells)
    offsets = offsets_of(rows)
    values = np.random.default_rng(1).standard_normal((int(offsets[-1]), 2)).astype(np.float32)
    payload = values.nbytes
    print(
        f"rows per cell: median {int(np.median(rows))}, mean {rows.mean():.1f}, max "
        f"{int(rows.max())}; payload {payload / 2**20:.1f} MiB; {args.repeats} runs each, "
        "implementations taking turns; seconds as min / median"
    )
    objects = cells_of(values, offsets)
    t: dict[str, list[float]] = {}
    parts = [write_parts(values, offsets)[0] for _ in range(args.repeats)]
    shard_bytes = write_parts(values, offsets)[1]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "z.zarr")
        store = zarr.storage.LocalStore(root)
        memory_store = zarr.storage.MemoryStore()
        obj, col = create(store, cells, "object"), create(store, cells, "columnar")
        obj_m, col_m = create(memory_store, cells, "o"), create(memory_store, cells, "c")
        prototype = zarr.core.buffer.default_buffer_prototype()

        def store_shard() -> None:
            shard = prototype.buffer.from_array_like(shard_bytes)
            zarr.core.sync.sync(store.set("alone/c/0", shard))

        t |= rounds(
            {
                "object write": lambda: obj.__setitem__(slice(None), objects),
                "columnar write": lambda: write_columnar(col, values, offsets),
                "store the shard alone": store_shard,
                "object write, memory": lambda: obj_m.__setitem__(slice(None), objects),
                "columnar write, memory": lambda: write_columnar(col_m, values, offsets),
            },
            args.repeats,
        )
        shard = root / "columnar" / "c" / "0"
        same = shard.read_bytes() == (root / "object" / "c" / "0").read_bytes()
        print(f"stored shard: {shard.stat().st_size / 2**20:.1f} MiB; byte-identical: {same}")
        zarr.core.sync.sync(memory_store.clear())  # its 1.2 GB are not needed any more
        local_read = WithCpu(lambda: read_columnar(col))
        every_core = ThreadPoolExecutor(os.cpu_count() or 1)
        t |= rounds(
            {
                "floor read": lambda: floor_read(shard, cells // INNER),
                "floor read, every core": lambda: floor_read(shard, cells // INNER, every_core),
                "columnar read": local_read,
            },
            args.repeats,
        )
        every_core.shutdown()
        read_cpu = sum(local_read.of_fastest(t["columnar read"]))
        t |= rounds({"object read": lambda: obj[:]}, 1)
        k = (cells // INNER) // 2
        region = slice(k * INNER, (k + 1) * INNER)
        t |= rounds(
            {
                "columnar region": lambda: read_columnar(col, region),
                "object region": lambda: obj[region],
            },
            args.repeats * 3,
        )
        workload_a(store)
        memory = {
            f"{name}{how}": rss_of_read(root, path, args.repeats, env)
            for name, path in (("(z)", "columnar"), ("(a) zstd", "a"))
            for how, env in (("", {}), (", mmap threshold fixed", FIXED_MMAP))
        }

    s3: dict[str, dict[str, list[float]]] = {}
    counted: dict[str, tuple[int, int, float]] = {}
    if not args.no_s3:
        for ranges_as_s3, name in ((True, "moto, ranges as S3"), (False, "moto as it is")):
            try:
                s3[name] = s3_run(values, offsets, cells, args.repeats, ranges_as_s3, counted)
            except (ImportError, RuntimeError, OSError) as exc:
                print(f"S3 part ({name}) skipped: {exc}")

    print(f"\n{'operation (local store)':<26}{'min / median s':>18}{'MB/s':>8}")
    for name, seconds in t.items():
        print(f"{name:<26}{spread(seconds):>18}{payload / min(seconds) / 1e6:>8.0f}")
    cores = os.cpu_count() or 1
    one_core = min(p["frame"] + p["zstd"] for p in parts)
    assemble = min(p["assemble"] for p in parts)
    bound = {
        "memory": assemble + one_core / cores,
        "local": assemble + min(t["store the shard alone"]) + one_core / cores,
    }
    print(
        f"\nwrite profile: framing + zstd 3 of the {cells // INNER} inner chunks "
        f"{one_core:.3f} s on one core ({one_core / cores:.3f} s over {cores}); assembling the "
        f"shard {assemble:.3f} s and storing it {min(t['store the shard alone']):.3f} s (zarr's "
        f"serial part); bound {bound['memory']:.3f} s in memory, {bound['local']:.3f} s local"
    )
    if s3:
        print(
            f"\n{'S3 server':<22}{'1-byte GET s':>14}{'obstore fetch s':>18}{'read s':>18}"
            f"{'CPU s, ours + moto: fetch':>30}{'read':>16}"
        )
        for name, times in s3.items():
            print(
                f"{name:<22}{min(times['range']):>14.4f}{spread(times['fetch']):>18}"
                f"{spread(times['read']):>18}{times['fetch cpu'][0]:>23.3f} + "
                f"{times['fetch cpu'][1]:.3f}{times['read cpu'][0]:>9.3f} + "
                f"{times['read cpu'][1]:.3f}"
            )
        print(
            f"(moto shares the {cores} cores: a read takes at least the CPU of the fetch, in both "
            f"processes, and of a local read ({read_cpu:.3f} s), over the cores, whatever "
            "overlaps)"
        )
        region_s3 = s3.get("moto, ranges as S3", {}).get("region read")
        if region_s3:
            print(f"one inner chunk over S3 (ranges as S3): {spread(region_s3)} s")
        report_requests("S3 requests of the last read (zarr -> store)", counted)

    print(f"\n{'measure':<66}{'min':>7}{'median':>8}  target")

    def show(text: str, value: tuple[float, float], target: str) -> None:
        print(f"{text:<66}{value[0]:>7.2f}{value[1]:>8.2f}  {target}")

    def ratio(a: list[float], b: list[float]) -> tuple[float, float]:
        """a / b of minima and of medians."""
        return min(a) / min(b), float(np.median(a) / np.median(b))

    for where, suffix in (("memory", ", memory"), ("local", "")):
        show(f"columnar write into shards vs object write, {where} store (object/col)",
             ratio(t["object write" + suffix], t["columnar write" + suffix]), ">= 2")  # fmt: skip
        show(f"  the bound of a write through zarr vs object write, {where} (object/bound)",
             ratio(t["object write" + suffix], [bound[where]]), "")  # fmt: skip
    show("columnar read vs floor (zstd + one copy) (col/floor)",
         ratio(t["columnar read"], t["floor read"]), "<= 1.2")  # fmt: skip
    show("columnar read vs floor, zstd on every core (col/floor)",
         ratio(t["columnar read"], t["floor read, every core"]), "<= 1.3")  # fmt: skip
    show("columnar read vs object read (object/col)", ratio(t["object read"],
         t["columnar read"]), "")  # fmt: skip
    show("columnar region read vs object region read (object/col)",
         ratio(t["object region"], t["columnar region"]), "")  # fmt: skip
    for name, times in s3.items():
        target = "<= 1.15" if name.endswith("S3") else "(each ranged GET reads the object)"
        show(f"S3 columnar read vs obstore fetch, {name} (col/fetch)",
             ratio(times["read"], times["fetch"]), target)  # fmt: skip
        if name.endswith("S3"):
            show("  S3 columnar read vs the local one (S3/local)",
                 ratio(times["read"], t["columnar read"]), "<= 1.25")  # fmt: skip
        least = (sum(times["fetch cpu"]) + read_cpu) / cores
        show("  the CPU bound vs the fetch ((fetch + local read CPU) / cores / fetch)",
             ratio([least], times["fetch"]), "")  # fmt: skip
    for name, values in memory.items():
        show(f"peak extra RSS of a read, fresh process / output: {name}",
             ratio(values, [1.0]), "<= 1.3")  # fmt: skip


if __name__ == "__main__":
    main()
