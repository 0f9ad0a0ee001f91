"""Write xarray Datasets whose variables hold ragged ndarray cells (the ``xarray`` extra,
imported only when :func:`to_zarr` runs).

xarray's zarr backend casts an object variable to its first cell's dtype and creates arrays of
dtype ``object``, which zarr refuses. So :func:`to_zarr` lets ``Dataset.to_zarr`` write the other
variables and writes the ragged ones as ``ndarray`` arrays in the same group itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import zarr
from packaging.version import Version

from zarr_ndarray_dtype import Columnar, NDArrayDType, read_columnar, write_columnar
from zarr_ndarray_dtype.dask import check_blocks, shard_or_chunk
from zarr_ndarray_dtype.dask import to_zarr as write_blocks
from zarr_ndarray_dtype.errors import CellError, ElementDTypeError, NDArrayDTypeError

if TYPE_CHECKING:
    import xarray as xr

__all__ = [
    "ENCODING_KEYS",
    "XARRAY_MIN_VERSION",
    "RaggedVariableError",
    "infer_ndarray_dtype",
    "is_ragged",
    "to_zarr",
]

#: The oldest xarray this module works with: older ones cannot read zarr >= 3.1 stores back.
XARRAY_MIN_VERSION: Final = "2025.6.0"
#: Encoding keys a ragged variable accepts (all others are refused by name).
ENCODING_KEYS: Final = frozenset(
    {"dtype", "chunks", "shards", "compressors", "serializer", "fill_value", "chunk_key_encoding"}
)
_INHERITED_KEYS: Final = ("chunks", "shards", "compressors", "serializer")  # from .encoding
_MODES: Final = ("w", "w-", "a", "a-", "r+")


class RaggedVariableError(NDArrayDTypeError):
    """A ragged variable cannot be written as asked (cells, encoding, mode or target array)."""


# ------------------------------------------------------------------ the data type of cells

_Summary = tuple[set[str], set[np.dtype[Any]], set[tuple[int, ...]]]


def _summary(cells: np.ndarray) -> _Summary:
    """The types of the cells that are not arrays, and the dtypes and shapes of the others."""
    found: _Summary = (set(), set(), set())
    for cell in np.asarray(cells, dtype=object).reshape(-1):
        if cell is None:
            continue
        listed = isinstance(cell, list | tuple)
        try:
            array = np.asarray(cell) if listed else cell
        except ValueError:  # numpy refuses ragged nested lists
            found[0].add("ragged nested list")
            continue
        if not isinstance(array, np.ndarray) or array.dtype == object or not array.ndim:
            found[0].add(type(cell).__name__)
            continue
        if array.size or not listed:  # an empty list has no dtype of its own
            found[1].add(array.dtype.newbyteorder("="))
        found[2].add(array.shape)
    return found


def _summary_block(block: np.ndarray) -> np.ndarray:
    out = np.empty((1,) * block.ndim, dtype=object)
    out.reshape(-1)[0] = _summary(block)
    return out


def _data_type(data: Any, name: Hashable) -> NDArrayDType:
    """The data type of a variable's cells; a dask array is summarized block by block."""
    if getattr(data, "chunks", None) is not None and data.ndim:
        one = tuple((1,) * len(c) for c in data.chunks)
        parts = data.map_blocks(_summary_block, dtype=object, chunks=one).compute().reshape(-1)
        others, dtypes, shapes = (set().union(*found) for found in zip(*parts, strict=True))
    else:
        others, dtypes, shapes = _summary(data)
    ranks, convert = sorted({len(s) for s in shapes}), "convert the cells"
    refusals = [
        (others, f"mixes ndarray cells with {sorted(others)} cells (a cell is an array, or "
         "nested sequence, of numbers of at least one dimension, or None)", convert),
        (not shapes, "has no cell to infer the data type from (every cell is None)", ""),
        (len(ranks) > 1, f"holds cells of {len(ranks)} different numbers of dimensions {ranks}"
         "; an ndarray array's cells have the same", "reshape the cells, e.g. to (n, 1)"),
        (not dtypes, "holds only empty lists, which have no element dtype", ""),
    ]  # fmt: skip
    for bad, why, fix in refusals:
        if bad:
            raise _refused(name, why, fix)
    low, high = np.min(list(shapes), axis=0), np.max(list(shapes), axis=0)
    pattern = tuple(int(h) if lo == h and h else None for lo, h in zip(low, high, strict=True))
    natives, names = sorted(dtypes, key=str), sorted(map(str, dtypes))
    try:
        common = functools.reduce(np.promote_types, natives)
    except TypeError:
        raise _refused(name, f"has cells of dtypes {names} with no common numpy dtype") from None
    mantissa = np.finfo(common).nmant + 1 if common.kind in "fc" else 64  # exact integer bits
    if wide := [
        d for d in natives if d.kind in "iu" and d.itemsize * 8 - (d.kind == "i") > mantissa
    ]:
        why = f"has cells of dtypes {names} with no lossless common dtype (numpy gives {common}"
        raise _refused(name, f"{why}, which cannot hold every {wide[0]} value exactly)")
    try:
        return NDArrayDType(dtype=common, shape=pattern)
    except ElementDTypeError:
        why = f"has cells of dtype {common}, which is not an ndarray element dtype (numbers, bool)"
        raise _refused(name, why, convert) from None


