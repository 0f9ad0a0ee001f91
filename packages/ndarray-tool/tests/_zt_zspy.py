"""A HyperSpy-like zspy hierarchy (Zarr v2) written with numcodecs directly, as zarr 2 lays it
out: for the tool's whole-hierarchy tests, which run without HyperSpy (``nox -s hyperspy`` runs
the real one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
from _zt_helpers import write_v2_ragged

TITLE = "scan"
SIGNAL = f"Experiments/{TITLE}"


def dumps_v2(doc: Any) -> str:
    """A v2 document as zarr 2 writes it."""
    return json.dumps(doc, indent=4, sort_keys=True, ensure_ascii=True, separators=(",", ": "))


def _group(path: Path, attrs: dict[str, Any] | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / ".zgroup").write_text(dumps_v2({"zarr_format": 2}))
    if attrs is not None:
        (path / ".zattrs").write_text(dumps_v2(attrs))


def _plain(path: Path, values: np.ndarray, compressor: Any, filters: Any = None) -> None:
    path.mkdir(parents=True)
    doc = {
        "zarr_format": 2,
        "shape": list(values.shape),
        "chunks": list(values.shape) or [1],
        "dtype": values.dtype.str if values.dtype != object else "|O",
        "compressor": compressor.get_config(),
        "fill_value": 0,
        "order": "C",
        "filters": None if filters is None else [f.get_config() for f in filters],
        "dimension_separator": "/",
    }
    (path / ".zarray").write_text(dumps_v2(doc))
    data = values if filters is None else filters[0].encode(values.reshape(-1))
    key = "/".join("0" for _ in values.shape) or "0"
    (path / key).write_bytes(compressor.encode(np.ascontiguousarray(data)))


def write_zspy(
    root: Path,
    cells: np.ndarray,
    *,
    chunks: tuple[int, ...] | None = None,
    pad: Any = None,
    shapes: list[Any] | None = None,
    consolidated: bool = True,
    sibling: str = "_ragged_shapes_data",
) -> None:
    """A zspy store at ``root`` holding the ragged signal ``cells`` (an object array over the
    navigation grid): data flattened plus ``_ragged_shapes_data``, axes, metadata with a list of
    strings (vlen-utf8) and a plain array; ``.zmetadata`` when ``consolidated``. ``pad`` is the
    element of edge-chunk padding (zarr 2 writes the fill, one item); ``shapes`` replaces the
    shape sibling's cells; ``sibling`` names it (``ragged_shapes`` in HyperSpy <= 1.7's files)."""
    blosc = numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE)
    dtype = next(c for c in cells.reshape(-1)).dtype
    nav = cells.shape
    chunks = chunks or nav
    _group(root, {"file_format": "ZSpy", "file_format_version": "3.3"})
    _group(root / "Experiments")
    _group(root / SIGNAL, {"package": "hyperspy", "package_version": "2.5.0"})
    _group(root / SIGNAL / "attributes", {"_lazy": False, "ragged": True})
    for axis, size in enumerate(nav):
        _group(root / SIGNAL / f"axis-{axis}", {"_type": "UniformDataAxis", "size": size})
    flat = [np.asarray(c).reshape(-1) for c in cells.reshape(-1)]
    given = shapes if shapes is not None else [np.array(c.shape, "<i8") for c in cells.reshape(-1)]
    common = {"shape": nav, "chunks": chunks, "compressor": blosc, "separator": "/"}
    write_v2_ragged(
        root / SIGNAL / "data", flat, filters=[numcodecs.VLenArray(dtype.str)], pad=pad, **common
    )
    write_v2_ragged(
        root / SIGNAL / sibling,
        given,
        filters=[numcodecs.VLenArray("<i8")],
        pad=np.zeros(1, "<i8") if pad is not None else None,
        **common,
    )
    _group(root / SIGNAL / "metadata" / "General", {"title": TITLE})
    _group(root / SIGNAL / "metadata")
    meta = root / SIGNAL / "original_metadata"
    _group(meta)
    names = np.array(["alpha", "beta"], dtype=object)
    _plain(meta / "_list_names", names, blosc, [numcodecs.VLenUTF8()])
    _plain(meta / "counts", np.arange(4, dtype="<u2"), blosc)
    if consolidated:
        docs = {
            str(p.relative_to(root)): json.loads(p.read_text())
            for p in sorted(root.rglob(".z*"))
            if p.name in (".zgroup", ".zarray", ".zattrs")
        }
        consolidated_doc = {"metadata": docs, "zarr_consolidated_format": 1}
        (root / ".zmetadata").write_text(dumps_v2(consolidated_doc))
