"""Storage checks on the way out of Arrow: every rule gives its own error kind, naming the row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _nd_no_pandas import RECORD_PANDAS_IMPORTS, run_script
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nd_arrow import (
    InvalidAttributeError,
    InvalidDimensionsError,
    InvalidEncodingError,
    NdColumn,
    NdVariable,
    NotSupportedError,
    ShapeMismatchError,
)
from nd_arrow._storage import (
    RowShape,
    attr_rows,
    attr_type,
    attrs_equal,
    encode_attrs,
    numpy_to_arrow,
    numpy_view,
    primitive_array,
    row_shape,
    storage_type,
    uniform_rank,
    validate_storage,
)


def lst(offsets: list[int], values: pa.Array, item: str = "item", large: bool = False) -> pa.Array:
    f = pa.field(item, values.type)
    if large:
        return pa.LargeListArray.from_arrays(
            pa.array(offsets, pa.int64()), values, type=pa.large_list(f)
        )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, type=pa.list_(f))


def struct(children: list[pa.Array], names: list[str], mask: list[bool] | None = None) -> pa.Array:
    m = pa.array(mask, pa.bool_()) if mask else None
    return pa.StructArray.from_arrays(children, names=names, mask=m)


STD = ["values", "dim_names", "dim_sizes"]


def good(**over: pa.Array) -> pa.Array:
    """Two rows: (a=2, b=2) and (a=3)."""
    parts = {
        "values": lst([0, 4, 7], pa.array(np.arange(7.0))),
        "dim_names": lst([0, 2, 3], pa.array(["a", "b", "a"])),
        "dim_sizes": lst([0, 2, 3], pa.array([2, 2, 3], pa.uint32())),
    }
    parts.update(over)
    return struct(list(parts.values()), list(parts))


def test_good_storage_decodes() -> None:
    col = NdColumn.from_arrow(good())
    assert col.to_pylist() == [
        NdVariable(np.arange(4.0).reshape(2, 2), ["a", "b"]),
        NdVariable(np.arange(4.0, 7.0), ["a"]),
    ]


@pytest.mark.parametrize(
    ("names", "match"),
    [
        (["dim_names", "values", "dim_sizes"], r"children are \['dim_names', 'values'"),
        (["values", "dim_names", "sizes"], "in this order"),
    ],
)
def test_wrong_child_order_or_names(names: list[str], match: str) -> None:
    arr = good()
    bad = struct([arr.field(i) for i in range(3)], names)
    with pytest.raises(InvalidEncodingError, match=match):
        NdColumn.from_arrow(bad)


def test_extra_child_is_refused() -> None:
    arr = good()
    bad = struct([*(arr.field(i) for i in range(3)), pa.array([1, 2])], [*STD, "extra"])
    with pytest.raises(InvalidEncodingError, match="optionally followed by 'attrs'"):
        NdColumn.from_arrow(bad)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"dim_sizes": lst([0, 2, 3], pa.array([2, 2, 3], pa.int32()))}, "must be UInt32"),
        ({"dim_names": lst([0, 2, 3], pa.array([1, 2, 3]))}, "must be Utf8"),
        ({"values": pa.array([1.0, 2.0])}, "it must be a List"),
    ],
)
def test_wrong_child_types(over: dict[str, pa.Array], match: str) -> None:
    with pytest.raises(InvalidEncodingError, match=match):
        NdColumn.from_arrow(good(**over))


def test_not_a_struct() -> None:
    with pytest.raises(InvalidEncodingError, match="must be a Struct"):
        NdColumn.from_arrow(pa.array([1, 2]))


def test_attrs_must_be_struct() -> None:
    arr = good()
    bad = struct([*(arr.field(i) for i in range(3)), pa.array([1, 2])], [*STD, "attrs"])
    with pytest.raises(InvalidEncodingError, match="'attrs' has type int64"):
        NdColumn.from_arrow(bad)


def test_rank_mismatch_names_the_row() -> None:
    bad = good(dim_names=lst([0, 2, 4], pa.array(["a", "b", "a", "c"])))
    with pytest.raises(InvalidDimensionsError, match="row 1 has 2 dimension names but 1 sizes"):
        NdColumn.from_arrow(bad)


def test_values_length_mismatch() -> None:
    bad = good(values=lst([0, 4, 6], pa.array(np.arange(6.0))))
    with pytest.raises(ShapeMismatchError, match=r"row 1 has 2 values but dimension sizes \[3\]"):
        NdColumn.from_arrow(bad)


def test_empty_name() -> None:
    bad = good(dim_names=lst([0, 2, 3], pa.array(["a", "b", ""])))
    with pytest.raises(InvalidDimensionsError, match="row 1 has an empty dimension name"):
        NdColumn.from_arrow(bad)


@pytest.mark.parametrize(
    ("offsets", "names", "sizes", "twice"),
    [
        ([0, 2, 4], ["a", "b", "c", "c"], [2, 2, 1, 3], "c"),
        ([0, 1, 4], ["a", "b", "c", "b"], [4, 1, 3, 1], "b"),
    ],
    ids=["same_rank_rows", "ragged_ranks"],
)
def test_duplicate_name(offsets: list[int], names: list[str], sizes: list[int], twice: str) -> None:
    bad = good(
        dim_names=lst(offsets, pa.array(names)),
        dim_sizes=lst(offsets, pa.array(sizes, pa.uint32())),
    )
    with pytest.raises(
        InvalidDimensionsError, match=f"row 1 has the dimension name '{twice}' twice"
    ):
        NdColumn.from_arrow(bad)


def test_size_product_overflow() -> None:
    big = 2**32 - 1
    names = lst([0, 3], pa.array(["a", "b", "c"]))
    sizes = lst([0, 3], pa.array([big, big, big], pa.uint32()))
    bad = struct([lst([0, 0], pa.array([], pa.float64())), names, sizes], STD)
    with pytest.raises(InvalidDimensionsError, match=r"row 0 .* multiply past int64"):
        NdColumn.from_arrow(bad)


@pytest.mark.parametrize("sizes", [[2**32 - 1] * 3 + [0], [0] + [2**32 - 1] * 3])
def test_size_product_overflow_with_a_zero_size(sizes: list[int]) -> None:
    """FORMAT 4/4 checks the non-zero sizes: no values, but no array has that shape either (was
    a bare numpy ValueError when the row was decoded)."""
    names = lst([0, 4], pa.array(["a", "b", "c", "d"]))
    dims = lst([0, 4], pa.array(sizes, pa.uint32()))
    bad = struct([lst([0, 0], pa.array([], pa.float64())), names, dims], STD)
    with pytest.raises(InvalidDimensionsError, match=r"FORMAT 4/4"):
        NdColumn.from_arrow(bad)


def test_valid_row_numpy_cannot_hold_is_not_supported() -> None:
    """(2**31, 2**31, 0) float64 is valid (2**62 fits int64), but numpy holds no array of that
    shape: the row is refused with the format's kind, never a bare numpy error."""
    names = lst([0, 3, 6], pa.array(["a", "b", "c"] * 2))
    dims = lst([0, 3, 6], pa.array([2**31, 2**31, 0] * 2, pa.uint32()))
    col = NdColumn.from_arrow(
        struct([lst([0, 0, 0], pa.array([], pa.float64())), names, dims], STD)
    )
    for decode in (col.to_pylist, col.to_numpy_list, lambda: col[1]):
        with pytest.raises(NotSupportedError, match=r"row 0 .* numpy cannot hold|row 1"):
            decode()


