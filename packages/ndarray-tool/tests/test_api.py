"""The Python API takes what the command line takes (a path or URL) and what zarr takes as a
store (``zarr.storage.StoreLike``) as its one positional argument, names the store by its path or
URL, and returns one kind of result (:class:`api.Outcome`) with the command's data."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import cells_f32x2, write_bytes_array, write_ndarray_array

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_tool import api
from zarr_ndarray_tool.errors import Refused

F32X2 = NDArrayDType(dtype="float32", shape=(None, 2))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """``s.zarr`` holding the array ``grp/v`` of 6 cells in 2 chunks."""
    group = zarr.open_group(tmp_path / "s.zarr", mode="w")
    write_ndarray_array(group.store, cells_f32x2(6), F32X2, name="grp/v", chunks=(3,))
    return tmp_path / "s.zarr"


def test_every_form_of_the_array_gives_the_same_report(store_dir: Path) -> None:
    local = zarr.storage.LocalStore(store_dir)
    forms: list[tuple[Any, str]] = [
        (f"{store_dir}/grp/v", ""),  # what the CLI takes
        (store_dir / "grp" / "v", ""),
        (str(store_dir), "grp/v"),
        (store_dir.as_uri() + "/grp/v", ""),  # a URL
        (local, "grp/v"),
        (zarr.storage.StorePath(local, "grp"), "v"),
        (zarr.storage.FsspecStore.from_url(store_dir.as_uri()), "grp/v"),
    ]
    reports = [api.info(store, path=path).report for store, path in forms]
    for report in reports:
        assert report["written_chunks"] == 2 and report["cells_in_written_chunks"] == 6
        del report["path"]
    assert all(r == reports[0] for r in reports)
    assert api.verify(f"{store_dir}/grp/v").message.endswith("all 2 chunk objects decode")


def test_memory_urls_dicts_and_the_cli_options(tmp_path: Path) -> None:
    url = f"memory://zvn-{uuid.uuid4().hex}/raw"
    cells = cells_f32x2(4)
    write_bytes_array(zarr.storage.FsspecStore.from_url(url), [c.tobytes() for c in cells])
    outcome = api.upgrade(url, dtype="float32", shape=(None, 2), backend="fsspec")
    assert outcome.message.startswith(f"{url}: upgrade to float32 [null, 2]")
    buffers: dict[str, Any] = {}
    write_ndarray_array(zarr.storage.MemoryStore(buffers), cells, F32X2, name="a")
    assert api.info(buffers, path="a")["cells_in_written_chunks"] == 4
    with pytest.raises(Refused, match="--storage-options apply to URLs only"):
        api.info(str(tmp_path), storage_options={"anon": True})
    with pytest.raises(Refused, match=r"got int 3; give a path or URL, a zarr store"):
        api.info(3)  # type: ignore[arg-type]


def test_messages_name_the_store_by_its_path(tmp_path: Path) -> None:
    local = zarr.storage.LocalStore(tmp_path)
    for store in (local, zarr.storage.LocalStore(tmp_path, read_only=True)):
        with pytest.raises(Refused) as info:
            api.verify(store, path="nothing/here")
        said = f"{tmp_path}/nothing/here does not exist (nothing is stored there)."
        assert str(info.value) == said
    write_bytes_array(tmp_path / "raw", [b"ab"])
    with pytest.raises(Refused) as info:
        api.upgrade(local, path="raw")
    assert str(info.value).startswith(f"{tmp_path}/raw: upgrading a Zarr v3 raw-bytes array")
    assert "<LocalStore>" not in str(info.value)


def test_upgrading_a_store_that_does_not_exist(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    for missing in (zarr.storage.LocalStore("missing"), "missing"):
        with pytest.raises(Refused, match=r"^missing does not exist"):
            api.upgrade(missing)
    assert not (tmp_path / "missing").exists()


def test_export_a_region_through_the_api(store_dir: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "r.parquet"
    result = api.export(store_dir, path="grp/v", parquet=out, select=slice(2, 5))
    assert (result.rows, result.out, result.message) == (
        3,
        out,
        f"{store_dir}/grp/v: wrote 3 rows to {out}",
    )
    assert pq.read_table(out).column("index").to_pylist() == [2, 3, 4]
    expected = cells_f32x2(6)[2:5]
    got = zarr.open_array(store_dir / "grp" / "v", mode="r")[2:5]
    for a, b in zip(np.asarray(got), expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_every_command_returns_an_outcome_with_its_message_and_data(store_dir: Path) -> None:
    array = f"{store_dir}/grp/v"
    info = api.info(array)
    assert isinstance(info, api.Outcome) and info.message.startswith(f"path       : {array}\n")
    assert info.report["written_chunks"] == 2 and info["cells"] == 6 and info.diff == ""
    verify = api.verify(array)
    assert (
        isinstance(verify, api.Outcome)
        and verify.ok
        and (verify.problems, verify.failed) == ((), 0)
    )
    assert verify.message == f"{array}: all 2 chunk objects decode"
    dry = api.downgrade(array, dry_run=True)
    assert type(dry) is api.Outcome and dry.message.startswith("dry run: ") and dry.diff
    with pytest.raises(TypeError):
        api.info(array, "grp/v")  # type: ignore[misc]  # one positional argument: the array


def test_verify_lists_every_bad_chunk_up_to_max_errors(tmp_path: Path) -> None:
    path = tmp_path / "a"
    write_ndarray_array(path, cells_f32x2(12), F32X2, chunks=(2,), compressors=None)
    for key in ("c/1", "c/3", "c/4"):
        (path / key).write_bytes(b"\x09" + (path / key).read_bytes()[1:])  # a count of 9
    result = api.verify(path, max_errors=2)
    assert not result.ok and result.failed == 3
    assert [key for key, _ in result.problems] == ["c/1", "c/3"]
    assert all(f"chunk '{key}'" in text for key, text in result.problems)
    lines = result.message.splitlines()
    assert lines[0] == f"{path}: 3 of 6 chunk objects do not decode:"
    assert lines[1:3] == [f"  {text}" for _, text in result.problems]
    assert lines[3] == "  ... and 1 more (--max-errors N lists more)"
