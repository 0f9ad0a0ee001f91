"""Builders of small real stores for the tool tests (written by zarr itself, or by numcodecs as
zarr-python 2 did), and the tool run in-process or as a subprocess. The README runner and the
other helpers every package shares are in ``_zt_support`` (a copy of tools/nox/test_support.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.core.dtype import VariableLengthBytes
from zarr.storage import ZipStore

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_tool.cli import main
from zarr_vlen_ndarray import VlenNDArrayCodec


def cells_f32x2(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` float32 (k, 2) cells, k in 0..4 (cell 1 is always empty)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        rows = 0 if i == 1 else int(rng.integers(0, 5))
        out.append(rng.standard_normal((rows, 2)).astype("<f4"))
    return out


def as_objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def write_bytes_array(
    store: Any, cells: list[bytes], *, name: str | None = None, **kwargs: Any
) -> zarr.Array:
    """A zarr ``variable_length_bytes`` + ``vlen-bytes`` array holding ``cells``."""
    kwargs.setdefault("chunks", (4,))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification")
        warnings.filterwarnings("ignore", message=".*not part in the Zarr format 3 spec")
        arr = zarr.create_array(
            store, name=name, shape=(len(cells),), dtype=VariableLengthBytes(), **kwargs
        )
        arr[:] = as_objects(cells)
    return arr


def write_ndarray_array(
    store: Any,
    cells: list[np.ndarray],
    dtype: NDArrayDType,
    *,
    name: str | None = None,
    **kwargs: Any,
) -> zarr.Array:
    """A zarr ``ndarray`` array holding ``cells`` (``vlen-ndarray`` unless ``serializer=``)."""
    kwargs.setdefault("chunks", (4,))
    kwargs.setdefault("serializer", VlenNDArrayCodec())
    arr = zarr.create_array(
        store,
        name=name,
        shape=(len(cells),),
        dtype=dtype,  # type: ignore[arg-type]
        **kwargs,
    )
    arr[:] = as_objects(cells)
    return arr


def zip_store(path: Path) -> ZipStore:
    return ZipStore(path, mode="w")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``root`` (or the file itself): content and mtime in nanoseconds."""
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    return {str(p): (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files}


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """Run the tool in-process; (exit status, stdout, stderr)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


CLI = (sys.executable, "-m", "zarr_ndarray_tool")
# numcodecs >= 0.16.4 warns at import when it finds crc32c rather than google_crc32c (zarr 3.1.0
# installs crc32c), past any -W filter: the host's notice, not the tool's output.
_HOST_NOTICE = re.compile(r"^\S*numcodecs\S*: DeprecationWarning: crc32c usage .*\n.*\n", re.M)


def tool_output(text: str) -> str:
    """``text`` (a CLI subprocess's stderr or terminal) without the host library's notices."""
    return _HOST_NOTICE.sub("", text)


def run_cli(*argv: str, **popen: Any) -> subprocess.CompletedProcess[str]:
    """Run ``python -m zarr_ndarray_tool ARGV`` in a subprocess (text, output captured)."""
    popen.setdefault("capture_output", True)
    done = subprocess.run([*CLI, *argv], text=True, check=False, timeout=120, **popen)
    if isinstance(done.stderr, str):
        done.stderr = tool_output(done.stderr)
    return done


def write_v2_ragged(
    path: Path,
    cells: list[Any],
    *,
    shape: tuple[int, ...] | None = None,
    chunks: tuple[int, ...] = (4,),
    filters: list[Any] | None = None,
    compressor: Any = None,
    separator: str = ".",
    order: str = "C",
    attributes: dict[str, Any] | None = None,
    pad: Any = None,
) -> None:
    """A Zarr v2 object array as zarr-python 2 lays it out, written with numcodecs directly.

    ``filters`` default to ``[VLenArray("<f4")]``; the first filter frames each chunk's cells
    (C order, edge chunks padded with ``pad``, by default empty elements), the compressor
    compresses the frames.
    """
    import itertools
    import math

    import numcodecs

    filters = filters if filters is not None else [numcodecs.VLenArray("<f4")]
    shape = shape if shape is not None else (len(cells),)
    grid = np.empty(shape, dtype=object)
    for i, cell in enumerate(cells):
        grid[np.unravel_index(i, shape)] = cell
    path.mkdir(parents=True)
    meta = {
        "zarr_format": 2,
        "shape": list(shape),
        "chunks": list(chunks),
        "dtype": "|O",
        "compressor": None if compressor is None else compressor.get_config(),
        "fill_value": None,
        "order": order,
        "filters": [f.get_config() for f in filters],
        "dimension_separator": separator,
    }
    (path / ".zarray").write_text(json.dumps(meta, indent=4, sort_keys=True))
    if attributes is not None:
        (path / ".zattrs").write_text(json.dumps(attributes, indent=4, sort_keys=True))
    counts = [math.ceil(s / c) for s, c in zip(shape, chunks, strict=True)]
    empty = b"" if isinstance(filters[0], numcodecs.VLenBytes) else np.zeros(0, "<f4")
    empty = empty if pad is None else pad
    for index in itertools.product(*(range(n) for n in counts)):
        block = np.empty(chunks, dtype=object)
        for local in itertools.product(*(range(c) for c in chunks)):
            at = tuple(i * c + j for i, c, j in zip(index, chunks, local, strict=True))
            inside = all(a < s for a, s in zip(at, shape, strict=True))
            block[local] = grid[at] if inside else empty
        data = filters[0].encode(block.reshape(-1, order="C" if order == "C" else "F"))
        raw = bytes(data) if compressor is None else compressor.encode(data)
        (path / separator.join(map(str, index))).parent.mkdir(parents=True, exist_ok=True)
        (path / separator.join(map(str, index))).write_bytes(raw)
