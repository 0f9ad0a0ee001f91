"""Where a node lives, read through zarr's stores; the tool writes itself only what zarr's
stores cannot, a local file or a zip archive replaced atomically. Elsewhere a rewrite compares
each key with what was read, then sets it: one writer at a time."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import operator
import os
import reprlib
import secrets
import time
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, NamedTuple, TypedDict, TypeVar, Unpack
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
import zarr
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.storage import FsspecStore, LocalStore, MemoryStore, StoreLike, StorePath, ZipStore

from zarr_ndarray_tool import _compat
from zarr_ndarray_tool._compat import sync
from zarr_ndarray_tool._documents import Grid, check_array_document, element_type, grid_of
from zarr_ndarray_tool.errors import Refused

T = TypeVar("T")
ZARR_JSON, ZIP_SEPARATOR, BACKENDS = "zarr.json", "::", ("fsspec", "obstore")


@dataclasses.dataclass(frozen=True)
class Location:
    """A node: the path ``inner`` in ``store``, named ``label`` in messages. A directory or zip
    file opened from a path is written by the tool itself, atomically."""

    store: Any = dataclasses.field(compare=False)
    inner: str
    label: str
    directory: Path | None = None
    zip_file: Path | None = None

    def key(self, name: str) -> str:
        return f"{self.inner}/{name}" if self.inner else name

    def child(self, path: str) -> Location:
        return dataclasses.replace(self, inner=self.key(path)) if path else self

    def read(self, name: str = ZARR_JSON) -> bytes | None:
        """The content of the key ``name`` below the node, None if absent."""
        buf = sync(self.store.get(self.key(name), prototype=default_buffer_prototype()))
        return None if buf is None else bytes(buf.to_bytes())

    @property
    def name(self) -> str:
        """The node's name, for column names: its last path component without a suffix."""
        return PurePosixPath(self.inner or self.label.rstrip("/")).stem

    def __str__(self) -> str:
        separator = ZIP_SEPARATOR if self.zip_file is not None else "/"
        return f"{self.label}{separator}{self.inner}" if self.inner else self.label


class Where(TypedDict, total=False):
    """Where the node is, besides the store: ``path`` inside it (default its root); for a URL,
    ``storage_options`` for its ``backend``, ``"fsspec"`` (default) or ``"obstore"``."""

    path: str
    storage_options: dict[str, Any] | None
    backend: str


def location(store: StoreLike, **where: Unpack[Where]) -> Location:
    """The node in a path or URL (as the command line takes it), a zarr Store, StorePath or dict,
    named in messages by its path or URL where it has one."""
    path, options = where.get("path", ""), where.get("storage_options")
    if isinstance(store, LocalStore) and not store.read_only:
        store = store.root  # its directory, as the CLI takes it (zarr would create it on open)
    if isinstance(store, str | os.PathLike):
        backend = where.get("backend", "fsspec")
        return _locate(os.fspath(store), options, backend).child(path.strip("/"))
    if options:
        raise Refused("storage_options apply to a URL only; pass them when opening the store.")
    if isinstance(store, StorePath):
        path, store = f"{store.path.strip('/')}/{path}", store.store
    elif isinstance(store, dict):
        store = MemoryStore(store)
    elif not isinstance(store, Store):
        raise Refused(
            f"got {type(store).__name__} {reprlib.repr(store)}; give a path or URL, a zarr store "
            "(zarr.storage.LocalStore(...), FsspecStore, ...) or a StorePath."
        )
    label = (str(store).strip() or type(store).__name__).splitlines()[0]
    if isinstance(store, LocalStore | ZipStore):
        label = str(store.root if isinstance(store, LocalStore) else store.path)
    elif isinstance(store, FsspecStore):
        label = str(store.fs.unstrip_protocol(store.path))
    return Location(store, path.strip("/"), label)


