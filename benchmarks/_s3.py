"""An S3-compatible server (moto) on 127.0.0.1 for the benchmarks, a bucket on it, and the CPU
a call takes in this process and in the server's (:class:`WithCpu`).

``moto_s3(ranges_as_s3=False)`` is moto as it is, whose ranged GET reads the whole object;
``ranges_as_s3=True`` runs ``_moto_ranged.py``, which serves a range at the cost of the range.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CREDENTIALS", "Server", "WithCpu", "bucket", "moto_s3", "one_byte"]

HERE = Path(__file__).resolve().parent
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server(str):
    """A server's endpoint (``http://127.0.0.1:PORT``), with the server's process id."""

    pid: int


@contextmanager
def moto_s3(ranges_as_s3: bool) -> Iterator[Server]:
    """An S3-compatible server (moto) on 127.0.0.1 for the duration; yields its endpoint."""
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    port = _free_port()
    if ranges_as_s3:
        command = [sys.executable, str(HERE / "_moto_ranged.py")]
    else:
        server = shutil.which("moto_server", path=str(Path(sys.executable).parent))
        if server is None:
            raise RuntimeError("moto_server not found: pip install 'moto[server]'")
        command = [server]
    proc = subprocess.Popen(
        [*command, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        endpoint = Server(f"http://127.0.0.1:{port}")
        endpoint.pid = proc.pid
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bucket(endpoint: str, name: str = "bench") -> Any:
    """A new bucket ``name`` on the server at ``endpoint``, as an obstore S3Store."""
    from obstore.store import S3Store

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{name}", method="PUT")).close()
    return S3Store(name, endpoint=endpoint, client_options={"allow_http": True}, **CREDENTIALS)


def one_byte(s3: Any, key: str) -> bytes:
    """A ranged GET of the first byte of ``key`` (on moto as it is: a read of the object)."""
    import obstore

    return bytes(obstore.get_range(s3, key, start=0, length=1))


class WithCpu:
    """``fn`` keeping the CPU seconds of each call, in this process and in the server's (0
    without one): the two share the cores, so a read cannot take less than their sum over the
    cores. Those of the fastest call are reported beside its time."""

    def __init__(self, fn: Any, server: int | None = None) -> None:
        import psutil

        self.fn = fn
        self.processes = [psutil.Process(), psutil.Process(server) if server else None]
        self.seconds: list[list[float]] = []

    def _used(self) -> list[float]:
        return [sum(p.cpu_times()[:2]) if p else 0.0 for p in self.processes]

    def __call__(self) -> Any:
        before = self._used()
        result = self.fn()
        self.seconds.append([b - a for a, b in zip(before, self._used(), strict=True)])
        return result

    def of_fastest(self, times: list[float]) -> list[float]:
        return self.seconds[times.index(min(times))]
