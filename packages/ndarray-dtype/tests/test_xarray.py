"""zarr_ndarray_dtype.xarray: Datasets with ragged variables written with to_zarr, read back with
xr.open_zarr, compared cell by cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarr_ndarray_dtype import ELEMENT_DTYPES, CellError
from zarr_ndarray_dtype import NDArrayDType as NDArray
from zarr_ndarray_dtype.xarray import (
    XARRAY_MIN_VERSION,
    RaggedVariableError,
    infer_ndarray_dtype,
    is_ragged,
    to_zarr,
)

xr = pytest.importorskip("xarray", minversion=XARRAY_MIN_VERSION)
# Variable patterns are written by the vlen-ndarray codec (installed in the test matrix).
pytest.importorskip("zarr_vlen_ndarray")

# zarr 3.1.x warns when xarray writes the Dataset's string variables (not ours).
pytestmark = pytest.mark.filterwarnings("ignore:The codec `vlen-utf8`:UserWarning")


def cells_of(*items: Any) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def ragged(n: int, seed: int = 0, dtype: str = "float32", width: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return cells_of(
        *(rng.normal(size=(int(k), width)).astype(dtype) for k in rng.integers(0, 5, size=n))
    )


def assert_cells(actual: Any, expected: np.ndarray, dtype: NDArray) -> None:
    """Every cell equal in shape, dtype and values (None cells read back as empty cells)."""
    got = np.asarray(actual, dtype=object)
    assert got.shape == expected.shape
    for index in np.ndindex(expected.shape):
        want = expected[index]
        cell = got[index]
        assert isinstance(cell, np.ndarray), index
        assert cell.dtype == dtype.item_dtype, index
        if want is None:
            assert cell.shape == dtype.pattern.empty_shape, index
        else:
            np.testing.assert_array_equal(cell, np.asarray(want).astype(dtype.item_dtype))
            assert cell.shape == np.shape(want), index


def read(store: Any, **kwargs: Any) -> Any:
    return xr.open_zarr(store, consolidated=False, **kwargs).compute()


def sample() -> Any:
    points = ragged(6, seed=1)
    points[2] = None
    labels = cells_of(*(np.arange(k, dtype="int16") for k in (0, 3, 1, 2, 5, 1)))
    return xr.Dataset(
        {
            "points": (("cell",), points, {"units": "m", "count": np.int64(6)}),
            "mass": (("cell",), np.linspace(0.0, 1.0, 6), {"units": "kg"}),
            "name": (("cell",), np.array(["a", "bb", "c", "d", "e", "f"], dtype=object)),
        },
        coords={"cell": np.arange(10, 16), "labels": (("cell",), labels)},
        attrs={"title": "ragged sample"},
    )


# ---------------------------------------------------------------------------- xarray alone


def test_plain_xarray_still_fails_so_this_module_is_needed() -> None:
    """Pins the investigated failure: if xarray learns to write ndarray cells, revisit."""
    ds = xr.Dataset({"v": (("cell",), ragged(3))})
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        ds.to_zarr({}, zarr_format=3, consolidated=False)


# --------------------------------------------------------------------------------- inference


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([np.zeros((3, 2), "int16"), np.ones((1, 2), "float32")], ("float32", (None, 2))),
        ([np.zeros((3,), "uint8"), np.zeros((3,), "int8")], ("int16", (3,))),
        ([np.zeros((2, 4), "<i4"), np.zeros((2, 1), ">i4")], ("int32", (2, None))),
        ([np.zeros((2, 4), "f2"), np.zeros((3, 1), "i2")], ("float32", (None, None))),
        ([np.zeros((0,), "bool"), None, np.zeros((0,), "bool")], ("bool", (None,))),
        ([[1, 2, 3], [], [4]], ("int64", (None,))),
        ([np.zeros((2,), "int32"), np.zeros((1,), "complex64")], ("complex128", (None,))),
    ],
)
def test_infer_ndarray_dtype(items: list[Any], expected: tuple[str, tuple[Any, ...]]) -> None:
    dtype, shape = expected
    assert infer_ndarray_dtype(cells_of(*items)) == NDArray(dtype=dtype, shape=shape)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([np.zeros(2, "int64"), np.zeros(2, "float64")], "no lossless common dtype"),
        ([np.zeros(2, "uint64"), np.zeros(2, "int8")], "no lossless common dtype"),
        ([np.zeros(2), np.zeros((2, 2))], "different numbers of dimensions"),
        ([np.zeros(2), "text"], "mixes ndarray cells"),
        ([None, None], "no cell to infer"),
        ([[], []], "empty list"),
        ([np.array(["a", "b"])], "not an ndarray element dtype"),
        ([np.zeros(2, "float64"), np.zeros(2, "datetime64[s]")], r"datetime64\[s\], which is not"),
    ],
)
def test_infer_refuses(items: list[Any], message: str) -> None:
    with pytest.raises(RaggedVariableError, match=message):
        infer_ndarray_dtype(cells_of(*items), name="v")


def finite_cells(dtype: str, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    elements = None
    if np.dtype(dtype).kind in "fc":
        elements = {"allow_nan": False, "allow_infinity": False}
    return hnp.arrays(np.dtype(dtype), shape, elements=elements)


@st.composite
def cell_lists(draw: st.DrawFn) -> list[np.ndarray]:
    ndim = draw(st.integers(1, 3))
    dtypes = draw(st.lists(st.sampled_from(ELEMENT_DTYPES), min_size=1, max_size=3))
    shape = st.tuples(*[st.integers(0, 3)] * ndim)
    return [draw(finite_cells(draw(st.sampled_from(dtypes)), draw(shape))) for _ in range(4)]


@given(cell_lists())
def test_inferred_dtype_holds_every_cell_exactly(items: list[np.ndarray]) -> None:
    try:
        dtype = infer_ndarray_dtype(cells_of(*items))
    except RaggedVariableError as exc:
        refusal = str(exc)
    else:
        refusal = ""
    if refusal:
        assert "no lossless common dtype" in refusal
        return
    for cell in items:
        converted = dtype.coerce_cell(cell)  # refuses every lossy conversion
        assert converted.shape == cell.shape
        assert converted.tolist() == cell.tolist()  # Python compares int and float exactly
    for axis, extent in enumerate(dtype.shape):
        extents = {cell.shape[axis] for cell in items}
        assert (extent is None) == (len(extents) > 1 or extents == {0})


@settings(max_examples=15)
@given(
    dtype=st.sampled_from(ELEMENT_DTYPES),
    width=st.sampled_from([(), (1,), (3,)]),
    lengths=st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=1, max_size=9),
    chunk=st.integers(1, 4),
    data=st.data(),
)
def test_round_trip_property(
    dtype: str,
    width: tuple[int, ...],
    lengths: list[int | None],
    chunk: int,
    data: st.DataObject,
) -> None:
    items = [None if n is None else data.draw(finite_cells(dtype, (n, *width))) for n in lengths]
    cells = cells_of(*items)
    ndarray = NDArray(dtype=dtype, shape=(None, *width))
    store: dict[str, Any] = {}
    encoding = {"v": {"dtype": ndarray, "chunks": (chunk,)}}
    to_zarr(xr.Dataset({"v": (("cell",), cells)}), store, encoding=encoding)
    assert_cells(read(store)["v"].values, cells, ndarray)


def test_is_ragged() -> None:
    ds = sample()
    assert is_ragged(ds["points"].variable)
    assert is_ragged(ds["labels"].variable)
    assert not is_ragged(ds["name"].variable)  # strings stay with xarray
    assert not is_ragged(ds["mass"].variable)
    assert is_ragged(ds["mass"].variable, {"dtype": NDArray(dtype="float64", shape=(None,))})


# ------------------------------------------------------------------------------ round trips


@pytest.mark.plain_zarr  # a plain variable of a data type zarrs cannot write (strings)
def test_round_trip_new_store(tmp_path: Path) -> None:
    ds = sample()
    store = str(tmp_path / "sample.zarr")
    to_zarr(ds, store)
    back = read(store)

    points = zarr.open_array(store, path="points")
    assert points.metadata.data_type == NDArray(dtype="float32", shape=(None, 2))
    assert points.metadata.dimension_names == ("cell",)
    assert points.attrs["units"] == "m"
    assert points.attrs["count"] == 6
    labels = zarr.open_array(store, path="labels")
    assert labels.metadata.data_type == NDArray(dtype="int16", shape=(None,))

    assert set(back.data_vars) == {"points", "mass", "name"}
    assert set(back.coords) == {"cell", "labels"}
    assert back.attrs["title"] == "ragged sample"
    assert back["points"].attrs == {"units": "m", "count": 6}
    assert back["points"].dims == ("cell",)
    assert_cells(back["points"].values, ds["points"].values, points.metadata.data_type)
    assert_cells(back["labels"].values, ds["labels"].values, labels.metadata.data_type)
    plain = ["mass", "name"]
    xr.testing.assert_identical(back[plain].drop_vars("labels"), ds[plain].drop_vars("labels"))


def test_ragged_only_dataset_in_a_group() -> None:
    store: dict[str, Any] = {}
    cells = ragged(5, seed=2, dtype="int32", width=3)
    ds = xr.Dataset({"v": (("cell",), cells)})
    to_zarr(ds, store, group="a/b")
    back = read(store, group="a/b")
    assert_cells(back["v"].values, cells, NDArray(dtype="int32", shape=(None, 3)))


def test_two_dimensional_variable() -> None:
    store: dict[str, Any] = {}
    grid = np.empty((4, 3), dtype=object)
    for i, j in np.ndindex(grid.shape):
        grid[i, j] = np.full(i + j, i * 10 + j, dtype="uint16")
    ds = xr.Dataset({"g": (("y", "x"), grid)})
    to_zarr(ds, store, encoding={"g": {"chunks": (2, 3)}})
    assert zarr.open_array(store, path="g").chunks == (2, 3)
    back = read(store)
    assert back["g"].dims == ("y", "x")
    assert_cells(back["g"].values, grid, NDArray(dtype="uint16", shape=(None,)))


def test_encoding_dtype_and_codecs() -> None:
    store: dict[str, Any] = {}
    cells = cells_of([1, 2], [3], None, [4, 5, 6])
    dtype = NDArray(dtype="float64", shape=(None,))
    encoding = {"v": {"dtype": dtype, "chunks": (2,), "compressors": None}}
    to_zarr(xr.Dataset({"v": (("cell",), cells)}), store, encoding=encoding)
    array = zarr.open_array(store, path="v")
    assert array.metadata.data_type == dtype
    assert array.chunks == (2,)
    assert array.compressors == ()
    assert_cells(read(store)["v"].values, cells, dtype)


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_none_cells_are_the_fill_cell(chunked: bool) -> None:
    """As README says: ``None`` is the variable's fill cell, the empty cell without one."""
    if chunked:
        pytest.importorskip("dask.array")
    store: dict[str, Any] = {}
    fill = np.full((1, 2), 7.0)
    ds = xr.Dataset({"v": (("cell",), cells_of(np.ones((1, 2)), None, np.ones((1, 2))))})
    ds = ds.chunk({"cell": 1}) if chunked else ds
    to_zarr(ds, store, encoding={"v": {"fill_value": fill}})
    back = read(store)["v"].values
    np.testing.assert_array_equal(back[1], fill)
    np.testing.assert_array_equal(back[2], np.ones((1, 2)))


