"""The tool on object stores: a real S3-compatible server on 127.0.0.1 (moto's server mode),
through s3fs (zarr's FsspecStore) and obstore (zarr's ObjectStore), plus icechunk and memory://.
A rewrite compares zarr.json with what was read, then sets it (one writer at a time)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import cells_f32x2, run, write_bytes_array, write_v2_ragged
from _zt_zspy import SIGNAL, write_zspy

from zarr_ndarray_tool import _documents as md
from zarr_ndarray_tool import api
from zarr_ndarray_tool.errors import Refused

CaptureFixture = pytest.CaptureFixture[str]
BUCKET = "zvn-tool-tests"
UPGRADE = ("--dtype", "float32", "--shape", "null,2")


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """An S3 server on 127.0.0.1 with one bucket; dummy credentials in the environment."""
    server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            endpoint = f"http://{host}:{port}"
            boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
            yield endpoint
        finally:
            server.stop()


def _s3(endpoint: str) -> Any:
    boto3 = pytest.importorskip("boto3")
    return boto3.client("s3", endpoint_url=endpoint)


def _options(backend: str, endpoint: str) -> dict[str, Any]:
    if backend == "obstore":
        return {"endpoint": endpoint, "region": "us-east-1", "client_options": {"allow_http": True}}
    return {"endpoint_url": endpoint}


def _raw_array(endpoint: str, cells: list[np.ndarray]) -> str:
    """A raw-bytes array on the server (written by zarr through s3fs); its URL."""
    pytest.importorskip("s3fs")
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/raw.zarr"
    store = zarr.storage.FsspecStore.from_url(url, storage_options={"endpoint_url": endpoint})
    write_bytes_array(store, [c.tobytes() for c in cells], attributes={"k": "v"})
    return url


def _key(url: str) -> str:
    return url.removeprefix(f"s3://{BUCKET}/") + "/zarr.json"


def _objects(s3: Any, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix``/, by its key below it."""
    found = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/").get("Contents", [])
    return {
        o["Key"].removeprefix(prefix + "/"): s3.get_object(Bucket=BUCKET, Key=o["Key"])[
            "Body"
        ].read()
        for o in found
    }


