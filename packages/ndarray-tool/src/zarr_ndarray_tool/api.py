"""The store tool as a Python API: each function is the subcommand of the same name (the CLI
calls it). Its one positional argument is the array (for ``upgrade`` and ``downgrade`` also a
Zarr v2 hierarchy's group) as the command line names it (a path or URL, with
``storage_options`` and ``backend``) or any ``zarr.storage.StoreLike`` (an icechunk session's
store included), with ``path=`` the array's path inside it. Each returns an :class:`Outcome`
(``message``, the text the command prints, and the command's data); a refusal raises
:class:`~.errors.Refused` having changed nothing. ``progress(done, total)`` is called as a
command advances. The tool never commits an icechunk session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zarr_ndarray_tool import _export, _inspect, _tree
from zarr_ndarray_tool._stores import Node, load_node, location
from zarr_ndarray_tool._tree import DEFAULT_SAMPLE, Options, Outcome
from zarr_ndarray_tool.errors import Progress, Refused

if TYPE_CHECKING:
    from zarr.storage import StoreLike

__all__ = [
    "Export", "Info", "Outcome", "Verify", "downgrade", "export", "info", "migrate", "node",
    "upgrade", "verify",
]  # fmt: skip


@dataclass(frozen=True)
class Info(Outcome):
    """``info``: ``report`` is what ``info --json`` prints (``info["extent"]`` reads it too),
    ``message`` the text ``info`` prints."""

    report: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.report[key]


@dataclass(frozen=True)
class Verify(Outcome):
    """``verify``: ``problems`` lists the first ``max_errors`` failures as (key of the stored
    object, what is wrong), ``failed`` counts them all; ``ok`` when none failed."""

    problems: tuple[tuple[str, str], ...] = ()
    failed: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass(frozen=True)
class Export(Outcome):
    """``export``: ``rows`` written to ``out``."""

    rows: int = 0
    out: Path = Path()


def node(
    store: StoreLike,
    *,
    path: str = "",
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Node:
    """Load the array (its document, grid and stored chunk objects)."""
    return load_node(location(store, path, storage_options, backend))


def info(
    store: StoreLike,
    *,
    path: str = "",
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Info:
    """``info``: data type, codecs, chunks, and the distribution of the cells' extents over the
    written chunks; chunks that cannot be read are counted (``report["unreadable_chunks"]``)."""
    report = _inspect.info(
        node(store, path=path, storage_options=storage_options, backend=backend), progress
    )
    return Info(_inspect.render(report), report=report)


def verify(
    store: StoreLike,
    *,
    path: str = "",
    max_errors: int = 20,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Verify:
    """``verify``: decode every stored chunk object; every failure is listed (up to
    ``max_errors``) and counted. The message also counts the chunks of the grid that have no
    object (they read as the fill value)."""
    loaded = node(store, path=path, storage_options=storage_options, backend=backend)
    message, problems, failed = _inspect.verify(loaded, progress, max_errors)
    return Verify(message, problems=tuple(problems), failed=failed)


def export(
    store: StoreLike,
    *,
    parquet: str | Path,
    path: str = "",
    column: str | None = None,
    dims: list[str] | None = None,
    select: Any = ...,
    compression: str = "zstd",
    compression_level: int | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Export:
    """``export``: the cells of ``select`` (ints, slices of step 1, ``...``; default all) to the
    local file ``parquet``: Parquet, or an Arrow IPC file if it ends in ``.arrow``,
    ``.feather`` or ``.ipc``; ``compression`` one of zstd, snappy, gzip, brotli, lz4, none
    (IPC: zstd, lz4, none)."""
    loaded = node(store, path=path, storage_options=storage_options, backend=backend)
    out = Path(parquet)
    rows = _export.export(
        loaded, out, column=column, dims=dims, select=select, overwrite=overwrite,
        compression=compression, compression_level=compression_level, progress=progress,
    )  # fmt: skip
    return Export(
        f"{loaded.where}: wrote {rows} row{'s' * (rows != 1)} to {out}", rows=rows, out=out
    )


def upgrade(
    store: StoreLike,
    *,
    path: str = "",
    dtype: str | None = None,
    shape: tuple[int | None, ...] | None = None,
    verify_all: bool = False,
    sample: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
    progress: Progress | None = None,
) -> Outcome:
    """``upgrade``: type a raw-bytes array as ``ndarray`` (``dtype``, pattern ``shape``). A Zarr
    v2 ``VLenArray`` array needs neither (default: its dtype, ``[null]``); a v2 ``VLenBytes``
    array needs both; a Zarr v2 group is upgraded whole."""
    if dtype is not None and shape is None:
        raise Refused("dtype needs shape, the element pattern (e.g. shape=(None, 2)).")
    loc = location(store, path, storage_options, backend)
    options = Options(dtype, shape, verify_all, sample, dry_run, progress)
    if _tree.is_v2(loc, _tree.ZGROUP) or _tree.is_upgraded_tree(loc):
        return _tree.upgrade_tree(loc, options)
    if _tree.is_v2(loc):
        return _tree.upgrade_v2(loc, options)
    loaded = load_node(loc)  # refuses what is not there, or not an array
    if dtype is None or shape is None:
        raise Refused(
            f"{loaded.where}: upgrading a Zarr v3 raw-bytes array needs the element type: "
            "--dtype D --shape S (API: dtype=, shape=), e.g. --dtype float32 --shape null,2."
        )
    return _tree.upgrade(loaded, options)


def downgrade(
    store: StoreLike,
    *,
    path: str = "",
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Outcome:
    """``downgrade``: ``ndarray`` + ``vlen-ndarray`` -> raw bytes + ``vlen-bytes``; a hierarchy
    ``upgrade`` turned from Zarr v2 to v3 gets its v2 documents back."""
    loc = location(store, path, storage_options, backend)
    if _tree.is_upgraded_tree(loc):
        return _tree.downgrade_tree(loc, dry_run)
    return _tree.downgrade(load_node(loc), dry_run)


def migrate(
    store: StoreLike,
    *,
    path: str = "",
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    backend: str = "fsspec",
) -> Outcome:
    """``migrate``: the zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    return _tree.migrate(
        node(store, path=path, storage_options=storage_options, backend=backend), dry_run
    )
