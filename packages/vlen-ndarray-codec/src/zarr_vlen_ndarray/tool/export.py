"""``export``: write an ``ndarray`` array to Parquet as an ``nd_arrow.array`` column.

One row per cell, in C order of the chunk grid, one row group per chunk of the grid (unwritten
chunks export their fill cells), plus one ``int64`` coordinate column per array dimension (named
by ``dimension_names`` when set, else ``index`` / ``index_0, index_1, ...``). The file is written
to a temporary sibling and renamed into place when complete.

Needs ``nd-arrow`` (and pyarrow). One chunk of cells becomes a column in :func:`chunk_column`:
1-D arrays whose pattern is ``[null, d1, ..., dk]`` go through ``nd_arrow.from_zarr`` (the
columnar path: no Python object per cell); other arrays through their object cells. Parquet is
written with ``use_compliant_nested_type=False`` so the list items keep the name ``item``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vlen_ndarray.tool.errors import Refused
from zarr_vlen_ndarray.tool.metadata import data_type_kind
from zarr_vlen_ndarray.tool.progress import Progress
from zarr_vlen_ndarray.tool.scan import Node
from zarr_vlen_ndarray.tool.stores import open_array

__all__ = ["cells_to_column", "chunk_column", "coordinate_names", "export_parquet"]


def _imports() -> tuple[Any, Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        import nd_arrow
    except ImportError as exc:
        raise Refused(
            f"export needs nd-arrow and pyarrow ({exc}); install them with `pip install nd-arrow`."
        ) from exc
    return nd_arrow, pa, pq


def cells_to_column(cells: np.ndarray, dims: list[str] | None) -> Any:
    """An ``nd_arrow.array`` Arrow array of ``cells`` (an object array of ndarrays), C order."""
    nd_arrow, _pa, _pq = _imports()
    flat = [c if type(c) is np.ndarray else np.asarray(c) for c in cells.reshape(-1).tolist()]
    try:
        return nd_arrow.NdColumn.from_arrays(flat, dims).to_arrow()
    except nd_arrow.NdArrowError as exc:
        raise Refused(f"nd-arrow cannot hold these cells: {exc}") from exc


def chunk_column(array: Any, region: tuple[slice, ...], dims: list[str] | None) -> Any:
    """The cells of ``region`` as an ``nd_arrow.array`` column, columnar where possible."""
    nd_arrow, _pa, _pq = _imports()
    dtype = array.metadata.data_type
    pattern = getattr(dtype, "pattern", None)
    if len(region) == 1 and pattern is not None and pattern.is_leading_variable:
        try:
            return nd_arrow.from_zarr(array, dims, selection=region[0])
        except nd_arrow.NdArrowError as exc:
            raise Refused(f"nd-arrow cannot hold these cells: {exc}") from exc
    return cells_to_column(np.asarray(array[region], dtype=object), dims)


def coordinate_names(meta: dict[str, Any], ndim: int) -> list[str]:
    """Names of the coordinate columns: the dimension names, else ``index``/``index_i``."""
    names = meta.get("dimension_names")
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return list(names)
    return ["index"] if ndim == 1 else [f"index_{i}" for i in range(ndim)]


def export_parquet(
    node: Node,
    out: Path,
    *,
    column: str | None,
    dims: list[str] | None,
    overwrite: bool,
    progress: Progress,
) -> int:
    """Write ``node`` to ``out``; returns the number of rows written."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind != "ndarray":
        need = {"bytes": "upgrade", "legacy": "migrate"}.get(kind)
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type "
            f"{node.meta.get('data_type')!r}" + (f"; run `{need}` first." if need else ".")
        )
    if out.exists() and not overwrite:
        raise Refused(f"{out} exists; pass --overwrite to replace it.")
    _nd_arrow, pa, pq = _imports()
    name = column or node.loc.name or "cells"
    coords = coordinate_names(node.meta, len(node.grid.shape))
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    rows = 0
    try:
        with open_array(node.loc, node.meta) as array:
            writer = None
            try:
                for index in node.grid.indices():
                    region = node.grid.region(index)
                    grids = np.meshgrid(
                        *(np.arange(r.start, r.stop, dtype=np.int64) for r in region),
                        indexing="ij",
                    )
                    table = pa.table(
                        {
                            **{c: g.reshape(-1) for c, g in zip(coords, grids, strict=True)},
                            name: chunk_column(array, region, dims),
                        }
                    )
                    if writer is None:
                        # Keep list item names ("item"), as nd_arrow.write_parquet does.
                        writer = pq.ParquetWriter(
                            tmp, table.schema, use_compliant_nested_type=False
                        )
                    writer.write_table(table)
                    rows += table.num_rows
                    progress.advance()
            finally:
                if writer is not None:
                    writer.close()
        if rows == 0:
            raise Refused(f"{node.where} has no cells to export (shape {list(node.grid.shape)}).")
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return rows
