"""The one local atomic replace: new files, kept modes, nothing left behind on failure."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import pytest

from zarr_ndarray_tool._local import atomic_replace


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
