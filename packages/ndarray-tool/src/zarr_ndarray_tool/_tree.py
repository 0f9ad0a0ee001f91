"""Whole Zarr v2 hierarchies (HyperSpy's zspy stores) upgraded to Zarr v3 in place, and back
byte for byte: groups and plain arrays as zarr's own migration writes them, ragged arrays as
``ndarray`` arrays (a HyperSpy array with the pattern its shape sibling gives). Every node is
checked before anything is written; the v2 documents are kept at the root, in :data:`KEPT`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_ndarray_dtype.columnar import read_columnar, scan_cells
from zarr_ndarray_tool import _metadata as md
from zarr_ndarray_tool._commands import DEFAULT_SAMPLE, Outcome, plan_v2
from zarr_ndarray_tool._migration import check_migration, migrated_document, strings_document
from zarr_ndarray_tool._stores import (
    ZARR_JSON,
    Location,
    check_deletes,
    listing,
    open_array,
    read_versioned,
    switch_documents,
)
from zarr_ndarray_tool._text import counted
from zarr_ndarray_tool._v2 import ZARRAY, ZATTRS, document_text, v3_from_v2
from zarr_ndarray_tool._zspy import pattern_of, sibling_of
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.progress import Progress, counting

ZGROUP = ".zgroup"
ZMETADATA = ".zmetadata"
V2_DOCUMENTS = (ZGROUP, ZARRAY, ZATTRS, ZMETADATA)
#: The object at an upgraded hierarchy's root that keeps its v2 documents for ``downgrade`` (zarr
#: ignores it, and the nodes' attributes stay HyperSpy's own).
KEPT = "zarr-ndarray-v2.json"


def is_v2_tree(loc: Location) -> bool:
    """True for a Zarr v2 group (a ``.zgroup`` and no ``zarr.json``): a hierarchy to upgrade."""
    return read_versioned(loc).data is None and read_versioned(loc, ZGROUP).data is not None


def is_upgraded_tree(loc: Location) -> bool:
    """True for the root of a hierarchy this tool upgraded: a group that holds :data:`KEPT`."""
    try:
        if json.loads(read_versioned(loc).data or b"{}").get("node_type") != "group":
            return False
    except (ValueError, AttributeError):
        return False  # not a group's document: the array commands say what is wrong
    try:
        return read_versioned(loc, KEPT).data is not None
    except Exception:  # stores of zarr's own keys only (icechunk) refuse it: they never hold it
        return False


# ------------------------------------------------------------------------------ reading


@dataclass
class _Node:
    """One v2 node: its path below the root and its v2 documents, as stored."""

    path: str
    docs: dict[str, bytes]

    def text(self, name: str) -> str | None:
        return document_text(self.docs.get(name), name, self.label)

    @property
    def label(self) -> str:
        return self.path or "/"

    @property
    def is_group(self) -> bool:
        return ZGROUP in self.docs

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _v2_nodes(loc: Location) -> list[_Node]:
    """Every v2 node below ``loc`` (the root first), from the store's listing; Refused where a
    node holds a ``zarr.json`` already."""
    found: dict[str, dict[str, bytes]] = {}
    v3 = []
    for key in listing(loc):
        path, _, name = key.rpartition("/")
        if name == ZARR_JSON:
            v3.append(path or "/")
        if name in V2_DOCUMENTS:
            data = read_versioned(loc, key).data
            if data is not None:
                found.setdefault(path, {})[name] = data
    if v3:
        raise Refused(
            f"{loc}: {', '.join(sorted(v3)[:5])} hold a zarr.json already, so this hierarchy is "
            "(partly) Zarr v3; nothing written. A hierarchy this tool upgraded is restored with "
            "`downgrade`."
        )
    nodes = [_Node(p, d) for p, d in sorted(found.items()) if ZGROUP in d or ZARRAY in d]
    return nodes


# ------------------------------------------------------------------------------ planning


@dataclass(frozen=True)
class _Step:
    """What one node becomes: its ``zarr.json`` text and a line for ``--dry-run``."""

    node: _Node
    text: str
    note: str


@dataclass(frozen=True)
class _Options:
    dtype: str | None
    shape: tuple[int | None, ...] | None
    verify_all: bool
    sample_size: int
    progress: Progress


def _object_codec(zarray: dict[str, Any]) -> str | None:
    """The numcodecs object codec of a v2 object array (``vlen-array``, ``json2``, ...)."""
    filters = zarray.get("filters") or []
    first = filters[0] if filters and isinstance(filters[0], dict) else {}
    return str(first.get("id")) if zarray.get("dtype") == "|O" else None


def _plan(loc: Location, nodes: list[_Node], options: _Options) -> list[_Step]:
    """Every node's new document, each checked; Refused naming the first that cannot be."""
    arrays: dict[str, set[str]] = {}  # group -> the names of its arrays
    for n in nodes:
        if not n.is_group:
            arrays.setdefault(n.parent, set()).add(n.name)
    by_path = {n.path: n for n in nodes}
    steps = []
    for node in nodes:
        options.progress.advance()
        where = f"{loc}: {node.label}"
        docs = {k: t for k in (ZGROUP, ZARRAY, ZATTRS) if (t := node.text(k)) is not None}
        if node.is_group:
            steps.append(_Step(node, migrated_document(docs, where), "group (zarr's migration)"))
            continue
        zarray = json.loads(docs[ZARRAY])
        codec = _object_codec(zarray)
        if codec is None:
            text = migrated_document(docs, where)
            kind = md.codec_chain(json.loads(text).get("codecs"))
            steps.append(
                _Step(node, text, f"array {zarray.get('dtype')} ({kind}; zarr's migration)")
            )
        elif codec == "vlen-utf8":
            steps.append(
                _Step(node, strings_document(docs, where), "array of strings (string, vlen-utf8)")
            )
        elif codec in ("vlen-array", "vlen-bytes"):
            sibling = sibling_of(node.name, arrays.get(node.parent, set()))
            shapes = by_path.get(_join(node.parent, sibling)) if sibling else None
            steps.append(_ragged(loc, node, shapes, codec, options))
        else:
            raise Refused(
                f"{where}: an object array of the numcodecs object codec {codec!r}, which has no "
                "Zarr v3 data type; nothing written. Rewrite it (HyperSpy >= 2 saves lists of "
                "strings as vlen-utf8) or remove it, then upgrade again."
            )
    return steps


