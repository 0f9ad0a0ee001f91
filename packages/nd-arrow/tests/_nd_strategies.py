"""Hypothesis strategies for nd arrays: every value kind, ranks 0-4, nulls, null rows, attrs."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nd_arrow import NdVariable

NUMERIC = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
]
TIMES = ["datetime64[s]", "datetime64[ms]", "datetime64[us]", "datetime64[ns]", "timedelta64[ms]"]
DTYPES = [*NUMERIC, *TIMES, "str"]

NAMES = st.text(alphabet="abcxyz_0", min_size=1, max_size=4)


def shapes(max_rank: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=0, max_dims=max_rank, min_side=0, max_side=3)


def values(dtype: str, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    if dtype == "str":
        return hnp.arrays(object, shape, elements=st.text(max_size=5))
    return hnp.arrays(np.dtype(dtype), shape)


def attr_value(kind: str) -> st.SearchStrategy[Any]:
    if kind == "str":
        return st.text(max_size=6)
    if kind == "int":
        return st.integers(-(2**63), 2**63 - 1)
    if kind == "float":
        return st.floats(allow_nan=True)
    if kind == "f32":
        return st.floats(width=32).map(np.float32)
    if kind == "bool":
        return st.booleans()
    if kind == "range":
        return hnp.arrays(np.float64, st.integers(0, 3))
    return hnp.arrays(np.int16, st.integers(0, 3))


ATTR_KINDS = ["str", "int", "float", "f32", "bool", "range", "i16list"]


@st.composite
def nd_arrays(
    draw: st.DrawFn,
    dtype: str,
    attr_kinds: dict[str, str] | None = None,
    max_rank: int = 4,
) -> NdVariable:
    shape = draw(shapes(max_rank))
    vals = draw(values(dtype, shape))
    dims = draw(st.lists(NAMES, min_size=len(shape), max_size=len(shape), unique=True))
    mask = draw(st.none() | hnp.arrays(np.bool_, shape))
    attrs: dict[str, Any] = {}
    for key, kind in (attr_kinds or {}).items():
        if draw(st.booleans()):
            attrs[key] = draw(attr_value(kind))
    if mask is not None and vals.dtype.kind not in "O":
        vals = vals.copy()
        vals[mask] = np.zeros((), vals.dtype)
    elif mask is not None:
        vals = vals.copy()
        vals[mask] = ""
    return NdVariable(vals, dims, attrs, mask=mask)


@st.composite
def columns(draw: st.DrawFn, max_rows: int = 6) -> tuple[str, list[NdVariable | None]]:
    dtype = draw(st.sampled_from(DTYPES))
    keys = draw(st.lists(st.sampled_from(["units", "scale", "flag", "range", "note"]), unique=True))
    kinds = {k: draw(st.sampled_from(ATTR_KINDS)) for k in keys}
    rows = draw(
        st.lists(st.none() | nd_arrays(dtype, kinds), min_size=1, max_size=max_rows).filter(
            lambda rs: any(r is not None for r in rs)
        )
    )
    return dtype, rows
