"""The rewrites: one array's ``zarr.json`` (upgrade, downgrade, migrate), and Zarr v2 ragged
arrays or hierarchies (HyperSpy's zspy stores) to v3 and back byte for byte, groups and plain
arrays through zarr's own migration. Chunks are checked first, and never rewritten."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from posixpath import join
from typing import Any

import numpy as np
import zarr
from zarr.buffer import default_buffer_prototype
from zarr.storage import MemoryStore, StorePath

from zarr_ndarray_dtype import iter_columnar, read_columnar
from zarr_ndarray_tool import _documents as docs
from zarr_ndarray_tool import _stores
from zarr_ndarray_tool._documents import ZARRAY, ZATTRS, Pattern, document_text, label
from zarr_ndarray_tool._inspect import check_chunks
from zarr_ndarray_tool._stores import ZARR_JSON, Location, Node, chunk_objects, open_array
from zarr_ndarray_tool.errors import Outcome, Progress, Refused, counted, steps

#: Chunk objects ``upgrade`` checks unless told to check all.
DEFAULT_SAMPLE = 16
ZGROUP, ZMETADATA = ".zgroup", ".zmetadata"
#: Kept at an upgraded hierarchy's root: its v2 documents, for ``downgrade`` (zarr ignores it,
#: and the nodes' attributes stay HyperSpy's own).
KEPT = "zarr-ndarray-v2.json"
#: The first zarr-python release with ``zarr.metadata.migrate_v3``.
MIGRATION_RELEASE = "3.1.3"


@dataclasses.dataclass(frozen=True)
class Options:
    """An upgrade's element type, how many chunk objects it checks (None: all), and more."""

    dtype: str | None = None
    shape: Pattern | None = None
    sample: int | None = DEFAULT_SAMPLE
    dry_run: bool = False
    progress: Progress | None = None


def _described(meta: dict[str, Any]) -> str:
    return label(docs.element_type(meta))  # type: ignore[arg-type]


def rewrite(node: Node, command: str, options: Options) -> Outcome:
    """``upgrade`` (its chunks checked first), ``downgrade`` or ``migrate`` of one array: check
    that zarr reads the new ``zarr.json``, then return its diff (dry run) or write it."""
    new = docs.rewritten(node.meta, node.where, command, options.dtype, options.shape)
    what = f"downgrade to {new['data_type']} + vlen-bytes"
    if command != "downgrade":
        what = f"{command} to {'ndarray ' * (command == 'migrate')}{_described(new)}"
    if command == "upgrade":
        what += f"; {_checked(node.loc, new, node.objects, options)}"
    open_array(node.loc, new)  # zarr parses the new document (data type, codecs, fill value)
    if options.dry_run:
        diff = docs.json_diff(node.meta, new, f"{node.where}/{ZARR_JSON}")
        return Outcome(f"dry run: {what}; nothing written", diff)
    data = docs.dumps_like(new, node.text).encode("utf-8")
    _stores.write(node.loc, {ZARR_JSON: data}, {ZARR_JSON: node.text.encode("utf-8")})
    return Outcome(f"{node.where}: {what}; rewrote zarr.json")


def _checked(loc: Location, new: dict[str, Any], objects: Any, options: Options) -> str:
    """What :func:`.check_chunks` checked; Refused with the first chunk that does not fit."""
    problem, checked = check_chunks(loc, new, objects, options.sample, options.progress)
    if problem is not None:
        raise Refused(f"{loc}: not upgraded (nothing written): {problem}")
    return checked


def _plan_v2(loc: Location, options: Options) -> tuple[dict[str, Any], list[Any]]:
    """A Zarr v2 ragged array's v3 document and its chunk objects."""
    zarray, zattrs = (document_text(loc.read(k), k, str(loc)) for k in (ZARRAY, ZATTRS))
    new, _ = docs.v3_from_v2(zarray or "", zattrs, options.dtype, options.shape, str(loc))
    return new, chunk_objects(loc, new, docs.grid_of(new, str(loc)))


def _open_v2(texts: dict[str, str]) -> Any:
    """The v2 node whose documents are ``texts``, opened by zarr (from memory)."""
    buffer = default_buffer_prototype().buffer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's notes on v2 codecs; the result is checked
        store = {k: buffer.from_bytes(t.encode()) for k, t in texts.items()}
        if ZGROUP in texts:
            return zarr.open_group(store, mode="r", zarr_format=2, use_consolidated=False)
        return zarr.open_array(store, mode="r", zarr_format=2)


