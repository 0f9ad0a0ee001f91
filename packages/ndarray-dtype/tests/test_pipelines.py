"""``ndarray`` arrays read and write alike under every codec pipeline: zarr's (Batched, and
Fused from zarr 3.3, whose bulk shard read trusts ``is_fixed_size``: :class:`FixedCellBytesCodec`
must not claim a fixed size) and zarrs-python's in strict mode, which cannot run a Python
codec: the engine reads and writes the chunks itself, and the arrays get zarr's own pipeline.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import zarr

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_dtype.codecs import FixedCellBytesCodec


def _cells(n: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(n)
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = (rng.random(shape) * 100).astype(dtype)
    return out


@pytest.mark.parametrize(("dtype", "shape"), [("float32", (3, 2)), ("int8", (4,)), ("bool", (2,))])
def test_sharded_uncompressed_fixed_pattern_whole_and_partial_read(
    pipeline: str, dtype: str, shape: tuple[int, ...]
) -> None:
    nd = NDArrayDType(dtype=dtype, shape=shape)
    arr = zarr.create_array(
        store={}, shape=(10,), chunks=(2,), shards=(4,), dtype=nd, compressors=None
    )
    own = "BatchedCodecPipeline" if pipeline.startswith("zarrs") else pipeline.rsplit(".", 1)[1]
    assert type(arr._async_array.codec_pipeline).__name__ == own
    cells = _cells(10, shape, dtype)
    arr[:] = cells
    reopened = zarr.open_array(arr.store, mode="r")
    for source in (arr, reopened):
        whole = source[:]
        pairs = zip(whole, cells, strict=True)
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in pairs)
        part = source[3:7]
        assert all(np.array_equal(a, b) for a, b in zip(part, cells[3:7], strict=True))


def test_fixed_cell_codec_withdraws_the_fixed_size_promise() -> None:
    codec = FixedCellBytesCodec(endian="little")
    assert codec.is_fixed_size is False
    # Only shape and dtype of the chunk spec matter (ArraySpec's constructor differs by release).
    spec = SimpleNamespace(shape=(3,), dtype=NDArrayDType(dtype="int16", shape=(2, 2)))
    assert codec.compute_encoded_size(3 * 8, spec) == 3 * 2 * 2 * 2  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="serves only the 'ndarray' data type"):
        codec.compute_encoded_size(6, SimpleNamespace(shape=(3,), dtype="int16"))  # type: ignore[arg-type]


def _everything(array: zarr.Array, cells: np.ndarray) -> list[object]:
    """Every everyday path over ``array``: columnar and object writes (box, list, vindex),
    reads whole, by region, by batch, of one cell, and Dask's map_columnar."""
    from ndarray_dtype_testing import cell_sums

    from zarr_ndarray_dtype import iter_columnar, read_columnar, write_columnar
    from zarr_ndarray_dtype.dask import map_columnar

    flat = list(cells.reshape(-1))
    sizes = np.array([c.size for c in flat])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    shapes = np.array([c.shape for c in flat])
    write_columnar(array, np.concatenate([c.reshape(-1) for c in flat]), offsets, shapes=shapes)
    array[1:3, 2:5] = cells[:2, :3]
    array.vindex[[0, 5], [1, 2]] = cells[[3, 4], [3, 4]]  # an object array of two cells
    seen: list[object] = []
    for col in (read_columnar(array), read_columnar(array, (slice(2, 6), 3))):
        seen += [col.values.tobytes(), col.offsets.tolist(), col.shapes.tolist()]
    seen += [(s, c.offsets.tolist()) for s, c in iter_columnar(array, values=False)]
    seen += [c.tobytes() for c in array[:].reshape(-1)]
    seen += [array[4, 5].tobytes(), [c.tobytes() for c in array.vindex[[1, 5], [0, 6]]]]
    sums = map_columnar(array, cell_sums, dtype="float64").compute(scheduler="threads")
    return [*seen, sums.tolist()]


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_every_path_gives_the_same_under_every_pipeline(
    pipeline: str, sharded: bool, when: str
) -> None:
    """Set before or after the array is opened, every pipeline gives what the default one
    gives, and warns of nothing (pytest turns warnings into errors)."""
    from ndarray_dtype_testing import ToyCodec, random_cells

    dtype = NDArrayDType(dtype="float32", shape=(None,))
    kw = {"shape": (6, 7), "chunks": (2, 3), "dtype": dtype, "serializer": ToyCodec()}
    kw |= {"shards": (4, 6)} if sharded else {}
    cells = random_cells(5, dtype, (6, 7))
    with zarr.config.set({"codec_pipeline.path": PIPELINES_DEFAULT}):
        want = _everything(zarr.create_array({}, **kw, compressors=zarr.codecs.ZstdCodec()), cells)
    store: dict = {}
    if when == "after":
        with zarr.config.set({"codec_pipeline.path": PIPELINES_DEFAULT}):
            zarr.create_array(store, **kw, compressors=zarr.codecs.ZstdCodec())
        assert _everything(zarr.open_array(store), cells) == want
    else:
        array = zarr.create_array(store, **kw, compressors=zarr.codecs.ZstdCodec())
        assert _everything(array, cells) == want
        assert _everything(zarr.open_array(store), cells) == want


PIPELINES_DEFAULT = "zarr.core.codec_pipeline.BatchedCodecPipeline"
