"""``export``: an ``ndarray`` array's cells, or a group's arrays side by side, as rows of a
Parquet file (a row group per row of chunks) or an Arrow IPC file, through nd-arrow's zarr
bridge; nothing appears at the output unless all succeeded."""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Unpack

import numpy as np
import zarr
from zarr.storage import StoreLike, StorePath

from zarr_ndarray_dtype import AlignmentError, NDArrayDType
from zarr_ndarray_tool import _stores
from zarr_ndarray_tool._documents import check_array_document, data_type_kind, label
from zarr_ndarray_tool._stores import Location, Where, atomic_replace, location, open_array
from zarr_ndarray_tool.errors import Outcome, Progress, Refused, counted, environment_failure, steps

INSTALL_HINT = "pip install 'zarr-ndarray-tool[export]'"
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
    if not out.parent.is_dir():  # one it cannot write fails as the temporary file is opened
        raise Refused(f"cannot write {out}: the directory {out.parent} does not exist; create it.")
    try:
        import pyarrow as pa

        import nd_arrow.zarr_bridge  # noqa: F401
    except ImportError as exc:
        what = f"export writes through nd-arrow, which is not installed ({exc})"
        raise Refused(f"{what}; {INSTALL_HINT}.") from exc
    if compression not in COMPRESSIONS:
        raise Refused(f"--compression {compression!r}: choose one of {', '.join(COMPRESSIONS)}.")
    if out.suffix.lower() in IPC_SUFFIXES and compression not in ("zstd", "lz4", "none"):
        raise Refused(
            f"{out}: an Arrow IPC file ({', '.join(IPC_SUFFIXES)}) is compressed with zstd, lz4 or "
            f"none, not {compression}; pass --compression zstd, or write a .parquet file."
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


def _arrays(loc: Location, names: list[str] | None, column: str | None) -> dict[str, Any]:
    """The arrays to export by column name: the ``ndarray`` array at ``loc``, or the arrays
    ``names`` of the group at ``loc`` (default all its own arrays), of one shape."""
    meta, where = _stores.read_document(loc)[0], str(loc)
    if not (isinstance(meta, dict) and meta.get("node_type") == "group"):
        if names:
            raise Refused(f"{where} is an array; --array names arrays of a group to export.")
        kind = data_type_kind(check_array_document(meta, where).get("data_type"))
        if kind != "ndarray":
            need = {"bytes": "; run `upgrade` first", "legacy": "; run `migrate` first"}
            what = f"found data_type {meta.get('data_type')!r}{need.get(kind, '')}"
            raise Refused(f"{where}: export expects an ndarray array or a group, {what}.")
        return {column or loc.name or "cells": open_array(loc, meta)}
    try:
        found = dict(zarr.open_group(StorePath(loc.store, loc.inner), mode="r").arrays())
    except (ValueError, TypeError, KeyError) as exc:
        raise Refused(f"{where}: zarr cannot open this group's arrays: {exc}") from exc
    if missing := [n for n in names or () if n not in found]:
        listed = ", ".join(sorted(found)) or "none"
        raise Refused(f"{where}: the group has no array {missing[0]!r} (its arrays: {listed}).")
    arrays: dict[str, Any] = {n: found[n] for n in names or sorted(found)}
    if not any(isinstance(a.metadata.data_type, NDArrayDType) for a in arrays.values()):
        raise Refused(f"{where}: no ndarray array among {sorted(arrays)} (plain ones go beside).")
    if len({a.shape for a in arrays.values()}) > 1:
        listed = ", ".join(f"{n} {a.shape}" for n, a in arrays.items())
        raise Refused(f"{where}: the arrays differ in shape ({listed}); pick some with --array.")
    if column is not None and len(arrays) > 1:
        raise Refused(f"{where}: --column names one array's column, not {len(arrays)} arrays'.")
    return {column: next(iter(arrays.values()))} if column is not None else arrays


@dataclass(frozen=True)
class Export(Outcome):
    """``export``: ``rows`` written to ``out``."""

    rows: int = 0
    out: Path = Path()


def export(
    store: StoreLike,
    *,
    parquet: str | Path,
    arrays: list[str] | None = None,
    explode: bool = False,
    column: str | None = None,
    dims: list[str] | None = None,
    select: Any = ...,
    compression: str = "zstd",
    compression_level: int | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    **where: Unpack[Where],
) -> Export:
    """``export``: the cells ``select`` (ints, slices of step 1, ``...``; default all) to the
    local file ``parquet``, an Arrow IPC file if it ends in ``.arrow``, ``.feather`` or
    ``.ipc``; ``compression``: zstd, snappy, gzip, brotli, lz4 or none (IPC: zstd, lz4, none).
    A group's ``arrays`` (default all, of one shape) are exported side by side, a column each,
    their cells checked to align; ``explode``: a row per leading row of the cells instead."""
    loc, out = location(store, **where), Path(parquet)
    members = _arrays(loc, arrays, column)
    first = next(iter(members.values()))
    single, shape = len(members) == 1 and not explode, tuple(first.shape)  # one: ndarray
    if dims is not None and not single:
        raise Refused("--dims names the axes of one array's cells (no --explode, one array).")
    if dims is not None:
        dt, rank = first.metadata.data_type, len(first.metadata.data_type.shape)
        if len(dims) != rank or len(set(dims)) != rank:
            problem = "a name twice" if len(dims) == rank else counted(len(dims), "name")
            example = ",".join(["n", "xy", "z", "t"][:rank]) if rank <= 4 else "d0,d1,..."
            raise Refused(
                f"--dims {','.join(dims)} gives {problem}, but every cell of {loc} has {rank} axes "
                f"({label(dt)}); name each axis once, comma-separated (e.g. --dims {example})."
            )
    try:
        box = resolve(select, shape)
    except (IndexError, TypeError, ValueError) as exc:
        raise Refused(f"{loc} (shape {list(shape)}): {exc}.") from exc
    if not (total := math.prod(b - a for a, b in zip(*box, strict=True))):
        text = ", ".join(f"{a}:{b}" for a, b in zip(*box, strict=True))
        what = f"(shape {list(shape)}, selection [{text}])"
        raise Refused(f"{loc} has no cells to export there {what}.")
    codec = _codec(out, overwrite, compression, compression_level)
    names = first.metadata.dimension_names
    if not names or None in names:
        names = ["index"] if len(shape) == 1 else [f"index_{i}" for i in range(len(shape))]
    if clash := sorted(set(names) & set(members)):
        raise Refused(f"column name {clash[0]!r} clashes with a coordinate column; pass --column.")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nd_arrow.errors import NdArrowError
    from nd_arrow.zarr_bridge import from_zarr, table_from_zarr

    parts, advance = [box], steps(progress, total)
    if shape:  # a row group per row of chunks (shards)
        (a, *starts), (b, *stops), step = *box, (first.shards or first.chunks)[0]
        cuts = [a, *range((a // step + 1) * step, b, step), b]
        parts = [((x, *starts), (y, *stops)) for x, y in itertools.pairwise(cuts)]

    def table(starts: tuple[int, ...], stops: tuple[int, ...]) -> Any:
        selection = tuple(map(slice, starts, stops))
        try:
            if single:
                ((name, array),) = members.items()
                data = pa.table({name: from_zarr(array, dims, selection=selection)})
            else:
                data = table_from_zarr(members, selection, explode=explode)
        except NdArrowError as exc:
            raise Refused(f"{loc}: nd-arrow cannot hold these cells: {exc}.") from exc
        except ValueError as exc:  # misaligned cells; every codec and stored-chunk error
            if environment_failure(exc) is not None:
                raise
            hint = "" if isinstance(exc, AlignmentError) else "; run `verify` to check every chunk"
            raise Refused(f"{loc}: {exc}{hint}.") from exc
        extents = [b - a for a, b in zip(starts, stops, strict=True)]
        cells = data.column("cell").to_numpy() if explode else np.arange(data.num_rows)
        at = np.unravel_index(cells, extents) if extents else ()
        columns = {n: (i + a).astype(np.int64) for n, i, a in zip(names, at, starts, strict=True)}
        data = data.drop_columns(["cell"]) if explode else data
        advance(math.prod(extents))
        return pa.table({**columns, **dict(zip(data.column_names, data.columns, strict=True))})

    def write(fh: BinaryIO) -> int:
        tables = (table(*part) for part in parts)
        rows, head = 0, next(tables)
        if out.suffix.lower() in IPC_SUFFIXES:
            options = pa.ipc.IpcWriteOptions(compression=codec)
            writer = pa.ipc.new_file(fh, head.schema, options=options)
        else:  # list items keep the name "item", as nd-arrow writes them
            kwargs = {"compression": compression, "compression_level": compression_level}
            writer = pq.ParquetWriter(fh, head.schema, **kwargs, use_compliant_nested_type=False)
        with writer:
            for data in itertools.chain([head], tables):
                writer.write_table(data)
                rows += data.num_rows
        return rows

    rows = atomic_replace(out, write)
    return Export(f"{loc}: wrote {counted(rows, 'row')} to {out}", rows=rows, out=out)
