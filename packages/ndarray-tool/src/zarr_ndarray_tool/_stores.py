"""Where an array lives, and how the tool reads and writes it: every read through zarr's store
API (a directory is a LocalStore, a zip file a ZipStore, a URL or a caller's store as it is);
writes through zarr, but for what its stores cannot do (:mod:`._local`, :mod:`._remote`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import reprlib
import sys
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from operator import methodcaller
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from zarr_ndarray_dtype.chunks import Grid
from zarr_ndarray_tool import _compat
from zarr_ndarray_tool._local import atomic_replace, rewrite_zip
from zarr_ndarray_tool._metadata import element_type
from zarr_ndarray_tool._remote import Version, delete_key, list_sizes, open_url, put_key, read_key
from zarr_ndarray_tool.errors import Refused

if TYPE_CHECKING:
    from zarr.storage import StoreLike

ZARR_JSON = "zarr.json"
ZIP_SEPARATOR = "::"
# zarr warns on every open that variable_length_bytes (all releases) and the vlen-bytes codec
# (zarr 3.1.0) have no Zarr v3 specification; the tool reads such arrays on purpose.
_UNSPECIFIED_WARNINGS = (
    r".*does not have a Zarr V3 specification",
    r".*is currently not part in the Zarr format 3 specification",
)


@dataclass(frozen=True)
class Location:
    """An array node: the path ``inner`` in ``store``, named by ``label`` in messages. The tool
    writes a directory or zip file it opened from a path itself, atomically."""

    store: Any = dataclasses.field(compare=False)
    inner: str
    label: str
    directory: Path | None = None
    zip_file: Path | None = None

    def key(self, name: str) -> str:
        """The full key in the store of ``name`` (relative to the node)."""
        return f"{self.inner}/{name}" if self.inner else name

    @property
    def name(self) -> str:
        """The node's name (its last path component), for column names."""
        if self.inner or self.zip_file is None:
            return PurePosixPath(self.inner or self.label.rstrip("/")).name
        return self.zip_file.stem

    def child(self, path: str) -> Location:
        """The node at ``path`` below this one."""
        return dataclasses.replace(self, inner=self.key(path)) if path else self

    def __str__(self) -> str:
        separator = ZIP_SEPARATOR if self.zip_file is not None else "/"
        return f"{self.label}{separator}{self.inner}" if self.inner else self.label


def in_store(store: Any, path: str = "", label: str | None = None) -> Location:
    """The node at ``path`` in a zarr store, named ``label``: by default a local or zip store's
    path, an fsspec store's URL, else the first line of zarr's own name for it."""
    from zarr.storage import FsspecStore, LocalStore, ZipStore

    if label is None and isinstance(store, LocalStore | ZipStore):
        label = str(store.root if isinstance(store, LocalStore) else store.path)
    elif label is None and isinstance(store, FsspecStore):
        label = str(store.fs.unstrip_protocol(store.path))
    elif label is None:
        label = (str(store).strip() or type(store).__name__).splitlines()[0]
    return Location(store, path.strip("/"), label)


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
                f"got {type(store).__name__} {reprlib.repr(store)}; give a path or URL, a "
                "zarr store (zarr.storage.LocalStore(...), FsspecStore, ObjectStore, ...) or a "
                "StorePath."
            )
        store = FsspecStore.from_mapper(store, read_only=store.readonly)
    return in_store(store, path)


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
        return _zip(zpath, inner.strip("/"))
    p = Path(path)
    if p.is_dir():
        from zarr.storage import LocalStore

        return Location(LocalStore(p, read_only=True), "", str(p), directory=p)
    if p.is_file():
        if zipfile.is_zipfile(p):
            return _zip(p, "")
        raise Refused(f"{path} is a file but not a zip store; give a store directory or a .zip.")
    raise Refused(f"{path} does not exist.")


def _zip(path: Path, inner: str) -> Location:
    return Location(_compat.open_zip_store_read(path), inner, str(path), zip_file=path)