def _locate(path: str, options: dict[str, Any] | None, backend: str) -> Location:
    """Resolve a command-line ``PATH`` or URL; :class:`Refused` if nothing usable is there."""
    if path.startswith("file://"):
        if (url := urlparse(path)).netloc not in ("", "localhost"):
            raise Refused(f"{path}: a file:// URL names a local path (file:///path/to/array).")
        path = url2pathname(url.path)
    elif "://" in path:
        try:
            if backend == "obstore":
                import obstore.store

                found = obstore.store.from_url(path, **(options or {}))
                store: Store = zarr.storage.ObjectStore(found, read_only=False)
            else:
                store = FsspecStore.from_url(path, storage_options=options or None, read_only=False)
        except ImportError as exc:
            package = "obstore" if backend == "obstore" else "fsspec and its file system for it"
            raise Refused(f"{path}: opening it needs {package} ({exc}); pip install it.") from exc
        except (ValueError, TypeError, KeyError) as exc:
            what = f"{type(exc).__name__}: {exc}"
            raise Refused(f"{path}: cannot open it as a zarr store ({what}).") from exc
        return Location(store, "", path.rstrip("/"))
    if options:
        raise Refused(f"{path}: --storage-options apply to URLs only (s3://..., gs://...).")
    file, _, inner = path.partition(ZIP_SEPARATOR)
    if (p := Path(file)).is_file() and zipfile.is_zipfile(p):
        return Location(_compat.open_zip_store_read(p), inner.strip("/"), str(p), zip_file=p)
    if ZIP_SEPARATOR in path:
        raise Refused(f"{file}: not a zip file (PATH{ZIP_SEPARATOR}inner names a zip store).")
    if p.is_dir():
        return Location(LocalStore(p, read_only=True), "", str(p), directory=p)
    if p.is_file():
        raise Refused(f"{path} is a file but not a zip store; give a store directory or a .zip.")
    raise Refused(f"{path} does not exist.")


def list_sizes(loc: Location) -> dict[str, int]:
    """Every key below the node (relative to it) with its size in bytes."""
    store, base = loc.store, f"{loc.inner}/" if loc.inner else ""
    if isinstance(store, ZipStore) and store.read_only and isinstance(store.path, Path):
        with zipfile.ZipFile(store.path) as zf:  # zarr's ZipStore would read every member whole
            sizes = {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}
    else:

        async def collect() -> dict[str, int]:
            keys = list(dict.fromkeys([k async for k in store.list_prefix(base)]))
            found = await asyncio.gather(*map(store.getsize, keys))
            return dict(zip(keys, map(int, found), strict=True))

        sizes = sync(collect())
    return {k[len(base) :]: n for k, n in sizes.items() if k.startswith(base)}


def read_document(loc: Location) -> tuple[Any, str]:
    """The node's parsed ``zarr.json`` and its text; Refused if there is none."""
    if (raw := loc.read()) is None:
        for v2 in (".zarray", ".zgroup"):
            if loc.read(v2) is not None:
                raise Refused(
                    f"{loc}: found {v2} but no zarr.json, a Zarr v2 node; the ndarray data type is "
                    "Zarr v3 only (`upgrade` turns a v2 VLenArray or VLenBytes array into v3)."
                )
        if loc.directory is not None:  # an empty directory is still there
            empty = not (loc.directory / loc.inner).exists()
        else:
            empty = bool(sync(loc.store.is_empty(loc.inner)))
        if empty:
            raise Refused(f"{loc} does not exist (nothing is stored there).")
        raise Refused(f"{loc}: no zarr.json there, so it is not a Zarr v3 array.")
    try:
        return json.loads(text := raw.decode("utf-8")), text
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(f"{loc}: zarr.json is not valid JSON ({exc}).") from exc


def write(loc: Location, changes: Mapping[str, bytes | None], expect: Mapping[str, Any]) -> None:
    """Write (bytes) or delete (None) keys below the node if every key of ``expect`` still holds
    those bytes (None: absent), else :class:`Refused`. Key by key, undone on any failure, but a
    directory's files and a zip file are replaced atomically (a zip file in one rewrite)."""
    for name, data in expect.items():
        if loc.read(name) != data:
            raise Refused(f"{loc}: {name} changed while this command ran; nothing written.")
    if loc.zip_file is not None:  # zarr's ZipStore can neither replace nor delete a member
        _compat.close_store(loc.store)  # reads after the rewrite must not see the old archive
        return _rewrite_zip(loc.zip_file, {loc.key(k): v for k, v in changes.items()})
    if None in changes.values() and not getattr(loc.store, "supports_deletes", True):
        raise Refused(
            f"{loc}: this {type(loc.store).__name__} cannot delete keys, as a Zarr v2 <-> v3 "
            "switch needs; for a zip store run the CLI on the file (FILE.zip::path) to rewrite it."
        )
    if loc.directory is None and getattr(loc.store, "read_only", False):
        what = "the store is read-only (open it with read_only=False)"
        raise Refused(f"{loc}: {what}; nothing written.")
    done: list[str] = []
    try:
        for name, data in sorted(changes.items(), key=lambda c: c[1] is None):  # writes first
            key = loc.key(name)
            if loc.directory is not None and data is None:
                (loc.directory / key).unlink(missing_ok=True)
            elif loc.directory is not None:  # zarr's LocalStore writes a file in place
                atomic_replace(loc.directory / key, operator.methodcaller("write", data))
            elif data is None:
                sync(loc.store.delete(key))
            else:
                sync(loc.store.set(key, default_buffer_prototype().buffer.from_bytes(data)))
            done += [name] * (expect.get(name, 0) is None)
    except BaseException:
        if done:
            write(loc, dict.fromkeys(done[::-1]), {})
        raise