def _refused(name: Hashable, why: str, fix: str = "") -> RaggedVariableError:
    """The refusal of a variable's cells, offering to pass the data type as the fix."""
    encoding = f"pass encoding={{{name!r}: {{'dtype': NDArrayDType(...)}}}} to choose one"
    return RaggedVariableError(f"variable {name!r} {why}; {fix + ' or ' if fix else ''}{encoding}.")


def infer_ndarray_dtype(cells: np.ndarray, name: Hashable = None) -> NDArrayDType:
    """The ``ndarray`` data type of an object array of cells (``None`` cells left out).

    Axes whose extent differs between cells, or is 0 in all, are variable (``None``); the
    element dtype is the smallest one that holds every value exactly (int64 with float64 cells
    is refused: no dtype holds both exactly).

    >>> import numpy as np
    >>> cells = np.empty(2, dtype=object)
    >>> cells[:] = [np.zeros((3, 2), "int16"), np.ones((1, 2), "float32")]
    >>> infer_ndarray_dtype(cells)
    NDArray(dtype='float32', shape=(None, 2))
    """
    return _data_type(cells, name)


def is_ragged(
    variable: xr.Variable | xr.DataArray, encoding: Mapping[str, Any] | None = None
) -> bool:
    """True if :func:`to_zarr` writes ``variable`` as an ``ndarray`` array: when
    ``encoding["dtype"]`` is an :class:`NDArrayDType`, or the variable has object dtype and its
    first non-``None`` cell is an ndarray, list or tuple (of a dask variable, in its first
    block). Object variables of strings or bytes are left to xarray."""
    if encoding is not None and isinstance(encoding.get("dtype"), NDArrayDType):
        return True
    if variable.dtype != object:
        return False
    data = variable.data
    if getattr(variable, "chunks", None) is not None and data.ndim:
        data = data.blocks[(0,) * data.ndim].compute()
    cell = next((c for c in np.asarray(data, dtype=object).reshape(-1) if c is not None), None)
    return isinstance(cell, np.ndarray | list | tuple)


# ---------------------------------------------------------------------------- the writer


def to_zarr(
    dataset: xr.Dataset,
    store: Any,
    *,
    mode: str | None = None,
    group: str | None = None,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    region: Mapping[Hashable, slice] | None = None,
    append_dim: Hashable | None = None,
    consolidated: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **to_zarr_kwargs: Any,
) -> None:
    """Write ``dataset`` to a Zarr v3 store; ragged variables (:func:`is_ragged`) become
    ``ndarray`` arrays, of data type ``encoding[name]["dtype"]`` or, for a new array,
    :func:`infer_ndarray_dtype` of the cells, with :data:`ENCODING_KEYS` (``None`` cells: the
    empty cell). ``dataset.to_zarr`` writes the rest; ``mode``, ``region`` (slices) and
    ``append_dim`` mean what they mean there, and the metadata is consolidated unless
    ``consolidated=False``. Encodings, target arrays, block alignment and every cell of
    numpy-backed ragged variables are checked before anything is written; dask-backed ones
    are written a block a task, and a refused block shrinks an append back.
    """
    _require_xarray()
    if to_zarr_kwargs.pop("zarr_format", 3) != 3 or to_zarr_kwargs.get("compute") is False:
        raise RaggedVariableError(
            "ndarray arrays exist in Zarr format 3 only, and ragged variables are written when "
            "to_zarr runs (compute=False is not supported): leave zarr_format and compute out."
        )
    mode = mode or ("a" if append_dim is not None else "r+" if region is not None else "w-")
    if mode not in _MODES:
        raise RaggedVariableError(f"mode={mode!r} is not one of {_MODES}.")
    encoding = dict(encoding or {})
    opened: Any = {"storage_options": storage_options} if storage_options else {}
    ragged = {n: v for n, v in dataset.variables.items() if is_ragged(v, encoding.get(n))}
    try:
        existing = (
            None
            if mode in ("w", "w-")
            else zarr.open_group(store, path=group or "", mode="r", **opened)
        )
    except FileNotFoundError:
        existing = None
    writes = [
        _checked(dataset, n, encoding.get(n, {}), existing, mode, region, append_dim)
        for n in ragged
    ]
    plain: Any = dataset.drop_vars(list(ragged))  # mode, region: checked above
    if plain.variables or (region is None and append_dim is None and mode != "r+"):
        plain.to_zarr(
            store, mode=mode, group=group, region=region, append_dim=append_dim, zarr_format=3,
            consolidated=False, encoding={k: v for k, v in encoding.items() if k not in ragged},
            **opened, **to_zarr_kwargs,
        )  # fmt: skip
    root = zarr.open_group(store, path=group or "", mode="r+", **opened)
    if not plain.variables and mode in ("a", "a-"):  # the attributes, as xarray appends them
        root.attrs.update(_attributes(dataset))
    for write in writes:
        write(root)
    if (coords := {str(n) for n in ragged if n in dataset.coords}) and mode != "r+":
        listed = str(root.attrs.get("coordinates", "")).split()  # xarray reads them back so
        root.attrs["coordinates"] = " ".join(sorted(coords.union(listed)))
    if consolidated is not False:
        zarr.consolidate_metadata(root.store_path.store, path=root.store_path.path)


