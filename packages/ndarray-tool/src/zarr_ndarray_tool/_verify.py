"""Chunk checks: every stored object decoded (``verify``), raw bytes checked against a candidate
element type before ``upgrade`` writes anything, and the one report of a chunk that does not
decode, whichever command found it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.chunks import Grid, chunk_name
from zarr_ndarray_dtype.columnar import scan_cells
from zarr_ndarray_dtype.errors import CellError, StoredChunkError
from zarr_ndarray_tool._metadata import ElementType, bytes_view, data_type_kind, with_shape
from zarr_ndarray_tool._scan import Node, payload_lengths
from zarr_ndarray_tool._stores import ChunkObject, open_array
from zarr_ndarray_tool.errors import Refused, environment_failure
from zarr_ndarray_tool.progress import Progress


@dataclass(frozen=True)
class Problem:
    """The first bad stored object found: its key and what is wrong with it."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"chunk {self.key}: {self.message}"


def verify_chunks(node: Node, objects: Iterable[ChunkObject], progress: Progress) -> None:
    """Decode every (inner) chunk of each object in ``objects``; the first failure is refused.

    The array is read through a document whose shape is a whole number of chunks, so that edge
    chunks are decoded whole, as the codec decodes them.
    """
    padded = node.grid.padded()
    ndarray = data_type_kind(node.meta.get("data_type")) == "ndarray"
    meta = node.meta if ndarray else bytes_view(node.meta, node.where)
    with open_array(node.loc, with_shape(meta, padded.shape)) as array:
        for obj in objects:
            region = padded.region(obj.index)
            try:
                scan_cells(array, region, "verify") if ndarray else read_raw(array, region)
            except ValueError as exc:  # every codec and stored-chunk error is a ValueError
                raise refusal(node, exc, advise=False) from exc
            progress.advance()


def read_raw(array: Any, region: tuple[slice, ...]) -> Any:
    """``array[region]`` of an array read as raw bytes; StoredChunkError naming the chunk."""
    try:
        return array[region]
    except Exception as exc:  # a compressor's or checksum's failure, whatever its type
        name = chunk_name(array.metadata, tuple(r.start for r in region), inner=False)
        raise StoredChunkError.of(f"the stored {name}", exc) from exc


def refusal(node: Node, exc: Exception, *, advise: bool = True) -> Refused:
    """The report of a chunk that does not decode: ``exc`` names it and why; then what to run.

    When the store or the machine failed rather than the chunk (a connection, a disk), that
    failure is raised instead, for the CLI to report as such.
    """
    failure = environment_failure(exc)
    if failure is not None:
        raise failure
    hint = "; run `verify` to check every chunk" if advise else ""
    return Refused(f"{node.where}: {exc}{hint}.")


def check_payloads(
    node: Node,
    bytes_array: Any,
    grid: Grid,
    objects: Iterable[ChunkObject],
    etype: ElementType,
    progress: Progress,
) -> Problem | None:
    """Check chunks read as raw bytes against ``etype``; the first bad element, or None.

    ``bytes_array`` reads the chunks as raw bytes through a document whose shape is ``grid``'s:
    pass the padded grid (:meth:`Grid.padded`) so that edge chunks are checked whole, including
    the cells beyond the array's shape, which the codec decodes too.
    """
    unit = etype.unit
    for obj in objects:
        region = grid.region(obj.index)
        try:
            cells = read_raw(bytes_array, region)
        except StoredChunkError as exc:
            raise refusal(node, exc) from exc
        lengths = payload_lengths(cells)
        bad = np.flatnonzero(lengths % unit)
        if bad.size:
            at = int(bad[0])
            coords, padding = element_place(region, at, node.grid.shape)
            cell = np.asarray(cells, dtype=object).reshape(-1)[at]
            if padding:
                coords_text = f"{coords} (beyond the array's shape, in the edge chunk's padding)"
            else:
                coords_text = str(coords)
            return Problem(
                obj.key,
                f"the element at {coords_text} is {int(lengths[at])} bytes, not a whole number of "
                f"{unit}-byte rows of {etype}{_nul_hint(node.meta, cell)}; check --dtype and "
                "--shape.",
            )
        if etype.dtype == "bool" and lengths.size:
            problem = _bool_problem(obj, region, cells)
            if problem is not None:
                return problem
        progress.advance()
    return None


def _bool_problem(obj: ChunkObject, region: tuple[slice, ...], cells: Any) -> Problem | None:
    """The first element whose bytes break the bool rule (``check_bool_bytes``), or None."""
    flat = np.asarray(cells, dtype=object).reshape(-1)
    try:
        check_bool_bytes(np.frombuffer(b"".join(flat), np.uint8))
    except CellError:
        for at, cell in enumerate(flat):  # only on failure: find the element to name
            try:
                check_bool_bytes(np.frombuffer(cell, np.uint8))
            except CellError as exc:
                return Problem(obj.key, f"the element at {_coords(region, at)}: {exc}")
    return None


def _coords(region: tuple[slice, ...], flat: int) -> tuple[int, ...]:
    shape = tuple(r.stop - r.start for r in region)
    local = np.unravel_index(flat, shape) if shape else ()
    return tuple(r.start + int(i) for r, i in zip(region, local, strict=True))


def element_place(
    region: tuple[slice, ...], flat: int, shape: tuple[int, ...]
) -> tuple[tuple[int, ...], bool]:
    """The array coordinates of element ``flat`` (C order) of a whole chunk's ``region``, and
    whether they lie beyond the array's ``shape``: in an edge chunk's padding, which the codec
    decodes with the chunk."""
    coords = _coords(region, flat)
    return coords, any(c >= n for c, n in zip(coords, shape, strict=True))


def _nul_hint(meta: dict[str, Any], cell: object) -> str:
    """zarr-python strips trailing NUL bytes from a bytes fill when it writes fill cells."""
    try:
        fill = base64.b64decode(str(meta.get("fill_value")), validate=True)
    except (binascii.Error, ValueError):
        return ""
    if isinstance(cell, bytes) and fill != cell and fill.rstrip(b"\x00") == cell:
        return (
            f" (it is the fill value {meta.get('fill_value')!r} with its trailing NUL bytes "
            "stripped, as zarr-python stores fill elements of variable_length_bytes arrays; "
            "such chunks must be rewritten with whole elements before an upgrade)"
        )
    return ""
