"""``export``: the plug-in point, and the cells-to-column paths of the Parquet exporter."""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zvn_tool_helpers import as_objects, cells_f32x2, run, write_ndarray_array

from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec
from zarr_vlen_ndarray.tool import plugins as plugins_mod
from zarr_vlen_ndarray.tool.export import ENTRY_POINT_GROUP, load_exporter

F32X2 = NDArray(dtype="float32", shape=(None, 2))
CaptureFixture = pytest.CaptureFixture[str]


def _fake_entry_points(*values: str) -> Any:
    eps = [EntryPoint("parquet", v, ENTRY_POINT_GROUP) for v in values]

    def entry_points(*, group: str, name: str | None = None) -> list[EntryPoint]:
        return [e for e in eps if e.group == group and name in (None, e.name)]

    return entry_points


def _read_cells(out: Path, column: str) -> tuple[Any, list[np.ndarray]]:
    pq = pytest.importorskip("pyarrow.parquet")
    nd_arrow = pytest.importorskip("nd_arrow")
    table = pq.read_table(out)
    col = nd_arrow.NdColumn.from_arrow(table.column(column).combine_chunks())
    return table, [row.values for row in col]


def test_export_a_2d_array_goes_through_object_cells(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    pytest.importorskip("nd_arrow.zarr_export")
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
    # C order of the chunk grid, then C order inside each chunk (edge chunks clipped)
    expected = [
        (row, col)
        for cr, cc in [(0, 0), (0, 1), (1, 0), (1, 1)]
        for row in range(2 * cr, min(2 * cr + 2, 3))
        for col in range(3 * cc, min(3 * cc + 3, 4))
    ]
    assert list(zip(rows, cols, strict=True)) == expected
    for (r, c), values in zip(expected, got, strict=True):
        np.testing.assert_array_equal(values, grid[r, c])
        assert values.shape == grid[r, c].shape


def test_export_a_fixed_pattern_array(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow.zarr_export")
    dtype = NDArray(dtype="int16", shape=(3, 2))
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


def test_without_the_plug_in_export_exits_1_with_an_install_hint(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    monkeypatch.setattr(plugins_mod, "entry_points", _fake_entry_points())
    out = tmp_path / "a.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "a"), "--parquet", str(out))
    assert (status, text) == (1, "")
    assert "no 'parquet' exporter is installed" in err
    assert "pip install 'zarr-vlen-ndarray[parquet]'" in err
    assert not out.exists()


def test_a_plug_in_that_fails_to_load_is_skipped_with_a_warning(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    monkeypatch.setattr(
        plugins_mod,
        "entry_points",
        _fake_entry_points(
            "no_such_module_zvn:export", "zarr_vlen_ndarray.tool.export:INSTALL_HINTS"
        ),
    )
    with pytest.warns(RuntimeWarning) as record:
        assert load_exporter("parquet") is None
    messages = [str(w.message) for w in record]
    assert "failed to load (ModuleNotFoundError" in messages[0]
    assert "is not callable" in messages[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        status, _, err = run(
            capsys, "export", str(tmp_path / "a"), "--parquet", str(tmp_path / "a.parquet")
        )
    assert status == 1 and "no 'parquet' exporter is installed" in err


def test_a_failing_plug_in_writes_nothing(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ndarray_array(tmp_path / "a", cells_f32x2(3), F32X2)
    monkeypatch.setattr(
        plugins_mod, "entry_points", _fake_entry_points("zvn_tool_helpers:broken_exporter")
    )
    out = tmp_path / "a.parquet"
    status, _, err = run(capsys, "export", str(tmp_path / "a"), "--parquet", str(out))
    assert status == 1
    assert "the 'parquet' exporter failed: KeyError: 'boom'; nothing written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
