"""The store tool as a Python API: each function is the subcommand of the same name (the CLI
calls it), on the array as the command line names it (a path or URL, with ``storage_options``
and ``backend``) or as zarr does (any ``zarr.storage.StoreLike``, an icechunk session's store
included) with the array's path in it. A refusal raises :class:`~.errors.Refused` having
changed nothing; the tool never commits an icechunk session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zarr_ndarray_dtype.chunks import Selection
from zarr_ndarray_tool import _commands as commands
from zarr_ndarray_tool import _tree as tree
from zarr_ndarray_tool._commands import DEFAULT_SAMPLE, Outcome
from zarr_ndarray_tool._export import export as _export
from zarr_ndarray_tool._info import gather
from zarr_ndarray_tool._scan import Node, load_location
from zarr_ndarray_tool._stores import location
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.progress import Progress, counting

if TYPE_CHECKING:
    from zarr.storage import StoreLike

__all__ = ["Outcome", "downgrade", "export", "info", "migrate", "node", "upgrade", "verify"]


def node(
    store: StoreLike,
    path: str = "",
    *,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Node:
    """Load the array (its document, grid and stored chunk objects)."""
    return load_location(location(store, path, storage_options, backend))


def info(
    store: StoreLike,
    path: str = "",
    *,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The ``info`` report (what ``info --json`` prints) of the array."""
    loaded = node(store, path, storage_options=storage_options, backend=backend)
    return gather(loaded, counting(progress, len(loaded.objects)))


def upgrade(
    store: StoreLike,
    path: str = "",
    *,
    dtype: str | None = None,
    shape: tuple[int | None, ...] | None = None,
    verify_all: bool = False,
    sample: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Outcome:
    """``upgrade``: type a raw-bytes array as ``ndarray`` (``dtype``, pattern ``shape``).

    A Zarr v2 ``VLenArray`` array needs neither (default: its dtype, ``[null]``); a v2
    ``VLenBytes`` array needs both; a Zarr v2 group is upgraded whole.
    """
    if dtype is not None and shape is None:
        raise Refused("dtype needs shape, the element pattern (e.g. shape=(None, 2)).")
    loc = location(store, path, storage_options, backend)
    options: dict[str, Any] = {
        "verify_all": verify_all, "sample_size": sample, "dry_run": dry_run, "progress": progress
    }  # fmt: skip
    if tree.is_v2_tree(loc) or tree.is_upgraded_tree(loc):
        return tree.upgrade_tree(loc, dtype, shape, **options)
    if commands.is_v2(loc):
        return commands.upgrade_v2(loc, dtype, shape, **options)
    loaded = load_location(loc)  # refuses what is not there, or not an array
    if dtype is None or shape is None:
        raise Refused(
            f"{loaded.where}: upgrading a Zarr v3 raw-bytes array needs the element type: "
            "--dtype D --shape S (API: dtype=, shape=), e.g. --dtype float32 --shape null,2."
        )
    return commands.upgrade(loaded, dtype, shape, **options)


def downgrade(
    store: StoreLike,
    path: str = "",
    *,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Outcome:
    """``downgrade``: ``ndarray`` + ``vlen-ndarray`` -> raw bytes + ``vlen-bytes``; a hierarchy
    ``upgrade`` turned from Zarr v2 to v3 gets its v2 documents back."""
    loc = location(store, path, storage_options, backend)
    if tree.is_upgraded_tree(loc):
        return tree.downgrade_tree(loc, dry_run=dry_run)
    return commands.downgrade(load_location(loc), dry_run=dry_run)


def migrate(
    store: StoreLike,
    path: str = "",
    *,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Outcome:
    """``migrate``: the zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    loaded = node(store, path, storage_options=storage_options, backend=backend)
    return commands.migrate(loaded, dry_run=dry_run)


def verify(
    store: StoreLike,
    path: str = "",
    *,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Outcome:
    """``verify``: decode every stored chunk object; Refused naming the first bad one. The
    message also counts the chunks of the grid that have no object (they read as fill)."""
    loaded = node(store, path, storage_options=storage_options, backend=backend)
    return commands.verify(loaded, progress=progress)


def export(
    store: StoreLike,
    path: str,
    out: str | Path,
    *,
    column: str | None = None,
    dims: list[str] | None = None,
    select: Selection = ...,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> int:
    """``export``: write the cells of ``select`` (numpy basic indexing: ints, slices of step 1,
    ``...``; default all) to the local Parquet file ``out``; the number of rows written."""
    loaded = node(store, path, storage_options=storage_options, backend=backend)
    return _export(
        loaded,
        Path(out),
        column=column,
        dims=dims,
        select=select,
        overwrite=overwrite,
        progress=progress,
    )
