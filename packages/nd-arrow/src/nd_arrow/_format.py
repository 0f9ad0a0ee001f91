"""The ``nd_arrow.array`` format, version 1, free of pyarrow: the single home of its constants,
and the rules that need no Arrow objects (extension metadata, dimension names, size products with
overflow detection, the grid of a record batch). FORMAT.md is the specification."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidAttributeError,
    InvalidDimensionsError,
    InvalidEncodingError,
    NotSupportedError,
    ShapeMismatchError,
)

__all__ = [
    "ATTRS_FIELD",
    "DIM_NAMES_FIELD",
    "DIM_SIZES_FIELD",
    "ENCODING_VERSION",
    "EXTENSION_METADATA",
    "EXTENSION_METADATA_KEY",
    "EXTENSION_NAME",
    "EXTENSION_NAME_KEY",
    "FIXED_SHAPE_TENSOR",
    "GLOBAL_ATTRIBUTES_EXTENSION",
    "GLOBAL_ATTRIBUTES_FIELD",
    "INT32_MAX",
    "ITEM_FIELD",
    "MAX_DIM_SIZE",
    "VALUES_FIELD",
    "VARIABLE_SHAPE_TENSOR",
    "check_dim_names",
    "default_dim_names",
    "infer_grid",
    "parse_extension_metadata",
    "size_products",
]

#: Field metadata keys of the Arrow extension type mechanism.
EXTENSION_NAME_KEY = b"ARROW:extension:name"
EXTENSION_METADATA_KEY = b"ARROW:extension:metadata"

#: Extension name in ``ARROW:extension:name`` of every nd column.
EXTENSION_NAME = "nd_arrow.array"
#: The encoding version this package writes and reads.
ENCODING_VERSION = 1
#: ``ARROW:extension:metadata`` as written: compact JSON.
EXTENSION_METADATA = b'{"version":1}'

#: Storage children, in their fixed order.
VALUES_FIELD = "values"
DIM_NAMES_FIELD = "dim_names"
DIM_SIZES_FIELD = "dim_sizes"
ATTRS_FIELD = "attrs"
#: Name of the list item field in values, dim_names and dim_sizes (written; any name is read).
ITEM_FIELD = "item"

#: Name and extension tag of the global-attributes column of an encoded record batch.
GLOBAL_ATTRIBUTES_FIELD = "__global_attrs__"
GLOBAL_ATTRIBUTES_EXTENSION = "nd_arrow.global_attributes"

#: Dimension sizes are stored as UInt32.
MAX_DIM_SIZE = 2**32 - 1
#: Largest Int32: the last offset of a List or Utf8 array, and a canonical tensor's shape entry.
INT32_MAX = 2**31 - 1

#: Arrow's canonical tensor extension names (converted to and from by :mod:`nd_arrow._tensor`).
FIXED_SHAPE_TENSOR = "arrow.fixed_shape_tensor"
VARIABLE_SHAPE_TENSOR = "arrow.variable_shape_tensor"

# Products at or above this bound are not exact in float64; they are recomputed with Python ints.
_EXACT_FLOAT = float(2**53)
_INT64_MAX = 2**63 - 1


def parse_extension_metadata(serialized: bytes, extension: str = EXTENSION_NAME) -> int:
    """Return the encoding version from ``ARROW:extension:metadata`` after checking it.

    Unknown keys are ignored (a later minor revision may add some); a missing or non-integer
    ``version`` is an :class:`InvalidEncodingError`, a version other than 1 a
    :class:`NotSupportedError`: a reader refuses what it could misread.
    """
    try:
        meta = json.loads(bytes(serialized).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidEncodingError(
            f"{extension}: extension metadata {bytes(serialized)!r} is not JSON; "
            f"it must be an object like {EXTENSION_METADATA.decode()} (FORMAT 2/1)"
        ) from exc
    if not isinstance(meta, dict) or "version" not in meta:
        raise InvalidEncodingError(
            f"{extension}: extension metadata {bytes(serialized)!r} has no 'version' key; "
            f"it must be an object like {EXTENSION_METADATA.decode()} (FORMAT 2/1)"
        )
    version = meta["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidEncodingError(
            f"{extension}: extension metadata version {version!r} is not an integer written "
            "as one (no fraction, no exponent) (FORMAT 2/1)"
        )
    if version != ENCODING_VERSION:
        raise NotSupportedError(
            f"{extension}: encoding version {version} is not supported; this reader supports "
            f"version {ENCODING_VERSION}. Upgrade nd-arrow to read it (FORMAT 2/2)."
        )
    return version


def default_dim_names(rank: int) -> tuple[str, ...]:
    """Names used when the caller gives none: ``dim_0``, ``dim_1``, ... (as xarray does)."""
    return tuple(f"dim_{i}" for i in range(rank))


def check_dim_names(names: Sequence[object], rank: int, where: str) -> tuple[str, ...]:
    """Check one row's dimension names against its rank; return them as a tuple of str.

    ``where`` names the row or array in the error message.
    """
    if isinstance(names, str):
        raise InvalidArgumentError(
            f"{where}: dims must be a sequence of names, got the string {names!r}; "
            f"write dims=[{names!r}] for one dimension"
        )
    out = tuple(names)
    if len(out) != rank:
        raise InvalidDimensionsError(
            f"{where}: {len(out)} dimension names {list(out)!r} for an array of rank {rank}; "
            "the rule is one name per axis"
        )
    for name in out:
        if not isinstance(name, str):
            raise InvalidDimensionsError(
                f"{where}: dimension name {name!r} is a {type(name).__name__}; names are strings"
            )
        if not name:
            raise InvalidDimensionsError(
                f"{where}: empty dimension name in {list(out)!r}; names must not be empty"
            )
    if len(set(out)) != len(out):
        dup = next(n for n in out if out.count(n) > 1)
        raise InvalidDimensionsError(
            f"{where}: dimension name {dup!r} appears twice in {list(out)!r}; "
            "names must be unique within an array"
        )
    return out  # type: ignore[return-value]


def size_products(
    sizes: npt.NDArray[np.integer], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Per-row product of ``sizes[starts[i]:ends[i]]`` (1 for an empty range), vectorized.

    Returns ``(products, overflow)``: ``overflow[i]`` is True where the product of the row's
    non-zero sizes does not fit in int64 (FORMAT 4/4: whatever the order of the axes, a row with
    a zero size and huge others overflows too). Rows are grouped by rank; a group whose largest
    size bounds every product below 2**53 is multiplied in int64 directly, others are screened in
    float64 and only the rare rows at or above 2**53 are recomputed with Python integers.
    """
    products, overflow = _products(sizes, starts, ends)
    if len(sizes) and not sizes.all():
        # A zero makes the product 0 (int64 wrap-around before it is harmless); the overflow
        # check is on the non-zero sizes.
        overflow = _products(np.maximum(sizes, 1), starts, ends)[1]
    return products, overflow


