"""Object reads and writes (the selection hooks of zarr_ndarray_dtype._hooks): writes all or
nothing, naming the bad cell by its index; conversions at once; reads and writes by every index
zarr accepts; fill cells read as plain arrays; elision unchanged. Chunks are compared with what
zarr's own object path stores (``zarr_own_writes``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import zarr
from _zdt_support import zarr_own_writes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ndarray_dtype_testing import ToyCodec

from zarr_ndarray_dtype import CellError, CellTypeError, unbox
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.cells import convert

POINTS = NDArray(dtype="float32", shape=(None, 2))


def _array(
    store: dict[str, Any], dtype: NDArray = POINTS, sharded: bool = False, **kw: Any
) -> zarr.Array:
    shards = {"shards": (10, 10)} if sharded else {}
    return zarr.create_array(
        store, shape=(10, 10), chunks=(5, 5), dtype=dtype, serializer=ToyCodec(), **shards, **kw
    )


def _cells(seed: int, dtype: str = "float64", shape: tuple[int, ...] = (10, 10)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        out[index] = rng.integers(0, 100, (int(rng.integers(0, 4)), 2)).astype(dtype)
    return out


def _stored(store: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store.items()}


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.parametrize(
    ("selection", "named"),
    [
        ((slice(None), slice(None)), (8, 9)),  # a box: the columnar engine
        ((np.arange(10), slice(None)), (8, 9)),  # orthogonal: zarr, with converted cells
        ((slice(2, 10), slice(4, 10)), (8, 9)),
    ],
    ids=["box", "orthogonal", "part"],
)
def test_a_lossy_cell_stores_nothing_and_is_named(
    sharded: bool, selection: Any, named: tuple[int, int]
) -> None:
    store: dict[str, Any] = {}
    array = _array(store, sharded=sharded)
    array[...] = _cells(1, "float32")
    before = _stored(store)
    cells = _cells(2)[selection]
    where = tuple(
        n - (s.start or 0) if isinstance(s, slice) else n
        for n, s in zip(named, selection, strict=True)
    )
    cells[where] = np.array([[1.0, 1e40]])  # float32 cannot hold it
    message = (
        f"cell {named} of shape (1, 2) and dtype float64 holds 1e+40, too large for the element "
        "dtype float32 (it would be inf); convert the values explicitly"
    )
    with pytest.raises(CellTypeError, match="^" + re.escape(message)):
        array[selection] = cells
    assert _stored(store) == before  # nothing stored, not even the chunks before the bad cell


def test_cells_of_the_wrong_shape_are_named_before_anything_is_stored() -> None:
    store: dict[str, Any] = {}
    array = _array(store)
    cells = _cells(3)
    cells[6, 2] = np.zeros((2, 3))
    with pytest.raises(CellError, match=r"^cell \(6, 2\) has shape \(2, 3\), which does not match"):
        array[...] = cells
    cells[6, 2] = "text"
    with pytest.raises(CellTypeError, match=r"^cell \(6, 2\) is a str"):
        array[...] = cells
    coords = (np.array([1, 7]), np.array([3, 4]))
    with pytest.raises(CellError, match=r"^cell \(7, 4\) has shape \(\), which does not match"):
        array.vindex[coords] = np.array([np.zeros((1, 2)), None, 5.0], dtype=object)[[0, 2]]
    with pytest.raises(CellError, match=r"float64 array of shape \(2, 1, 2\) is no set of cells"):
        array[0, 0:2] = np.zeros((2, 1, 2))
    assert sorted(store) == ["zarr.json"]


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_converted_cells_store_what_cells_of_the_element_dtype_store(sharded: bool) -> None:
    cells = _cells(4, "int64")
    same = cells.copy()
    for index in np.ndindex(same.shape):
        same[index] = same[index].astype("float32")
    ours, zarrs = _array({}, sharded=sharded), _array({}, sharded=sharded)
    ours[...] = cells
    with zarr_own_writes():
        zarrs[...] = same
    assert _stored(ours.store._store_dict) == _stored(zarrs.store._store_dict)
    rows = np.array([0, 4, 9])
    if sharded and not _zarr_writes_orthogonal_shards():
        pytest.skip(f"zarr {zarr.__version__} cannot write orthogonal selections into shards")
    ours.oindex[rows, :] = _cells(5, "uint8")[rows, :]  # zarr's path, converted cells
    with zarr_own_writes():
        zarrs.oindex[rows, :] = _cells(5, "float32")[rows, :]
    assert _stored(ours.store._store_dict) == _stored(zarrs.store._store_dict)


def _zarr_writes_orthogonal_shards(where: Any = ([0, 4, 9], slice(None))) -> bool:
    """Whether zarr's own orthogonal write of ``where`` into a shard works, for any data type:
    zarr 3.1.0 fails rows, 3.2.0 a list on every axis (IndexError)."""
    plain = zarr.create_array({}, shape=(10, 10), chunks=(5, 5), shards=(10, 10), dtype="int8")
    try:
        plain.oindex[where] = np.ones(plain.oindex[where].shape, "int8")
    except IndexError:
        return False
    return True


def test_one_cell_writes_and_lists_of_cells() -> None:
    store: dict[str, Any] = {}
    array = _array(store)
    array[3, 4] = [[1, 2], [3, 4]]  # a nested list, a float32 cell of shape (2, 2)
    array[3, 5:7] = [np.ones((1, 2)), None]  # a list of one cell per position; None: empty
    assert unbox(array[3, 4]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert array[3, 5:7][0].tolist() == [[1.0, 1.0]] and array[3, 5:7][1].shape == (0, 2)
    with pytest.raises(CellError, match="a sequence of 3 cells does not fit a selection of 2"):
        array[3, 5:7] = [None, None, None]


def test_fill_cells_are_plain_arrays_compared_element_wise() -> None:
    store: dict[str, Any] = {}
    zeros = np.zeros((2, 2), np.float32)
    array = _array(store, fill_value=zeros)
    array[0, 0] = zeros  # equal to the fill: the chunk is not stored (elided)
    assert sorted(store) == ["zarr.json"]
    cell = array[:][0, 0]
    assert type(cell) is np.ndarray and not cell.flags.writeable
    assert (cell == 0).all() and (cell == 0).shape == (2, 2)
    single = unbox(array[0, 0])
    assert type(single) is np.ndarray and np.array_equal(single, zeros)
    array[0, 1] = np.ones((1, 2))
    row = array[0, :3]
    assert [type(c) for c in row] == [np.ndarray] * 3 and (row[2] == 0).all()
    assert row[1].tolist() == [[1.0, 1.0]]
    with pytest.raises(ValueError, match="read-only"):
        row[0][0, 0] = 5.0
    assert unbox(array.metadata.fill_value).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_elision_drops_chunks_of_fill_cells_only() -> None:
    store: dict[str, Any] = {}
    fill = np.full((1, 2), 7, np.float32)
    array = _array(store, fill_value=fill)
    cells = np.empty((10, 10), dtype=object)
    cells[...] = [[fill.copy() for _ in range(10)] for _ in range(10)]
    cells[7, 7] = np.zeros((0, 2), np.float32)
    array[...] = cells
    assert sorted(store) == ["c/1/1", "zarr.json"]
    with zarr_own_writes():
        reference: dict[str, Any] = {}
        _array(reference, fill_value=fill)[...] = cells
    assert _stored(store) == _stored(reference)


def test_all_fixed_cells_through_the_bytes_codec() -> None:
    store: dict[str, Any] = {}
    dtype = NDArray(dtype="int16", shape=(2, 2))
    array = zarr.create_array(store, shape=(6,), chunks=(2,), dtype=dtype)
    cells = np.empty(6, dtype=object)
    cells[:] = [np.full((2, 2), i) for i in range(6)]
    cells[5] = np.full((2, 2), 40000)
    with pytest.raises(
        CellTypeError, match=r"^cell \(5,\) of shape \(2, 2\) and dtype int64 holds"
    ):
        array[:] = cells
    assert sorted(store) == ["zarr.json"]
    cells[5] = np.full((2, 2), -3)
    array[:] = cells
    assert [int(c[0, 0]) for c in array[:]] == [0, 1, 2, 3, 4, -3]


_NUMERIC = st.sampled_from(["bool", "int8", "uint8", "int16", "int64", "uint64", "float16",
                            "float32", "float64", "complex64"])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    source=_NUMERIC,
    target=_NUMERIC,
)
def test_the_conversion_rule_against_numpys_casts(
    data: st.DataObject, source: str, target: str
) -> None:
    """Where numpy's cast is exact (a round trip gives every value back, and no value becomes
    inf), the rule converts as numpy does; where it is not, the rule refuses, unless it is a
    float rounded into a narrower float (rounded to nearest, as numpy assignment does)."""
    values = data.draw(hnp.arrays(source, st.integers(0, 6), elements={"allow_nan": False}))
    src, dst = np.dtype(source), np.dtype(target)
    with np.errstate(all="ignore"):
        cast = (values.real if src.kind == "c" and dst.kind != "c" else values).astype(dst)
    exact = values.tolist() == cast.tolist()  # Python numbers compare exactly across types
    if src.kind == "c" and dst.kind != "c" and values.size:
        exact = False  # the imaginary part is dropped even when it is 0: refused
    overflow = bool((np.isinf(cast) & ~np.isinf(values)).any()) if dst.kind in "fc" else True
    rounds = src.kind in "fc" and dst.kind in "fc" and not overflow
    try:
        got = convert(values, dst, "values")
    except CellTypeError:
        assert not exact
        return
    assert exact or rounds
    assert got.dtype == dst and got.tobytes() == cast.tobytes()


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_writes_by_every_index_zarr_accepts(sharded: bool) -> None:
    """Lists and object arrays of cells of different (or equal) shapes, by slices, orthogonal
    indices, coordinates and masks: what was written reads back, the other cells untouched,
    the chunks byte-identical to zarr's own object writes of the same cells."""
    if sharded and not _zarr_writes_orthogonal_shards(([0, 2], [1, 8])):
        pytest.skip(f"zarr {zarr.__version__} cannot write orthogonal selections into shards")
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    array, reference = _array(ours, sharded=sharded), _array(theirs, sharded=sharded)
    before = _cells(3, "float32")
    array[...] = before
    with zarr_own_writes():
        reference[...] = before
    c0, c2 = np.ones((2, 2), "f4"), np.zeros((3, 2), "f4")

    def objects(*cells: np.ndarray) -> np.ndarray:
        out = np.empty(len(cells), dtype=object)
        out[:] = list(cells)
        return out

    mask = np.zeros((10, 10), dtype=bool)
    mask[[1, 6], [7, 3]] = True
    grid = np.empty((2, 2), dtype=object)
    grid[0, 0], grid[0, 1], grid[1, 0], grid[1, 1] = c0, c2, c2, c0
    writes = [  # (index, where, what we are given, the same cells for zarr's own path)
        ("", (slice(0, 2), 4), [c0, c2], objects(c0, c2)),  # a list of cells of two shapes
        ("", (slice(5, 7), 4), [c0, c0], objects(c0, c0)),  # ... of one shape
        ("oindex", ([0, 2], [1, 8]), [[c0, c2], [c2, c0]], grid),
        ("vindex", ([0, 3], [1, 2]), objects(c0, c2), objects(c0, c2)),
        ("vindex", mask, objects(c2, c0), objects(c2, c0)),
    ]
    for how, where, value, cells in writes:
        (getattr(array, how) if how else array)[where] = value
        with zarr_own_writes():  # zarr's own path would split a list of equal-shaped cells
            (getattr(reference, how) if how else reference)[where] = cells
    assert _stored(ours) == _stored(theirs)
    read = array[...]
    assert read[1, 4].tobytes() == c2.tobytes() and read[3, 2].tobytes() == c2.tobytes()
    assert read[6, 3].tobytes() == c0.tobytes() and read[9, 9].tobytes() == before[9, 9].tobytes()


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_reads_by_every_index_zarr_accepts(sharded: bool) -> None:
    """Orthogonal indices and masks (a mask runs past the array in the last chunk), coordinates,
    blocks and steps read the cells numpy's indexing picks; writes by them put cells back."""
    (r, c), shards = ((8, 6), {"shards": (8, 6)}) if sharded else ((4, 3), {})
    array = zarr.create_array(
        {}, shape=(9, 7), chunks=(4, 3), dtype=POINTS, serializer=ToyCodec(), **shards
    )
    cells = _cells(6, "float32", (9, 7))
    array[...] = cells
    rows = np.zeros(9, dtype=bool)
    rows[[1, 8]] = True
    mask = np.zeros((9, 7), dtype=bool)
    mask[[0, 8, 5], [6, 1, 5]] = True
    reads = [
        (array.oindex[rows, :], cells[rows, :]),
        (array.oindex[rows, 2], cells[rows, 2]),
        (array.oindex[[8, 0, 3], [6, 1]], cells[np.ix_([8, 0, 3], [6, 1])]),
        (array.vindex[[8, 0], [6, 1]], cells[[8, 0], [6, 1]]),
        (array.vindex[mask], cells[mask]),
        (array[::2, 1:7:3], cells[::2, 1:7:3]),
        (array.blocks[1, 1], cells[r : 2 * r, c : 2 * c]),  # the grid's (shards')
    ]
    for got, want in reads:
        assert got.shape == want.shape
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got.flat, want.flat, strict=True))
    array.oindex[rows, :] = cells[::-1][rows, :]
    assert array[8, 6].tobytes() == cells[0, 6].tobytes()
    assert array[7, 6].tobytes() == cells[7, 6].tobytes()


def test_fill_cells_of_arrays_left_to_zarr_are_plain_arrays() -> None:
    """A ``transpose`` filter leaves the chunks to zarr's pipeline: its unwritten cells read as
    plain read-only arrays too, whole and by orthogonal indices."""
    from zarr.codecs import TransposeCodec

    array = _array({}, fill_value=np.ones((1, 2)), filters=[TransposeCodec(order=(1, 0))])
    array[0, 0] = np.zeros((2, 2))
    for cell in (array[...][2, 1], array.oindex[[1, 3], 2][1], array[1:4, 2][2]):
        assert type(cell) is np.ndarray and not cell.flags.writeable
        assert cell.tolist() == [[1.0, 1.0]]
    assert array[:1, 0][0].tolist() == [[0.0, 0.0], [0.0, 0.0]]
