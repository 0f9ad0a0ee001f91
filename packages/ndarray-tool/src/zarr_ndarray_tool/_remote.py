"""Any zarr store, for the tool: open a URL, list keys with their sizes, and read and write one
key with its version, so that a rewrite is one PUT made conditional where the store's library
can: zarr's Store API has no conditional write. Other stores get a compare before the write.
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarr_ndarray_tool._compat import sync as run
from zarr_ndarray_tool.errors import Refused

BACKENDS = ("fsspec", "obstore")

# Where each backend finds credentials and the endpoint, by URL scheme: what the tool says when
# a store cannot be reached or refuses the credentials.
_SETTINGS = {
    ("s3", "fsspec"): "s3fs (botocore) reads the credentials from AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_PROFILE or ~/.aws/credentials, and the "
    'endpoint from AWS_ENDPOINT_URL or --storage-options \'{"endpoint_url": "http://host:port"}\'',
    ("s3", "obstore"): "obstore reads the credentials from AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), the region from AWS_REGION, and the endpoint "
    "from AWS_ENDPOINT_URL (AWS_ALLOW_HTTP=true for http://) or --storage-options "
    '\'{"endpoint": "http://host:port", "client_options": {"allow_http": true}}\'',
    ("gs", "fsspec"): "gcsfs reads the credentials from GOOGLE_APPLICATION_CREDENTIALS (a "
    "service account's JSON file) or `gcloud auth application-default login`, and the endpoint "
    "from STORAGE_EMULATOR_HOST or --storage-options '{\"endpoint_url\": ...}'",
    ("gs", "obstore"): "obstore reads the credentials from GOOGLE_SERVICE_ACCOUNT (a JSON "
    "file), GOOGLE_SERVICE_ACCOUNT_KEY or GOOGLE_APPLICATION_CREDENTIALS",
    ("az", "fsspec"): "adlfs reads the credentials from AZURE_STORAGE_CONNECTION_STRING, or "
    "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN",
    ("az", "obstore"): "obstore reads the credentials from AZURE_STORAGE_ACCOUNT_NAME with "
    "AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN, and the endpoint from "
    "AZURE_STORAGE_ENDPOINT",
}
_SCHEMES = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az", "azure": "az"}


@dataclass(frozen=True)
class Version:
    """What a conditional PUT is conditional on: the key's content and, where known, its ETag."""

    data: bytes | None
    e_tag: str | None = None
    version: str | None = None


def parse_storage_options(text: str | None) -> dict[str, Any]:
    """``--storage-options``: a JSON object; Refused otherwise."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Refused(f"--storage-options {text!r} is not valid JSON ({exc}).") from exc
    if not isinstance(value, dict):
        raise Refused(
            f"--storage-options {text!r} is not a JSON object; give e.g. "
            '\'{"endpoint_url": "http://127.0.0.1:9000"}\'.'
        )
    return value


def settings(url: str, backend: str) -> str | None:
    """Where ``backend`` finds credentials and the endpoint for ``url`` (None for a local path),
    in the words the tool's messages use."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", "file", "memory"):
        return None
    known = _SETTINGS.get((_SCHEMES.get(scheme, scheme), backend))
    options = "--storage-options JSON (passed to it as they are)"
    return (
        known
        or f"{backend} reads the credentials and endpoint of {scheme}:// as it documents; {options}"
    )


def open_url(url: str, options: dict[str, Any], backend: str) -> Any:
    """A writable zarr store rooted at ``url`` (the array node)."""
    try:
        if backend == "obstore":
            import obstore.store
            from zarr.storage import ObjectStore

            return ObjectStore(obstore.store.from_url(url, **options), read_only=False)
        from zarr.storage import FsspecStore

        return FsspecStore.from_url(url, storage_options=options or None, read_only=False)
    except ImportError as exc:
        package = "obstore" if backend == "obstore" else "fsspec and its file system for the URL"
        raise Refused(f"{url}: opening it needs {package} ({exc}); pip install it.") from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise Refused(
            f"{url}: cannot open it as a zarr store ({type(exc).__name__}: {exc})."
        ) from exc


def _obstore_of(store: Any) -> Any | None:
    from zarr.storage import ObjectStore

    return store.store if isinstance(store, ObjectStore) else None


def _s3fs_of(store: Any) -> Any | None:
    """An fsspec store's s3fs file system: its coroutines (fsspec's async API, whose methods
    are underscored) make the HEAD and the conditional PUT zarr's store cannot."""
    from zarr.storage import FsspecStore

    if not isinstance(store, FsspecStore):
        return None
    protocol = store.fs.protocol
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return store.fs if "s3" in protocols and hasattr(store.fs, "_pipe_file") else None


def _fs_path(store: Any, key: str) -> str:
    return f"{store.path.rstrip('/')}/{key}" if store.path else key