def _products(
    sizes: npt.NDArray[np.integer], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """:func:`size_products` with overflow checked on the sizes as they are."""
    n = len(starts)
    counts = ends - starts
    products = np.ones(n, np.int64)
    overflow = np.zeros(n, np.bool_)
    if n == 0 or len(sizes) == 0:
        return products, overflow
    largest = float(np.max(sizes))
    low, high = int(np.min(counts)), int(np.max(counts))
    unique_ranks = [low] if low == high else np.unique(counts).tolist()
    if (
        len(unique_ranks) == 1
        and unique_ranks[0] > 0
        and np.array_equal(starts, starts[0] + unique_ranks[0] * np.arange(n, dtype=np.int64))
    ):
        # One rank, rows laid out back to back (the common case): a reshape, no gather.
        r = unique_ranks[0]
        groups = [(np.arange(n), sizes[int(starts[0]) : int(starts[0]) + n * r].reshape(n, r))]
    else:
        groups = []
        for rank in unique_ranks:
            if rank <= 0:
                continue
            rows = np.flatnonzero(counts == rank)
            idx = starts[rows, None] + np.arange(rank, dtype=np.int64)[None, :]
            groups.append((rows, sizes[idx]))
    for rows, block in groups:
        r = block.shape[1]
        if largest <= 1 or r * math.log2(largest) < 53:
            # No product in this group can reach 2**53: int64 is exact and cannot overflow.
            products[rows] = _row_products(block, np.int64)
            continue
        fprod = _row_products(block, np.float64)
        small = fprod < _EXACT_FLOAT
        products[rows[small]] = _row_products(block[small], np.int64)
        for j in np.flatnonzero(~small).tolist():
            exact_prod = 1
            for size in block[j].tolist():
                exact_prod *= int(size)
            i = int(rows[j])
            if exact_prod > _INT64_MAX:
                overflow[i] = True
                products[i] = -1
            else:
                products[i] = exact_prod
    return products, overflow


def _row_products(block: npt.NDArray[np.integer], dtype: type[np.number[Any]]) -> npt.NDArray[Any]:
    """Product of each row of a 2-D block, one multiply per column (a reduction along short
    rows, ``np.prod(axis=1)``, is over ten times slower)."""
    out = block[:, 0].astype(dtype)
    for j in range(1, block.shape[1]):
        out *= block[:, j]
    return out


def infer_grid(
    variables: Iterable[tuple[str, Sequence[str], Sequence[int]]], where: str = "nd batch"
) -> dict[str, int]:
    """Infer the shared grid of one nd batch from its variables ``(name, dims, shape)``.

    The highest-rank variable (the first one on a tie) sets the axis order; axes that only
    lower-rank variables carry are appended in the order met; axes align by name, never by
    position; a size-1 axis takes a larger size; any other disagreement is a
    :class:`ShapeMismatchError` naming both variables.
    """
    items = list(variables)
    if not items:
        return {}
    order = sorted(range(len(items)), key=lambda i: (-len(items[i][1]), i))
    grid: dict[str, int] = {}
    owner: dict[str, str] = {}
    for i in order:
        var, dims, shape = items[i]
        for dim, size in zip(dims, shape, strict=True):
            size = int(size)
            if dim not in grid:
                grid[dim] = size
                owner[dim] = var
            elif grid[dim] != size:
                if grid[dim] == 1:
                    grid[dim] = size
                    owner[dim] = var
                elif size != 1:
                    raise ShapeMismatchError(
                        f"{where}: dimension {dim!r} has size {grid[dim]} in variable "
                        f"{owner[dim]!r} but {size} in variable {var!r}; variables share one grid "
                        "and a dimension's sizes must agree (or be 1) (FORMAT 7/3)"
                    )
    return grid


def merge_keys(key_lists: Iterable[Iterable[str]]) -> list[str]:
    """Union of keys in first-seen order (the order of the attrs struct children)."""
    seen: dict[str, None] = {}
    for keys in key_lists:
        for k in keys:
            seen.setdefault(k, None)
    return list(seen)


def check_variable_name(name: object, where: str) -> str:
    """A variable of an nd batch has a string name other than the global-attributes column."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"{where}: variable name {name!r} is not a string")
    if name == GLOBAL_ATTRIBUTES_FIELD:
        raise InvalidArgumentError(
            f"{where}: a variable may not be named {GLOBAL_ATTRIBUTES_FIELD!r}: that column "
            "holds the global attributes; rename the variable"
        )
    return name


def check_attr_keys(attrs: Mapping[Any, Any], where: str) -> None:
    """Attribute keys are strings."""
    for key in attrs:
        if not isinstance(key, str):
            raise InvalidAttributeError(
                f"{where}: attribute key {key!r} is a {type(key).__name__}; keys are strings"
            )
