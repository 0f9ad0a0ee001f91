"""The one way the tool replaces a local file: write a temporary sibling, fsync, rename.

Used for a directory store's ``zarr.json``, a whole zip store and the ``export`` output file. On
any error (or interruption) the temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

__all__ = ["atomic_replace"]

T = TypeVar("T")


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_replace(target: Path, fill: Callable[[BinaryIO], T]) -> T:
    """Create or replace ``target`` with what ``fill(file)`` writes; returns what ``fill`` returns.

    The content is written to a temporary file in ``target``'s directory, flushed and fsynced,
    given ``target``'s permission bits (or the umask's default for a new file), then moved over
    ``target`` with ``os.replace`` (atomic on POSIX and Windows).
    """
    mode = target.stat().st_mode & 0o7777 if target.exists() else _default_mode()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            result = fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return result
