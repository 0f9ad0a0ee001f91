"""``zarr-vlen-ndarray``: a command-line tool to inspect, convert, verify and export stores.

Subcommands (see ``zarr-vlen-ndarray --help``): ``info``, ``upgrade``, ``downgrade``,
``migrate``, ``verify`` and ``export``. The metadata rewrites (``upgrade``, ``downgrade``,
``migrate``) change only the array's ``zarr.json``, atomically; chunk objects are never touched
because ``vlen-ndarray`` chunks are byte-identical to ``vlen-bytes`` chunks (SPEC.md section 2.6).

Modules: :mod:`.metadata` (pure dict transforms and checks), :mod:`.stores` (directory and zip
store access), :mod:`.scan` (reading chunks through zarr), :mod:`.info`, :mod:`.verify`,
:mod:`.export`, :mod:`.progress` and :mod:`.cli`.
"""

from __future__ import annotations

from zarr_vlen_ndarray.tool.errors import Refused

__all__ = ["Refused"]
