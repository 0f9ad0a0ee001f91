"""``zarr-vlen-ndarray``: a command-line tool to inspect, convert, verify and export stores.

Subcommands (see ``zarr-vlen-ndarray --help``): ``info``, ``upgrade``, ``downgrade``,
``migrate``, ``verify`` and ``export``. The metadata rewrites (``upgrade``, ``downgrade``,
``migrate``) change only the array's ``zarr.json`` (atomically, or one conditional PUT on an
object store); chunk objects are never touched because ``vlen-ndarray`` chunks are
byte-identical to ``vlen-bytes`` chunks (SPEC.md section 2.6).

Modules: :mod:`.metadata` and :mod:`.v2` (pure document transforms and checks), :mod:`.stores`
(directory, zip and any-zarr-store access) over :mod:`.remote` (URLs, conditional PUTs) and
:mod:`.atomic` (the one local atomic replace), :mod:`.scan` (loading an array node),
:mod:`.chunks` (the one call into the codec's chunk decoder), :mod:`.plugins` (loading
entry-point plug-ins), :mod:`.decoders` (the chunk decoder plug-in point, through which
``ragged-ndarray`` arrays are read without importing that sibling package), :mod:`.info`,
:mod:`.verify`, :mod:`.export` (the exporter plug-in point), :mod:`.commands` (the
operations), :mod:`.api` (the same as a Python API over any ``zarr.abc.store.Store``),
:mod:`.progress` and :mod:`.cli`.
"""

from __future__ import annotations

from zarr_vlen_ndarray.tool.errors import Refused

__all__ = ["Refused"]