# What only a write can fail with: an OSError without a file name and one of these errnos came
# from writing the temporary file (the errors of ``fill``'s reads keep their own).
_WRITING = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def atomic_replace(target: Path, fill: Callable[[BinaryIO], T]) -> T:
    """Create or replace ``target`` (keeping its mode) with what ``fill(file)`` writes, through a
    temporary file removed on any failure or interrupt; returns what ``fill`` returns. A failure
    to write is raised naming ``target``, the file the user asked for."""
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        try:  # the open too: an interrupt can come as it returns
            with os.fdopen(os.open(tmp, flags, 0o666), "wb") as fh:
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


def _rewrite_zip(path: Path, changes: dict[str, bytes | None]) -> None:
    """Rewrite the zip file ``path`` with ``changes`` (member -> bytes, None: removed): a changed
    member replaces the last entry of its name or is appended; the others are copied as they are."""
    fields = "compress_type comment extra create_system external_attr internal_attr"

    def copy(out: BinaryIO) -> None:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
            infos, now = src.infolist(), time.localtime()[:6]
            last = {info.filename: i for i, info in enumerate(infos)}
            dst.comment = src.comment
            for i, info in enumerate(infos):
                name, data = info.filename, changes.get(info.filename, b"")
                if name not in changes or (data is not None and i == last[name]):
                    new = zipfile.ZipInfo(name, now if name in changes else info.date_time)
                    for field in fields.split():
                        setattr(new, field, getattr(info, field))
                    with warnings.catch_warnings():  # archives zarr appended to hold duplicates
                        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
                        dst.writestr(new, data if name in changes else src.read(info))  # type: ignore[arg-type]
            for name, data in changes.items():
                if data is not None and name not in last:
                    dst.writestr(zipfile.ZipInfo(name, now), data)

    atomic_replace(path, copy)


@dataclasses.dataclass(frozen=True)
class ChunkObject:
    """One stored chunk (or shard) object: its key relative to the array, index and size."""

    key: str
    index: tuple[int, ...]
    nbytes: int


def chunk_objects(loc: Location, meta: dict[str, Any], grid: Grid) -> list[ChunkObject]:
    """Every stored chunk object of the array (a key of a chunk of the grid), in C order; the
    keys are those of zarr's chunk key encoding (the one home of key rules)."""
    try:
        encoding = _compat.chunk_key_encoding(meta.get("chunk_key_encoding", {"name": "default"}))
    except (ValueError, TypeError, KeyError) as exc:
        text = f"chunk_key_encoding {json.dumps(meta.get('chunk_key_encoding'))}"
        raise Refused(f"{loc}: {text} is not one zarr knows ({exc}).") from exc
    sizes = list_sizes(loc)
    keys = ((encoding.encode_chunk_key(index), index) for index in np.ndindex(grid.grid_shape))
    return [ChunkObject(key, index, sizes[key]) for key, index in keys if key in sizes]


class Node(NamedTuple):
    """One array: where it is, its document (parsed and as text), grid and stored objects."""

    loc: Location
    meta: dict[str, Any]
    text: str
    grid: Grid
    objects: list[ChunkObject]

    @property
    def where(self) -> str:
        return str(self.loc)


def load_node(loc: Location) -> Node:
    """Read the array at ``loc``; :class:`Refused` if there is none or it is unusable."""
    meta, text = read_document(loc)
    grid = grid_of(check_array_document(meta, str(loc)), str(loc))
    return Node(loc, meta, text, grid, chunk_objects(loc, meta, grid))


def open_array(loc: Location, meta: dict[str, Any], shape: Any = None) -> zarr.Array:
    """A zarr array over the node's chunks described by ``meta`` (not zarr.json: the tool reads
    chunks as raw bytes so, or checks an upgrade it plans), of another ``shape`` if given (the
    grid's padded shape reads edge chunks whole)."""
    element_type(meta, str(loc))  # an ndarray type zarr cannot resolve, named by its rule
    meta = meta if shape is None else {**meta, "shape": list(shape)}
    with warnings.catch_warnings():  # zarr warns that variable_length_bytes (and on 3.1.0
        # vlen-bytes) has no Zarr v3 specification; the tool reads such arrays on purpose
        warnings.filterwarnings("ignore", message=r".*(not have a Zarr V3 spec|part in the Zarr)")
        try:
            array = zarr.AsyncArray(meta, StorePath(loc.store, loc.inner))  # type: ignore[call-overload]
        except (ValueError, TypeError, KeyError) as exc:
            raise Refused(f"{loc}: zarr cannot read this array's metadata: {exc}") from exc
    return zarr.Array(array)
