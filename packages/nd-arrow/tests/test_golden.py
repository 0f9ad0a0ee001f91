"""The golden IPC files (written by golden/make_golden.py from hand-built arrays) pin the bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from nd_arrow import NdArray, NdArrayType, NdColumn
from nd_arrow.batch import NdRecordBatch, decode_batches, encode_batches


def ipc_bytes(fields: list[pa.Field], arrays: list[pa.Array]) -> bytes:
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


EXAMPLE = [
    NdArray(
        np.array([[0.0, 0.1, 0.2], [1.0, 1.1, 1.2]]),
        ["time", "lat"],
        {"units": "K", "valid_range": [0.0, 2.0]},
    ),
    None,
    NdArray(np.array(0.0), [], {"units": "C"}, mask=np.array(True)),
    NdArray(np.array([1.5, 0.0, 2.5]), ["x"], mask=np.array([False, True, False])),
]

STRINGS = [
    NdArray(np.array(["a", "bc"]), ["station"]),
    NdArray(np.array([], dtype=object), ["station"]),
    NdArray(np.array([["x", "y", "z"]]), ["y", "x"]),
]

DATASET = [
    NdRecordBatch(
        {
            "t": NdArray(np.array([[1, 2], [3, 4]], np.int32), ["time", "lat"]),
            "lat": NdArray(np.array([10.0, 20.0], np.float32), ["lat"]),
        },
        {"title": "first", "version": 2},
    ),
    NdRecordBatch(
        {"t": NdArray(np.array([[5, 6]], np.int32), ["time", "lat"])}, {"title": "second"}
    ),
]


@pytest.mark.parametrize(
    ("name", "column", "rows"),
    [("example.arrow", "temperature", EXAMPLE), ("strings.arrow", "label", STRINGS)],
)
def test_reader_decodes_golden(golden_dir: Path, name: str, column: str, rows: list) -> None:
    table = read(golden_dir / name)
    assert isinstance(table.schema.field(column).type, NdArrayType)
    col = NdColumn.from_arrow(table.column(column))
    assert col.to_pylist() == rows
    assert [col[i] for i in range(len(col))] == rows


@pytest.mark.parametrize(
    ("name", "column", "rows"),
    [("example.arrow", "temperature", EXAMPLE), ("strings.arrow", "label", STRINGS)],
)
def test_writer_matches_golden_bytes(golden_dir: Path, name: str, column: str, rows: list) -> None:
    golden = read(golden_dir / name)
    col = NdColumn.from_arrays(rows)
    assert col.storage.equals(golden.column(column).chunk(0).storage)
    out = ipc_bytes([pa.field(column, col.type)], [col.to_arrow()])
    assert out == (golden_dir / name).read_bytes()


def test_dataset_golden(golden_dir: Path) -> None:
    table = read(golden_dir / "dataset.arrow")
    assert decode_batches(table) == DATASET
    batch = encode_batches(DATASET)
    assert batch.schema.equals(table.schema, check_metadata=True)
    out = ipc_bytes(list(batch.schema), batch.columns)
    assert out == (golden_dir / "dataset.arrow").read_bytes()


def test_golden_example_values(golden_dir: Path) -> None:
    """Spot-check the decoded example against FORMAT.md's text, independent of EXAMPLE."""
    col = NdColumn.from_arrow(read(golden_dir / "example.arrow").column("temperature"))
    first = col[0]
    assert first is not None
    assert first.sizes == {"time": 2, "lat": 3}
    assert first.attrs["units"] == "K"
    np.testing.assert_array_equal(first.attrs["valid_range"], [0.0, 2.0])
    assert col[1] is None
    scalar = col[2]
    assert scalar is not None and scalar.shape == () and scalar.mask is not None
    assert bool(scalar.mask)