def test_large_but_fitting_product_is_a_shape_mismatch() -> None:
    names = lst([0, 2], pa.array(["a", "b"]))
    sizes = lst([0, 2], pa.array([2**31, 2**31], pa.uint32()))
    bad = struct([lst([0, 1], pa.array([1.0])), names, sizes], STD)
    with pytest.raises(ShapeMismatchError, match=f"product {2**62}"):
        NdColumn.from_arrow(bad)


def test_null_child_list_in_valid_row() -> None:
    names = pa.ListArray.from_arrays(
        pa.array([0, 2, 3], pa.int32()), pa.array(["a", "b", "a"]), mask=pa.array([False, True])
    )
    with pytest.raises(InvalidEncodingError, match="row 1 is not null but its 'dim_names'"):
        NdColumn.from_arrow(good(dim_names=names))


def test_null_size_item() -> None:
    bad = good(dim_sizes=lst([0, 2, 3], pa.array([2, None, 3], pa.uint32())))
    with pytest.raises(InvalidEncodingError, match="row 0 has a null item in 'dim_sizes'"):
        NdColumn.from_arrow(bad)


def test_null_rows_are_not_checked() -> None:
    """A null row's contents carry no meaning: junk there is ignored, as FORMAT.md says."""
    names = lst([0, 2, 3], pa.array(["a", "a", "a"]))
    bad_sizes = lst([0, 2, 3], pa.array([7, 7, 3], pa.uint32()))
    values = lst([0, 4, 7], pa.array(np.arange(7.0)))
    arr = struct([values, names, bad_sizes], STD, mask=[True, False])
    col = NdColumn.from_arrow(arr)
    assert col.to_pylist() == [None, NdVariable(np.arange(4.0, 7.0), ["a"])]


