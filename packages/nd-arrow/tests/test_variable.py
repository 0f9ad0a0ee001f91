from __future__ import annotations

import numpy as np
import pytest

from nd_arrow import (
    InvalidArgumentError,
    InvalidAttributeError,
    InvalidDimensionsError,
    NdVariable,
    NotSupportedError,
)


def test_from_numpy_properties() -> None:
    a = NdVariable.from_numpy(np.zeros((2, 3)), dims=["time", "lat"], attrs={"units": "K"})
    assert a.sizes == {"time": 2, "lat": 3}
    assert a.dims == ("time", "lat")
    assert a.shape == (2, 3) and a.ndim == 2
    assert a.attrs == {"units": "K"}
    assert a.mask is None
    assert type(a.to_numpy()) is np.ndarray


def test_default_dims_and_scalar() -> None:
    assert NdVariable(np.zeros((1, 2))).dims == ("dim_0", "dim_1")
    s = NdVariable(np.float32(2.5))
    assert s.shape == () and s.dims == ()


def test_masked_input_and_output() -> None:
    m = np.ma.masked_array([1, 2, 3], mask=[False, True, False])
    a = NdVariable.from_numpy(m, dims=["x"])
    assert a.mask is not None and a.mask.tolist() == [False, True, False]
    out = a.to_numpy()
    assert isinstance(out, np.ma.MaskedArray)
    assert out.mask.tolist() == [False, True, False]
    assert NdVariable(np.ma.masked_array([1, 2], mask=[False, False])).mask is None


def test_nat_is_null() -> None:
    a = NdVariable(np.array(["2020-01-01", "NaT"], "M8[s]"), ["t"])
    assert a.mask is not None and a.mask.tolist() == [False, True]


def test_strings_become_object() -> None:
    a = NdVariable(np.array(["a", "bcd"]), ["x"])
    assert a.dtype == object
    assert a == NdVariable(np.array(["a", "bcd"], dtype=object), ["x"])


def test_equality() -> None:
    a = NdVariable(np.array([1.0, np.nan]), ["x"], {"r": [1, 2]})
    assert a == NdVariable(np.array([1.0, np.nan]), ["x"], {"r": np.array([1, 2])})
    assert a != NdVariable(np.array([1.0, np.nan]), ["y"], {"r": [1, 2]})
    assert a != NdVariable(np.array([1.0, np.nan], np.float32), ["x"], {"r": [1, 2]})
    assert a != NdVariable(np.array([1.0, np.nan]), ["x"], {"r": [1, 3]})
    masked = NdVariable(np.array([1.0, 5.0]), ["x"], mask=np.array([False, True]))
    assert masked == NdVariable(np.array([1.0, 7.0]), ["x"], mask=np.array([False, True]))
    assert masked != NdVariable(np.array([1.0, 5.0]), ["x"])
    assert a.__eq__(3) is NotImplemented


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dims": ["a"]}, InvalidDimensionsError, "1 dimension names .* rank 2"),
        ({"dims": ["a", "a"]}, InvalidDimensionsError, "'a' appears twice"),
        ({"dims": ["a", ""]}, InvalidDimensionsError, "must not be empty"),
        ({"dims": ["a", 1]}, InvalidDimensionsError, "names are strings"),
        ({"dims": "ab"}, InvalidArgumentError, "write dims=\\['ab'\\]"),
        ({"attrs": {1: "x"}}, InvalidAttributeError, "keys are strings"),
        ({"attrs": {"k": {"a": 1}}}, InvalidAttributeError, "not supported"),
        ({"attrs": {"k": np.zeros((2, 2))}}, InvalidAttributeError, "1-D arrays"),
        ({"mask": np.zeros(3, bool)}, InvalidArgumentError, "mask shape"),
    ],
)
def test_bad_input(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        NdVariable(np.zeros((2, 2)), **kwargs)


def test_unsupported_dtypes() -> None:
    with pytest.raises(NotSupportedError, match="complex"):
        NdVariable(np.zeros(2, complex))
    with pytest.raises(NotSupportedError, match="unit 'h'"):
        NdVariable(np.zeros(2, "M8[h]"))
    with pytest.raises(NotSupportedError, match="unit 's'"):  # a multiple of a unit
        NdVariable(np.zeros(2, "M8[2s]"))
    if np.dtype(np.longdouble).itemsize > 8:  # float128: no Arrow type (pyarrow's refusal before)
        with pytest.raises(NotSupportedError, match="use a numeric"):
            NdVariable(np.zeros(2, np.longdouble))