def test_encoding_refusals() -> None:
    ds = xr.Dataset({"v": (("cell",), ragged(3))})
    with pytest.raises(RaggedVariableError, match=r"encoding keys \['units'\]"):
        to_zarr(ds, {}, encoding={"v": {"units": "m"}})
    with pytest.raises(RaggedVariableError, match="encoding dtype 'float32' must be an NDArr"):
        to_zarr(ds, {}, encoding={"v": {"dtype": "float32"}})
    plain = xr.Dataset({"v": (("cell",), np.arange(3.0))})
    with pytest.raises(RaggedVariableError, match=r"of dtype float64: .* for an object variab"):
        to_zarr(plain, {}, encoding={"v": {"dtype": NDArray(dtype="float64", shape=(None,))}})
    with pytest.raises(RaggedVariableError, match=r"zarr_format=2: .* new Zarr v3 store"):
        to_zarr(ds, {}, zarr_format=2)
    with pytest.raises(RaggedVariableError, match="compute=False"):
        to_zarr(ds, {}, compute=False)
    with pytest.raises(RaggedVariableError, match="mode='x'"):
        to_zarr(ds, {}, mode="x")


def test_cells_that_do_not_fit_the_given_dtype_are_refused() -> None:
    ds = xr.Dataset({"v": (("cell",), cells_of(np.array([1.5]), np.array([2.0])))})
    ds["w"] = (("cell",), np.arange(2.0))
    store: dict[str, Any] = {}
    with pytest.raises(CellError, match=r"variable 'v' \(dimensions \('cell',\)\): cell \(0,\)"):
        to_zarr(ds, store, encoding={"v": {"dtype": NDArray(dtype="int32", shape=(None,))}})
    assert not store  # refused before anything was written, the plain variable too


