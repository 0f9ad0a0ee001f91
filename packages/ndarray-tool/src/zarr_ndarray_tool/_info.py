"""``info``: what an array is and what its chunks hold, as a JSON-ready report or text: data
type, codecs, cells, stored and payload bytes, and the distribution of the cells' variable
extents over the written chunks (decoded by the columnar engine, no cell copied).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype.blocks import cell_shapes
from zarr_ndarray_dtype.chunks import serializer_of
from zarr_ndarray_dtype.columnar import scan_cells
from zarr_ndarray_dtype.errors import StoredChunkError
from zarr_ndarray_tool._metadata import bytes_view, codec_chain, data_type_kind, element_type
from zarr_ndarray_tool._scan import Node, payload_lengths, sharding_inner_chunks
from zarr_ndarray_tool._stores import open_array
from zarr_ndarray_tool._text import counted
from zarr_ndarray_tool._verify import read_raw, refusal
from zarr_ndarray_tool.errors import Refused
from zarr_ndarray_tool.progress import Progress
from zarr_vlen_ndarray import VlenNDArrayCodec, framing

_QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75, "p99": 0.99}
_BINS = 10


def gather(node: Node, progress: Progress) -> dict[str, Any]:
    """The info report of ``node``, reading every written chunk (advancing ``progress``)."""
    meta = node.meta
    kind = data_type_kind(meta.get("data_type"))
    etype = element_type(meta, node.where) if kind in ("ndarray", "legacy") else None
    report: dict[str, Any] = {
        "path": node.where,
        "data_type": meta.get("data_type"),
        "kind": kind,
        "element": None
        if etype is None
        else {"dtype": etype.dtype, "shape": etype.shape, "unit_bytes": etype.unit},
        "shape": list(node.grid.shape),
        "chunk_shape": list(node.grid.chunks),
        "inner_chunk_shape": _opt_list(sharding_inner_chunks(meta)),
        "codecs": codec_chain(meta.get("codecs")),
        "fill_value": meta.get("fill_value"),
        "dimension_names": meta.get("dimension_names"),
        "cells": node.grid.ncells,
        "chunks": node.grid.nchunks,
        "written_chunks": len(node.objects),
        "stored_bytes": sum(o.nbytes for o in node.objects),
    }
    if kind == "ndarray":
        report.update(_ndarray_statistics(node, progress))
        return report
    try:
        view = bytes_view(meta, node.where)
    except Refused:
        return report  # not an array whose chunks are vlen-bytes framed: metadata only
    parts: list[npt.NDArray[np.int64]] = []
    with open_array(node.loc, view) as array:
        for obj in node.objects:
            try:
                cells = read_raw(array, node.grid.region(obj.index))
            except StoredChunkError as exc:
                raise refusal(node, exc) from exc
            parts.append(payload_lengths(cells))
            progress.advance()
    lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    unit = etype.unit if etype is not None else 1  # a legacy 0.1.x array: rows of its element
    report["cells_in_written_chunks"] = int(lengths.size)
    report["payload_bytes"] = int(lengths.sum())
    report["encoded_bytes"] = int(lengths.sum()) + 4 * (len(parts) + lengths.size)
    report["extent_unit"] = "rows" if etype is not None else "bytes"
    report["not_whole_rows"] = int(np.count_nonzero(lengths % unit))
    report["extent"] = _distribution(lengths // unit)
    return report


def _ndarray_statistics(node: Node, progress: Progress) -> dict[str, Any]:
    """Statistics of an ``ndarray`` array's written cells, decoded by the columnar engine.

    Cells outside the array's shape (padding of edge chunks) are left out, as reading the array
    through zarr does; so are the fill cells of unwritten (inner) chunks.
    """
    etype = element_type(node.meta)
    assert etype is not None  # an ndarray array has an element type
    sizes: list[npt.NDArray[np.int64]] = []
    shapes: list[npt.NDArray[np.int64]] = []
    encoded = 0
    with open_array(node.loc, node.meta) as array:
        pattern = array.metadata.data_type.pattern
        vlen = isinstance(serializer_of(array.metadata), VlenNDArrayCodec)
        for obj in node.objects:
            try:
                scan = scan_cells(array, node.grid.region(obj.index), "info")
            except ValueError as exc:  # every codec and stored-chunk error is a ValueError
                raise refusal(node, exc) from exc
            sizes.append(scan.cells.sizes[scan.stored])
            shapes.append(cell_shapes(scan.cells, pattern)[scan.stored])
            encoded += scan.chunk_nbytes
            progress.advance()
    items = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    table = np.concatenate(shapes) if shapes else np.zeros((0, pattern.ndim), np.int64)
    rows = pattern.is_leading_variable
    report: dict[str, Any] = {"framing_backend": framing.BACKEND} if vlen else {}
    report |= {
        "cells_in_written_chunks": int(items.size),
        "payload_bytes": int(items.sum()) * etype.itemsize,
        "encoded_bytes": encoded,
        "extent_unit": "rows" if rows else "items",
        "not_whole_rows": 0,
        "extent": _distribution(items // pattern.fixed_items if rows else items),
    }
    if not rows:
        report["extents"] = {
            str(axis): _distribution(table[:, axis]) for axis in pattern.variable_axes
        }
    return report


def _opt_list(value: tuple[int, ...] | None) -> list[int] | None:
    return None if value is None else list(value)


def _distribution(extents: npt.NDArray[np.int64]) -> dict[str, Any] | None:
    if not extents.size:
        return None
    out: dict[str, Any] = {"min": int(np.min(extents))}
    for name, q in _QUANTILES.items():
        out[name] = int(np.quantile(extents, q, method="inverted_cdf"))
    out["max"] = int(np.max(extents))
    out["mean"] = float(extents.mean())
    out["empty"] = int(np.count_nonzero(extents == 0))
    out["histogram"] = _histogram(extents)
    return out


def _histogram(extents: npt.NDArray[np.int64]) -> list[list[int]]:
    """``[[lo, hi, count], ...]``: at most ``_BINS`` integer bins of one width (inclusive
    bounds) from min, the last reaching max; equal widths keep the counts comparable."""
    lo, hi = int(np.min(extents)), int(np.max(extents))
    width = -(-(hi - lo + 1) // _BINS)
    edges = np.arange(lo, hi + width + 1, width, dtype=np.int64)
    counts, _ = np.histogram(extents, bins=edges)
    return [
        [int(a), int(b) - 1, int(c)] for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True)
    ]


def _size(n: int) -> str:
    value = float(n)
    for suffix in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or suffix == "GiB":
            return f"{n} B" if suffix == "B" else f"{value:.1f} {suffix}"
        value /= 1024
    raise AssertionError("unreachable")


def render(report: dict[str, Any]) -> str:
    """The report as aligned text lines."""
    rows: list[tuple[str, str]] = [("path", report["path"])]
    element = report["element"]
    dtype_text = json.dumps(report["data_type"])
    if element is not None:
        shape = json.dumps(element["shape"])
        dtype_text = f"ndarray {element['dtype']} {shape} (unit {element['unit_bytes']} B)"
        if report["kind"] == "legacy":
            dtype_text += " - zarr-vlen-ndarray 0.1.x metadata: run `migrate`"
    elif report["kind"] == "bytes":
        dtype_text += " (raw bytes: `upgrade --dtype D --shape S` types it)"
    rows.append(("data type", dtype_text))
    grid = f"{report['shape']} in chunks of {report['chunk_shape']}"
    if report["inner_chunk_shape"] is not None:
        grid += f" (shards; inner chunks {report['inner_chunk_shape']})"
    rows.append(("shape", grid))
    if report["dimension_names"] is not None:
        rows.append(("dimensions", json.dumps(report["dimension_names"])))
    rows.append(("codecs", report["codecs"]))
    rows.append(("fill value", json.dumps(report["fill_value"])))
    written = f"{report['written_chunks']} of {counted(report['chunks'], 'chunk object')} written"
    if "cells_in_written_chunks" in report:
        written += f", holding {counted(report['cells_in_written_chunks'], 'cell')}"
    rows.append(("cells", f"{report['cells']} ({written})"))
    stored = f"{_size(report['stored_bytes'])} stored"
    if "payload_bytes" in report:
        payload = report["payload_bytes"]
        stored += f"; element payload {_size(payload)}"
        if payload:
            stored += f" (stored/payload {report['stored_bytes'] / payload:.3f})"
    rows.append(("bytes", stored))
    if "framing_backend" in report:
        backend = report["framing_backend"]
        rows.append(("framing", f"{backend} (zarr_vlen_ndarray.framing.BACKEND)"))
    lines = [f"{k:<11}: {v}" for k, v in rows]
    dist = report.get("extent")
    if dist is not None:
        unit = report["extent_unit"]
        stats = ", ".join(f"{k} {dist[k]}" for k in ("min", *_QUANTILES, "max"))
        lines.append(f"{'extent':<11}: {unit} per element: {stats}, mean {dist['mean']:.2f}")
        lines.append(f"{'':<11}  empty elements: {dist['empty']}")
        for axis, axis_dist in (report.get("extents") or {}).items():
            if axis_dist is not None:
                axis_stats = ", ".join(f"{k} {axis_dist[k]}" for k in ("min", *_QUANTILES, "max"))
                lines.append(
                    f"{'':<11}  axis {axis} (variable): {axis_stats}, mean {axis_dist['mean']:.2f}"
                )
        if report["not_whole_rows"]:
            lines.append(
                f"{'':<11}  WARNING: not a whole number of rows: "
                f"{counted(report['not_whole_rows'], 'element')} (run `verify`)"
            )
        top = max(c for _, _, c in dist["histogram"]) or 1
        for lo, hi, count in dist["histogram"]:
            label = f"{lo}" if lo == hi else f"{lo}-{hi}"
            bar = "#" * max(1 if count else 0, round(40 * count / top))
            lines.append(f"{'':<11}  {label:>15} | {bar} {count}")
    return "\n".join(lines)
