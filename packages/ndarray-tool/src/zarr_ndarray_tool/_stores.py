"""Store access for the tool: where an array lives, its ``zarr.json``, its chunk objects.

Three kinds of location are supported:

- a directory store: ``PATH`` is the array's directory (``store/group/array`` for an array
  inside a group; ``file://`` URLs are read as paths);
- a zip store (zarr's ``ZipStore`` layout): ``FILE.zip`` when the array is the root node,
  ``FILE.zip::group/array`` for an array inside it;
- any zarr store: a URL zarr understands (``s3://bucket/store.zarr/array``, ``gs://``, ``az://``,
  ``memory://``), opened by :mod:`._remote`, or a ``zarr.abc.store.Store`` given to the Python API
  with the array's path inside it. Writes are one PUT per key, conditional where the store
  allows (see :mod:`._remote`).

Local rewrites are atomic: the new ``zarr.json`` (or, for a zip store, the new archive) is
written to a temporary file in the same directory and moved over the original with
``os.replace``; on any error the temporary file is removed and the original is untouched. A
zip rewrite copies every other member with its original name, timestamps, attributes,
compression method and content.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse
from urllib.request import url2pathname

from zarr_ndarray_dtype.grid import Grid
from zarr_ndarray_tool._compat import chunk_key_encoding, close_store, open_zip_store_read
from zarr_ndarray_tool._local import atomic_replace
from zarr_ndarray_tool._metadata import element_type
from zarr_ndarray_tool._remote import (
    Version,
    delete_key,
    is_empty,
    list_sizes,
    open_url,
    put_key,
    read_key,
)
from zarr_ndarray_tool.errors import Refused

if TYPE_CHECKING:
    from zarr.storage import StoreLike

__all__ = [
    "ChunkObject",
    "Grid",
    "Location",
    "chunk_objects",
    "delete_keys",
    "grid_of",
    "in_store",
    "apply_changes",
    "key_encoding",
    "listing",
    "locate",
    "location",
    "open_array",
    "parse_chunk_key",
    "read_document",
    "read_versioned",
    "store_label",
    "write_document",
    "write_key",
]

ZARR_JSON = "zarr.json"
# zarr warns on every open that variable_length_bytes (all releases) and the vlen-bytes codec
# (zarr 3.1.0) have no Zarr v3 specification; the tool reads such arrays on purpose.
_UNSPECIFIED_WARNINGS = (
    r".*does not have a Zarr V3 specification",
    r".*is currently not part in the Zarr format 3 specification",
)
ZIP_SEPARATOR = "::"


@dataclass(frozen=True)
class Location:
    """An array node: a directory, a member prefix inside a zip file, or a path in a store."""

    kind: Literal["dir", "zip", "store"]
    root: Path  # the array directory or the zip file (for "store": Path(label), unused)
    inner: str  # the node's path inside the zip file or store ("" for the root node)
    store: Any = field(default=None, compare=False)  # the zarr store (kind "store")
    label: str = ""  # how messages name a store location (its URL)

    def key(self, name: str) -> str:
        """The full key of ``name`` (relative to the node) in the zip file or store."""
        return f"{self.inner}/{name}" if self.inner else name

    @property
    def meta_key(self) -> str:
        return self.key(ZARR_JSON)

    @property
    def name(self) -> str:
        """The array's node name (the last path component), for column names."""
        if self.kind == "zip":
            return PurePosixPath(self.inner).name or self.root.stem
        if self.kind == "store":
            return PurePosixPath(self.inner).name or PurePosixPath(self.label.rstrip("/")).name
        return self.root.name

    def child(self, path: str) -> Location:
        """The node at ``path`` below this one."""
        if not path:
            return self
        if self.kind == "dir":
            return Location("dir", self.root / path, "")
        return Location(self.kind, self.root, self.key(path), self.store, self.label)

    def __str__(self) -> str:
        if self.kind == "store":
            return f"{self.label}/{self.inner}" if self.inner else self.label
        if self.kind == "zip" and self.inner:
            return f"{self.root}{ZIP_SEPARATOR}{self.inner}"
        return str(self.root)