def _ragged(
    loc: Location, node: _Node, shapes: _Node | None, codec: str, options: _Options
) -> _Step:
    """A ragged array: ``[null]`` (or ``--dtype``/``--shape`` for VLenBytes), or the pattern its
    HyperSpy shape sibling gives, every stored chunk checked against it."""
    child = loc.child(node.path)
    if codec == "vlen-bytes":
        if options.dtype is None or options.shape is None:
            raise Refused(
                f"{child}: a VLenBytes array of raw element bytes; give its element type with "
                "--dtype and --shape (they apply to every VLenBytes array of the hierarchy)."
            )
        dtype, shape = options.dtype, options.shape
    else:
        dtype, shape = None, None
    plan = plan_v2(
        child, dtype, shape, verify_all=options.verify_all, sample_size=options.sample_size
    )
    if plan.problem is not None:
        raise Refused(f"{child}: not upgraded (nothing written): {plan.problem}")
    note = f"array ndarray {plan.etype} (vlen-ndarray); {plan.checked}"
    if shapes is not None and codec == "vlen-array":
        pattern, why = _pattern(loc, node, shapes, plan.meta)
        note = f"array ndarray {plan.etype}: {why}"
        if pattern != (None,):
            wide = plan_v2(child, None, pattern, verify_all=True)
            if wide.problem is None:
                plan, note = wide, f"array ndarray {wide.etype}: {why} ({wide.checked})"
            else:
                note += f", but {wide.problem}; so the cells stay flattened"
        note += f" (shapes in {shapes.name})"
    return _Step(node, json.dumps(plan.meta, indent=2), note)


def _pattern(
    loc: Location, node: _Node, shapes: _Node, meta: dict[str, Any]
) -> tuple[tuple[int | None, ...], str]:
    """The pattern the shape sibling gives the array of ``meta`` (its ``[null]`` document)."""
    text = shapes.text(ZARRAY)
    assert text is not None
    sibling_meta, etype = v3_from_v2(text, shapes.text(ZATTRS), None, None, str(shapes.path))
    where = f"{loc}: {node.label}"
    if etype.dtype not in ("int64", "int32") or sibling_meta["shape"] != meta["shape"]:
        raise Refused(
            f"{where}: its shape sibling {shapes.name} is not an integer array of the same "
            f"shape ({etype.dtype}, {sibling_meta['shape']} vs {meta['shape']}); nothing written."
        )
    with open_array(loc.child(shapes.path), sibling_meta) as sibling:
        table = read_columnar(sibling)
    with open_array(loc.child(node.path), meta) as data:
        sizes = scan_cells(data, ..., "upgrade").cells.sizes
    ranks = np.diff(table.offsets)
    grid = tuple(int(n) for n in meta["shape"])
    return pattern_of(ranks, table.values.astype(np.int64), sizes, grid, where)


