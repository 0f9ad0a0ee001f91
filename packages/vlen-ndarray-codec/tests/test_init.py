"""The public names of zarr_vlen_ndarray: the same as 0.2.0's, the data type's the same objects."""

from __future__ import annotations

import importlib.metadata
from types import ModuleType

import pytest

import zarr_ndarray_dtype
import zarr_vlen_ndarray
from zarr_vlen_ndarray import codec, dtype

NAMES_020 = {
    "CODEC_NAME",
    "DTYPE_NAME",
    "NDArray",
    "NDArrayDType",
    "VlenNDArrayCodec",
    "VlenScalar",
    "__version__",
    "unbox",
}


def test_public_names_are_those_of_020() -> None:
    assert set(zarr_vlen_ndarray.__all__) == NAMES_020
    for name in NAMES_020:
        assert hasattr(zarr_vlen_ndarray, name), name


@pytest.mark.parametrize("module", [zarr_vlen_ndarray, dtype], ids=["package", "dtype"])
def test_data_type_names_are_the_dtype_packages_objects(module: ModuleType) -> None:
    # The package and its 0.2.0 dtype module both name the dtype package's objects.
    # 0.2.0's names: no deprecation warning here (pytest turns warnings into errors)
    assert module.NDArray is zarr_ndarray_dtype.NDArrayDType
    assert module.NDArrayDType is zarr_ndarray_dtype.NDArrayDType
    assert module.VlenScalar is zarr_ndarray_dtype.dtype._FillCell
    assert module.unbox is zarr_ndarray_dtype.unbox
    assert module.DTYPE_NAME == "ndarray"


def test_codec_names() -> None:
    assert zarr_vlen_ndarray.CODEC_NAME == "vlen-ndarray"
    assert zarr_vlen_ndarray.VlenNDArrayCodec is codec.VlenNDArrayCodec


def test_version() -> None:
    assert zarr_vlen_ndarray.__version__ == importlib.metadata.version("zarr-vlen-ndarray")


def test_ndarray_constructor_takes_0_2_0s_keywords_and_positions_too() -> None:
    dtype = zarr_vlen_ndarray.NDArray(dtype="float32", shape=(None, 2))
    assert dtype.to_json(zarr_format=3) == {
        "name": "ndarray",
        "configuration": {"dtype": "float32", "shape": [None, 2]},
    }
    assert zarr_vlen_ndarray.NDArray("float32", (None, 2)) == dtype  # as np.dtype is called
