"""Regenerate the golden vectors under registry/examples/ from first principles.

Run from the repository root:

    python registry/examples/generate.py          # rewrite the files
    python registry/examples/generate.py --check  # fail if a file would change

The packages' copies of these examples (``COPIES``) are written and checked with them.

Needs numpy only. When jsonschema is importable, every vector is validated against
the registry schemas (the ``invalid-impl-only`` cases must PASS the schema: they
break rules JSON Schema cannot express). When numcodecs is importable, every valid
vlen-ndarray chunk is also checked to be byte-identical to numcodecs ``VLenBytes`` of the cells' raw
little-endian bytes (the byte-identity rule of SPEC.md section 2.6).
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent

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


def dt(dtype: Any, shape: Any) -> dict[str, Any]:
    return {"name": "ndarray", "configuration": {"dtype": dtype, "shape": shape}}


def dtype_cases() -> dict[str, dict[str, Any]]:
    """Data type metadata: folder -> {file stem -> JSON value}."""
    valid: dict[str, Any] = {}
    patterns: list[list[Any]] = [[None], [None, 2], [3, 2], [2, None], [None, None]]
    for name in DTYPES:
        for pattern in patterns:
            stem = name + "_" + "_".join("null" if d is None else str(d) for d in pattern)
            valid[stem] = dt(name, pattern)
    valid["float64_null_3_2"] = dt("float64", [None, 3, 2])
    valid["uint8_1"] = dt("uint8", [1])
    valid["int32_4_null_5"] = dt("int32", [4, None, 5])
    valid["float32_null_null_null"] = dt("float32", [None, None, None])

    invalid: dict[str, Any] = {
        "shape_empty": dt("float32", []),
        "shape_zero": dt("float32", [0]),
        "shape_zero_after_null": dt("float32", [None, 0]),
        "shape_negative": dt("float32", [None, -2]),
        "shape_fraction": dt("float32", [None, 2.5]),
        "shape_true": dt("float32", [True]),
        "shape_false": dt("float32", [None, False]),
        "shape_string_entry": dt("float32", ["2"]),
        "shape_nested_list": dt("float32", [[2]]),
        "shape_is_string": dt("float32", "[null, 2]"),
        "shape_is_null": dt("float32", None),
        "shape_is_integer": dt("float32", 2),
        "dtype_big_endian": dt(">f4", [None]),
        "dtype_little_endian_prefix": dt("<f4", [None]),
        "dtype_generic_float": dt("float", [None]),
        "dtype_capitalised": dt("Float32", [None]),
        "dtype_null": dt(None, [None]),
        "dtype_object": dt("object", [None]),
        "dtype_string": dt("str", [None]),
        "name_wrong": {"name": "ndarrays", "configuration": {"dtype": "float32", "shape": [None]}},
        "name_legacy_0_1": {
            "name": "vlen-ndarray",
            "configuration": {"dtype": "float32", "inner_shape": [2]},
        },
        "bare_name_string": "ndarray",
        "configuration_missing": {"name": "ndarray"},
        "configuration_null": {"name": "ndarray", "configuration": None},
        "configuration_empty": {"name": "ndarray", "configuration": {}},
        "configuration_missing_dtype": {"name": "ndarray", "configuration": {"shape": [None]}},
        "configuration_missing_shape": {"name": "ndarray", "configuration": {"dtype": "float32"}},
        "configuration_extra_key": {
            "name": "ndarray",
            "configuration": {"dtype": "float32", "shape": [None], "order": "C"},
        },
        "configuration_inner_shape_key": {
            "name": "ndarray",
            "configuration": {"dtype": "float32", "shape": [None], "inner_shape": [2]},
        },
        "top_level_extra_key": {
            "name": "ndarray",
            "configuration": {"dtype": "float32", "shape": [None]},
            "must_understand": False,
        },
    }
    invalid_impl_only: dict[str, Any] = {
        "shape_float_integral": dt("float32", [2.0]),
        "shape_float_integral_after_null": dt("float32", [None, 2.0]),
        "shape_float_one": dt("uint8", [1.0]),
    }
    return {"valid": valid, "invalid": invalid, "invalid-impl-only": invalid_impl_only}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def fill_cases() -> dict[str, list[Any]]:
    def ok(dtype: str, pattern: list[Any], arr: np.ndarray, note: str) -> dict[str, Any]:
        raw = np.ascontiguousarray(arr).tobytes()
        return {
            "data_type": dt(dtype, pattern),
            "fill_value": b64(raw),
            "element_shape": list(arr.shape),
            "element_hex": raw.hex(),
            "note": note,
        }

    valid = [
        ok("float32", [None, 2], np.zeros((0, 2), "<f4"), "default: the empty element"),
        ok("float32", [None, 2], np.array([[1.0, 2.0]], "<f4"), "one row"),
        ok("int16", [3], np.zeros(3, "<i2"), "default of an all-fixed pattern: zeros"),
        ok("int16", [3], np.array([1, -1, 256], "<i2"), "all-fixed, non-zero"),
        ok("uint8", [None], np.array([7], "<u1"), "one byte: two pad characters"),
        ok("uint8", [None], np.array([7, 8], "<u1"), "two bytes: one pad character"),
        ok("bool", [2, None], np.array([[True], [False]]), "single variable axis not leading"),
        ok("complex64", [None], np.array([1 + 2j], "<c8"), "real part then imaginary part"),
        ok("float64", [None, None], np.zeros((0, 0), "<f8"), ">= 2 variable axes: only empty"),
    ]
    invalid_schema = [
        {"data_type": dt("float32", [None]), "fill_value": "%%%", "reason": "not base64"},
        {"data_type": dt("float32", [None]), "fill_value": "AACAPw", "reason": "padding missing"},
        {
            "data_type": dt("float32", [None]),
            "fill_value": "AACA Pw==",
            "reason": "whitespace",
        },
        {"data_type": dt("uint8", [None]), "fill_value": "Bw=", "reason": "padding short"},
        {
            "data_type": dt("float32", [None]),
            "fill_value": "AACAPw==\n",
            "reason": "trailing newline",
        },
        {"data_type": dt("uint8", [None]), "fill_value": "Bx==", "reason": "pad bits not zero"},
        {
            "data_type": dt("uint8", [None]),
            "fill_value": "-_8=",
            "reason": "URL-safe alphabet",
        },
        {"data_type": dt("float32", [None]), "fill_value": 0, "reason": "not a string"},
        {"data_type": dt("float32", [None]), "fill_value": None, "reason": "null"},
        {"data_type": dt("float32", [None]), "fill_value": [1.0], "reason": "not a string"},
    ]
    invalid_impl_only = [
        {
            "data_type": dt("float32", [None, 2]),
            "fill_value": b64(np.array([1.0], "<f4").tobytes()),
            "reason": "4 bytes is not a whole number of (2,) float32 rows",
        },
        {
            "data_type": dt("int16", [3]),
            "fill_value": "",
            "reason": "all-fixed pattern: length must equal 6",
        },
        {
            "data_type": dt("int16", [3]),
            "fill_value": b64(bytes(8)),
            "reason": "all-fixed pattern: length must equal 6",
        },
        {
            "data_type": dt("float64", [None, None]),
            "fill_value": b64(bytes(8)),
            "reason": ">= 2 variable axes: only the empty string",
        },
        {
            "data_type": dt("bool", [None]),
            "fill_value": b64(b"\x02"),
            "reason": "bool byte other than 0x00 or 0x01",
        },
    ]
    return {
        "valid": valid,
        "invalid_schema": invalid_schema,
        "invalid_impl_only": invalid_impl_only,
    }


def frame(payloads: list[bytes]) -> bytes:
    parts = [struct.pack("<I", len(payloads))]
    for p in payloads:
        parts.append(struct.pack("<I", len(p)))
        parts.append(p)
    return b"".join(parts)


def chunk_cases() -> dict[str, list[dict[str, Any]]]:
    def ok(
        dtype: str, pattern: list[Any], chunk_shape: list[int], cells: list[np.ndarray], note: str
    ) -> dict[str, Any]:
        payloads = [np.ascontiguousarray(c).tobytes() for c in cells]
        return {
            "data_type": dt(dtype, pattern),
            "chunk_shape": chunk_shape,
            "cells_c_order": [
                {"shape": list(c.shape), "hex": p.hex()}
                for c, p in zip(cells, payloads, strict=True)
            ],
            "encoded_hex": frame(payloads).hex(),
            "note": note,
        }

    f4 = np.dtype("<f4")
    valid = [
        ok(
            "float32",
            [None, 2],
            [2],
            [np.array([[1.0, 2.0]], f4), np.zeros((0, 2), f4)],
            "SPEC.md example 2.7.1",
        ),
        ok(
            "uint64",
            [None],
            [3],
            [np.array([1, 2**64 - 1], "<u8"), np.zeros(0, "<u8"), np.array([5], "<u8")],
            "rank-1 cells",
        ),
        ok(
            "int16",
            [None],
            [2, 2],
            [
                np.array([1], "<i2"),
                np.array([2, 3], "<i2"),
                np.zeros(0, "<i2"),
                np.array([-1], "<i2"),
            ],
            "2-d chunk: cells in C order (0,0) (0,1) (1,0) (1,1)",
        ),
        ok(
            "bool", [None], [2], [np.array([True, False]), np.array([True])], "bool bytes 0x00/0x01"
        ),
        ok(
            "float64",
            [None, 3, 2],
            [1],
            [np.arange(6, dtype="<f8").reshape(1, 3, 2)],
            "k = 2 fixed trailing axes",
        ),
    ]
    base = bytes.fromhex(valid[0]["encoded_hex"])
    d = dt("float32", [None, 2])
    bad: list[dict[str, Any]] = [
        {"hex": "", "reason": "truncated: no element count"},
        {"hex": "020000", "reason": "truncated: element count cut short"},
        {"hex": base[:-4].hex(), "reason": "truncated: second length prefix missing"},
        {"hex": base[:10].hex(), "reason": "length prefix past the end"},
        {"hex": "01" + base[1:].hex(), "reason": "count 1 != 2 elements in the chunk"},
        {"hex": "03" + base[1:].hex(), "reason": "count 3 != 2 elements in the chunk"},
        {"hex": "ffffffff" + base[4:].hex(), "reason": "count 2^32-1 != 2 (must not allocate)"},
        {
            "hex": frame([bytes(4), b""]).hex(),
            "reason": "length 4 is not a whole number of 8-byte rows",
        },
        {"hex": (base + b"\x00").hex(), "reason": "trailing bytes after the last element"},
        {
            "hex": "02000000" + "ffffff7f" + "00000000",
            "reason": "length prefix 2^31-1 past the end (must not allocate)",
        },
    ]
    invalid = [
        {"data_type": d, "chunk_shape": [2], "encoded_hex": b["hex"], "reason": b["reason"]}
        for b in bad
    ]
    invalid.append(
        {
            "data_type": dt("bool", [None]),
            "chunk_shape": [1],
            "encoded_hex": frame([b"\x01\x02"]).hex(),
            "reason": "bool byte 0x02",
        }
    )
    return {"valid": valid, "invalid": invalid}


def codec_metadata_cases() -> dict[str, list[Any]]:
    return {
        "valid": [
            {"name": "vlen-ndarray", "configuration": {}},
            {"name": "vlen-ndarray"},
        ],
        "invalid": [
            {"name": "vlen-ndarray", "configuration": {"dtype": "float32"}},
            {"name": "vlen-ndarray", "configuration": None},
            {"name": "vlen-ndarray", "configuration": []},
            {"name": "vlen-ndarray", "configuration": {}, "extra": 1},
            {"name": "vlen-bytes", "configuration": {}},
            {"configuration": {}},
        ],
    }


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False) + "\n"


def planned_files() -> dict[Path, str]:
    files: dict[Path, str] = {}
    for folder, cases in dtype_cases().items():
        for stem, value in cases.items():
            files[HERE / "ndarray" / folder / f"{stem}.json"] = dump(value)
    files[HERE / "ndarray" / "fill-values.json"] = dump(fill_cases())
    files[HERE / "vlen-ndarray" / "chunks.json"] = dump(chunk_cases())
    files[HERE / "vlen-ndarray" / "codec-metadata.json"] = dump(codec_metadata_cases())
    for source, copy in COPIES.items():  # the packages' copies, the same files again
        for path, text in list(files.items()):
            if path.is_relative_to(source):
                files[copy / path.relative_to(source)] = text
    return files


#: Copies of these examples that packages ship in their sdists (their tests never read outside
#: the package folder); written and checked here with the originals, so they cannot drift.
COPIES = {
    HERE / "ndarray": HERE.parents[1] / "packages/ndarray-dtype/tests/golden/ndarray",
    HERE / "vlen-ndarray": HERE.parents[1] / "packages/vlen-ndarray-codec/tests/golden/registry",
}


def stray_files(planned: dict[Path, str]) -> list[Path]:
    """JSON files in the examples' folders and their copies that this script does not write."""
    folders = [*COPIES, *COPIES.values()]
    return sorted(p for f in folders for p in f.rglob("*.json") if p not in planned)


