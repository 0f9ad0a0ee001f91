"""``zarr-ndarray``: a command-line tool (and Python API) to inspect, convert, verify and export
Zarr stores of ragged ndarray cells, for both the ``vlen-ndarray`` and ``ragged-ndarray`` codecs.

Subcommands (see ``zarr-ndarray --help``): ``info``, ``upgrade``, ``downgrade``, ``migrate``,
``verify`` and ``export``. The metadata rewrites (``upgrade``, ``downgrade``, ``migrate``) change
only the array's ``zarr.json`` (atomically, or one conditional PUT on an object store); chunk
objects are never touched because ``vlen-ndarray`` chunks are byte-identical to ``vlen-bytes``
chunks (SPEC.md section 2.6).

Modules: :mod:`._metadata` and :mod:`._v2` (pure document transforms and checks), :mod:`._stores`
(directory, zip and any-zarr-store access) over :mod:`._remote` (URLs, conditional PUTs) and
:mod:`._local` (the one local atomic replace), :mod:`._scan` (loading an array node),
:mod:`._info`, :mod:`._verify` and :mod:`._export` (reading chunks through the shared columnar
engine, :mod:`zarr_ndarray_dtype.columnar`), :mod:`._commands` (the operations), :mod:`.api` (the
same as a Python API over a path, a URL or any ``zarr.storage.StoreLike``; the CLI calls it),
:mod:`.errors` (refusals, and failures of the environment in one line), :mod:`.progress` and
:mod:`.cli`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from zarr_ndarray_tool.errors import Refused

try:
    __version__ = version("zarr-ndarray-tool")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["Refused", "__version__"]
