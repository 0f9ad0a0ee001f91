"""The tool's operations on a loaded array (:class:`~._scan.Node`), for the CLI and the API:
each returns an :class:`Outcome` or raises :class:`~.errors.Refused` having changed nothing; a
rewrite first checks that zarr reads the new document.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_ndarray_dtype import NDArray
from zarr_ndarray_dtype.chunks import Grid
from zarr_ndarray_tool import _metadata as md
from zarr_ndarray_tool._remote import Version
from zarr_ndarray_tool._scan import Node, sample
from zarr_ndarray_tool._stores import (
    ZARR_JSON,
    ChunkObject,
    Location,
    check_deletes,
    chunk_objects,
    grid_of,
    key_encoding,
    open_array,
    read_versioned,
    switch_documents,
    write_key,
)
from zarr_ndarray_tool._text import counted
from zarr_ndarray_tool._v2 import (
    ZARRAY,
    ZATTRS,
    document_text,
    original_documents,
    v3_from_v2,
)
from zarr_ndarray_tool._verify import check_payloads, element_place, verify_chunks
from zarr_ndarray_tool.errors import Refused, environment_failure
from zarr_ndarray_tool.progress import Progress, counting
from zarr_vlen_ndarray import VlenNDArrayCodec

#: Chunk objects ``upgrade`` checks unless told to check all.
DEFAULT_SAMPLE = 16


@dataclass(frozen=True)
class Outcome:
    """What an operation did: a one-line message, and for a dry run the ``zarr.json`` diff."""

    message: str
    diff: str = ""


def upgrade(
    node: Node,
    dtype: str,
    shape: tuple[int | None, ...],
    *,
    verify_all: bool = False,
    sample_size: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    """Raw bytes + ``vlen-bytes`` -> ``ndarray`` + ``vlen-ndarray``, after checking chunks."""
    new = md.upgrade(node.meta, dtype, shape, node.where)
    etype = md.element_type(new)
    assert etype is not None
    objects, checked = _picked(node.objects, verify_all, sample_size)
    padded = node.grid.padded()
    view = md.with_shape(md.bytes_view(node.meta, node.where), padded.shape)
    with open_array(node.loc, view) as raw:
        bar = counting(progress, len(objects))
        problem = check_payloads(node, raw, padded, objects, etype, bar)
    if problem is not None:
        raise Refused(f"{node.where}: not upgraded (nothing written): {problem}")
    return rewrite(node, new, f"upgrade to {etype}; {checked}", dry_run=dry_run)


def downgrade(node: Node, *, dry_run: bool = False) -> Outcome:
    """``ndarray`` + ``vlen-ndarray`` -> ``variable_length_bytes`` + ``vlen-bytes``.

    An array upgraded from Zarr v2 gets its v2 documents back instead (:mod:`._v2`).
    """
    md.check_array_document(node.meta, node.where)
    kept = original_documents(node.meta, node.where)
    if kept is not None:
        return _restore_v2(node, *kept, dry_run=dry_run)
    new = md.downgrade(node.meta, node.where)
    what = f"downgrade to {md.DOWNGRADE_DTYPE_NAME} + vlen-bytes"
    return rewrite(node, new, what, dry_run=dry_run)


def migrate(node: Node, *, dry_run: bool = False) -> Outcome:
    """zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    new = md.migrate(node.meta, node.where)
    return rewrite(node, new, f"migrate to ndarray {md.element_type(new)}", dry_run=dry_run)


def _picked(
    objects: list[ChunkObject], verify_all: bool, sample_size: int
) -> tuple[list[ChunkObject], str]:
    """The chunk objects an upgrade checks, and what its message says of them."""
    picked = objects if verify_all else sample(objects, sample_size)
    checked = f"checked {len(picked)} of {counted(len(objects), 'chunk object')}"
    return picked, checked + " (--verify-all checks every one)" * (len(picked) < len(objects))


def rewrite(node: Node, new: dict[str, Any], what: str, *, dry_run: bool) -> Outcome:
    """Check that zarr reads ``new``, then return its diff (dry run) or write it."""
    with open_array(node.loc, new):
        pass  # zarr parses the new document (data type, codecs, fill value) or we refuse
    if dry_run:
        diff = md.json_diff(node.meta, new, f"{node.where}/{ZARR_JSON}")
        return Outcome(f"dry run: {what}; nothing written", diff)
    write_key(node.loc, ZARR_JSON, md.dumps_like(new, node.text).encode("utf-8"), node.version)
    return Outcome(f"{node.where}: {what}; rewrote zarr.json")


