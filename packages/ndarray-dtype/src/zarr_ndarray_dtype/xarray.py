"""Write xarray Datasets whose variables hold ragged ndarray cells (the ``xarray`` extra,
imported only when :func:`to_zarr` runs).

``Dataset.to_zarr`` cannot write them: its zarr backend casts an object variable to the dtype of
its first cell ("setting an array element with a sequence") and creates arrays from the numpy
dtype ``object``, which zarr refuses; no hook changes either. So :func:`to_zarr` hands every
other variable and the attributes to ``Dataset.to_zarr`` and writes each ragged variable as an
``ndarray`` array itself, with the same ``mode``, ``region`` and ``append_dim``, consolidating
the metadata last; ``xr.open_zarr`` reads them back as object variables of read-only cells.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import zarr
from packaging.version import Version

from zarr_ndarray_dtype._columns import gather as gather_cells
from zarr_ndarray_dtype._grid import resolve
from zarr_ndarray_dtype._infer import (
    RaggedVariableError,
    dtype_of,
    infer_ndarray_dtype,
    inspect_data,
)
from zarr_ndarray_dtype._write import write_cells
from zarr_ndarray_dtype.blocks import FlatCells as Cells
from zarr_ndarray_dtype.dask import check_blocks, shard_or_chunk
from zarr_ndarray_dtype.dask import to_zarr as write_blocks
from zarr_ndarray_dtype.dtype import NDArrayDType as NDArray

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

#: The oldest xarray release this module is tested with (the ``xarray`` extra's floor). Older
#: releases fail to read float variables of stores written by zarr >= 3.1 (they expect
#: ``metadata.data_type.value``), so round trips cannot work there.
XARRAY_MIN_VERSION: Final = "2025.6.0"

#: Encoding keys a ragged variable accepts (all others are refused by name).
ENCODING_KEYS: Final = frozenset(
    {"dtype", "chunks", "shards", "compressors", "serializer", "fill_value", "chunk_key_encoding"}
)
#: Keys taken from a variable's own ``.encoding`` (e.g. after ``xr.open_zarr``) when not given.
_INHERITED_KEYS: Final = ("chunks", "shards", "compressors", "serializer")

_MODES: Final = ("w", "w-", "a", "a-", "r+")


def is_ragged(
    variable: xr.Variable | xr.DataArray, encoding: Mapping[str, Any] | None = None
) -> bool:
    """True if :func:`to_zarr` writes ``variable`` as an ``ndarray`` array.

    That is when ``encoding["dtype"]`` is an :class:`NDArray`, or when the variable has object
    dtype and its first non-``None`` cell is an ndarray, list or tuple (a dask-backed object
    variable is inspected by :func:`to_zarr` block by block; here its first block is computed).
    Object variables of strings or bytes are left to xarray.
    """
    if encoding is not None and isinstance(encoding.get("dtype"), NDArray):
        return True
    if variable.dtype != object:
        return False
    data = variable.data
    if getattr(variable, "chunks", None) is not None and data.ndim:
        data = data.blocks[(0,) * data.ndim].compute()
    for cell in np.asarray(data, dtype=object).reshape(-1):
        if cell is not None:
            return isinstance(cell, np.ndarray | list | tuple)
    return False


# ---------------------------------------------------------------------------- the writer


@dataclass
class _Plan:
    """How one ragged variable is written."""

    name: str
    variable: Any  # xr.Variable
    chunked: bool
    dtype: NDArray
    create: bool
    encoding: dict[str, Any]
    selection: tuple[slice, ...] = ()
    append_axis: int | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    cells: Cells | None = None  # numpy-backed data, already converted to ``dtype``

    def prepare(self, unit: Any, kind: str) -> _Plan:
        """Check everything that can be checked before writing (see :func:`to_zarr`); ``unit``
        is what one write rewrites whole, the shard (``kind``) or else the chunk shape."""
        if self.chunked:
            start = tuple(s.start for s in self.selection)
            if isinstance(unit, int):
                unit = (unit,) * len(start)
            if isinstance(unit, tuple | list) and all(isinstance(c, int) for c in unit):
                check_blocks(
                    self.variable.chunks,
                    start,
                    unit,
                    kind,
                    what=f"variable {self.name!r}",
                    keys=self.variable.dims,
                    rechunk="ds.chunk",
                    error=RaggedVariableError,
                )
        else:  # every cell converted at once, refused before any write if one does not fit
            values = np.asarray(self.variable.values, dtype=object)
            dims = self.variable.dims

            def name(i: int) -> str:
                index = dict(zip(dims, map(int, np.unravel_index(i, values.shape)), strict=True))
                return f"variable {self.name!r}: the cell at {index}"

            self.cells = gather_cells(list(values.reshape(-1)), self.dtype, name=name)
        return self


def _json_attr(value: Any) -> Any:
    """A JSON-ready attribute value (numpy scalars and arrays become Python values)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_json_attr(v) for v in value]
    return value


