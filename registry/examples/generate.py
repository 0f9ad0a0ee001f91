"""Regenerate the test vectors under registry/examples/ from first principles.

Run from the repository root:

    python registry/examples/generate.py          # rewrite the files
    python registry/examples/generate.py --check  # fail if a file would change

One file per extension (``ndarray.json``, ``vlen-ndarray.json``, ``ragged-ndarray.json``,
``nd_arrow.json``), in the layout registry/README.md describes. Every byte is built here from
SPEC.md and FORMAT.md, field by field, without importing any implementation; the packages' copies
(``COPIES``) are written and checked with them, and so are the copies of the test files the zarr
packages share (``COPIED_FILES``: the vector runner, registry/runner.py, and
tools/nox/test_support.py): a package's sdist holds only its own tests.

The checks run on every call: every numbered rule of SPEC.md and FORMAT.md has at least one
invalid vector and every vector names a rule that exists (and, for nd_arrow, one of its error
kinds); ids are unique. When jsonschema is importable, every metadata vector is checked against
the registry schemas as its ``schema`` member says (``accepts``: a rule JSON Schema cannot
express). When numcodecs is importable, every valid vlen-ndarray chunk is checked to be
byte-identical to numcodecs ``VLenBytes`` of the cells' bytes (SPEC.md section 2.6). Needs numpy
and pyarrow (the nd_arrow vectors).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REVISION = 2

DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
U32_MAX = 2**32 - 1

Json = Any


# ---------------------------------------------------------------------------- shared pieces


def dt(dtype: Json, shape: Json) -> dict[str, Json]:
    return {"name": "ndarray", "configuration": {"dtype": dtype, "shape": shape}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def u32(*values: int) -> bytes:
    return b"".join(struct.pack("<I", v) for v in values)


def item(dtype: str) -> np.dtype[Any]:
    return np.dtype(dtype).newbyteorder("<")


def cell(dtype: str, values: Any, shape: Iterable[int]) -> dict[str, Json]:
    """An element: its shape and its LE C-order bytes as hex."""
    shape = list(shape)
    arr = np.asarray(values, dtype=item(dtype)).reshape(shape)
    return {"shape": shape, "hex": arr.tobytes().hex()}


def cell_bytes(c: dict[str, Json]) -> bytes:
    return bytes.fromhex(c["hex"])


VLEN = {"name": "vlen-ndarray", "configuration": {}}
RAGGED = {"name": "ragged-ndarray", "configuration": {}}
BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}


def transpose(*order: int) -> dict[str, Json]:
    return {"name": "transpose", "configuration": {"order": list(order)}}


def sharding(inner_shape: list[int], codecs: list[Json]) -> dict[str, Json]:
    """``sharding_indexed`` with the index at the end, encoded by ``bytes`` alone (no crc32c)."""
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": inner_shape,
            "codecs": codecs,
            "index_codecs": [BYTES_LE],
            "index_location": "end",
        },
    }


def zarr_json(
    data_type: Json, fill_value: Json, codecs: list[Json], shape: list[int], chunk: list[int]
) -> dict[str, Json]:
    """A complete zarr.json of an array with one chunk grid entry per axis."""
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "attributes": {},
    }


def key_of(shape: list[int]) -> str:
    return "c/" + "/".join("0" for _ in shape)


def serializer(pattern: list[Json]) -> dict[str, Json]:
    if None not in pattern:
        return BYTES_LE
    return VLEN if pattern[0] is None and None not in pattern[1:] else RAGGED


# ---------------------------------------------------------------------------- chunk encoders


def vlen_chunk(cells: list[dict[str, Json]]) -> bytes:
    """SPEC 2.4: u32le count, then u32le length and payload per element."""
    parts = [u32(len(cells))]
    for c in cells:
        payload = cell_bytes(c)
        parts += [u32(len(payload)), payload]
    return b"".join(parts)


def ragged_chunk(dtype: str, pattern: list[Json], cells: list[dict[str, Json]]) -> bytes:
    """SPEC 5.3: u32le count, the u32le extent table, zero padding, the values."""
    variable = [i for i, d in enumerate(pattern) if d is None]
    head = u32(len(cells), *(c["shape"][i] for c in cells for i in variable))
    align = min(item(dtype).itemsize, 8)
    return head + bytes(-len(head) % align) + b"".join(cell_bytes(c) for c in cells)


def bytes_chunk(cells: list[dict[str, Json]]) -> bytes:
    """SPEC 1.6: the elements' bytes back to back."""
    return b"".join(cell_bytes(c) for c in cells)


def shard(inner: list[bytes]) -> bytes:
    """A shard of inner chunks (C order) followed by its index of (offset, nbytes) u64le pairs."""
    index, offset = [], 0
    for chunk in inner:
        index.append(struct.pack("<QQ", offset, len(chunk)))
        offset += len(chunk)
    return b"".join(inner) + b"".join(index)


def array_vector(
    vid: str,
    note: str,
    data_type: Json,
    fill_value: Json,
    codecs: list[Json],
    cells: list[dict[str, Json]] | None = None,
    chunk_hex: bytes | None = None,
    shape: list[int] | None = None,
    **more: Json,
) -> dict[str, Json]:
    """A valid array vector: metadata and, when ``cells`` are given, its one chunk."""
    shape = shape or [max(1, len(cells or []))]
    out: dict[str, Json] = {
        "id": vid,
        "note": note,
        "zarr_json": zarr_json(data_type, fill_value, codecs, shape, shape),
    }
    if cells is not None:
        assert chunk_hex is not None
        out["chunk_key"] = key_of(shape)
        out["chunk_hex"] = chunk_hex.hex()
        out["cells"] = cells
    out.update(more)
    return out


def refused(vid: str, rule: str, note: str, **what: Json) -> dict[str, Json]:
    return {"id": vid, "rule": rule, "note": note, **what}


# ---------------------------------------------------------------------------- ndarray.json


def pattern_stem(pattern: list[Json]) -> str:
    return "_".join("null" if d is None else str(d) for d in pattern)


