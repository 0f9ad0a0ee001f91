"""Every codec pipeline the installed zarr ships reads and writes ``ndarray`` arrays.

zarr 3.3 added ``FusedCodecPipeline``, whose bulk shard read trusts ``is_fixed_size`` and sizes
chunks from ``dtype.item_size``; :class:`FixedCellBytesCodec` must not claim a fixed size.
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
    assert type(arr._async_array.codec_pipeline).__name__ == pipeline.rsplit(".", 1)[1]
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