@pytest.mark.parametrize(("value", "exact"), [(2**24, True), (2**24 + 1, False)])
def test_integer_cells_into_a_float_dtype_must_be_exact(value: int, exact: bool) -> None:
    ds = xr.Dataset({"v": (("cell",), cells_of(np.array([value, 1]), np.array([2])))})
    encoding = {"v": {"dtype": NDArray(dtype="float32", shape=(None,))}}
    if exact:
        store: dict[str, Any] = {}
        to_zarr(ds, store, encoding=encoding)
        assert int(read(store)["v"].values[0][0]) == value
        return
    with pytest.raises(CellError, match=f"holds the integer {value}"):
        to_zarr(ds, {}, encoding=encoding)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"mode": "a"}, "mode='a'"),
        ({"mode": "a-", "append_dim": "cell"}, "mode='a-', append_dim='cell'"),
        ({"mode": "r+"}, "mode='r+'"),
        ({"append_dim": "cell"}, "append_dim='cell'"),
        ({"region": {"cell": slice(0, 3)}}, "region={'cell': slice(0, 3"),
    ],
)
def test_writes_into_existing_arrays_are_refused_naming_the_alternative(
    kwargs: dict[str, Any], named: str
) -> None:
    store: dict[str, Any] = {}
    to_zarr(xr.Dataset({"v": (("cell",), ragged(3))}), store)
    before = dict(store)
    with pytest.raises(RaggedVariableError) as info:
        to_zarr(xr.Dataset({"v": (("cell",), ragged(3, seed=1))}), store, **kwargs)
    assert str(info.value).startswith(named)
    assert "zarr_ndarray_dtype.dask.to_zarr(darr, array, region=...)" in str(info.value)
    assert dict(store) == before