def migrated_document(texts: dict[str, str], where: str) -> str:
    """The ``zarr.json`` text zarr's own migration writes for one group or ordinary array,
    given its v2 documents (``.zgroup`` or ``.zarray``, and ``.zattrs`` if any) as texts."""
    try:
        from zarr.metadata.migrate_v3 import migrate_to_v3
    except ImportError as exc:
        raise Refused(
            f"{where}: a Zarr v2 hierarchy upgrades through zarr.metadata.migrate_v3, which zarr "
            f"{MIGRATION_RELEASE} and later have; this is zarr {zarr.__version__}: pip install "
            f"'zarr>={MIGRATION_RELEASE}' (a single ragged array upgrades on any release)."
        ) from exc
    written: dict[str, Any] = {}  # what zarr's migration writes, read back from the dict itself
    try:
        migrate_to_v3(_open_v2(texts), StorePath(MemoryStore(written), ""))
    except Exception as exc:  # whatever zarr's migration refuses, it names
        raise Refused(
            f"{where}: zarr's own v2 -> v3 migration cannot convert this node "
            f"({type(exc).__name__}: {exc}); nothing was written."
        ) from exc
    return str(written[ZARR_JSON].to_bytes().decode("utf-8"))


def is_upgraded_tree(loc: Location) -> bool:
    """True for the root of a hierarchy (or an array) this tool upgraded: it holds :data:`KEPT`."""
    try:
        return loc.read(KEPT) is not None
    except Exception:  # a store of zarr's own keys only (icechunk), which never holds it
        return False


def _plan_tree(loc: Location, options: Options) -> tuple[dict[str, dict[str, bytes]], list]:
    """Every v2 node's documents (by path, the root first), and each node's new document with
    a line for ``--dry-run``, checked; Refused naming the first node that cannot be upgraded."""
    found: dict[str, dict[str, bytes]] = {}
    v3 = []
    for key in _stores.list_sizes(loc):
        path, _, name = key.rpartition("/")
        v3 += [path or "/"] * (name == ZARR_JSON)
        if name in (ZGROUP, ZARRAY, ZATTRS, ZMETADATA) and (data := loc.read(key)) is not None:
            found.setdefault(path, {})[name] = data
    if v3:
        raise Refused(
            f"{loc}: {', '.join(sorted(v3)[:5])} hold a zarr.json already (partly Zarr v3); "
            "nothing written. A hierarchy this tool upgraded is restored with `downgrade`."
        )
    nodes = {p: d for p, d in sorted(found.items()) if ZGROUP in d or ZARRAY in d}
    arrays = {p for p, d in nodes.items() if ZGROUP not in d}
    advance, planned = steps(options.progress, len(nodes)), []
    for path, stored in nodes.items():
        where, texts = f"{loc}: {path or '/'}", dict[str, str]()
        for k in (ZGROUP, ZARRAY, ZATTRS):
            texts |= {k: t} if (t := document_text(stored.get(k), k, path or "/")) else {}
        zarray = json.loads(texts.get(ZARRAY, "{}"))
        codec = ((zarray.get("filters") or [{}])[0] or {}).get("id")
        if ZGROUP in stored:
            planned.append((path, migrated_document(texts, where), "group (zarr's migration)"))
        elif codec in ("vlen-array", "vlen-bytes") or not path:  # a ragged array, or the root
            planned.append((path, *_ragged(loc, path, arrays, codec, options)))
        elif zarray.get("dtype") != "|O":
            text = migrated_document(texts, where)
            kind = f"{docs.codec_chain(json.loads(text).get('codecs'))}; zarr's migration"
            planned.append((path, text, f"array {zarray.get('dtype')} ({kind})"))
        elif codec == "vlen-utf8":  # zarr's own v3 string array, over the same chunks
            as_bytes = {**zarray, "dtype": "|u1", "filters": None, "fill_value": 0}
            meta = json.loads(migrated_document({**texts, ZARRAY: json.dumps(as_bytes)}, where))
            fill = _open_v2(texts).metadata.fill_value
            meta["data_type"], meta["fill_value"] = "string", "" if fill is None else str(fill)
            codecs = [c for c in meta["codecs"] if c.get("name") != "bytes"]
            meta["codecs"] = [{"name": "vlen-utf8", "configuration": {}}, *codecs]
            note = "array of strings (string, vlen-utf8)"
            planned.append((path, json.dumps(meta, indent=2), note))
        else:
            raise Refused(
                f"{where}: an object array of the numcodecs object codec {codec!r}, which has no "
                "Zarr v3 data type; nothing written. Rewrite it (HyperSpy >= 2 saves lists of "
                "strings as vlen-utf8) or remove it, then upgrade again."
            )
        advance(1)
    return found, planned


def _ragged(loc: Location, path: str, arrays: set[str], codec: Any, options: Options) -> tuple:
    """A ragged array's document: ``[null]`` (or ``--dtype``/``--shape`` for VLenBytes), or the
    pattern its HyperSpy shape sibling gives, every stored chunk checked against it; and why."""
    child, flat = loc.child(path), dataclasses.replace(options, progress=None)
    if path and codec == "vlen-array":  # in a hierarchy, --dtype/--shape type VLenBytes arrays
        flat = dataclasses.replace(flat, dtype=None, shape=None)
    new, objects = _plan_v2(child, flat)
    note = f"array ndarray {_described(new)} (vlen-ndarray); {_checked(child, new, objects, flat)}"
    parent, _, name = path.rpartition("/")
    group = {p.rpartition("/")[2] for p in arrays if p.rpartition("/")[0] == parent}
    if (sibling := docs.sibling_of(name, group)) is None or codec != "vlen-array":
        return json.dumps(new, indent=2), note
    pattern, why = _sibling_pattern(loc, path, join(parent, sibling), new)
    note = f"array ndarray {_described(new)}: {why}"
    if pattern != (None,):
        wide, objects = _plan_v2(child, Options(None, pattern, None))
        problem, checked = check_chunks(child, wide, objects, None, None)
        if problem is None:
            new, note = wide, f"array ndarray {_described(wide)}: {why} ({checked})"
        else:
            note += f", but {problem}; so the cells stay flattened"
    return json.dumps(new, indent=2), f"{note} (shapes in {sibling})"


