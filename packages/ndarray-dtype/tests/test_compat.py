"""Tests for zarr_ndarray_dtype._compat: each shim gives one answer on every zarr release."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.core.codec_pipeline
from zarr.codecs import BytesCodec, Crc32cCodec, GzipCodec, ZstdCodec

from zarr_ndarray_dtype._compat import (
    array_config,
    array_spec,
    async_array,
    basic_box,
    chain_sync,
    endian_name,
    run,
)


def test_endian_name() -> None:
    assert endian_name(BytesCodec(endian="big").endian) == "big"
    assert endian_name(BytesCodec(endian="little").endian) == "little"
    assert endian_name(None) is None


def test_array_config_and_async_array() -> None:
    array = zarr.create_array(
        {}, shape=(10, 4), chunks=(5, 2), dtype="int16", config={"write_empty_chunks": True}
    )
    assert array_config(array).write_empty_chunks is True
    assert array_config(zarr.open_array(array.store_path, mode="r")).write_empty_chunks is False
    assert isinstance(async_array(array), zarr.AsyncArray)
    assert array_config(async_array(array)).write_empty_chunks is True


def test_a_chain_runs_synchronously_where_zarr_runs_it_so() -> None:
    """zarr >= 3.3 (the release of FusedCodecPipeline) runs its codecs synchronously; a
    chain then encodes first to last and decodes last to first, as zarr's pipeline does."""
    chain = (GzipCodec(level=1), Crc32cCodec(), ZstdCodec(level=1))
    spec = array_spec((4,), zarr.dtype.UInt8(), 0)
    encode = chain_sync(chain, spec, encode=True)
    decode = chain_sync(chain, spec, encode=False)
    sync = hasattr(zarr.core.codec_pipeline, "FusedCodecPipeline")
    assert (encode is not None, decode is not None) == (sync, sync)
    if encode is None or decode is None:
        return
    raw = zarr.buffer.default_buffer_prototype().buffer.from_bytes(b"ragged cells" * 10)
    encoded = encode(raw)
    expected = raw
    for codec in chain:
        expected = run(codec.encode([(expected, spec)]))[0]
    assert encoded.to_bytes() == expected.to_bytes()
    assert decode(encoded).to_bytes() == raw.to_bytes()


@pytest.mark.parametrize(
    ("selection", "box"),
    [
        ((1, slice(0, 3)), ((1, 0), (2, 3))),
        ((slice(None), 2), ((0, 2), (5, 3))),
        ((slice(0, 5, 2), 1), None),  # a step: not a box
    ],
)
def test_basic_box(monkeypatch: pytest.MonkeyPatch, selection: tuple, box: tuple | None) -> None:
    """The box of the indexer zarr hands an object read (zarr builds it: its grid types
    differ by release)."""
    from zarr_ndarray_dtype import NDArrayDType, _hooks

    seen: list[object] = []

    def spy(indexer: object) -> object:
        seen.append(basic_box(indexer))
        return seen[-1]

    monkeypatch.setattr(_hooks._compat, "basic_box", spy)
    array = zarr.create_array({}, shape=(5, 4), chunks=(2, 2), dtype=NDArrayDType("int8", (2,)))
    array[selection]
    assert seen[0] == (None if box is None else (*box, np.shape(np.empty((5, 4))[selection])))
