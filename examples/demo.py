"""End-to-end demo of the packages on a local Zarr v3 store.

Run it with ``nox -s demo`` (which installs the packages, pyarrow and xarray on the Python that
runs nox, any of 3.11-3.13), or in any environment holding them::

    python examples/demo.py                      # work in a temporary folder, removed at the end
    python examples/demo.py --out demo-output    # keep the store and Parquet files there
    python examples/demo.py --series 20000       # a smaller run

What it does, for ``--series`` time series (default 100 000, so 200 000 cells in all):

1. builds two ragged arrays: per series a t-digest-like sketch, ``(n, 2)`` float32 centroids
   ``(mean, weight)`` sorted by mean, and a ``(n,)`` uint64 list of location ids;
2. writes them to ``demo.zarr`` (one group, two arrays, zstd level 3 inside shards), the
   centroids through zarr's object-array path and the locations through ``write_columnar``;
3. reads them back whole, by slice and columnar (``read_columnar``), checking every value;
   stores a third array of image chips of varying height and width (``uint8 [null, null]``,
   the ``ragged-ndarray`` codec, chosen by default) on a (row, column) grid of tiles, and reads
   one grid row back columnar;
4. prints what the store tool's ``info`` says about the centroids;
5. exports to Parquet twice: with the tool (``zarr-ndarray export``) and with
   ``nd_arrow.from_zarr`` (both arrays in one table), then reads the files back as ``nd_arrow``
   columns and as an ``xarray.Dataset`` (CF contiguous ragged layout), checking every value;
6. prints a summary: counts, bytes stored vs raw, timings.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import zarr
from zarr.codecs import ZstdCodec

import nd_arrow
import zarr_ragged_ndarray
import zarr_vlen_ndarray
from zarr_vlen_ndarray import NDArray

CENTROID = NDArray(dtype="float32", shape=(None, 2))
LOCATION = NDArray(dtype="uint64", shape=(None,))
CHUNK = 1_000  # cells per chunk (the unit of decoding)
SHARD = 10_000  # cells per shard (the unit of storage: one file each)
STATS = ("mean", "weight")


# ---------------------------------------------------------------------------------- timing


class Timings:
    """Wall-clock time of each named step, printed at the end."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.steps.append((name, time.perf_counter() - start))


def check(ok: bool, what: str) -> None:
    """Stop the demo (exit 1) when a read-back differs from what was written."""
    if not ok:
        sys.exit(f"demo: MISMATCH: {what}")


# ---------------------------------------------------------------------------------- the data


