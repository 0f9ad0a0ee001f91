"""Store access of the tool: locating arrays, refusals, atomic rewrites, chunk keys."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest
import zarr
from _zt_helpers import snapshot, write_bytes_array, zip_store

from zarr_ndarray_tool import _stores as stores
from zarr_ndarray_tool._documents import Grid, grid_of
from zarr_ndarray_tool._stores import atomic_replace
from zarr_ndarray_tool.errors import Refused


def document(loc: stores.Location) -> Any:
    return stores.read_document(loc)


def test_locate_directory_zip_and_inner(tmp_path: Path) -> None:
    write_bytes_array(tmp_path / "d.zarr", [b"ab"])
    assert stores.location(str(tmp_path / "d.zarr")).directory == tmp_path / "d.zarr"
    zs = zip_store(tmp_path / "s.zip")
    write_bytes_array(zs, [b"ab"], name="grp/arr")
    zs.close()
    loc = stores.location(f"{tmp_path / 's.zip'}::grp/arr")
    assert (loc.zip_file, loc.inner, loc.key("zarr.json"), loc.name) == (
        tmp_path / "s.zip",
        "grp/arr",
        "grp/arr/zarr.json",
        "arr",
    )
    meta, _text = document(loc)
    assert meta["data_type"] == "variable_length_bytes"


def test_locate_refusals(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="does not exist"):
        stores.location(str(tmp_path / "nope"))
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(Refused, match="not a zip store"):
        stores.location(str(tmp_path / "f.txt"))
    with pytest.raises(Refused, match="not a zip file"):
        stores.location(f"{tmp_path / 'f.txt'}::a")


def test_read_document_refuses_v2_nodes_and_empty_dirs(tmp_path: Path) -> None:
    zarr.create_array(tmp_path / "v2", shape=(2,), dtype="int32", zarr_format=2)
    with pytest.raises(Refused, match=r"found \.zarray.*Zarr v2"):
        document(stores.location(str(tmp_path / "v2")))
    group = zarr.open_group(tmp_path / "g", mode="w")
    write_bytes_array(group.store, [b"a"], name="inner/arr")
    assert document(stores.location(str(tmp_path / "g")))[0]["node_type"] == "group"
    with pytest.raises(Refused, match=r"g is a Zarr group, not an array; name an array inside"):
        stores.load_node(stores.location(str(tmp_path / "g")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(Refused, match=r"no zarr\.json"):
        document(stores.location(str(tmp_path / "empty")))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "zarr.json").write_text("{not json")
    with pytest.raises(Refused, match="not valid JSON"):
        document(stores.location(str(tmp_path / "bad")))


def test_zip_group_refusal_names_the_inner_syntax(tmp_path: Path) -> None:
    zs = zip_store(tmp_path / "s.zip")
    write_bytes_array(zs, [b"a"], name="arr")
    zs.close()
    with pytest.raises(Refused, match=r"FILE\.zip::name for a zip store"):
        stores.load_node(stores.location(str(tmp_path / "s.zip")))


def test_directory_rewrite_is_atomic_and_keeps_the_mode(tmp_path: Path) -> None:
    write_bytes_array(tmp_path / "a", [b"ab", b"c"])
    target = tmp_path / "a" / "zarr.json"
    os.chmod(target, 0o640)
    loc = stores.location(str(tmp_path / "a"))
    stores.write(loc, {"zarr.json": b'{"new": 1}'}, {})
    assert target.read_text() == '{"new": 1}'
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["c", "zarr.json"]


def test_a_crash_during_the_rename_leaves_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_bytes_array(tmp_path / "a", [b"ab", b"c"])
    zs = zip_store(tmp_path / "s.zip")
    write_bytes_array(zs, [b"ab"], name="arr")
    zs.close()
    before = {**snapshot(tmp_path / "a"), **snapshot(tmp_path / "s.zip")}

    def crash(src: str, dst: str) -> None:
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    for path in (str(tmp_path / "a"), f"{tmp_path / 's.zip'}::arr"):
        with pytest.raises(OSError, match="simulated crash"):
            stores.write(stores.location(path), {"zarr.json": b"{}"}, {})
    assert {**snapshot(tmp_path / "a"), **snapshot(tmp_path / "s.zip")} == before
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_zip_rewrite_keeps_every_other_member(tmp_path: Path) -> None:
    zs = zip_store(tmp_path / "s.zip")
    write_bytes_array(zs, [b"ab", b"", b"xyz", b"q", b"r"], name="g/arr")
    write_bytes_array(zs, [b"other"], name="g/other")
    zs.close()
    with zipfile.ZipFile(tmp_path / "s.zip", "a") as zf:
        zf.comment = b"archive comment"
    with zipfile.ZipFile(tmp_path / "s.zip") as zf:
        before = {
            i.filename: (zf.read(i), i.date_time, i.compress_type, i.external_attr)
            for i in zf.infolist()
        }
        order = zf.namelist()
    stores.write(stores.location(f"{tmp_path / 's.zip'}::g/arr"), {"zarr.json": b'{"x": 1}'}, {})
    with zipfile.ZipFile(tmp_path / "s.zip") as zf:
        after = {
            i.filename: (zf.read(i), i.date_time, i.compress_type, i.external_attr)
            for i in zf.infolist()
        }
        assert zf.namelist() == order
        assert zf.comment == b"archive comment"
    assert after.pop("g/arr/zarr.json")[0] == b'{"x": 1}'
    before.pop("g/arr/zarr.json")
    assert after == before


def test_zip_rewrite_drops_shadowed_duplicates_of_the_document(tmp_path: Path) -> None:
    path = tmp_path / "dup.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("zarr.json", b"old")
        zf.writestr("c/0", b"chunk")
        with pytest.warns(UserWarning, match="Duplicate"):
            zf.writestr("zarr.json", b"newer")
    stores.write(stores.location(str(path)), {"zarr.json": b"newest"}, {})
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["c/0", "zarr.json"]
        assert zf.read("zarr.json") == b"newest"


@pytest.mark.parametrize(
    ("encoding", "keys"),
    [
        ({"name": "default", "configuration": {"separator": "/"}}, ["c/0/0", "c/1/2"]),
        ({"name": "default", "configuration": {"separator": "."}}, ["c.0.0", "c.1.2"]),
        ({"name": "v2", "configuration": {"separator": "."}}, ["0.0", "1.2"]),
        ({"name": "v2", "configuration": {"separator": "/"}}, ["0/0", "1/2"]),
    ],
)
def test_chunk_objects_are_the_keys_of_the_grid(encoding: dict[str, Any], keys: list[str]) -> None:
    """Keys zarr's encoding gives the grid's chunks; other keys (outside the grid, of another
    rank or encoding, documents) are not chunk objects."""
    strays = ["c/1", "c/2/0", "c/1/x", "zarr.json", "0.1.2", "c.2.0", "2.0", "2/0", "c"]
    buffers = {
        key: zarr.buffer.default_buffer_prototype().buffer.from_bytes(b"x" * len(key))
        for key in keys + strays
    }
    loc = stores.location(buffers)
    found = stores.chunk_objects(loc, {"chunk_key_encoding": encoding}, Grid((4, 9), (2, 3)))
    assert [(o.key, o.index, o.nbytes) for o in found] == [
        (keys[0], (0, 0), len(keys[0])),
        (keys[1], (1, 2), len(keys[1])),
    ]


def test_the_one_chunk_of_a_zero_dimensional_array() -> None:
    for encoding, key in (({"name": "default"}, "c"), ({"name": "v2"}, "0")):
        buffers = {key: zarr.buffer.default_buffer_prototype().buffer.from_bytes(b"x")}
        found = stores.chunk_objects(
            stores.location(buffers), {"chunk_key_encoding": encoding}, Grid((), ())
        )
        assert [(o.key, o.index) for o in found] == [(key, ())]
    with pytest.raises(Refused, match="is not one zarr knows"):
        stores.chunk_objects(
            stores.location({}), {"chunk_key_encoding": {"name": "nope"}}, Grid((), ())
        )


def test_chunk_objects_with_v2_keys_and_sharding(tmp_path: Path) -> None:
    cells = [bytes([i]) * i for i in range(10)]
    write_bytes_array(
        tmp_path / "v2keys", cells, chunk_key_encoding={"name": "v2", "separator": "."}
    )
    loc = stores.location(str(tmp_path / "v2keys"))
    meta, _ = document(loc)
    objs = stores.chunk_objects(loc, meta, grid_of(meta, "x"))
    assert [(o.key, o.index) for o in objs] == [("0", (0,)), ("1", (1,)), ("2", (2,))]
    assert all(o.nbytes == (tmp_path / "v2keys" / o.key).stat().st_size for o in objs)
    write_bytes_array(tmp_path / "sh", cells, chunks=(2,), shards=(4,))
    loc = stores.location(str(tmp_path / "sh"))
    meta, _ = document(loc)
    grid = grid_of(meta, "x")
    assert grid.chunks == (4,)
    assert [o.key for o in stores.chunk_objects(loc, meta, grid)] == ["c/0", "c/1", "c/2"]


def test_grid_of_refuses_irregular_grids() -> None:
    meta = {"shape": [4], "chunk_grid": {"name": "rectilinear", "configuration": {}}}
    with pytest.raises(Refused, match="regular grids only"):
        grid_of(meta, "x")


@pytest.mark.parametrize(
    ("meta", "named"),
    [
        ({"shape": [4]}, "x: zarr.json has no chunk_grid; an array needs one."),
        (
            {
                "shape": [4, 2],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            },
            "x: the shape [4, 2] has 2 dimensions but the chunk_shape [2] has 1; zarr.json "
            "contradicts itself.",
        ),
        (
            {"shape": [4], "chunk_grid": {"name": "regular", "configuration": {}}},
            "x: the regular chunk_grid's chunk_shape null is not a list of positive integers.",
        ),
        ({"shape": [-1], "chunk_grid": {}}, "x: zarr.json's shape [-1] is not a list of sizes."),
    ],
)
def test_grid_of_names_what_is_wrong(meta: dict[str, Any], named: str) -> None:
    """A regular grid that does not fit the shape is named for that, not as "irregular"."""
    with pytest.raises(Refused) as info:
        grid_of(meta, "x")
    assert str(info.value) == named
    assert "regular grids only" not in named


def test_open_array_reads_through_another_document(tmp_path: Path) -> None:
    write_bytes_array(tmp_path / "a", [b"\x01\x00", b""])
    loc = stores.location(str(tmp_path / "a"))
    meta, _ = document(loc)
    meta["data_type"] = {"name": "ndarray", "configuration": {"dtype": "int16", "shape": [None]}}
    meta["codecs"][0] = {"name": "vlen-ndarray", "configuration": {}}
    arr = stores.open_array(loc, meta)
    np.testing.assert_array_equal(arr[0], np.array([1], "<i2"))
    meta["data_type"] = "no-such-type"
    with pytest.raises(Refused, match="zarr cannot read"):
        stores.open_array(loc, meta)


# ------------------------------------------------------------------ the one local atomic replace


def test_a_new_file_gets_the_umask_default_and_the_fill_result(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert atomic_replace(tmp_path / "new.bin", lambda fh: fh.write(b"abc")) == 3
    finally:
        os.umask(old)
    assert (tmp_path / "new.bin").read_bytes() == b"abc"
    assert (tmp_path / "new.bin").stat().st_mode & 0o777 == 0o640


def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.write_bytes(b"old")
    os.chmod(target, 0o604)
    atomic_replace(target, lambda fh: fh.write(b"new"))
    assert target.read_bytes() == b"new" and target.stat().st_mode & 0o777 == 0o604


def test_a_failing_fill_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.write_bytes(b"old")

    def fill(fh: BinaryIO) -> None:
        fh.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_replace(target, fill)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["t"]
