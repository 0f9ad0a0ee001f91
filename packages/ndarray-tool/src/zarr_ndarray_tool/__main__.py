"""``python -m zarr_ndarray_tool``: the same as the ``zarr-ndarray`` console script."""

from zarr_ndarray_tool.cli import main

raise SystemExit(main())