@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_info_upgrade_verify_downgrade_on_s3(
    backend: str, s3_endpoint: str, capsys: CaptureFixture
) -> None:
    pytest.importorskip("s3fs" if backend == "fsspec" else "obstore")
    cells = cells_f32x2(9)
    url = _raw_array(s3_endpoint, cells)
    s3 = _s3(s3_endpoint)
    original = s3.get_object(Bucket=BUCKET, Key=_key(url))["Body"].read()
    opts = ("--storage-options", json.dumps(_options(backend, s3_endpoint)), "--backend", backend)

    status, out, err = run(capsys, "info", url, *opts, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["written_chunks"] == 3 and report["kind"] == "bytes"
    assert "framing_backend" not in report  # a raw-bytes array: no vlen-ndarray framing
    status, out, err = run(capsys, "upgrade", url, *opts, *UPGRADE)
    assert status == 0, err
    assert f"{url}: upgrade to float32 [null, 2]" in out
    doc = json.loads(s3.get_object(Bucket=BUCKET, Key=_key(url))["Body"].read())
    assert doc["data_type"]["name"] == "ndarray" and doc["attributes"] == {"k": "v"}
    store = zarr.storage.FsspecStore.from_url(url, storage_options={"endpoint_url": s3_endpoint})
    for got, cell in zip(np.asarray(zarr.open_array(store, mode="r")[:]), cells, strict=True):
        np.testing.assert_array_equal(got, cell)
    assert run(capsys, "verify", url, *opts)[0] == 0
    assert run(capsys, "downgrade", url, *opts)[0] == 0
    assert s3.get_object(Bucket=BUCKET, Key=_key(url))["Body"].read() == original


@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_a_concurrent_change_on_s3_is_refused(
    backend: str, s3_endpoint: str, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("s3fs" if backend == "fsspec" else "obstore")
    url = _raw_array(s3_endpoint, cells_f32x2(5))
    s3 = _s3(s3_endpoint)
    key = _key(url)
    concurrent = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() + b" "
    real = md.rewritten

    def racing_upgrade(*args: Any, **kwargs: Any) -> Any:
        s3.put_object(Bucket=BUCKET, Key=key, Body=concurrent)  # another worker writes
        return real(*args, **kwargs)

    monkeypatch.setattr(md, "rewritten", racing_upgrade)
    opts = ("--storage-options", json.dumps(_options(backend, s3_endpoint)), "--backend", backend)
    status, out, err = run(capsys, "upgrade", url, *opts, *UPGRADE)
    assert (status, out) == (1, "")
    assert "zarr.json changed while this command ran; nothing written" in err
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == concurrent


def test_the_python_api_on_an_object_store(s3_endpoint: str) -> None:
    obstore_store = pytest.importorskip("obstore.store")
    url = _raw_array(s3_endpoint, cells_f32x2(6))
    prefix = url.removeprefix(f"s3://{BUCKET}/")
    store = zarr.storage.ObjectStore(
        obstore_store.S3Store(BUCKET, **_options("obstore", s3_endpoint)), read_only=False
    )
    assert api.info(store, path=prefix)["written_chunks"] == 2
    outcome = api.upgrade(store, path=prefix, dtype="float32", shape=(None, 2), dry_run=True)
    assert outcome.diff and "nothing written" in outcome.message
    api.upgrade(store, path=prefix, dtype="float32", shape=(None, 2), verify_all=True)
    assert "all 2 chunk objects decode" in api.verify(store, path=prefix).message
    with pytest.raises(Refused, match="already has the ndarray data type"):
        api.upgrade(store, path=prefix, dtype="float32", shape=(None, 2))
    read_only = zarr.storage.ObjectStore(store.store, read_only=True)
    with pytest.raises(Refused, match="the store is read-only"):
        api.downgrade(read_only, path=prefix)
    assert api.info(read_only, path=prefix)["kind"] == "ndarray"


def test_icechunk_session(tmp_path: Path) -> None:
    icechunk = pytest.importorskip("icechunk")
    cells = cells_f32x2(7)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    group = zarr.open_group(session.store, mode="w")
    write_bytes_array(group.store, [c.tobytes() for c in cells], name="grp/raw")
    session.commit("raw bytes")
    session = repo.writable_session("main")
    outcome = api.upgrade(session.store, path="grp/raw", dtype="float32", shape=(None, 2))
    assert "rewrote zarr.json" in outcome.message
    assert api.verify(session.store, path="grp/raw").message.endswith("all 2 chunk objects decode")
    session.commit("upgrade")  # the user commits; the tool never does
    readonly = repo.readonly_session("main")
    arr = zarr.open_array(readonly.store, path="grp/raw", mode="r")
    for got, cell in zip(np.asarray(arr[:]), cells, strict=True):
        np.testing.assert_array_equal(got, cell)


def test_memory_and_file_urls(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = cells_f32x2(4)
    url = f"memory://zvn-{uuid.uuid4().hex}/raw"
    write_bytes_array(zarr.storage.FsspecStore.from_url(url), [c.tobytes() for c in cells])
    status, _out, err = run(capsys, "upgrade", url, *UPGRADE)
    assert status == 0, err
    assert run(capsys, "verify", url)[0] == 0
    write_bytes_array(tmp_path / "local", [c.tobytes() for c in cells])
    status, _out, err = run(capsys, "upgrade", (tmp_path / "local").as_uri(), *UPGRADE)
    assert status == 0, err
    assert json.loads((tmp_path / "local" / "zarr.json").read_text())["data_type"]["name"] == (
        "ndarray"
    )


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["info", "memory://x/y", "--storage-options", "{bad"], "is not a valid JSON object"),
        (["info", "memory://x/y", "--storage-options", "[1]"], "is not a valid JSON object"),
        (["info", "{local}", "--storage-options", "{}"], "no zarr.json there"),
        (["info", "{local}", "--storage-options", '{"a": 1}'], "apply to URLs only"),
        (["info", "memory://zvn-nothing-here/arr"], "does not exist (nothing is stored there)"),
    ],
)
def test_bad_urls_and_options_exit_1(
    tmp_path: Path, capsys: CaptureFixture, argv: list[str], match: str
) -> None:
    (tmp_path / "d").mkdir()
    status, out, err = run(capsys, *(a.replace("{local}", str(tmp_path / "d")) for a in argv))
    assert (status, out) == (1, "")
    assert match in err


