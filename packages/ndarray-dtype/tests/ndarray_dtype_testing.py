"""Shared test helpers of zarr-ndarray-dtype (imported by a package-unique module name)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from zarr_ndarray_dtype import ELEMENT_DTYPES

# A copy of the repository's registry/examples/ndarray, shipped in the sdist so the tests run
# from it; registry/examples/generate.py writes the copy with the original and its --check (in
# the nox lint session) fails when they differ.
EXAMPLES = Path(__file__).resolve().parent / "golden" / "ndarray"


def load_examples(folder: str) -> list[tuple[str, object]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted((EXAMPLES / folder).glob("*.json"))]


extents = st.one_of(st.none(), st.integers(min_value=1, max_value=5))
patterns = st.lists(extents, min_size=1, max_size=4).map(tuple)
element_dtypes = st.sampled_from(ELEMENT_DTYPES)
