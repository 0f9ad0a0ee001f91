"""nd-arrow against the registry's vectors (registry/examples/nd_arrow.json).

The vectors are language-neutral Arrow IPC files: what is valid and invalid, every expected row
and every written byte comes from the file alone (a copy kept current by
registry/examples/generate.py). Valid files are decoded to their rows, and those marked
``writer`` are written again byte for byte; invalid files are refused with the error kind of the
rule they break (FORMAT.md §9), the rule named in the message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from nd_arrow import NdColumn, NdDataset, NdVariable, decode_batches, encode_batches, errors

DOC = json.loads((Path(__file__).parent / "golden" / "registry" / "nd_arrow.json").read_text())
KINDS = {
    "invalid dimensions": errors.InvalidDimensionsError,
    "shape mismatch": errors.ShapeMismatchError,
    "invalid attribute": errors.InvalidAttributeError,
    "invalid nd encoding": errors.InvalidEncodingError,
    "schema mismatch": errors.SchemaMismatchError,
    "invalid argument": errors.InvalidArgumentError,
    "not supported": errors.NotSupportedError,
}


def params(group: str) -> list[Any]:
    return [pytest.param(v, id=v["id"]) for v in DOC[group]]


def read(vector: dict[str, Any]) -> pa.Table:
    return pa.ipc.open_file(pa.py_buffer(bytes.fromhex(vector["ipc_file_hex"]))).read_all()


def ipc_file(fields: list[pa.Field], arrays: list[pa.Array]) -> str:
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return bytes(sink.getvalue().to_pybytes()).hex()


def plain(value: Any) -> Any:
    """An attribute as JSON has it (numpy arrays and scalars as lists and numbers)."""
    return value.tolist() if hasattr(value, "tolist") else value


def check_row(got: NdVariable | None, want: dict[str, Any] | None, what: str) -> None:
    if want is None:
        assert got is None, f"{what}: a null row"
        return
    assert got is not None, f"{what}: not a null row"
    assert list(got.dims) == want["dim_names"], what
    assert list(got.shape) == want["dim_sizes"], what
    values = got.values.ravel().tolist()
    nulls = got.mask.ravel().tolist() if got.mask is not None else [False] * len(values)
    assert [None if n else v for v, n in zip(values, nulls, strict=True)] == want["values"], what
    assert {k: plain(v) for k, v in got.attrs.items()} == want.get("attrs", {}), what


def array_of(want: dict[str, Any] | None, value_type: str) -> NdVariable | None:
    """The NdVariable a writer is given for a vector row."""
    if want is None:
        return None
    dtype = (
        np.dtype(object)
        if value_type == "string"
        else pa.type_for_alias(value_type).to_pandas_dtype()
    )
    mask = np.array([v is None for v in want["values"]], bool).reshape(want["dim_sizes"])
    zero = "" if value_type == "string" else 0
    values = np.array([zero if v is None else v for v in want["values"]], dtype=dtype)
    attrs = want.get("attrs", {})
    return NdVariable(
        values.reshape(want["dim_sizes"]),
        want["dim_names"],
        attrs,
        mask=mask if mask.any() else None,
    )


@pytest.mark.parametrize("vector", params("valid"))
def test_valid(vector: dict[str, Any]) -> None:
    table = read(vector)
    if "batches" in vector:
        batches = decode_batches(table)
        assert len(batches) == len(vector["batches"])
        for i, (got, want) in enumerate(zip(batches, vector["batches"], strict=True)):
            assert sorted(got.arrays) == sorted(want["arrays"])
            for name, row in want["arrays"].items():
                check_row(got[name], row, f"batch {i} {name}")
            assert {k: plain(v) for k, v in got.attrs.items()} == want["attrs"]
            assert got.sizes == want["grid"]
        if vector["writer"]:
            types = vector["value_types"]
            rebuilt = [
                NdDataset(
                    {k: array_of(r, types[k]) for k, r in want["arrays"].items()}, want["attrs"]
                )
                for want in vector["batches"]
            ]
            batch = encode_batches(rebuilt)
            assert ipc_file(list(batch.schema), batch.columns) == vector["ipc_file_hex"]
        return
    col = NdColumn.from_arrow(table.column(vector["column"]))
    rows = col.to_pylist()
    assert len(rows) == len(vector["rows"])
    for i, (got, want) in enumerate(zip(rows, vector["rows"], strict=True)):
        check_row(got, want, f"row {i}")
        check_row(col[i], want, f"row {i} by index")
    if vector["writer"]:
        built = NdColumn.from_arrays([array_of(r, vector["value_type"]) for r in vector["rows"]])
        out = ipc_file([pa.field(vector["column"], built.type)], [built.to_arrow()])
        assert out == vector["ipc_file_hex"]


@pytest.mark.parametrize("vector", params("invalid"))
def test_invalid(vector: dict[str, Any]) -> None:
    def decode() -> None:
        table = read(vector)
        if vector["column"]:
            NdColumn.from_arrow(table.column(vector["column"])).to_pylist()
        else:
            decode_batches(table)

    with pytest.raises(KINDS[vector["kind"]], match=re.escape(vector["rule"])):
        decode()
