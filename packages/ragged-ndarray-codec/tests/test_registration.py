"""Registration with zarr: idempotent on import, and the zarr.codecs entry point."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import zarr
from zarr.dtype import data_type_registry
from zarr.registry import get_codec_class

import zarr_ragged_ndarray
from zarr_ndarray_dtype import NDArray, unbox
from zarr_ndarray_dtype.testing import assert_entry_point, run_script
from zarr_ragged_ndarray import RaggedNDArrayCodec
from zarr_ragged_ndarray.registration import register


def test_codec_and_data_type_registered() -> None:
    assert get_codec_class("ragged-ndarray") is RaggedNDArrayCodec
    assert data_type_registry.get("ndarray") is NDArray


def test_register_is_idempotent() -> None:
    register()
    register()
    importlib.reload(zarr_ragged_ndarray)
    assert get_codec_class("ragged-ndarray") is RaggedNDArrayCodec
    arr = zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=(1,),
        dtype=NDArray(dtype="int8", shape=(None, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[0] = np.array([[1, 2]], dtype=np.int8)
    assert unbox(arr[0]).tolist() == [[1, 2]]


def test_codec_entry_point() -> None:
    value = "zarr_ragged_ndarray.codec:RaggedNDArrayCodec"
    assert_entry_point("zarr.codecs", "ragged-ndarray", value, RaggedNDArrayCodec)


def test_store_opens_after_importing_the_package(tmp_path: Path) -> None:
    """A fresh process reads a ragged-ndarray store (zarr >= 3.4.1 without importing us)."""
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(
        zarr.storage.LocalStore(store),
        shape=(2,),
        dtype=NDArray(dtype="uint8", shape=(2, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[1] = np.array([[7], [8]], dtype=np.uint8)
    script = f"""
        import zarr, zarr_ragged_ndarray
        cells = zarr.open_array(zarr.storage.LocalStore({str(store)!r}), mode="r")[:]
        assert [c.tolist() for c in cells] == [[[], []], [[7], [8]]], cells
        print("ok")
        """
    assert run_script(script, tmp_path).stdout.strip() == "ok"


def test_codec_found_through_entry_point_alone(tmp_path: Path) -> None:
    """A process that imports only the data type package reads a store through our codec."""
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(
        zarr.storage.LocalStore(store),
        shape=(2,),
        dtype=NDArray(dtype="int16", shape=(None, None)),
        serializer=RaggedNDArrayCodec(),
    )
    arr[1] = np.array([[1, 2, 3]], dtype=np.int16)
    script = f"""
        import sys, zarr, zarr_ndarray_dtype
        assert "zarr_ragged_ndarray" not in sys.modules
        cells = zarr.open_array(zarr.storage.LocalStore({str(store)!r}), mode="r")[:]
        assert [c.tolist() for c in cells] == [[], [[1, 2, 3]]], cells
        assert "zarr_ragged_ndarray" in sys.modules
        print("ok")
        """
    assert run_script(script, tmp_path).stdout.strip() == "ok"
