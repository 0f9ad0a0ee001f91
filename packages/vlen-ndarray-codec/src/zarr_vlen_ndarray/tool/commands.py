"""The store tool's operations on a loaded array (:class:`~.scan.Node`), for the CLI and the API.

Each returns an :class:`Outcome` (the line the CLI prints, and the diff of a dry run) or raises
:class:`~zarr_vlen_ndarray.tool.errors.Refused` having changed nothing. A rewrite checks that
zarr reads the new document, then writes ``zarr.json`` once, conditional on the version read
when the node was loaded (:func:`.stores.write_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zarr_vlen_ndarray.tool import metadata as md
from zarr_vlen_ndarray.tool.errors import Refused
from zarr_vlen_ndarray.tool.progress import Progress
from zarr_vlen_ndarray.tool.scan import Node, sample
from zarr_vlen_ndarray.tool.stores import ZARR_JSON, open_array, write_key
from zarr_vlen_ndarray.tool.verify import check_payloads, verify_chunks

__all__ = ["DEFAULT_SAMPLE", "Outcome", "downgrade", "migrate", "upgrade", "verify"]

#: Chunk objects ``upgrade`` checks unless told to check all.
DEFAULT_SAMPLE = 16


@dataclass(frozen=True)
class Outcome:
    """What an operation did: a one-line message, and for a dry run the ``zarr.json`` diff."""

    message: str
    diff: str = ""


def _quiet(total: int) -> Progress:
    return Progress(total, "", enabled=False)


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
    objects = node.objects if verify_all else sample(node.objects, sample_size)
    padded = node.grid.padded()
    view = md.with_shape(md.bytes_view(node.meta, node.where), padded.shape)
    bar = progress if progress is not None else _quiet(len(objects))
    with open_array(node.loc, view) as raw:
        problem = check_payloads(node, raw, padded, objects, etype, bar)
    if problem is not None:
        raise Refused(f"{node.where}: not upgraded (nothing written): {problem}")
    checked = f"checked {len(objects)} of {len(node.objects)} chunk objects"
    if len(objects) < len(node.objects):
        checked += " (--verify-all checks every one)"
    return rewrite(node, new, f"upgrade to {etype}; {checked}", dry_run=dry_run)


def downgrade(node: Node, *, dry_run: bool = False) -> Outcome:
    """``ndarray`` + ``vlen-ndarray`` -> ``variable_length_bytes`` + ``vlen-bytes``."""
    new = md.downgrade(node.meta, node.where)
    what = f"downgrade to {md.DOWNGRADE_DTYPE_NAME} + vlen-bytes"
    return rewrite(node, new, what, dry_run=dry_run)


def migrate(node: Node, *, dry_run: bool = False) -> Outcome:
    """zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    new = md.migrate(node.meta, node.where)
    return rewrite(node, new, f"migrate to ndarray {md.element_type(new)}", dry_run=dry_run)


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
    """Decode every stored chunk object; Refused naming the first bad one."""
    if md.data_type_kind(node.meta.get("data_type")) == "legacy":
        raise Refused(
            f"{node.where}: the data type is zarr-vlen-ndarray 0.1.x metadata, which no longer "
            "resolves; run `migrate` first."
        )
    bar = progress if progress is not None else _quiet(len(node.objects))
    with open_array(node.loc, node.meta) as array:
        problem = verify_chunks(node, array, node.objects, bar)
    if problem is not None:
        raise Refused(f"{node.where}: verify failed at {problem}")
    return Outcome(f"{node.where}: all {len(node.objects)} chunk objects decode")
