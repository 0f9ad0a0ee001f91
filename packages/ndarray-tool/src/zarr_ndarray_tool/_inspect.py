"""Reading every stored chunk object: ``info``, ``verify`` and an ``upgrade``'s checks.
``ndarray`` chunks are decoded by the columnar engine with every rule of their codec, no value
copied; raw-bytes chunks are read through zarr as ``vlen-bytes``."""

from __future__ import annotations

import base64
import itertools
import json
import math
import operator
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import iter_columnar
from zarr_ndarray_tool import _documents as docs
from zarr_ndarray_tool._documents import Grid, data_type_kind, inner_chunks, label
from zarr_ndarray_tool._stores import Location, Node, open_array
from zarr_ndarray_tool.errors import Progress, Refused, counted, environment_failure, steps
from zarr_vlen_ndarray.framing import BACKEND

_QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75, "p99": 0.99}
Region = tuple[slice, ...]


def _read(array: Any, region: Region, key: str, typed: bool) -> Any:
    """The shape table of the cells of ``region`` (``typed``), else the cells as raw bytes, flat.
    A chunk that does not decode raises a ValueError naming it; a failure of the environment (a
    connection, a disk) is raised as it is."""
    try:
        if typed:
            tables = [col.shapes for _, col in iter_columnar(array, region, values=False)]
            return np.concatenate(tables) if tables else np.zeros((0, 1), np.int64)
        return list(np.asarray(array[region], dtype=object).reshape(-1))
    except Exception as exc:  # a codec's, compressor's or checksum's failure, whatever its type
        if (failure := environment_failure(exc)) is not None:
            raise failure from None
        if typed and isinstance(exc, ValueError):  # every codec and stored-chunk error is one
            raise
        raise ValueError(
            f"the stored chunk {key!r} does not decode ({type(exc).__name__}: {exc}): it is "
            "corrupt or was written with other codecs"
        ) from exc


def info(node: Node, progress: Progress | None = None) -> dict[str, Any]:
    """The ``info`` report, from every written chunk (those that do not decode are counted)."""
    meta, kind, grid = node.meta, data_type_kind(node.meta.get("data_type")), node.grid
    etype = docs.element_type(meta, node.where) if kind in ("ndarray", "legacy") else None
    unit = etype.fixed_nbytes if etype else 1  # bytes per row; a raw-bytes array's extents: bytes
    report: dict[str, Any] = {
        "path": node.where,
        "data_type": meta.get("data_type"),
        "kind": kind,
        "element": etype and {"dtype": etype.dtype, "shape": [*etype.shape], "unit_bytes": unit},
        "shape": list(grid.shape),
        "chunk_shape": list(grid.chunks),
        "inner_chunk_shape": list(inner_chunks(meta) or []) or None,
        "codecs": docs.codec_chain(meta.get("codecs")),
        "fill_value": meta.get("fill_value"),
        "dimension_names": meta.get("dimension_names"),
        "cells": int(np.prod(grid.shape)),
        "chunks": math.prod(grid.grid_shape),
        "written_chunks": len(node.objects),
        "stored_bytes": sum(o.nbytes for o in node.objects),
    }
    try:
        view = meta if kind == "ndarray" else docs.bytes_view(meta, node.where)
    except Refused:
        return report  # not an array whose chunks the tool reads: metadata only
    parts, bad, advance = [], [], steps(progress, len(node.objects))
    array = open_array(node.loc, view)
    for obj in node.objects:
        try:
            found = _read(array, grid.region(obj.index), obj.key, kind == "ndarray")
            parts.append(found if kind == "ndarray" else np.array(list(map(len, found))))
        except ValueError as exc:
            bad.append(str(exc))
        advance(1)
    report |= {"unreadable_chunks": len(bad), "unreadable": bad[:5]}
    if etype is None or kind != "ndarray":  # raw bytes (a 0.1.x array: rows of its element)
        sizes = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        report["encoded_bytes"] = int(sizes.sum()) + 4 * (len(parts) + sizes.size)
        payload, extents, per = sizes, sizes // unit, "rows" if etype else "bytes"
        whole = int(np.count_nonzero(sizes % unit))
    else:  # the shape table (cells beyond the shape left out)
        table = np.concatenate(parts) if parts else np.zeros((0, len(etype.shape)), np.int64)
        items, rows = np.prod(table, axis=1, dtype=np.int64), etype.pattern.is_leading_variable
        payload, whole = items * etype.item_dtype.itemsize, 0
        extents, per = (table[:, 0], "rows") if rows else (items, "items")
        if not rows:  # the distribution of each variable axis' extent
            axes = etype.pattern.variable_axes
            report["extents"] = {str(a): _distribution(table[:, a]) for a in axes}
        if '"vlen-ndarray"' in json.dumps(meta["codecs"]):  # the vlen-ndarray kernel in use
            report["framing_backend"] = BACKEND
    return report | {
        "cells_in_written_chunks": int(payload.size),
        "payload_bytes": int(payload.sum()),
        "extent_unit": per,
        "not_whole_rows": whole,
        "extent": _distribution(extents),
    }