# ------------------------------------------------------------------------------ commands


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upgrade_tree(
    loc: Location,
    dtype: str | None = None,
    shape: tuple[int | None, ...] | None = None,
    *,
    verify_all: bool = False,
    sample_size: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    """Upgrade the Zarr v2 hierarchy at ``loc`` in place (see the module docstring)."""
    check_migration(str(loc))
    check_deletes(loc)
    if is_upgraded_tree(loc):
        raise Refused(
            f"{loc}: this hierarchy was upgraded before ({KEPT} is there); `downgrade` "
            "restores its Zarr v2 documents."
        )
    nodes = _v2_nodes(loc)
    options = _Options(dtype, shape, verify_all, sample_size, counting(progress, len(nodes)))
    steps = _plan(loc, nodes, options)
    lines = [f"  {s.node.label}: {s.note}" for s in steps]
    lines += [
        f"  {_join(n.path, ZMETADATA)}: removed (consolidated v2 metadata; kept for downgrade)"
        for n in nodes
        if ZMETADATA in n.docs
    ]
    what = f"upgrade {counted(len(steps), 'node')} of a Zarr v2 hierarchy to Zarr v3"
    if dry_run:
        return Outcome(f"dry run: {what}; nothing written", "\n".join(lines) + "\n")
    v2 = {_join(n.path, name): n.docs[name].decode("utf-8") for n in nodes for name in n.docs}
    kept = {
        "about": "Zarr v2 documents kept by `zarr-ndarray upgrade`; `zarr-ndarray downgrade` "
        "writes them back",
        "v2": v2,
        "v3": {_join(s.node.path, ZARR_JSON): _digest(s.text) for s in steps},
    }
    writes = {KEPT: json.dumps(kept, indent=1).encode()}
    # children first, the root's zarr.json last: an interrupted run leaves a v2 root
    for step in sorted(steps, key=lambda s: -s.node.path.count("/") - bool(s.node.path)):
        writes[_join(step.node.path, ZARR_JSON)] = step.text.encode("utf-8")
    unchanged = {_join(n.path, name): data for n in nodes for name, data in n.docs.items()}
    switch_documents(loc, writes, list(v2), unchanged)
    return Outcome(f"{loc}: {what}; kept the v2 documents in {KEPT}\n" + "\n".join(lines))


def downgrade_tree(loc: Location, *, dry_run: bool = False) -> Outcome:
    """Restore an upgraded hierarchy's v2 documents byte for byte (see the module docstring)."""
    check_deletes(loc)
    raw = read_versioned(loc, KEPT).data
    try:
        kept = json.loads(raw or b"")
        v2, v3 = dict(kept["v2"]), dict(kept["v3"])
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused(f"{loc}: {KEPT} is not what upgrade wrote ({exc}).") from exc
    changed = [
        key
        for key, digest in v3.items()
        if _digest((read_versioned(loc, key).data or b"").decode("utf-8", "replace")) != digest
    ]
    if changed:
        raise Refused(
            f"{loc}: {', '.join(changed[:5])} changed since the upgrade (or is gone); restoring "
            "the v2 documents would lose that, so downgrade refuses (nothing written)."
        )
    present = [key for key in v2 if read_versioned(loc, key).data is not None]
    if present:
        raise Refused(f"{loc}: {', '.join(present[:5])} exist already; nothing written.")
    what = (
        f"downgrade {counted(len(v3), 'node')} to Zarr v2 (restore "
        f"{counted(len(v2), 'document')}, remove the zarr.json files and {KEPT})"
    )
    if dry_run:
        return Outcome(f"dry run: {what}; nothing written")
    writes = {key: text.encode("utf-8") for key, text in v2.items()}
    switch_documents(loc, writes, [*v3, KEPT], {})
    return Outcome(f"{loc}: {what}")
