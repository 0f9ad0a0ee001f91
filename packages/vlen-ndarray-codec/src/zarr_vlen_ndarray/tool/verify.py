"""Chunk checks: decode every stored object, and check raw bytes against an element type.

``verify_chunks`` reads each stored chunk (or shard) object through zarr with the array's own
metadata, so the ``vlen-ndarray`` codec applies every decoding rule of SPEC.md section 2.5; the
first object that fails is reported with its key (and, for a shard, the inner chunk).

``verify_with_decoder`` does the same for arrays whose codec a chunk decoder plug-in serves
(``ragged-ndarray``; see :mod:`.decoders`): every written (inner) chunk is decoded by the plug-in.

``check_payloads`` reads chunks as raw ``vlen-bytes`` and checks that every element is a whole
number of rows of a candidate element type (and bool bytes are 0/1): what ``upgrade`` runs
before it rewrites anything, so a wrong ``--shape`` cannot produce a store that lies.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.errors import CellError
from zarr_vlen_ndarray.tool.decoders import ChunkDecoder, DecodeFailure, decoded_chunks
from zarr_vlen_ndarray.tool.metadata import ElementType
from zarr_vlen_ndarray.tool.progress import Progress
from zarr_vlen_ndarray.tool.scan import (
    Node,
    find_bad_inner_chunk,
    payload_lengths,
    sharding_inner_chunks,
)
from zarr_vlen_ndarray.tool.stores import ChunkObject, Grid

__all__ = ["Problem", "check_payloads", "verify_chunks", "verify_with_decoder"]


@dataclass(frozen=True)
class Problem:
    """The first bad stored object found: its key and what is wrong with it."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"chunk {self.key}: {self.message}"


def verify_chunks(
    node: Node, array: Any, objects: Iterable[ChunkObject], progress: Progress
) -> Problem | None:
    """Decode each object in ``objects`` with ``array``; the first failure, or None."""
    inner = sharding_inner_chunks(node.meta)
    for obj in objects:
        try:
            array[node.grid.region(obj.index)]
        except Exception as exc:  # any failure to decode marks the object bad
            return _problem(node, array, obj, inner, exc)
        progress.advance()
    return None


def verify_with_decoder(
    node: Node, name: str, decoder: ChunkDecoder, objects: list[ChunkObject], progress: Progress
) -> Problem | None:
    """Decode every written (inner) chunk of ``objects`` with a decoder plug-in; the first
    failure, or None."""
    sharded = sharding_inner_chunks(node.meta) is not None
    try:
        for _ in decoded_chunks(node, name, decoder, objects):
            progress.advance()
    except DecodeFailure as failure:
        detail = f"{type(failure.error).__name__}: {failure.error}"
        if sharded and failure.chunk is not None:
            detail = f"the inner chunk at {list(failure.chunk.origin)} of the shard: {detail}"
        return Problem(failure.obj.key, detail)
    return None


def _problem(
    node: Node, array: Any, obj: ChunkObject, inner: tuple[int, ...] | None, exc: Exception
) -> Problem:
    detail = f"{type(exc).__name__}: {exc}"
    if inner is not None:
        found = find_bad_inner_chunk(array, node.grid, obj.index, inner)
        if found is not None:
            local, inner_exc = found
            detail = (
                f"inner chunk {list(local)} of the shard: {type(inner_exc).__name__}: {inner_exc}"
            )
    return Problem(obj.key, detail)


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
            cells = bytes_array[region]
        except Exception as exc:  # a chunk that is not even valid vlen-bytes
            return Problem(obj.key, f"cannot be read as vlen-bytes: {type(exc).__name__}: {exc}")
        lengths = payload_lengths(cells)
        bad = np.flatnonzero(lengths % unit)
        if bad.size:
            at = int(bad[0])
            coords = _coords(region, at)
            cell = np.asarray(cells, dtype=object).reshape(-1)[at]
            if any(c >= n for c, n in zip(coords, node.grid.shape, strict=True)):
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
