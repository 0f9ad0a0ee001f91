"""``python -m zarr_ndarray_tool``: the same as the ``zarr-ndarray`` console script."""

import sys

from zarr_ndarray_tool.cli import main

sys.exit(main())
