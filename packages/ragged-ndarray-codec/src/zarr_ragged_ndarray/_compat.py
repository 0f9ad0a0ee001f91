"""Shims for the zarr-python releases this package supports (3.1.0 .. 3.4.x), in one place.

Each shim names the release that needs it. Everything else in the package uses zarr APIs that
are the same in every supported release.
"""

from __future__ import annotations

# The shims the codec packages share live once in the data type package (below both codecs).
from zarr_ndarray_dtype._compat import (
    array_config,
    index_location,
    regular_chunk_shape,
    run,
    shard_index_nbytes,
    shard_index_spec,
)

__all__ = [
    "array_config",
    "index_location",
    "regular_chunk_shape",
    "run",
    "shard_index_nbytes",
    "shard_index_spec",
]