def verify(node: Node, *, progress: Progress | None = None) -> Outcome:
    """Decode every (inner) chunk of every stored object; Refused naming the first bad one."""
    if md.data_type_kind(node.meta.get("data_type")) == "legacy":
        raise Refused(
            f"{node.where}: the data type is zarr-vlen-ndarray 0.1.x metadata, which no longer "
            "resolves; run `migrate` first."
        )
    if md.data_type_kind(node.meta.get("data_type")) not in ("ndarray", "bytes"):
        raise Refused(
            f"{node.where}: verify decodes ndarray and raw-bytes arrays; this one's data type "
            f"is {node.meta.get('data_type')!r}."
        )
    verify_chunks(node, node.objects, counting(progress, len(node.objects)))
    n = len(node.objects)
    if n == 1:
        decoded = "the one chunk object decodes"
    else:
        decoded = f"all {n} chunk objects decode" if n else "no chunk object is stored"
    return Outcome(f"{node.where}: {decoded}{_absent(node)}")


def _absent(node: Node, named: int = 5) -> str:
    """How many chunks of the grid have no object (they read as the fill value), naming the
    first few: an unwritten chunk is legal, a deleted one is often an accident."""
    stored = {obj.index for obj in node.objects}
    missing = node.grid.nchunks - len(stored)
    if not missing:
        return ""
    first = itertools.islice((i for i in node.grid.indices() if i not in stored), named)
    encoding = key_encoding(node.meta, node.where)
    keys = ", ".join(encoding.encode_chunk_key(index) for index in first)
    more = ", ..." if missing > named else ""
    verbs = ("has no object", "reads") if missing == 1 else ("have no objects", "read")
    return (
        f"; {missing} of the grid's {counted(node.grid.nchunks, 'chunk')} {verbs[0]} "
        f"({keys}{more}) and {verbs[1]} as the fill value: unwritten, or deleted?"
    )


# ------------------------------------------------------------------------------ zarr v2


def is_v2(loc: Location) -> bool:
    """True for a Zarr v2 array node (a ``.zarray`` and no ``zarr.json``)."""
    return read_versioned(loc).data is None and read_versioned(loc, ZARRAY).data is not None


@dataclass(frozen=True)
class V2Plan:
    """A Zarr v2 ragged array's upgrade, checked and not yet written."""

    zarray: Version
    zattrs: Version
    meta: dict[str, Any]  # the new zarr.json
    etype: md.ElementType
    checked: str  # what was checked, for the message
    problem: str | None  # the first chunk that does not fit, if any


def plan_v2(
    loc: Location,
    dtype: str | None,
    shape: tuple[int | None, ...] | None,
    *,
    verify_all: bool = False,
    sample_size: int = DEFAULT_SAMPLE,
    progress: Progress | None = None,
) -> V2Plan:
    """The v3 document of a Zarr v2 ``VLenArray``/``VLenBytes`` array and the first of its
    chunks (a sample, or all) that does not fit it, if any."""
    where = str(loc)
    zarray = read_versioned(loc, ZARRAY)
    zattrs = read_versioned(loc, ZATTRS)
    zarray_text = document_text(zarray.data, ZARRAY, where)
    assert zarray_text is not None
    zattrs_text = document_text(zattrs.data, ZATTRS, where)
    new, etype = v3_from_v2(zarray_text, zattrs_text, dtype, shape, where)
    grid = grid_of(new, where)
    picked, checked = _picked(chunk_objects(loc, new, grid), verify_all, sample_size)
    compressor = json.loads(zarray_text).get("compressor")
    bar = counting(progress, len(picked))
    problem = _check_v2_chunks(loc, new, grid, picked, compressor, etype, bar)
    return V2Plan(zarray, zattrs, new, etype, checked, problem)


