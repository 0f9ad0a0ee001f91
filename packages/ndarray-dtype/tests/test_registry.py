"""The ``ndarray`` data type against the registry's vectors (registry/examples/ndarray.json).

The vectors are language-neutral: what is valid and invalid, and every expected byte, comes from
the file alone (a copy kept current by registry/examples/generate.py). Each is run through zarr
as a user meets it (zarr_ndarray_dtype.testing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zarr_ndarray_dtype.vectors import check_invalid_vector, check_valid_vector, registry_vectors

VECTORS = registry_vectors(Path(__file__).parent / "golden" / "registry" / "ndarray.json")


@pytest.mark.parametrize("vector", VECTORS["valid"])
def test_valid(vector: dict[str, Any], tmp_path: Path) -> None:
    check_valid_vector(vector, tmp_path)


@pytest.mark.parametrize("vector", VECTORS["invalid"])
def test_invalid(vector: dict[str, Any], tmp_path: Path) -> None:
    check_invalid_vector(vector, tmp_path)