def t_digests(rng: np.random.Generator, series: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``(total, 2)`` float32 centroids (mean, weight) sorted per series, and offsets.

    Series differ in their centre, spread and number of centroids (8..96, a few with none: a
    series that saw no data yet). Means are logistic quantiles of uniforms sorted per series.
    """
    counts = rng.integers(8, 97, size=series)
    counts[rng.random(series) < 0.01] = 0
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner = np.repeat(np.arange(series), counts)
    # One global sort of series + uniform sorts the uniforms inside each series.
    u = np.sort(owner + rng.uniform(1e-6, 1.0 - 1e-6, size=owner.size)) - owner
    centre = rng.normal(100.0, 30.0, size=series)
    spread = rng.lognormal(1.0, 0.5, size=series)
    means = centre[owner] + spread[owner] * np.log(u / (1.0 - u))
    weights = 1.0 + np.floor(rng.gamma(2.0, 40.0, size=owner.size))
    values = np.stack([means, weights], axis=1).astype(np.float32)
    return values, offsets


def location_lists(rng: np.random.Generator, series: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat uint64 location ids (H3-like 64-bit cell ids), increasing per series, and offsets."""
    counts = rng.geometric(0.08, size=series) - 1  # 0, 1, 2, ... mean ~11.5
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner = np.repeat(np.arange(series), counts)
    # A random start per series plus positive gaps: sorted, distinct ids without a sort.
    steps = np.cumsum(rng.integers(1, 2**24, size=owner.size, dtype=np.uint64))
    before = np.concatenate([[0], steps])[offsets[:-1]].astype(np.uint64)
    start = rng.integers(0, 2**50, size=series, dtype=np.uint64)
    ids = np.uint64(0x08 << 56) | (start[owner] + steps - before[owner])
    return ids, offsets


def as_cells(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Stage flat values as an object array of per-cell views (what zarr's object path takes)."""
    cells = np.empty(offsets.size - 1, dtype=object)
    cells[:] = np.split(values, offsets[1:-1])
    return cells


def same_cells(cells: np.ndarray, values: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether an object array of cells holds exactly ``values`` split at ``offsets``."""
    extents = np.fromiter((c.shape[0] for c in cells), dtype=np.int64, count=cells.size)
    if not np.array_equal(extents, np.diff(offsets)):
        return False
    flat = np.concatenate([*cells, values[:0]])
    return flat.dtype == values.dtype and np.array_equal(flat, values[offsets[0] : offsets[-1]])


# ------------------------------------------------------------------------------ the store


def create(group: zarr.Group, name: str, dtype: Any, series: int, **attrs: Any) -> zarr.Array:
    return group.create_array(
        name,
        shape=(series,),
        chunks=(CHUNK,),
        shards=(SHARD,),
        dtype=dtype,
        compressors=ZstdCodec(level=3),
        dimension_names=("series",),
        attributes=attrs,
    )


def stored_bytes(folder: Path) -> int:
    """Bytes of every chunk object (shard file) below an array's folder."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != "zarr.json")


# ------------------------------------------------------------------------------ the arrow side


def flat_column(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Flat element values and the leading extent of every row of an ``nd_arrow.array`` column.

    Vectorized over the storage children of FORMAT.md (``values``: one list of elements per row,
    ``dim_sizes``: the sizes of each row's axes), so no Python object is made per row.
    """
    chunk = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    storage = chunk.storage
    values = storage.field(nd_arrow.VALUES_FIELD).flatten().to_numpy(zero_copy_only=False)
    sizes_list = storage.field(nd_arrow.DIM_SIZES_FIELD)
    sizes = sizes_list.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    rank = sizes.size // len(chunk) if len(chunk) else 1  # one rank per column here
    return values, sizes.reshape(-1, rank)[:, 0]


def ragged_dataset(table: pa.Table) -> Any:
    """The series table as an ``xarray.Dataset`` in the CF contiguous ragged array layout.

    Each ragged variable becomes its flat elements along its own sample dimension plus a per-series
    count (``sample_dimension`` names which), built as an ``nd_arrow.NdDataset`` and turned
    into a Dataset by nd-arrow's xarray helpers.
    """
    centroids, centroid_counts = flat_column(table.column("centroids"))
    locations, location_counts = flat_column(table.column("locations"))
    nd = nd_arrow.NdVariable
    dataset = nd_arrow.NdDataset(
        {
            "series": nd(table.column("series").to_numpy(), ["series"]),
            "stat": nd(np.array(STATS, dtype=object), ["stat"]),
            "centroid": nd(centroids.reshape(-1, len(STATS)), ["centroid_obs", "stat"]),
            "centroid_count": nd(centroid_counts, ["series"], {"sample_dimension": "centroid_obs"}),
            "location": nd(locations, ["location_obs"]),
            "location_count": nd(location_counts, ["series"], {"sample_dimension": "location_obs"}),
        },
        {"title": "t-digest sketches and location lists", "featureType": "timeSeries"},
    )
    return dataset.to_xarray()


# ---------------------------------------------------------------------------------- the demo


def run(out: Path, series: int, seed: int) -> None:
    t = Timings()
    rng = np.random.default_rng(seed)
    with t.step("generate data (numpy)"):
        cvals, coffs = t_digests(rng, series)
        lvals, loffs = location_lists(rng, series)
    print(f"output folder: {out}")
    print(
        f"{series:,} series: {coffs[-1]:,} centroids (float32 pairs) and "
        f"{loffs[-1]:,} location ids (uint64), {2 * series:,} cells in two arrays"
    )

    # -- write ------------------------------------------------------------------------------
    store_path = out / "demo.zarr"
    group = zarr.open_group(store_path, mode="w")
    cent = create(group, "centroids", CENTROID, series, stats=list(STATS), sketch="t-digest")
    loc = create(group, "locations", LOCATION, series, id_scheme="H3-like cell id")
    with t.step("write centroids (object array path)"):
        cent[:] = as_cells(cvals, coffs)
    with t.step("write locations (write_columnar)"):
        zarr_vlen_ndarray.write_columnar(loc, lvals, loffs)

    # -- read back --------------------------------------------------------------------------
    cent = zarr.open_array(store_path / "centroids", mode="r")
    loc = zarr.open_array(store_path / "locations", mode="r")
    with t.step("read centroids whole (object array)"):
        cells = np.asarray(cent[:])
    check(same_cells(cells, cvals, coffs), "centroids read whole")
    a, b = series // 3, series // 3 + 50
    with t.step("read 50 centroid cells by slice"):
        part = np.asarray(cent[a:b])
    check(same_cells(part, cvals, coffs[a : b + 1]), f"centroids[{a}:{b}]")
    with t.step("read centroids columnar"):
        values, offsets = zarr_vlen_ndarray.read_columnar(cent)
    check(np.array_equal(values, cvals) and np.array_equal(offsets, coffs), "columnar centroids")
    with t.step("read locations columnar"):
        values, offsets = zarr_vlen_ndarray.read_columnar(loc)
    check(np.array_equal(values, lvals) and np.array_equal(offsets, loffs), "columnar locations")
    values, offsets = zarr_vlen_ndarray.read_columnar(loc, selection=slice(a, b))
    check(
        np.array_equal(values, lvals[loffs[a] : loffs[b]])
        and np.array_equal(offsets, loffs[a : b + 1] - loffs[a]),
        f"columnar locations[{a}:{b}]",
    )
    first = cells[a]
    print(f"\ncentroids[{a}]: {first.shape[0]} centroids, the first three (mean, weight):")
    print(textwrap.indent(np.array2string(first[:3], precision=2), "  "))

    # -- a variable-pattern array: image chips on a grid of tiles ----------------------------
    side = max(2, int(np.sqrt(series / 100)))
    heights, widths = rng.integers(8, 65, size=(2, side * side))
    chip_shapes = np.stack([heights, widths], axis=1).astype(np.int64)
    chip_offsets = np.concatenate([[0], np.cumsum(heights * widths)]).astype(np.int64)
    chip_values = rng.integers(0, 256, size=int(chip_offsets[-1]), dtype=np.uint8)
    chips = group.create_array(
        "chips", shape=(side, side), chunks=(max(1, side // 4), side),
        dtype=NDArray(dtype="uint8", shape=(None, None)), compressors=ZstdCodec(level=3),
    )  # fmt: skip
    check(chips.metadata.codecs[0].to_dict()["name"] == "ragged-ndarray", "chips codec")
    with t.step("write image chips (ragged write_columnar)"):
        zarr_ragged_ndarray.write_columnar(chips, chip_values, chip_offsets, shapes=chip_shapes)
    chips = zarr.open_array(store_path / "chips", mode="r")
    with t.step("read image chips whole (object array)"):
        grid = np.asarray(chips[...])
    check(
        all(
            grid.flat[i].shape == tuple(chip_shapes[i])
            and grid.flat[i].tobytes()
            == chip_values[chip_offsets[i] : chip_offsets[i + 1]].tobytes()
            for i in range(side * side)
        ),
        "image chips read whole",
    )
    row = side // 2
    col = zarr_ragged_ndarray.read_columnar(chips, (row, slice(None)))
    lo, hi = row * side, (row + 1) * side
    check(
        col.shape == (side,)
        and np.array_equal(col.shapes, chip_shapes[lo:hi])
        and np.array_equal(col.values, chip_values[chip_offsets[lo] : chip_offsets[hi]]),
        f"columnar chips[{row}, :]",
    )
    print(
        f"\nchips: a {side} x {side} grid of uint8 image chips, (h, w) in 8..64, "
        f"{chip_values.size:,} pixels; chips[{row}, 0] has shape {grid[row, 0].shape}"
    )

    # -- the store tool ---------------------------------------------------------------------
    tool = [sys.executable, "-m", "zarr_ndarray_tool"]
    print(f"\n$ zarr-ndarray info {store_path / 'centroids'}")
    with t.step("zarr-ndarray info"):
        info = subprocess.run(
            [*tool, "info", str(store_path / "centroids")],
            capture_output=True,
            text=True,
            check=True,
        )
    print(info.stdout.rstrip())

    # -- Parquet ----------------------------------------------------------------------------
    tool_parquet = out / "centroids.parquet"
    with t.step("zarr-ndarray export (Parquet)"):
        subprocess.run(
            [*tool, "export", "-q", str(store_path / "centroids"), "--parquet",
             str(tool_parquet), "--dims", "centroid,stat", "--overwrite"],
            check=True,
        )  # fmt: skip
    series_parquet = out / "series.parquet"
    with t.step("nd_arrow.from_zarr, both arrays"):
        table = pa.table(
            {
                "series": pa.array(np.arange(series, dtype=np.int64)),
                "centroids": nd_arrow.from_zarr(cent, dims=("centroid", "stat")),
                "locations": nd_arrow.from_zarr(loc, dims=("location",)),
            }
        )
    with t.step("write_parquet (series table)"):
        nd_arrow.write_parquet(table, series_parquet)

    with t.step("read_parquet both files"):
        exported = nd_arrow.read_parquet(tool_parquet)
        back = nd_arrow.read_parquet(series_parquet)
    for name, column in (
        ("tool export", exported.column("centroids")),
        ("series.parquet", back.column("centroids")),
    ):
        got_values, got_counts = flat_column(column)
        check(
            np.array_equal(got_values, cvals.reshape(-1))
            and np.array_equal(got_counts, np.diff(coffs)),
            f"centroids from {name}",
        )
    got_values, got_counts = flat_column(back.column("locations"))
    check(
        np.array_equal(got_values, lvals) and np.array_equal(got_counts, np.diff(loffs)),
        "locations from series.parquet",
    )
    column = nd_arrow.NdColumn.from_arrow(back.column("centroids").combine_chunks())
    row = column[a]
    if row is None:
        sys.exit(f"demo: MISMATCH: nd_arrow row {a} is null")
    check(np.array_equal(row.values, cells[a]), f"nd_arrow row {a}")
    print(f"\nseries.parquet row {a} as nd_arrow: {row!r}")
    print(f"  as an xarray.DataArray: sizes {dict(row.to_xarray(name='centroids').sizes)}")

    with t.step("Parquet -> xarray.Dataset (CF ragged)"):
        ds = ragged_dataset(back)
    check(int(ds["centroid_count"].sum()) == coffs[-1], "xarray centroid count")
    check(np.array_equal(ds["location"].values, lvals), "xarray locations")
    print("\nseries.parquet as an xarray.Dataset (CF contiguous ragged arrays):")
    print(ds)

    # -- summary ----------------------------------------------------------------------------
    print("\nsummary (timings include one-time imports on first use)")
    rows = [
        ("centroids", cent, cvals, coffs, store_path / "centroids"),
        ("locations", loc, lvals, loffs, store_path / "locations"),
    ]
    for name, arr, vals, offs, folder in rows:
        raw = vals.nbytes
        stored = stored_bytes(folder)
        extents = np.diff(offs)
        print(
            f"  {name:<10} {arr.shape[0]:>9,} cells  {offs[-1]:>10,} elements  "
            f"extent min/median/max {extents.min()}/{int(np.median(extents))}/{extents.max()}  "
            f"raw {raw / 2**20:6.1f} MiB  stored {stored / 2**20:6.1f} MiB "
            f"({stored / raw:.0%})"
        )
    for path in (tool_parquet, series_parquet):
        print(f"  {path.name:<18} {path.stat().st_size / 2**20:6.1f} MiB")
    width = max(len(name) for name, _ in t.steps)
    for name, seconds in t.steps:
        print(f"  {name:<{width}}  {seconds:7.3f} s")
    print(f"  {'total':<{width}}  {sum(s for _, s in t.steps):7.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, help="keep the output in this folder")
    parser.add_argument("--series", type=int, default=100_000, help="series (cells per array)")
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv)
    if args.series < 100:
        parser.error("--series must be at least 100")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        run(args.out.resolve(), args.series, args.seed)
    else:
        with tempfile.TemporaryDirectory(prefix="zarr-ndarray-demo-") as tmp:
            run(Path(tmp), args.series, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
