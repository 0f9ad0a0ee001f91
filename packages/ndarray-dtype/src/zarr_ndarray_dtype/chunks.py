"""Chunk grids, selection boxes and where a cell is stored: what a tool walking the chunks of an
``ndarray`` array needs from the engine (the store tool's public home for them)."""

from __future__ import annotations

from zarr_ndarray_dtype._cell_ids import chunk_name, serializer_of
from zarr_ndarray_dtype._grid import Box, Grid, Selection, resolve, slabs

__all__ = ["Box", "Grid", "Selection", "chunk_name", "resolve", "serializer_of", "slabs"]