def ndarray_vectors() -> dict[str, list[Json]]:
    valid: list[Json] = []
    valid += [
        {
            "id": f"dtype-{name}-{pattern_stem(pattern)}",
            "note": "every dtype with each pattern class",
            "data_type": dt(name, pattern),
        }
        for name in DTYPES
        for pattern in ([None], [None, 2], [3, 2], [2, None], [None, None])
    ]
    for name, pattern, note in (
        ("float64", [None, 3, 2], "two fixed axes after the variable one"),
        ("uint8", [1], "the smallest all-fixed pattern"),
        ("int32", [4, None, 5], "the variable axis between fixed ones"),
        ("float32", [None, None, None], "three variable axes"),
        ("uint8", [None, 2**53 - 1], "the largest fixed extent (SPEC 1.3/6)"),
        ("uint8", [3037000499, 3037000499], "fixed part just under 2^63 - 1 bytes (1.3/6)"),
        ("float64", [2**30, 2**30 - 1], "fixed part of 2^63 - 2^33 bytes (1.3/6)"),
    ):
        valid.append(
            {
                "id": f"dtype-{name}-{pattern_stem(pattern)}",
                "note": note,
                "data_type": dt(name, pattern),
            }
        )
    valid.append(
        {
            "id": "dtype-duplicate-member-last-wins",
            "note": "a member given twice is read as its last occurrence (SPEC 1.3)",
            "data_type_text": '{"name": "ndarray", "configuration": {"dtype": "int8", '
            '"dtype": "float32", "shape": [null]}}',
            "canonical": dt("float32", [None]),
        }
    )
    valid.append(
        {
            "id": "dtype-duplicate-shape-last-wins",
            "note": "a member given twice is read as its last occurrence, even after a value "
            "that would be refused (SPEC 1.3)",
            "data_type_text": '{"name": "ndarray", "configuration": {"dtype": "int16", '
            '"shape": [2.0], "shape": [null, 2]}}',
            "canonical": dt("int16", [None, 2]),
        }
    )

    # Fill values: arrays of one element whose chunk is missing (every element is the fill).
    def fill_ok(vid: str, dtype: str, pattern: list[Json], arr: np.ndarray, note: str) -> Json:
        element = cell(dtype, arr, arr.shape)
        vec = array_vector(
            vid, note, dt(dtype, pattern), b64(cell_bytes(element)), [serializer(pattern)]
        )
        vec["fill_element"] = element
        return vec

    f4 = item("float32")
    valid += [
        fill_ok("fill-empty", "float32", [None, 2], np.zeros((0, 2), f4), "the empty element"),
        fill_ok("fill-one-row", "float32", [None, 2], np.array([[1.0, 2.0]], f4), "one row"),
        fill_ok("fill-fixed-zero", "int16", [3], np.zeros(3), "all-fixed default: zeros"),
        fill_ok("fill-fixed", "int16", [3], np.array([1, -1, 256]), "all-fixed, non-zero"),
        fill_ok("fill-one-byte", "uint8", [None], np.array([7]), "two pad characters"),
        fill_ok("fill-two-bytes", "uint8", [None], np.array([7, 8]), "one pad character"),
        fill_ok(
            "fill-variable-not-leading",
            "bool",
            [2, None],
            np.array([[True], [False]]),
            "one variable axis, not leading",
        ),
        fill_ok("fill-complex", "complex64", [None], np.array([1 + 2j]), "real then imaginary"),
        fill_ok(
            "fill-two-variable",
            "float64",
            [None, None],
            np.zeros((0, 0)),
            "two variable axes: only the empty element",
        ),
    ]

    # The bytes codec (SPEC 1.6).
    i16 = [cell("int16", [1, 2], [2]), cell("int16", [3, 4], [2])]
    valid.append(
        array_vector(
            "bytes-int16",
            "SPEC 1.6's example: elements back to back",
            dt("int16", [2]),
            b64(bytes(4)),
            [BYTES_LE],
            i16,
            bytes_chunk(i16),
        )
    )
    mat = [cell("float64", np.arange(6) / 4, [3, 2]), cell("float64", -np.arange(6), [3, 2])]
    valid.append(
        array_vector(
            "bytes-float64-matrix",
            "(3, 2) elements, C order inside each",
            dt("float64", [3, 2]),
            b64(bytes(48)),
            [BYTES_LE],
            mat,
            bytes_chunk(mat),
        )
    )
    u8 = [cell("uint8", [1, 2, 255], [3])]
    for vid, codec, note in (
        ("bytes-one-byte-no-endian", {"name": "bytes", "configuration": {}}, "endian absent"),
        ("bytes-one-byte-no-configuration", {"name": "bytes"}, "configuration absent"),
    ):
        valid.append(
            array_vector(
                vid,
                f"1-byte items: {note} is valid (SPEC 1.6/3)",
                dt("uint8", [3]),
                b64(bytes(3)),
                [codec],
                u8,
                bytes_chunk(u8),
            )
        )
    flags = [cell("bool", [True, False], [2]), cell("bool", [False, False], [2])]
    valid.append(
        array_vector(
            "bytes-bool",
            "bool bytes 0x00 / 0x01",
            dt("bool", [2]),
            b64(bytes(2)),
            [BYTES_LE],
            flags,
            bytes_chunk(flags),
        )
    )
    fill12 = cell("int16", [1, 2], [2])
    written = [cell("int16", [3, 4], [2]), fill12]
    valid.append(
        array_vector(
            "bytes-missing-element-is-fill",
            "a missing element (null in cells_written) is written as the fill element (SPEC 1.5)",
            dt("int16", [2]),
            b64(cell_bytes(fill12)),
            [BYTES_LE],
            written,
            bytes_chunk(written),
            cells_written=[written[0], None],
        )
    )
    t23 = [cell("int16", [10 * r + c, -(10 * r + c)], [2]) for r in range(2) for c in range(3)]
    order = [r * 3 + c for c in range(3) for r in range(2)]  # the transposed chunk's C order
    valid.append(
        array_vector(
            "bytes-transpose",
            "transpose [1, 0] of a (2, 3) chunk: elements written in the transposed C order; "
            "cells are listed in the array's C order (SPEC 1.6)",
            dt("int16", [2]),
            b64(bytes(4)),
            [transpose(1, 0), BYTES_LE],
            t23,
            bytes_chunk([t23[i] for i in order]),
            shape=[2, 3],
        )
    )
    s4 = [cell("int16", [i, i + 1], [2]) for i in range(1, 9, 2)]
    valid.append(
        array_vector(
            "bytes-in-shard",
            "sharding_indexed holding two (2,) chunks of bytes, index at the end (SPEC 1.6)",
            dt("int16", [2]),
            b64(bytes(4)),
            [sharding([2], [BYTES_LE])],
            s4,
            shard([bytes_chunk(s4[:2]), bytes_chunk(s4[2:])]),
        )
    )

    invalid: list[Json] = []

    def bad_dtype(vid: str, rule: str, data_type: Json, note: str, schema: str = "refuses") -> None:
        invalid.append(refused(vid, f"SPEC 1.3/{rule}", note, data_type=data_type, schema=schema))

    def bad_text(vid: str, rule: str, text: str, note: str, schema: str = "accepts") -> None:
        invalid.append(refused(vid, f"SPEC 1.3/{rule}", note, data_type_text=text, schema=schema))

    bad_dtype("dtype-bare-string", "1", "ndarray", "the bare string form")
    bad_dtype("dtype-configuration-missing", "1", {"name": "ndarray"}, "no configuration")
    bad_dtype(
        "dtype-extra-member",
        "1",
        {**dt("float32", [None]), "must_understand": False},
        "a member besides name and configuration",
    )
    bad_dtype(
        "dtype-legacy-0.1",
        "1",
        {"name": "vlen-ndarray", "configuration": {"dtype": "float32", "inner_shape": [2]}},
        "zarr-vlen-ndarray 0.1.x's spelling (SPEC 2.6 says how to rewrite it)",
    )
    bad_dtype("dtype-configuration-null", "2", {"name": "ndarray", "configuration": None}, "null")
    bad_dtype("dtype-configuration-empty", "2", {"name": "ndarray", "configuration": {}}, "empty")
    bad_dtype(
        "dtype-configuration-no-dtype",
        "2",
        {"name": "ndarray", "configuration": {"shape": [None]}},
        "dtype missing",
    )
    bad_dtype(
        "dtype-configuration-no-shape",
        "2",
        {"name": "ndarray", "configuration": {"dtype": "float32"}},
        "shape missing",
    )
    bad_dtype(
        "dtype-configuration-extra",
        "2",
        {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [None], "order": "C"}},
        "a member besides dtype and shape",
    )
    bad_dtype(
        "dtype-configuration-inner-shape",
        "2",
        {
            "name": "ndarray",
            "configuration": {"dtype": "float32", "shape": [None], "inner_shape": [2]},
        },
        "0.1.x's inner_shape beside shape",
    )
    for vid, value in (
        ("big-endian", ">f4"),
        ("little-endian-prefix", "<f4"),
        ("generic", "float"),
        ("numpy-code", "f4"),
        ("capitalised", "Float32"),
        ("null", None),
        ("object", "object"),
        ("string", "str"),
    ):
        bad_dtype(f"dtype-{vid}", "3", dt(value, [None]), f"dtype {value!r}")
    shape_json: Json
    for vid, shape_json in (
        ("empty", []),
        ("string", "[null, 2]"),
        ("null", None),
        ("integer", 2),
    ):
        bad_dtype(f"shape-{vid}", "4", dt("float32", shape_json), f"shape {json.dumps(shape_json)}")
    for vid, shape_json in (
        ("zero", [0]),
        ("zero-after-null", [None, 0]),
        ("negative", [None, -2]),
        ("fraction", [None, 2.5]),
        ("true", [True]),
        ("false", [None, False]),
        ("string-entry", ["2"]),
        ("nested-list", [[2]]),
    ):
        bad_dtype(f"shape-{vid}", "5", dt("float32", shape_json), f"shape {json.dumps(shape_json)}")
    bad_text(
        "shape-integral-fraction",
        "5",
        '{"name": "ndarray", "configuration": {"dtype": "float32", "shape": [2.0]}}',
        "2.0 is written with a fraction (the rule is on the text)",
    )
    bad_text(
        "shape-integral-fraction-after-null",
        "5",
        '{"name": "ndarray", "configuration": {"dtype": "float32", "shape": [null, 2.0]}}',
        "2.0 after a variable axis",
    )
    bad_text(
        "shape-one-point-zero",
        "5",
        '{"name": "ndarray", "configuration": {"dtype": "uint8", "shape": [1.0]}}',
        "1.0",
    )
    bad_text(
        "shape-exponent",
        "5",
        '{"name": "ndarray", "configuration": {"dtype": "uint8", "shape": [null, 2e0]}}',
        "2e0 is written with an exponent",
    )
    bad_dtype(
        "shape-extent-2^53",
        "6",
        dt("uint8", [None, 2**53]),
        "a fixed extent above 2^53 - 1",
    )
    bad_dtype(
        "shape-fixed-part-2^63-bytes",
        "6",
        dt("float64", [2**30, 2**30]),
        "fixed extents of 2^60 float64 items: 2^63 bytes, above the element-size limit",
        schema="accepts",
    )
    bad_dtype(
        "shape-fixed-part-overflows",
        "6",
        dt("uint8", [2**32, 2**32]),
        "fixed extents multiplying to 2^64",
        schema="accepts",
    )

    def bad_fill(
        vid: str, rule: str, dtype: str, pattern: list[Json], fill: Json, note: str
    ) -> None:
        invalid.append(
            refused(
                vid,
                f"SPEC 1.5/{rule}",
                note,
                zarr_json=zarr_json(dt(dtype, pattern), fill, [serializer(pattern)], [1], [1]),
                schema="refuses" if rule in "12" else "accepts",
            )
        )

    bad_fill("fill-number", "1", "float32", [None], 0, "a number")
    bad_fill("fill-null", "1", "float32", [None], None, "null")
    bad_fill("fill-array", "1", "float32", [None], [1.0], "an array")
    bad_fill("fill-not-base64", "2", "float32", [None], "%%%", "not base64")
    bad_fill("fill-padding-missing", "2", "float32", [None], "AACAPw", "padding missing")
    bad_fill("fill-padding-short", "2", "uint8", [None], "Bw=", "padding short")
    bad_fill("fill-whitespace", "2", "float32", [None], "AACA Pw==", "whitespace inside")
    bad_fill("fill-newline", "2", "float32", [None], "AACAPw==\n", "a trailing newline")
    bad_fill("fill-pad-bits", "2", "uint8", [None], "Bx==", "pad bits not zero")
    bad_fill("fill-url-safe", "2", "uint8", [None], "-_8=", "URL-safe alphabet")
    bad_fill(
        "fill-not-whole-rows",
        "3",
        "float32",
        [None, 2],
        b64(u32(0)),
        "4 bytes is not a whole number of 8-byte rows",
    )
    bad_fill("fill-fixed-empty", "3", "int16", [3], "", "all-fixed: must be 6 bytes")
    bad_fill("fill-fixed-long", "3", "int16", [3], b64(bytes(8)), "all-fixed: must be 6 bytes")
    bad_fill(
        "fill-two-variable-not-empty",
        "3",
        "float64",
        [None, None],
        b64(bytes(8)),
        "two variable axes: only the empty string",
    )
    bad_fill("fill-bool-byte", "4", "bool", [None], b64(b"\x02"), "bool byte 0x02")

    def bad_codecs(
        vid: str, rule: str, dtype: str, pattern: list[Json], codecs: Json, note: str
    ) -> None:
        fill = "" if None in pattern else b64(bytes(item(dtype).itemsize * int(np.prod(pattern))))
        doc = zarr_json(dt(dtype, pattern), fill, codecs, [2], [2])
        invalid.append(refused(vid, f"SPEC 1.6/{rule}", note, zarr_json=doc))

    vlen_bytes = {"name": "vlen-bytes", "configuration": {}}
    bad_codecs("codec-vlen-bytes", "1", "float32", [None, 2], [vlen_bytes], "vlen-bytes")
    bad_codecs("codec-vlen-bytes-fixed", "1", "uint8", [4], [vlen_bytes], "vlen-bytes, all-fixed")
    bad_codecs(
        "codec-vlen-utf8",
        "1",
        "uint8",
        [None],
        [{"name": "vlen-utf8", "configuration": {}}],
        "vlen-utf8",
    )
    bad_codecs(
        "codec-vlen-bytes-in-shard",
        "1",
        "float32",
        [None],
        [sharding([1], [vlen_bytes])],
        "vlen-bytes inside sharding_indexed",
    )
    bad_codecs("bytes-variable-pattern", "2", "float32", [None, 2], [BYTES_LE], "bytes, [null, 2]")
    bad_codecs(
        "bytes-variable-pattern-in-shard",
        "2",
        "int8",
        [2, None],
        [sharding([1], [BYTES_LE])],
        "bytes inside sharding_indexed, [2, null]",
    )
    bad_codecs(
        "bytes-big-endian",
        "3",
        "int16",
        [2],
        [{"name": "bytes", "configuration": {"endian": "big"}}],
        "endian big",
    )
    bad_codecs(
        "bytes-big-endian-one-byte",
        "3",
        "uint8",
        [2],
        [{"name": "bytes", "configuration": {"endian": "big"}}],
        "endian big, even for 1-byte items",
    )
    bad_codecs(
        "bytes-no-endian",
        "3",
        "int16",
        [2],
        [{"name": "bytes", "configuration": {}}],
        "endian absent for 2-byte items",
    )
    bad_codecs(
        "bytes-no-configuration", "3", "float32", [2], [{"name": "bytes"}], "no configuration"
    )
    bad_codecs(
        "bytes-no-endian-in-shard",
        "3",
        "int16",
        [2],
        [sharding([1], [{"name": "bytes", "configuration": {}}])],
        "endian absent inside sharding_indexed",
    )
    bad_codecs(
        "codec-array-to-array",
        "4",
        "int16",
        [2],
        [{"name": "numcodecs.delta", "configuration": {"dtype": "<i2"}}, BYTES_LE],
        "an array -> array codec that computes on numbers",
    )
    bad_codecs(
        "codec-array-to-array-in-shard",
        "4",
        "int16",
        [2],
        [sharding([1], [{"name": "numcodecs.delta", "configuration": {"dtype": "<i2"}}, BYTES_LE])],
        "the same inside sharding_indexed",
    )

    def bad_chunk(
        vid: str, rule: str, dtype: str, pattern: list[int], raw: bytes, note: str
    ) -> None:
        fill = b64(bytes(item(dtype).itemsize * int(np.prod(pattern))))
        doc = zarr_json(dt(dtype, pattern), fill, [BYTES_LE], [2], [2])
        invalid.append(
            refused(
                vid, f"SPEC 1.6/{rule}", note, zarr_json=doc, chunk_key="c/0", chunk_hex=raw.hex()
            )
        )

    bad_chunk("bytes-chunk-short", "5", "int16", [2], bytes(6), "6 bytes, 2 elements need 8")
    bad_chunk("bytes-chunk-long", "5", "int16", [2], bytes(9), "a trailing byte")
    bad_chunk("bytes-chunk-bool", "6", "bool", [2], b"\x01\x00\x00\x02", "bool byte 0x02")
    return {"valid": valid, "invalid": invalid}


