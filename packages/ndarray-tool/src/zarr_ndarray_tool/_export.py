"""``export``: an ``ndarray`` array's cells as ``nd_arrow.array`` rows, one per cell of a
selection, with an ``int64`` coordinate column per array dimension, to a Parquet file (a row
group per chunk or shard) or an Arrow IPC file, compressed as a Parquet writer is. nd-arrow's
zarr bridge reads slabs of whole rows of inner chunks, so the progress moves within a shard.
Nothing appears at the output unless the whole export succeeded.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from zarr_ndarray_tool._documents import data_type_kind, element_type, inner_chunks
from zarr_ndarray_tool._stores import Node, atomic_replace, open_array
from zarr_ndarray_tool.errors import Progress, Refused, counted, environment_failure, steps

INSTALL_HINT = "pip install 'zarr-ndarray-tool[export]'"
#: About how many bytes of cell values one read takes (whole rows of inner chunks, at least one).
SLAB_BYTES = 4 << 20
COMPRESSIONS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")
IPC_SUFFIXES = (".arrow", ".feather", ".ipc")
Box = tuple[tuple[int, ...], tuple[int, ...]]  # starts, stops


def resolve(select: Any, shape: tuple[int, ...]) -> Box:
    """The box of cells ``select`` names (ints, slices of step 1, ``...``); ValueError if none."""
    parts = select if isinstance(select, tuple) else (select,)
    if ... in parts:
        at = parts.index(...)
        parts = parts[:at] + (slice(None),) * (len(shape) - len(parts) + 1) + parts[at + 1 :]
    if len(parts) > len(shape) or ... in parts:
        raise ValueError(f"--select: the array has {len(shape)} dimensions, got {len(parts)}")
    box: tuple[list[int], list[int]] = ([], [])
    for axis, (part, n) in enumerate(itertools.zip_longest(parts, shape, fillvalue=slice(None))):
        if isinstance(part, slice):
            start, stop, step = part.indices(n)  # type: ignore[arg-type]
            if step != 1:
                raise ValueError(f"--select: only contiguous selections (step 1), got {part}")
        elif not -n <= (start := operator.index(part)) < n:  # type: ignore[operator]
            raise ValueError(
                f"--select: index {start} is out of bounds for axis {axis} of size {n}"
            )
        else:
            start, stop = start % n, start % n + 1  # type: ignore[operator]
        box[0].append(start)
        box[1].append(max(start, stop))
    return tuple(box[0]), tuple(box[1])


def _codec(out: Path, overwrite: bool, compression: str, level: int | None) -> Any:
    """The Arrow codec of ``compression`` (None for ``none``); refuses, before any work, an
    output that exists (unless ``overwrite``) or cannot be made, or a codec it cannot have."""
    if out.is_dir():
        raise Refused(f"{out} is a directory; --parquet takes the path of a file to write.")
    if out.exists() and not overwrite:
        raise Refused(f"{out} exists; pass --overwrite to replace it.")
    if not out.parent.is_dir():
        raise Refused(f"cannot write {out}: the directory {out.parent} does not exist; create it.")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise Refused(f"cannot write {out}: the directory {out.parent} is not writable.")
    try:
        import pyarrow as pa

        import nd_arrow.zarr_bridge  # noqa: F401
    except ImportError as exc:
        raise Refused(
            f"export writes through nd-arrow, which is not installed ({exc}); {INSTALL_HINT}."
        ) from exc
    if compression not in COMPRESSIONS:
        raise Refused(f"--compression {compression!r}: choose one of {', '.join(COMPRESSIONS)}.")
    if out.suffix.lower() in IPC_SUFFIXES and compression not in ("zstd", "lz4", "none"):
        raise Refused(
            f"{out}: an Arrow IPC file ({', '.join(IPC_SUFFIXES)}) is compressed with "
            f"zstd, lz4 or none, not {compression}; pass --compression zstd, or write a "
            ".parquet file."
        )
    try:
        if compression == "none" and level is not None:
            raise ValueError("a level needs a compression")
        return None if compression == "none" else pa.Codec(compression, level)
    except (ValueError, OSError, pa.ArrowException) as exc:
        codec, levels = pa.Codec, "no level"
        if compression != "none" and codec.supports_compression_level(compression):
            levels = f"levels {codec.minimum_compression_level(compression)} to "
            levels += str(codec.maximum_compression_level(compression))
        what = f"--compression {compression} --compression-level {level}: {exc}"
        raise Refused(f"{what}; {compression} takes {levels}.") from exc


def export(
    node: Node,
    out: Path,
    column: str | None,
    dims: list[str] | None,
    select: Any,
    compression: str,
    level: int | None,
    overwrite: bool,
    progress: Progress | None,
) -> int:
    """Write the cells ``select`` of ``node`` to the local file ``out``; the rows written."""
    if (kind := data_type_kind(node.meta.get("data_type"))) != "ndarray":
        need = {"bytes": "; run `upgrade` first", "legacy": "; run `migrate` first"}.get(kind, "")
        found = node.meta.get("data_type")
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type {found!r}{need}."
        )
    etype, shape = element_type(node.meta, node.where), list(node.grid.shape)
    rank = len(etype.shape)  # type: ignore[union-attr]
    if dims is not None and (len(dims) != rank or len(set(dims)) != rank):
        problem = "a name twice" if len(dims) == rank else counted(len(dims), "name")
        example = ",".join(["n", "xy", "z", "t"][:rank]) if rank <= 4 else "d0,d1,..."
        raise Refused(
            f"--dims {','.join(dims)} gives {problem}, but every cell of {node.where} "
            f"has {rank} axes ({etype}); name each axis once, comma-separated (e.g. "
            f"--dims {example})."
        )
    try:
        box = resolve(select, node.grid.shape)
    except (IndexError, TypeError, ValueError) as exc:
        raise Refused(f"{node.where} (shape {shape}): {exc}.") from exc
    if not (total := math.prod(b - a for a, b in zip(*box, strict=True))):
        text = ", ".join(f"{a}:{b}" for a, b in zip(*box, strict=True))
        raise Refused(
            f"{node.where} has no cells to export there (shape {shape}, selection [{text}])."
        )
    codec = _codec(out, overwrite, compression, level)
    name, coords = column or node.loc.name or "cells", node.meta.get("dimension_names")
    if not isinstance(coords, list) or [type(c) for c in coords] != [str] * len(shape):
        coords = ["index"] if len(shape) == 1 else [f"index_{i}" for i in range(len(shape))]
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nd_arrow.errors import NdArrowError
    from nd_arrow.zarr_bridge import from_zarr

    advance, per_cell = steps(progress, total), [0.0]  # bytes per cell of the slabs read so far
    step = (inner_chunks(node.meta) or node.grid.chunks or (1,))[0]

    def table(array: Any, part: Box) -> Any:
        try:
            cells = from_zarr(array, dims, selection=tuple(map(slice, *part)))
        except NdArrowError as exc:
            raise Refused(f"{node.where}: nd-arrow cannot hold these cells: {exc}.") from exc
        except ValueError as exc:  # every codec and stored-chunk error is one
            if environment_failure(exc) is not None:
                raise
            raise Refused(f"{node.where}: {exc}; run `verify` to check every chunk.") from exc
        per_cell[0] = cells.nbytes / max(len(cells), 1)
        advance(len(cells))
        axes = (np.arange(a, b, dtype=np.int64) for a, b in zip(*part, strict=True))
        grids = np.meshgrid(*axes, indexing="ij")
        return pa.table(
            {**{c: g.reshape(-1) for c, g in zip(coords, grids, strict=True)}, name: cells}
        )

    def slabs(starts: tuple[int, ...], stops: tuple[int, ...]) -> Iterator[Box]:
        """A chunk's part cut along its first axis at inner-chunk rows, about SLAB_BYTES each."""
        if not starts:  # a 0-d array's one cell
            yield starts, stops
        row, a = math.prod(b - a for a, b in zip(starts[1:], stops[1:], strict=True)), starts[:1]
        while a and a[0] < stops[0]:
            rows = int(SLAB_BYTES / per_cell[0] // max(row * step, 1)) if per_cell[0] else 1
            b = min(stops[0], (a[0] // step + max(1, rows)) * step)
            yield (a[0], *starts[1:]), (b, *stops[1:])
            a = (b,)

    def write(fh: BinaryIO) -> int:
        writer, rows, grid = None, 0, node.grid
        ranges = [range(a // c, -(-b // c)) for a, b, c in zip(*box, grid.chunks, strict=True)]
        try:
            with open_array(node.loc, node.meta) as array:
                for index in itertools.product(*ranges):  # a row group per chunk, in C order
                    bounds = list(zip(grid.region(index), *box, strict=True))
                    starts = tuple(max(r.start, a) for r, a, _ in bounds)
                    stops = tuple(min(r.stop, b) for r, _, b in bounds)
                    data = pa.concat_tables([table(array, p) for p in slabs(starts, stops)])
                    if writer is None and out.suffix.lower() in IPC_SUFFIXES:
                        options = pa.ipc.IpcWriteOptions(compression=codec)
                        writer = pa.ipc.new_file(fh, data.schema, options=options)
                    elif writer is None:  # list items keep the name "item", as nd-arrow writes them
                        options = {"compression": compression, "compression_level": level}
                        writer = pq.ParquetWriter(
                            fh, data.schema, **options, use_compliant_nested_type=False
                        )
                    writer.write_table(data)
                    rows += data.num_rows
        finally:
            if writer is not None:
                writer.close()
        return rows

    return atomic_replace(out, write)
