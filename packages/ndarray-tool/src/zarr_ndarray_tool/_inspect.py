"""Reading every stored chunk object: ``info`` (what an array is, and the distribution of its
cells' extents), ``verify`` (every bad chunk, with its rule) and the checks an ``upgrade`` makes
before it writes. ``ndarray`` chunks are decoded by the columnar engine with every rule of their
codec, no cell values copied; raw-bytes chunks are read through zarr as ``vlen-bytes``.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import iter_columnar
from zarr_ndarray_tool import _documents as docs
from zarr_ndarray_tool._documents import Grid, data_type_kind, inner_chunks, with_shape
from zarr_ndarray_tool._stores import ChunkObject, Location, Node, key_encoding, open_array
from zarr_ndarray_tool.errors import Progress, Refused, counted, environment_failure, steps
from zarr_vlen_ndarray.framing import BACKEND

_QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75, "p99": 0.99}


def _failure(exc: Exception) -> str:
    """What is wrong with a chunk (``exc`` names it); a failure of the store or the machine
    rather than of the chunk (a connection, a disk) is raised instead."""
    failure = environment_failure(exc)
    if failure is not None:
        raise failure
    return str(exc)


def _read(array: Any, region: tuple[slice, ...], key: str, typed: bool) -> Any:
    """``typed``: the shape table of the cells of ``region`` of an ``ndarray`` array (every
    chunk decoded with its codec's rules, no value copied); else the cells of an array read as
    raw bytes, flat. A chunk that does not decode raises a ValueError naming it."""
    if typed:
        tables = [col.shapes for _, col in iter_columnar(array, region, values=False)]
        return np.concatenate(tables) if tables else np.zeros((0, 1), np.int64)
    try:
        return list(np.asarray(array[region], dtype=object).reshape(-1))
    except Exception as exc:  # a compressor's or checksum's failure, whatever its type
        if environment_failure(exc) is not None:
            raise
        raise ValueError(
            f"the stored chunk {key!r} does not decode ({type(exc).__name__}: {exc}): it is "
            "corrupt or was written with other codecs"
        ) from exc


def info(node: Node, progress: Progress | None = None) -> dict[str, Any]:
    """The ``info`` report (what ``info --json`` prints), reading every written chunk; chunks
    that cannot be read are counted and named, the statistics made of the others."""
    meta, kind = node.meta, data_type_kind(node.meta.get("data_type"))
    etype = docs.element_type(meta, node.where) if kind in ("ndarray", "legacy") else None
    inner = inner_chunks(meta)
    report: dict[str, Any] = {
        "path": node.where,
        "data_type": meta.get("data_type"),
        "kind": kind,
        "element": etype and {"dtype": etype.name, "shape": etype.shape, "unit_bytes": etype.unit},
        "shape": list(node.grid.shape),
        "chunk_shape": list(node.grid.chunks),
        "inner_chunk_shape": inner and list(inner),
        "codecs": docs.codec_chain(meta.get("codecs")),
        "fill_value": meta.get("fill_value"),
        "dimension_names": meta.get("dimension_names"),
        "cells": int(np.prod(node.grid.shape)),
        "chunks": node.grid.nchunks,
        "written_chunks": len(node.objects),
        "stored_bytes": sum(o.nbytes for o in node.objects),
    }
    try:
        view = meta if kind == "ndarray" else docs.bytes_view(meta, node.where)
    except Refused:
        return report  # not an array whose chunks the tool reads: metadata only
    parts, bad, advance = [], [], steps(progress, len(node.objects))
    with open_array(node.loc, view) as array:
        for obj in node.objects:
            try:
                found = _read(array, node.grid.region(obj.index), obj.key, kind == "ndarray")
                parts.append(found if kind == "ndarray" else np.fromiter(map(len, found), np.int64))
            except ValueError as exc:  # every codec and stored-chunk error is one
                bad.append(_failure(exc))
            advance(1)
    report |= {"unreadable_chunks": len(bad), "unreadable": bad[:5]}
    if kind == "ndarray":  # statistics from the shape table, cells beyond the shape left out
        assert etype is not None
        table = np.concatenate(parts) if parts else np.zeros((0, len(etype.shape)), np.int64)
        items, rows = np.prod(table, axis=1, dtype=np.int64), etype.pattern.is_leading_variable
        # the vlen-ndarray framing kernel in use (zarr_vlen_ndarray.framing.BACKEND)
        report |= (
            {"framing_backend": BACKEND} if '"vlen-ndarray"' in json.dumps(meta["codecs"]) else {}
        )
        report |= {
            "cells_in_written_chunks": int(items.size),
            "payload_bytes": int(items.sum()) * etype.itemsize,
            "extent_unit": "rows" if rows else "items",
            "not_whole_rows": 0,
            "extent": _distribution(table[:, 0] if rows else items),
        }
        if not rows:
            report["extents"] = {
                str(a): _distribution(table[:, a]) for a in etype.pattern.variable_axes
            }
        return report
    lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    unit = etype.unit if etype is not None else 1  # a legacy 0.1.x array: rows of its element
    return report | {
        "cells_in_written_chunks": int(lengths.size),
        "payload_bytes": int(lengths.sum()),
        "encoded_bytes": int(lengths.sum()) + 4 * (len(parts) + lengths.size),
        "extent_unit": "rows" if etype is not None else "bytes",
        "not_whole_rows": int(np.count_nonzero(lengths % unit)),
        "extent": _distribution(lengths // unit),
    }


def _distribution(extents: npt.NDArray[np.int64]) -> dict[str, Any] | None:
    if not extents.size:
        return None
    out: dict[str, Any] = {"min": int(np.min(extents))}
    for name, q in _QUANTILES.items():
        out[name] = int(np.quantile(extents, q, method="inverted_cdf"))
    out |= {"max": int(np.max(extents)), "mean": float(extents.mean())}
    out["empty"] = int(np.count_nonzero(extents == 0))
    # at most 10 integer bins of one width (equal widths keep the counts comparable)
    width = -(-(out["max"] - out["min"] + 1) // 10)
    edges = np.arange(out["min"], out["max"] + width + 1, width, dtype=np.int64)
    counts, _ = np.histogram(extents, bins=edges)
    out["histogram"] = [[int(a), int(b) - 1, int(c)] for a, b, c in zip(edges, edges[1:], counts)]
    return out


def _size(n: int) -> str:
    value = float(n)
    for suffix in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{n} B" if suffix == "B" else f"{value:.1f} {suffix}"
        value /= 1024
    return f"{value:.1f} GiB"


def render(report: dict[str, Any]) -> str:
    """The report as aligned text lines."""
    element, kind = report["element"], report["kind"]
    dtype_text = json.dumps(report["data_type"])
    if element is not None:
        dtype_text = f"ndarray {element['dtype']} {json.dumps(element['shape'])} (unit {element['unit_bytes']} B)"
        dtype_text += " - zarr-vlen-ndarray 0.1.x metadata: run `migrate`" * (kind == "legacy")
    dtype_text += " (raw bytes: `upgrade --dtype D --shape S` types it)" * (kind == "bytes")
    grid = f"{report['shape']} in chunks of {report['chunk_shape']}"
    if report["inner_chunk_shape"] is not None:
        grid += f" (shards; inner chunks {report['inner_chunk_shape']})"
    rows = [("path", report["path"]), ("data type", dtype_text), ("shape", grid)]
    if report["dimension_names"] is not None:
        rows.append(("dimensions", json.dumps(report["dimension_names"])))
    rows += [("codecs", report["codecs"]), ("fill value", json.dumps(report["fill_value"]))]
    written = f"{report['written_chunks']} of {counted(report['chunks'], 'chunk object')} written"
    if "cells_in_written_chunks" in report:
        written += f", holding {counted(report['cells_in_written_chunks'], 'cell')}"
    rows.append(("cells", f"{report['cells']} ({written})"))
    if report.get("unreadable_chunks"):
        n = counted(report["unreadable_chunks"], "chunk object")
        rows.append(
            ("unreadable", f"{n} could not be read, left out of the figures (run `verify`)")
        )
    stored = f"{_size(report['stored_bytes'])} stored"
    if "payload_bytes" in report:
        stored += f"; element payload {_size(report['payload_bytes'])}"
        if report["payload_bytes"]:
            stored += f" (stored/payload {report['stored_bytes'] / report['payload_bytes']:.3f})"
    rows.append(("bytes", stored))
    if "framing_backend" in report:
        rows.append(("framing", f"{report['framing_backend']} (zarr_vlen_ndarray.framing.BACKEND)"))
    lines = [f"{k:<11}: {v}" for k, v in rows]
    if (dist := report.get("extent")) is None:
        return "\n".join(lines)

    def stats(d: dict[str, Any]) -> str:
        return (
            ", ".join(f"{k} {d[k]}" for k in ("min", *_QUANTILES, "max"))
            + f", mean {d['mean']:.2f}"
        )

    lines.append(f"{'extent':<11}: {report['extent_unit']} per element: {stats(dist)}")
    lines.append(f"{'':<11}  empty elements: {dist['empty']}")
    for axis, axis_dist in (report.get("extents") or {}).items():
        if axis_dist is not None:
            lines.append(f"{'':<11}  axis {axis} (variable): {stats(axis_dist)}")
    if report["not_whole_rows"]:
        n = counted(report["not_whole_rows"], "element")
        lines.append(f"{'':<11}  WARNING: not a whole number of rows: {n} (run `verify`)")
    top = max(c for _, _, c in dist["histogram"]) or 1
    for lo, hi, count in dist["histogram"]:
        label = f"{lo}" if lo == hi else f"{lo}-{hi}"
        lines.append(
            f"{'':<11}  {label:>15} | {'#' * max(1 if count else 0, round(40 * count / top))} {count}"
        )
    return "\n".join(lines)


def verify(
    node: Node, progress: Progress | None, max_errors: int
) -> tuple[str, list[tuple[str, str]], int]:
    """Decode every (inner) chunk of every stored object, edge chunks whole: the message, the
    first ``max_errors`` failures as (object key, what is wrong), and how many failed in all."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind == "legacy":
        raise Refused(
            f"{node.where}: the data type is zarr-vlen-ndarray 0.1.x metadata, which no longer "
            "resolves; run `migrate` first."
        )
    if kind not in ("ndarray", "bytes"):
        raise Refused(
            f"{node.where}: verify decodes ndarray and raw-bytes arrays; this one's data type "
            f"is {node.meta.get('data_type')!r}."
        )
    padded, typed = node.grid.padded(), kind == "ndarray"
    meta = node.meta if typed else docs.bytes_view(node.meta, node.where)
    inner = inner_chunks(node.meta) if typed else None
    failed: list[tuple[str, str]] = []
    advance = steps(progress, len(node.objects))
    with open_array(node.loc, with_shape(meta, padded.shape)) as array:

        def problems(key: str, region: tuple[slice, ...]) -> list[str]:
            try:
                _read(array, region, key, typed)
            except ValueError as exc:  # every codec and stored-chunk error is one
                return [_failure(exc)]
            return []

        for obj in node.objects:
            region = padded.region(obj.index)
            found = problems(obj.key, region)
            if found and inner is not None:  # a shard: name every bad inner chunk in it
                shard = Grid(tuple(r.stop - r.start for r in region), inner)
                each = [
                    problems(
                        obj.key,
                        tuple(
                            slice(r.start + p.start, r.start + p.stop) for r, p in zip(region, at)
                        ),
                    )
                    for at in map(shard.region, shard.indices())
                ]
                found = list(dict.fromkeys(itertools.chain(*each))) or found
            failed += [(obj.key, text) for text in found]
            advance(1)
    n = len(node.objects)
    if not failed:
        decoded = f"all {n} chunk objects decode" if n else "no chunk object is stored"
        return (
            f"{node.where}: {'the one chunk object decodes' if n == 1 else decoded}{_absent(node)}",
            [],
            0,
        )
    bad = len({key for key, _ in failed})
    lines = [
        f"{node.where}: {bad} of {counted(n, 'chunk object')} {'does' if bad == 1 else 'do'} not decode{_absent(node)}:"
    ]
    lines += [f"  {text}" for _, text in failed[:max_errors]]
    if len(failed) > max_errors:
        lines.append(f"  ... and {len(failed) - max_errors} more (--max-errors N lists more)")
    return "\n".join(lines), failed[:max_errors], len(failed)


def _absent(node: Node, named: int = 5) -> str:
    """How many chunks of the grid have no object (they read as the fill value), naming the
    first few: an unwritten chunk is legal, a deleted one is often an accident."""
    stored = {obj.index for obj in node.objects}
    missing = node.grid.nchunks - len(stored)
    if not missing:
        return ""
    first = itertools.islice((i for i in node.grid.indices() if i not in stored), named)
    encoding = key_encoding(node.meta, node.where)
    keys = ", ".join(map(encoding.encode_chunk_key, first)) + ", ..." * (missing > named)
    verbs = ("has no object", "reads") if missing == 1 else ("have no objects", "read")
    return (
        f"; {missing} of the grid's {counted(node.grid.nchunks, 'chunk')} {verbs[0]} "
        f"({keys}) and {verbs[1]} as the fill value: unwritten, or deleted?"
    )


def check_chunks(loc: Location, new: dict[str, Any], grid: Grid, objects: Iterable[ChunkObject],
                 advance: Callable[[int], None], compressor: Any = False) -> str | None:  # fmt: skip
    """The first of ``objects`` whose chunk does not fit ``new`` (the planned document), or
    None. Each is read as raw bytes: every element whole rows of the element type, edge chunks
    whole (their padding included); then decoded with ``new``, every rule of its codec. The
    chunks of a Zarr v2 array (``compressor``: its v2 compressor, or None) are also decoded as
    zarr 2 reads them, which the v3 reading must match."""
    etype = docs.element_type(new)
    assert etype is not None
    padded = grid.padded()
    raw_meta = with_shape(docs.bytes_view(new, str(loc)), padded.shape)
    with open_array(loc, raw_meta) as raw, open_array(loc, with_shape(new, padded.shape)) as typed:
        for obj in objects:
            region = padded.region(obj.index)
            try:
                cells = _read(raw, region, obj.key, False)
            except ValueError as exc:
                return f"chunk {obj.key}: zarr cannot read it as {etype}: {exc}"
            if compressor is not False:
                import numcodecs

                try:
                    data = loc.read(obj.key) or b""
                    framed = (
                        numcodecs.get_codec(dict(compressor)).decode(data) if compressor else data
                    )
                    theirs = list(numcodecs.VLenBytes().decode(framed))
                except Exception as exc:  # any failure to decode marks the chunk incompatible
                    return f"chunk {obj.key}: {type(exc).__name__}: {exc}"
                if cells != theirs:
                    return f"chunk {obj.key}: its elements read differently through zarr"
            lengths = np.fromiter(map(len, cells), np.int64, len(cells))
            if (bad := np.flatnonzero(lengths % etype.unit)).size:
                at = int(bad[0])
                local = np.unravel_index(at, tuple(r.stop - r.start for r in region))
                coords = tuple(r.start + int(i) for r, i in zip(region, local))
                place = str(coords)
                if any(c >= n for c, n in zip(coords, grid.shape)):
                    place += (
                        f" (beyond the array's shape {grid.shape}, in the edge chunk's padding, "
                        "which zarr decodes with the chunk: a fill value its writer left there)"
                    )
                return (
                    f"chunk {obj.key}: the element at {place} is {int(lengths[at])} bytes, not a "
                    f"whole number of {etype.unit}-byte rows of {etype}{_nul_hint(new, cells[at])}; "
                    "check --dtype and --shape."
                )
            try:
                _read(typed, region, obj.key, True)
            except ValueError as exc:
                return f"chunk {obj.key}: {_failure(exc)}"
            advance(1)
    return None


def _nul_hint(meta: dict[str, Any], cell: bytes) -> str:
    """zarr-python strips trailing NUL bytes from a bytes fill when it writes fill cells."""
    try:
        fill = base64.b64decode(str(meta.get("fill_value")), validate=True)
    except (binascii.Error, ValueError):
        return ""
    if fill == cell or fill.rstrip(b"\x00") != cell:
        return ""
    return (
        f" (it is the fill value {meta.get('fill_value')!r} with its trailing NUL bytes "
        "stripped, as zarr-python stores fill elements of variable_length_bytes arrays; "
        "such chunks must be rewritten with whole elements before an upgrade)"
    )
