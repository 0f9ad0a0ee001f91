"""``export``: an ``ndarray`` array's cells to Parquet, as ``nd_arrow.array`` rows.

One row per cell, one row group per chunk of the grid (unwritten chunks export their fill
cells), in C order of the grid, plus one ``int64`` coordinate column per array dimension (named
by ``dimension_names`` when set, else ``index`` / ``index_0, index_1, ...``). The cells are read
columnar (:func:`nd_arrow.from_zarr`, no Python object per cell) and written with
``use_compliant_nested_type=False`` so the list items keep the name ``item``, as
:func:`nd_arrow.write_parquet` does. Needs nd-arrow and pyarrow: ``pip install
'zarr-ndarray-tool[export]'``. The output is written through
:func:`~zarr_ndarray_tool.atomic.atomic_replace`: nothing appears at ``OUT`` unless the whole
export succeeded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from zarr_ndarray_tool.atomic import atomic_replace
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.metadata import data_type_kind
from zarr_ndarray_tool.progress import Progress
from zarr_ndarray_tool.scan import Node
from zarr_ndarray_tool.stores import open_array
from zarr_ndarray_tool.verify import refusal

__all__ = ["INSTALL_HINT", "coordinate_names", "export"]

#: What to install for ``export``.
INSTALL_HINT = "pip install 'zarr-ndarray-tool[export]'"


def coordinate_names(meta: dict[str, Any], ndim: int) -> list[str]:
    """Names of the coordinate columns: the dimension names, else ``index``/``index_i``."""
    names = meta.get("dimension_names")
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return list(names)
    return ["index"] if ndim == 1 else [f"index_{i}" for i in range(ndim)]


def export(
    node: Node,
    out: Path,
    *,
    column: str | None = None,
    dims: list[str] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write ``node`` to the local Parquet file ``out``; the number of rows written."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind != "ndarray":
        need = {"bytes": "upgrade", "legacy": "migrate"}.get(kind)
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type "
            f"{node.meta.get('data_type')!r}" + (f"; run `{need}` first." if need else ".")
        )
    _check_output(out, overwrite)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from nd_arrow.errors import NdArrowError
        from nd_arrow.zarr_bridge import from_zarr
    except ImportError as exc:
        raise Refused(
            f"export writes Parquet through nd-arrow, which is not installed ({exc}); "
            f"{INSTALL_HINT}."
        ) from exc
    name = column or node.loc.name or "cells"
    coords = coordinate_names(node.meta, len(node.grid.shape))
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    bar = progress if progress is not None else Progress(node.grid.nchunks, "export", enabled=False)

    with open_array(node.loc, node.meta) as array:

        def fill(fh: BinaryIO) -> int:
            writer = None
            rows = 0
            try:
                for index in node.grid.indices():
                    region = node.grid.region(index)
                    grids = np.meshgrid(
                        *(np.arange(r.start, r.stop, dtype=np.int64) for r in region),
                        indexing="ij",
                    )
                    columns = {c: g.reshape(-1) for c, g in zip(coords, grids, strict=True)}
                    try:
                        cells = from_zarr(array, dims, selection=region)
                    except NdArrowError as exc:
                        raise Refused(f"nd-arrow cannot hold these cells: {exc}") from exc
                    except ValueError as exc:  # every codec and stored-chunk error is one
                        raise refusal(node, exc) from exc
                    table = pa.table({**columns, name: cells})
                    if writer is None:
                        writer = pq.ParquetWriter(fh, table.schema, use_compliant_nested_type=False)
                    writer.write_table(table)
                    rows += table.num_rows
                    bar.advance()
            finally:
                if writer is not None:
                    writer.close()
            if rows == 0:
                raise Refused(
                    f"{node.where} has no cells to export (shape {list(node.grid.shape)})."
                )
            return rows

        def guarded(fh: BinaryIO) -> int:
            try:
                return fill(fh)
            except Refused:
                raise
            except Exception as exc:  # a bug below is reported, never a traceback
                raise Refused(
                    f"export failed: {type(exc).__name__}: {exc}; nothing written."
                ) from exc

        try:
            return atomic_replace(out, guarded)
        except OSError as exc:  # the output's directory changed while the export ran
            raise Refused(f"cannot write {out}: {exc.strerror or exc}; nothing written.") from exc


def _check_output(out: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output that exists (without --overwrite) or cannot be made."""
    if out.is_dir():
        raise Refused(f"{out} is a directory; --parquet takes the path of a file to write.")
    if out.exists() and not overwrite:
        raise Refused(f"{out} exists; pass --overwrite to replace it.")
    parent = out.parent
    if not parent.is_dir():
        raise Refused(f"cannot write {out}: the directory {parent} does not exist; create it.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise Refused(f"cannot write {out}: the directory {parent} is not writable.")
