"""Write ``vectors.json``: hand-checkable ragged-ndarray chunks (run from this folder).

Each valid case lists the data type, the chunk shape, the cells (nested lists, C order) and the
chunk bytes as hex. The hex is built here field by field from the layout's definition (count,
extent table, zero padding, values), independently of the package's encoder; the tests check that
the encoder produces exactly these bytes and the decoder gives back the cells. Invalid cases list
chunks a decoder must refuse and a phrase of the error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def u32(*values: int) -> str:
    return b"".join(int(v).to_bytes(4, "little") for v in values).hex()


def chunk(dtype: str, pattern: list[int | None], cells: list[Any]) -> str:
    item = np.dtype(dtype).newbyteorder("<")
    variable = [i for i, d in enumerate(pattern) if d is None]
    arrays = [np.asarray(c, dtype=item).reshape(s) for c, s in cells]
    head = u32(len(arrays)) + u32(*(a.shape[i] for a in arrays for i in variable))
    align = min(item.itemsize, 8)
    pad = -(len(head) // 2) % align
    return head + "00" * pad + "".join(a.tobytes().hex() for a in arrays)


def _json_values(values: Any) -> list[Any]:
    """Values as JSON numbers; complex numbers as [real, imaginary] pairs."""
    arr = np.asarray(values).reshape(-1)
    if arr.dtype.kind == "c":
        return [[v.real, v.imag] for v in arr.tolist()]
    return arr.tolist()


def case(name: str, dtype: str, pattern: list[int | None], chunk_shape: list[int], cells: Any):
    return {
        "name": name,
        "data_type": {"name": "ndarray", "configuration": {"dtype": dtype, "shape": pattern}},
        "chunk_shape": chunk_shape,
        "cells": [{"shape": list(s), "values": _json_values(c)} for c, s in cells],
        "hex": chunk(dtype, pattern, cells),
    }


VALID = [
    case("float32 [null, null], two cells", "float32", [None, None], [2],
         [([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3)), ([], (0, 5))]),
    case("int16 [2, null], 2x2 chunk", "int16", [2, None], [2, 2],
         [([1, 2], (2, 1)), ([], (2, 0)), ([3, 4, 5, 6, -1, -2], (2, 3)), ([7, 8], (2, 1))]),
    case("float64 [null, 3, null] (padding 4 bytes)", "float64", [None, 3, None], [1],
         [([0.5, 1.5, 2.5, 3.5, 4.5, 5.5], (1, 3, 2))]),
    case("uint8 [null] (no padding)", "uint8", [None], [3],
         [([1, 2, 3], (3,)), ([], (0,)), ([255], (1,))]),
    case("bool [null, null]", "bool", [None, None], [1], [([True, False, True, True], (2, 2))]),
    case("complex128 [null, null] (8-byte alignment)", "complex128", [None, None], [2],
         [([1 + 2j], (1, 1)), (np.zeros(0, complex), (0, 0))]),
    case("int32 [null, 2], empty chunk shape", "int32", [None, 2], [0], []),
]

INVALID = [
    {"name": "short header", "dtype": "float32", "pattern": [None, None], "chunk_shape": [1],
     "hex": "0100", "error": "short header"},
    {"name": "count mismatch", "dtype": "float32", "pattern": [None, None], "chunk_shape": [2],
     "hex": u32(1, 0, 0), "error": "count mismatch"},
    {"name": "huge count", "dtype": "float32", "pattern": [None, None], "chunk_shape": [2],
     "hex": u32(0xFFFFFFFF, 0, 0), "error": "count mismatch"},
    {"name": "truncated table", "dtype": "float32", "pattern": [None, None], "chunk_shape": [2],
     "hex": u32(2, 0, 0, 0), "error": "truncated table"},
    {"name": "truncated padding", "dtype": "float64", "pattern": [None, None], "chunk_shape": [1],
     "hex": u32(1, 0, 0), "error": "truncated padding"},
    {"name": "nonzero padding", "dtype": "float64", "pattern": [None, None], "chunk_shape": [1],
     "hex": u32(1, 0, 0, 7), "error": "nonzero padding"},
    {"name": "extent product exceeds the bytes", "dtype": "float32", "pattern": [None, None],
     "chunk_shape": [1], "hex": u32(1, 0xFFFFFFFF, 0xFFFFFFFF) + "00" * 4,
     "error": "exceeds the bytes present"},
    {"name": "values shorter than the table", "dtype": "int16", "pattern": [2, None],
     "chunk_shape": [2], "hex": u32(2, 1, 1) + "0100" * 3, "error": "shorter than the table"},
    {"name": "values longer than the table", "dtype": "int16", "pattern": [2, None],
     "chunk_shape": [1], "hex": u32(1, 1) + "0100" * 3, "error": "longer than the table"},
    {"name": "bool byte 0x02", "dtype": "bool", "pattern": [None, None], "chunk_shape": [1],
     "hex": u32(1, 1, 2) + "0102", "error": "0x02"},
]


def main() -> None:
    data = {"valid": VALID, "invalid": INVALID}
    text = json.dumps(data, indent=1) + "\n"
    (HERE / "vectors.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
