"""What ``nd_arrow.from_zarr`` / ``to_zarr`` say when given something other than an ``ndarray``
zarr array, with zarr installed or not (this module runs in both venvs)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from nd_arrow.errors import InvalidArgumentError
from nd_arrow.zarr_bridge import from_zarr, to_zarr

HAS_ZARR = importlib.util.find_spec("zarr_ndarray_dtype") is not None
EXTRA = "pip install 'nd-arrow[zarr]'"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("store.zarr/c", "got str 'store.zarr/c'; open it first: zarr.open_array('store.zarr/c'"),
        (np.zeros(3), "got numpy.ndarray array([0., 0., 0.])"),
        (None, "got NoneType None"),
    ],
)
def test_what_was_given_is_named(given: object, named: str) -> None:
    for call in (lambda: from_zarr(given), lambda: to_zarr(np.zeros(0), given)):
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert "expected a zarr array of the 'ndarray' data type, " + named in str(info.value)
        assert (EXTRA in str(info.value)) == (not HAS_ZARR)


def test_a_zarr_array_of_another_data_type_is_named_by_it() -> None:
    zarr = pytest.importorskip("zarr")
    with pytest.raises(InvalidArgumentError, match=r"got a zarr array of the data type Float64"):
        from_zarr(zarr.zeros((3,), dtype="float64"))


def test_without_zarr_the_message_names_the_extra() -> None:
    """zarr blocked in a fresh interpreter (where it is installed), as in a venv without it."""
    code = """
import sys
sys.modules["zarr"] = sys.modules["zarr_ndarray_dtype"] = None  # imports of them fail
from nd_arrow.zarr_bridge import from_zarr, table_from_zarr
for call in (lambda: from_zarr("store.zarr/c"), lambda: table_from_zarr({})):
    try:
        call()
    except Exception as exc:
        print(type(exc).__name__, exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.startswith("InvalidArgumentError nd_arrow.from_zarr: expected a zarr")
    assert "got str 'store.zarr/c'" in done.stdout
    assert f"need zarr: install the extra: {EXTRA}" in done.stdout
    assert f"NotSupportedError nd_arrow.table_from_zarr needs zarr: install the extra: {EXTRA}" in (
        done.stdout
    )