# ---------------------------------------------------------------------------- vlen-ndarray.json


def vlen_vectors() -> dict[str, list[Json]]:
    valid: list[Json] = []

    def ok(
        vid: str, dtype: str, pattern: list[Json], cells: list[Json], note: str, **kw: Json
    ) -> None:
        shape = kw.pop("shape", None)
        fill = kw.pop("fill", "")
        codecs = kw.pop("codecs", [VLEN])
        chunk = kw.pop("chunk", None) or vlen_chunk(cells)
        valid.append(
            array_vector(vid, note, dt(dtype, pattern), fill, codecs, cells, chunk, shape, **kw)
        )

    ok(
        "example-2.7.1",
        "float32",
        [None, 2],
        [cell("float32", [1.0, 2.0], [1, 2]), cell("float32", [], [0, 2])],
        "SPEC 2.7.1",
    )
    ok(
        "uint64-rank-1",
        "uint64",
        [None],
        [cell("uint64", [1, 2**64 - 1], [2]), cell("uint64", [], [0]), cell("uint64", [5], [1])],
        "rank-1 elements",
    )
    ok(
        "int16-2d-chunk",
        "int16",
        [None],
        [
            cell("int16", [1], [1]),
            cell("int16", [2, 3], [2]),
            cell("int16", [], [0]),
            cell("int16", [-1], [1]),
        ],
        "SPEC 2.7.2: elements in C order (0,0) (0,1) (1,0) (1,1)",
        shape=[2, 2],
    )
    ok(
        "bool",
        "bool",
        [None],
        [cell("bool", [True, False], [2]), cell("bool", [True], [1])],
        "bool bytes 0x00 / 0x01",
    )
    ok(
        "float64-two-fixed-axes",
        "float64",
        [None, 3, 2],
        [cell("float64", np.arange(6), [1, 3, 2])],
        "k = 2 fixed trailing axes",
    )
    ok(
        "complex128",
        "complex128",
        [None],
        [cell("complex128", [1 + 2j, -0.5j], [2])],
        "complex: real part then imaginary part",
    )
    ok(
        "configuration-omitted",
        "float32",
        [None, 2],
        [cell("float32", [1.0, 2.0], [1, 2]), cell("float32", [], [0, 2])],
        'codec metadata {"name": "vlen-ndarray"} (SPEC 2.2)',
        codecs=[{"name": "vlen-ndarray"}],
    )
    fill = cell("float32", [1.0, 2.0], [1, 2])
    other = cell("float32", [3.0, 4.0, 5.0, 6.0], [2, 2])
    ok(
        "missing-element-is-fill",
        "float32",
        [None, 2],
        [fill, other],
        "a missing element (null in cells_written) is written as the fill element, here a "
        "non-empty one (SPEC 1.5, 2.4)",
        fill=b64(cell_bytes(fill)),
        cells_written=[None, other],
    )
    nan = struct.pack("<f", float("nan"))  # the quiet NaN 0x7fc00000
    other_nan = struct.pack("<I", 0x7FC00001)
    for vid, fill_raw, values, may_omit, note in (
        ("equal-nan", nan, [nan, nan], True, "every element has the fill's bytes: NaN == NaN"),
        ("other-nan", nan, [other_nan, nan], False, "a NaN with other bits is not the fill"),
        (
            "negative-zero",
            struct.pack("<f", 0.0),
            [struct.pack("<f", -0.0)] * 2,
            False,
            "-0.0 is not 0.0",
        ),
    ):
        cells = [{"shape": [1], "hex": v.hex()} for v in values]
        ok(
            f"elision-{vid}",
            "float32",
            [None],
            cells,
            f"{note} (SPEC 1.5: equal elements have the same shape and bytes); may_omit says "
            "whether a writer may leave the chunk out",
            fill=b64(fill_raw),
            may_omit=may_omit,
        )
    t23 = [cell("int16", list(range(r + c)), [r + c]) for r in range(2) for c in range(3)]
    order = [r * 3 + c for c in range(3) for r in range(2)]
    ok(
        "transpose",
        "int16",
        [None],
        t23,
        "transpose [1, 0] of a (2, 3) chunk: elements framed in the transposed C order; cells "
        "are listed in the array's C order (SPEC 1.6)",
        shape=[2, 3],
        codecs=[transpose(1, 0), VLEN],
        chunk=vlen_chunk([t23[i] for i in order]),
    )
    s4 = [cell("uint8", list(range(i)), [i]) for i in (1, 2, 3, 4)]
    ok(
        "in-shard",
        "uint8",
        [None],
        s4,
        "sharding_indexed holding two (2,) chunks of vlen-ndarray, index at the end (SPEC 1.6)",
        codecs=[sharding([2], [VLEN])],
        chunk=shard([vlen_chunk(s4[:2]), vlen_chunk(s4[2:])]),
    )

    invalid: list[Json] = []
    f32 = dt("float32", [None, 2])
    base = vlen_chunk([cell("float32", [1.0, 2.0], [1, 2]), cell("float32", [], [0, 2])])

    def bad(vid: str, rule: str, raw: bytes, note: str, data_type: Json = f32, n: int = 2) -> None:
        doc = zarr_json(data_type, "", [VLEN], [n], [n])
        invalid.append(
            refused(
                vid, f"SPEC 2.5/{rule}", note, zarr_json=doc, chunk_key="c/0", chunk_hex=raw.hex()
            )
        )

    bad("chunk-empty", "1", b"", "no element count")
    bad("chunk-count-cut", "1", bytes.fromhex("020000"), "element count cut short")
    bad("chunk-prefix-missing", "1", base[:-4], "the second length prefix is missing")
    bad("chunk-count-low", "2", b"\x01" + base[1:], "count 1, the chunk holds 2")
    bad("chunk-count-high", "2", b"\x03" + base[1:], "count 3, the chunk holds 2")
    bad("chunk-count-huge", "2", u32(U32_MAX) + base[4:], "count 2^32 - 1 (must not allocate)")
    # One element: no length prefix follows the one running past the end (that would be rule 1).
    one = u32(1, 8) + bytes(2)
    bad("chunk-payload-past-end", "3", one, "a length of 8 with 2 bytes left", n=1)
    huge = u32(1, 2**31 - 1)
    bad("chunk-payload-huge", "3", huge, "a length of 2^31 - 1 (must not allocate)", n=1)
    bad(
        "chunk-not-whole-rows",
        "4",
        vlen_chunk([{"hex": "00" * 4}, {"hex": ""}]),
        "4 bytes, rows of 8",
    )
    bad("chunk-trailing-byte", "5", base + b"\x00", "a byte after the last element")
    bad(
        "chunk-bool-byte",
        "6",
        vlen_chunk([{"hex": "0102"}]),
        "bool byte 0x02",
        data_type=dt("bool", [None]),
        n=1,
    )

    def bad_meta(
        vid: str, rule: str, codec: Json, note: str, schema: str | None = "refuses"
    ) -> None:
        doc = zarr_json(f32, "", [codec], [1], [1])
        vec = refused(vid, f"SPEC 2.2/{rule}", note, zarr_json=doc)
        if schema:
            vec["schema"] = schema
        invalid.append(vec)

    bad_meta("codec-bare-string", "1", "vlen-ndarray", 'the bare string "vlen-ndarray"')
    bad_meta(
        "codec-extra-member", "1", {**VLEN, "extra": 1}, "a member besides name, configuration"
    )
    bad_meta(
        "codec-configuration-keys",
        "2",
        {"name": "vlen-ndarray", "configuration": {"dtype": "float32"}},
        "configuration not empty",
    )
    bad_meta(
        "codec-configuration-null", "2", {"name": "vlen-ndarray", "configuration": None}, "null"
    )
    bad_meta("codec-configuration-array", "2", {"name": "vlen-ndarray", "configuration": []}, "[]")

    def bad_pattern(
        vid: str, dtype: str, pattern: list[Json], codecs: list[Json], note: str
    ) -> None:
        fill = "" if None in pattern else b64(bytes(item(dtype).itemsize * int(np.prod(pattern))))
        doc = zarr_json(dt(dtype, pattern), fill, codecs, [1], [1])
        invalid.append(refused(vid, "SPEC 2.3/1", note, zarr_json=doc))

    bad_pattern("pattern-not-leading", "float32", [2, None], [VLEN], "[2, null]")
    bad_pattern("pattern-two-variable", "float32", [None, None], [VLEN], "[null, null]")
    bad_pattern("pattern-fixed", "int16", [3], [VLEN], "[3]: all fixed")
    bad_pattern(
        "pattern-not-leading-in-shard",
        "uint8",
        [2, None],
        [sharding([1], [VLEN])],
        "[2, null], vlen-ndarray inside sharding_indexed",
    )
    return {"valid": valid, "invalid": invalid}