def _distribution(extents: npt.NDArray[np.int64]) -> dict[str, Any] | None:
    if not extents.size:
        return None
    low, high = int(np.min(extents)), int(np.max(extents))
    qs = np.quantile(extents, list(_QUANTILES.values()), method="inverted_cdf")
    out: dict[str, Any] = {"min": low, **dict(zip(_QUANTILES, map(int, qs), strict=True))}
    out |= {"max": high, "mean": float(extents.mean()), "empty": int(np.sum(extents == 0))}
    width = -(-(high - low + 1) // 10)  # at most 10 bins of one width: comparable counts
    edges = np.arange(low, high + width + 1, width, dtype=np.int64)
    counts = np.histogram(extents, bins=edges)[0]
    out["histogram"] = [[int(a), int(a) + width - 1, int(c)] for a, c in zip(edges, counts)]  # noqa: B905
    return out


def _size(n: int) -> str:
    power = next((p for p in (3, 2, 1) if n >= 1024**p), 0)
    return f"{n / 1024**power:.1f} {('KiB', 'MiB', 'GiB')[power - 1]}" if power else f"{n} B"


def render(report: dict[str, Any]) -> str:
    """The report as aligned text lines."""
    text, kind, e = json.dumps(report["data_type"]), report["kind"], report["element"]
    if e is not None:
        text = f"ndarray {e['dtype']} {json.dumps(e['shape'])} (unit {e['unit_bytes']} B)"
    text += " - zarr-vlen-ndarray 0.1.x metadata: run `migrate`" * (kind == "legacy")
    text += " (raw bytes: `upgrade --dtype D --shape S` types it)" * (kind == "bytes")
    grid = f"{report['shape']} in chunks of {report['chunk_shape']}"
    if report["inner_chunk_shape"] is not None:
        grid += f" (shards; inner chunks {report['inner_chunk_shape']})"
    written = f"{report['written_chunks']} of {counted(report['chunks'], 'chunk object')} written"
    if "cells_in_written_chunks" in report:
        written += f", holding {counted(report['cells_in_written_chunks'], 'cell')}"
    rows = [("path", report["path"]), ("data type", text), ("shape", grid)]
    if report["dimension_names"] is not None:
        rows.append(("dimensions", json.dumps(report["dimension_names"])))
    rows += [("codecs", report["codecs"]), ("fill value", json.dumps(report["fill_value"]))]
    rows.append(("cells", f"{report['cells']} ({written})"))
    if bad := report.get("unreadable_chunks"):
        bad = f"{counted(bad, 'chunk object')} could not be read, left out of the figures"
        rows.append(("unreadable", f"{bad} (run `verify`)"))
    stored = f"{_size(report['stored_bytes'])} stored"
    if "payload_bytes" in report:
        stored += f"; element payload {_size(payload := report['payload_bytes'])}"
        if payload:
            stored += f" (stored/payload {report['stored_bytes'] / payload:.3f})"
    rows.append(("bytes", stored))
    if "framing_backend" in report:
        rows.append(("framing", f"{report['framing_backend']} (zarr_vlen_ndarray.framing.BACKEND)"))
    lines = [f"{k:<11}: {v}" for k, v in rows]
    if (dist := report.get("extent")) is None:
        return "\n".join(lines)

    def stats(d: dict[str, Any]) -> str:
        quantiles = ", ".join(f"{k} {d[k]}" for k in ("min", *_QUANTILES, "max"))
        return f"{quantiles}, mean {d['mean']:.2f}"

    lines.append(f"{'extent':<11}: {report['extent_unit']} per element: {stats(dist)}")
    lines.append(f"{'':<13}empty elements: {dist['empty']}")
    for axis, axis_dist in (report.get("extents") or {}).items():
        lines += [f"{'':<13}axis {axis} (variable): {stats(axis_dist)}"] if axis_dist else []
    if report["not_whole_rows"]:
        bad = counted(report["not_whole_rows"], "element")
        lines.append(f"{'':<13}WARNING: not a whole number of rows: {bad} (run `verify`)")
    top = max(c for _, _, c in dist["histogram"]) or 1
    for lo, hi, count in dist["histogram"]:
        bar = "#" * max(1 if count else 0, round(40 * count / top))
        lines.append(f"{'':<13}{lo if lo == hi else f'{lo}-{hi}':>15} | {bar} {count}")
    return "\n".join(lines)


def verify(node: Node, progress: Progress | None, max_errors: int) -> tuple[str, list[Any], int]:
    """Decode every (inner) chunk, edge chunks whole: the message, the first ``max_errors``
    failures as (object key, what is wrong), and how many failed."""
    kind, where = data_type_kind(node.meta.get("data_type")), node.where
    if kind == "legacy":
        raise Refused(
            f"{where}: zarr cannot read the zarr-vlen-ndarray 0.1.x data type; run `migrate` first."
        )
    padded, typed, failed = node.grid.padded(), kind == "ndarray", []
    meta = node.meta if typed else docs.bytes_view(node.meta, where)
    inner, advance = inner_chunks(node.meta) if typed else None, steps(progress, len(node.objects))
    array = open_array(node.loc, meta, padded.shape)

    def problems(key: str, region: Region) -> list[str]:
        try:
            _read(array, region, key, typed)
        except ValueError as exc:
            return [str(exc)]
        return []

    for obj in node.objects:
        found = problems(obj.key, padded.region(obj.index))
        if found and inner is not None:  # a shard: name every bad inner chunk in it
            fine, per = Grid(padded.shape, inner), map(operator.floordiv, padded.chunks, inner)
            ranges = (range(i * k, (i + 1) * k) for i, k in zip(obj.index, per, strict=True))
            parts = map(fine.region, itertools.product(*ranges))
            found = list(dict.fromkeys(t for p in parts for t in problems(obj.key, p))) or found
        failed += [(obj.key, text) for text in found]
        advance(1)
    n, nchunks = len(node.objects), math.prod(node.grid.grid_shape)
    missing = nchunks - n
    verbs = ("has no object", "reads") if missing == 1 else ("have no objects", "read")
    absent = f"; {missing} of the grid's {counted(nchunks, 'chunk')} {verbs[0]} and "
    absent = (absent + f"{verbs[1]} as the fill value: unwritten, or deleted?") * bool(missing)
    if not failed:
        decoded = f"all {n} chunk objects decode" if n else "no chunk object is stored"
        return f"{where}: {'the one chunk object decodes' if n == 1 else decoded}{absent}", [], 0
    bad = len({key for key, _ in failed})
    verb = "does" if bad == 1 else "do"
    lines = [f"{where}: {bad} of {counted(n, 'chunk object')} {verb} not decode{absent}:"]
    lines += [f"  {text}" for _, text in failed[:max_errors]]
    more = len(failed) - max_errors
    lines += [f"  ... and {more} more (--max-errors N lists more)"] if more > 0 else []
    return "\n".join(lines), failed[:max_errors], len(failed)


def check_chunks(
    loc: Location, new: dict, objects: list[Any], sample: int | None, progress: Progress | None
) -> tuple[str | None, str]:
    """The first problem of the chunk objects (all, or ``sample`` spread evenly) under the planned
    document ``new``, and what was checked: each is read as raw bytes (whole rows in every
    element, edge chunks with their padding), then decoded with ``new``."""
    picked = objects
    if sample is not None and sample < len(objects):
        at = np.unique(np.linspace(0, len(objects) - 1, sample).round().astype(np.int64))
        picked = [objects[int(i)] for i in at]
    checked = f"checked {len(picked)} of {counted(len(objects), 'chunk object')}"
    checked += " (--verify-all checks every one)" * (len(picked) < len(objects))
    dt, grid = docs.ndarray_type(str(loc), new["data_type"]), docs.grid_of(new, str(loc))
    padded, advance, unit = grid.padded(), steps(progress, len(picked)), dt.fixed_nbytes
    raw = open_array(loc, docs.bytes_view(new, str(loc)), padded.shape)
    typed = open_array(loc, new, padded.shape)
    for obj in picked:
        region = padded.region(obj.index)
        try:
            cells = _read(raw, region, obj.key, False)
        except ValueError as exc:
            return f"chunk {obj.key}: zarr cannot read it as {label(dt)}: {exc}", checked
        lengths = np.array(list(map(len, cells)), dtype=np.int64)
        if (bad := np.flatnonzero(lengths % unit)).size:
            local = np.unravel_index(int(bad[0]), tuple(r.stop - r.start for r in region))
            coords = tuple(r.start + int(i) for r, i in zip(region, local, strict=True))
            padding = any(c >= n for c, n in zip(coords, grid.shape, strict=True)) * (
                f" (beyond the array's shape {grid.shape}, in the edge chunk's padding, which zarr "
                "decodes with the chunk: a fill value its writer left there)"
            )
            cell, fill = cells[bad[0]], base64.b64decode(new["fill_value"])  # canonical: checked
            stripped = (fill != cell and fill.rstrip(b"\x00") == cell) * (
                f" (the fill value {new['fill_value']!r} with its trailing NUL bytes stripped, as "
                "zarr-python writes fill elements of bytes arrays: rewrite them whole first)"
            )
            return (
                f"chunk {obj.key}: the element at {coords}{padding} is {lengths[bad[0]]} bytes, "
                f"not a whole number of {unit}-byte rows of {label(dt)}{stripped}; check --dtype "
                "and --shape."
            ), checked
        try:
            _read(typed, region, obj.key, True)
        except ValueError as exc:
            return f"chunk {obj.key}: {exc}", checked
        advance(1)
    return None, checked
