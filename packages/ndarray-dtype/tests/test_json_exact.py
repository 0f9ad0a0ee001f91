"""``_check_json_v3`` is exact: True for exactly the documents ``from_json`` accepts, never raising.

zarr-vlen-ndarray 0.2.0 code calls ``_check_json_v3`` directly; zarr calls ``from_json`` for every
registered type. Both must agree, on the golden vectors and on arbitrary JSON.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ndarray_dtype_testing import data_type_vectors

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType, NDArrayDTypeError
from zarr_ndarray_dtype._compat import DataTypeValidationError


def _accepted(doc: object) -> bool:
    try:
        NDArrayDType.from_json(doc, zarr_format=3)  # type: ignore[arg-type]
    except (DataTypeValidationError, NDArrayDTypeError):  # not ours / ours but breaking a rule
        return False
    return True


@pytest.mark.parametrize(("name", "doc"), data_type_vectors("valid"), ids=lambda v: str(v)[:40])
def test_valid_vectors_are_checked_true(name: str, doc: object) -> None:
    assert NDArrayDType._check_json_v3(doc) is True  # type: ignore[arg-type]
    assert _accepted(doc)


@pytest.mark.parametrize(
    ("name", "doc"),
    data_type_vectors("invalid"),
    ids=lambda v: str(v)[:40],
)
def test_invalid_vectors_are_checked_false(name: str, doc: object) -> None:
    assert NDArrayDType._check_json_v3(doc) is False  # type: ignore[arg-type]
    assert not _accepted(doc)


def test_zarr_v2_is_never_claimed() -> None:
    assert NDArrayDType._check_json_v2({"name": "|O", "object_codec_id": "vlen-ndarray"}) is False
    assert NDArrayDType._check_json_v2("|O") is False


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 4),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from([*ELEMENT_DTYPES, "<f4", ">f4", "str", "ndarray", "Float32"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["name", "configuration", "dtype", "shape", "x"]), inner),
    ),
    max_leaves=12,
)
near_valid = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["ndarray", "ndarray", "vlen-ndarray"]),
        "configuration": st.fixed_dictionaries(
            {"dtype": json_scalars, "shape": st.lists(json_scalars, max_size=4) | json_values},
            optional={"x": json_scalars},
        ),
    },
    optional={"extra": json_scalars},
)


@given(st.one_of(json_values, near_valid))
def test_check_agrees_with_from_json_on_any_json(doc: Any) -> None:
    assert NDArrayDType._check_json_v3(doc) is _accepted(doc)