# ---------------------------------------------------------------------------- ragged-ndarray.json


def ragged_vectors() -> dict[str, list[Json]]:
    valid: list[Json] = []

    def ok(
        vid: str, dtype: str, pattern: list[Json], cells: list[Json], note: str, **kw: Json
    ) -> None:
        shape = kw.pop("shape", None)
        fill = kw.pop("fill", "")
        codecs = kw.pop("codecs", [RAGGED])
        chunk = kw.pop("chunk", None) or ragged_chunk(dtype, pattern, cells)
        valid.append(
            array_vector(vid, note, dt(dtype, pattern), fill, codecs, cells, chunk, shape, **kw)
        )

    ok(
        "example-5.6",
        "float32",
        [None, None],
        [cell("float32", [1, 2, 3, 4, 5, 6], [2, 3]), cell("float32", [], [0, 5])],
        "SPEC 5.6: extents (2, 3) and (0, 5), no padding",
    )
    ok(
        "int16-2x2-chunk",
        "int16",
        [2, None],
        [
            cell("int16", [1, 2], [2, 1]),
            cell("int16", [], [2, 0]),
            cell("int16", [3, 4, 5, 6, -1, -2], [2, 3]),
            cell("int16", [7, 8], [2, 1]),
        ],
        "[2, null] in a (2, 2) chunk, elements in C order",
        shape=[2, 2],
    )
    ok(
        "float64-padding",
        "float64",
        [None, 3, None],
        [cell("float64", [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], [1, 3, 2])],
        "SPEC 5.6: 12 bytes of header and table, 4 bytes of padding",
    )
    ok(
        "uint8-no-padding",
        "uint8",
        [None],
        [cell("uint8", [1, 2, 3], [3]), cell("uint8", [], [0]), cell("uint8", [255], [1])],
        "[null] (also served by vlen-ndarray), 1-byte items: no padding",
    )
    ok(
        "bool",
        "bool",
        [None, None],
        [cell("bool", [True, False, True, True], [2, 2])],
        "bool bytes 0x00 / 0x01",
    )
    ok(
        "complex128-alignment",
        "complex128",
        [None, None],
        [cell("complex128", [1 + 2j], [1, 1]), cell("complex128", [], [0, 0])],
        "16-byte items align to 8",
    )
    ok(
        "empty-element-large-extents",
        "float32",
        [None, None, None],
        [cell("float32", [], [0, U32_MAX, 2**20])],
        "an empty element within the element-size limit: (0, 2^32 - 1, 2^20) (SPEC 5.4)",
    )
    ok(
        "configuration-omitted",
        "float32",
        [None, None],
        [cell("float32", [1], [1, 1])],
        'codec metadata {"name": "ragged-ndarray"} (SPEC 5.1)',
        codecs=[{"name": "ragged-ndarray"}],
    )
    fill = cell("int8", [1, 2], [2, 1])
    other = cell("int8", [3, 4, 5, 6], [2, 2])
    ok(
        "missing-element-is-fill",
        "int8",
        [2, None],
        [other, fill],
        "a missing element (null in cells_written) is written as the fill element (SPEC 1.5)",
        fill=b64(cell_bytes(fill)),
        cells_written=[other, None],
    )
    ok(
        "elision-empty-shapes",
        "float32",
        [None, None],
        [cell("float32", [], [0, 5]), cell("float32", [], [0, 0])],
        "no bytes, but (0, 5) is not the (0, 0) fill element: the chunk must be written "
        "(SPEC 1.5: equal elements have the same shape)",
        may_omit=False,
    )
    ok(
        "elision-all-fill",
        "float32",
        [None, None],
        [cell("float32", [], [0, 0]), cell("float32", [], [0, 0])],
        "every element is the fill element: a writer may leave the chunk out",
        may_omit=True,
    )
    s4 = [cell("uint16", list(range(2 * i)), [i, 2]) for i in (1, 0, 2, 1)]
    ok(
        "in-shard",
        "uint16",
        [None, 2],
        s4,
        "sharding_indexed holding two (2,) chunks of ragged-ndarray, index at the end (SPEC 1.6)",
        codecs=[sharding([2], [RAGGED])],
        chunk=shard(
            [ragged_chunk("uint16", [None, 2], s4[:2]), ragged_chunk("uint16", [None, 2], s4[2:])]
        ),
    )

    invalid: list[Json] = []

    def bad(
        vid: str, rule: str, dtype: str, pattern: list[Json], n: int, raw: bytes, note: str
    ) -> None:
        doc = zarr_json(dt(dtype, pattern), "", [RAGGED], [n], [n])
        invalid.append(
            refused(
                vid, f"SPEC 5.4/{rule}", note, zarr_json=doc, chunk_key="c/0", chunk_hex=raw.hex()
            )
        )

    nn = [None, None]
    bad("chunk-short-header", "1", "float32", nn, 1, b"\x01\x00", "2 bytes")
    bad("chunk-count-mismatch", "2", "float32", nn, 2, u32(1, 0, 0), "count 1, the chunk holds 2")
    bad("chunk-count-huge", "2", "float32", nn, 2, u32(U32_MAX, 0, 0), "count 2^32 - 1")
    bad("chunk-table-truncated", "3", "float32", nn, 2, u32(2, 0, 0, 0), "3 of 4 extents")
    bad("chunk-padding-truncated", "3", "float64", nn, 1, u32(1, 0, 0), "padding cut off")
    bad("chunk-padding-nonzero", "4", "float64", nn, 1, u32(1, 0, 0, 7), "padding byte 0x07")
    bad(
        "chunk-extents-exceed-bytes",
        "5",
        "float32",
        nn,
        1,
        u32(1, U32_MAX, U32_MAX) + bytes(4),
        "extents (2^32 - 1)^2: far more values than present (computed without overflow)",
    )
    bad(
        "chunk-values-short",
        "5",
        "int16",
        [2, None],
        2,
        u32(2, 1, 1) + bytes.fromhex("0100") * 3,
        "6 value bytes, the table describes 8",
    )
    bad(
        "chunk-values-long",
        "6",
        "int16",
        [2, None],
        1,
        u32(1, 1) + bytes.fromhex("0100") * 3,
        "6 value bytes, the table describes 4",
    )
    bad("chunk-bool-byte", "7", "bool", nn, 1, u32(1, 1, 2) + b"\x01\x02", "bool byte 0x02")
    bad(
        "chunk-element-size-limit-float32",
        "8",
        "float32",
        [None, None, None],
        1,
        u32(1, 0, U32_MAX, U32_MAX),
        "an empty (0, 2^32 - 1, 2^32 - 1) float32 element: 4 (2^32 - 1)^2 bytes of non-zero "
        "extents, past 2^63 - 1",
    )
    bad(
        "chunk-element-size-limit-uint8",
        "8",
        "uint8",
        [None, None, None],
        1,
        u32(1, U32_MAX, U32_MAX, 0),
        "an empty (2^32 - 1, 2^32 - 1, 0) uint8 element: (2^32 - 1)^2 bytes, past 2^63 - 1",
    )

    def bad_meta(vid: str, rule: str, codec: Json, note: str) -> None:
        doc = zarr_json(dt("float32", nn), "", [codec], [1], [1])
        invalid.append(refused(vid, f"SPEC 5.1/{rule}", note, zarr_json=doc, schema="refuses"))

    bad_meta("codec-bare-string", "1", "ragged-ndarray", 'the bare string "ragged-ndarray"')
    bad_meta(
        "codec-extra-member", "1", {**RAGGED, "extra": 1}, "a member besides name, configuration"
    )
    bad_meta(
        "codec-configuration-keys",
        "2",
        {"name": "ragged-ndarray", "configuration": {"k": 2}},
        "not empty",
    )
    bad_meta(
        "codec-configuration-null", "2", {"name": "ragged-ndarray", "configuration": None}, "null"
    )
    for vid, dtype, pattern, codecs, note in (
        ("pattern-fixed", "int16", [3], [RAGGED], "[3]: all fixed"),
        ("pattern-fixed-in-shard", "uint8", [2, 2], [sharding([1], [RAGGED])], "inside sharding"),
    ):
        zeros = b64(bytes(item(dtype).itemsize * int(np.prod(pattern))))
        doc = zarr_json(dt(dtype, pattern), zeros, codecs, [1], [1])
        invalid.append(refused(vid, "SPEC 5.2/1", note, zarr_json=doc))
    return {"valid": valid, "invalid": invalid}