def test_lenient_read_variants() -> None:
    """Other item names, LargeList, LargeUtf8 / Utf8View names, zero-field attrs are accepted."""
    values = lst([0, 4, 7], pa.array(np.arange(7.0)), item="element", large=True)
    names = lst([0, 2, 3], pa.array(["a", "b", "a"], pa.large_string()), item="element")
    sizes = lst([0, 2, 3], pa.array([2, 2, 3], pa.uint32()), large=True)
    arr = struct([values, names, sizes], STD)
    want = NdColumn.from_arrow(good()).to_pylist()
    assert NdColumn.from_arrow(arr).to_pylist() == want
    view_names = lst([0, 2, 3], pa.array(["a", "b", "a"], pa.string_view()))
    assert NdColumn.from_arrow(good(dim_names=view_names)).to_pylist() == want
    attrs0 = pa.array([{}, {}], pa.struct([]))
    base = good()
    with_empty = struct([*(base.field(i) for i in range(3)), attrs0], [*STD, "attrs"])
    col = NdColumn.from_arrow(with_empty)
    assert col.to_pylist() == want


def test_list_view_values_are_read() -> None:
    base = good()
    values = pa.ListViewArray.from_arrays(
        pa.array([0, 4], pa.int32()), pa.array([4, 3], pa.int32()), pa.array(np.arange(7.0))
    )
    arr = struct([values, base.field(1), base.field(2)], STD)
    assert NdColumn.from_arrow(arr).to_pylist() == NdColumn.from_arrow(base).to_pylist()


def test_storage_type_layout() -> None:
    t = storage_type(pa.int8(), [pa.field("units", pa.string())])
    assert [t.field(i).name for i in range(t.num_fields)] == [*STD, "attrs"]
    assert t.field(0).type == pa.list_(pa.field("item", pa.int8()))
    assert not t.field(0).nullable
    assert t.field(1).type == pa.list_(pa.field("item", pa.string(), nullable=False))
    assert t.field(2).type == pa.list_(pa.field("item", pa.uint32(), nullable=False))
    assert storage_type(pa.int8()).num_fields == 3


def test_validate_storage_parts() -> None:
    parts = validate_storage(good())
    assert parts.value_offsets.tolist() == [0, 4, 7]
    assert parts.sizes.tolist() == [2, 2, 3]
    assert [parts.name_dict[c] for c in parts.name_codes] == ["a", "b", "a"]
    assert parts.null_count == 0


