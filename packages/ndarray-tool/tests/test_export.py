"""``export``: every array to Parquet through nd-arrow, and what happens without it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import CLI, as_objects, cells_f32x2, run, tool_output, write_ndarray_array

from zarr_ndarray_dtype import NDArrayDType
from zarr_vlen_ndarray import VlenNDArrayCodec

F32X2 = NDArrayDType(dtype="float32", shape=(None, 2))
CaptureFixture = pytest.CaptureFixture[str]


def _read_cells(out: Path, column: str) -> tuple[Any, list[np.ndarray]]:
    pq = pytest.importorskip("pyarrow.parquet")
    nd_arrow = pytest.importorskip("nd_arrow")
    table = pq.read_table(out)
    col = nd_arrow.NdColumn.from_arrow(table.column(column).combine_chunks())
    return table, [row.values for row in col]


def test_export_a_2d_array(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow")
    cells = cells_f32x2(12, seed=3)
    grid = np.empty((3, 4), dtype=object)
    for i, cell in enumerate(cells):
        grid[np.unravel_index(i, (3, 4))] = cell
    arr = zarr.create_array(
        tmp_path / "g",
        shape=(3, 4),
        chunks=(2, 3),
        dtype=F32X2,  # type: ignore[arg-type]
        serializer=VlenNDArrayCodec(),
    )
    arr[:] = grid
    out = tmp_path / "g.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "g"), "--parquet", str(out))
    assert status == 0, err
    assert "wrote 12 rows" in text
    table, got = _read_cells(out, "g")
    assert table.column_names == ["index_0", "index_1", "g"]
    rows = table.column("index_0").to_pylist()
    cols = table.column("index_1").to_pylist()
    expected = [(row, col) for row in range(3) for col in range(4)]  # C order
    assert list(zip(rows, cols, strict=True)) == expected
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.ParquetFile(out).metadata.num_row_groups == 2  # one per row of chunks
    for (r, c), values in zip(expected, got, strict=True):
        np.testing.assert_array_equal(values, grid[r, c])
        assert values.shape == grid[r, c].shape


def test_export_a_fixed_pattern_array(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow")
    dtype = NDArrayDType(dtype="int16", shape=(3, 2))
    cells = [np.arange(6, dtype="<i2").reshape(3, 2) + 10 * i for i in range(5)]
    arr = zarr.create_array(tmp_path / "f", shape=(5,), chunks=(2,), dtype=dtype)  # type: ignore[arg-type]
    arr[:] = as_objects(cells)
    out = tmp_path / "f.parquet"
    status, _text, err = run(
        capsys, "export", str(tmp_path / "f"), "--parquet", str(out), "--dims", "a,b"
    )
    assert status == 0, err
    table, got = _read_cells(out, "f")
    assert table.column("index").to_pylist() == [0, 1, 2, 3, 4]
    for values, cell in zip(got, cells, strict=True):
        np.testing.assert_array_equal(values, cell)
        assert values.shape == (3, 2)


def test_without_nd_arrow_export_exits_1_with_an_install_hint(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    monkeypatch.setitem(sys.modules, "nd_arrow.zarr_bridge", None)  # import fails
    out = tmp_path / "a.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "a"), "--parquet", str(out))
    assert (status, text) == (1, "")
    assert "not installed" in err and "pip install 'zarr-ndarray-tool[export]'" in err
    assert not out.exists()


def test_a_failing_export_writes_nothing(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    bridge = pytest.importorskip("nd_arrow.zarr_bridge")
    write_ndarray_array(tmp_path / "a", cells_f32x2(6), F32X2, chunks=(2,))
    calls = []

    def from_zarr(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyError("boom")
        return bridge.from_zarr(*args, **kwargs)

    monkeypatch.setattr(bridge, "from_zarr", from_zarr)
    out = tmp_path / "a.parquet"
    status, _, err = run(capsys, "export", str(tmp_path / "a"), "--parquet", str(out))
    assert status == 1
    assert "unexpected KeyError: 'boom' (a bug: please report it" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def _grid_array(path: Path, shape: tuple[int, int], **kwargs: Any) -> np.ndarray:
    """A 2-d array of (k, 2) cells whose values name their coordinates; the cells."""
    grid = np.empty(shape, dtype=object)
    for r, c in np.ndindex(*shape):
        grid[r, c] = np.full(((r + c) % 3, 2), 100 * r + c, "<f4")
    arr = zarr.create_array(path, shape=shape, dtype=F32X2, **kwargs)  # type: ignore[arg-type]
    arr[:] = grid
    return grid


@pytest.mark.parametrize(
    ("select", "rows", "cols"),
    [
        ("1:3, 5", [1, 2], [5]),
        ("-1", [5], list(range(8))),
        ("..., 6:", list(range(6)), [6, 7]),
        ("2, 3", [2], [3]),
    ],
)
def test_export_a_region(
    tmp_path: Path, capsys: CaptureFixture, select: str, rows: list[int], cols: list[int]
) -> None:
    pytest.importorskip("nd_arrow")
    grid = _grid_array(tmp_path / "g", (6, 8), chunks=(2, 4), shards=(4, 8))
    out = tmp_path / "r.parquet"
    status, text, err = run(
        capsys, "export", str(tmp_path / "g"), "--parquet", str(out), "--select", select
    )
    assert status == 0, err
    assert f"wrote {len(rows) * len(cols)} row" in text
    table, got = _read_cells(out, "g")
    at = list(zip(*(table.column(c).to_pylist() for c in ("index_0", "index_1")), strict=True))
    assert sorted(at) == [(r, c) for r in rows for c in cols]
    for (r, c), values in zip(at, got, strict=True):
        np.testing.assert_array_equal(values, grid[r, c])


@pytest.mark.parametrize(
    ("select", "said"),
    [
        ("1:3, 9", "--select: index 9 is out of bounds for axis 1 of size 8"),
        ("::2", "--select: only contiguous selections (step 1)"),
        ("0, 0, 0", "--select: the array has 2 dimensions, got 3"),
        ("3:3", "has no cells to export there"),
    ],
)
def test_a_region_outside_the_array_is_refused(
    tmp_path: Path, capsys: CaptureFixture, select: str, said: str
) -> None:
    pytest.importorskip("nd_arrow")
    _grid_array(tmp_path / "g", (6, 8), chunks=(2, 4))
    out = tmp_path / "r.parquet"
    status, _, err = run(
        capsys, "export", str(tmp_path / "g"), "--parquet", str(out), "--select", select
    )
    assert status == 1 and said in err and str(tmp_path / "g") in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "1:2:x",
        "1.5",
        "[1]",
        "0 if 1 else 2",
        "a",
        "0] + [1",
        "0]._[1",
        "True",
        "",
    ],
)
def test_select_takes_numpy_index_syntax_and_nothing_else(
    capsys: CaptureFixture, text: str
) -> None:
    from zarr_ndarray_tool._documents import parse_selection

    assert parse_selection("0:10, 5") == (slice(0, 10), 5)
    assert parse_selection("..., -1") == (..., -1)
    assert parse_selection(":, ::1") == (slice(None), slice(None, None, 1))
    with pytest.raises(ValueError, match="is not"):
        parse_selection(text)
    status, _, err = run(capsys, "export", "x", "--parquet", "x.parquet", "--select", text)
    assert status == 2 and "argument --select" in err


def test_dims_that_do_not_fit_the_cells_name_dims(tmp_path: Path, capsys: CaptureFixture) -> None:
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    out = tmp_path / "a.parquet"
    for dims, problem in (
        ("a", "gives 1 name"),
        ("n,n", "gives a name twice"),
        ("a,b,c", "gives 3 names"),
    ):
        status, _, err = run(
            capsys, "export", str(tmp_path / "a"), "--parquet", str(out), "--dims", dims
        )
        assert status == 1, err
        assert err.startswith(f"zarr-ndarray export: --dims {dims} {problem}, but every cell of ")
        assert "has 2 axes (float32 [null, 2]); name each axis once" in err
    assert not out.exists()


def test_a_row_group_and_a_progress_step_per_row_of_shards(tmp_path: Path) -> None:
    """6 x 8 cells in shards of 4 x 8 (inner chunks 2 x 4): rows 0-3, then 4-5 (a selection
    starting inside a shard row starts there)."""
    pq = pytest.importorskip("pyarrow.parquet")
    from zarr_ndarray_tool import api

    _grid_array(tmp_path / "g", (6, 8), chunks=(2, 4), shards=(4, 8))
    calls: list[tuple[int, int]] = []
    out = tmp_path / "steps.parquet"
    assert api.export(tmp_path / "g", parquet=out, progress=lambda *a: calls.append(a)).rows == 48
    assert calls == [(0, 48), (32, 48), (48, 48)]
    assert pq.ParquetFile(out).metadata.num_row_groups == 2
    assert pq.read_table(out).column("index_0").to_pylist() == [
        r for r in range(6) for _ in range(8)
    ]
    calls.clear()
    api.export(
        tmp_path / "g",
        parquet=out,
        select=slice(3, 6),
        overwrite=True,
        progress=lambda *a: calls.append(a),
    )
    assert calls == [(0, 24), (8, 24), (24, 24)]
    assert pq.ParquetFile(out).metadata.num_row_groups == 2


# ------------------------------------------------------------------ like a Parquet writer


@pytest.mark.parametrize(
    ("compression", "level", "stored"),
    [
        (None, None, "ZSTD"),  # the default
        ("zstd", "19", "ZSTD"),
        ("snappy", None, "SNAPPY"),
        ("gzip", "9", "GZIP"),
        ("brotli", "5", "BROTLI"),
        ("lz4", None, "LZ4"),
        ("none", None, "UNCOMPRESSED"),
    ],
)
def test_parquet_compression_and_level(
    tmp_path: Path, capsys: CaptureFixture, compression: str | None, level: str | None, stored: str
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_ndarray_array(tmp_path / "a", cells_f32x2(9), F32X2)
    out = tmp_path / "a.parquet"
    argv = ["--compression", compression] * bool(compression) + [
        "--compression-level",
        level,
    ] * bool(level)
    status, _, err = run(capsys, "export", str(tmp_path / "a"), "--parquet", str(out), *argv)
    assert status == 0, err
    meta = pq.ParquetFile(out).metadata.row_group(0)
    assert {meta.column(i).compression for i in range(meta.num_columns)} in (
        {stored},
        {stored + "_RAW"},
    )
    _, got = _read_cells(out, "a")
    assert [c.tolist() for c in got] == [c.tolist() for c in cells_f32x2(9)]


@pytest.mark.parametrize("suffix", [".arrow", ".feather", ".ipc"])
@pytest.mark.parametrize("compression", ["zstd", "lz4", "none"])
def test_an_arrow_ipc_file_read_by_pyarrow_polars_and_duckdb(
    tmp_path: Path, capsys: CaptureFixture, suffix: str, compression: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    nd_arrow = pytest.importorskip("nd_arrow")
    pl, duckdb = pytest.importorskip("polars"), pytest.importorskip("duckdb")
    import pyarrow.dataset as ds

    cells = [np.zeros((n, 2), "<f4") + n for n in range(50)]
    write_ndarray_array(tmp_path / "a", cells, F32X2, chunks=(16,))
    out = tmp_path / f"a{suffix}"
    argv = ("export", str(tmp_path / "a"), "--parquet", str(out), "--compression", compression)
    status, text, err = run(capsys, *argv)
    assert status == 0 and "wrote 50 rows" in text, err
    with pa.ipc.open_file(out) as reader:  # pyarrow: the cells come back
        table = reader.read_all()
    column = nd_arrow.NdColumn.from_arrow(table.column("a").combine_chunks())
    assert [row.values.tolist() for row in column] == [c.tolist() for c in cells]
    assert pl.read_ipc(out)["index"].to_list() == list(range(50))  # polars
    dataset = ds.dataset(out, format="ipc")  # noqa: F841  (DuckDB scans it by name)
    rows = duckdb.sql('select index, len(a."values") from dataset order by index').fetchall()
    assert rows == [(n, 2 * n) for n in range(50)]  # DuckDB
    if compression != "none":  # compressed: smaller than the same file uncompressed
        plain = tmp_path / f"plain{suffix}"
        assert run(capsys, *argv[:3], str(plain), "--compression", "none")[0] == 0
        assert out.stat().st_size < plain.stat().st_size


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--parquet", "{dir}/a.arrow", "--compression", "snappy"], "an Arrow IPC file (.arrow, "),
        (
            ["--parquet", "{dir}/a.parquet", "--compression", "snappy", "--compression-level", "3"],
            "snappy takes no level",
        ),
        (
            ["--parquet", "{dir}/a.parquet", "--compression", "gzip", "--compression-level", "12"],
            "gzip takes levels ",
        ),
        (
            ["--parquet", "{dir}/a.feather", "--compression", "none", "--compression-level", "1"],
            "none takes no level",
        ),
    ],
)
def test_compressions_a_format_does_not_have_are_refused_before_any_work(
    tmp_path: Path, capsys: CaptureFixture, argv: list[str], said: str
) -> None:
    pytest.importorskip("nd_arrow")
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    status, out, err = run(
        capsys, "export", str(tmp_path / "a"), *(a.format(dir=tmp_path) for a in argv)
    )
    assert (status, out) == (1, "") and said in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    status, _, err = run(capsys, "export", "x", "--parquet", "x.parquet", "--compression", "lzo")
    assert status == 2 and "invalid choice: 'lzo'" in err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_export_leaves_nothing(tmp_path: Path, signum: int) -> None:
    """SIGTERM or SIGINT mid-export: the temporary file is removed, the exit status 128 + the
    signal, one line on stderr."""
    pytest.importorskip("nd_arrow")
    from zarr_ndarray_dtype import write_columnar

    n = 400_000
    arr = zarr.create_array(tmp_path / "big", shape=(n,), chunks=(500,), dtype=F32X2)  # type: ignore[arg-type]
    offsets = np.arange(n + 1, dtype=np.int64) * 4
    write_columnar(arr, np.ones((4 * n, 2), "<f4"), offsets)
    out = tmp_path / "big.parquet"
    with subprocess.Popen(
        [*CLI, "export", str(tmp_path / "big"), "--parquet", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".big.parquet.*.tmp")) and child.poll() is None:
            assert time.monotonic() < deadline, "the export never started writing"
            time.sleep(0.005)
        assert child.poll() is None, "the export ended before it could be interrupted"
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    assert child.returncode == 128 + signum, err
    assert tool_output(err) == f"zarr-ndarray export: interrupted ({signal.Signals(signum).name})\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big"]


# ------------------------------------------------------------------ a group's aligned arrays

U64 = NDArrayDType(dtype="uint64", shape=(None,))


def _zagg_group(path: Path, n: int = 10, misaligned: int | None = None) -> dict[str, Any]:
    """A group as zagg writes one: t-digest centroids ``(k, 2)`` float32 per cell with their
    row-aligned ``_locations`` and ``_times`` (``(k,)`` uint64), sharded, a plain per-cell
    count, and a subgroup (not exported). Cell ``misaligned`` gets one time too many."""
    rng = np.random.default_rng(5)
    rows = [0 if i % 4 == 1 else int(rng.integers(1, 5)) for i in range(n)]
    cells = {
        "centroids": [rng.standard_normal((k, 2)).astype("<f4") for k in rows],
        "centroids_locations": [np.arange(k, dtype="<u8") + 100 * i for i, k in enumerate(rows)],
        "centroids_times": [np.arange(k, dtype="<u8") * 7 + i for i, k in enumerate(rows)],
    }
    if misaligned is not None:
        cells["centroids_times"][misaligned] = np.zeros(rows[misaligned] + 1, "<u8")
    group = zarr.open_group(path, mode="w")
    for name, values in cells.items():
        dtype = F32X2 if name == "centroids" else U64
        array = group.create_array(
            name, shape=(n,), chunks=(2,), shards=(4,), dtype=dtype, dimension_names=["cell"]
        )
        array[:] = as_objects(values)
    group.create_array("count", shape=(n,), dtype="int32", chunks=(4,))[:] = rows
    group.create_group("sub").create_array("other", shape=(3,), dtype="int8")
    return {**cells, "count": rows}


def test_a_group_exports_its_arrays_side_by_side(tmp_path: Path, capsys: CaptureFixture) -> None:
    pq, nd_arrow = pytest.importorskip("pyarrow.parquet"), pytest.importorskip("nd_arrow")
    cells = _zagg_group(tmp_path / "g")
    out = tmp_path / "g.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "g"), "--parquet", str(out))
    assert status == 0 and text == f"{tmp_path / 'g'}: wrote 10 rows to {out}\n", err
    table = pq.read_table(out)
    assert table.column_names == ["cell", *sorted(cells)]
    assert table.column("cell").to_pylist() == list(range(10))
    assert table.column("count").to_pylist() == cells["count"]
    for name in ("centroids", "centroids_locations", "centroids_times"):
        column = nd_arrow.NdColumn.from_arrow(table.column(name).combine_chunks())
        for got, cell in zip(column, cells[name], strict=True):
            np.testing.assert_array_equal(got.values, cell)
    assert pq.ParquetFile(out).metadata.num_row_groups == 3  # a row group per row of shards
    status, text, err = run(
        capsys, "export", str(tmp_path / "g"), "--parquet", str(out), "--overwrite",
        "--array", "centroids_times", "--array", "centroids", "--select", "3:9",
    )  # fmt: skip
    assert status == 0 and "wrote 6 rows" in text, err
    table = pq.read_table(out)
    assert table.column_names == ["cell", "centroids_times", "centroids"]
    assert table.column("cell").to_pylist() == list(range(3, 9))


def test_an_exploded_group_is_the_flat_table_duckdb_queries(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    pq, duckdb = pytest.importorskip("pyarrow.parquet"), pytest.importorskip("duckdb")
    cells = _zagg_group(tmp_path / "g")
    out = tmp_path / "flat.parquet"
    argv = ("export", str(tmp_path / "g"), "--parquet", str(out), "--explode", "--select", "2:")
    status, text, err = run(capsys, *argv)
    total = sum(cells["count"][2:])
    assert status == 0 and f"wrote {total} rows" in text, err
    assert pq.read_table(out).column_names == ["cell", *sorted(cells)]
    query = "select cell, centroids, centroids_locations, centroids_times, count from '{}'"
    got = duckdb.sql(query.format(out) + " order by cell, centroids_locations").fetchall()
    expected = [
        (i, cells["centroids"][i][r].tolist(), int(cells["centroids_locations"][i][r]),
         int(cells["centroids_times"][i][r]), cells["count"][i])
        for i in range(2, 10) for r in range(cells["count"][i])
    ]  # fmt: skip
    assert [(c, pytest.approx(xy), loc, t, k) for c, xy, loc, t, k in got] == expected


def test_a_misaligned_cell_is_named_and_nothing_is_written(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    pytest.importorskip("nd_arrow")
    _zagg_group(tmp_path / "g", misaligned=7)  # the last cell of the second shard
    for explode in ([], ["--explode"]):
        out = tmp_path / "g.parquet"
        argv = ("export", str(tmp_path / "g"), "--parquet", str(out), *explode)
        status, text, err = run(capsys, *argv)
        assert (status, text) == (1, ""), err
        assert err.startswith(f"zarr-ndarray export: {tmp_path / 'g'}: ") and "cell (7,)" in err
        assert "'centroids_times'" in err and err.count("\n") == 1, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]
    status, _, err = run(capsys, *argv[:4], "--array", "centroids", "--array", "count")
    assert status == 0, err  # the arrays that align


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--array", "count", "--array", "centroids", "--column", "c"],
            "--column names one array's column, not 2 arrays",
        ),
        ([], "the arrays differ in shape (cell (10,), centroids (10,), "),
        (["--array", "nope"], "the group has no array 'nope' (its arrays: cell, centroids, "),
        (["--array", "sub"], "the group has no array 'sub'"),
        (
            ["--array", "wide", "--array", "centroids"],
            "differ in shape (wide (4,), centroids (10,))",
        ),
        (["--array", "count", "--array", "centroids", "--dims", "n,xy"], "--dims names the axes"),
        (["--array", "centroids", "--explode", "--dims", "n,xy"], "(no --explode, one array)"),
        (
            ["--array", "cell", "--array", "centroids"],
            "column name 'cell' clashes with a coordinate",
        ),
    ],
)
def test_group_refusals(tmp_path: Path, capsys: CaptureFixture, argv: list[str], said: str) -> None:
    pytest.importorskip("nd_arrow")
    _zagg_group(tmp_path / "g")
    group = zarr.open_group(tmp_path / "g")
    group.create_array("wide", shape=(4,), dtype="int8")
    group.create_array("cell", shape=(10,), dtype="int8", dimension_names=["cell"])
    out = tmp_path / "g.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "g"), "--parquet", str(out), *argv)
    assert (status, text) == (1, "") and said in err, err
    assert not out.exists()


def test_one_array_of_a_group_takes_column_and_an_array_takes_no_array_option(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    _zagg_group(tmp_path / "g")
    out = tmp_path / "g.parquet"
    argv = ("export", str(tmp_path / "g"), "--parquet", str(out), "--array", "centroids")
    status, _, err = run(capsys, *argv, "--column", "c", "--dims", "n,xy")
    assert status == 0, err
    assert pq.read_table(out).column_names == ["cell", "c"]
    status, _, err = run(capsys, *argv[:4], "--array", "count", "--overwrite")
    assert status == 1 and "no ndarray array among ['count'] (plain ones go beside)" in err
    status, _, err = run(capsys, "export", str(tmp_path / "g" / "count"), "--parquet", "x.parquet")
    assert status == 1 and "export expects an ndarray array or a group" in err
    array = str(tmp_path / "g" / "centroids")
    status, _, err = run(capsys, "export", array, "--parquet", str(out), "--array", "x")
    assert status == 1 and "is an array; --array names arrays of a group" in err


def test_a_group_export_through_the_api(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from zarr_ndarray_tool import api

    cells = _zagg_group(tmp_path / "g")
    out = tmp_path / "t.arrow"
    store = zarr.storage.LocalStore(tmp_path)
    result = api.export(store, path="g", parquet=out, arrays=["centroids_times"], explode=True)
    assert result.rows == sum(cells["count"]) and result.out == out
    import pyarrow as pa

    with pa.ipc.open_file(out) as reader:
        table = reader.read_all()
    assert table.column("centroids_times").to_pylist() == [
        int(t) for cell in cells["centroids_times"] for t in cell
    ]
    del pq
