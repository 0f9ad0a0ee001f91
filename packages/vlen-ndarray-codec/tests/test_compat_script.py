"""The 0.2.0 compatibility driver (tests/compat/compat_020.py) run against this package alone.

The nox session ``compat020`` runs it across implementations; here it writes and checks with
ours, which keeps the script itself exercised at the ends of the test matrix (the slow tier).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "compat" / "compat_020.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "ignore", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.slow
def test_write_then_check(tmp_path: Path) -> None:
    written = _run("write", str(tmp_path / "store"))
    assert written.returncode == 0, written.stdout + written.stderr
    checked = _run("check", str(tmp_path / "store"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "cases passed" in checked.stdout


@pytest.mark.slow
def test_check_detects_a_corrupt_chunk(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _run("write", str(store)).returncode == 0
    chunk = store / "u64_rank2" / "c" / "0" / "0"
    blob = bytearray(chunk.read_bytes())
    blob[-1] ^= 0xFF
    chunk.write_bytes(bytes(blob))
    checked = _run("check", str(store))
    assert checked.returncode == 1
    assert "FAIL u64_rank2" in checked.stdout


@pytest.mark.slow
def test_usage() -> None:
    result = _run("frobnicate")
    assert result.returncode == 2