@given(
    st.lists(st.sampled_from(["a", "bc", "d", "ef", "é"]), min_size=1, max_size=3, unique=True),
    st.lists(st.booleans(), min_size=1, max_size=5),
)
@settings(max_examples=100, deadline=None)
def test_names_decode_whether_rows_share_them_or_not(first: list[str], same: list[bool]) -> None:
    """Rows that repeat row 0's names take the one-row check, others the dictionary; both give
    every row's names back (rotated names: same lengths in another order, other bytes)."""
    rows = [
        first if keep else first[i % len(first) :] + first[: i % len(first)]
        for i, keep in enumerate(same, 1)
    ]
    r = len(first)
    offsets = list(range(0, r * len(rows) + 1, r))
    arr = struct(
        [
            lst(list(range(len(rows) + 1)), pa.array(np.zeros(len(rows)))),
            lst(offsets, pa.array([nm for row in rows for nm in row])),
            lst(offsets, pa.array([1] * r * len(rows), pa.uint32())),
        ],
        STD,
    )
    parts = validate_storage(arr)
    assert [parts.name_dict[c] for c in parts.name_codes] == [nm for row in rows for nm in row]


def test_uniform_names_checked_once() -> None:
    """Rows with identical names take the byte-compare path; its checks still name row 0."""
    dup = lst([0, 2, 4], pa.array(["a", "a", "a", "a"]))
    sizes = lst([0, 2, 4], pa.array([1, 1, 1, 1], pa.uint32()))
    values = lst([0, 1, 2], pa.array([1.0, 2.0]))
    with pytest.raises(InvalidDimensionsError, match="row 0 has the dimension name 'a' twice"):
        NdColumn.from_arrow(struct([values, dup, sizes], STD))
    empty = lst([0, 1, 2], pa.array(["", ""]))
    sizes1 = lst([0, 1, 2], pa.array([1, 1], pa.uint32()))
    with pytest.raises(InvalidDimensionsError, match="row 0 has an empty dimension name"):
        NdColumn.from_arrow(struct([values, empty, sizes1], STD))


def test_row_shape_is_found_once_and_used_by_the_decoder() -> None:
    same = NdColumn.from_arrays([np.arange(6.0).reshape(2, 3), np.zeros((2, 3))], dims=["a", "b"])
    parts = validate_storage(same.storage)
    assert parts.row_shape == RowShape(2, (3,))
    rows = NdColumn.from_arrow(same.to_arrow()).to_numpy_list()
    assert [r.shape for r in rows if r is not None] == [(2, 3), (2, 3)]
    assert rows[0] is not None and rows[0].tolist() == np.arange(6.0).reshape(2, 3).tolist()
    ragged = NdColumn.from_arrays([np.zeros((2, 3)), np.ones((0, 3)), np.ones((4, 3))])
    assert validate_storage(ragged.storage).row_shape == RowShape(None, (3,))
    # No shared shape: other inner sizes, other rank, a null row, rank 0; each decodes by row.
    for arrays in (
        [np.zeros((2, 3)), np.zeros((3, 2))],
        [np.zeros((2, 3)), np.zeros(6)],
        [np.zeros((2, 3)), None],
        [np.array(1.0), np.array(2.0)],
    ):
        col = NdColumn.from_arrays(arrays)
        assert validate_storage(col.storage).row_shape is None
        got = col.to_numpy_list()
        assert [None if g is None else g.shape for g in got] == [
            None if a is None else a.shape for a in arrays
        ]


