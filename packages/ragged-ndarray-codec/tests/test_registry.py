"""The ``ragged-ndarray`` codec against the registry's vectors.

``registry/examples/ragged-ndarray.json``, in the layout of registry/README.md.

The vectors are language-neutral: what is valid and invalid, and every expected byte, comes from
the file alone (a copy kept current by registry/examples/generate.py). Each is run through zarr
as a user meets it (the registry's runner, copied beside the vectors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _zrn_support import load_runner

import zarr_ragged_ndarray  # noqa: F401  (registers the codec)

HERE = Path(__file__).parent
runner = load_runner(HERE, "zrn_registry_runner")
VECTORS = runner.registry_vectors(HERE / "golden" / "registry" / "ragged-ndarray.json")


@pytest.mark.parametrize("vector", VECTORS["valid"])
def test_valid(vector: dict[str, Any], tmp_path: Path) -> None:
    runner.check_valid_vector(vector, tmp_path)


@pytest.mark.parametrize("vector", VECTORS["invalid"])
def test_invalid(vector: dict[str, Any], tmp_path: Path) -> None:
    runner.check_invalid_vector(vector, tmp_path)