def listing(loc: Location) -> list[str]:
    """Every key below the node, relative to it."""
    return list(list_sizes(loc.store, loc.inner))


def read_versioned(loc: Location, name: str = ZARR_JSON) -> Version:
    """The content of ``name`` (relative to the node) and its version, for :func:`write_key`."""
    return read_key(loc.store, loc.key(name))


def _is_empty(loc: Location) -> bool:
    if loc.directory is not None:  # an empty directory is still there
        return not (loc.directory / loc.inner).exists()
    return bool(_compat.sync(loc.store.is_empty(loc.inner)))


def _arrays_below(loc: Location, limit: int = 8) -> list[str]:
    found = []
    for rel in sorted(listing(loc)):
        if rel.endswith(f"/{ZARR_JSON}"):
            raw = read_versioned(loc, rel).data
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                if raw is not None and json.loads(raw).get("node_type") == "array":
                    found.append(rel[: -len(ZARR_JSON) - 1])
        if len(found) >= limit:
            break
    return found


def read_document(loc: Location, read: Version | None = None) -> tuple[Any, str]:
    """The parsed ``zarr.json`` of the node (``read`` already, or read here) and its text;
    :class:`Refused` if there is none."""
    raw = (read if read is not None else read_versioned(loc)).data
    if raw is None:
        for v2 in (".zarray", ".zgroup"):
            if read_versioned(loc, v2).data is not None:
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
        sep = ZIP_SEPARATOR if loc.zip_file is not None else "/"
        inside = ", ".join(f"{loc}{sep}{a}" for a in arrays)
        hint = f"arrays inside: {inside}" if arrays else "it holds no arrays"
        raise Refused(f"{loc} is a Zarr group, not an array; name an array inside it ({hint}).")
    return meta, text


# ------------------------------------------------------------------------------ writing


def write_key(loc: Location, name: str, data: bytes, expect: Version | None = None) -> None:
    """Write ``name`` (relative to the node); with ``expect``, only if it still holds that
    (:class:`Refused`, nothing written, otherwise): a local file or zip archive atomically, a
    key of another store in one PUT, conditional where the store allows (:mod:`._remote`)."""
    key = loc.key(name)
    if loc.directory is None and loc.zip_file is None:
        put_key(loc.store, key, data, expect or read_key(loc.store, key))
        return
    if expect is not None and read_key(loc.store, key).data != expect.data:
        raise Refused(f"{loc}: {name} changed while this command ran; nothing written.")
    _write_local(loc, {key: data})


def _write_local(loc: Location, changes: dict[str, bytes | None]) -> None:
    """Write (bytes) or delete (None) keys of a directory or zip file the tool opened."""
    if loc.zip_file is not None:  # zarr's ZipStore can neither replace nor delete a member
        _compat.close_store(loc.store)  # reads after the rewrite must not see the old archive
        rewrite_zip(loc.zip_file, changes)
        return
    assert loc.directory is not None
    for key, data in changes.items():
        if data is None:
            (loc.directory / key).unlink(missing_ok=True)
        else:  # zarr's LocalStore writes a file in place
            atomic_replace(loc.directory / key, methodcaller("write", data))


def _delete(loc: Location, names: list[str]) -> None:
    if loc.directory is None and loc.zip_file is None:
        for name in names:
            delete_key(loc.store, loc.key(name))
    else:
        _write_local(loc, {loc.key(name): None for name in names})


def check_deletes(loc: Location) -> None:
    """Refuse up front where the v2 <-> v3 switch could not delete the other documents."""
    if loc.zip_file is None and not getattr(loc.store, "supports_deletes", True):
        raise Refused(
            f"{loc}: this {type(loc.store).__name__} cannot delete keys, and a Zarr v2 <-> v3 "
            "switch replaces the metadata documents; for a zip store run the CLI on the file "
            "(FILE.zip::path/to/array), which rewrites the archive."
        )


