"""``export``: an ``ndarray`` array's cells to a Parquet file of ``nd_arrow.array`` rows, one per
cell of a selection, with an ``int64`` coordinate column per array dimension; one row group per
chunk (or shard), read columnar by nd-arrow's zarr bridge in slabs small enough for the progress
to move. Nothing appears at the output unless the whole export succeeded.
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from zarr_ndarray_dtype.chunks import Box, Grid, Selection, resolve, slabs
from zarr_ndarray_tool._local import atomic_replace
from zarr_ndarray_tool._metadata import data_type_kind, element_type
from zarr_ndarray_tool._scan import Node, sharding_inner_chunks
from zarr_ndarray_tool._stores import open_array
from zarr_ndarray_tool._text import counted
from zarr_ndarray_tool._verify import refusal
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.progress import Progress, counting

#: What to install for ``export``.
INSTALL_HINT = "pip install 'zarr-ndarray-tool[export]'"
#: About how many bytes of cell values one read takes (whole rows of inner chunks, at least one).
SLAB_BYTES = 4 << 20


def coordinate_names(meta: dict[str, Any], ndim: int) -> list[str]:
    """Names of the coordinate columns: the dimension names, else ``index``/``index_i``."""
    names = meta.get("dimension_names")
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return list(names)
    return ["index"] if ndim == 1 else [f"index_{i}" for i in range(ndim)]


def _box(node: Node, select: Selection) -> Box:
    """The box of cells ``select`` names; Refused saying why not, with the array's shape."""
    try:
        return resolve(select, node.grid.shape, "--select")
    except (IndexError, TypeError, ValueError) as exc:
        raise Refused(f"{node.where} (shape {list(node.grid.shape)}): {exc}.") from exc


def _check_dims(node: Node, dims: list[str] | None) -> None:
    """``--dims`` names every axis of a cell, once each."""
    etype = element_type(node.meta, node.where)
    if dims is None or etype is None:
        return
    rank = len(etype.shape)
    example = ",".join(["n", "xy", "z", "t"][:rank]) if rank <= 4 else "d0,d1,..."
    if len(dims) != rank or len(set(dims)) != len(dims):
        problem = "a name twice" if len(dims) == rank else counted(len(dims), "name")
        raise Refused(
            f"--dims {','.join(dims)} gives {problem}, but every cell of {node.where} has "
            f"{rank} axes ({etype}); name each axis once, comma-separated (e.g. --dims "
            f"{example})."
        )


def export(
    node: Node,
    out: Path,
    *,
    column: str | None = None,
    dims: list[str] | None = None,
    select: Selection = ...,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write the cells ``select`` of ``node`` to the local Parquet file ``out``; the number of
    rows written."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind != "ndarray":
        need = {"bytes": "upgrade", "legacy": "migrate"}.get(kind)
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type "
            f"{node.meta.get('data_type')!r}" + (f"; run `{need}` first." if need else ".")
        )
    _check_dims(node, dims)
    box = _box(node, select)
    _check_output(out, overwrite)
    _require_nd_arrow()
    name = column or node.loc.name or "cells"
    coords = coordinate_names(node.meta, len(node.grid.shape))
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    reader = _SlabReader(node, dims, coords, name, counting(progress, math.prod(box.extents)))
    return atomic_replace(out, lambda fh: _write_parquet(fh, node, box, reader))


def _require_nd_arrow() -> None:
    try:
        import pyarrow.parquet  # noqa: F401

        import nd_arrow.zarr_bridge  # noqa: F401
    except ImportError as exc:
        raise Refused(
            f"export writes Parquet through nd-arrow, which is not installed ({exc}); "
            f"{INSTALL_HINT}."
        ) from exc


class _SlabReader:
    """The cells of a slab as an Arrow table (coordinate columns, then the cells); each slab
    sized from the bytes per cell of the slabs before it."""

    def __init__(
        self, node: Node, dims: list[str] | None, coords: list[str], name: str, bar: Progress
    ) -> None:
        self.node, self.dims, self.coords, self.name, self.bar = node, dims, coords, name, bar
        self.bytes_per_cell = 0.0

    def limit(self) -> int:
        """How many cells the next slab takes."""
        return max(1, int(SLAB_BYTES / self.bytes_per_cell)) if self.bytes_per_cell else 1

    def table(self, array: Any, part: Box) -> Any:
        import pyarrow as pa

        from nd_arrow.errors import NdArrowError
        from nd_arrow.zarr_bridge import from_zarr

        try:
            cells = from_zarr(array, self.dims, selection=part.slices)
        except NdArrowError as exc:
            raise Refused(f"{self.node.where}: nd-arrow cannot hold these cells: {exc}.") from exc
        except ValueError as exc:  # every codec and stored-chunk error is one
            raise refusal(self.node, exc) from exc
        if len(cells):
            self.bytes_per_cell = cells.nbytes / len(cells)
        self.bar.advance(len(cells))
        ranges = [
            np.arange(a, b, dtype=np.int64) for a, b in zip(part.starts, part.stops, strict=True)
        ]
        grids = np.meshgrid(*ranges, indexing="ij")
        columns = {c: g.reshape(-1) for c, g in zip(self.coords, grids, strict=True)}
        return pa.table({**columns, self.name: cells})


def _write_parquet(fh: BinaryIO, node: Node, box: Box, reader: _SlabReader) -> int:
    """The cells of ``box`` as Parquet, a row group per chunk (or shard); the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    inner = sharding_inner_chunks(node.meta) or node.grid.chunks
    writer, rows = None, 0
    try:
        with open_array(node.loc, node.meta) as array:
            for chunk in _chunks_of(node.grid, box):
                parts = slabs(chunk, [inner], reader.limit)
                table = pa.concat_tables([reader.table(array, part) for part in parts])
                if writer is None:  # list items keep the name "item", as nd-arrow writes them
                    writer = pq.ParquetWriter(fh, table.schema, use_compliant_nested_type=False)
                writer.write_table(table)
                rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if rows == 0:
        raise Refused(
            f"{node.where} has no cells to export there (shape {list(node.grid.shape)}, "
            f"selection {_text(box)})."
        )
    return rows


def _chunks_of(grid: Grid, box: Box) -> list[Box]:
    """The part of ``box`` in every chunk of ``grid`` it overlaps, in C order of the grid."""
    ranges = [
        range(a // c, -(-b // c))
        for a, b, c in zip(box.starts, box.stops, grid.chunks, strict=True)
    ]
    parts = []
    for index in itertools.product(*ranges):
        region = grid.region(index)
        starts = tuple(max(r.start, a) for r, a in zip(region, box.starts, strict=True))
        stops = tuple(min(r.stop, b) for r, b in zip(region, box.stops, strict=True))
        parts.append(Box(starts, stops, ()))
    return parts


def _text(box: Box) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in zip(box.starts, box.stops, strict=True)) + "]"


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
