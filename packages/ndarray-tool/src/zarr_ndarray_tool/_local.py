"""The one way the tool replaces a local file: write a temporary sibling, fsync, rename.

Used for a directory store's ``zarr.json``, a whole zip store and the ``export`` output file. On
any error (or interruption) the temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

__all__ = ["atomic_replace"]

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