def test_index_coordinate_cannot_be_ragged() -> None:
    ds = xr.Dataset(coords={"cell": (("cell",), ragged(3))})
    with pytest.raises(RaggedVariableError, match="index coordinate"):
        to_zarr(ds, {})


# ------------------------------------------------------------------------------------ modes


def test_mode_w_minus_refuses_and_w_replaces() -> None:
    store: dict[str, Any] = {}
    to_zarr(xr.Dataset({"v": (("cell",), ragged(3, seed=3))}), store)
    with pytest.raises(Exception, match=r"(?i)exist|contains"):
        to_zarr(xr.Dataset({"v": (("cell",), ragged(3, seed=4))}), store)
    replacement = ragged(4, seed=5, dtype="float64", width=1)
    to_zarr(xr.Dataset({"v": (("cell",), replacement)}), store, mode="w")
    back = read(store)
    assert_cells(back["v"].values, replacement, NDArray(dtype="float64", shape=(None, 1)))


@pytest.mark.parametrize("consolidated", [None, True])
def test_metadata_is_consolidated_by_default_as_xarray_does(consolidated: bool | None) -> None:
    store: dict[str, Any] = {}
    to_zarr(sample(), store, consolidated=consolidated)
    assert "consolidated_metadata" in json.loads(store["zarr.json"].to_bytes())
    back = xr.open_zarr(store).compute()  # no "Failed to open ... consolidated" RuntimeWarning
    assert "points" in back


