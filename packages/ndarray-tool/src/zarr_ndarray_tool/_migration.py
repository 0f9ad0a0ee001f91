"""zarr-python's own Zarr v2 -> v3 migration (zarr >= 3.1.3), one node at a time, in memory:
the documents the hierarchy upgrade writes for groups and plain arrays. zarr's migration stops
at ``vlen-utf8`` object arrays, which zarr itself stores in v3 as ``string`` arrays over the
same chunk bytes: :func:`strings_document` writes that.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from typing import Any

from zarr_ndarray_tool.errors import Refused

#: The first zarr-python release with ``zarr.metadata.migrate_v3``.
MIGRATION_RELEASE = "3.1.3"


def has_migration() -> bool:
    """True where zarr-python has its v2 -> v3 migration."""
    try:
        return importlib.util.find_spec("zarr.metadata.migrate_v3") is not None
    except ModuleNotFoundError:  # zarr < 3.1.3 has no zarr.metadata package at all
        return False


def check_migration(where: str) -> None:
    """Refuse a whole-hierarchy upgrade on a zarr-python without its v2 -> v3 migration."""
    if not has_migration():
        import zarr

        raise Refused(
            f"{where}: a whole Zarr v2 hierarchy is upgraded with zarr-python's own v2 -> v3 "
            f"migration (zarr.metadata.migrate_v3), which zarr {MIGRATION_RELEASE} and later "
            f"have; this is zarr {zarr.__version__}: pip install 'zarr>={MIGRATION_RELEASE}'. "
            "A single ragged array upgrades on any release (name the array)."
        )


def migrated_document(docs: dict[str, str], where: str) -> str:
    """The ``zarr.json`` text zarr's migration writes for one group or ordinary array, given its
    v2 documents (``.zgroup`` or ``.zarray``, and ``.zattrs`` if any) as texts."""
    import zarr
    from zarr.metadata.migrate_v3 import migrate_to_v3
    from zarr.storage import MemoryStore, StorePath

    written: dict[str, Any] = {}  # what zarr's migration writes, read back from the dict itself
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr's notes on v2 codecs; the result is checked
            if ".zgroup" in docs:
                node: Any = zarr.open_group(
                    _alone(docs), mode="r", zarr_format=2, use_consolidated=False
                )
            else:
                node = zarr.open_array(_alone(docs), mode="r", zarr_format=2)
            migrate_to_v3(node, StorePath(MemoryStore(written), ""))
    except Exception as exc:  # whatever zarr's migration refuses, it names
        raise Refused(
            f"{where}: zarr's own v2 -> v3 migration cannot convert this node "
            f"({type(exc).__name__}: {exc}); nothing was written."
        ) from exc
    assert "zarr.json" in written, "zarr's migration wrote no zarr.json"
    return str(written["zarr.json"].to_bytes().decode("utf-8"))


def strings_document(docs: dict[str, str], where: str) -> str:
    """The ``zarr.json`` of a v2 ``vlen-utf8`` object array as a v3 ``string`` array."""
    import zarr

    zarray = json.loads(docs[".zarray"])
    as_bytes = {**zarray, "dtype": "|u1", "filters": None, "fill_value": 0}
    text = migrated_document({**docs, ".zarray": json.dumps(as_bytes)}, where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fill = zarr.open_array(_alone(docs), mode="r", zarr_format=2).metadata.fill_value
    meta = json.loads(text)
    meta["data_type"] = "string"
    meta["fill_value"] = "" if fill is None else str(fill)
    meta["codecs"] = [
        {"name": "vlen-utf8", "configuration": {}},
        *(c for c in meta["codecs"] if c.get("name") != "bytes"),
    ]
    return json.dumps(meta, indent=2)


def _alone(docs: dict[str, str]) -> Any:
    """A MemoryStore holding only ``docs`` (a node's v2 documents) at its root."""
    from zarr.buffer import default_buffer_prototype
    from zarr.storage import MemoryStore

    buffer = default_buffer_prototype().buffer
    return MemoryStore({name: buffer.from_bytes(text.encode()) for name, text in docs.items()})
