"""Serializer selection when ``serializer=`` is not given."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.core.array
from zarr.codecs import BytesCodec

from zarr_ndarray_dtype import NDArray, NDArrayDTypeError, _hooks
from zarr_ndarray_dtype.registration import register


def test_fixed_patterns_default_to_little_endian_bytes() -> None:
    arr = zarr.create_array(store={}, shape=(2,), dtype=NDArray(dtype="float32", shape=(2, 2)))
    assert isinstance(arr.metadata.codecs[0], BytesCodec)
    assert arr.metadata.codecs[0].to_dict() == {
        "name": "bytes",
        "configuration": {"endian": "little"},
    }


@pytest.mark.parametrize("shape", [(None, None), (2, None), (None, 3, None)])
def test_other_variable_patterns_without_the_codec_name_the_package(
    shape: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(zarr.registry, "get_codec_class", unknown)
    store: dict = {}
    with pytest.raises(NDArrayDTypeError, match="pip install zarr-ragged-ndarray") as info:
        zarr.create_array(store=store, shape=(2,), dtype=NDArray(dtype="int8", shape=shape))
    assert "serializer=zarr_ragged_ndarray.RaggedNDArrayCodec()" in str(info.value)
    assert not store


@pytest.mark.parametrize("shape", [(None, None), (2, None), (None, 3, None)])
def test_other_variable_patterns_pick_the_registered_ragged_codec(shape: tuple) -> None:
    pytest.importorskip("zarr_ragged_ndarray")
    codec = _hooks.serializer_for(NDArray(dtype="float32", shape=shape))
    assert codec.to_dict()["name"] == "ragged-ndarray"
    arr = zarr.create_array(store={}, shape=(2,), dtype=NDArray(dtype="int8", shape=shape))
    assert arr.metadata.to_dict()["codecs"][0]["name"] == "ragged-ndarray"


def test_leading_variable_pattern_without_the_codec_names_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unknown(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(zarr.registry, "get_codec_class", unknown)
    store: dict = {}
    with pytest.raises(NDArrayDTypeError, match="pip install zarr-vlen-ndarray") as info:
        zarr.create_array(store=store, shape=(2,), dtype=NDArray(dtype="float32", shape=(None, 2)))
    assert "serializer=zarr_vlen_ndarray.VlenNDArrayCodec()" in str(info.value)
    assert not store


def test_leading_variable_pattern_picks_the_registered_vlen_codec() -> None:
    pytest.importorskip("zarr_vlen_ndarray")
    codec = _hooks.serializer_for(NDArray(dtype="float32", shape=(None, 2)))
    assert codec.to_dict()["name"] == "vlen-ndarray"


def test_install_is_idempotent_and_other_types_unchanged() -> None:
    before = zarr.core.array.default_serializer_v3
    evolve = BytesCodec.evolve_from_array_spec
    register()
    register()
    assert zarr.core.array.default_serializer_v3 is before
    assert BytesCodec.evolve_from_array_spec is evolve
    arr = zarr.create_array(store={}, shape=(2,), dtype="int16")
    assert type(arr.metadata.codecs[0]) is BytesCodec
    arr[:] = np.array([1, 2])
