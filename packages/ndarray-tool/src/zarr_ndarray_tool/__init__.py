"""``zarr-ndarray``: inspect, convert, verify and export Zarr stores of ragged ndarray cells (the
``vlen-ndarray`` and ``ragged-ndarray`` codecs), as a command and as a Python API
(:mod:`zarr_ndarray_tool.api`). Rewrites change metadata documents only, never a chunk.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from zarr_ndarray_tool.errors import Refused

try:
    __version__ = version("zarr-ndarray-tool")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["Refused", "__version__"]