def test_consolidated_false_writes_no_consolidated_metadata() -> None:
    store: dict[str, Any] = {}
    to_zarr(sample(), store, consolidated=False)
    assert json.loads(store["zarr.json"].to_bytes()).get("consolidated_metadata") is None
    with pytest.warns(RuntimeWarning, match="consolidated"):
        xr.open_zarr(store)


# ------------------------------------------------------------------------------------- dask


@pytest.fixture
def dask_array() -> Any:
    return pytest.importorskip("dask.array")


def test_dask_written_block_by_block(dask_array: Any) -> None:
    cells = ragged(10, seed=7)
    ds = xr.Dataset({"v": (("cell",), cells)}).chunk({"cell": 4})
    seen: list[int] = []

    def track(block: np.ndarray) -> np.ndarray:
        seen.append(len(block))
        return block

    ds["v"] = ds["v"].copy(data=ds["v"].data.map_blocks(track, dtype=object))
    store: dict[str, Any] = {}
    to_zarr(ds, store)
    array = zarr.open_array(store, path="v")
    assert array.chunks == (4,)
    # Blocks are computed one at a time (to infer the dtype, then to write), never all at once;
    # dask itself may call with an empty block to learn the output type.
    assert set(seen) <= {0, 2, 4}
    assert seen.count(2) == 2
    assert_cells(read(store)["v"].values, cells, NDArray(dtype="float32", shape=(None, 2)))

    with pytest.raises(RaggedVariableError, match=r"end at 4, inside a chunk \(5 cells"):
        to_zarr(ds, {}, encoding={"v": {"chunks": (5,)}})


def test_a_2d_refusal_suggests_the_whole_mapping(dask_array: Any) -> None:
    """Copying a sharded 2-d variable whose blocks straddle shards along both axes: the message
    gives the one ``ds.chunk`` call that fixes both, which then writes."""
    cells = np.empty((16, 16), dtype=object)
    cells.reshape(-1)[:] = list(ragged(256, seed=5))
    ds = xr.Dataset({"v": (("y", "x"), cells)}).chunk({"y": 4, "x": 4})
    store: dict[str, Any] = {}
    encoding = {"v": {"chunks": (4, 4), "shards": (8, 8)}}
    with pytest.raises(RaggedVariableError) as info:
        to_zarr(ds, store, encoding=encoding)
    suggested = str(info.value).rsplit("ds.chunk(", 1)[1][:-1]
    assert suggested == "{'y': 8, 'x': 8}"
    to_zarr(ds.chunk(eval(suggested)), store, encoding=encoding)
    assert_cells(read(store)["v"].values, cells, NDArray(dtype="float32", shape=(None, 2)))


def test_dask_blocks_sharing_a_shard_are_refused(dask_array: Any) -> None:
    """Blocks of 4 cells into chunks of 4 in shards of 8: each block writes its own inner chunk,
    but zarr rewrites the whole shard on a partial write, so two tasks would race (each one's
    shard holding the other's cells as they were). Refused, with zarr's spelling of shards too."""
    ds = xr.Dataset({"v": (("cell",), ragged(16, seed=3))}).chunk({"cell": 4})
    store: dict[str, Any] = {}
    with pytest.raises(
        RaggedVariableError, match=r"end at 4, inside a shard .* ds.chunk\(\{'cell': 8\}\)"
    ):
        to_zarr(ds, store, encoding={"v": {"chunks": (4,), "shards": (8,)}})
    assert not store  # refused before anything was written
    at_start = {"shape": (8,), "index_location": "start"}
    with pytest.raises(RaggedVariableError, match="inside a shard"):
        to_zarr(ds, store, encoding={"v": {"shards": at_start}})
    assert not store
    to_zarr(ds.chunk({"cell": 8}), store, encoding={"v": {"chunks": (4,), "shards": at_start}})
    assert zarr.open_array(store, path="v").shards == (8,)
    expected = ds["v"].values
    assert_cells(read(store)["v"].values, expected, NDArray(dtype="float32", shape=(None, 2)))