# ---------------------------------------------------------------------------- nd_arrow.json

EXT = {b"ARROW:extension:metadata": b'{"version":1}', b"ARROW:extension:name": b"nd_arrow.array"}
GLOBAL = {
    b"ARROW:extension:metadata": b'{"version":1}',
    b"ARROW:extension:name": b"nd_arrow.global_attributes",
}


def ext(metadata: bytes) -> dict[bytes, bytes]:
    return {b"ARROW:extension:metadata": metadata, b"ARROW:extension:name": b"nd_arrow.array"}


def lst(
    offsets: list[int],
    values: pa.Array,
    item_nullable: bool,
    name: str = "item",
    large: bool = False,
) -> pa.Array:
    field = pa.field(name, values.type, nullable=item_nullable)
    if large:
        return pa.LargeListArray.from_arrays(
            pa.array(offsets, pa.int64()), values, type=pa.large_list(field)
        )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=pa.list_(field))


def nd_storage(
    values: pa.Array,
    value_offsets: list[int],
    names: list[str | None] | pa.Array,
    sizes: list[int | None] | pa.Array,
    dim_offsets: list[int],
    attrs: pa.StructArray | None = None,
    null_rows: list[bool] | None = None,
    *,
    children: list[pa.Array] | None = None,
    fields: list[pa.Field] | None = None,
) -> pa.StructArray:
    """The storage struct of FORMAT.md §3, each child built by hand (``children``/``fields``
    replace them wholesale, for storage that breaks a rule)."""
    if children is None:
        names_arr = names if isinstance(names, pa.Array) else pa.array(names, pa.string())
        sizes_arr = sizes if isinstance(sizes, pa.Array) else pa.array(sizes, pa.uint32())
        children = [
            lst(value_offsets, values, True),
            lst(dim_offsets, names_arr, False),
            lst(dim_offsets, sizes_arr, False),
        ]
        fields = [
            pa.field("values", children[0].type, nullable=False),
            pa.field("dim_names", children[1].type, nullable=False),
            pa.field("dim_sizes", children[2].type, nullable=False),
        ]
        if attrs is not None:
            children.append(attrs)
            fields.append(pa.field("attrs", attrs.type, nullable=False))
    mask = pa.array(null_rows, pa.bool_()) if null_rows and any(null_rows) else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def ipc_file(fields: list[pa.Field], arrays: list[pa.Array]) -> str:
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return bytes(sink.getvalue().to_pybytes()).hex()


