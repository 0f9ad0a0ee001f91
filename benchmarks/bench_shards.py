"""Workload (z): the sharded layout real users write, on a local store and on S3 (moto).

The layout of `../shared/reference/users-and-peers.md` (zagg): one shard of 1,048,576 cells in
4,096-cell inner chunks, zstd level 3, crc32c shard index at the end, empty inner chunks not
written; cells are (n, 2) float32 t-digest centroids with n heavy-tailed (log-normal, median
~50, capped at 8,192, the cap reached at least once), plus the row-aligned (n,) uint64 sibling.
Everything is measured in one process on the same data, each operation repeated (best of
``--repeats``), and reported as ratios against a baseline measured in the same run:

  write    columnar write into the shard  vs  the object path (``arr[:] = cells``)
  read     columnar read of the whole shard  vs  the object read (``arr[:]``), and vs the floor
           "fetch the shard + zstd-decompress every inner chunk + one copy" (numcodecs Zstd)
  region   columnar read of one inner chunk  vs  the object read of it
  S3       columnar read over an S3-compatible server on 127.0.0.1 (moto, through obstore
           wrapped in zarr's ObjectStore)  vs  fetching the same objects with obstore alone
  memory   peak extra memory of ``read_columnar`` (tracemalloc) / the payload bytes

Targets (issue 10): write >= 3x; local read within 1.5x of the floor; S3 read within 1.3x of the
obstore fetch; peak extra memory <= 1.5x the payload. No assertions: this prints numbers.

Run:  python benchmarks/bench_shards.py [--cells N] [--repeats N] [--no-s3]
(``nox -s bench`` runs it with every other benchmark; unknown options are ignored.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _timing import best_time
from numcodecs import Zstd
from zarr.codecs import ZstdCodec

from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
from zarr_vlen_ndarray.columnar import read_columnar, write_columnar

INNER = 4096
SHARD = 1_048_576
CENTROIDS = NDArray(dtype="float32", shape=(None, 2))
LOCATIONS = NDArray(dtype="uint64", shape=(None,))


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


def create(store: Any, cells: int, dtype: NDArray, path: str) -> Any:
    return zarr.create_array(
        store,
        name=path,
        shape=(cells,),
        chunks=(INNER,),
        shards=(min(SHARD, cells),),
        dtype=dtype,
        serializer=VlenNDArrayCodec(),
        compressors=[ZstdCodec(level=3)],
        overwrite=True,
    )


def floor_read(shard_file: Path, n_inner: int) -> np.ndarray:
    """Fetch the shard, zstd-decompress every inner chunk, copy the payloads into one block."""
    blob = np.frombuffer(shard_file.read_bytes(), dtype=np.uint8)
    index = blob[-(16 * n_inner + 4) : -4].view("<u8").reshape(-1, 2)
    zstd = Zstd()
    parts = [
        np.frombuffer(zstd.decode(blob[int(a) : int(a + n)]), dtype=np.uint8)
        for a, n in index.tolist()
        if a != 2**64 - 1
    ]
    return np.concatenate(parts)


def peak_extra(fn: Callable[[], Any]) -> tuple[int, Any]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base, result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_s3() -> Iterator[str]:
    """An S3-compatible server (moto) on 127.0.0.1 for the duration; yields its endpoint."""
    port = free_port()
    server = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if server is None:
        raise RuntimeError("moto_server not found: pip install 'moto[server]'")
    proc = subprocess.Popen(
        [server, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def s3_run(values: np.ndarray, offsets: np.ndarray, cells: int, repeats: int) -> dict[str, float]:
    import obstore
    from obstore.store import S3Store

    with moto_s3() as endpoint:
        creds = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/bench", method="PUT")).close()
        s3 = S3Store("bench", endpoint=endpoint, client_options={"allow_http": True}, **creds)
        store = zarr.storage.ObjectStore(s3)
        arr = create(store, cells, CENTROIDS, "centroids")
        t_write = best_time(lambda: write_columnar(arr, values, offsets), 1)
        keys = [k for page in obstore.list(s3) for k in (m["path"] for m in page)]
        chunk_keys = [k for k in keys if not k.endswith("zarr.json")]

        def fetch() -> list[bytes]:
            return [bytes(obstore.get(s3, k).bytes()) for k in chunk_keys]

        t_fetch = best_time(fetch, repeats)
        t_read = best_time(lambda: read_columnar(arr), repeats)
    return {"s3 write": t_write, "s3 fetch": t_fetch, "s3 read": t_read}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=SHARD, help="cells (multiple of 4096)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-s3", action="store_true", help="skip the moto S3 server part")
    args, _unknown = parser.parse_known_args()
    cells = max(INNER, args.cells // INNER * INNER)
    print(f"== bench_shards: workload (z), {cells:,} cells, inner chunks {INNER}, zstd 3")
    print(describe())

    rows = make_rows(cells)
    offsets = offsets_of(rows)
    rng = np.random.default_rng(1)
    values = rng.standard_normal((int(offsets[-1]), 2)).astype(np.float32)
    locations = rng.integers(0, 2**63, int(offsets[-1]), dtype=np.uint64)
    payload = values.nbytes
    print(
        f"rows per cell: median {int(np.median(rows))}, mean {rows.mean():.1f}, max "
        f"{int(rows.max())}; centroid payload {payload / 2**20:.1f} MiB, locations "
        f"{locations.nbytes / 2**20:.1f} MiB"
    )
    objects = cells_of(values, offsets)
    t: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = zarr.storage.LocalStore(root / "z.zarr")
        obj = create(store, cells, CENTROIDS, "object")
        col = create(store, cells, CENTROIDS, "columnar")

        def write_object() -> None:
            obj[:] = objects

        t["object write"] = best_time(write_object, args.repeats)
        t["columnar write"] = best_time(lambda: write_columnar(col, values, offsets), args.repeats)
        shard = Path(root, "z.zarr", "columnar", "c", "0")
        same = shard.read_bytes() == Path(root, "z.zarr", "object", "c", "0").read_bytes()
        print(f"stored shard: {shard.stat().st_size / 2**20:.1f} MiB; byte-identical: {same}")

        t["floor read"] = best_time(lambda: floor_read(shard, cells // INNER), args.repeats)
        t["columnar read"] = best_time(lambda: read_columnar(col), args.repeats)
        t["object read"] = best_time(lambda: obj[:], 1)
        k = (cells // INNER) // 2
        region = slice(k * INNER, (k + 1) * INNER)
        t["columnar region"] = best_time(lambda: read_columnar(col, region), args.repeats * 3)
        t["object region"] = best_time(lambda: obj[region], args.repeats * 3)
        extra, _ = peak_extra(lambda: read_columnar(col))

        sib = create(store, cells, LOCATIONS, "locations")
        t["sibling columnar write"] = best_time(
            lambda: write_columnar(sib, locations, offsets), args.repeats
        )
        t["sibling columnar read"] = best_time(lambda: read_columnar(sib), args.repeats)

    if not args.no_s3:
        try:
            t.update(s3_run(values, offsets, cells, args.repeats))
        except (ImportError, RuntimeError, OSError) as exc:
            print(f"S3 part skipped: {exc}")

    print(f"\n{'operation':<26}{'seconds':>10}{'MB/s':>10}")
    for name, seconds in t.items():
        print(f"{name:<26}{seconds:>10.3f}{payload / seconds / 1e6:>10.0f}")
    print(f"\n{'measure':<58}{'ratio':>8}  target")

    def show(text: str, value: float, target: str) -> None:
        print(f"{text:<58}{value:>8.2f}  {target}")

    show("columnar write into shards vs object write (object/col)", t["object write"] /
         t["columnar write"], ">= 3")  # fmt: skip
    show("columnar read vs object read (object/col)", t["object read"] / t["columnar read"], "")
    show("columnar read vs floor (zstd + one copy) (col/floor)", t["columnar read"] /
         t["floor read"], "<= 1.5")  # fmt: skip
    show("columnar region read vs object region read (object/col)", t["object region"] /
         t["columnar region"], "")  # fmt: skip
    if "s3 read" in t:
        show("S3 columnar read vs obstore fetch of the same objects (col/fetch)", t["s3 read"] /
             t["s3 fetch"], "<= 1.3")  # fmt: skip
    show("peak extra memory of read_columnar / payload", extra / payload, "<= 1.5")


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    main()