def test_uniform_rank_and_row_shape() -> None:
    valid = np.ones(3, np.bool_)
    off = np.array([4, 6, 8, 10])  # rows back to back from a sliced start
    assert uniform_rank(off, valid) == 2
    assert uniform_rank(np.array([0, 0, 0, 0]), valid) == 0
    assert uniform_rank(np.array([0, 2, 3, 6]), valid) is None  # ranks 2, 1, 3
    assert uniform_rank(np.array([0, 1, 3, 4]), valid) is None  # 4 / 3 not whole
    assert uniform_rank(off, np.array([True, False, True])) is None
    assert uniform_rank(np.array([0]), np.ones(0, np.bool_)) is None
    sizes = np.array([9, 9, 9, 9, 5, 7, 1, 7, 3, 7])
    assert row_shape(sizes, off, 2) == RowShape(None, (7,))
    assert row_shape(np.array([9, 9, 9, 9, 5, 7, 5, 7, 5, 7]), off, 2) == RowShape(5, (7,))
    assert row_shape(np.array([9, 9, 9, 9, 5, 7, 5, 6, 5, 7]), off, 2) is None
    assert row_shape(sizes, off, None) is None
    assert row_shape(sizes, np.zeros(4, np.int64), 0) is None


@pytest.mark.parametrize(
    ("value_offsets", "sizes", "match"),
    [
        ([0, 4, 7, 11], [2, 2] * 3, r"row 1 has 3 values but dimension sizes \[2, 2\]"),
        ([0, 4, 6, 9], [2, 2, 1, 2, 1, 2], r"row 2 has 3 values but dimension sizes \[1, 2\]"),
    ],
    ids=["one_shape", "one_inner_shape"],
)
def test_shared_shapes_still_name_the_row(
    value_offsets: list[int], sizes: list[int], match: str
) -> None:
    """Rows of one rank and names take the shared-shape checks; a bad row is still named."""
    offsets = [0, 2, 4, 6]
    arr = struct(
        [
            lst(value_offsets, pa.array(np.zeros(value_offsets[-1]))),
            lst(offsets, pa.array(["y", "x"] * 3)),
            lst(offsets, pa.array(sizes, pa.uint32())),
        ],
        STD,
    )
    with pytest.raises(ShapeMismatchError, match=match):
        NdColumn.from_arrow(arr)


# -------------------------------------------------------------------------------- element values


DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "M8[s]", "M8[ms]", "M8[us]", "M8[ns]", "m8[s]", "m8[ns]",
]  # fmt: skip