def _sibling_pattern(loc: Location, path: str, sibling: str, meta: dict) -> tuple[Pattern, str]:
    """The pattern the shape sibling gives the array of ``meta`` (its ``[null]`` document)."""
    texts = (document_text(loc.read(join(sibling, k)), k, sibling) for k in (ZARRAY, ZATTRS))
    shapes, dt = docs.v3_from_v2(next(texts) or "", next(texts), None, None, sibling)
    where = f"{loc}: {path}"
    if dt.dtype not in ("int64", "int32") or shapes["shape"] != meta["shape"]:
        raise Refused(
            f"{where}: its shape sibling {sibling.rpartition('/')[2]} is not an integer array of "
            f"the same shape ({dt.dtype}, {shapes['shape']} vs {meta['shape']}); nothing written."
        )
    table = read_columnar(open_array(loc.child(sibling), shapes))
    array = open_array(loc.child(path), meta)
    sizes = [col.shapes[:, 0] for _, col in iter_columnar(array, values=False)]
    items = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    extents, ranks = table.values.astype(np.int64).reshape(-1), np.diff(table.offsets)
    return docs.pattern_of(ranks, extents, items, tuple(meta["shape"]), where)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def upgrade_tree(loc: Location, options: Options) -> Outcome:
    """Upgrade the Zarr v2 hierarchy (or ragged array) at ``loc`` in place."""
    if is_upgraded_tree(loc):
        raise Refused(
            f"{loc}: this hierarchy was upgraded before ({KEPT} is there); `downgrade` restores "
            "its Zarr v2 documents."
        )
    found, planned = _plan_tree(loc, options)
    lines = [f"  {path or '/'}: {note}" for path, _, note in planned]
    removed = "removed (consolidated v2 metadata; kept for downgrade)"
    lines += [f"  {join(p, ZMETADATA)}: {removed}" for p, d in found.items() if ZMETADATA in d]
    what = f"upgrade {counted(len(planned), 'node')} of a Zarr v2 hierarchy to Zarr v3"
    if options.dry_run:
        return Outcome(f"dry run: {what}; nothing written", "\n".join(lines) + "\n")
    v2 = {join(path, k): data for path, stored in found.items() for k, data in stored.items()}
    kept = {
        "about": "Zarr v2 documents kept by `zarr-ndarray upgrade`; `zarr-ndarray downgrade` "
        "writes them back",
        "v2": {key: data.decode("utf-8") for key, data in v2.items()},
        "v3": {join(path, ZARR_JSON): _digest(text.encode()) for path, text, _ in planned},
    }
    changes: dict[str, bytes | None] = {KEPT: json.dumps(kept, indent=1).encode()}
    # children first, the root's zarr.json last: an interrupted run leaves a v2 root
    for path, text, _ in sorted(planned, key=lambda s: -s[0].count("/") - bool(s[0])):
        changes[join(path, ZARR_JSON)] = text.encode("utf-8")
    _stores.write(loc, {**changes, **dict.fromkeys(v2)}, {**dict.fromkeys(changes), **v2})
    return Outcome(f"{loc}: {what}; kept the v2 documents in {KEPT}\n" + "\n".join(lines))


def downgrade_tree(loc: Location, dry_run: bool = False) -> Outcome:
    """Restore an upgraded hierarchy's v2 documents byte for byte."""
    try:
        kept = json.loads(loc.read(KEPT) or b"")
        v2, v3 = dict(kept["v2"]), dict(kept["v3"])
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused(f"{loc}: {KEPT} is not what upgrade wrote ({exc}).") from exc
    if changed := [key for key, digest in v3.items() if _digest(loc.read(key) or b"") != digest]:
        raise Refused(
            f"{loc}: {', '.join(changed[:5])} changed since the upgrade (or is gone); restoring "
            "the v2 documents would lose that, so downgrade refuses (nothing written)."
        )
    if present := [key for key in v2 if loc.read(key) is not None]:
        raise Refused(f"{loc}: {', '.join(present[:5])} exist already; nothing written.")
    what = (
        f"downgrade {counted(len(v3), 'node')} to Zarr v2 (restore {counted(len(v2), 'document')}, "
        f"remove the zarr.json files and {KEPT})"
    )
    if dry_run:
        return Outcome(f"dry run: {what}; nothing written")
    changes = {**{k: t.encode("utf-8") for k, t in v2.items()}, **dict.fromkeys([*v3, KEPT])}
    _stores.write(loc, changes, dict.fromkeys(v2))
    return Outcome(f"{loc}: {what}")