def _checked(
    dataset: Any,
    name: Hashable,
    given: Mapping[str, Any],
    existing: zarr.Group | None,
    mode: str,
    region: Mapping[Hashable, Any] | None,
    append_dim: Hashable | None,
) -> Callable[[Any], None]:
    """The write of one ragged variable, everything about it checked first."""
    variable, stored = dataset.variables[name], existing and existing.get(str(name))
    dims, chunked = tuple(variable.dims), variable.chunks
    if name in dataset.indexes:
        raise RaggedVariableError(
            f"variable {name!r} is an index coordinate; an index cannot hold ragged cells. "
            "Make it a non-index coordinate (ds.reset_index) or a data variable."
        )
    if not isinstance(name, str):
        raise RaggedVariableError(f"variable name {name!r} is not a string; zarr needs one.")
    if unknown := sorted(set(given) - ENCODING_KEYS):
        raise RaggedVariableError(
            f"variable {name!r}: encoding keys {unknown} are not understood for a ragged "
            f"variable; the keys are {sorted(ENCODING_KEYS)}."
        )
    encoding = {k: variable.encoding[k] for k in _INHERITED_KEYS if k in variable.encoding}
    dtype = (encoding := encoding | dict(given)).pop("dtype", None)
    if dtype is not None and not isinstance(dtype, NDArrayDType):
        raise RaggedVariableError(
            f"variable {name!r}: encoding dtype {dtype!r} is not an NDArrayDType; pass "
            "NDArrayDType(dtype=..., shape=...) or leave it out to infer it from the cells."
        )
    if stored is not None and not isinstance(stored, zarr.Array):
        raise RaggedVariableError(f"{name!r} exists in the store but is not an array.")
    if stored is None:
        if mode == "r+" or region is not None:
            raise RaggedVariableError(
                f"variable {name!r} does not exist in the store; mode='r+' and region= write "
                "only into existing arrays. Use mode='a' without region to add it."
            )
        if dtype is not None and variable.dtype != object:
            raise RaggedVariableError(
                f"variable {name!r} has dtype {variable.dtype}, but encoding asks for {dtype!r}; "
                "an ndarray array needs an object variable whose cells are ndarrays."
            )
        dtype = dtype or _data_type(variable.data, name)
        if chunked and "chunks" not in encoding:
            encoding["chunks"] = tuple(max(c[0], 1) if c else 1 for c in chunked)
        selection, axis = tuple(slice(0, n) for n in variable.shape), None
        unit = encoding.get("shards") or encoding.get("chunks")
        kind = "shard" if encoding.get("shards") else "chunk"
    else:
        metadata: Any = stored.metadata
        stored_type, names = metadata.data_type, metadata.dimension_names
        if not isinstance(stored_type, NDArrayDType) or dtype not in (None, stored_type):
            raise RaggedVariableError(
                f"variable {name!r}: {dtype or 'an ndarray data type'} differs from the stored "
                f"data type {stored_type!r}; appends and region writes keep it (mode='w' "
                "replaces the array)."
            )
        if names is not None and tuple(names) != tuple(map(str, dims)):
            raise RaggedVariableError(
                f"variable {name!r} has dimensions {dims}, the stored array {tuple(names)}; "
                "transpose the variable to match."
            )
        axis = dims.index(append_dim) if append_dim in dims else None
        if mode == "a-" and append_dim is not None and axis is None:
            return lambda root: None  # as xarray: "a-" leaves it alone
        shape, parts = list(stored.shape), [(region or {}).get(dim, slice(None)) for dim in dims]
        if axis is not None:  # the appended cells go at the end of the grown array
            shape[axis] += variable.shape[axis]
            parts[axis] = slice(shape[axis] - variable.shape[axis], None)
        for dim, part in zip(dims, parts, strict=True):
            if not isinstance(part, slice) or part.step not in (None, 1):
                raise RaggedVariableError(
                    f"variable {name!r}: region[{dim!r}] is {part!r}; ragged variables take "
                    "region slices with step 1 (e.g. slice(10, 20)), not 'auto' or indices."
                )
        selection = tuple(slice(*p.indices(n)[:2]) for p, n in zip(parts, shape, strict=True))
        if (fits := tuple(s.stop - s.start for s in selection)) != variable.shape:
            raise RaggedVariableError(
                f"variable {name!r} of shape {variable.shape} does not fit the stored array of "
                f"shape {tuple(stored.shape)} ({fits} there); use region= or append_dim= (the "
                "other dimensions equal), or mode='w' to replace the array."
            )
        dtype, (unit, kind) = stored_type, shard_or_chunk(stored)
    if chunked and isinstance(unit, int):
        unit = (unit,) * len(dims)
    if chunked and isinstance(unit, tuple | list) and all(isinstance(n, int) for n in unit):
        fix: Any = {"what": f"variable {name!r}", "keys": dims, "rechunk": "ds.chunk"}
        starts = [s.start for s in selection]
        check_blocks(chunked, starts, unit, kind, **fix, error=RaggedVariableError)
    like = {"fill_value": encoding.get("fill_value"), "serializer": encoding.get("serializer")}
    if stored is not None:
        like = {"fill_value": stored.metadata.fill_value, "serializer": stored.serializer}
    columns = None if chunked else _columns(name, variable, dtype, like)

    def write(root: Any) -> None:
        attrs = _attributes(variable)
        if stored is None:
            array = root.create_array(
                name, shape=variable.shape, dtype=dtype, dimension_names=list(map(str, dims)),
                attributes=attrs, overwrite=mode == "w", **{"chunks": "auto", **encoding},
            )  # fmt: skip
        else:
            array = root[name]
            if mode in ("a", "a-"):
                array.attrs.update(attrs)
        if not variable.size:
            return
        old = tuple(array.shape)
        if axis is not None:
            array.resize(tuple(s.stop for s in selection))
        try:
            if columns is None:
                write_blocks(variable.data, array, region=selection)
            else:
                write_columnar(
                    array, columns.values, columns.offsets, selection, shapes=columns.shapes
                )
        except BaseException:
            if axis is not None:  # a failed append leaves the array as it was
                array.resize(old)
            raise

    return write