def _check_xarray() -> Any:
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
    return xr


def _ragged_encoding(name: str, variable: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - ENCODING_KEYS)
    if unknown:
        raise RaggedVariableError(
            f"variable {name!r}: encoding keys {unknown} are not understood for a ragged "
            f"variable; the keys are {sorted(ENCODING_KEYS)}."
        )
    encoding = dict(given)
    for key in _INHERITED_KEYS:
        if key not in encoding and key in variable.encoding:
            encoding[key] = variable.encoding[key]
    if "dtype" in encoding and not isinstance(encoding["dtype"], NDArray):
        raise RaggedVariableError(
            f"variable {name!r}: encoding dtype {encoding['dtype']!r} is not an NDArray; pass "
            "NDArray(dtype=..., shape=...) or leave it out to infer it from the cells."
        )
    return encoding


def _region_selection(
    name: str, dims: tuple[Hashable, ...], region: Mapping[Hashable, Any] | None
) -> tuple[slice, ...]:
    region = region or {}
    selection = []
    for dim in dims:
        part = region.get(dim, slice(None))
        if not isinstance(part, slice) or part.step not in (None, 1):
            raise RaggedVariableError(
                f"variable {name!r}: region[{dim!r}] is {part!r}; ragged variables take "
                "region slices with step 1 (e.g. slice(10, 20)), not 'auto' or indices."
            )
        selection.append(part)
    return tuple(selection)


def _dask_chunks(variable: Any) -> tuple[int, ...]:
    return tuple(max(c[0], 1) if c else 1 for c in variable.chunks)


def _open_group(store: Any, group: str | None, mode: str, storage_options: Any) -> Any:
    kwargs: dict[str, Any] = {"path": group or "", "mode": mode}
    if storage_options is not None:
        kwargs["storage_options"] = storage_options
    return zarr.open_group(store, **kwargs)


def _existing_arrays(
    store: Any, group: str | None, mode: str, storage_options: Any, names: Iterable[str]
) -> dict[str, Any]:
    if mode in ("w", "w-"):
        return {}
    try:
        root = _open_group(store, group, "r", storage_options)
    except FileNotFoundError:
        if mode == "r+":
            raise
        return {}
    found = {}
    for name in names:
        try:
            node = root[name]
        except KeyError:
            continue
        if not isinstance(node, zarr.Array):
            raise RaggedVariableError(f"{name!r} exists in the store but is not an array.")
        found[name] = node
    return found


def _plan(
    name: str,
    variable: Any,
    given: Mapping[str, Any],
    existing: Any,
    mode: str,
    region: Mapping[Hashable, Any] | None,
    append_dim: Hashable | None,
) -> _Plan | None:
    encoding = _ragged_encoding(name, variable, given)
    if existing is None:
        return _plan_new(name, variable, encoding, mode, region)
    return _plan_existing(name, variable, encoding, existing, mode, region, append_dim)


def _plan_new(
    name: str,
    variable: Any,
    encoding: dict[str, Any],
    mode: str,
    region: Mapping[Hashable, Any] | None,
) -> _Plan:
    """The plan of a ragged variable whose array does not exist yet."""
    chunked = variable.chunks is not None
    if mode == "r+" or region is not None:
        raise RaggedVariableError(
            f"variable {name!r} does not exist in the store; mode='r+' and region= write "
            "only into existing arrays. Use mode='a' without region to add it."
        )
    dtype = encoding.pop("dtype", None)
    if dtype is None:
        dtype = dtype_of(inspect_data(variable.data, chunked), name)
    elif variable.dtype != object:
        raise RaggedVariableError(
            f"variable {name!r} has dtype {variable.dtype}, but encoding asks for {dtype!r}; "
            "an ndarray array needs an object variable whose cells are ndarrays."
        )
    if "chunks" not in encoding and chunked:
        encoding["chunks"] = _dask_chunks(variable)
    plan = _Plan(name, variable, chunked, dtype, True, encoding)
    plan.selection = tuple(slice(0, n) for n in variable.shape)
    plan.attrs = {str(k): _json_attr(v) for k, v in variable.attrs.items()}
    shards = encoding.get("shards")
    if shards is None:
        return plan.prepare(encoding.get("chunks"), "chunk")
    return plan.prepare(shards, "shard")


