"""HyperSpy's ragged arrays in zspy stores (pure numpy): the pattern an upgrade gives one.

HyperSpy stores a ragged signal's cells flattened, as a ``VLenArray`` array ``K``, and each
cell's shape in a sibling array, ``_ragged_shapes_K`` (``ragged_shapes`` before RosettaSciIO
0.2, preferred by its reader when present). When every cell has one rank k >= 1 and the same
trailing extents, the flattened cells are the bytes of ``[null, d1..d(k-1)]`` cells.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_ndarray_tool.errors import Refused

SIBLING_PREFIX = "_ragged_shapes_"
LEGACY_SIBLING = "ragged_shapes"

Pattern = tuple[int | None, ...]


def is_sibling(name: str) -> bool:
    """True for the name of a shape sibling (it is never itself given a sibling)."""
    return name == LEGACY_SIBLING or name.startswith(SIBLING_PREFIX)


def sibling_of(name: str, arrays: set[str]) -> str | None:
    """The shape sibling of the ragged array ``name`` among the arrays of its group, found as
    RosettaSciIO's reader finds it; None when it has none."""
    if is_sibling(name):
        return None
    for candidate in (LEGACY_SIBLING, SIBLING_PREFIX + name):
        if candidate in arrays:
            return candidate
    return None


def pattern_of(
    ranks: npt.NDArray[np.int64],
    extents: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    grid: tuple[int, ...],
    where: str,
) -> tuple[Pattern, str]:
    """The pattern of a ragged array whose cells (C order over the array's ``grid``) have the
    ranks ``ranks``, their extents back to back in ``extents`` and ``sizes`` items each; and
    why, in words. Refused when a shape does not give its cell's item count."""
    ends = np.cumsum(ranks)
    starts = ends - ranks
    items = np.ones(ranks.size, dtype=np.int64)  # a 0-d cell holds one item
    shaped = ranks > 0
    if shaped.any():  # each such cell's extents lie back to back, up to the next one's
        items[shaped] = np.multiply.reduceat(extents, starts[shaped])
    bad = np.flatnonzero(items != sizes)
    if bad.size:
        at = int(bad[0])
        cell = tuple(int(i) for i in np.unravel_index(at, grid))
        shape = tuple(int(e) for e in extents[starts[at] : ends[at]])
        raise Refused(
            f"{where}: the shape sibling says cell {cell} is {shape} ({int(items[at])} items), "
            f"but the data holds {int(sizes[at])} items there; the two arrays disagree, so "
            "the store cannot be upgraded as it is (check that HyperSpy wrote both)."
        )
    if not ranks.size:
        return (None,), "it holds no cells"
    rank = int(ranks[0])
    if not (ranks == rank).all():
        other = int(np.flatnonzero(ranks != rank)[0])
        return (None,), (
            f"its cells differ in rank ({_cell_text(0, grid, extents, starts, ends)} but "
            f"{_cell_text(other, grid, extents, starts, ends)}), so the cells stay flattened"
        )
    if rank <= 1:
        return (None,), "every cell is (n,)" if rank else "every cell is 0-d (one item)"
    table = extents.reshape(-1, rank)[:, 1:]
    odd = np.flatnonzero((table != table[0]).any(axis=1))
    if odd.size:
        return (None,), (
            f"its cells differ in trailing extents ({_cell_text(0, grid, extents, starts, ends)}"
            f" but {_cell_text(int(odd[0]), grid, extents, starts, ends)}), so the cells stay "
            "flattened"
        )
    trailing = tuple(int(d) for d in table[0])
    return (None, *trailing), f"every cell is (n, {', '.join(map(str, trailing))})"


def _cell_text(
    at: int,
    grid: tuple[int, ...],
    extents: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
) -> str:
    cell = tuple(int(i) for i in np.unravel_index(at, grid))
    shape = tuple(int(e) for e in extents[starts[at] : ends[at]])
    return f"cell {cell} is {shape}"
