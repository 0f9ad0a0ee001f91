"""The store tool as a Python API, a function per subcommand. Its one positional argument is the
node: a path or URL as the CLI takes it, or a ``zarr.storage.StoreLike`` (the tool never commits
an icechunk session), with the keywords of :class:`Where`. Each returns an :class:`Outcome`
(``message``: what the command prints); a refusal raises :class:`~.errors.Refused`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from zarr_ndarray_tool import _inspect, _tree
from zarr_ndarray_tool._documents import ZARRAY
from zarr_ndarray_tool._export import Export, export
from zarr_ndarray_tool._stores import Node, Where, load_node, location
from zarr_ndarray_tool._tree import DEFAULT_SAMPLE, Options
from zarr_ndarray_tool.errors import Outcome, Progress, Refused

if TYPE_CHECKING:
    from zarr.storage import StoreLike

__all__ = ["Export", "Info", "Outcome", "Verify", "Where", "downgrade", "export", "info"]
__all__ += ["migrate", "node", "upgrade", "verify"]


@dataclass(frozen=True)
class Info(Outcome):
    """``info``: ``report`` is what ``info --json`` prints (``info["extent"]`` reads it too)."""

    report: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.report[key]


@dataclass(frozen=True)
class Verify(Outcome):
    """``verify``: the first ``max_errors`` failures as (key of the stored object, what is
    wrong), and how many failed in all."""

    problems: tuple[tuple[str, str], ...] = ()
    failed: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed


def node(store: StoreLike, **where: Unpack[Where]) -> Node:
    """Load the array (its document, grid and stored chunk objects)."""
    return load_node(location(store, **where))


def info(store: StoreLike, *, progress: Progress | None = None, **where: Unpack[Where]) -> Info:
    """``info``: data type, codecs, chunks, and the distribution of the cells' extents over the
    written chunks; chunks that cannot be read are counted (``report["unreadable_chunks"]``)."""
    report = _inspect.info(node(store, **where), progress)
    return Info(_inspect.render(report), report=report)


def verify(
    store: StoreLike,
    *,
    max_errors: int = 20,
    progress: Progress | None = None,
    **where: Unpack[Where],
) -> Verify:
    """``verify``: decode every stored chunk object, listing every failure (up to
    ``max_errors``); the message also counts the chunks of the grid that have no object."""
    message, problems, failed = _inspect.verify(node(store, **where), progress, max_errors)
    return Verify(message, problems=tuple(problems), failed=failed)


def upgrade(
    store: StoreLike,
    *,
    dtype: str | None = None,
    shape: tuple[int | None, ...] | None = None,
    verify_all: bool = False,
    sample: int = DEFAULT_SAMPLE,
    dry_run: bool = False,
    progress: Progress | None = None,
    **where: Unpack[Where],
) -> Outcome:
    """``upgrade``: type a raw-bytes array as ``ndarray`` (``dtype``, pattern ``shape``). A Zarr
    v2 ``VLenArray`` array needs neither (default: its dtype, ``[null]``); a v2 ``VLenBytes``
    array needs both; a Zarr v2 group is upgraded whole."""
    if dtype is not None and shape is None:
        raise Refused("dtype needs shape, the element pattern (e.g. shape=(None, 2)).")
    loc = location(store, **where)
    options = Options(dtype, shape, None if verify_all else sample, dry_run, progress)
    v2 = loc.read() is None and any(loc.read(k) is not None for k in (ZARRAY, _tree.ZGROUP))
    if v2 or _tree.is_upgraded_tree(loc):
        return _tree.upgrade_tree(loc, options)
    loaded = load_node(loc)  # refuses what is not there, or not an array
    if dtype is None or shape is None:
        raise Refused(
            f"{loaded.where}: upgrading a Zarr v3 raw-bytes array needs the element type: --dtype "
            "D --shape S (API: dtype=, shape=), e.g. --dtype float32 --shape null,2."
        )
    return _tree.rewrite(loaded, "upgrade", options)


def downgrade(store: StoreLike, *, dry_run: bool = False, **where: Unpack[Where]) -> Outcome:
    """``downgrade``: ``ndarray`` + ``vlen-ndarray`` -> raw bytes + ``vlen-bytes``; a hierarchy
    ``upgrade`` turned from Zarr v2 to v3 gets its v2 documents back."""
    if _tree.is_upgraded_tree(loc := location(store, **where)):
        return _tree.downgrade_tree(loc, dry_run)
    return _tree.rewrite(load_node(loc), "downgrade", Options(dry_run=dry_run))


def migrate(store: StoreLike, *, dry_run: bool = False, **where: Unpack[Where]) -> Outcome:
    """``migrate``: the zarr-vlen-ndarray 0.1.x data type -> ``ndarray``."""
    return _tree.rewrite(node(store, **where), "migrate", Options(dry_run=dry_run))