def _plan_existing(
    name: str,
    variable: Any,
    encoding: dict[str, Any],
    existing: Any,
    mode: str,
    region: Mapping[Hashable, Any] | None,
    append_dim: Hashable | None,
) -> _Plan | None:
    """The plan of a ragged variable written into (or appended to) its stored array."""
    chunked = variable.chunks is not None
    dims = tuple(variable.dims)
    stored = existing.metadata.data_type
    if not isinstance(stored, NDArray):
        raise RaggedVariableError(
            f"variable {name!r}: the store's array {name!r} has data type {stored}, not ndarray; "
            "write with mode='w' to replace it."
        )
    if "dtype" in encoding and encoding["dtype"] != stored:
        raise RaggedVariableError(
            f"variable {name!r}: encoding dtype {encoding['dtype']!r} differs from the stored "
            f"{stored!r}; appending and region writes keep the stored data type."
        )
    stored_dims = existing.metadata.dimension_names
    if stored_dims is not None and tuple(stored_dims) != tuple(str(d) for d in dims):
        raise RaggedVariableError(
            f"variable {name!r} has dimensions {dims}, the stored array {tuple(stored_dims)}; "
            "transpose the variable to match."
        )
    if mode == "a-" and append_dim is not None and append_dim not in dims:
        return None  # like xarray: "a-" leaves variables without the append dimension alone
    plan = _Plan(name, variable, chunked, stored, False, {})
    plan.attrs = {str(k): _json_attr(v) for k, v in variable.attrs.items()}
    shape = tuple(existing.shape)
    if append_dim is not None and append_dim in dims:
        axis = dims.index(append_dim)
        plan.append_axis = axis
        plan.selection = tuple(
            slice(shape[i], shape[i] + variable.shape[i]) if i == axis else slice(0, n)
            for i, n in enumerate(shape)
        )
        others = tuple(n for i, n in enumerate(shape) if i != axis)
        mine = tuple(n for i, n in enumerate(variable.shape) if i != axis)
        if others != mine:
            raise RaggedVariableError(
                f"variable {name!r} of shape {variable.shape} cannot be appended along "
                f"{append_dim!r} to the stored shape {shape}: the other dimensions differ."
            )
        return plan.prepare(*shard_or_chunk(existing))
    selection = _region_selection(name, dims, region)
    plan.selection = tuple(slice(*s.indices(n)[:2]) for s, n in zip(selection, shape, strict=True))
    target = tuple(s.stop - s.start for s in plan.selection)
    if target != tuple(variable.shape):
        raise RaggedVariableError(
            f"variable {name!r} of shape {variable.shape} does not fit the stored array's "
            f"{'region' if region else 'shape'} {target}; use region= or append_dim=, or "
            "mode='w' to replace the array."
        )
    return plan.prepare(*shard_or_chunk(existing))