async def _get(store: Any, key: str) -> bytes | None:
    from zarr.buffer import default_buffer_prototype

    buf = await store.get(key, prototype=default_buffer_prototype())
    return None if buf is None else bytes(buf.to_bytes())


def read_key(store: Any, key: str) -> Version:
    """The content of ``key`` (None if absent) and what a conditional PUT needs to know of it."""
    obs = _obstore_of(store)
    if obs is not None:  # obstore's GET returns the ETag and version with the bytes
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            got = obstore.get(obs, key)
        except (NotFoundError, FileNotFoundError):
            return Version(None)
        return Version(bytes(got.bytes()), got.meta.get("e_tag"), got.meta.get("version"))
    fs = _s3fs_of(store)
    if fs is None:
        return Version(run(_get(store, key)))
    path = _fs_path(store, key)

    async def versioned() -> Version:  # s3fs: zarr's GET between two HEADs of one ETag
        fs.invalidate_cache(path)  # an ETag from an earlier listing may be stale
        for _attempt in range(3):
            try:
                before = (await fs._info(path)).get("ETag")
                data = await _get(store, key)
                after = (await fs._info(path)).get("ETag")
            except FileNotFoundError:
                return Version(None)
            if data is not None and before == after:
                return Version(data, before)
        raise Refused(f"{key} keeps changing while it is read; try again later.")

    return run(versioned())


def _changed(key: str) -> Refused:
    return Refused(f"{key} changed while this command ran; nothing written.")


def _check_writable(store: Any, key: str) -> None:
    # The conditional PUTs below go to the store's library directly, past zarr's own check.
    if getattr(store, "read_only", False):
        raise Refused(
            f"{key}: the store is read-only (open it with read_only=False); nothing written."
        )


def put_key(store: Any, key: str, data: bytes, expect: Version) -> None:
    """Write ``key`` with one PUT if it still holds what ``expect`` read; Refused otherwise."""
    _check_writable(store, key)
    obs = _obstore_of(store)
    if obs is not None and (expect.data is None or expect.e_tag or expect.version):
        # obstore's PUT takes the ETag or version read (zarr's Store.set has no condition)
        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError, PreconditionError

        mode: Any = "create"  # absent when read: create it, unless someone else did
        if expect.data is not None:
            mode = {"e_tag": expect.e_tag} if expect.e_tag else {}
            if expect.version:
                mode["version"] = expect.version
        try:
            obstore.put(obs, key, data, mode=mode)
            return
        except (PreconditionError, AlreadyExistsError) as exc:
            raise _changed(key) from exc
        except (NotSupportedError, NotImplementedError):
            pass  # the store has no conditional update: compare, then write
    fs = _s3fs_of(store)
    if fs is not None and (expect.data is None or expect.e_tag):
        # s3fs hands IfMatch / IfNoneMatch to S3's PutObject (zarr's FsspecStore.set cannot)
        condition = {"IfNoneMatch": "*"} if expect.data is None else {"IfMatch": expect.e_tag}
        try:
            run(fs._pipe_file(_fs_path(store, key), data, **condition))
            return
        except OSError as exc:
            code = getattr(exc.__cause__, "response", {}).get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise _changed(key) from exc
            raise
    if read_key(store, key).data != expect.data:
        raise _changed(key)
    _set(store, key, data)


def _set(store: Any, key: str, data: bytes) -> None:
    from zarr.buffer import default_buffer_prototype

    run(store.set(key, default_buffer_prototype().buffer.from_bytes(data)))


def delete_key(store: Any, key: str) -> None:
    """Delete ``key`` (absent is fine)."""
    _check_writable(store, key)
    run(store.delete(key))


def list_sizes(store: Any, prefix: str) -> dict[str, int]:
    """Every key below ``prefix`` (relative to it) with its size in bytes: one listing where the
    library gives sizes with it, else zarr's listing and a ``getsize`` per key, concurrently
    (s3fs answers those from the listing it just cached)."""
    from zarr.storage import ZipStore

    base = f"{prefix}/" if prefix else ""
    obs = _obstore_of(store)
    if obs is not None:  # zarr's ObjectStore would HEAD every key
        import obstore

        listed = (meta for batch in obstore.list(obs, prefix or None) for meta in batch)
        sizes = {str(meta["path"]): int(meta["size"]) for meta in listed}
    elif isinstance(store, ZipStore) and store.read_only and isinstance(store.path, Path):
        with zipfile.ZipFile(store.path) as zf:  # zarr's ZipStore would read every member whole
            sizes = {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}
    else:

        async def collect() -> dict[str, int]:
            keys = list(dict.fromkeys([k async for k in store.list_prefix(base)]))
            found = await asyncio.gather(*(store.getsize(k) for k in keys))
            return dict(zip(keys, map(int, found), strict=True))

        sizes = run(collect())
    return {k[len(base) :]: n for k, n in sizes.items() if k.startswith(base)}