@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_zarr_v2_upgrade_and_downgrade_on_s3(
    backend: str,
    s3_endpoint: str,
    tmp_path: Path,
    capsys: CaptureFixture,
) -> None:
    pytest.importorskip("s3fs" if backend == "fsspec" else "obstore")
    numcodecs = pytest.importorskip("numcodecs")
    cells = [c.reshape(-1) for c in cells_f32x2(9)]
    write_v2_ragged(tmp_path / "v2", cells, compressor=numcodecs.Zstd(), attributes={"a": 1})
    s3 = _s3(s3_endpoint)
    prefix = f"{uuid.uuid4().hex}/v2.zarr"
    files = {p.name: p.read_bytes() for p in (tmp_path / "v2").iterdir()}
    for name, data in files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{name}", Body=data)
    url = f"s3://{BUCKET}/{prefix}"

    opts = ("--storage-options", json.dumps(_options(backend, s3_endpoint)), "--backend", backend)
    status, _out, err = run(capsys, "upgrade", url, *opts, "--shape", "null,2")
    assert status == 0, err
    after = _objects(s3, prefix)
    assert set(after) == {"zarr.json", "zarr-ndarray-v2.json", "0", "1", "2"}
    store = zarr.storage.FsspecStore.from_url(url, storage_options={"endpoint_url": s3_endpoint})
    for got, cell in zip(np.asarray(zarr.open_array(store, mode="r")[:]), cells, strict=True):
        np.testing.assert_array_equal(got, cell.reshape(-1, 2))
    # a second upgrade finds zarr.json: refused, nothing changed
    assert run(capsys, "upgrade", url, *opts, "--shape", "null,2")[0] == 1
    status, _, err = run(capsys, "downgrade", url, *opts)
    assert status == 0, err
    assert _objects(s3, prefix) == files


def test_api_upgrade_needs_the_element_type_and_api_export(tmp_path: Path) -> None:
    cells = cells_f32x2(5)
    write_bytes_array(tmp_path / "raw", [c.tobytes() for c in cells])
    store = zarr.storage.LocalStore(tmp_path)
    with pytest.raises(Refused, match="needs the element type"):
        api.upgrade(store, path="raw")
    api.upgrade(store, path="raw", dtype="float32", shape=(None, 2))
    assert api.info(store, path="raw")["element"]["shape"] == [None, 2]
    pytest.importorskip("nd_arrow")
    assert (
        api.export(store, path="raw", parquet=tmp_path / "raw.parquet", dims=["n", "xy"]).rows == 5
    )
    assert (tmp_path / "raw.parquet").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_a_whole_zspy_hierarchy_upgrades_and_downgrades_on_s3(
    backend: str,
    s3_endpoint: str,
    tmp_path: Path,
    capsys: CaptureFixture,
) -> None:
    pytest.importorskip("s3fs" if backend == "fsspec" else "obstore")
    pytest.importorskip(
        "zarr.metadata.migrate_v3", reason="zarr's v2 -> v3 migration: zarr >= 3.1.3"
    )
    cells = np.empty((3, 2), dtype=object)
    for i, index in enumerate(np.ndindex(3, 2)):
        cells[index] = np.arange(2 * i, dtype="<f8").reshape(i, 2)
    write_zspy(tmp_path / "s.zspy", cells)
    s3 = _s3(s3_endpoint)
    prefix = f"{uuid.uuid4().hex}/s.zspy"
    files = {
        p.relative_to(tmp_path / "s.zspy").as_posix(): p.read_bytes()
        for p in (tmp_path / "s.zspy").rglob("*")
        if p.is_file()
    }
    for name, data in files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{name}", Body=data)
    url = f"s3://{BUCKET}/{prefix}"

    opts = ("--storage-options", json.dumps(_options(backend, s3_endpoint)), "--backend", backend)
    status, out, err = run(capsys, "upgrade", url, *opts)
    assert status == 0, err
    assert f"{SIGNAL}/data: array ndarray float64 [null, 2]" in out
    assert not [k for k in _objects(s3, prefix) if k.rsplit("/", 1)[-1] in (".zgroup", ".zarray")]
    store = zarr.storage.FsspecStore.from_url(url, storage_options={"endpoint_url": s3_endpoint})
    data = zarr.open_group(store, mode="r", zarr_format=3)[f"{SIGNAL}/data"]
    for index in np.ndindex(3, 2):
        np.testing.assert_array_equal(data[index[0], index[1] :][0], cells[index])
    status, _, err = run(capsys, "downgrade", url, *opts)
    assert status == 0, err
    assert _objects(s3, prefix) == files