def offsets_past_child(ipc: str) -> str:
    """The file with its values offsets (0, 5) rewritten to (0, 7): past the 5 items of the child
    (pyarrow's writer and builders refuse such offsets, its IPC reader does not check them)."""
    raw = bytes.fromhex(ipc)
    old, new = u32(0, 5), u32(0, 7)
    for at in (i for i in range(len(raw)) if raw.startswith(old, i)):
        patched = raw[:at] + new + raw[at + len(old) :]
        try:
            table = pa.ipc.open_file(pa.py_buffer(patched)).read_all()
            values = table.column(0).chunk(0).field(0)
        except (pa.ArrowException, OSError):
            continue
        if values.offsets.to_pylist() == [0, 7]:
            return patched.hex()
    raise AssertionError("no values offsets (0, 5) to rewrite")


def column(name: str, storage: pa.Array, metadata: dict[bytes, bytes] | None = None) -> str:
    return ipc_file([pa.field(name, storage.type, metadata=metadata or EXT)], [storage])


def row(names: list[str], sizes: list[int], values: list[Json], attrs: Json = None) -> Json:
    out: dict[str, Json] = {"dim_names": names, "dim_sizes": sizes, "values": values}
    if attrs:
        out["attrs"] = attrs
    return out


def nd_arrow_vectors() -> dict[str, list[Json]]:
    i8 = pa.array([1, 2, 3], pa.int8())
    x3 = row(["x"], [3], [1, 2, 3])
    valid: list[Json] = []

    def ok(
        vid: str,
        note: str,
        name: str,
        storage: pa.Array,
        value_type: str,
        rows: list[Json],
        **kw: Json,
    ) -> None:
        ipc = column(name, storage, kw.pop("metadata", None))
        vec = {"id": vid, "note": note, "ipc_file_hex": ipc, "column": name}
        valid.append({**vec, "value_type": value_type, "rows": rows, "writer": False, **kw})

    # FORMAT §11's example, a null row, a rank-0 row whose value is null, a null element.
    attrs = pa.StructArray.from_arrays(
        [
            pa.array(["K", None, "C", None], pa.string()),
            pa.array([[0.0, 2.0], None, None, None], pa.list_(pa.float64())),
        ],
        fields=[pa.field("units", pa.string()), pa.field("valid_range", pa.list_(pa.float64()))],
    )
    values = pa.array([0.0, 0.1, 0.2, 1.0, 1.1, 1.2, None, 1.5, None, 2.5], pa.float64())
    nulls = [False, True, False, False]
    example = nd_storage(
        values, [0, 6, 6, 7, 10], ["time", "lat", "x"], [2, 3, 3], [0, 2, 2, 2, 3], attrs, nulls
    )
    first = row(["time", "lat"], [2, 3], [0.0, 0.1, 0.2, 1.0, 1.1, 1.2])
    first["attrs"] = {"units": "K", "valid_range": [0.0, 2.0]}
    rows = [first, None, row([], [], [None], {"units": "C"}), row(["x"], [3], [1.5, None, 2.5])]
    note = "FORMAT §11's example, a null row, a rank-0 row whose value is null, a null element"
    ok("example", note, "temperature", example, "double", rows, writer=True)
    labels = pa.array(["a", "bc", "x", "y", "z"], pa.string())
    strings = nd_storage(
        labels, [0, 2, 2, 5], ["station", "station", "y", "x"], [2, 0, 1, 3], [0, 1, 2, 4]
    )
    rows = [
        row(["station"], [2], ["a", "bc"]),
        row(["station"], [0], []),
        row(["y", "x"], [1, 3], ["x", "y", "z"]),
    ]
    note = "Utf8 values, no attrs child, an empty (station=0) row, rows of different ranks"
    ok("strings", note, "label", strings, "string", rows, writer=True)
    zeros = nd_storage(
        pa.array([], pa.float32()), [0, 0, 0], ["a", "b", "c"], [U32_MAX, 0, 0], [0, 2, 3]
    )
    rows = [row(["a", "b"], [U32_MAX, 0], []), row(["c"], [0], [])]
    note = "rows with a size 0 have no values; (2^32 - 1, 0) is valid (FORMAT 4/4)"
    ok("zero-sizes", note, "z", zeros, "float", rows, writer=True)

    def children(kind: str, item_name: str = "item", nullable: bool = False) -> pa.StructArray:
        """One (x=3) row of [1, 2, 3] with list children of another kind (FORMAT §3)."""
        names = pa.array(["x"], pa.large_string() if kind == "large" else pa.string())
        parts = [(i8, [0, 3]), (names, [0, 1]), (pa.array([3], pa.uint32()), [0, 1])]
        if kind == "view":
            kids = [
                pa.ListViewArray.from_arrays(
                    pa.array(off[:1], pa.int32()), pa.array([len(a)], pa.int32()), a
                )
                for a, off in parts
            ]
        else:
            kids = [lst(off, a, True, item_name, kind == "large") for a, off in parts]
        keys = ["values", "dim_names", "dim_sizes"]
        fields = [pa.field(k, c.type, nullable=nullable) for k, c in zip(keys, kids, strict=True)]
        return pa.StructArray.from_arrays(kids, fields=fields)

    ok("large-lists", "LargeList children, LargeUtf8 names", "v", children("large"), "int8", [x3])
    ok("list-views", "ListView children", "v", children("view"), "int8", [x3])
    note = "list items named 'element' (Parquet's compliant nested types), nullable children"
    ok("item-names", note, "v", children("list", "element", True), "int8", [x3])
    meta = ext(b'{"version":1,"later":"x"}')
    note = "extension metadata with a key a version-1 reader ignores (FORMAT §2)"
    ok(
        "metadata-extra-key",
        note,
        "v",
        nd_storage(i8, [0, 3], ["x"], [3], [0, 1]),
        "int8",
        [x3],
        metadata=meta,
    )
    garbage = nd_storage(
        pa.array([7, 8, 9], pa.int8()),
        [0, 3, 3],
        ["a", "b", "", "c"],
        [3, 5, 0, 0],
        [0, 1, 4],
        None,
        [False, True],
    )
    note = (
        "a null row's children are ignored: 3 names (one empty) and 3 sizes that do not match "
        "its (absent) values (FORMAT §5)"
    )
    ok("null-row-garbage", note, "v", garbage, "int8", [row(["a"], [3], [7, 8, 9]), None])

    t = nd_storage(
        pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
        [0, 4, 6],
        ["time", "lat", "time", "lat"],
        [2, 2, 1, 2],
        [0, 2, 4],
    )
    lat = nd_storage(
        pa.array([10.0, 20.0], pa.float32()),
        [0, 2, 2],
        ["lat"],
        [2],
        [0, 1, 1],
        None,
        [False, True],
    )
    glob = pa.StructArray.from_arrays(
        [pa.array(["first", "second"], pa.string()), pa.array([2, None], pa.int64())],
        fields=[pa.field("title", pa.string()), pa.field("version", pa.int64())],
    )
    fields = [
        pa.field("t", t.type, metadata=EXT),
        pa.field("lat", lat.type, metadata=EXT),
        pa.field("__global_attrs__", glob.type, metadata=GLOBAL),
    ]
    batches = [
        {
            "arrays": {
                "t": row(["time", "lat"], [2, 2], [1, 2, 3, 4]),
                "lat": row(["lat"], [2], [10.0, 20.0]),
            },
            "attrs": {"title": "first", "version": 2},
            "grid": {"time": 2, "lat": 2},
        },
        {
            "arrays": {"t": row(["time", "lat"], [1, 2], [5, 6])},
            "attrs": {"title": "second"},
            "grid": {"time": 1, "lat": 2},
        },
    ]
    valid.append(
        {
            "id": "dataset",
            "note": "two nd batches as one record batch: a null cell (the second has no lat) "
            "and __global_attrs__ (FORMAT §7)",
            "ipc_file_hex": ipc_file(fields, [t, lat, glob]),
            "value_types": {"t": "int32", "lat": "float"},
            "batches": batches,
            "writer": True,
        }
    )

    invalid: list[Json] = []

    def bad(vid: str, rule: str, kind: str, note: str, ipc: str, name: str = "v") -> None:
        vec = {"id": vid, "rule": f"FORMAT {rule}", "kind": kind, "note": note}
        invalid.append({**vec, "ipc_file_hex": ipc, "column": name})

    good = nd_storage(i8, [0, 3], ["x"], [3], [0, 1])
    for vid, text, note in (
        ("version-fraction", b'{"version":1.0}', "version 1.0: not written as an integer"),
        ("version-exponent", b'{"version":1e0}', "version 1e0"),
        ("version-string", b'{"version":"1"}', 'version "1"'),
        ("version-bool", b'{"version":true}', "version true"),
        ("version-missing", b"{}", "no version"),
        ("not-json", b"version=1", "not JSON"),
        ("not-object", b"[1]", "a JSON array"),
    ):
        bad(f"metadata-{vid}", "2/1", "invalid nd encoding", note, column("v", good, ext(text)))
    ipc = column("v", good, ext(b'{"version":2}'))
    bad("metadata-version-2", "2/2", "not supported", "version 2", ipc)

    v = lst([0, 3], i8, True)
    n = lst([0, 1], pa.array(["x"]), False)
    s = lst([0, 1], pa.array([3], pa.uint32()), False)

    def raw(*named: tuple[str, pa.Array]) -> str:
        """A column of storage children as given, in this order (breaking FORMAT §3 or §4)."""
        kids = [c for _, c in named]
        fields = [pa.field(k, c.type) for k, c in named]
        return column("v", pa.StructArray.from_arrays(kids, fields=fields))

    kind = "invalid nd encoding"
    bad(
        "storage-order",
        "3/1",
        kind,
        "dim_sizes before dim_names",
        raw(("values", v), ("dim_sizes", s), ("dim_names", n)),
    )
    bad("storage-missing-child", "3/1", kind, "no dim_sizes", raw(("values", v), ("dim_names", n)))
    extra = raw(("values", v), ("dim_names", n), ("dim_sizes", s), ("other", n))
    bad("storage-extra-child", "3/1", kind, "a child 'other' after dim_sizes", extra)
    int64 = lst([0, 1], pa.array([3], pa.int64()), False)
    bad(
        "storage-sizes-int64",
        "3/2",
        kind,
        "dim_sizes of Int64",
        raw(("values", v), ("dim_names", n), ("dim_sizes", int64)),
    )
    binary = lst([0, 1], pa.array([b"x"]), False)
    bad(
        "storage-names-binary",
        "3/2",
        kind,
        "dim_names of Binary",
        raw(("values", v), ("dim_names", binary), ("dim_sizes", s)),
    )
    flat = raw(("values", pa.array([1], pa.int8())), ("dim_names", n), ("dim_sizes", s))
    bad("storage-values-not-list", "3/2", kind, "values of Int8, not a list", flat)
    text_attrs = raw(("values", v), ("dim_names", n), ("dim_sizes", s), ("attrs", pa.array(["a"])))
    bad("storage-attrs-not-struct", "3/2", kind, "attrs of Utf8", text_attrs)
    two = lst([0, 2], pa.array(["x", "y"]), False)
    ipc = raw(("values", v), ("dim_names", two), ("dim_sizes", s))
    bad("row-rank-mismatch", "4/1", "invalid dimensions", "2 names, 1 size", ipc)
    null_names = pa.ListArray.from_arrays([0, 0], pa.array([], pa.string()), mask=pa.array([True]))
    ipc = raw(("values", v), ("dim_names", null_names), ("dim_sizes", s))
    bad("row-null-names", "4/2", kind, "a non-null row with a null dim_names list", ipc)
    ipc = column("v", nd_storage(i8, [0, 3], ["x"], pa.array([None], pa.uint32()), [0, 1]))
    bad("row-null-size", "4/2", kind, "a null item in dim_sizes", ipc)
    ipc = column("v", nd_storage(i8, [0, 3], [""], [3], [0, 1]))
    bad("row-empty-name", "4/3", "invalid dimensions", "an empty name", ipc)
    ipc = column("v", nd_storage(i8, [0, 3], ["x", "x"], [3, 1], [0, 2]))
    bad("row-duplicate-name", "4/3", "invalid dimensions", "the name x twice", ipc)
    empty = pa.array([], pa.int8())
    for vid, sizes, note in (
        ("overflow", [U32_MAX] * 3, "sizes (2^32 - 1)^3"),
        (
            "overflow-zero-last",
            [U32_MAX] * 3 + [0],
            "sizes (2^32 - 1, 2^32 - 1, 2^32 - 1, 0), no values: the non-zero sizes overflow",
        ),
        (
            "overflow-zero-first",
            [0] + [U32_MAX] * 3,
            "sizes (0, 2^32 - 1, 2^32 - 1, 2^32 - 1): the same, whatever the order",
        ),
    ):
        names = ["a", "b", "c", "d"][: len(sizes)]
        ipc = column("v", nd_storage(empty, [0, 0], names, sizes, [0, len(sizes)]))
        bad(f"row-{vid}", "4/4", "invalid dimensions", note, ipc)
    ipc = column("v", nd_storage(i8, [0, 3], ["x"], [2], [0, 1]))
    bad("row-shape-mismatch", "4/4", "shape mismatch", "3 values, sizes (2,)", ipc)
    null_values = pa.ListArray.from_arrays([0, 0], i8, mask=pa.array([True]))
    ipc = raw(("values", null_values), ("dim_names", n), ("dim_sizes", s))
    bad("row-null-values", "4/5", kind, "a non-null row with a null values list", ipc)
    ipc = offsets_past_child(
        column("v", nd_storage(pa.array([1, 2, 3, 4, 5], pa.int8()), [0, 5], ["x"], [5], [0, 1]))
    )
    bad("row-offsets-past-child", "4/6", kind, "values offsets 0..9 over 3 items", ipc)
    dup = pa.StructArray.from_arrays(
        [pa.array(["a"]), pa.array(["b"])],
        fields=[pa.field("k", pa.string()), pa.field("k", pa.string())],
    )
    ipc = column("v", nd_storage(i8, [0, 3], ["x"], [3], [0, 1], dup))
    bad("attrs-duplicate-key", "6/1", kind, "the key k twice", ipc)

    one = nd_storage(pa.array([1, 2], pa.int32()), [0, 2], ["time"], [2], [0, 1])
    three = nd_storage(pa.array([1, 2, 3], pa.int32()), [0, 3], ["time"], [3], [0, 1])
    title = pa.StructArray.from_arrays([pa.array(["a"])], fields=[pa.field("title", pa.string())])
    t_field = pa.field("t", one.type, metadata=EXT)
    version2 = {**GLOBAL, b"ARROW:extension:metadata": b'{"version":2}'}
    for vid, rule, kind_, note, fields, arrays in (
        (
            "foreign-column",
            "7/1",
            "schema mismatch",
            "a plain Int64 column",
            [t_field, pa.field("n", pa.int64())],
            [one, pa.array([1])],
        ),
        (
            "two-global-columns",
            "7/1",
            "schema mismatch",
            "two global-attributes columns",
            [
                t_field,
                pa.field("__global_attrs__", title.type, metadata=GLOBAL),
                pa.field("g2", title.type, metadata=GLOBAL),
            ],
            [one, title, title],
        ),
        (
            "reserved-name",
            "7/2",
            "invalid argument",
            "an nd column named __global_attrs__",
            [pa.field("__global_attrs__", one.type, metadata=EXT)],
            [one],
        ),
        (
            "grid-mismatch",
            "7/3",
            "shape mismatch",
            "time has size 2 in t, 3 in s",
            [t_field, pa.field("s", three.type, metadata=EXT)],
            [one, three],
        ),
        (
            "global-version-2",
            "7/4",
            "not supported",
            "__global_attrs__ of version 2",
            [t_field, pa.field("__global_attrs__", title.type, metadata=version2)],
            [one, title],
        ),
        (
            "global-not-struct",
            "7/4",
            "schema mismatch",
            "__global_attrs__ of Utf8",
            [t_field, pa.field("__global_attrs__", pa.string(), metadata=GLOBAL)],
            [one, pa.array(["a"])],
        ),
    ):
        bad(f"dataset-{vid}", rule, kind_, note, ipc_file(fields, arrays), name="")
    return {"valid": valid, "invalid": invalid}