def _draw_flat(data: st.DataObject, dtype: str) -> tuple[int, np.ndarray]:
    """A drawn length and flat array of ``dtype`` (datetimes and timedeltas from int64)."""
    n = data.draw(st.integers(0, 40))
    raw = data.draw(hnp.arrays(np.dtype(dtype) if dtype[0] not in "Mm" else np.int64, n))
    return n, raw if dtype[0] not in "Mm" else raw.view(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_buffers_equal_pa_array(dtype: str, data: st.DataObject) -> None:
    n, flat = _draw_flat(data, dtype)
    mask = data.draw(st.none() | hnp.arrays(np.bool_, n))
    start = data.draw(st.integers(0, n))
    flat, mask = flat[start:], None if mask is None else mask[start:]  # offset views too
    got = numpy_to_arrow(flat, mask)
    if mask is not None and dtype[0] in "Mm":
        mask = mask | np.isnat(flat)  # NaT is always null (pa.array keeps it when given a mask)
    want = pa.array(flat, mask=mask)
    got.validate(full=True)
    assert got.type == want.type
    assert plain(got) == plain(want)


def plain(arr: pa.Array) -> list[object]:
    """Values comparable with ==: times as integers, NaN as a marker."""
    if pa.types.is_temporal(arr.type):
        arr = arr.cast(pa.int64())
    return ["NaN" if x is not None and x != x else x for x in arr.to_pylist()]


def test_strided_and_cast_inputs() -> None:
    flat = np.arange(10, dtype=np.int64)[::3]  # not contiguous
    assert numpy_to_arrow(flat, None).to_pylist() == [0, 3, 6, 9]
    cast = numpy_to_arrow(flat, np.array([False, True, False, False]), pa.int32())
    assert cast.type == pa.int32() and cast.to_pylist() == [0, None, 6, 9]
    nat = np.array(["NaT", "2020-01-01"], "M8[s]")  # NaT is null with or without a mask
    for mask in (None, np.array([False, False]), np.array([False, True])):
        assert numpy_to_arrow(nat, mask).null_count == (1 if mask is None else 1 + int(mask[1]))


def test_primitive_array_bits() -> None:
    arr = primitive_array(np.array([True, False, True] * 3), pa.bool_(), np.arange(9) % 4 == 0)
    arr.validate(full=True)
    assert arr.null_count == 3
    assert arr.to_pylist() == [None, False, True, True, None, True, True, False, None]


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_numpy_view_equals_to_numpy(dtype: str, data: st.DataObject) -> None:
    n, flat = _draw_flat(data, dtype)
    arr = pa.array(flat, mask=np.zeros(n, np.bool_))  # NaT stays a value: no nulls
    start = data.draw(st.integers(0, n))
    arr = arr.slice(start)  # a non-zero offset
    got = numpy_view(arr)
    want = arr.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


_NO_PANDAS = (
    "import sys\n"
    + RECORD_PANDAS_IMPORTS
    + """
import numpy as np, pyarrow as pa
from nd_arrow import NdVariable, NdColumn
rows = [
    NdVariable(np.ma.masked_array([1.0, 2.0], mask=[False, True]), ["x"]),
    None,
    np.ones((2, 3)),
    np.array([True, False]),
]
for items in (rows[:3], rows[2:3] * 2, rows[3:], [rows[0]] * 2):
    arr = NdColumn.from_arrays(items).to_arrow()
    col = NdColumn.from_arrow(arr)
    col.to_numpy_list(), col.to_pylist(), col[0]
assert asked == [], asked
"""
)


def test_numeric_columns_never_import_pandas() -> None:
    """Building, checking and decoding numeric columns go through buffers, never pandas."""
    run_script(_NO_PANDAS)


# ------------------------------------------------------------------------------------ attributes


def test_types() -> None:
    assert attr_type(True, "k") == pa.bool_()
    assert attr_type(1, "k") == pa.int64()
    assert attr_type(np.int16(1), "k") == pa.int16()
    assert attr_type(1.5, "k") == pa.float64()
    assert attr_type("s", "k") == pa.string()
    assert attr_type(b"s", "k") == pa.binary()
    assert attr_type([1.0, 2.0], "k") == pa.list_(pa.float64())
    assert attr_type(np.datetime64("2020-01-01", "s"), "k") == pa.timestamp("s")
    assert attr_type(pa.scalar({"a": 1}), "k") == pa.struct([("a", pa.int64())])


def test_union_of_keys_and_round_trip() -> None:
    rows = [{"units": "K", "range": [0.0, 1.0]}, None, {"scale": np.float32(2)}, {}]
    st = encode_attrs(rows)
    assert st is not None
    assert [st.type.field(i).name for i in range(st.type.num_fields)] == ["units", "range", "scale"]
    dec = attr_rows(st)
    back = [dec(i) for i in range(4)]
    assert attrs_equal(back[0], rows[0])
    assert back[1] == {} and back[3] == {}
    assert back[2] == {"scale": np.float32(2)} and back[2]["scale"].dtype == np.float32


def test_no_keys_gives_none() -> None:
    assert encode_attrs([None, {}]) is None


def test_type_conflict_names_rows() -> None:
    with pytest.raises(
        InvalidAttributeError, match="row 2: attribute 'k' has type string but int64 in row 0"
    ):
        encode_attrs([{"k": 1}, None, {"k": "x"}])


def test_other_arrow_types_decode_with_as_py() -> None:
    st = pa.StructArray.from_arrays([pa.array([{"a": 1}, None])], names=["nested"])
    dec = attr_rows(st)
    assert dec(0) == {"nested": {"a": 1}}
    assert dec(1) == {}


def test_null_attrs_row_means_no_attributes() -> None:
    st = pa.StructArray.from_arrays([pa.array([1, 2])], names=["k"], mask=pa.array([False, True]))
    dec = attr_rows(st)
    assert dec(0) == {"k": 1} and dec(1) == {}
