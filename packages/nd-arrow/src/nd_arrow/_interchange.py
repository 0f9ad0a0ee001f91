"""The import side of the Arrow PyCapsule interface: objects of any Arrow library as pyarrow data.

pyarrow data passes through; an object exporting ``__arrow_c_array__`` or ``__arrow_c_stream__``
(arro3, polars, DuckDB results, nanoarrow, ...) is imported through pyarrow's own capsule support,
which restores registered extension types from the exported schema. The export side is the
``__arrow_c_*__`` methods of :class:`nd_arrow.NdColumn` and :class:`nd_arrow.NdRecordBatch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from nd_arrow.errors import InvalidArgumentError

__all__ = ["import_array", "import_table"]


def import_array(data: Any, where: str) -> pa.Array | pa.ChunkedArray:
    """``data`` as a pyarrow array: pyarrow arrays pass, PyCapsule exporters are imported."""
    if isinstance(data, pa.Array | pa.ChunkedArray):
        return data
    importers = (("__arrow_c_array__", pa.array), ("__arrow_c_stream__", pa.chunked_array))
    return _import(data, where, "Array or ChunkedArray", importers)  # type: ignore[no-any-return]


def import_table(data: Any, where: str) -> pa.RecordBatch | pa.Table:
    """pyarrow RecordBatches and Tables pass; PyCapsule exporters are imported (a stream as a
    Table, an array as a RecordBatch)."""
    if isinstance(data, pa.RecordBatch | pa.Table):
        return data
    importers = (("__arrow_c_stream__", pa.table), ("__arrow_c_array__", pa.record_batch))
    return _import(data, where, "RecordBatch or Table", importers)  # type: ignore[no-any-return]


def _import(
    data: Any, where: str, expected: str, importers: tuple[tuple[str, Callable[[Any], Any]], ...]
) -> Any:
    """Import ``data`` with the first importer whose PyCapsule method it has (in that order)."""
    try:
        for method, importer in importers:
            if hasattr(data, method):
                return importer(data)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"{where}: pyarrow could not import the Arrow data of {type(data).__name__}: {exc}"
        ) from exc
    methods = " / ".join(method for method, _ in importers)
    raise InvalidArgumentError(
        f"{where}: expected a pyarrow {expected}, or an object of the Arrow "
        f"PyCapsule interface ({methods}), got {type(data).__name__}"
    )