# ---------------------------------------------------------------------------- files and checks

FILES = {
    "ndarray": ("zarr data type", "SPEC.md Part 1", ndarray_vectors),
    "vlen-ndarray": ("zarr codec", "SPEC.md Part 2", vlen_vectors),
    "ragged-ndarray": ("zarr codec", "SPEC.md Part 5", ragged_vectors),
    "nd_arrow": ("arrow extension type", "FORMAT.md", nd_arrow_vectors),
}

#: Copies of these files that packages ship in their sdists (their tests never read outside the
#: package folder); written and checked here with the originals, so they cannot drift.
COPIES = {
    "ndarray": ROOT / "packages/ndarray-dtype/tests/golden/registry",
    "vlen-ndarray": ROOT / "packages/vlen-ndarray-codec/tests/golden/registry",
    "ragged-ndarray": ROOT / "packages/ragged-ndarray-codec/tests/golden/registry",
    "nd_arrow": ROOT / "packages/nd-arrow/tests/golden/registry",
}
#: Test files shared by the zarr packages: the original, and its copies (package-unique names).
COPIED_FILES = {
    HERE.parent / "runner.py": [
        COPIES[name] / "runner.py" for name in ("ndarray", "vlen-ndarray", "ragged-ndarray")
    ],
    ROOT / "tools/nox/test_support.py": [
        ROOT / "packages/ndarray-dtype/tests/_zdt_support.py",
        ROOT / "packages/vlen-ndarray-codec/tests/_zvn_support.py",
        ROOT / "packages/ragged-ndarray-codec/tests/_zrn_support.py",
        ROOT / "packages/ndarray-tool/tests/_zt_support.py",
    ],
}


