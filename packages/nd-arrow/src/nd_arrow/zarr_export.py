"""The ``parquet`` exporter plug-in of the ``zarr-vlen-ndarray`` store tool.

nd-arrow fills the tool's entry-point group ``zarr_vlen_ndarray.exporters`` with
:func:`export_parquet` (see ``pyproject.toml``), so ``zarr-vlen-ndarray export --parquet`` works
when this package is installed with its ``zarr`` extra (``pip install 'zarr-vlen-ndarray[parquet]'``
installs both). The tool never imports nd_arrow; it loads this function through the entry point
and hands it an :class:`~zarr_vlen_ndarray.tool.export.ExportJob`: an opened zarr array, one region
per chunk of its grid, the column names and a progress callback.

One row per cell, one row group per chunk. A chunk of a ``ragged-ndarray`` array (any pattern,
any rank) or of a 1-D ``vlen-ndarray`` array becomes a column through :func:`nd_arrow.from_zarr`
(columnar, no Python object per cell; the ``ragged-ndarray`` path needs zarr-ragged-ndarray, which
the tool needs anyway to open such an array); any other array (an N-d ``vlen-ndarray`` array)
through its object cells, flattened in C order. Parquet is written with
``use_compliant_nested_type=False`` so the list items keep the name ``item``, as
:func:`nd_arrow.write_parquet` does.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nd_arrow.column import NdColumn
from nd_arrow.errors import NdArrowError
from nd_arrow.zarr_bridge import RAGGED, from_zarr, serializer_name
from zarr_vlen_ndarray.tool.errors import Refused
from zarr_vlen_ndarray.tool.export import ExportJob

__all__ = ["cells_to_column", "chunk_column", "export_parquet"]


def cells_to_column(cells: np.ndarray, dims: list[str] | None) -> pa.Array:
    """An ``nd_arrow.array`` Arrow array of ``cells`` (an object array of ndarrays), C order."""
    flat = [c if type(c) is np.ndarray else np.asarray(c) for c in cells.reshape(-1).tolist()]
    try:
        return NdColumn.from_arrays(flat, dims).to_arrow()
    except NdArrowError as exc:
        raise Refused(f"nd-arrow cannot hold these cells: {exc}") from exc


def chunk_column(array: Any, region: tuple[slice, ...], dims: list[str] | None) -> pa.Array:
    """The cells of ``region`` of a zarr ``ndarray`` array as an ``nd_arrow.array`` column."""
    pattern = getattr(array.metadata.data_type, "pattern", None)
    selection: tuple[slice, ...] | slice | None = None
    if serializer_name(array) == RAGGED:
        selection = region  # any rank: the cells come in C order of the region
    elif len(region) == 1 and pattern is not None and pattern.is_leading_variable:
        selection = region[0]
    if selection is not None:
        try:
            return from_zarr(array, dims, selection=selection)
        except NdArrowError as exc:
            raise Refused(f"nd-arrow cannot hold these cells: {exc}") from exc
    return cells_to_column(np.asarray(array[region], dtype=object), dims)


def export_parquet(job: ExportJob, out: BinaryIO) -> int:
    """Write ``job`` as Parquet to the open binary file ``out``; the number of rows written."""
    dims = None if job.dims is None else list(job.dims)
    writer = None
    rows = 0
    try:
        for region in job.regions:
            grids = np.meshgrid(
                *(np.arange(r.start, r.stop, dtype=np.int64) for r in region), indexing="ij"
            )
            columns = {c: g.reshape(-1) for c, g in zip(job.coordinates, grids, strict=True)}
            table = pa.table({**columns, job.column: chunk_column(job.array, region, dims)})
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema, use_compliant_nested_type=False)
            writer.write_table(table)
            rows += table.num_rows
            job.advance()
    finally:
        if writer is not None:
            writer.close()
    return rows