def cross_check() -> None:
    try:
        import numcodecs
    except ImportError:
        return
    vlen = numcodecs.VLenBytes()
    for case in chunk_cases()["valid"]:
        cells = np.empty(len(case["cells_c_order"]), dtype=object)
        cells[:] = [bytes.fromhex(c["hex"]) for c in case["cells_c_order"]]
        assert bytes(vlen.encode(cells)).hex() == case["encoded_hex"], case["note"]


def validate_schemas() -> None:
    """Check every vector against the registry schemas (needs jsonschema)."""
    try:
        import jsonschema
    except ImportError:
        return
    root = HERE.parent
    dtype_schema = json.loads((root / "data-types" / "ndarray" / "schema.json").read_text())
    codec_schema = json.loads((root / "codecs" / "vlen-ndarray" / "schema.json").read_text())
    cls = jsonschema.Draft202012Validator
    cls.check_schema(dtype_schema)
    cls.check_schema(codec_schema)
    dtype_v = cls(dtype_schema)
    fill_v = cls(dtype_schema["$defs"]["fill_value"])
    codec_v = cls(codec_schema)
    expect = {"valid": True, "invalid": False, "invalid-impl-only": True}
    for folder, cases in dtype_cases().items():
        for stem, value in cases.items():
            assert dtype_v.is_valid(value) is expect[folder], (folder, stem)
    fills = fill_cases()
    for key, want in (("valid", True), ("invalid_schema", False), ("invalid_impl_only", True)):
        for case in fills[key]:
            assert dtype_v.is_valid(case["data_type"]), case
            assert fill_v.is_valid(case["fill_value"]) is want, (key, case)
    for key, want in (("valid", True), ("invalid", False)):
        for value in codec_metadata_cases()[key]:
            assert codec_v.is_valid(value) is want, (key, value)


def main() -> int:
    cross_check()
    validate_schemas()
    check = "--check" in sys.argv[1:]
    planned = planned_files()
    stale = stray_files(planned)  # not removed here: delete them by hand
    for path, text in planned.items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if check and stale:
        print("stale:", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
