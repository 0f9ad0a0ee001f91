"""``export``: hand an ``ndarray`` array to an exporter plug-in (Parquet: nd-arrow's).

The tool itself writes no Arrow or Parquet and never imports a package above this one. Exporters
are plug-ins: callables registered in the entry-point group :data:`ENTRY_POINT_GROUP`
(``zarr_vlen_ndarray.exporters``) under a format name. The ``parquet`` exporter is
``nd_arrow.zarr_export:export_parquet``, installed by ``pip install 'zarr-vlen-ndarray[parquet]'``
(which pulls in ``nd-arrow[zarr]``). A plug-in is called as ``exporter(job, file)`` with an
:class:`ExportJob` and the binary file to write; it returns the number of rows written and raises
:class:`~zarr_vlen_ndarray.tool.errors.Refused` for cells it cannot hold.

The output is written through :func:`~zarr_vlen_ndarray.tool.atomic.atomic_replace`: nothing
appears at ``OUT`` unless the whole export succeeded. A plug-in that fails to load is reported
with a warning and skipped (never a crash); with none available the command exits 1 with an
install hint. Rows are the cells in C order of the chunk grid, one group per chunk of the grid
(unwritten chunks export their fill cells), plus one ``int64`` coordinate column per array
dimension (named by ``dimension_names`` when set, else ``index`` / ``index_0, index_1, ...``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from zarr_vlen_ndarray.tool.atomic import atomic_replace
from zarr_vlen_ndarray.tool.decoders import require_decoder
from zarr_vlen_ndarray.tool.errors import Refused
from zarr_vlen_ndarray.tool.metadata import data_type_kind
from zarr_vlen_ndarray.tool.plugins import load_plugin
from zarr_vlen_ndarray.tool.progress import Progress
from zarr_vlen_ndarray.tool.scan import Node
from zarr_vlen_ndarray.tool.stores import open_array

__all__ = [
    "ENTRY_POINT_GROUP",
    "ExportJob",
    "Exporter",
    "coordinate_names",
    "export",
    "load_exporter",
]

#: The entry-point group exporter plug-ins register in (name: the format, e.g. ``parquet``).
ENTRY_POINT_GROUP = "zarr_vlen_ndarray.exporters"
#: What to install for each format the tool knows a plug-in for.
INSTALL_HINTS = {"parquet": "pip install 'zarr-vlen-ndarray[parquet]'"}


@dataclass(frozen=True)
class ExportJob:
    """What an exporter plug-in receives (besides the file to write)."""

    #: The array, opened read-only through zarr with its own metadata (an ``ndarray`` array).
    array: Any
    #: The cells to export: one region per chunk of the grid, in C order of the grid.
    regions: tuple[tuple[slice, ...], ...]
    #: The name of the cell column.
    column: str
    #: The names of the coordinate columns, one per array dimension.
    coordinates: tuple[str, ...]
    #: The names of the element axes (``--dims``), or None for the exporter's default.
    dims: tuple[str, ...] | None
    #: Call once per region written (drives the progress bar).
    advance: Callable[[], None]


#: An exporter plug-in: writes the job to the open binary file, returns the rows written.
Exporter = Callable[[ExportJob, BinaryIO], int]


def load_exporter(name: str) -> Exporter | None:
    """The exporter registered under ``name``; None if there is none that loads.

    A plug-in that raises while loading, or is not callable, is skipped with a RuntimeWarning.
    """
    exporter: Exporter | None = load_plugin(ENTRY_POINT_GROUP, name, "exporter")
    return exporter


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
    fmt: str = "parquet",
    column: str | None = None,
    dims: list[str] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write ``node`` to the local file ``out`` in format ``fmt``; the number of rows written."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind != "ndarray":
        need = {"bytes": "upgrade", "legacy": "migrate"}.get(kind)
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type "
            f"{node.meta.get('data_type')!r}" + (f"; run `{need}` first." if need else ".")
        )
    if out.exists() and not overwrite:
        raise Refused(f"{out} exists; pass --overwrite to replace it.")
    # A codec served by a decoder plug-in (ragged-ndarray) needs its package to be opened at all;
    # loading the plug-in also registers the codec with zarr.
    require_decoder(node.meta, node.where)
    exporter = load_exporter(fmt)
    if exporter is None:
        hint = INSTALL_HINTS.get(fmt, f"install a package that registers it in {ENTRY_POINT_GROUP}")
        raise Refused(f"no {fmt!r} exporter is installed; {hint}.")
    name = column or node.loc.name or "cells"
    coords = coordinate_names(node.meta, len(node.grid.shape))
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    bar = progress if progress is not None else Progress(node.grid.nchunks, "export", enabled=False)
    with open_array(node.loc, node.meta) as array:
        job = ExportJob(
            array=array,
            regions=tuple(node.grid.region(i) for i in node.grid.indices()),
            column=name,
            coordinates=tuple(coords),
            dims=None if dims is None else tuple(dims),
            advance=bar.advance,
        )

        def fill(fh: BinaryIO) -> int:
            try:
                rows = exporter(job, fh)
            except Refused:
                raise
            except Exception as exc:  # a plug-in bug is reported, never a traceback
                raise Refused(
                    f"the {fmt!r} exporter failed: {type(exc).__name__}: {exc}; nothing written."
                ) from exc
            if rows == 0:
                raise Refused(
                    f"{node.where} has no cells to export (shape {list(node.grid.shape)})."
                )
            return rows

        return atomic_replace(out, fill)
