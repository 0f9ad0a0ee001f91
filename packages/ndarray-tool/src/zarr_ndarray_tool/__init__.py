"""``zarr-ndarray``: inspect, convert, verify and export Zarr stores of ragged ndarray cells, as a
command and as a Python API (:mod:`zarr_ndarray_tool.api`). Rewrites never touch a chunk."""

from importlib.metadata import PackageNotFoundError, version

from zarr_ndarray_tool.errors import Refused

try:
    __version__ = version("zarr-ndarray-tool")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["Refused", "__version__"]