def in_store(store: Any, path: str = "", label: str | None = None) -> Location:
    """The node at ``path`` inside a ``zarr.abc.store.Store``; messages name it by ``label``
    (default: the store's path or URL)."""
    name = label if label is not None else store_label(store)
    return Location("store", Path(name), path.strip("/"), store, name)


def store_label(store: Any) -> str:
    """How messages name a store: a local or zip store's path, an fsspec store's URL, else
    zarr's own name for it (its first line)."""
    from zarr.storage import FsspecStore, LocalStore, ZipStore

    if isinstance(store, LocalStore):
        return str(store.root)
    if isinstance(store, ZipStore):
        return str(store.path)
    if isinstance(store, FsspecStore):
        return str(store.fs.unstrip_protocol(store.path))
    text = str(store).strip()
    return text.splitlines()[0] if text else type(store).__name__


def location(
    store: StoreLike,
    path: str = "",
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Location:
    """The node at ``path`` in anything zarr takes as a store (``zarr.storage.StoreLike``): a
    path or URL as the command line takes it (:func:`locate`, ``storage_options`` and
    ``backend`` for a URL), a ``Store``, a ``StorePath``, an ``FSMap`` or a dict of buffers."""
    from zarr.abc.store import Store
    from zarr.storage import FsspecStore, LocalStore, MemoryStore, StorePath

    if isinstance(store, LocalStore) and not store.read_only:
        store = store.root  # its directory, as the CLI takes it (zarr would create it on open)
    if isinstance(store, str | os.PathLike):
        return locate(os.fspath(store), storage_options, backend).child(path.strip("/"))
    if storage_options:
        raise Refused("storage_options apply to a URL only; pass them when opening the store.")
    if isinstance(store, StorePath):
        inner = "/".join(p for p in (store.path.strip("/"), path.strip("/")) if p)
        return in_store(store.store, inner)
    if isinstance(store, dict):
        return in_store(MemoryStore(store), path)
    if not isinstance(store, Store):
        fsspec_mapping = sys.modules.get("fsspec.mapping")
        if fsspec_mapping is None or not isinstance(store, fsspec_mapping.FSMap):
            raise Refused(
                f"got {type(store).__name__} {_short(store)}; give a path or URL, a zarr store "
                "(zarr.storage.LocalStore(...), FsspecStore, ObjectStore, ...) or a StorePath."
            )
        store = FsspecStore.from_mapper(store, read_only=store.readonly)
    return in_store(store, path)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def locate(
    path: str, storage_options: dict[str, Any] | None = None, backend: str = "fsspec"
) -> Location:
    """Resolve a command-line ``PATH`` or URL; :class:`Refused` if nothing usable is there."""
    if path.startswith("file://"):
        url = urlparse(path)
        if url.netloc not in ("", "localhost"):
            raise Refused(f"{path}: a file:// URL names a local path (file:///path/to/array).")
        path = url2pathname(url.path)
    elif "://" in path:
        return in_store(open_url(path, storage_options or {}, backend), "", path.rstrip("/"))
    if storage_options:
        raise Refused(f"{path}: --storage-options apply to URLs only (s3://..., gs://...).")
    if ZIP_SEPARATOR in path:
        file, inner = path.split(ZIP_SEPARATOR, 1)
        zpath = Path(file)
        if not zpath.is_file() or not zipfile.is_zipfile(zpath):
            raise Refused(f"{file}: not a zip file (PATH{ZIP_SEPARATOR}inner names a zip store).")
        return Location("zip", zpath, inner.strip("/"))
    p = Path(path)
    if p.is_dir():
        return Location("dir", p, "")
    if p.is_file():
        if zipfile.is_zipfile(p):
            return Location("zip", p, "")
        raise Refused(f"{path} is a file but not a zip store; give a store directory or a .zip.")
    raise Refused(f"{path} does not exist.")


def listing(loc: Location) -> list[str]:
    """Every key below the node, relative to it (posix separators)."""
    if loc.kind == "store":
        return list(list_sizes(loc.store, loc.inner))
    if loc.kind == "zip":
        prefix = f"{loc.inner}/" if loc.inner else ""
        with zipfile.ZipFile(loc.root) as zf:
            names = dict.fromkeys(zf.namelist())
        return [n[len(prefix) :] for n in names if n.startswith(prefix) and not n.endswith("/")]
    out: list[str] = []
    for dirpath, _dirs, files in os.walk(loc.root):
        rel = Path(dirpath).relative_to(loc.root)
        out.extend((rel / f).as_posix() for f in files)
    return out


def _read_key(loc: Location, key: str) -> bytes | None:
    if loc.kind == "store":
        return read_key(loc.store, loc.key(key)).data
    if loc.kind == "zip":
        member = f"{loc.inner}/{key}" if loc.inner else key
        with zipfile.ZipFile(loc.root) as zf:
            try:
                return zf.read(member)  # the last entry of that name, as readers see it
            except KeyError:
                return None
    file = loc.root / key
    return file.read_bytes() if file.is_file() else None


def _is_empty(loc: Location) -> bool:
    """Nothing is at the node: no directory there, no key below it in a zip file or store."""
    if loc.kind == "store":
        return is_empty(loc.store, loc.inner)
    if loc.kind == "zip":
        prefix = f"{loc.inner}/" if loc.inner else ""
        with zipfile.ZipFile(loc.root) as zf:
            return not any(n.startswith(prefix) for n in zf.namelist())
    return not loc.root.exists()


def _arrays_below(loc: Location, limit: int = 8) -> list[str]:
    found = []
    for rel in sorted(listing(loc)):
        if rel.endswith(f"/{ZARR_JSON}"):
            raw = _read_key(loc, rel)
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                if raw is not None and json.loads(raw).get("node_type") == "array":
                    found.append(rel[: -len(ZARR_JSON) - 1])
        if len(found) >= limit:
            break
    return found


def read_document(loc: Location, read: Version | None = None) -> tuple[Any, str]:
    """The parsed ``zarr.json`` of the node and its text; :class:`Refused` if there is none.

    ``read`` is the document as :func:`read_versioned` already read it (else it is read here).
    """
    raw = (read if read is not None else read_versioned(loc)).data
    if raw is None:
        for v2 in (".zarray", ".zgroup"):
            if _read_key(loc, v2) is not None:
                raise Refused(
                    f"{loc}: found {v2} but no zarr.json: this is a Zarr v2 node; this command "
                    "handles Zarr v3 arrays only (the ndarray data type is not defined for v2; "
                    "`upgrade` turns a v2 VLenArray or VLenBytes array into a v3 one)."
                )
        if _is_empty(loc):
            raise Refused(f"{loc} does not exist (nothing is stored there).")
        raise Refused(f"{loc}: no zarr.json there, so it is not a Zarr v3 array.")
    try:
        text = raw.decode("utf-8")
        meta = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(f"{loc}: zarr.json is not valid JSON ({exc}).") from exc
    if isinstance(meta, dict) and meta.get("node_type") == "group":
        arrays = _arrays_below(loc)
        sep = ZIP_SEPARATOR if loc.kind == "zip" else "/"
        hint = (
            "arrays inside: " + ", ".join(f"{loc}{sep}{a}" for a in arrays)
            if arrays
            else "it holds no arrays"
        )
        raise Refused(f"{loc} is a Zarr group, not an array; name an array inside it ({hint}).")
    return meta, text


# ------------------------------------------------------------------------------ rewriting


def read_versioned(loc: Location, name: str = ZARR_JSON) -> Version:
    """The content of ``name`` (relative to the node) and its version, for :func:`write_key`."""
    if loc.kind == "store":
        return read_key(loc.store, loc.key(name))
    return Version(_read_key(loc, name))


def write_key(loc: Location, name: str, data: bytes, expect: Version | None = None) -> None:
    """Write ``name`` (relative to the node); with ``expect``, only if it still holds that.

    A directory key is replaced atomically, a zip store rewritten atomically (see the module
    docstring); a store key is one PUT, conditional where the store allows (:mod:`._remote`).
    Refused (nothing written) when ``expect`` no longer matches.
    """
    if loc.kind == "store":
        put_key(loc.store, loc.key(name), data, expect or read_key(loc.store, loc.key(name)))
        return
    if expect is not None and _read_key(loc, name) != expect.data:
        raise Refused(f"{loc}: {name} changed while this command ran; nothing written.")
    if loc.kind == "dir":
        atomic_replace(loc.root / name, lambda fh: fh.write(data))
    else:
        atomic_replace(loc.root, lambda fh: _rewrite_zip(loc, {loc.key(name): data}, fh))


def delete_keys(loc: Location, names: list[str]) -> None:
    """Delete ``names`` (relative to the node); absent ones are fine."""
    if loc.kind == "store":
        for name in names:
            delete_key(loc.store, loc.key(name))
    elif loc.kind == "dir":
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                (loc.root / name).unlink()
    else:
        changes: dict[str, bytes | None] = {loc.key(n): None for n in names}
        atomic_replace(loc.root, lambda fh: _rewrite_zip(loc, changes, fh))


def apply_changes(loc: Location, changes: dict[str, bytes | None]) -> None:
    """Write (bytes) or delete (None) keys relative to the node, in order: a zip store in one
    atomic rewrite, a directory or another store key by key (each new key only if absent;
    :class:`Refused` when one exists)."""
    if loc.kind == "zip":
        keyed = {loc.key(name): data for name, data in changes.items()}
        atomic_replace(loc.root, lambda fh: _rewrite_zip(loc, keyed, fh))
        return
    for name, data in changes.items():
        if data is None:
            delete_keys(loc, [name])
        else:
            write_key(loc, name, data, Version(None))


def write_document(loc: Location, text: str) -> None:
    """Replace the node's ``zarr.json`` with ``text`` (unconditionally; see :func:`write_key`)."""
    write_key(loc, ZARR_JSON, text.encode("utf-8"))


def _rewrite_zip(loc: Location, changes: dict[str, bytes | None], out: Any) -> None:
    """Copy the archive into ``out`` with ``changes`` applied (member -> new bytes or None).

    A changed member replaces the last entry of that name (earlier, shadowed entries are
    dropped) or is appended; None drops every entry of the name. Every other member is copied
    with its name, timestamps, attributes, compression method and content.
    """
    with zipfile.ZipFile(loc.root) as src, zipfile.ZipFile(out, "w") as dst:
        infos = src.infolist()
        last = {info.filename: i for i, info in enumerate(infos)}
        dst.comment = src.comment
        with warnings.catch_warnings():
            # Archives zarr appended to can hold duplicate names; they are copied as they are.
            warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
            for i, info in enumerate(infos):
                if info.filename not in changes:
                    dst.writestr(_copy_info(info), src.read(info))
                    continue
                data = changes[info.filename]
                if data is not None and i == last[info.filename]:
                    new = _copy_info(info)
                    new.date_time = time.localtime()[:6]
                    dst.writestr(new, data)
            for name, data in changes.items():
                if data is not None and name not in last:
                    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
                    info.compress_type = zipfile.ZIP_STORED
                    dst.writestr(info, data)


def _copy_info(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    new = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    new.compress_type = info.compress_type
    new.comment = info.comment
    new.extra = info.extra
    new.create_system = info.create_system
    new.external_attr = info.external_attr
    new.internal_attr = info.internal_attr
    return new


# ------------------------------------------------------------------------------ chunks


def grid_of(meta: dict[str, Any], where: str) -> Grid:
    """The array's regular chunk grid; :class:`Refused` naming what is wrong with it."""
    grid = meta.get("chunk_grid")
    shape = meta.get("shape")
    config = grid.get("configuration") if isinstance(grid, dict) else None
    chunks = config.get("chunk_shape") if isinstance(config, dict) else None
    if not (isinstance(shape, list) and all(_is_int(s, 0) for s in shape)):
        raise Refused(f"{where}: zarr.json's shape {json.dumps(shape)} is not a list of sizes.")
    if grid is None:
        raise Refused(f"{where}: zarr.json has no chunk_grid; an array needs one.")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        raise Refused(
            f"{where}: chunk_grid {json.dumps(grid)}; this tool reads regular chunk grids only."
        )
    if not (isinstance(chunks, list) and all(_is_int(c, 1) for c in chunks)):
        raise Refused(
            f"{where}: the regular chunk_grid's chunk_shape {json.dumps(chunks)} is not a list "
            "of positive integers."
        )
    if len(chunks) != len(shape):
        raise Refused(
            f"{where}: the shape {json.dumps(shape)} has {len(shape)} dimensions but the "
            f"chunk_shape {json.dumps(chunks)} has {len(chunks)}; zarr.json contradicts itself."
        )
    return Grid(tuple(shape), tuple(chunks))


def _is_int(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def key_encoding(meta: dict[str, Any], where: str) -> Any:
    """zarr's chunk key encoding of the array (the one home of key rules)."""
    enc = meta.get("chunk_key_encoding", {"name": "default"})
    try:
        return chunk_key_encoding(enc)
    except (ValueError, TypeError, KeyError) as exc:
        raise Refused(
            f"{where}: chunk_key_encoding {json.dumps(enc)} is not one zarr knows ({exc})."
        ) from exc


def parse_chunk_key(key: str, encoding: Any, grid: Grid) -> tuple[int, ...] | None:
    """The chunk index a key (relative to the array) names, or None if it names no chunk: an
    index inside the grid for which zarr's encoding gives exactly this key back."""
    if not grid.shape:  # the one chunk of a 0-d array
        return () if key == encoding.encode_chunk_key(()) else None
    parts = key.split(encoding.separator)
    if len(parts) == len(grid.shape) + 1 and parts[0] == "c":  # the default encoding's prefix
        parts = parts[1:]
    if len(parts) != len(grid.shape) or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    index = tuple(int(p) for p in parts)
    if encoding.encode_chunk_key(index) != key:
        return None
    if any(i >= n for i, n in zip(index, grid.grid_shape, strict=True)):
        return None
    return index


@dataclass(frozen=True)
class ChunkObject:
    """One stored chunk (or shard) object."""

    key: str  # relative to the array node
    index: tuple[int, ...]
    nbytes: int  # the stored object's size


def chunk_objects(loc: Location, meta: dict[str, Any], grid: Grid) -> list[ChunkObject]:
    """Every stored chunk object of the array, in C order of the chunk grid."""
    sizes: dict[str, int] = {}
    if loc.kind == "store":
        sizes = list_sizes(loc.store, loc.inner)
    elif loc.kind == "zip":
        prefix = f"{loc.inner}/" if loc.inner else ""
        with zipfile.ZipFile(loc.root) as zf:
            for info in zf.infolist():  # a later duplicate entry shadows an earlier one
                if info.filename.startswith(prefix):
                    sizes[info.filename[len(prefix) :]] = info.file_size
    else:
        for rel in listing(loc):
            sizes[rel] = (loc.root / rel).stat().st_size
    found = []
    encoding = key_encoding(meta, str(loc))
    for key, size in sizes.items():
        index = parse_chunk_key(key, encoding, grid)
        if index is not None:
            found.append(ChunkObject(key, index, size))
    found.sort(key=lambda c: c.index)
    return found


# ------------------------------------------------------------------------------ zarr glue


@contextlib.contextmanager
def open_array(loc: Location, meta: dict[str, Any]) -> Iterator[Any]:
    """A read-only zarr array over the node's chunks, described by ``meta`` (not zarr.json).

    Reading through a different document than the stored one is how the tool reads an
    ``ndarray`` store's chunks as raw bytes, or checks a candidate upgrade before writing it.
    """
    from zarr import Array
    from zarr.core.array import AsyncArray
    from zarr.storage import LocalStore, StorePath

    element_type(meta, str(loc))  # an ndarray type zarr cannot resolve, named by its rule
    store: Any
    if loc.kind == "store":
        store = loc.store
    elif loc.kind == "zip":
        store = open_zip_store_read(loc.root)
    else:
        store = LocalStore(loc.root, read_only=True)
    try:
        with warnings.catch_warnings():
            for message in _UNSPECIFIED_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            try:
                async_array = AsyncArray(meta, StorePath(store, loc.inner))  # type: ignore[call-overload]
            except (ValueError, TypeError, KeyError) as exc:
                raise Refused(f"{loc}: zarr cannot read this array's metadata: {exc}") from exc
            yield Array(async_array)
    finally:
        if store is not loc.store:  # the tool closes only stores it opened here
            close_store(store)