def build() -> dict[str, dict[str, Json]]:
    out = {}
    for name, (kind, spec, make) in FILES.items():
        vectors = make()
        out[name] = {
            "extension": name,
            "kind": kind,
            "specification": spec,
            "revision": REVISION,
            "layout": "registry/README.md",
            "valid": vectors["valid"],
            "invalid": vectors["invalid"],
        }
    return out


def dump(value: Json) -> str:
    return json.dumps(value, indent=1) + "\n"


def numbered_rules() -> dict[str, str]:
    """Every numbered rule of SPEC.md and FORMAT.md: ``"SPEC 2.5/4"`` -> the table row's text."""
    rules: dict[str, str] = {}
    for doc, heading in (
        ("SPEC", r"^###? (?:Part \d+\. )?(\d+\.\d+) "),
        ("FORMAT", r"^## (\d+)\. "),
    ):
        section, in_table = None, False
        for line in (ROOT / f"{doc}.md").read_text(encoding="utf-8").splitlines():
            text = line.strip()
            found = re.match(heading, line)
            if found:
                section, in_table = found.group(1), False
            elif text.startswith("| # |"):
                in_table = True
            elif in_table and (m := re.match(r"\| (\d+) \|(.*)", text)):
                rules[f"{doc} {section}/{m.group(1)}"] = m.group(2)
            elif not text.startswith("|"):
                in_table = False
    return rules


def check_rules(files: dict[str, dict[str, Json]]) -> None:
    """Every numbered rule has an invalid vector; every vector names a rule (and for nd_arrow one
    of the rule's error kinds); ids are unique within a file."""
    rules = numbered_rules()
    assert len(rules) > 40, f"found only {len(rules)} numbered rules: is the table format intact?"
    named: set[str] = set()
    for name, doc in files.items():
        ids = [v["id"] for v in doc["valid"] + doc["invalid"]]
        assert len(ids) == len(set(ids)), f"{name}: duplicate ids"
        for vec in doc["invalid"]:
            assert vec["rule"] in rules, f"{name} {vec['id']}: no rule {vec['rule']}"
            if "kind" in vec:
                assert vec["kind"] in rules[vec["rule"]], f"{name} {vec['id']}: kind"
            named.add(vec["rule"])
    missing = sorted(set(rules) - named)
    assert not missing, f"numbered rules without an invalid vector: {missing}"


def cross_check(files: dict[str, dict[str, Json]]) -> None:
    """Valid vlen-ndarray chunks equal numcodecs VLenBytes of the cells' bytes (SPEC 2.6)."""
    try:
        import numcodecs
    except ImportError:
        return
    vlen = numcodecs.VLenBytes()
    for vec in files["vlen-ndarray"]["valid"]:
        if vec["zarr_json"]["codecs"] != [VLEN]:
            continue
        cells = np.empty(len(vec["cells"]), dtype=object)
        cells[:] = [cell_bytes(c) for c in vec["cells"]]
        assert bytes(vlen.encode(cells)).hex() == vec["chunk_hex"], vec["id"]


def check_schemas(files: dict[str, dict[str, Json]]) -> None:
    """Metadata vectors against the registry schemas (needs jsonschema): valid vectors pass every
    schema that applies; an invalid vector's ``schema`` says whether they refuse or accept it."""
    try:
        import jsonschema
    except ImportError:
        return
    root = HERE.parent
    cls = jsonschema.Draft202012Validator
    schemas = {
        "data_type": json.loads((root / "data-types/ndarray/schema.json").read_text()),
        "vlen-ndarray": json.loads((root / "codecs/vlen-ndarray/schema.json").read_text()),
        "ragged-ndarray": json.loads((root / "codecs/ragged-ndarray/schema.json").read_text()),
    }
    for schema in schemas.values():
        cls.check_schema(schema)
    dtype_v = cls(schemas["data_type"])
    fill_v = cls(schemas["data_type"]["$defs"]["fill_value"])
    codec_v = {name: cls(schemas[name]) for name in ("vlen-ndarray", "ragged-ndarray")}

    def verdict(vec: Json) -> bool | None:
        if "data_type_text" in vec:  # JSON Schema sees the parsed value (2.0 is an integer)
            return bool(dtype_v.is_valid(json.loads(vec["data_type_text"])))
        if "data_type" in vec:
            return bool(dtype_v.is_valid(vec["data_type"]))
        doc = vec["zarr_json"]
        ok = dtype_v.is_valid(doc["data_type"]) and fill_v.is_valid(doc["fill_value"])
        for codec in doc["codecs"]:
            target = codec if isinstance(codec, str) else codec.get("name")
            if target in codec_v:
                ok = ok and codec_v[target].is_valid(codec)
        return bool(ok)

    for name in ("ndarray", "vlen-ndarray", "ragged-ndarray"):
        for vec in files[name]["valid"]:
            assert verdict(vec) in (True, None), f"{name} {vec['id']}: the schemas refuse it"
        for vec in files[name]["invalid"]:
            if "schema" in vec:
                want = vec["schema"] == "accepts"
                assert verdict(vec) is want, f"{name} {vec['id']}: schema {vec['schema']}"


def planned_files() -> dict[Path, str]:
    files = build()
    check_rules(files)
    cross_check(files)
    check_schemas(files)
    out: dict[Path, str] = {}
    for name, doc in files.items():
        text = dump(doc)
        out[HERE / f"{name}.json"] = text
        out[COPIES[name] / f"{name}.json"] = text
    for original, copies in COPIED_FILES.items():
        out |= dict.fromkeys(copies, original.read_text(encoding="utf-8"))
    return out


def stray_files(planned: dict[Path, str]) -> list[Path]:
    """JSON files in the examples' folder and the copies' folders this script does not write."""
    folders = [HERE, *COPIES.values()]
    return sorted(p for f in folders if f.exists() for p in f.rglob("*.json") if p not in planned)


def main() -> int:
    check = "--check" in sys.argv[1:]
    planned = planned_files()
    stale = stray_files(planned)  # not removed here: delete them by hand
    for path, text in planned.items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print("stale:", *stale, sep="\n  ")
        return 1
    if stale and not check:
        print("written or stray (delete strays by hand):", *stale, sep="\n  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
