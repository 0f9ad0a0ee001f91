"""The tool on ``ragged-ndarray`` arrays: info, verify and export through the columnar engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import run
from zarr.codecs import ZstdCodec

import zarr_ragged_ndarray as zrn
from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_tool import api

CaptureFixture = pytest.CaptureFixture[str]
HW = NDArrayDType(dtype="float32", shape=(None, None))


def chips(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` float32 (h, w) cells, h and w in 0..4."""
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((int(rng.integers(0, 5)), int(rng.integers(0, 5)))).astype("<f4")
        for _ in range(n)
    ]


def write_ragged(
    path: Path, cells: list[np.ndarray], shape: tuple[int, ...], dtype: NDArrayDType = HW, **kw: Any
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
    assert "framing_backend" not in report and "framing" not in text  # vlen-ndarray's only


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
    assert "cannot decode the 'ragged-ndarray' chunk 'c/2'" in err


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
    named = "the 'ragged-ndarray' inner chunk 1 of shard 'c/1'"
    assert f"cannot decode {named}" in err


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
    assert "all 2 chunk objects decode" in api.verify(store, path="x").message
    assert api.info(store, path="x")["cells_in_written_chunks"] == 6


def test_export_a_2d_ragged_array_to_parquet(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow")
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
    assert status == 1 and "the stored chunk 'c/1' does not decode (RuntimeError" in err
    status, _, err = run(capsys, "info", str(path))
    assert status == 1 and "chunk 'c/1' does not decode" in err and "run `verify`" in err
