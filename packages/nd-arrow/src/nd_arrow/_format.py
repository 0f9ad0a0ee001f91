"""The ``nd_arrow.array`` format, version 1, free of pyarrow: the one home of its constants and
limits, the rules that need no Arrow objects (extension metadata, names, size products, the grid
of a dataset) and the index arithmetic of ragged rows. FORMAT.md is the specification."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nd_arrow import errors

#: Annotations: int64 offsets, sizes and codes; boolean masks of rows or values.
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

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
INT64_MAX = 2**63 - 1

#: Arrow's canonical tensor extension names (converted to and from by :mod:`nd_arrow._tensor`).
FIXED_SHAPE_TENSOR = "arrow.fixed_shape_tensor"
VARIABLE_SHAPE_TENSOR = "arrow.variable_shape_tensor"


def check_int32(total: int, what: str, where: str, fix: str = "") -> None:
    """Arrow's List and Utf8 arrays (32-bit offsets, as written) hold at most INT32_MAX items or
    bytes: an :class:`InvalidArgumentError` naming ``total`` beyond it (FORMAT 3)."""
    if total > INT32_MAX:
        raise errors.InvalidArgumentError(
            f"{where}: {total} {what} exceed the 2**31 - 1 ({INT32_MAX}) one Arrow List or Utf8 "
            f"array can hold; {fix or 'split the arrays over several columns or record batches'}"
        )


def check_dim_size(size: int, where: str) -> None:
    """Dimension sizes are UInt32 (FORMAT 3)."""
    if size > MAX_DIM_SIZE:
        raise errors.InvalidDimensionsError(
            f"{where}: dimension size {size} exceeds {MAX_DIM_SIZE}, the largest UInt32"
        )


def parse_extension_metadata(serialized: bytes, extension: str = EXTENSION_NAME) -> int:
    """The encoding version of ``ARROW:extension:metadata``, checked (FORMAT 2/1, 2/2); unknown
    keys are ignored, and a reader refuses what it could misread."""
    text = bytes(serialized)
    like = f"it must be an object like {EXTENSION_METADATA.decode()} (FORMAT 2/1)"
    try:
        meta = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.InvalidEncodingError(
            f"{extension}: extension metadata {text!r} is not JSON; {like}"
        ) from exc
    if not isinstance(meta, dict) or "version" not in meta:
        raise errors.InvalidEncodingError(
            f"{extension}: extension metadata {text!r} has no 'version' key; {like}"
        )
    version = meta["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise errors.InvalidEncodingError(
            f"{extension}: extension metadata version {version!r} is not an integer written "
            "as one (no fraction, no exponent) (FORMAT 2/1)"
        )
    if version != ENCODING_VERSION:
        raise errors.NotSupportedError(
            f"{extension}: encoding version {version} is not supported; this reader supports "
            f"version {ENCODING_VERSION}. Upgrade nd-arrow to read it (FORMAT 2/2)."
        )
    return version


def default_dim_names(rank: int) -> tuple[str, ...]:
    """Names used when the caller gives none: ``dim_0``, ``dim_1``, ... (as xarray does)."""
    return tuple(f"dim_{i}" for i in range(rank))


def check_dim_names(names: Sequence[object] | None, rank: int, where: str) -> tuple[str, ...]:
    """One array's dimension names, checked against its rank: strings, non-empty, unique (None:
    the default names)."""
    if names is None:
        return default_dim_names(rank)
    if isinstance(names, str):
        raise errors.InvalidArgumentError(
            f"{where}: dims must be a sequence of names, got the string {names!r}; "
            f"write dims=[{names!r}] for one dimension"
        )
    out = tuple(names)
    if len(out) != rank:
        raise errors.InvalidDimensionsError(
            f"{where}: {len(out)} dimension names {list(out)!r} for an array of rank {rank}; "
            "the rule is one name per axis"
        )
    for name in out:
        if not isinstance(name, str):
            raise errors.InvalidDimensionsError(
                f"{where}: dimension name {name!r} is a {type(name).__name__}; names are strings"
            )
        if not name:
            raise errors.InvalidDimensionsError(
                f"{where}: empty dimension name in {list(out)!r}; names must not be empty"
            )
        if out.count(name) > 1:
            raise errors.InvalidDimensionsError(
                f"{where}: dimension name {name!r} appears twice in {list(out)!r}; "
                "names must be unique within an array"
            )
    return out  # type: ignore[return-value]


def size_products(sizes: npt.NDArray[Any], starts: Ints, ends: Ints) -> tuple[Ints, Mask]:
    """Per row, the product of ``sizes[starts[i]:ends[i]]`` (1 for rank 0) and whether the
    product of its non-zero sizes passes int64 (FORMAT 4/4; the product is then -1). Vectorized
    per rank, column by column (``np.prod(axis=1)`` over short rows is many times slower); rows
    whose float64 product reaches 2**53, where it may be inexact, are recounted in Python."""
    counts = ends - starts
    products, overflow = np.ones(len(starts), np.int64), np.zeros(len(starts), np.bool_)
    for rank in np.unique(counts[counts > 0]).tolist():
        rows = np.flatnonzero(counts == rank)
        block = sizes[starts[rows, None] + np.arange(rank)].astype(np.int64)
        exact, approx = block[:, 0].copy(), np.maximum(block[:, 0], 1).astype(np.float64)
        for j in range(1, rank):
            exact *= block[:, j]  # wraps only where the bound below sends the row to Python
            approx *= np.maximum(block[:, j], 1)
        products[rows] = exact
        for k in np.flatnonzero(approx >= 2.0**53).tolist():
            row_sizes = block[k].tolist()
            too_big = math.prod(max(s, 1) for s in row_sizes) > INT64_MAX
            overflow[rows[k]] = too_big
            products[rows[k]] = -1 if too_big else math.prod(row_sizes)
    return products, overflow


def infer_grid(
    variables: Iterable[tuple[str, Sequence[str], Sequence[int]]], where: str = "nd batch"
) -> dict[str, int]:
    """The shared grid of a dataset from its variables ``(name, dims, shape)`` (FORMAT 7/3):
    the highest-rank variable (the first on a tie) sets the axis order, other axes follow as met;
    axes align by name; a size-1 axis takes a larger size; other disagreements are refused."""
    grid: dict[str, int] = {}
    owner: dict[str, str] = {}
    for var, dims, shape in sorted(variables, key=lambda item: -len(item[1])):  # stable on ties
        for dim, size in zip(dims, map(int, shape), strict=True):
            known = grid.get(dim)
            if known is None or known == 1:
                grid[dim], owner[dim] = size, var
            elif known != size and size != 1:
                raise errors.ShapeMismatchError(
                    f"{where}: dimension {dim!r} has size {known} in variable {owner[dim]!r} "
                    f"but {size} in variable {var!r}; variables share one grid and a "
                    "dimension's sizes must agree (or be 1) (FORMAT 7/3)"
                )
    return grid


def merge_keys(key_lists: Iterable[Iterable[str]]) -> list[str]:
    """Union of keys in first-seen order (the order of the attrs struct children)."""
    return list(dict.fromkeys(k for keys in key_lists for k in keys))


def check_variable_name(name: object, where: str) -> str:
    """A variable of a dataset has a string name other than the global-attributes column."""
    if not isinstance(name, str):
        raise errors.InvalidArgumentError(f"{where}: variable name {name!r} is not a string")
    if name == GLOBAL_ATTRIBUTES_FIELD:
        raise errors.InvalidArgumentError(
            f"{where}: a variable may not be named {GLOBAL_ATTRIBUTES_FIELD!r}: that column "
            "holds the global attributes; rename the variable"
        )
    return name


def offsets_of(
    lengths: npt.NDArray[Any], dtype: type[np.integer[Any]] = np.int64, valid: Mask | None = None
) -> npt.NDArray[Any]:
    """``[0, l0, l0 + l1, ...]``: the offsets of rows of the given lengths; with ``valid``, the
    lengths are those of the valid rows and the other rows own none."""
    if valid is not None:
        lengths, placed = np.zeros(len(valid), np.int64), lengths
        lengths[valid] = placed
    out = np.zeros(len(lengths) + 1, dtype)
    np.cumsum(lengths, out=out[1:])
    return out


def range_positions(starts: Ints, lengths: Ints) -> Ints:
    """``starts[k] + 0 .. lengths[k] - 1`` for every range ``k``, back to back."""
    begins = offsets_of(lengths)  # where each range begins in the result
    return np.arange(begins[-1], dtype=np.int64) - np.repeat(begins[:-1] - starts, lengths)


def range_ids(lengths: Ints) -> Ints:
    """The range of each of those positions: ``k`` repeated ``lengths[k]`` times."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
