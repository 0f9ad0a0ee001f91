"""The local writes zarr's stores do not make safely: a file replaced atomically, and a zip
archive rewritten atomically with members replaced or removed (zarr's LocalStore writes a file
in place; its ZipStore appends a second member of a name and deletes none).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

T = TypeVar("T")


def atomic_replace(target: Path, fill: Callable[[BinaryIO], T]) -> T:
    """Create or replace ``target`` with what ``fill(file)`` writes; returns what ``fill`` returns.

    The content is written to a temporary file in ``target``'s directory, flushed and fsynced,
    given ``target``'s permission bits (a new file gets the umask's default), then moved over
    ``target`` with ``os.replace`` (atomic on POSIX and Windows). A failure to create or write
    the temporary file (a read-only or full file system, a permission) is raised naming
    ``target``, the file the user asked for.
    """
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    try:
        # O_EXCL: never reuse a file; 0o666 filtered by the process umask, as for any new file.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                result = fill(fh)
                fh.flush()
                os.fsync(fh.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        if exc.filename == os.fspath(tmp) or (exc.filename is None and exc.errno in _WRITING):
            raise OSError(exc.errno, exc.strerror, os.fspath(target)) from exc
        raise
    return result


# What only a write can fail with: an OSError without a file name and one of these errnos came
# from writing the temporary file (the errors of ``fill``'s reads keep their own).
_WRITING = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def rewrite_zip(path: Path, changes: dict[str, bytes | None]) -> None:
    """Rewrite the zip file ``path`` atomically with ``changes`` (member -> new bytes, or None to
    remove every entry of it). A changed member replaces the last entry of its name (earlier,
    shadowed ones are dropped) or is appended; every other member is copied with its name,
    timestamps, attributes, compression method and content."""

    def copy(out: BinaryIO) -> None:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
            infos = src.infolist()
            last = {info.filename: i for i, info in enumerate(infos)}
            dst.comment = src.comment
            with warnings.catch_warnings():
                # Archives zarr appended to can hold duplicate names; they are copied as they are.
                warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
                for i, info in enumerate(infos):
                    data = changes.get(info.filename, b"")
                    if info.filename not in changes:
                        dst.writestr(_copy_info(info), src.read(info))
                    elif data is not None and i == last[info.filename]:
                        new = _copy_info(info)
                        new.date_time = time.localtime()[:6]
                        dst.writestr(new, data)
            for name, data in changes.items():
                if data is not None and name not in last:
                    dst.writestr(zipfile.ZipInfo(name, time.localtime()[:6]), data)

    atomic_replace(path, copy)


def _copy_info(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    new = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    new.compress_type = info.compress_type
    new.comment = info.comment
    new.extra = info.extra
    new.create_system = info.create_system
    new.external_attr = info.external_attr
    new.internal_attr = info.internal_attr
    return new
