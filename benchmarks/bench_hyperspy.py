"""Workload (h): a 4D-STEM vector map as HyperSpy users store it, in three layouts (issue 18).

256 x 256 scan positions; the cell of a position holds the (n, 2) float64 positions of the
diffraction vectors found there, n ~ Poisson(30) (about 2M rows, 31 MB of values), uniform over
a 256-pixel detector (sub-pixel positions: their mantissas are noise). Layouts, each written
from the same cells:

  ours   a (256, 256) ``ndarray`` array, NDArray(dtype="float64", shape=(None, 2)), the
         ``vlen-ndarray`` serializer, zstd 3, shards of 64 x 64 cells in inner chunks of 16 x 16
  CSR    (i) HyperSpy's proposal (rosettasciio PR #536): every cell's rows in C order of the
         navigation in one float64 (rows, 2) array ``data`` chunked by whole rows, about 1e8
         bytes a chunk (here one chunk), and the int64 ``_ragged_offsets_data`` of cells + 1
         entries, chunked alike; zstd 3; attributes ``_ragged_encoding: "csr"`` and
         ``_ragged_nav_shape``. A position or a region is read as its offsets, then the values
         from its first row to its last (zarr fetches and decompresses the whole values chunk)
  zspy   (ii) today's zspy: zarr 2 VLenArray object arrays of the flattened cells and of their
         shapes, blosc zstd 1 (HyperSpy's default) and zstd 3, written and read as rosettasciio
         does, timed in a venv of zarr 2.18.7 + numcodecs 0.15.2 (``_zspy.py``, run with
         $ZARR2_PYTHON; without it this column is left out, the reason printed)

Measured on a local store and on an S3-compatible server on 127.0.0.1 (moto; through obstore
and zarr's ObjectStore, zspy through s3fs), each operation ``--repeats`` times with the layouts
taking turns (min / median s); ratios of minima and of medians:

  write         write_columnar and ``arr[:] = cells``; CSR's two arrays; HyperSpy's write
  whole read    as columns: read_columnar, CSR's two arrays, zspy's arrays with the rows joined;
                as cells: ``arr[:]``, CSR's arrays cut into cells, HyperSpy's read (and zspy's
                data array alone: zarr 2's VLenArray decode of the flat cells)
  one position  ``read_columnar(arr, (i, j))`` and ``arr[i, j]``; CSR; HyperSpy's read of it
  region        the 16 x 16 cells of one inner chunk, the same ways
  stored bytes  every object of a layout's arrays (chunks or shards, metadata documents)
  memory        peak extra RSS of a whole read in a fresh process / the cells' columnar bytes
                (values + offsets); read_columnar's again with glibc's mmap threshold fixed
                (``_rss.FIXED_MMAP``: what glibc's arenas keep of zarr's freed buffers apart)
  bounds        ours' floor (fetch the shards, zstd-decompress every inner chunk, one copy),
                zarr's own read of a dense float64 array of the same grid and about the same
                bytes (256 x 256 x 60): what zarr's pipeline costs on this grid, any codec; and
                ours in 16 chunks of 64 x 64 without shards (the cost of 256 inner chunks)
  fused         ours' whole columnar read and zarr's dense read under zarr's opt-in
                FusedCodecPipeline (``codec_pipeline.path``; rows left out before zarr 3.3)
  S3            the same on moto serving ranges at the cost of the range, as S3 does
                (``_moto_ranged.py``), with the bounds of a GET of every object of a layout
                (obstore) and of two 1-byte GETs in a row (the least a position in a shard
                costs: the shard's index, then the chunk), and the GETs zarr makes for each of
                ours' reads, their bytes and the seconds with one in flight (``_requests.py``),
                and the CPU of the whole read and of the GETs, ours and moto's: moto shares
                the cores, so (the GETs' CPU + a local read's) / cores bounds the S3 read from
                below on this machine; on moto as it is, whose ranged GET reads the whole
                object, only the cost of a 1-byte GET

Targets (issue 18): whole columnar read within 1.25x of CSR's read of its two arrays; whole
object read >= 3x faster than zspy's (zarr 2 VLenArray); one-position and 16 x 16 region reads
>= 10x faster than CSR's; stored bytes <= 1.05x CSR's. Issue 29: the whole columnar read within
1.25x of zarr's read of a dense array of the same grid, on S3 within 1.5x of GETting every
object; one position by read_columnar no slower than arr[i, j]. No assertions.

Run:  ZARR2_PYTHON=/path/to/zarr2/bin/python python benchmarks/bench_hyperspy.py [--repeats N]
      [--no-s3]   (``nox -s bench`` makes that venv and passes it; other options are ignored)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from _machine import describe
from _requests import Counted, report_requests
from _rss import FIXED_MMAP, peak_extra
from _s3 import Server, WithCpu, bucket, moto_s3, one_byte
from _timing import rounds, spread
from bench_shards import cells_of, floor_read, offsets_of
from zarr.codecs import ZstdCodec

from zarr_ndarray_dtype import read_columnar, write_columnar
from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec

NAV = (256, 256)
INNER, SHARD = (16, 16), (64, 64)
VECTORS = NDArray(dtype="float64", shape=(None, 2))
CSR_CHUNK_BYTES = 10**8
POSITION = (100, 200)
ONE = (slice(POSITION[0], POSITION[0] + 1), slice(POSITION[1], POSITION[1] + 1))
REGION = (slice(112, 128), slice(112, 128))  # the cells of one inner chunk
HERE = Path(__file__).resolve().parent
LAYOUTS = ("ours", "CSR", "zspy blosc", "zspy zstd3")


def make_cells(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of every cell in C order of the navigation, and their row offsets."""
    rng = np.random.default_rng(seed)
    offsets = offsets_of(rng.poisson(30, math.prod(NAV)).astype(np.int64))
    return rng.uniform(0, 256, (int(offsets[-1]), 2)), offsets


