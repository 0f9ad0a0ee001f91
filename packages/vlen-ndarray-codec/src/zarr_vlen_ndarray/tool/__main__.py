"""``python -m zarr_vlen_ndarray.tool``: the same as the ``zarr-vlen-ndarray`` console script."""

from __future__ import annotations

import sys

from zarr_vlen_ndarray.tool.cli import main

sys.exit(main())