def upgrade_v2(
    loc: Location,
    dtype: str | None,
    shape: tuple[int | None, ...] | None,
    *,
    verify_all: bool = False,
    sample_size: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    """A Zarr v2 ``VLenArray``/``VLenBytes`` array -> ``ndarray`` + ``vlen-ndarray`` (v3).

    Chunks are checked (a sample, or all) before anything is written, then ``zarr.json`` is
    written and the v2 documents (kept in its attributes) deleted; no chunk is touched.
    """
    where = str(loc)
    check_deletes(loc)
    plan = plan_v2(
        loc, dtype, shape, verify_all=verify_all, sample_size=sample_size, progress=progress
    )
    if plan.problem is not None:
        raise Refused(f"{where}: not upgraded (nothing written): {plan.problem}")
    what = f"upgrade Zarr v2 to ndarray {plan.etype}; {plan.checked}"
    text = json.dumps(plan.meta, indent=2)
    if dry_run:
        diff = md.json_diff({}, plan.meta, f"{where}/{ZARR_JSON}")
        return Outcome(f"dry run: {what}; would remove {ZARRAY}, {ZATTRS}; nothing written", diff)
    unchanged = {ZARRAY: plan.zarray.data, ZATTRS: plan.zattrs.data}
    switch_documents(loc, {ZARR_JSON: text.encode("utf-8")}, [ZARRAY, ZATTRS], unchanged)
    return Outcome(f"{where}: {what}; wrote zarr.json, kept the v2 documents in its attributes")


def _check_v2_chunks(
    loc: Location,
    new: dict[str, Any],
    grid: Grid,
    objects: list[ChunkObject],
    compressor: Any,
    etype: md.ElementType,
    progress: Progress,
) -> str | None:
    """Decode each chunk twice: numcodecs + the codec's decoder, and zarr with ``new``."""
    import numcodecs

    codec = numcodecs.get_codec(dict(compressor)) if compressor is not None else None
    dtype = NDArray(dtype=etype.dtype, shape=tuple(etype.shape))
    padded = grid.padded()
    count = math.prod(grid.chunks)
    with open_array(loc, md.with_shape(new, padded.shape)) as array:
        for obj in objects:
            raw = read_versioned(loc, obj.key).data or b""
            framed = None
            try:
                framed = codec.decode(raw) if codec is not None else raw
                cells = VlenNDArrayCodec.decode_chunk(
                    np.frombuffer(framed, np.uint8), (count,), dtype
                )
            except Exception as exc:  # any failure to decode marks the chunk incompatible
                where_bad = "" if framed is None else _in_padding(framed, grid, obj.index, etype)
                return f"chunk {obj.key}: {type(exc).__name__}: {exc}{where_bad}"
            try:
                through_zarr = np.asarray(array[padded.region(obj.index)], dtype=object)
            except Exception as exc:  # the v3 codec chain cannot read what v2 wrote
                if environment_failure(exc) is not None:
                    raise  # the store failed, not the chunk
                return f"chunk {obj.key}: zarr cannot read it as {etype}: {exc}"
            for i, (a, b) in enumerate(
                zip(through_zarr.reshape(-1), cells.reshape(-1), strict=True)
            ):
                if a.shape != b.shape or a.tobytes() != b.tobytes():
                    return f"chunk {obj.key}: element {i} reads differently through zarr"
            progress.advance()
    return None


def _in_padding(framed: Any, grid: Grid, index: tuple[int, ...], etype: md.ElementType) -> str:
    """Where a v2 chunk's first element that is not whole rows of ``etype`` lies, when beyond
    the array's shape: v2 writers leave fill values in an edge chunk's padding, which zarr
    decodes with the chunk (HyperSpy saving lazily from dask blocks that do not divide the
    navigation writes them). Empty when not, or when the chunk is not readable as items."""
    try:
        flat = NDArray(dtype=etype.dtype, shape=(None,))
        count = math.prod(grid.chunks)
        cells = VlenNDArrayCodec.decode_chunk(np.frombuffer(framed, np.uint8), (count,), flat)
    except Exception:  # not even items of the dtype: the decode error says enough
        return ""
    bad = [i for i, cell in enumerate(cells.reshape(-1)) if cell.nbytes % etype.unit]
    if not bad:
        return ""
    coords, padding = element_place(grid.padded().region(index), bad[0], grid.shape)
    if not padding:
        return ""
    return (
        f" (that element, at {coords}, lies beyond the array's shape {grid.shape}: a fill "
        "value its v2 writer left in the edge chunk's padding, which zarr decodes with the chunk)"
    )


def _restore_v2(node: Node, zarray_text: str, zattrs_text: str | None, *, dry_run: bool) -> Outcome:
    names = [ZARRAY] if zattrs_text is None else [ZARRAY, ZATTRS]
    what = f"downgrade to Zarr v2 (restore {', '.join(names)}, remove zarr.json)"
    if dry_run:
        return Outcome(f"dry run: {what}; nothing written")
    loc = node.loc
    check_deletes(loc)
    for name in names:
        if read_versioned(loc, name).data is not None:
            raise Refused(f"{node.where}: {name} exists already; nothing written.")
    texts = {ZARRAY: zarray_text, ZATTRS: zattrs_text}
    writes = {name: text.encode("utf-8") for name, text in texts.items() if text is not None}
    unchanged = {} if node.version is None else {ZARR_JSON: node.version.data}
    switch_documents(loc, writes, [ZARR_JSON], unchanged)
    return Outcome(f"{node.where}: {what}")
