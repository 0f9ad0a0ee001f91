"""``upgrade``/``downgrade`` of Zarr v2 ragged arrays (numcodecs VLenArray / VLenBytes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from _zt_helpers import cells_f32x2, run, snapshot, write_v2_ragged

from zarr_ndarray_tool import api
from zarr_ndarray_tool._compat import open_zip_store_read
from zarr_ndarray_tool._tree import KEPT
from zarr_ndarray_tool.errors import Refused

CaptureFixture = pytest.CaptureFixture[str]


def flat_cells(n: int, dtype: str = "<f4", seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(int(rng.integers(0, 6))) * 100).astype(dtype) for _ in range(n)]


def chunk_files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in path.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name not in ("zarr.json", KEPT)
    }


def assert_reads(path: Path, expected: list[np.ndarray], shape: tuple[int, ...] = ()) -> None:
    arr = zarr.open_array(path, mode="r")
    got = np.asarray(arr[...], dtype=object).reshape(-1)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
        assert g.shape == e.shape


def _has_v3_codec(name: str) -> bool:
    from zarr.registry import get_codec_class

    try:
        get_codec_class(name)
    except KeyError:
        return False
    return True


COMPRESSORS: list[tuple[Any, str | None]] = [
    (None, None),
    (numcodecs.Zstd(level=3), "zstd"),
    (numcodecs.Zstd(level=1, checksum=True), "zstd"),
    (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), "blosc"),
    (numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.AUTOSHUFFLE), "blosc"),
    (numcodecs.Blosc(cname="zlib", shuffle=numcodecs.Blosc.NOSHUFFLE), "blosc"),
    (numcodecs.Zlib(level=6), "numcodecs.zlib"),
    (numcodecs.LZ4(acceleration=2), "numcodecs.lz4"),
]


# zarr 3.1.3-3.1.x warns whenever it meets a numcodecs.* codec (the zlib and lz4 twins).
@pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")
@pytest.mark.parametrize(("compressor", "twin"), COMPRESSORS)
def test_upgrade_then_downgrade_a_vlenarray_array(
    tmp_path: Path, capsys: CaptureFixture, compressor: Any, twin: str | None
) -> None:
    cells = flat_cells(11)
    path = tmp_path / "v2"
    attrs = {"units": "m", "_ARRAY_DIMENSIONS": ["cell"]}
    write_v2_ragged(path, cells, compressor=compressor, attributes=attrs)
    zarray = (path / ".zarray").read_bytes()
    zattrs = (path / ".zattrs").read_bytes()
    chunks = chunk_files(path)
    status, out, err = run(capsys, "upgrade", str(path))
    if twin is not None and not _has_v3_codec(twin):  # zarr 3.1.0 lacks numcodecs.zlib/lz4
        assert status == 1 and "zarr cannot read this array's metadata" in err
        assert (path / ".zarray").read_bytes() == zarray and not (path / "zarr.json").exists()
        return
    assert status == 0, err
    assert "/: array ndarray float32 [null] (vlen-ndarray); checked 3 of 3 chunk objects" in out
    assert not (path / ".zarray").exists() and not (path / ".zattrs").exists()
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert [c["name"] for c in meta["codecs"]] == ["vlen-ndarray", *([twin] if twin else [])]
    assert meta["attributes"] == attrs and meta["dimension_names"] == ["cell"]
    assert meta["fill_value"] == ""
    assert chunk_files(path) == chunks
    assert_reads(path, cells)
    assert run(capsys, "verify", str(path))[0] == 0
    status, out, err = run(capsys, "downgrade", str(path))
    assert status == 0, err
    assert (path / ".zarray").read_bytes() == zarray
    assert (path / ".zattrs").read_bytes() == zattrs
    assert not (path / "zarr.json").exists()
    assert chunk_files(path) == chunks


def test_2d_slash_separator_and_a_pattern(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = [c.reshape(-1) for c in cells_f32x2(12, seed=5)]  # flat, an even number of items
    path = tmp_path / "v2"
    write_v2_ragged(
        path, cells, shape=(3, 4), chunks=(2, 3), separator="/", compressor=numcodecs.Zstd()
    )
    status, out, err = run(capsys, "upgrade", str(path), "--shape", "null,2", "--verify-all")
    assert status == 0, err
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["data_type"]["configuration"] == {"dtype": "float32", "shape": [None, 2]}
    assert meta["chunk_key_encoding"]["configuration"] == {"separator": "/"}
    assert "checked 4 of 4" in out
    assert_reads(path, [c.reshape(-1, 2) for c in cells])


def test_vlenbytes_needs_and_takes_dtype_and_shape(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = cells_f32x2(6)
    path = tmp_path / "v2"
    write_v2_ragged(
        path,
        [c.tobytes() for c in cells],
        filters=[numcodecs.VLenBytes()],
        compressor=numcodecs.Zstd(),
    )
    before = snapshot(path)
    status, _, err = run(capsys, "upgrade", str(path))
    assert status == 1 and "give its element type with --dtype and --shape" in err
    assert snapshot(path) == before
    status, _, err = run(capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "null,3")
    assert status == 1 and "not upgraded (nothing written): chunk 0:" in err
    assert snapshot(path) == before
    status, _, err = run(capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "null,2")
    assert status == 0, err
    assert_reads(path, cells)


def _patch_zarray(path: Path, **changes: Any) -> None:
    meta = json.loads((path / ".zarray").read_text())
    meta.update(changes)
    (path / ".zarray").write_text(json.dumps(meta, indent=4, sort_keys=True))


@pytest.mark.parametrize(
    ("changes", "argv", "match"),
    [
        (
            {"filters": [{"id": "delta", "dtype": "<f4"}, {"id": "vlen-array", "dtype": "<f4"}]},
            [],
            "exactly one VLenArray or VLenBytes filter",
        ),
        ({"filters": [{"id": "vlen-utf8"}]}, [], "exactly one VLenArray or VLenBytes filter"),
        ({"filters": [{"id": "vlen-array", "dtype": ">f4"}]}, [], "is big-endian"),
        ({"compressor": {"id": "gzip", "level": 1}}, [], "no byte-identical Zarr v3 codec"),
        ({"compressor": {"id": "bz2", "level": 1}}, [], "no byte-identical Zarr v3 codec"),
        ({"order": "F", "shape": [2, 2], "chunks": [2, 2]}, [], "stores chunks transposed"),
        ({"dtype": "<f4", "filters": None}, [], "Zarr v2 dtype is '<f4'"),
        ({}, ["--dtype", "int32", "--shape", "null"], "disagrees with the VLenArray"),
        ({}, ["--shape", "2,null"], r"\[null, d1, \.\.\., dk\]"),
    ],
)
def test_refusals_change_nothing(
    tmp_path: Path, capsys: CaptureFixture, changes: dict[str, Any], argv: list[str], match: str
) -> None:
    import re

    path = tmp_path / "v2"
    write_v2_ragged(path, flat_cells(4))
    _patch_zarray(path, **changes)
    before = snapshot(path)
    if argv and argv[0] == "--shape":
        argv = ["--dtype", "float32", *argv]
    status, out, err = run(capsys, "upgrade", str(path), *argv)
    assert (status, out) == (1, ""), err
    assert re.search(match, err), err
    assert snapshot(path) == before


def test_a_corrupt_chunk_is_found(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "v2"
    write_v2_ragged(path, flat_cells(12), compressor=numcodecs.Zstd())
    raw = bytearray(numcodecs.Zstd().decode((path / "1").read_bytes()))
    raw[4] += 1  # the first element's length is no longer a whole number of float32 items
    (path / "1").write_bytes(numcodecs.Zstd().encode(bytes(raw)))
    before = snapshot(path)
    status, _, err = run(capsys, "upgrade", str(path), "--verify-all")
    assert status == 1 and "chunk 1:" in err
    assert snapshot(path) == before


def test_dry_run_and_downgrade_after_a_change(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "v2"
    write_v2_ragged(path, flat_cells(5), attributes={"a": 1})
    before = snapshot(path)
    status, out, _ = run(capsys, "upgrade", str(path), "--dry-run")
    assert status == 0 and "nothing written" in out and "/: array ndarray float32 [null]" in out
    assert snapshot(path) == before
    assert run(capsys, "upgrade", str(path))[0] == 0
    meta = json.loads((path / "zarr.json").read_text())
    assert meta["attributes"] == {"a": 1}  # the v2 documents are kept beside, in KEPT
    meta["shape"] = [9]
    (path / "zarr.json").write_text(json.dumps(meta, indent=2))
    status, _, err = run(capsys, "downgrade", str(path))
    assert status == 1 and "zarr.json changed since the upgrade" in err


def test_zip_store_cli_and_the_api_refusal(tmp_path: Path, capsys: CaptureFixture) -> None:
    import zipfile

    cells = flat_cells(7)
    write_v2_ragged(tmp_path / "v2", cells, compressor=numcodecs.Zstd(), attributes={"k": 1})
    zpath = tmp_path / "s.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for p in sorted((tmp_path / "v2").rglob("*")):
            zf.write(p, f"grp/arr/{p.relative_to(tmp_path / 'v2')}")
    with zipfile.ZipFile(zpath) as zf:
        original = {n: zf.read(n) for n in zf.namelist()}
    store = open_zip_store_read(zpath)  # opened up front, as zarr 3.1.0 needs
    try:
        with pytest.raises(Refused, match="cannot delete keys"):
            api.upgrade(store, path="grp/arr")
    finally:
        if store._is_open:  # zarr 3.1.0's ZipStore.close fails on a store it never opened
            store.close()
    status, _, err = run(capsys, "upgrade", f"{zpath}::grp/arr")
    assert status == 0, err
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
    assert "grp/arr/zarr.json" in names and "grp/arr/.zarray" not in names
    store = zarr.storage.ZipStore(zpath, mode="r")
    try:
        got = zarr.open_array(store, path="grp/arr", mode="r")[:]
        for g, e in zip(np.asarray(got), cells, strict=True):
            np.testing.assert_array_equal(g, e)
    finally:
        if store._is_open:  # zarr 3.1.0's ZipStore.close fails on a store it never opened
            store.close()
    assert run(capsys, "downgrade", f"{zpath}::grp/arr")[0] == 0
    with zipfile.ZipFile(zpath) as zf:
        assert {n: zf.read(n) for n in zf.namelist()} == original