def create_ours(store: Any, name: str = "ours", chunks: Any = INNER, shards: Any = SHARD) -> Any:
    return zarr.create_array(
        store, name=name, shape=NAV, chunks=chunks, shards=shards, dtype=VECTORS,
        serializer=VlenNDArrayCodec(), compressors=[ZstdCodec(level=3)], overwrite=True,
    )  # fmt: skip


class Csr:
    """Layout (i), HyperSpy's CSR proposal (see the docstring); ``rows=None`` opens it."""

    def __init__(self, store: Any, rows: int | None = None) -> None:
        if rows is None:
            self.values = zarr.open_array(store, path="csr/data", mode="r")
            self.offsets = zarr.open_array(store, path="csr/_ragged_offsets_data", mode="r")
            return
        attributes = {"_ragged_encoding": "csr", "_ragged_nav_shape": list(NAV)}
        self.values = self._create(store, "data", (rows, 2), np.dtype("float64"), attributes)
        self.offsets = self._create(
            store, "_ragged_offsets_data", (math.prod(NAV) + 1,), np.dtype("int64"), {}
        )

    @staticmethod
    def _create(store: Any, name: str, shape: tuple[int, ...], dtype: np.dtype, attrs: dict) -> Any:
        """An array chunked by whole rows, about CSR_CHUNK_BYTES a chunk."""
        per_chunk = max(1, CSR_CHUNK_BYTES // (dtype.itemsize * math.prod(shape[1:])))
        return zarr.create_array(
            store, name=f"csr/{name}", shape=shape, chunks=(min(shape[0], per_chunk), *shape[1:]),
            dtype=dtype, compressors=[ZstdCodec(level=3)], attributes=attrs, overwrite=True,
        )  # fmt: skip

    def write(self, values: np.ndarray, offsets: np.ndarray) -> None:
        self.values[...] = values
        self.offsets[...] = offsets

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        return self.values[...], self.offsets[...]

    def cells(self) -> np.ndarray:
        return cells_of(*self.read()).reshape(NAV)

    def region(self, rows: slice, cols: slice) -> tuple[np.ndarray, np.ndarray]:
        """The cells of ``[rows, cols]`` (C order) as values and row offsets: the offsets from
        its first cell to its last, then the values between them."""
        width, side = NAV[1], cols.stop - cols.start
        first, last = rows.start * width + cols.start, (rows.stop - 1) * width + cols.stop
        offsets = self.offsets[first : last + 1]
        values = self.values[int(offsets[0]) : int(offsets[-1])]
        offsets -= offsets[0]
        runs = [(k * width, k * width + side) for k in range(rows.stop - rows.start)]
        sizes = np.concatenate([np.diff(offsets[a : b + 1]) for a, b in runs])
        return np.concatenate([values[offsets[a] : offsets[b]] for a, b in runs]), offsets_of(sizes)


# ------------------------------------------------------------------ zspy, in the zarr 2 venv


class Remote:
    """An op of the zarr 2 worker: a call runs it there once; ``seconds`` are its own times."""

    def __init__(self, proc: subprocess.Popen[str], name: str) -> None:
        self.proc, self.name, self.seconds = proc, name, list[float]()

    def __call__(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(self.name + "\n")
        self.proc.stdin.flush()
        self.seconds.append(float(self.proc.stdout.readline()))


@contextmanager
def zarr2_worker(
    python: str | None, data: Path, store: str, endpoint: str | None = None
) -> Iterator[Callable[[str], Remote] | None]:
    """``_zspy.py`` in the zarr 2 venv, layout (ii) written; yields a maker of its ops (None
    without a zarr 2 python)."""
    if python is None:
        yield None
        return
    where = ["--endpoint", endpoint] if endpoint else []
    row, col, side = REGION[0].start, REGION[1].start, REGION[0].stop - REGION[0].start
    proc = subprocess.Popen(
        [python, str(HERE / "_zspy.py"), str(data), store, *where, "--position",
         *map(str, POSITION), "--region", str(row), str(col), str(side)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if not ready:
            raise RuntimeError("the zarr 2 worker (_zspy.py) failed: its error is above")
        yield lambda name: Remote(proc, name)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=60)


def run(ops: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """``rounds`` of the ops, the zarr 2 worker's ops timed by the worker itself."""
    times = rounds(ops, repeats)
    return {k: fn.seconds if isinstance(fn, Remote) else times[k] for k, fn in ops.items()}


def zarr2_versions(python: str) -> str:
    code = "import zarr, numcodecs; print(zarr.__version__, numcodecs.__version__)"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    zarr2, numcodecs = out.stdout.split()
    return f"zarr {zarr2}, numcodecs {numcodecs}"


# ------------------------------------------------------------------- memory, fresh process


def rss_child(store_dir: str, what: str) -> None:
    """(In a fresh process) the peak extra RSS of one whole read, as JSON on stdout."""
    store = zarr.storage.LocalStore(store_dir, read_only=True)
    if what == "CSR":
        csr = Csr(store)
        csr.offsets[:2]  # imports, codecs, the event loop: before the baseline
        read: Callable[[], Any] = csr.read
    else:
        ours = zarr.open_array(store, path="ours", mode="r")
        read_columnar(ours, POSITION), ours[POSITION]
        read = (lambda: read_columnar(ours)) if what == "columnar" else (lambda: ours[...])
    print(json.dumps(peak_extra(read)[0]))


def rss(command: list[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    """The peak extra RSS that ``command`` prints, in ``runs`` fresh processes (with ``env``
    added to their environment)."""
    done = [
        subprocess.run(
            command, capture_output=True, text=True, check=True, env={**os.environ, **(env or {})}
        )
        for _ in range(runs)
    ]
    return [float(json.loads(d.stdout.splitlines()[-1])) for d in done]


def stored(*folders: Path) -> int:
    return sum(p.stat().st_size for f in folders for p in f.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------ runs


def writes(
    ours: Any, csr: Csr, zspy: Callable[[str], Remote] | None, values: np.ndarray,
    offsets: np.ndarray, cells: np.ndarray,
) -> dict[str, Callable[[], Any]]:  # fmt: skip
    """The writes, by "operation|layout"."""
    ops: dict[str, Callable[[], Any]] = {
        "write from columns|ours": lambda: write_columnar(ours, values, offsets),
        "write from columns|CSR": lambda: csr.write(values, offsets),
        "write from cells|ours": lambda: ours.__setitem__(..., cells),
    }
    if zspy is not None:
        ops["write from cells|zspy blosc"] = zspy("write blosc")
        ops["write from cells|zspy zstd3"] = zspy("write zstd3")
    return ops


#: The whole columnar read of ours, whose CPU is kept beside its time.
WHOLE = "read whole, columns|ours"
FUSED_WHOLE = "fused: read whole, columns|ours"
FUSED_DENSE = "fused: zarr, dense, same grid|ours"


def fused_reads(store: Any) -> dict[str, Callable[[], Any]]:
    """Ours' whole read and zarr's dense one under zarr's FusedCodecPipeline: the arrays
    opened, and ours' views built (at its first read), under it; none before zarr 3.3."""
    import zarr.core.codec_pipeline

    if not hasattr(zarr.core.codec_pipeline, "FusedCodecPipeline"):
        return {}
    setting = {"codec_pipeline.path": "zarr.core.codec_pipeline.FusedCodecPipeline"}
    with zarr.config.set(setting):
        ours = zarr.open_array(store, path="ours", mode="r")
        dense = zarr.open_array(store, path="dense", mode="r")

    def under(read: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            with zarr.config.set(setting):
                return read()

        return call

    return {FUSED_WHOLE: under(lambda: read_columnar(ours)), FUSED_DENSE: under(lambda: dense[...])}


def whole_reads(ours: Any, csr: Csr, zspy: Callable[[str], Remote] | None) -> dict[str, Any]:
    ops: dict[str, Callable[[], Any]] = {
        WHOLE: lambda: read_columnar(ours),
        "read whole, columns|CSR": csr.read,
        "read whole, cells|ours": lambda: ours[...],
        "read whole, cells|CSR": csr.cells,
    }
    if zspy is not None:
        ops |= {
            "read whole, columns|zspy blosc": zspy("columnar blosc"),
            "read whole, cells|zspy blosc": zspy("cells blosc"),
            "read whole, cells|zspy zstd3": zspy("cells zstd3"),
            "zspy's data array alone|zspy blosc": zspy("flat blosc"),
        }
    return ops


def small_reads(ours: Any, csr: Csr, zspy: Callable[[str], Remote] | None) -> dict[str, Any]:
    ops: dict[str, Callable[[], Any]] = {
        "one position, columns|ours": lambda: read_columnar(ours, POSITION),
        "one position, columns|CSR": lambda: csr.region(*ONE),
        "one position, cell|ours": lambda: ours[POSITION],
        "16 x 16 region, columns|ours": lambda: read_columnar(ours, REGION),
        "16 x 16 region, columns|CSR": lambda: csr.region(*REGION),
        "16 x 16 region, cells|ours": lambda: ours[REGION],
    }
    if zspy is not None:
        ops["one position, cell|zspy blosc"] = zspy("one blosc")
        ops["16 x 16 region, cells|zspy blosc"] = zspy("region blosc")
    return ops


def s3_run(
    values: np.ndarray, offsets: np.ndarray, cells: np.ndarray, data: Path,
    zarr2: str | None, repeats: int, requests: dict[str, tuple[int, int, float]],
    cpu: dict[str, list[float]],
) -> dict[str, list[float]]:  # fmt: skip
    """The cost of a ranged GET on moto as it is; every operation on moto serving ranges as S3
    does, the GETs of ours' reads counted into ``requests``, the CPU of the whole read and of
    GETting every object (ours, moto's) into ``cpu``."""
    times: dict[str, list[float]] = {}
    for ranges_as_s3 in (False, True):
        with moto_s3(ranges_as_s3) as endpoint:
            times |= s3_server(
                endpoint, ranges_as_s3, values, offsets, cells, data, zarr2, repeats, requests, cpu
            )  # fmt: skip
    return times


def s3_server(
    endpoint: Server, ranges_as_s3: bool, values: np.ndarray, offsets: np.ndarray,
    cells: np.ndarray, data: Path, zarr2: str | None, repeats: int,
    requests: dict[str, tuple[int, int, float]], cpu: dict[str, list[float]],
) -> dict[str, list[float]]:  # fmt: skip
    import obstore

    s3 = bucket(endpoint)
    store = zarr.storage.ObjectStore(s3)
    ours, csr = create_ours(store), Csr(store, len(values))
    write_columnar(ours, values, offsets)
    csr.write(values, offsets)
    counted = Counted(zarr.storage.ObjectStore(s3))  # ours, read through a counting store
    ours_read = zarr.open_array(counted, path="ours")
    shard, csr_values = "ours/c/0/0", "csr/data/c/0/0"
    if not ranges_as_s3:
        ops = {
            "1-byte GET, moto as it is|ours": lambda: one_byte(s3, shard),
            "1-byte GET, moto as it is|CSR": lambda: one_byte(s3, csr_values),
        }
        return rounds(ops, repeats)
    keys = {  # the chunks and shards of each layout
        layout: [m["path"] for page in obstore.list(s3, prefix) for m in page if "/c/" in m["path"]]
        for layout, prefix in (("ours", "ours/"), ("CSR", "csr/"))
    }
    getting = WithCpu(lambda: [obstore.get(s3, k).bytes() for k in keys["ours"]], endpoint.pid)
    times = rounds(
        {
            "1-byte GET|ours": lambda: one_byte(s3, shard),
            "1-byte GET|CSR": lambda: one_byte(s3, csr_values),
            "two 1-byte GETs in a row|ours": lambda: [one_byte(s3, shard) for _ in range(2)],
            "bound: GET every object|ours": getting,
            "bound: GET every object|CSR": lambda: [
                obstore.get(s3, k).bytes() for k in keys["CSR"]
            ],
        },
        repeats,
    )
    with zarr2_worker(zarr2, data, "s3://bench/zspy", endpoint) as zspy:
        times |= run(writes(ours, csr, zspy, values, offsets, cells), repeats)
        for reads in (whole_reads(ours_read, csr, zspy), small_reads(ours_read, csr, zspy)):
            mine = counted.per_call({k: fn for k, fn in reads.items() if k.endswith("|ours")})
            whole = WHOLE in mine
            if whole:
                mine[WHOLE] = reading = WithCpu(mine[WHOLE], endpoint.pid)
            times |= run(reads | mine, repeats)
            if whole:
                cpu["S3 whole read"] = reading.of_fastest(times[WHOLE])
    requests |= counted.calls
    cpu["GET every object"] = getting.of_fastest(times["bound: GET every object|ours"])
    return times


# ---------------------------------------------------------------------------------- report

#: (what, numerator, denominator, target) of every ratio printed, when both were measured
MEASURES = (
    # issue 29: ours against its bound
    ("whole columnar read vs zarr's read of a dense array of the same grid",
     "read whole, columns|ours", "bound: zarr, dense, same grid|ours", "<= 1.25"),
    ("whole columnar read vs GET of every object of the array",
     "read whole, columns|ours", "bound: GET every object|ours", "<= 1.5"),
    ("  the same under zarr's FusedCodecPipeline (opt-in), arrays opened under it",
     FUSED_WHOLE, FUSED_DENSE, ""),
    ("one position, read_columnar vs arr[i, j] (columns/cell)",
     "one position, columns|ours", "one position, cell|ours", "<= 1"),
    ("whole columnar read, ours vs CSR's two arrays (ours/CSR)",
     "read whole, columns|ours", "read whole, columns|CSR", "<= 1.25"),
    ("  bound: ours' floor (shards, zstd, one copy) vs CSR's read",
     "bound: ours' floor|ours", "read whole, columns|CSR", ""),
    ("  bound: zarr's read of a dense array of the same grid vs CSR's",
     "bound: zarr, dense, same grid|ours", "read whole, columns|CSR", ""),
    ("  ours with chunks of 64 x 64, no shards, vs CSR's read",
     "64 x 64 chunks, no shards: columns|ours", "read whole, columns|CSR", ""),
    ("  bound: GET of ours' shards vs CSR's read",
     "bound: GET every object|ours", "read whole, columns|CSR", ""),
    ("  bound: GET of CSR's objects vs CSR's read",
     "bound: GET every object|CSR", "read whole, columns|CSR", ""),
    ("whole object read, HyperSpy's (zspy blosc) vs ours arr[:] (zspy/ours)",
     "read whole, cells|zspy blosc", "read whole, cells|ours", ">= 3"),
    ("  the same, zspy zstd3 (zspy/ours)",
     "read whole, cells|zspy zstd3", "read whole, cells|ours", ">= 3"),
    ("  zspy's data array alone (zarr 2 VLenArray) vs ours arr[:]",
     "zspy's data array alone|zspy blosc", "read whole, cells|ours", ""),
    ("  CSR's two arrays cut into cells vs ours arr[:] (CSR/ours)",
     "read whole, cells|CSR", "read whole, cells|ours", ""),
    ("  bound: HyperSpy's (zspy blosc) vs zarr's read of a dense array of the same grid",
     "read whole, cells|zspy blosc", "bound: zarr, dense, same grid|ours", ""),
    ("  HyperSpy's (zspy blosc) vs ours with chunks of 64 x 64, no shards",
     "read whole, cells|zspy blosc", "64 x 64 chunks, no shards: cells|ours", ""),
    ("one position, CSR vs ours read_columnar (CSR/ours)",
     "one position, columns|CSR", "one position, columns|ours", ">= 10"),
    ("one position, CSR vs ours arr[i, j] (CSR/ours)",
     "one position, columns|CSR", "one position, cell|ours", ">= 10"),
    ("  CSR vs ours read_columnar with chunks of 64 x 64, no shards",
     "one position, columns|CSR", "64 x 64 chunks: one position|ours", ""),
    ("  bound: CSR's vs two GETs in a row (shard index, then chunk)",
     "one position, columns|CSR", "two 1-byte GETs in a row|ours", ""),
    ("  one position, HyperSpy's (zspy blosc) vs ours arr[i, j]",
     "one position, cell|zspy blosc", "one position, cell|ours", ""),
    ("16 x 16 region, CSR vs ours read_columnar (CSR/ours)",
     "16 x 16 region, columns|CSR", "16 x 16 region, columns|ours", ">= 10"),
    ("16 x 16 region, CSR vs ours arr[...] (CSR/ours)",
     "16 x 16 region, columns|CSR", "16 x 16 region, cells|ours", ">= 10"),
    ("  16 x 16 region, HyperSpy's (zspy blosc) vs ours arr[...]",
     "16 x 16 region, cells|zspy blosc", "16 x 16 region, cells|ours", ""),
    ("write, CSR's two arrays vs ours write_columnar (CSR/ours)",
     "write from columns|CSR", "write from columns|ours", ""),
    ("write, HyperSpy's (zspy blosc) vs ours arr[:] = cells (zspy/ours)",
     "write from cells|zspy blosc", "write from cells|ours", ""),
)  # fmt: skip


def table(title: str, times: dict[str, list[float]], extra: dict[str, dict[str, str]]) -> None:
    """Operations down, layouts across, ``min / median`` seconds; then the ``extra`` rows."""
    rows: dict[str, dict[str, str]] = {}
    for key, seconds in times.items():
        operation, layout = key.split("|")
        rows.setdefault(operation, {})[layout] = spread(seconds)
    rows |= extra
    layouts = [name for name in LAYOUTS if any(name in cells for cells in rows.values())]
    print(f"\n{title:<36}" + "".join(f"{layout:>16}" for layout in layouts))
    for operation, cells in rows.items():
        print(f"{operation:<36}" + "".join(f"{cells.get(layout, ''):>16}" for layout in layouts))


def show(text: str, a: list[float], b: list[float], target: str = "") -> None:
    """a / b of minima and of medians."""
    ratios = min(a) / min(b), float(np.median(a) / np.median(b))
    print(f"{text:<72}{ratios[0]:>7.2f}{ratios[1]:>8.2f}  {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-s3", action="store_true", help="skip the moto S3 server part")
    parser.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    args, _unknown = parser.parse_known_args()
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    zarr2 = os.environ.get("ZARR2_PYTHON") or None
    print("== bench_hyperspy: workload (h), 256 x 256 positions of (n, 2) float64, n ~ Poisson(30)")
    print(describe())
    values, offsets = make_cells()
    cells = cells_of(values, offsets).reshape(NAV)
    columnar_bytes = values.nbytes + offsets.nbytes
    rows = np.diff(offsets)
    print(
        f"{len(values):,} rows (mean {rows.mean():.1f} a cell, max {rows.max()}), "
        f"{values.nbytes / 1e6:.1f} MB of values; zarr {zarr.__version__}; {args.repeats} runs "
        "each, layouts taking turns; seconds as min / median"
    )
    if zarr2 is None:
        print(
            "zspy left out: ZARR2_PYTHON is not set (a python with zarr 2.18.7, numcodecs 0.15.2)"
        )
    else:
        print(f"zspy: {zarr2_versions(zarr2)} ($ZARR2_PYTHON)")

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp, "cells")
        data.mkdir()
        np.save(data / "values.npy", values)
        np.save(data / "offsets.npy", offsets)
        (data / "shape.json").write_text(json.dumps(NAV))
        root, zspy_root = Path(tmp, "h.zarr"), Path(tmp, "h.zspy")
        store = zarr.storage.LocalStore(root)
        ours, csr = create_ours(store), Csr(store, len(values))
        ours64 = create_ours(store, "ours64", chunks=SHARD, shards=None)
        for array in (ours, ours64):
            write_columnar(array, values, offsets)
        csr.write(values, offsets)
        same = [
            np.array_equal(a, b)
            for x, y in ((read_columnar(ours, REGION), csr.region(*REGION)),
                         (read_columnar(ours, POSITION), csr.region(*ONE)))
            for a, b in zip(x, y, strict=True)
        ]  # fmt: skip
        print(f"ours and CSR read the same position and region: {all(same)}")
        dense = zarr.create_array(
            store, name="dense", shape=(*NAV, 60), chunks=(*INNER, 60), shards=(*SHARD, 60),
            dtype="float64", compressors=[ZstdCodec(level=3)],
        )  # fmt: skip
        dense[...] = np.random.default_rng(1).uniform(0, 256, dense.shape)
        shard_files = sorted(p for p in (root / "ours" / "c").rglob("*") if p.is_file())
        n_inner = math.prod(s // i for s, i in zip(SHARD, INNER, strict=True))
        with zarr2_worker(zarr2, data, str(zspy_root)) as zspy:
            t = run(writes(ours, csr, zspy, values, offsets, cells), args.repeats)
            bounds: dict[str, Callable[[], Any]] = {
                "bound: ours' floor|ours": lambda: [floor_read(p, n_inner) for p in shard_files],
                "bound: zarr, dense, same grid|ours": lambda: dense[...],
                "64 x 64 chunks, no shards: columns|ours": lambda: read_columnar(ours64),
                "64 x 64 chunks, no shards: cells|ours": lambda: ours64[...],
            }
            reads = whole_reads(ours, csr, zspy) | bounds | fused_reads(store)
            reads[WHOLE] = local_read = WithCpu(reads[WHOLE])
            t |= run(reads, args.repeats)
            cpu = {"local whole read": local_read.of_fastest(t[WHOLE])}
            small = {"64 x 64 chunks: one position|ours": lambda: read_columnar(ours64, POSITION)}
            t |= run(small_reads(ours, csr, zspy) | small, args.repeats)
        sizes = {
            "ours": stored(root / "ours"),
            "CSR": stored(root / "csr" / "data", root / "csr" / "_ragged_offsets_data"),
        }
        for layout in ("blosc", "zstd3") if zarr2 else ():
            arrays = zspy_root / layout / "Experiments" / "vectors"
            sizes[f"zspy {layout}"] = stored(arrays / "data", arrays / "_ragged_shapes_data")
        me = [sys.executable, __file__, "--rss-child", str(root)]
        memory = {
            "read_columnar (ours)": rss([*me, "columnar"], args.repeats),
            "read_columnar (ours), glibc's mmap threshold fixed": rss(
                [*me, "columnar"], args.repeats, FIXED_MMAP
            ),
            "arr[:] (ours)": rss([*me, "cells"], args.repeats),
            "CSR's two arrays": rss([*me, "CSR"], args.repeats),
        }
        if zarr2:
            zspy_rss = [zarr2, str(HERE / "_zspy.py"), str(data), str(zspy_root), "--rss", "blosc"]
            memory["HyperSpy's read (zspy blosc)"] = rss(zspy_rss, args.repeats)
        s3: dict[str, list[float]] = {}
        requests: dict[str, tuple[int, int, float]] = {}
        if not args.no_s3:
            try:
                s3 = s3_run(values, offsets, cells, data, zarr2, args.repeats, requests, cpu)
            except (ImportError, RuntimeError, OSError) as exc:
                print(f"S3 part skipped: {exc}")

    table("local store", t, {"stored MB": {k: f"{v / 1e6:.2f}" for k, v in sizes.items()}})
    if s3:
        table("S3: moto, ranges as S3 (moto_ranged)", s3, {})
        report_requests("S3: ours' last read of each (zarr -> store)", requests)
        print(
            "CPU s of the fastest call, ours + moto's: "
            + "; ".join(f"{k} {a:.3f} + {b:.3f}" for k, (a, b) in cpu.items())
        )
    print(f"\n{'measure':<72}{'min':>7}{'median':>8}  target")
    for where, times in (("local", t), ("S3", s3)):
        for text, a, b, target in MEASURES:
            if a in times and b in times:
                show(f"{where}: {text}" if text[0] != " " else text, times[a], times[b], target)
        if where == "local":
            show("local: stored bytes, ours vs CSR (ours/CSR)", [sizes["ours"]], [sizes["CSR"]],
                 "<= 1.05")  # fmt: skip
            for layout in sizes.keys() - {"ours", "CSR"}:
                show(f"  stored bytes, {layout} vs CSR", [sizes[layout]], [sizes["CSR"]])
            for text, extra in memory.items():
                show(f"local: peak extra RSS of a whole read / columnar bytes: {text}", extra,
                     [columnar_bytes])  # fmt: skip
    if s3:
        cores = os.cpu_count() or 1
        least = (sum(cpu["GET every object"]) + sum(cpu["local whole read"])) / cores
        show("  the CPU bound vs GET every object ((GETs' + local read's CPU) / cores / GET)",
             [least], s3["bound: GET every object|ours"])  # fmt: skip
        for layout, obj in (("ours", "a shard"), ("CSR", "the values")):
            show(f"S3: 1-byte GET of {obj} ({layout}), moto as it is vs moto_ranged",
                 s3[f"1-byte GET, moto as it is|{layout}"], s3[f"1-byte GET|{layout}"])  # fmt: skip


if __name__ == "__main__":
    main()
