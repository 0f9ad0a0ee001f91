"""``export``: every array to Parquet through nd-arrow, and what happens without it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import as_objects, cells_f32x2, run, write_ndarray_array

from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec

F32X2 = NDArray(dtype="float32", shape=(None, 2))
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
    pytest.importorskip("nd_arrow")
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
    assert "export failed: KeyError: 'boom'; nothing written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
