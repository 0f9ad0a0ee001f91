"""The ``ndarray`` data type a set of cells needs: the pattern their shapes share and the
smallest element dtype that holds every value exactly (pure numpy; no zarr)."""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.errors import NDArrayDTypeError
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES

__all__ = ["RaggedVariableError", "dtype_of", "infer_ndarray_dtype", "inspect_data"]


class RaggedVariableError(NDArrayDTypeError):
    """A ragged variable cannot be written as asked (cells, encoding, mode or target array)."""


@dataclass
class _Cells:
    """What the cells of a variable (or one dask block of it) look like."""

    arrays: int = 0
    missing: int = 0
    others: set[str] = field(default_factory=set)
    ndims: set[int] = field(default_factory=set)
    dtypes: set[np.dtype[Any]] = field(default_factory=set)
    low: tuple[int, ...] | None = None
    high: tuple[int, ...] | None = None

    def merge(self, other: _Cells) -> _Cells:
        low, high = self.low, self.high
        if other.low is not None and other.high is not None:
            if low is None or high is None or len(low) != len(other.low):
                low, high = other.low, other.high  # ndims differ: reported from ``ndims``
            else:
                low = tuple(map(min, low, other.low))
                high = tuple(map(max, high, other.high))
        return _Cells(
            arrays=self.arrays + other.arrays,
            missing=self.missing + other.missing,
            others=self.others | other.others,
            ndims=self.ndims | other.ndims,
            dtypes=self.dtypes | other.dtypes,
            low=low,
            high=high,
        )


def _inspect(cells: np.ndarray) -> _Cells:
    """Summarize an object array of cells (one pass; cells are Python objects)."""
    found = _Cells()
    shapes: list[tuple[int, ...]] = []
    for cell in cells.reshape(-1):
        if cell is None:
            found.missing += 1
            continue
        from_sequence = isinstance(cell, list | tuple)
        if from_sequence:
            try:
                cell = np.asarray(cell)
            except ValueError:  # ragged nested lists: numpy refuses them
                found.others.add("ragged nested list")
                continue
        if not isinstance(cell, np.ndarray) or cell.dtype == object or cell.ndim == 0:
            found.others.add(type(cell).__name__)
            continue
        found.arrays += 1
        if cell.size or not from_sequence:  # an empty list has no dtype of its own (float64)
            found.dtypes.add(cell.dtype)
        shapes.append(cell.shape)
    found.ndims = {len(s) for s in shapes}
    if len(found.ndims) == 1:
        extents = np.array(shapes, dtype=np.int64)
        found.low = tuple(int(v) for v in extents.min(axis=0))
        found.high = tuple(int(v) for v in extents.max(axis=0))
    return found


def _inspect_block(block: np.ndarray) -> np.ndarray:
    out = np.empty((1,) * block.ndim, dtype=object)
    out.reshape(-1)[0] = _inspect(block)
    return out


def inspect_data(data: Any, chunked: bool) -> _Cells:
    """Inspect numpy data directly and dask data block by block (only summaries travel)."""
    if not chunked:
        return _inspect(np.asarray(data, dtype=object))
    if data.ndim == 0:
        return _inspect(np.asarray(data.compute(), dtype=object))
    summaries = data.map_blocks(
        _inspect_block, dtype=object, chunks=tuple((1,) * len(c) for c in data.chunks)
    ).compute()
    return functools.reduce(_Cells.merge, summaries.reshape(-1), _Cells())


# Bits of an integer that a float holds exactly, by float itemsize (half, single, double).
_MANTISSA_BITS: Final = {2: 11, 4: 24, 8: 53}


def _common_dtype(dtypes: Iterable[np.dtype[Any]], name: Hashable) -> str:
    """The smallest element dtype that holds every value of every given dtype exactly."""
    natives = [d.newbyteorder("=") if d.byteorder not in "=|" else d for d in dtypes]
    fix = f'pass encoding={{{name!r}: {{"dtype": NDArray(dtype=..., shape=...)}}}} to choose one'
    try:
        common = functools.reduce(np.promote_types, natives)
    except TypeError as exc:
        raise RaggedVariableError(
            f"variable {name!r}: the cells' dtypes {sorted(map(str, natives))} have no common "
            f"numpy dtype; {fix}."
        ) from exc
    if common.kind in "fc":
        mantissa = _MANTISSA_BITS[common.itemsize // (2 if common.kind == "c" else 1)]
        for d in natives:
            bits = d.itemsize * 8 - (1 if d.kind == "i" else 0)
            if d.kind in "iu" and bits > mantissa:
                raise RaggedVariableError(
                    f"variable {name!r}: cells of dtypes {sorted(map(str, natives))} have no "
                    f"lossless common dtype (numpy promotes them to {common}, which cannot hold "
                    f"every {d} value exactly); {fix}."
                )
    if common.name not in ELEMENT_DTYPES:
        raise RaggedVariableError(
            f"variable {name!r}: the cells' dtype {common} is not an ndarray element dtype "
            f"(one of {', '.join(ELEMENT_DTYPES)}); convert the cells or {fix}."
        )
    return common.name


def dtype_of(found: _Cells, name: Hashable) -> NDArray:
    if found.others:
        raise RaggedVariableError(
            f"variable {name!r} mixes ndarray cells with {sorted(found.others)} cells; every cell "
            "must be an ndarray (or nested sequence) of numbers with at least one dimension, or "
            "None for a missing cell (written as the fill cell)."
        )
    if not found.arrays:
        raise RaggedVariableError(
            f"variable {name!r} has no cell to infer the element dtype and shape pattern from "
            f'(every cell is None); pass encoding={{{name!r}: {{"dtype": NDArray(dtype=..., '
            "shape=...)}}."
        )
    if len(found.ndims) != 1 or found.low is None or found.high is None:
        raise RaggedVariableError(
            f"variable {name!r} holds cells of {len(found.ndims)} different numbers of "
            f"dimensions {sorted(found.ndims)}; every cell of an ndarray array has the same "
            "number of dimensions (reshape the cells, e.g. to (n, 1))."
        )
    if not found.dtypes:
        raise RaggedVariableError(
            f"variable {name!r}: every cell is an empty list, which has no element dtype; pass "
            f'encoding={{{name!r}: {{"dtype": NDArray(dtype=..., shape=...)}}}}.'
        )
    pattern = tuple(None if lo != hi else lo for lo, hi in zip(found.low, found.high, strict=True))
    if any(extent == 0 for extent in pattern):
        # Every cell is empty along an axis: only a variable dimension admits extent 0.
        pattern = tuple(None if extent == 0 else extent for extent in pattern)
    return NDArray(dtype=_common_dtype(found.dtypes, name), shape=pattern)


def infer_ndarray_dtype(cells: np.ndarray, name: Hashable = None) -> NDArray:
    """The ``ndarray`` data type of an object array of cells.

    Every non-``None`` cell must be an ndarray (or nested sequence) of numbers with the same
    number of dimensions. Axes whose extent differs between cells become variable (``None``),
    the others keep their extent (an axis that is 0 in every cell is variable too). The element
    dtype is the smallest of the 14 element dtypes that holds every cell's values exactly
    (int64 with float64 cells is refused: no dtype holds both exactly).

    >>> import numpy as np
    >>> cells = np.empty(2, dtype=object)
    >>> cells[:] = [np.zeros((3, 2), "int16"), np.ones((1, 2), "float32")]
    >>> infer_ndarray_dtype(cells)
    NDArray(dtype='float32', shape=(None, 2))
    """
    return dtype_of(_inspect(np.asarray(cells, dtype=object)), name)