def switch_documents(
    loc: Location, writes: dict[str, bytes], deletes: list[str], unchanged: Mapping[str, Any]
) -> None:
    """Write the new documents ``writes`` (each absent before), then delete ``deletes`` (keys
    relative to the node), provided every key of ``unchanged`` still holds those bytes: a zip
    file in one atomic rewrite, elsewhere key by key, the writes undone on any failure."""
    check_deletes(loc)
    if loc.zip_file is not None:
        _check_unchanged(loc, {**dict.fromkeys(writes), **unchanged}, "nothing written")
        _write_local(loc, {loc.key(k): v for k, v in {**writes, **dict.fromkeys(deletes)}.items()})
        return
    done: list[str] = []
    try:
        for name, data in writes.items():
            write_key(loc, name, data, Version(None))
            done.append(name)
        _check_unchanged(loc, unchanged, "undone")
    except BaseException:
        _delete(loc, done[::-1])
        raise
    _delete(loc, deletes)


def _check_unchanged(loc: Location, unchanged: Mapping[str, Any], outcome: str) -> None:
    for name, data in unchanged.items():
        if read_versioned(loc, name).data != data:
            raise Refused(f"{loc}: {name} changed while this command ran; {outcome}.")


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
        return _compat.chunk_key_encoding(enc)
    except (ValueError, TypeError, KeyError) as exc:
        raise Refused(
            f"{where}: chunk_key_encoding {json.dumps(enc)} is not one zarr knows ({exc})."
        ) from exc


def chunk_index(key: str, encoding: Any, grid: Grid) -> tuple[int, ...] | None:
    """The chunk a key (relative to the array) names: an index inside the grid that zarr's
    encoding reads from it and writes back as exactly this key; None for any other key."""
    if not grid.shape:  # the one chunk of a 0-d array ("c", or "0" that v2 reads as (0,))
        return () if key == encoding.encode_chunk_key(()) else None
    try:
        index = _compat.decode_chunk_key(encoding, key)
    except ValueError:
        return None
    if len(index) != len(grid.shape) or encoding.encode_chunk_key(index) != key:
        return None
    return index if all(0 <= i < n for i, n in zip(index, grid.grid_shape, strict=True)) else None


@dataclass(frozen=True)
class ChunkObject:
    """One stored chunk (or shard) object."""

    key: str  # relative to the array node
    index: tuple[int, ...]
    nbytes: int  # the stored object's size


def chunk_objects(loc: Location, meta: dict[str, Any], grid: Grid) -> list[ChunkObject]:
    """Every stored chunk object of the array, in C order of the chunk grid."""
    encoding = key_encoding(meta, str(loc))
    sizes = list_sizes(loc.store, loc.inner)
    indices = {key: chunk_index(key, encoding, grid) for key in sizes}
    found = [
        ChunkObject(key, index, sizes[key]) for key, index in indices.items() if index is not None
    ]
    return sorted(found, key=lambda c: c.index)


# ------------------------------------------------------------------------------ zarr glue


@contextlib.contextmanager
def open_array(loc: Location, meta: dict[str, Any]) -> Iterator[Any]:
    """A read-only zarr array over the node's chunks, described by ``meta`` (not zarr.json): the
    tool reads an ``ndarray`` array's chunks as raw bytes so, or checks an upgrade it plans."""
    import zarr
    from zarr.storage import StorePath

    element_type(meta, str(loc))  # an ndarray type zarr cannot resolve, named by its rule
    with warnings.catch_warnings():
        for message in _UNSPECIFIED_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        try:
            array = zarr.AsyncArray(meta, StorePath(loc.store, loc.inner))  # type: ignore[call-overload]
        except (ValueError, TypeError, KeyError) as exc:
            raise Refused(f"{loc}: zarr cannot read this array's metadata: {exc}") from exc
        yield zarr.Array(array)