def _columns(name: Hashable, variable: Any, dtype: NDArrayDType, like: Any) -> Columnar:
    """The cells of a numpy-backed variable as columns, each converted and checked by zarr's
    object write of ``dtype`` into an array in memory ``like`` the target (its fill value and
    serializer): one that does not fit is refused, and named, before anything is written."""
    cells = np.asarray(variable.values, dtype=object)
    chunks = tuple(max(n, 1) for n in cells.shape)
    zarr_dtype: Any = dtype  # zarr's annotation names its own data types
    like["serializer"] = like["serializer"] or "auto"
    scratch = zarr.create_array(
        {}, shape=cells.shape, chunks=chunks, dtype=zarr_dtype, compressors=None, **like
    )
    try:
        scratch[...] = cells
    except CellError as exc:
        raise type(exc)(f"variable {name!r} (dimensions {variable.dims}): {exc}") from None
    return read_columnar(scratch)


def _attributes(owner: Any) -> dict[str, Any]:
    """``owner.attrs`` as JSON values (numpy scalars and arrays as Python ones)."""
    plain = (np.ndarray, np.generic)
    return {str(k): v.tolist() if isinstance(v, plain) else v for k, v in owner.attrs.items()}


def _require_xarray() -> None:
    try:
        import xarray as xr
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "zarr_ndarray_dtype.xarray needs xarray: pip install 'zarr-ndarray-dtype[xarray]'"
        ) from exc
    if Version(xr.__version__).release < Version(XARRAY_MIN_VERSION).release:
        raise ImportError(
            f"zarr_ndarray_dtype.xarray needs xarray >= {XARRAY_MIN_VERSION} (the first release "
            f"that reads zarr >= 3.1 stores back); found {xr.__version__}. Upgrade xarray."
        )
