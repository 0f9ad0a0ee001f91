"""The import side of the Arrow PyCapsule interface: objects of any Arrow library as pyarrow data.

pyarrow data passes through; an object exporting ``__arrow_c_array__`` or ``__arrow_c_stream__``
(arro3, polars, DuckDB results, nanoarrow, ...) is imported through pyarrow's own capsule support,
which restores registered extension types from the exported schema. The export side is the
``__arrow_c_*__`` methods of :class:`nd_arrow.NdColumn` and :class:`nd_arrow.NdRecordBatch`.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from nd_arrow.errors import InvalidArgumentError

__all__ = ["import_array", "import_table"]


def import_array(data: Any, where: str) -> pa.Array | pa.ChunkedArray:
    """``data`` as a pyarrow array: pyarrow arrays pass, PyCapsule exporters are imported."""
    if isinstance(data, pa.Array | pa.ChunkedArray):
        return data
    try:
        if hasattr(data, "__arrow_c_array__"):
            return pa.array(data)
        if hasattr(data, "__arrow_c_stream__"):
            return pa.chunked_array(data)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"{where}: pyarrow could not import the Arrow data of {type(data).__name__}: {exc}"
        ) from exc
    raise InvalidArgumentError(
        f"{where}: expected a pyarrow Array or ChunkedArray, or an object of the Arrow "
        f"PyCapsule interface (__arrow_c_array__ / __arrow_c_stream__), got {type(data).__name__}"
    )


def import_table(data: Any, where: str) -> pa.RecordBatch | pa.Table:
    """pyarrow RecordBatches and Tables pass; PyCapsule exporters are imported (a stream as a
    Table, an array as a RecordBatch)."""
    if isinstance(data, pa.RecordBatch | pa.Table):
        return data
    try:
        if hasattr(data, "__arrow_c_stream__"):
            return pa.table(data)
        if hasattr(data, "__arrow_c_array__"):
            return pa.record_batch(data)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"{where}: pyarrow could not import the Arrow data of {type(data).__name__}: {exc}"
        ) from exc
    raise InvalidArgumentError(
        f"{where}: expected a pyarrow RecordBatch or Table, or an object of the Arrow "
        f"PyCapsule interface (__arrow_c_stream__ / __arrow_c_array__), got {type(data).__name__}"
    )
