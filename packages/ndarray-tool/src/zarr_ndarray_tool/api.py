"""The store tool as a Python API: the CLI's operations on any ``zarr.abc.store.Store``.

Each function takes a store and the array's path inside it (``""`` for the root node) and works
exactly like the subcommand of the same name: ``zarr.storage.LocalStore``, ``ZipStore``,
``FsspecStore``, ``ObjectStore``, ``MemoryStore`` or an icechunk session's ``session.store``
(commit the session afterwards: the tool never commits). A rewrite writes ``zarr.json`` once,
conditional on the version read where the store supports it (see :mod:`.remote`); anything the
tool will not do raises :class:`~zarr_ndarray_tool.errors.Refused` having changed nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zarr_ndarray_tool import commands, tree
from zarr_ndarray_tool.commands import DEFAULT_SAMPLE, Outcome
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.export import export as _export
from zarr_ndarray_tool.info import gather
from zarr_ndarray_tool.progress import Progress
from zarr_ndarray_tool.scan import Node, load_location
from zarr_ndarray_tool.stores import in_store

__all__ = ["Outcome", "downgrade", "export", "info", "migrate", "node", "upgrade", "verify"]


def node(store: Any, path: str = "") -> Node:
    """Load the array at ``path`` in ``store`` (its document, grid and stored chunk objects)."""
    return load_location(in_store(store, path))


def info(store: Any, path: str = "") -> dict[str, Any]:
    """The ``info`` report (what ``info --json`` prints) of the array."""
    loaded = node(store, path)
    return gather(loaded, Progress(len(loaded.objects), "", enabled=False))


def upgrade(
    store: Any,
    path: str = "",
    *,
    dtype: str | None = None,
    shape: tuple[int | None, ...] | None = None,
    verify_all: bool = False,
    sample: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
) -> Outcome:
    """``upgrade``: type a raw-bytes array as ``ndarray`` (``dtype``, pattern ``shape``).

    A Zarr v2 ``VLenArray`` array needs neither (default: its dtype, ``[null]``); a v2
    ``VLenBytes`` array needs both.
    """
    loc = in_store(store, path)
    if tree.is_v2_tree(loc) or tree.is_upgraded_tree(loc):
        return tree.upgrade_tree(
            loc, dtype, shape, verify_all=verify_all, sample_size=sample, dry_run=dry_run
        )
    if commands.is_v2(loc):
        return commands.upgrade_v2(
            loc, dtype, shape, verify_all=verify_all, sample_size=sample, dry_run=dry_run
        )
    if dtype is None or shape is None:
        raise Refused(f"{loc}: upgrading a Zarr v3 raw-bytes array needs dtype and shape.")
    return commands.upgrade(
        load_location(loc),
        dtype,
        shape,
        verify_all=verify_all,
        sample_size=sample,
        dry_run=dry_run,
    )


def downgrade(store: Any, path: str = "", *, dry_run: bool = False) -> Outcome:
    """``downgrade``: ``ndarray`` + ``vlen-ndarray`` -> raw bytes + ``vlen-bytes``; a hierarchy
    ``upgrade`` turned from Zarr v2 to v3 gets its v2 documents back."""
    loc = in_store(store, path)
    if tree.is_upgraded_tree(loc):
        return tree.downgrade_tree(loc, dry_run=dry_run)
    return commands.downgrade(load_location(loc), dry_run=dry_run)


def migrate(store: Any, path: str = "", *, dry_run: bool = False) -> Outcome:
    """``migrate``: the zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    return commands.migrate(node(store, path), dry_run=dry_run)


def verify(store: Any, path: str = "") -> Outcome:
    """``verify``: decode every stored chunk object; Refused naming the first bad one."""
    return commands.verify(node(store, path))


def export(
    store: Any,
    path: str,
    out: str | Path,
    *,
    column: str | None = None,
    dims: list[str] | None = None,
    overwrite: bool = False,
) -> int:
    """``export``: write the cells to the local Parquet file ``out``."""
    return _export(node(store, path), Path(out), column=column, dims=dims, overwrite=overwrite)
