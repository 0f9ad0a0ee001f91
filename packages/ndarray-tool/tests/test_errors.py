"""Failures of the user's environment: one line naming the path or endpoint, what the system said
and what to do, exit status 1, never "a bug". Each failure is made for real where the test can
make it (a full device, a read-only mount, a closed port, no credentials), in a subprocess as
users run the command; the mapping of every errno family is checked in-process."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import CLI, cells_f32x2, run_cli, tool_output, write_bytes_array

from zarr_ndarray_tool import api
from zarr_ndarray_tool.errors import Refused, counted, environment_failure, explain, settings

UPGRADE = ("--dtype", "float32", "--shape", "null,2")


def assert_one_line_for_the_user(done: subprocess.CompletedProcess[str], *named: str) -> None:
    """Exit 1, nothing on stdout, one line on stderr naming every ``named``, and no bug."""
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "bug" not in done.stderr and "please report" not in done.stderr, done.stderr
    for text in named:
        assert text in done.stderr, (text, done.stderr)


@pytest.fixture
def raw_store(tmp_path: Path) -> Path:
    path = tmp_path / "raw.zarr"
    write_bytes_array(path, [c.tobytes() for c in cells_f32x2(6)])
    return path


@pytest.mark.slow
def test_a_full_device_names_the_output(raw_store: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = run_cli(
            "info", str(raw_store), stdout=full, stderr=subprocess.PIPE, capture_output=False
        )
    done.stdout = ""
    assert_one_line_for_the_user(
        done, "standard output: No space left on device (ENOSPC)", "free some space"
    )


def _read_only_mount(directory: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``directory`` bind-mounted read-only in a private mount namespace
    (as root, or in a user namespace otherwise); skip when the system cannot make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is needed to make a read-only mount")
    user = ["--user", "--map-root-user"] if os.geteuid() else []
    mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"'
    probe = subprocess.run(
        [unshare, *user, "--mount", "sh", "-c", f'{mount} && test ! -w "$0"', str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode:
        pytest.skip(f"the system refused a read-only bind mount: {probe.stderr.strip()}")
    done = subprocess.run(
        [unshare, *user, "--mount", "sh", "-c", f'{mount} && exec "$@"', str(directory), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    done.stderr = tool_output(done.stderr)
    return done


@pytest.mark.slow
def test_rewrites_on_a_read_only_file_system(raw_store: Path, tmp_path: Path) -> None:
    before = (raw_store / "zarr.json").read_bytes()
    done = _read_only_mount(raw_store, *CLI, "upgrade", str(raw_store), *UPGRADE)
    assert_one_line_for_the_user(
        done,
        f"{raw_store / 'zarr.json'}: Read-only file system (EROFS)",
        "copy the store to a writable place",
    )
    assert (raw_store / "zarr.json").read_bytes() == before
    api.upgrade(str(raw_store), dtype="float32", shape=(None, 2))
    done = _read_only_mount(raw_store, *CLI, "downgrade", str(raw_store))
    assert_one_line_for_the_user(done, f"{raw_store / 'zarr.json'}: Read-only file system")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _s3_run(
    backend: str, port: int, home: Path, credentials: bool
) -> subprocess.CompletedProcess[str]:
    """``info`` of an S3 URL whose endpoint is the closed ``port``; retries and timeouts capped
    so that the failure comes at once. No credentials anywhere unless ``credentials``: none in
    the environment, no ~/.aws, and the instance metadata service on the closed port too."""
    pytest.importorskip("s3fs" if backend == "fsspec" else "obstore")
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(home),
        AWS_CONFIG_FILE=str(home / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "none"),
        AWS_EC2_METADATA_DISABLED="true",  # botocore
        AWS_METADATA_ENDPOINT=endpoint,  # obstore
        AWS_REGION="us-east-1",
    )
    if credentials:
        env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    options: dict[str, Any] = {
        "endpoint_url": endpoint,
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2},
    }
    if backend == "obstore":
        options = {
            "endpoint": endpoint,
            "client_options": {"allow_http": True, "connect_timeout": "2s"},
            "retry_config": {"max_retries": 0},
        }
    url = "s3://zvn-tool-tests/store.zarr/raw"
    argv = ("info", url, "--backend", backend, "--storage-options", json.dumps(options))
    return run_cli(*argv, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_an_endpoint_that_refuses_connections(
    backend: str, closed_port: int, tmp_path: Path
) -> None:
    done = _s3_run(backend, closed_port, tmp_path, credentials=True)
    assert_one_line_for_the_user(
        done, "s3://zvn-tool-tests/store.zarr/raw: ", f"127.0.0.1:{closed_port}", "AWS_ENDPOINT_URL"
    )


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_no_credentials_in_the_environment(backend: str, closed_port: int, tmp_path: Path) -> None:
    done = _s3_run(backend, closed_port, tmp_path, credentials=False)
    assert_one_line_for_the_user(
        done,
        "s3://zvn-tool-tests/store.zarr/raw: the credentials are missing or refused",
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    )


# ------------------------------------------------------------------- the mapping, in-process


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        (errno.ENOSPC, "free some space there"),
        (errno.EDQUOT, "free some space there"),
        (errno.EROFS, "copy the store to a writable place"),
        (errno.EACCES, "check its permissions"),
        (errno.EPERM, "check its permissions"),
        (errno.ENOENT, "check the path"),
        (errno.ENOTDIR, "check the path"),
        (errno.EIO, "the disk or network file system failed"),
        (errno.EMFILE, "raise the limit (ulimit -n)"),
        (errno.ECONNREFUSED, "check that the server runs"),
        (errno.ETIMEDOUT, "check that the server runs"),
        (errno.EXDEV, "fix what it names"),
    ],
)
def test_every_errno_family_says_what_to_do(code: int, advice: str) -> None:
    failure = OSError(code, os.strerror(code), "/data/s.zarr/zarr.json")
    wrapped = RuntimeError("zarr failed")  # the failure is found anywhere in the chain
    wrapped.__cause__ = failure
    for exc in (failure, wrapped):
        line = explain(exc, "/data/s.zarr")
        assert line is not None and advice in line, line
        assert os.strerror(code) in line and "\n" not in line
        if code not in (errno.ECONNREFUSED, errno.ETIMEDOUT):
            named = f"/data/s.zarr/zarr.json: {os.strerror(code)} ({errno.errorcode[code]})"
            assert line.startswith(named), line


def test_what_is_not_the_environment_is_not_explained() -> None:
    assert explain(KeyError("k"), "p") is None
    assert explain(ValueError("bad chunk"), "p") is None
    assert environment_failure(Refused("no")) is None


def test_a_url_gets_its_backends_variables() -> None:
    assert "AWS_PROFILE" in (settings("s3://b/k", "fsspec") or "")
    assert "AWS_ALLOW_HTTP" in (settings("s3://b/k", "obstore") or "")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in (settings("gs://b/k", "fsspec") or "")
    assert "AZURE_STORAGE_ACCOUNT_KEY" in (settings("abfs://c/k", "obstore") or "")
    assert settings("/data/s.zarr", "fsspec") is None
    assert settings("memory://x", "fsspec") is None
    denied = PermissionError(errno.EACCES, "Access Denied")
    line = explain(denied, "s3://b/k", settings("s3://b/k", "fsspec"))
    assert line is not None and line.startswith("s3://b/k: access denied (Access Denied)")
    assert "AWS_ACCESS_KEY_ID" in line


class _FailingReads(zarr.storage.WrapperStore[Any]):
    """A store whose chunk reads fail as a dropped connection does."""

    async def get(self, key: str, *args: Any, **kwargs: Any) -> Any:
        if "/c/" in f"/{key}":
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        return await super().get(key, *args, **kwargs)

    async def get_partial_values(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


@pytest.mark.parametrize("operation", ["info", "verify"])
def test_a_failed_read_is_the_stores_not_a_corrupt_chunk(tmp_path: Path, operation: str) -> None:
    from zarr_ndarray_dtype import NDArrayDType

    store = zarr.storage.LocalStore(tmp_path)
    arr = zarr.create_array(
        store,
        name="v",
        shape=(4,),
        chunks=(2,),
        dtype=NDArrayDType(dtype="float32", shape=(None, 2)),
    )
    cells = np.empty(4, dtype=object)
    cells[:] = cells_f32x2(4)
    arr[:] = cells
    with pytest.raises(ConnectionResetError) as info:
        getattr(api, operation)(_FailingReads(store), path="v")
    line = explain(info.value, "remote")
    assert line is not None and line.startswith("remote: cannot connect to the store")


def test_counts_of_one_are_singular() -> None:
    assert [counted(n, "cell") for n in (0, 1, 2)] == ["0 cells", "1 cell", "2 cells"]
