"""The tool on ``ragged-ndarray`` arrays: info, verify and export through the decoder plug-in.

zarr-ragged-ndarray is a sibling package the tool never imports; it fills the tool's
``zarr_ndarray.chunk_decoders`` entry point. These tests skip where it is not installed (the
sdist's tests run without it).
"""

from __future__ import annotations

import json
import warnings
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.codecs import ZstdCodec
from zvn_tool_helpers import run

from zarr_ndarray_dtype import NDArray
from zarr_vlen_ndarray.tool import api
from zarr_vlen_ndarray.tool import plugins as plugins_mod
from zarr_vlen_ndarray.tool.decoders import ENTRY_POINT_GROUP, plugin_serializer, require_decoder
from zarr_vlen_ndarray.tool.errors import Refused

zrn = pytest.importorskip("zarr_ragged_ndarray")

CaptureFixture = pytest.CaptureFixture[str]
HW = NDArray(dtype="float32", shape=(None, None))


def chips(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` float32 (h, w) cells, h and w in 0..4."""
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((int(rng.integers(0, 5)), int(rng.integers(0, 5)))).astype("<f4")
        for _ in range(n)
    ]


def write_ragged(
    path: Path, cells: list[np.ndarray], shape: tuple[int, ...], dtype: NDArray = HW, **kw: Any
) -> zarr.Array:
    kw.setdefault("chunks", (2,) * len(shape))
    arr = zarr.create_array(
        path, shape=shape, dtype=dtype, serializer=zrn.RaggedNDArrayCodec(), **kw
    )
    grid = np.empty(len(cells), dtype=object)
    for i, c in enumerate(cells):
        grid[i] = c
    arr[...] = grid.reshape(shape)
    return arr


def _fake_entry_points(*values: str) -> Any:
    eps = [EntryPoint("ragged-ndarray", v, ENTRY_POINT_GROUP) for v in values]

    def entry_points(*, group: str, name: str | None = None) -> list[EntryPoint]:
        return [e for e in eps if e.group == group and name in (None, e.name)]

    return entry_points


def test_the_plug_in_is_registered_by_zarr_ragged_ndarray(tmp_path: Path) -> None:
    write_ragged(tmp_path / "a", chips(4), (4,))
    meta = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert plugin_serializer(meta) == "ragged-ndarray"
    found = require_decoder(meta, "a")
    assert found is not None and found[1] is zrn.codec.decode_values


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_info_gives_per_axis_extent_statistics(
    tmp_path: Path, capsys: CaptureFixture, shards: tuple[int, ...] | None
) -> None:
    cells = chips(15, seed=1)
    write_ragged(tmp_path / "a", cells, (3, 5), shards=shards, compressors=[ZstdCodec(level=1)])
    status, out, err = run(capsys, "info", str(tmp_path / "a"), "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["cells_in_written_chunks"] == 15  # edge-chunk padding left out
    assert report["payload_bytes"] == 4 * sum(c.size for c in cells)
    assert report["extent_unit"] == "items"
    items = sorted(c.size for c in cells)
    assert (report["extent"]["min"], report["extent"]["max"]) == (items[0], items[-1])
    heights = [c.shape[0] for c in cells]
    widths = [c.shape[1] for c in cells]
    assert report["extents"]["0"]["max"] == max(heights)
    assert report["extents"]["1"]["mean"] == pytest.approx(np.mean(widths))
    assert report["extents"]["0"]["empty"] == heights.count(0)
    status, text, _ = run(capsys, "info", str(tmp_path / "a"))
    assert "items per element" in text
    assert "axis 0 (variable): min" in text and "axis 1 (variable)" in text


def test_verify_decodes_every_chunk_and_names_the_bad_one(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / "a"
    write_ragged(path, chips(8, seed=2), (8,), compressors=None)
    status, out, _ = run(capsys, "verify", str(path))
    assert status == 0 and "all 4 chunk objects decode" in out
    raw = bytearray((path / "c" / "2").read_bytes())
    raw[0] = 9  # the element count
    (path / "c" / "2").write_bytes(bytes(raw))
    status, out, err = run(capsys, "verify", str(path))
    assert (status, out) == (1, "")
    assert "verify failed at chunk c/2: RaggedLayoutError" in err


def test_verify_names_the_inner_chunk_of_a_shard(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "a"
    cells = [np.ones((1, 1), "<f4")] * 8
    write_ragged(path, cells, (8,), chunks=(2,), shards=(4,), compressors=None)
    assert run(capsys, "verify", str(path))[0] == 0
    raw = bytearray((path / "c" / "1").read_bytes())
    # each inner chunk: count 2, extents (1, 1, 1, 1), two float32 ones; break the second one
    second = raw.find(b"\x02\x00\x00\x00\x01\x00\x00\x00", 4)
    raw[second + 4] = 3
    (path / "c" / "1").write_bytes(bytes(raw))
    status, _, err = run(capsys, "verify", str(path))
    assert status == 1
    assert "chunk c/1: the inner chunk at [6] of the shard: RaggedLayoutError" in err


def test_api_verify_and_info_on_a_memory_store() -> None:
    store = zarr.storage.MemoryStore()
    cells = chips(6, seed=3)
    arr = zarr.create_array(
        store, name="x", shape=(2, 3), chunks=(1, 3), dtype=HW, serializer=zrn.RaggedNDArrayCodec()
    )
    grid = np.empty(6, dtype=object)
    for i, c in enumerate(cells):
        grid[i] = c
    arr[:, :] = grid.reshape(2, 3)
    assert "all 2 chunk objects decode" in api.verify(store, "x").message
    assert api.info(store, "x")["cells_in_written_chunks"] == 6


def test_without_the_plug_in_the_tool_exits_1_with_an_install_hint(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ragged(tmp_path / "a", chips(4), (4,))
    monkeypatch.setattr(plugins_mod, "entry_points", _fake_entry_points())
    for argv in (
        ["info", str(tmp_path / "a")],
        ["verify", str(tmp_path / "a")],
        ["export", str(tmp_path / "a"), "--parquet", str(tmp_path / "a.parquet")],
    ):
        status, out, err = run(capsys, *argv)
        assert (status, out) == (1, ""), argv
        assert "needs its chunk decoder plug-in" in err
        assert "pip install zarr-ragged-ndarray" in err
    assert not (tmp_path / "a.parquet").exists()


def test_a_plug_in_that_fails_to_load_is_skipped_with_a_warning(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_ragged(tmp_path / "a", chips(4), (4,))
    monkeypatch.setattr(plugins_mod, "entry_points", _fake_entry_points("no_such_module_zrn:f"))
    meta = json.loads((tmp_path / "a" / "zarr.json").read_text())
    failed = "chunk decoder plug-in 'no_such_module_zrn:f' failed"
    with pytest.warns(RuntimeWarning, match=failed), pytest.raises(Refused, match="pip install"):
        require_decoder(meta, "a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        status, _, err = run(capsys, "verify", str(tmp_path / "a"))
    assert status == 1 and "pip install zarr-ragged-ndarray" in err


def test_export_a_2d_ragged_array_to_parquet(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow.zarr_export")
    pq = pytest.importorskip("pyarrow.parquet")
    from nd_arrow import NdColumn

    cells = chips(12, seed=4)
    write_ragged(tmp_path / "g", cells, (3, 4), chunks=(2, 3))
    out = tmp_path / "g.parquet"
    status, text, err = run(capsys, "export", str(tmp_path / "g"), "--parquet", str(out))
    assert status == 0, err
    assert "wrote 12 rows" in text
    table = pq.read_table(out)
    col = NdColumn.from_arrow(table.column("g").combine_chunks())
    rows = table.column("index_0").to_pylist(), table.column("index_1").to_pylist()
    for i, j, row in zip(*rows, col, strict=True):
        assert row is not None
        np.testing.assert_array_equal(row.values, cells[i * 4 + j])


def test_a_chunk_zarr_cannot_unwrap_is_reported_by_verify_and_info(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / "a"
    write_ragged(path, chips(6, seed=5), (6,), compressors=[ZstdCodec(level=1)])
    (path / "c" / "1").write_bytes(b"not zstd at all")
    status, _, err = run(capsys, "verify", str(path))
    assert status == 1 and "verify failed at chunk c/1:" in err
    status, _, err = run(capsys, "info", str(path))
    assert status == 1 and "chunk c/1 does not decode" in err and "run `verify`" in err
