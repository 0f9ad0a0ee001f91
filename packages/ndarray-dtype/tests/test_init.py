"""Tests for zarr_ndarray_dtype's top level: its names and deprecated aliases, registration,
the entry point and the no-package failure mode (run in fresh interpreters)."""

from __future__ import annotations

import doctest
import subprocess
import sys
import textwrap

import pytest
import zarr
from _zdt_support import assert_entry_point
from packaging.version import Version
from zarr.dtype import data_type_registry

import zarr_ndarray_dtype
from zarr_ndarray_dtype import NDArrayDType

ZARR = Version(zarr.__version__)


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_names() -> None:
    errors = set(zarr_ndarray_dtype.errors.__all__)
    assert set(zarr_ndarray_dtype.__all__) == errors | {
        "DTYPE_NAME", "ELEMENT_DTYPES", "NDArrayDType", "ShapePattern", "Columnar",
        "read_columnar", "write_columnar", "iter_columnar", "read_aligned", "write_aligned",
        "unbox", "register",
    }  # fmt: skip
    for name in zarr_ndarray_dtype.__all__:
        assert getattr(zarr_ndarray_dtype, name) is not None


@pytest.mark.parametrize("module", ["zarr_ndarray_dtype", "zarr_ndarray_dtype.dtype"])
def test_docstring_examples(module: str) -> None:
    assert doctest.testmod(sys.modules[module]).failed == 0


@pytest.mark.parametrize(
    ("name", "module", "attribute"),
    [
        ("NDArray", "zarr_ndarray_dtype.dtype", "NDArrayDType"),
        ("VlenScalar", "zarr_ndarray_dtype.dtype", "_FillCell"),
        ("readonly_cells", "zarr_ndarray_dtype._columns", "readonly_cells"),
        ("FixedCellBytesCodec", "zarr_ndarray_dtype.codecs", "FixedCellBytesCodec"),
    ],
)
def test_deprecated_aliases_warn(name: str, module: str, attribute: str) -> None:
    assert name not in zarr_ndarray_dtype.__all__
    with pytest.warns(DeprecationWarning, match=f"zarr_ndarray_dtype.{name} is deprecated"):
        found = getattr(zarr_ndarray_dtype, name)
    assert found is getattr(sys.modules[module], attribute)


def test_import_registers_idempotently() -> None:
    assert data_type_registry.get("ndarray") is NDArrayDType
    zarr_ndarray_dtype.register()
    assert data_type_registry.get("ndarray") is NDArrayDType


def test_entry_point_is_declared_and_loads_the_class() -> None:
    assert_entry_point("zarr.data_type", "ndarray", "zarr_ndarray_dtype:NDArrayDType", NDArrayDType)


def test_entry_point_module_imports_cheaply() -> None:
    result = _run(
        """
        import sys, zarr, numpy
        before = set(sys.modules)
        import zarr_ndarray_dtype
        new = {m.split('.')[0] for m in set(sys.modules) - before}
        new -= {m.split('.')[0] for m in before}
        print(sorted(new))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['zarr_ndarray_dtype']"


WRITE = """
import sys, numpy as np, zarr, zarr_ndarray_dtype
from zarr_ndarray_dtype import NDArrayDType
dtype = NDArrayDType(dtype="int16", shape=(2,))
arr = zarr.create_array(store=sys.argv[1], shape=(2,), dtype=dtype)
cells = np.empty(2, dtype=object); cells[0] = [1, 2]; cells[1] = [3, 4]
arr[:] = cells
"""


@pytest.mark.skipif(
    Version("3.4.1") > ZARR, reason="zarr < 3.4.1 never loads zarr.data_type entry points"
)
def test_open_without_import_works_through_the_entry_point(tmp_path) -> None:
    store = str(tmp_path / "a.zarr")
    assert _run(WRITE, store).returncode == 0
    result = _run(
        """
        import sys, zarr
        arr = zarr.open_array(sys.argv[1], mode="r")
        print(type(arr.metadata.data_type).__name__, arr[:][1].tolist())
        assert "zarr_ndarray_dtype" in sys.modules
        """,
        store,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "NDArrayDType [3, 4]"


def test_without_the_package_zarr_says_no_data_type_found(tmp_path) -> None:
    store = str(tmp_path / "a.zarr")
    assert _run(WRITE, store).returncode == 0
    # Simulate an environment without this package: drop our entry point before zarr loads it.
    result = _run(
        """
        import sys, zarr
        from zarr.dtype import data_type_registry as reg
        eps = getattr(reg, "_lazy_load_list", [])
        eps[:] = [e for e in eps if e.name != "ndarray"]
        zarr.open_array(sys.argv[1], mode="r")
        """,
        store,
    )
    assert result.returncode != 0
    assert "No Zarr data type found that matches" in result.stderr
    assert "'name': 'ndarray'" in result.stderr


LOOP = """
import numpy as np
from zarr.dtype import data_type_registry as reg
def loop():
    for _name in reg.contents:
        reg.match_dtype(np.dtype("int8"))
try:
    loop()
    print("loop ran")
except RuntimeError as exc:
    print(exc)
reg.get("bool")
loop()
print("ndarray" in reg.contents)
"""


def test_a_registry_loop_with_a_look_up_inside_needs_one_look_up_first() -> None:
    """README ("Loops over zarr's data-type registry"): zarr >= 3.4.1 registers plug-ins at the
    first look-up, which a loop over the registry sees as its dict growing; one look-up first
    (the workaround) lets the loop run."""
    result = _run(LOOP)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    if Version("3.4.1") <= ZARR:
        assert (first, second) == ("dictionary changed size during iteration", "True")
    else:  # older zarr never loads the entry point: nothing registers during the loop
        assert (first, second) == ("loop ran", "False")
