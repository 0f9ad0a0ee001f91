"""The documents the tool reads and rewrites (pure): upgrade, downgrade, migrate, layout, the
command line's values, Zarr v2 documents' parts and HyperSpy's shape siblings."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_ndarray_dtype import ELEMENT_DTYPES
from zarr_ndarray_tool import _documents as md
from zarr_ndarray_tool._documents import parse_dtype_arg, parse_shape_arg, pattern_of, sibling_of
from zarr_ndarray_tool.errors import Refused


def bytes_doc(**over: Any) -> dict[str, Any]:
    """A document as zarr-python writes it for a variable_length_bytes array."""
    doc: dict[str, Any] = {
        "shape": [10],
        "data_type": "variable_length_bytes",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "",
        "codecs": [
            {"name": "vlen-bytes", "configuration": {}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
        ],
        "attributes": {"units": "m", "nested": {"a": [1, 2]}},
        "dimension_names": ["cell"],
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }
    doc.update(over)
    return doc


def sharded_codecs(inner: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [2],
                "codecs": [inner, {"name": "zstd", "configuration": {"level": 3}}],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            },
        }
    ]


F32X2 = {"name": "ndarray", "configuration": {"dtype": "float32", "shape": [None, 2]}}


def upgrade(doc: dict[str, Any], dtype: str, shape: Any, where: str) -> dict[str, Any]:
    return md.rewritten(doc, where, "upgrade", dtype, shape)


def downgrade(doc: dict[str, Any], where: str) -> dict[str, Any]:
    return md.rewritten(doc, where, "downgrade")


def migrate(doc: dict[str, Any], where: str) -> dict[str, Any]:
    return md.rewritten(doc, where, "migrate")


def test_upgrade_changes_only_data_type_and_serializer() -> None:
    doc = bytes_doc()
    new = upgrade(doc, "float32", (None, 2), "x")
    assert new["data_type"] == F32X2
    assert new["codecs"][0] == {"name": "vlen-ndarray", "configuration": {}}
    assert list(new) == list(doc)  # key order kept
    for key in doc:
        if key not in ("data_type", "codecs"):
            assert new[key] == doc[key]
    assert new["codecs"][1:] == doc["codecs"][1:]
    assert doc == bytes_doc()  # the input is not modified


def test_upgrade_renames_inside_sharding_and_keeps_index_codecs() -> None:
    doc = bytes_doc(codecs=sharded_codecs({"name": "vlen-bytes", "configuration": {}}))
    new = upgrade(doc, "int16", (None,), "x")
    config = new["codecs"][0]["configuration"]
    assert config["codecs"][0] == {"name": "vlen-ndarray", "configuration": {}}
    assert config["index_codecs"] == doc["codecs"][0]["configuration"]["index_codecs"]
    assert list(config) == ["chunk_shape", "codecs", "index_codecs", "index_location"]


def test_upgrade_accepts_the_short_bytes_spelling() -> None:
    new = upgrade(bytes_doc(data_type="bytes"), "uint8", (None,), "x")
    assert new["data_type"]["configuration"] == {"dtype": "uint8", "shape": [None]}


def test_upgrade_then_downgrade_restores_the_document() -> None:
    for codecs in (
        bytes_doc()["codecs"],
        sharded_codecs({"name": "vlen-bytes", "configuration": {}}),
    ):
        doc = bytes_doc(codecs=codecs, fill_value="AACAPwAAAEA=")
        back = downgrade(upgrade(doc, "float32", (None, 2), "x"), "x")
        assert json.dumps(back) == json.dumps(doc)  # equal including key order


@pytest.mark.parametrize(
    ("fill", "dtype", "shape"),
    [
        ("AACAPw==", "float32", (None, 2)),  # 4 bytes, unit 8
        ("Ag==", "bool", (None,)),  # byte 0x02
        ("AACAPw", "float32", (None,)),  # padding missing
        (None, "float32", (None,)),  # not a string
    ],
)
def test_upgrade_refuses_a_fill_that_does_not_fit(fill: Any, dtype: str, shape: Any) -> None:
    with pytest.raises(Refused, match="fill_value"):
        upgrade(bytes_doc(fill_value=fill), dtype, shape, "x")


def test_upgrade_accepts_a_fill_of_whole_rows() -> None:
    new = upgrade(bytes_doc(fill_value="AACAPwAAAEA="), "float32", (None, 2), "x")
    assert new["fill_value"] == "AACAPwAAAEA="


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (bytes_doc(data_type=F32X2), "already has the ndarray data type"),
        (bytes_doc(data_type="int32"), "upgrade expects a raw variable-length bytes array"),
        (bytes_doc(data_type="string"), 'data_type is "string"'),
        (bytes_doc(codecs=[{"name": "vlen-utf8", "configuration": {}}]), "has no 'vlen-bytes'"),
        (bytes_doc(zarr_format=2), "zarr_format 2"),
        (bytes_doc(node_type="group"), "is a Zarr group"),
        (
            bytes_doc(
                data_type={
                    "name": "vlen-ndarray",
                    "configuration": {"dtype": "int8", "inner_shape": []},
                }
            ),
            "use `migrate`",
        ),
    ],
)
def test_upgrade_refusals_name_what_was_found(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(Refused, match=match):
        upgrade(doc, "float32", (None,), "where")


@pytest.mark.parametrize("shape", [(2, None), (None, None), (3,), (None, 2, None)])
def test_upgrade_refuses_patterns_vlen_ndarray_does_not_serve(shape: Any) -> None:
    with pytest.raises(Refused, match=r"\[null, d1, \.\.\., dk\]"):
        upgrade(bytes_doc(), "float32", shape, "x")


def test_downgrade_refusals() -> None:
    with pytest.raises(Refused, match="downgrade expects an ndarray array"):
        downgrade(bytes_doc(), "x")
    fixed = bytes_doc(
        data_type={"name": "ndarray", "configuration": {"dtype": "int8", "shape": [3]}},
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
        fill_value="AAAA",
    )
    with pytest.raises(Refused, match="not vlen-bytes framed"):
        downgrade(fixed, "x")
    extra_key = bytes_doc(data_type={**F32X2, "extra": 1})
    with pytest.raises(Refused, match="exactly the members"):
        downgrade(extra_key, "x")


def legacy_doc(**config: Any) -> dict[str, Any]:
    cfg = {"dtype": "float32", "inner_shape": [2]}
    cfg.update(config)
    return bytes_doc(
        data_type={"name": "vlen-ndarray", "configuration": cfg},
        codecs=[
            {"name": "vlen-ndarray", "configuration": {}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
        ],
    )


def test_migrate_rewrites_the_data_type_only() -> None:
    doc = legacy_doc()
    new = migrate(doc, "x")
    assert new["data_type"] == F32X2
    assert new["codecs"] == doc["codecs"]
    assert new["fill_value"] == doc["fill_value"]
    assert list(new) == list(doc)
    scalar = migrate(legacy_doc(dtype="uint64", inner_shape=[]), "x")
    assert scalar["data_type"]["configuration"] == {"dtype": "uint64", "shape": [None]}


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (legacy_doc(inner_shape=[0]), "entry 1 is 0"),
        (legacy_doc(inner_shape=[2.0]), "2.0"),
        (legacy_doc(dtype="float"), "not allowed"),
        (legacy_doc(fill_value="AACAPw=="), "fill_value"),
        (bytes_doc(), "migrate expects a zarr-vlen-ndarray 0.1.x array"),
        (bytes_doc(data_type=F32X2), "already has the ndarray data type"),
    ],
)
def test_migrate_refusals(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(Refused, match=match):
        migrate(doc, "x")


def test_migrate_refuses_a_codec_entry_with_parameters() -> None:
    doc = legacy_doc()
    doc["codecs"][0]["configuration"] = {"dtype": "float32"}
    with pytest.raises(Refused, match="takes no parameters"):
        migrate(doc, "x")


def test_bytes_view_reads_every_kind_as_variable_length_bytes() -> None:
    for doc in (
        bytes_doc(data_type="bytes"),
        upgrade(bytes_doc(), "int8", (None,), "x"),
        legacy_doc(),
    ):
        view = md.bytes_view(doc, "x")
        assert view["data_type"] == "variable_length_bytes"
        assert md.codec_chain(view["codecs"]).startswith("vlen-bytes")
    with pytest.raises(Refused):
        md.bytes_view(bytes_doc(data_type="int32"), "x")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("null,2", (None, 2)),
        ("None,2", (None, 2)),
        ("[null, 2]", (None, 2)),
        ("(None, 2, 3)", (None, 2, 3)),
        ("(None,)", (None,)),
        ("null", (None,)),
        ("NULL , 4", (None, 4)),
    ],
)
def test_parse_shape_arg(text: str, expected: tuple[int | None, ...]) -> None:
    assert parse_shape_arg(text) == expected


@pytest.mark.parametrize("text", ["", "[]", "null,2.5", "null,x", "null,0", "null,-1", "null,,2"])
def test_parse_shape_arg_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="shape"):
        parse_shape_arg(text)


def test_parse_dtype_arg() -> None:
    assert parse_dtype_arg("<f4") == "float32"
    assert parse_dtype_arg("bool") == "bool"
    with pytest.raises(ValueError, match="big-endian"):
        parse_dtype_arg(">f4")


@pytest.mark.parametrize(
    "layout",
    [
        lambda d: json.dumps(d, indent=2),
        lambda d: json.dumps(d, indent=4) + "\n",
        lambda d: json.dumps(d),
        lambda d: json.dumps(d, separators=(",", ":")),
    ],
)
def test_dumps_like_keeps_the_layout(layout: Any) -> None:
    doc = bytes_doc(attributes={"name": "caf\u00e9"})
    assert md.dumps_like(doc, layout(doc)) == layout(doc)


def test_json_diff_shows_only_the_changed_lines() -> None:
    doc = bytes_doc()
    diff = md.json_diff(doc, upgrade(doc, "int8", (None,), "x"), "a/zarr.json")
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    assert '-  "data_type": "variable_length_bytes",' in changed
    assert '-      "name": "vlen-bytes",' in changed
    assert '+      "name": "vlen-ndarray",' in changed
    assert not [ln for ln in changed if "attributes" in ln or "zstd" in ln]


@given(
    dtype=st.sampled_from(ELEMENT_DTYPES),
    trailing=st.lists(st.integers(1, 4), max_size=3),
    attributes=st.dictionaries(
        st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4
    ),
    sharded=st.booleans(),
    short_codec=st.booleans(),
)
def test_upgrade_downgrade_round_trip_property(
    dtype: str, trailing: list[int], attributes: dict[str, Any], sharded: bool, short_codec: bool
) -> None:
    entry: dict[str, Any] = (
        {"name": "vlen-bytes"} if short_codec else {"name": "vlen-bytes", "configuration": {}}
    )
    codecs = sharded_codecs(entry) if sharded else [entry]
    doc = bytes_doc(attributes=attributes, codecs=codecs)
    original = copy.deepcopy(doc)
    up = upgrade(doc, dtype, (None, *trailing), "x")
    assert up["data_type"]["configuration"] == {"dtype": dtype, "shape": [None, *trailing]}
    back = downgrade(up, "x")
    expected = copy.deepcopy(original)
    # A vlen-bytes entry without "configuration" comes back in its canonical long form.
    target = (
        expected["codecs"][0]["configuration"]["codecs"][0] if sharded else expected["codecs"][0]
    )
    target["configuration"] = {}
    assert json.dumps(back) == json.dumps(expected)
    assert doc == original


# ------------------------------------------------------------------ HyperSpy's shape siblings


def columns(shapes: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks, extents back to back, and item counts of cells of ``shapes``."""
    ranks = np.array([len(s) for s in shapes], np.int64)
    extents = np.array([d for s in shapes for d in s], np.int64)
    sizes = np.array([math.prod(s) for s in shapes], np.int64)
    return ranks, extents, sizes


