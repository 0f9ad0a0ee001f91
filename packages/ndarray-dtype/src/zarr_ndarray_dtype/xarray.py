"""Write xarray Datasets with ragged variables (the ``xarray`` extra): ``Dataset.to_zarr`` casts
an object variable to its first cell's dtype, so it writes the others and this module these."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import zarr

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType, read_columnar, write_columnar
from zarr_ndarray_dtype.dask import check_blocks, shard_or_chunk
from zarr_ndarray_dtype.dask import to_zarr as write_blocks
from zarr_ndarray_dtype.errors import CellError, NDArrayDTypeError

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["RaggedVariableError", "infer_ndarray_dtype", "is_ragged", "to_zarr"]

#: The oldest xarray (the extra's floor): older ones cannot read zarr >= 3.1 stores back.
XARRAY_MIN_VERSION: Final = "2025.6.0"
_INHERITED_KEYS: Final = ("chunks", "shards", "compressors", "serializer")  # from .encoding
#: Encoding keys a ragged variable accepts (all others are refused by name).
ENCODING_KEYS: Final = frozenset((*_INHERITED_KEYS, "dtype", "fill_value", "chunk_key_encoding"))


class RaggedVariableError(NDArrayDTypeError):
    """A ragged variable cannot be written as asked (cells, encoding or mode)."""


def _summary(cells: Any) -> set[tuple[Any, tuple[int, ...] | None]]:
    """``(dtype, shape)`` of each cell but None (empty list: no dtype; no array: type name)."""
    found = set()
    for cell in np.asarray(cells, dtype=object).flat:
        try:
            array, kind = np.asarray(cell), type(cell).__name__
        except ValueError:  # numpy refuses ragged nested lists
            array, kind = np.asarray(None), "ragged nested list"
        if array.dtype != object and array.ndim:
            empty = kind in ("list", "tuple") and not array.size
            found.add((None if empty else array.dtype.newbyteorder("="), array.shape))
        elif cell is not None:
            found.add((kind, None))
    return found


def infer_ndarray_dtype(cells: Any, name: Hashable = None) -> NDArrayDType:
    """The data type of an object array of cells (numpy or dask; ``None`` left out): axes whose
    extent differs between cells, or is 0 in all, are variable; the element dtype is the
    smallest that holds every value exactly (none holds both int64 and float64)."""
    if getattr(cells, "chunks", None) is not None and cells.ndim:  # dask: a task a block
        import dask

        parts = map(dask.delayed(_summary), cells.to_delayed().flat)  # type: ignore[attr-defined]
        found = set().union(*dask.compute(*parts))  # type: ignore[attr-defined, no-untyped-call]
    else:
        found = _summary(cells)
    others = sorted(d for d, s in found if s is None)
    dtypes = sorted({d for d, s in found if s is not None and d is not None}, key=str)
    shapes = {s for d, s in found if s is not None}
    names, ranks = list(map(str, dtypes)), sorted({len(s) for s in shapes})
    refusals = [
        (others, f"mixes ndarray cells with {others} cells (a cell is an array, or nested "
         "sequence, of numbers of at least one dimension, or None)", "convert the cells"),
        (not shapes, "has no cell to infer the data type from (every cell is None)", ""),
        (len(ranks) > 1, f"holds cells of {len(ranks)} different numbers of dimensions {ranks}"
         "; an ndarray array's cells have the same", "reshape the cells, e.g. to (n, 1)"),
        (not dtypes, "holds only empty lists, which have no element dtype", ""),
    ]  # fmt: skip
    for bad, why, fix in refusals:
        if bad:
            raise _refused(name, why, fix)
    if bad := [d for d in dtypes if d.name not in ELEMENT_DTYPES]:
        why = f"has cells of dtype {bad[0]}, which is not an ndarray element dtype (numbers, bool)"
        raise _refused(name, why, "convert the cells")
    common = np.result_type(*dtypes)
    exact = np.finfo(common).nmant + 1 if common.kind in "fc" else 64  # integer bits held
    if wide := [d for d in dtypes if d.kind in "iu" and d.itemsize * 8 - (d.kind == "i") > exact]:
        why = f"has cells of dtypes {names} with no lossless common dtype (numpy gives {common}"
        raise _refused(name, f"{why}, which cannot hold every {wide[0]} value exactly)")
    low, high = np.min(list(shapes), axis=0), np.max(list(shapes), axis=0)
    pattern = tuple(int(h) if lo == h and h else None for lo, h in zip(low, high, strict=True))
    return NDArrayDType(dtype=common.name, shape=pattern)


def _refused(name: Hashable, why: str, fix: str = "") -> RaggedVariableError:
    encoding = f"pass encoding={{{name!r}: {{'dtype': NDArrayDType(...)}}}} to choose one"
    return RaggedVariableError(f"variable {name!r} {why}; {fix + ' or ' if fix else ''}{encoding}.")


def is_ragged(
    variable: xr.Variable | xr.DataArray, encoding: Mapping[str, Any] | None = None
) -> bool:
    """True if :func:`to_zarr` writes ``variable`` as an ``ndarray`` array: ``encoding["dtype"]``
    is an :class:`NDArrayDType`, or its first non-``None`` cell (of a dask variable: in its first
    block) is an ndarray, list or tuple (strings and bytes are left to xarray)."""
    if isinstance((encoding or {}).get("dtype"), NDArrayDType):
        return True
    if variable.dtype != object:
        return False
    data = variable.data
    if getattr(variable, "chunks", None) and data.ndim:  # dask: its first block
        data = data.blocks[(0,) * data.ndim].compute()
    cell = next((c for c in np.asarray(data, dtype=object).flat if c is not None), None)
    return isinstance(cell, np.ndarray | list | tuple)


def to_zarr(
    dataset: xr.Dataset,
    store: Any,
    *,
    mode: str = "w-",
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    consolidated: bool | None = None,
    **to_zarr_kwargs: Any,
) -> None:
    """Write ``dataset`` to a new Zarr v3 store or group (``mode`` ``"w-"``, or ``"w"`` to
    replace it): ragged variables (:func:`is_ragged`) as ``ndarray`` arrays of data type
    ``encoding[name]["dtype"]`` or :func:`infer_ndarray_dtype`, with :data:`ENCODING_KEYS`
    (``None`` cells: the fill cell), the rest by ``dataset.to_zarr``; metadata consolidated
    unless ``consolidated=False``. Nothing is written before every ragged variable's blocks,
    or cells if numpy-backed, are checked."""
    asked = {"mode": mode, "zarr_format": to_zarr_kwargs.pop("zarr_format", 3)}
    asked |= {key: to_zarr_kwargs.get(key) for key in ("compute", "region", "append_dim")}
    allowed = {"mode": ("w", "w-"), "zarr_format": (3,), "compute": (None, True)}
    if bad := [f"{k}={v!r}" for k, v in asked.items() if v not in allowed.get(k, (None,))]:
        raise RaggedVariableError(
            f"{', '.join(bad)}: ragged variables are written when to_zarr runs, into a new Zarr "
            "v3 store or group (mode 'w-', or 'w' to replace it). Write into an existing ndarray "
            "array with zarr_ndarray_dtype.dask.to_zarr(darr, array, region=...) or write_columnar."
        )
    encoding = dict(encoding or {})
    ragged = [n for n, v in dataset.variables.items() if is_ragged(v, encoding.get(n))]
    probes = [_checked(dataset, name, encoding.get(name, {})) for name in ragged]
    plain = {k: v for k, v in encoding.items() if k not in ragged}
    kwargs: Any = {"mode": mode, "zarr_format": 3, "consolidated": False, "encoding": plain}
    root = dataset.drop_vars(ragged).to_zarr(store, **kwargs, **to_zarr_kwargs).zarr_group
    for name, (create, probe) in zip(ragged, probes, strict=True):
        array = root.create_array(name, overwrite=mode == "w", **create)
        if (variable := dataset.variables[name]).chunks:
            write_blocks(variable.data, array)
        elif variable.size:
            write_columnar(array, *(columns := read_columnar(probe)), shapes=columns.shapes)
    if coords := {str(n) for n in ragged if n in dataset.coords}:  # so xarray reads them back
        coords.update(str(root.attrs.get("coordinates", "")).split())
        root.attrs["coordinates"] = " ".join(sorted(coords))
    if consolidated is not False:
        zarr.consolidate_metadata(root.store_path.store, path=root.store_path.path)


def _checked(dataset: Any, name: Hashable, given: Mapping[str, Any]) -> tuple[Any, zarr.Array]:
    """A ragged variable's ``create_array`` keywords, all checked, and an array in memory with
    its cells if numpy-backed (each converted and checked)."""
    variable, dims = dataset.variables[name], tuple(dataset.variables[name].dims)
    if name in dataset.indexes:
        raise RaggedVariableError(
            f"variable {name!r} is an index coordinate, which cannot hold ragged cells: make it "
            "a non-index coordinate (ds.reset_index) or a data variable."
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
    if dtype is not None and (not isinstance(dtype, NDArrayDType) or variable.dtype != object):
        raise RaggedVariableError(
            f"variable {name!r} of dtype {variable.dtype}: encoding dtype {dtype!r} must be an "
            "NDArrayDType(dtype=..., shape=...), for an object variable of ndarray cells; or "
            "leave it out to infer it from the cells."
        )
    if chunked := variable.chunks:
        encoding.setdefault("chunks", tuple(max(c[0], 1) if c else 1 for c in chunked))
    create = {
        "shape": variable.shape, "dtype": dtype or infer_ndarray_dtype(variable.data, name),
        "dimension_names": list(map(str, dims)), "chunks": "auto", **encoding,
        "attributes": {str(k): v.tolist() if isinstance(v, np.ndarray | np.generic) else v
                       for k, v in variable.attrs.items()},  # as JSON values
    }  # fmt: skip
    whole = {} if chunked else {"chunks": tuple(max(n, 1) for n in variable.shape), "shards": None}
    probe = zarr.create_array({}, **{**create, "compressors": None, **whole})  # in memory
    if chunked:
        fix: Any = {"what": f"variable {name!r}", "keys": dims, "rechunk": "ds.chunk"}
        unit, kind = shard_or_chunk(probe)
        check_blocks(chunked, (0,) * len(dims), unit, kind, **fix, error=RaggedVariableError)
    else:  # every cell converted and checked by zarr's object write, at once
        try:
            probe[...] = np.asarray(variable.values, dtype=object)
        except CellError as exc:
            raise type(exc)(f"variable {name!r} (dimensions {dims}): {exc}") from None
    return create, probe