def _write(plan: _Plan, root: Any, mode: str) -> None:
    name, variable = plan.name, plan.variable
    if plan.create:
        encoding = dict(plan.encoding)
        kwargs: dict[str, Any] = {
            key: encoding.pop(key) for key in list(encoding) if key != "chunks"
        }
        array = root.create_array(
            name,
            shape=variable.shape,
            dtype=plan.dtype,
            chunks=encoding.get("chunks", "auto"),
            dimension_names=[str(d) for d in variable.dims],
            attributes=plan.attrs,
            overwrite=mode == "w",
            **kwargs,
        )
    else:
        array = root[name]
        if mode in ("a", "a-") and plan.attrs:
            array.attrs.update(plan.attrs)
    if variable.size == 0:
        return
    old_shape = tuple(array.shape)
    if plan.append_axis is not None:
        new_shape = list(old_shape)
        new_shape[plan.append_axis] += variable.shape[plan.append_axis]
        array.resize(tuple(new_shape))
    try:
        if plan.cells is not None:
            box = resolve(plan.selection or ..., tuple(array.shape), "to_zarr")
            write_cells(array, plan.cells, box, "to_zarr")
        else:
            write_blocks(variable.data, array, region=plan.selection)
    except BaseException:
        if plan.append_axis is not None:  # a failed append leaves the array as it was
            array.resize(old_shape)
        raise


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
    """Write ``dataset`` to a Zarr v3 store; ragged variables become ``ndarray`` arrays.

    A variable is ragged when :func:`is_ragged` says so. Its data type is
    ``encoding[name]["dtype"]`` or, for a new array, :func:`infer_ndarray_dtype` of its cells;
    its encoding takes :data:`ENCODING_KEYS`; ``None`` cells are the fill cell. Every other
    variable, the attributes and the coordinates go
    through ``dataset.to_zarr`` (``zarr_format=3``, with ``to_zarr_kwargs``); ``mode``,
    ``region`` (slices) and ``append_dim`` mean what they mean there. Dask-backed ragged
    variables are written by :func:`zarr_ndarray_dtype.dask.to_zarr`, a block a task; ragged
    non-index coordinates go in the group's ``coordinates`` attribute; the metadata is
    consolidated last unless ``consolidated=False``. Everything about the ragged variables
    (encoding, target arrays, block alignment, every cell of numpy-backed ones) is checked before
    anything is written; a dask block refused during an append shrinks the ragged array back
    (xarray's own appends are not rolled back).
    """
    _check_xarray()
    mode = _mode(mode, region, append_dim, to_zarr_kwargs)
    encoding = dict(encoding or {})
    ragged = _ragged_variables(dataset, encoding)
    existing = _existing_arrays(store, group, mode, storage_options, [str(n) for n in ragged])
    plans = [
        _plan(str(n), v, encoding.get(n, {}), existing.get(str(n)), mode, region, append_dim)
        for n, v in ragged.items()
    ]

    plain = dataset.drop_vars(list(ragged))
    options: dict[str, Any] = dict(mode=mode, group=group, region=region, append_dim=append_dim)
    options.update(zarr_format=3, consolidated=False, **to_zarr_kwargs)
    options["encoding"] = {k: v for k, v in encoding.items() if k not in ragged} or None
    options.update({"storage_options": storage_options} if storage_options is not None else {})
    if plain.variables or not (region is not None or append_dim is not None or mode == "r+"):
        plain.to_zarr(store, **options)
    elif mode in ("a", "a-") and dataset.attrs:  # as xarray does on append, were it called
        attrs = {str(k): _json_attr(v) for k, v in dataset.attrs.items()}
        _open_group(store, group, "r+", storage_options).attrs.update(attrs)

    root = _open_group(store, group, "r+", storage_options)
    for plan in plans:
        if plan is not None:
            _write(plan, root, mode)

    coords = sorted(str(n) for n in ragged if n in dataset.coords)
    if coords and mode != "r+":  # xarray restores coordinates listed there
        listed = str(root.attrs.get("coordinates", "")).split()
        root.attrs["coordinates"] = " ".join(sorted(set(listed) | set(coords)))
    if consolidated is not False:
        zarr.consolidate_metadata(root.store_path.store, path=root.store_path.path)


def _mode(
    mode: str | None, region: Any, append_dim: Hashable | None, kwargs: dict[str, Any]
) -> str:
    """The write mode, xarray's default for the arguments given; refuses what cannot be."""
    if kwargs.pop("zarr_format", 3) != 3:
        raise RaggedVariableError(
            "ndarray arrays exist in Zarr format 3 only: leave zarr_format out or pass 3."
        )
    if kwargs.get("compute", True) is not True:
        raise RaggedVariableError(
            "compute=False is not supported: ragged variables are written when to_zarr runs."
        )
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in _MODES:
        raise RaggedVariableError(f"mode={mode!r} is not one of {_MODES}.")
    return mode


def _ragged_variables(dataset: Any, encoding: Mapping[Hashable, Any]) -> dict[Hashable, Any]:
    ragged = {
        name: var for name, var in dataset.variables.items() if is_ragged(var, encoding.get(name))
    }
    for name in ragged:
        if name in dataset.indexes:
            raise RaggedVariableError(
                f"variable {name!r} is an index coordinate; an index cannot hold ragged cells. "
                "Make it a non-index coordinate (ds.reset_index) or a data variable."
            )
        if not isinstance(name, str):
            raise RaggedVariableError(f"variable name {name!r} is not a string; zarr needs one.")
    return ragged
