"""``export``: an ``ndarray`` array's cells as ``nd_arrow.array`` rows, one per cell of a
selection, with an ``int64`` coordinate column per array dimension, to a Parquet file (one row
group per chunk or shard) or an Arrow IPC file (``.arrow``, ``.feather``, ``.ipc``), compressed
as a Parquet writer is. Cells are read by nd-arrow's zarr bridge in slabs of whole rows of
inner chunks, so the progress moves within a shard. Nothing appears at the output unless the
whole export succeeded.
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
    """The box of cells ``select`` names (ints, slices of step 1 and ``...``, as numpy's basic
    indexing reads them); ValueError saying why not."""
    parts = select if isinstance(select, tuple) else (select,)
    if parts.count(...) > 1:
        raise ValueError("--select: an index can only have a single ellipsis ('...')")
    if ... in parts:
        i = parts.index(...)
        parts = parts[:i] + (slice(None),) * (len(shape) - len(parts) + 1) + parts[i + 1 :]
    if len(parts) > len(shape):
        raise ValueError(
            f"--select: the array has {len(shape)} dimensions, got a selection of {len(parts)}"
        )
    starts, stops = [], []
    for axis, (part, n) in enumerate(
        zip(parts + (slice(None),) * (len(shape) - len(parts)), shape)
    ):
        if isinstance(part, slice):
            a, b, step = part.indices(n)
            if step != 1:
                raise ValueError(f"--select: only contiguous selections (step 1), got {part}")
            starts.append(a), stops.append(max(a, b))
            continue
        i = operator.index(part)
        if not -n <= i < n:
            raise ValueError(f"--select: index {i} is out of bounds for axis {axis} of size {n}")
        starts.append(i % n), stops.append(i % n + 1)
    return tuple(starts), tuple(stops)


def _parts(node: Node, box: Box) -> Iterator[Box]:
    """The part of ``box`` in every chunk (or shard) it overlaps, in C order of the grid."""
    chunks = node.grid.chunks
    ranges = [range(a // c, -(-b // c)) for a, b, c in zip(*box, chunks)]
    for index in itertools.product(*ranges):
        region = node.grid.region(index)
        yield (
            tuple(max(r.start, a) for r, a in zip(region, box[0])),
            tuple(min(r.stop, b) for r, b in zip(region, box[1])),
        )


def export(
    node: Node,
    out: Path,
    *,
    column: str | None = None,
    dims: list[str] | None = None,
    select: Any = ...,
    overwrite: bool = False,
    compression: str = "zstd",
    compression_level: int | None = None,
    progress: Progress | None = None,
) -> int:
    """Write the cells ``select`` of ``node`` to the local file ``out``; the rows written."""
    kind = data_type_kind(node.meta.get("data_type"))
    if kind != "ndarray":
        need = {"bytes": "upgrade", "legacy": "migrate"}.get(kind)
        raise Refused(
            f"{node.where}: export expects an ndarray array, found data_type "
            f"{node.meta.get('data_type')!r}" + (f"; run `{need}` first." if need else ".")
        )
    etype = element_type(node.meta, node.where)
    assert etype is not None
    rank = len(etype.shape)
    if dims is not None and (len(dims) != rank or len(set(dims)) != len(dims)):
        problem = "a name twice" if len(dims) == rank else counted(len(dims), "name")
        example = ",".join(["n", "xy", "z", "t"][:rank]) if rank <= 4 else "d0,d1,..."
        raise Refused(
            f"--dims {','.join(dims)} gives {problem}, but every cell of {node.where} has "
            f"{rank} axes ({etype}); name each axis once, comma-separated (e.g. --dims {example})."
        )
    try:
        box = resolve(select, node.grid.shape)
    except (IndexError, TypeError, ValueError) as exc:
        raise Refused(f"{node.where} (shape {list(node.grid.shape)}): {exc}.") from exc
    total = math.prod(b - a for a, b in zip(*box))
    if not total:
        text = ", ".join(f"{a}:{b}" for a, b in zip(*box))
        raise Refused(
            f"{node.where} has no cells to export there (shape {list(node.grid.shape)}, selection [{text}])."
        )
    _check_output(out, overwrite)
    ipc = out.suffix.lower() in IPC_SUFFIXES
    codec = _codec(out, ipc, compression, compression_level)
    name = column or node.loc.name or "cells"
    coords = node.meta.get("dimension_names")
    if not (
        isinstance(coords, list)
        and len(coords) == len(box[0])
        and all(isinstance(n, str) for n in coords)
    ):
        coords = ["index"] if len(box[0]) == 1 else [f"index_{i}" for i in range(len(box[0]))]
    if name in coords:
        raise Refused(f"column name {name!r} clashes with a coordinate column; pass --column.")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nd_arrow.errors import NdArrowError
    from nd_arrow.zarr_bridge import from_zarr

    advance = steps(progress, total)
    step = (inner_chunks(node.meta) or node.grid.chunks or (1,))[0]
    per_cell = [0.0]  # bytes per cell of the slabs read so far

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
        grids = np.meshgrid(
            *(np.arange(a, b, dtype=np.int64) for a, b in zip(*part)), indexing="ij"
        )
        return pa.table({**{c: g.reshape(-1) for c, g in zip(coords, grids)}, name: cells})

    def slabs(part: Box) -> Iterator[Box]:
        """``part`` cut along its first axis at inner-chunk rows, about SLAB_BYTES each."""
        if not part[0]:
            yield part
            return
        starts, stops = part
        a, row = starts[0], math.prod(b - a for a, b in zip(starts[1:], stops[1:]))
        while a < stops[0]:
            cells = SLAB_BYTES / per_cell[0] if per_cell[0] else 1
            b = min(stops[0], (a // step + max(1, int(cells // max(row * step, 1)))) * step)
            yield (a, *starts[1:]), (b, *stops[1:])
            a = b

    def write(fh: BinaryIO) -> int:
        writer, rows = None, 0
        try:
            with open_array(node.loc, node.meta) as array:
                for part in _parts(node, box):
                    data = pa.concat_tables([table(array, slab) for slab in slabs(part)])
                    if writer is None and ipc:
                        options = pa.ipc.IpcWriteOptions(compression=codec)
                        writer = pa.ipc.new_file(fh, data.schema, options=options)
                    elif writer is None:  # list items keep the name "item", as nd-arrow writes them
                        writer = pq.ParquetWriter(
                            fh, data.schema, compression=compression, compression_level=compression_level,
                            use_compliant_nested_type=False,
                        )  # fmt: skip
                    writer.write_table(data)
                    rows += data.num_rows
        finally:
            if writer is not None:
                writer.close()
        return rows

    return atomic_replace(out, write)


def _codec(out: Path, ipc: bool, compression: str, level: int | None) -> Any:
    """The Arrow codec of ``--compression`` (None for ``none``), checked before any work;
    Refused naming what an Arrow IPC file or the codec's levels allow."""
    try:
        import pyarrow as pa

        import nd_arrow.zarr_bridge  # noqa: F401
    except ImportError as exc:
        raise Refused(
            f"export writes through nd-arrow, which is not installed ({exc}); {INSTALL_HINT}."
        ) from exc
    if compression not in COMPRESSIONS:
        raise Refused(f"--compression {compression!r}: choose one of {', '.join(COMPRESSIONS)}.")
    if ipc and compression not in ("zstd", "lz4", "none"):
        raise Refused(
            f"{out}: an Arrow IPC file ({', '.join(IPC_SUFFIXES)}) is compressed with zstd, lz4 "
            f"or none, not {compression}; pass --compression zstd, or write a .parquet file."
        )
    if compression == "none":
        if level is not None:
            raise Refused("--compression-level needs a compression; --compression none takes none.")
        return None
    try:
        return pa.Codec(compression, level)
    except (ValueError, OSError, pa.ArrowException) as exc:
        levels = "no level"
        if pa.Codec.supports_compression_level(compression):
            low, high = (
                pa.Codec.minimum_compression_level(compression),
                pa.Codec.maximum_compression_level(compression),
            )
            levels = f"levels {low} to {high}"
        raise Refused(
            f"--compression {compression} --compression-level {level}: {exc}; {compression} takes {levels}."
        ) from exc


def _check_output(out: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output that exists (without --overwrite) or cannot be made."""
    if out.is_dir():
        raise Refused(f"{out} is a directory; --parquet takes the path of a file to write.")
    if out.exists() and not overwrite:
        raise Refused(f"{out} exists; pass --overwrite to replace it.")
    if not out.parent.is_dir():
        raise Refused(f"cannot write {out}: the directory {out.parent} does not exist; create it.")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise Refused(f"cannot write {out}: the directory {out.parent} is not writable.")
