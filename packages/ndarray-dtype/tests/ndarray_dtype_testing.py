"""Shared test helpers of zarr-ndarray-dtype (imported by a package-unique module name)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from zarr_ndarray_dtype import ELEMENT_DTYPES

# A copy of the repository's registry/examples/ndarray.json, shipped in the sdist so the tests
# run from it; registry/examples/generate.py writes the copy with the original and its --check
# (in the nox lint session) fails when they differ.
REGISTRY = Path(__file__).resolve().parent / "golden" / "registry" / "ndarray.json"


def data_type_vectors(group: str) -> list[tuple[str, object]]:
    """``(id, data type JSON)`` of the registry's data type vectors (``"valid"``/``"invalid"``)."""
    vectors = json.loads(REGISTRY.read_text(encoding="utf-8"))[group]
    return [
        (v["id"], json.loads(v["data_type_text"]) if "data_type_text" in v else v["data_type"])
        for v in vectors
        if "data_type" in v or "data_type_text" in v
    ]


extents = st.one_of(st.none(), st.integers(min_value=1, max_value=5))
patterns = st.lists(extents, min_size=1, max_size=4).map(tuple)
element_dtypes = st.sampled_from(ELEMENT_DTYPES)


# ------------------------------------------------------------------ a toy codec for the engine

import dataclasses  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import zarr  # noqa: E402

from zarr_ndarray_dtype import NDArrayDType  # noqa: E402
from zarr_ndarray_dtype.blocks import (  # noqa: E402
    Block,
    ColumnsBlock,
    FlatCells,
    cell_shapes,
    offsets_of,
)
from zarr_ndarray_dtype.codecs import NDArrayBytesCodec  # noqa: E402

TOY = "test-ndarray-toy"


class ToyBlocks:
    """The block codec of :class:`ToyCodec`: ``u32le count | count x k u32le variable extents |
    values``. Small and unaligned on purpose: the engine must not care how a codec lays out."""

    name = TOY

    def decode(
        self, raw: npt.NDArray[np.uint8], count: int, dtype: NDArrayDType, where: str
    ) -> Block:
        pattern = dtype.pattern
        k = len(pattern.variable_axes)
        end = 4 + 4 * count * k
        if raw.size < end or int(raw[:4].view("<u4")[0]) != count:
            raise ValueError(f"cannot decode the {TOY!r} {where}: bad count or table")
        shapes = np.empty((count, pattern.ndim), np.int64)
        shapes[:, list(pattern.variable_axes)] = raw[4:end].view("<u4").reshape(count, k)
        for axis, extent in enumerate(pattern.dims):
            if extent is not None:
                shapes[:, axis] = extent
        sizes = np.prod(shapes, axis=1) if count else np.zeros(0, np.int64)
        values = raw[end:].copy().view(dtype.item_dtype)
        if values.size != int(sizes.sum()):
            raise ValueError(f"cannot decode the {TOY!r} {where}: {values.size} values")
        return ColumnsBlock(
            FlatCells(values, offsets_of(sizes), shapes if pattern.needs_shapes else None)
        )

    def encode(self, cells: FlatCells, dtype: NDArrayDType, where: str) -> npt.NDArray[np.uint8]:
        extents = cell_shapes(cells, dtype.pattern)[:, list(dtype.pattern.variable_axes)]
        count = np.array([cells.sizes.size], "<u4").view(np.uint8)
        table = extents.astype("<u4").reshape(-1).view(np.uint8)
        values = np.ascontiguousarray(cells.values).view(np.uint8)
        return np.concatenate([count, table, values])


@dataclasses.dataclass(frozen=True)
class ToyCodec(NDArrayBytesCodec):
    """A test serializer of every variable pattern, through the shared object path."""

    codec_name = TOY
    block_codec = ToyBlocks()

    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        return None


zarr.registry.register_codec(TOY, ToyCodec)


class RequestLog(zarr.storage.MemoryStore):
    """A MemoryStore that records every request as ``(key, byte range)``, the asynchronous and
    the synchronous one (zarr >= 3.3 reads through the latter where a store has it)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, Any]] = []

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self.asked.append((key, byte_range))
        return await super().get(key, prototype, byte_range)

    def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
        self.asked.append((key, byte_range))
        return super().get_sync(key, prototype=prototype, byte_range=byte_range)  # type: ignore[misc]


# ----------------------------------------------------- cells, and functions Dask workers run
# (this module is uploaded to the test cluster: it registers the toy codec there too)


def random_cells(
    seed: int, dtype: NDArrayDType, extents: tuple[int, ...], empty: float = 0.25
) -> np.ndarray:
    """An object array of random cells of ``dtype``, about the share ``empty`` of them empty."""
    rng = np.random.default_rng(seed)
    out = np.empty(extents, dtype=object)
    for index in np.ndindex(*extents):
        hollow = rng.random() < empty
        shape = tuple(
            (0 if hollow else int(rng.integers(1, 4))) if d is None else d for d in dtype.shape
        )
        out[index] = rng.integers(-9, 9, shape).astype(dtype.item_dtype)
    return out


def cell_sums(col: Any) -> np.ndarray:
    """The sum of every cell's items (float64), in the shape of a Columnar's selection."""
    sizes = np.diff(col.offsets)
    owner = np.repeat(np.arange(sizes.size), sizes)
    sums = np.bincount(owner, weights=col.values.astype(np.float64), minlength=sizes.size)
    return sums.reshape(col.shape)