def test_siblings_are_found_as_rosettasciios_reader_finds_them() -> None:
    assert sibling_of("data", {"data", "_ragged_shapes_data"}) == "_ragged_shapes_data"
    assert sibling_of("data", {"data", "ragged_shapes", "_ragged_shapes_data"}) == "ragged_shapes"
    assert sibling_of("offsets", {"offsets"}) is None
    assert sibling_of("_ragged_shapes_data", {"data", "_ragged_shapes_data"}) is None
    assert sibling_of("ragged_shapes", {"ragged_shapes", "_ragged_shapes_ragged_shapes"}) is None


@given(
    st.lists(st.integers(0, 9), max_size=12),
    st.lists(st.integers(1, 4), max_size=3),
    st.integers(1, 3),
)
def test_one_rank_and_one_trailing_shape_give_the_pattern(
    leading: list[int], trailing: list[int], nav: int
) -> None:
    shapes = [(n, *trailing) for n in leading] * nav
    pattern, why = pattern_of(*columns(shapes), (len(shapes),), "s")
    if shapes and trailing:
        assert pattern == (None, *trailing) and why.startswith("every cell is (n, ")
    else:
        assert pattern == (None,)


@pytest.mark.parametrize(
    ("shapes", "why"),
    [
        (
            [(3, 2), (4,)],
            "its cells differ in rank (cell (0, 0) is (3, 2) but cell (0, 1) is (4,))",
        ),
        ([(3, 2), (2, 3)], "differ in trailing extents (cell (0, 0) is (3, 2) but cell (0, 1)"),
        ([(), ()], "every cell is 0-d (one item)"),
        ([(0, 2), (5, 2)], "every cell is (n, 2)"),
    ],
)
def test_the_reason_names_the_cells(shapes: list[tuple[int, ...]], why: str) -> None:
    assert why in pattern_of(*columns(shapes), (1, len(shapes)), "s")[1]


def test_a_shape_that_does_not_give_its_cells_items_is_refused() -> None:
    ranks, extents, sizes = columns([(2, 2), (3, 2), (1, 2)])
    sizes[1] = 5
    with pytest.raises(
        Refused,
        match=r"s: the shape sibling says cell \(1,\) is \(3, 2\) \(6 items\), but the data holds",
    ):
        pattern_of(ranks, extents, sizes, (3,), "s")
