"""``NdColumn``: a column of ``nd_arrow.array``, built from and decoded to numpy, vectorized.

Building concatenates all values once, derives offsets by cumulative sums and the validity from a
mask; decoding hands out zero-copy numpy views into one flat buffer when the values have no nulls.
Per-row Python work is limited to reading each input array's shape and creating the objects the
API returns.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from nd_arrow._attrs import AttrDecoder, encode_attrs
from nd_arrow._format import (
    EXTENSION_NAME,
    MAX_DIM_SIZE,
    check_dim_names,
    default_dim_names,
    parse_extension_metadata,
)
from nd_arrow._storage import (
    StorageParts,
    build_storage,
    parse_storage_type,
    tile_names,
    validate_storage,
)
from nd_arrow._values import arrow_to_numpy, is_string_dtype, numpy_to_arrow
from nd_arrow.array import NdArray
from nd_arrow.errors import (
    InvalidArgumentError,
    InvalidDimensionsError,
    SchemaMismatchError,
)
from nd_arrow.extension import EXTENSION_METADATA_KEY, EXTENSION_NAME_KEY, NdArrayType

__all__ = ["NdColumn"]

ArrayInput = NdArray | np.ndarray | None


def _compatible(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    return a == b or (is_string_dtype(a) and is_string_dtype(b))


def _check_dtypes(arrays: Sequence[np.ndarray | None], where: str) -> np.dtype[Any] | None:
    """The common dtype of the non-null rows, or a SchemaMismatchError naming the first outlier."""
    if arrays and arrays[0] is not None:
        first_dtype = arrays[0].dtype
        # Fast check: numpy shares one dtype object per builtin type, so identity usually decides.
        try:
            if all(map(operator.is_, map(attrgetter("dtype"), arrays), repeat(first_dtype))):
                return first_dtype
        except AttributeError:  # null rows (None) among them
            pass
    dtypes = {a.dtype for a in arrays if a is not None}
    if not dtypes:
        return None
    first = next(a for a in arrays if a is not None).dtype
    if len(dtypes) > 1:
        for i, a in enumerate(arrays):
            if a is not None and not _compatible(a.dtype, first):
                raise SchemaMismatchError(
                    f"{where}: row {i} has dtype {a.dtype} but earlier rows have {first}; all rows "
                    "of a column share one value type. Cast first or pass value_type="
                )
        if is_string_dtype(first):
            return np.dtype(object)
    return first


class NdColumn:
    """A column of N-d arrays: build with :meth:`from_arrays` or :meth:`from_arrow`.

    >>> import numpy as np
    >>> col = NdColumn.from_arrays([np.ones((2, 2)), None], dims=["y", "x"])
    >>> len(col), col[1] is None, col[0].sizes
    (2, True, {'y': 2, 'x': 2})
    """

    __slots__ = ("_attrs", "_flat", "_names", "_parts", "_type")

    def __init__(self, parts: StorageParts) -> None:
        self._parts = parts
        self._type = NdArrayType(parts.storage.type)
        self._flat: tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None] | None = None
        self._attrs: AttrDecoder | None = None
        self._names: list[tuple[str, ...] | None] | None = None

    # ----------------------------------------------------------------------------------- build

    @classmethod
    def from_arrays(
        cls,
        arrays: Sequence[ArrayInput],
        dims: Sequence[str] | None = None,
        *,
        value_type: pa.DataType | None = None,
    ) -> NdColumn:
        """A column with one row per item: an :class:`NdArray`, a numpy array or None (null row).

        ``dims`` names the axes of plain numpy arrays (default ``dim_0, dim_1, ...``); NdArrays
        keep their own. ``value_type`` casts the values to an Arrow type (required when no row
        has values to take it from).
        """
        items = arrays if isinstance(arrays, list) else list(arrays)
        return cls._build(items, dims, value_type, "nd column")

    @classmethod
    def _build(
        cls,
        items: list[Any],
        dims: Sequence[str] | None,
        value_type: pa.DataType | None,
        where: str,
    ) -> NdColumn:
        kinds = set(map(type, items))
        if kinds <= {np.ndarray, type(None)} and np.ndarray in kinds:
            built = cls._build_uniform(items, type(None) in kinds, dims, value_type, where)
            if built is not None:
                return built
        return cls._build_general(items, dims, value_type, where)

    @classmethod
    def _build_uniform(
        cls,
        items: list[np.ndarray | None],
        has_nulls: bool,
        dims: Sequence[str] | None,
        value_type: pa.DataType | None,
        where: str,
    ) -> NdColumn | None:
        """Fast path: plain numpy arrays of one rank and one trailing shape, sharing ``dims``.

        Returns None (use the general path) when ranks or trailing shapes differ. numpy's
        concatenation checks ranks and trailing shapes; only the leading sizes are read per row.
        """
        n = len(items)
        arrays: list[np.ndarray] = [a for a in items if a is not None] if has_nulls else items  # type: ignore[assignment]
        dtype = _check_dtypes(arrays, where)
        assert dtype is not None
        k = len(arrays)
        rank = arrays[0].ndim
        if rank == 0:
            if any(a.ndim for a in arrays):
                return None
            flat = np.stack(arrays)
            sizes = np.zeros((k, 0), np.int64)
        else:
            try:
                stacked = np.concatenate(arrays, axis=0)
            except ValueError:
                return None  # ranks or trailing shapes differ
            flat = stacked.reshape(-1)
            sizes = np.empty((k, rank), np.int64)
            sizes[:, 0] = np.fromiter(map(len, arrays), np.int64, k)
            sizes[:, 1:] = stacked.shape[1:]
        names = default_dim_names(rank) if dims is None else check_dim_names(dims, rank, where)
        if is_string_dtype(flat.dtype) and flat.dtype.kind != "O":
            flat = flat.astype(object)
        largest = int(np.max(sizes)) if sizes.size else 0
        if largest > MAX_DIM_SIZE:
            raise InvalidDimensionsError(
                f"{where}: dimension size {largest} exceeds {MAX_DIM_SIZE}, the largest "
                "UInt32 dimension size"
            )
        inner = int(np.prod(sizes[0, 1:])) if rank else 1
        counts = sizes[:, 0] * inner if rank else np.ones(k, np.int64)
        ranks = np.full(k, rank, np.int64)
        null_rows = None
        if has_nulls:
            null_rows = np.fromiter((a is None for a in items), np.bool_, n)
            full = np.zeros(n, np.int64)
            full[~null_rows] = counts
            counts = full
            ranks = np.where(null_rows, 0, rank)
        values = numpy_to_arrow(flat, None, value_type, where)
        codes = np.tile(np.arange(rank, dtype=np.int64), k)
        return cls._assemble(
            values,
            counts,
            ranks,
            tile_names(names, k),
            sizes.reshape(-1),
            null_rows,
            None,
            codes,
            list(names),
        )

    @classmethod
    def _build_general(
        cls,
        items: list[Any],
        dims: Sequence[str] | None,
        value_type: pa.DataType | None,
        where: str,
    ) -> NdColumn:
        rows: list[NdArray | None] = []
        for i, item in enumerate(items):
            if item is None or isinstance(item, NdArray):
                rows.append(item)
                continue
            try:
                rows.append(NdArray(item, dims))
            except (InvalidDimensionsError, InvalidArgumentError) as exc:
                raise type(exc)(f"{where}: row {i}: {exc}") from exc
        present = [r for r in rows if r is not None]
        if not present and value_type is None:
            raise InvalidArgumentError(
                f"{where}: no row has values to take the value type from; pass value_type="
            )
        dtype = _check_dtypes([r.values if r is not None else None for r in rows], where)
        n = len(rows)
        null_rows = np.fromiter((r is None for r in rows), np.bool_, n)
        if present:
            flat = np.concatenate([r.values.reshape(-1) for r in present])
            if dtype is not None and dtype.kind == "O":
                flat = flat.astype(object)
            mask = None
            if any(r.mask is not None for r in present):
                mask = np.concatenate(
                    [
                        np.zeros(r.values.size, np.bool_) if r.mask is None else r.mask.reshape(-1)
                        for r in present
                    ]
                )
            values = numpy_to_arrow(flat, mask, value_type, where)
        else:
            assert value_type is not None
            values = pa.array([], value_type)
        counts = np.zeros(n, np.int64)
        ranks = np.zeros(n, np.int64)
        counts[~null_rows] = [r.values.size for r in present]
        ranks[~null_rows] = [r.ndim for r in present]
        sizes = np.fromiter(
            itertools.chain.from_iterable(r.shape for r in present), np.int64, int(ranks.sum())
        )
        dim_tuples = {r.dims for r in present}
        if len(dim_tuples) == 1:
            only = next(iter(dim_tuples))
            names = tile_names(only, len(present))
            name_dict = list(only)
            codes = np.tile(np.arange(len(only), dtype=np.int64), len(present))
        else:
            flat_names = list(itertools.chain.from_iterable(r.dims for r in present))
            index: dict[str, int] = {}
            codes = np.fromiter(
                (index.setdefault(nm, len(index)) for nm in flat_names), np.int64, len(flat_names)
            )
            name_dict = list(index)
            names = pa.array(flat_names, pa.string())
        attrs = encode_attrs([r.attrs if r is not None else None for r in rows], f"{where} row")
        return cls._assemble(
            values,
            counts,
            ranks,
            names,
            sizes,
            null_rows if null_rows.any() else None,
            attrs,
            codes,
            name_dict,
        )

    @classmethod
    def _assemble(
        cls,
        values: pa.Array,
        counts: npt.NDArray[np.int64],
        ranks: npt.NDArray[np.int64],
        names: pa.Array,
        sizes: npt.NDArray[np.int64],
        null_rows: npt.NDArray[np.bool_] | None,
        attrs: pa.StructArray | None,
        name_codes: npt.NDArray[np.int64],
        name_dict: list[str],
    ) -> NdColumn:
        """Storage from parts whose rules were checked on the way in (by NdArray / the fast path).

        The parts go to the column as they are: re-checking the storage just built would only
        repeat those checks.
        """
        value_offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=value_offsets[1:])
        dim_offsets = np.zeros(len(ranks) + 1, np.int64)
        np.cumsum(ranks, out=dim_offsets[1:])
        storage = build_storage(
            value_field=pa.field("item", values.type, nullable=True),
            values=values,
            value_offsets=value_offsets,
            names=names,
            sizes=sizes,
            dim_offsets=dim_offsets,
            null_rows=null_rows,
            attrs=attrs,
        )
        parts = StorageParts(
            storage=storage,
            layout=parse_storage_type(storage.type),
            valid=np.ones(len(counts), np.bool_) if null_rows is None else ~null_rows,
            values=values,
            value_offsets=value_offsets,
            dim_offsets=dim_offsets,
            sizes=sizes,
            name_codes=name_codes,
            name_dict=name_dict,
            attrs=storage.field(3) if storage.type.num_fields == 4 else None,
        )
        return cls(parts)

    # --------------------------------------------------------------------------------- decode

    @classmethod
    def from_arrow(
        cls, data: pa.Array | pa.ChunkedArray, field: pa.Field | None = None
    ) -> NdColumn:
        """A column from Arrow data, checking every rule of the format.

        Accepts an extension array of ``nd_arrow.array`` (this package's class or another
        registered under the name), a chunked array of them, or the plain storage Struct as read
        without registration. With ``field`` given, a plain struct must carry the extension keys
        in its metadata.
        """
        if isinstance(data, pa.ChunkedArray):
            chunks = data.chunks
            dtype = data.type
        elif isinstance(data, pa.Array):
            chunks = [data]
            dtype = data.type
        else:
            raise InvalidArgumentError(
                f"NdColumn.from_arrow: expected a pyarrow Array or ChunkedArray, got "
                f"{type(data).__name__}"
            )
        if isinstance(dtype, pa.BaseExtensionType):
            if dtype.extension_name != EXTENSION_NAME:
                raise SchemaMismatchError(
                    f"NdColumn.from_arrow: extension type {dtype.extension_name!r} is not "
                    f"{EXTENSION_NAME!r}"
                )
            serialize = getattr(dtype, "__arrow_ext_serialize__", None)
            if serialize is not None:
                parse_extension_metadata(serialize())
            chunks = [c.storage for c in chunks]
            dtype = dtype.storage_type
        elif field is not None:
            meta = field.metadata or {}
            name = meta.get(EXTENSION_NAME_KEY)
            if name != EXTENSION_NAME.encode():
                raise SchemaMismatchError(
                    f"NdColumn.from_arrow: field {field.name!r} is not tagged "
                    f"{EXTENSION_NAME!r} (ARROW:extension:name is {name!r})"
                )
            parse_extension_metadata(meta.get(EXTENSION_METADATA_KEY, b""))
        if len(chunks) == 1:
            storage = chunks[0]
        elif chunks:
            storage = pa.concat_arrays(chunks)
        else:
            storage = pa.array([], dtype)
        return cls(validate_storage(storage))

    def to_arrow(self) -> pa.ExtensionArray:
        """The column as a pyarrow extension array of :class:`NdArrayType`."""
        return pa.ExtensionArray.from_storage(self._type, self._parts.storage)

    @property
    def type(self) -> NdArrayType:
        return self._type

    @property
    def value_type(self) -> pa.DataType:
        return self._type.value_type

    @property
    def storage(self) -> pa.StructArray:
        return self._parts.storage

    @property
    def null_count(self) -> int:
        return self._parts.null_count

    def __len__(self) -> int:
        return len(self._parts)

    def __repr__(self) -> str:
        return f"NdColumn(len={len(self)}, value_type={self.value_type}, nulls={self.null_count})"

    def _flat_values(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
        if self._flat is None:
            self._flat = arrow_to_numpy(self._parts.values)
        return self._flat

    def _row_dims(self) -> list[tuple[str, ...] | None]:
        if self._names is None:
            p = self._parts
            off = p.dim_offsets
            rank = np.diff(off)
            valid_ranks = rank[p.valid]
            words = p.name_dict
            out: list[tuple[str, ...] | None]
            uniform = None
            if len(valid_ranks) and valid_ranks.min() == valid_ranks.max():
                r = int(valid_ranks[0])
                starts = off[:-1][p.valid]
                block = p.name_codes[starts[:, None] + np.arange(r)]
                if (block == block[0]).all():
                    uniform = tuple(words[c] for c in block[0].tolist())
            if uniform is not None:
                out = [uniform if v else None for v in p.valid.tolist()]
            else:
                codes = p.name_codes.tolist()
                ol = off.tolist()
                out = [
                    tuple(words[c] for c in codes[ol[i] : ol[i + 1]]) if v else None
                    for i, v in enumerate(p.valid.tolist())
                ]
            self._names = out
        return self._names

    def _attr_decoder(self) -> AttrDecoder:
        if self._attrs is None:
            self._attrs = AttrDecoder(self._parts.attrs)
        return self._attrs

    def _views(
        self,
    ) -> tuple[list[npt.NDArray[Any] | None], list[npt.NDArray[np.bool_] | None] | None]:
        """Per-row value views (None for null rows) and per-row masks (None without nulls)."""
        p = self._parts
        n = len(p)
        if n == 0:
            return [], None
        flat, mask = self._flat_values()
        off = p.value_offsets
        doff = p.dim_offsets
        rank = np.diff(doff)
        if mask is None and p.null_count == 0 and rank.min() == rank.max():
            r = int(rank[0])
            if r:
                shapes = p.sizes[doff[:-1, None] + np.arange(r)]
                first = shapes[0]
                lo, hi = int(off[0]), int(off[-1])
                if (shapes == first).all():
                    return list(flat[lo:hi].reshape(n, *first.tolist())), None
                inner_shape = first[1:].tolist()
                inner = int(np.prod(first[1:]))
                if inner > 0 and (shapes[:, 1:] == first[1:]).all():
                    block = flat[lo:hi].reshape(-1, *inner_shape)
                    rows = (off - lo) // inner
                    starts = rows[:-1].tolist()
                    ends = rows[1:].tolist()
                    return [block[a:b] for a, b in zip(starts, ends, strict=True)], None
        sizes = p.sizes.tolist()
        ol = off.tolist()
        dl = doff.tolist()
        valid = p.valid.tolist()
        views: list[npt.NDArray[Any] | None] = []
        masks: list[npt.NDArray[np.bool_] | None] | None = None
        if mask is None:
            for i in range(n):
                if valid[i]:
                    views.append(flat[ol[i] : ol[i + 1]].reshape(sizes[dl[i] : dl[i + 1]]))
                else:
                    views.append(None)
            return views, None
        cum = np.zeros(len(mask) + 1, np.int64)
        np.cumsum(mask, out=cum[1:])
        row_nulls = (cum[off[1:]] - cum[off[:-1]]).tolist()
        masks = []
        for i in range(n):
            if not valid[i]:
                views.append(None)
                masks.append(None)
                continue
            shape = sizes[dl[i] : dl[i + 1]]
            views.append(flat[ol[i] : ol[i + 1]].reshape(shape))
            masks.append(mask[ol[i] : ol[i + 1]].reshape(shape) if row_nulls[i] else None)
        return views, masks

    def to_numpy_list(self) -> list[npt.NDArray[Any] | None]:
        """One numpy array per row (None for null rows; masked arrays where values are null).

        Without element nulls the arrays are zero-copy views of the column's value buffer.
        """
        views, masks = self._views()
        if masks is None:
            return views
        return [
            v if m is None else np.ma.MaskedArray(v, mask=m)
            for v, m in zip(views, masks, strict=True)
        ]

    def to_pylist(self) -> list[NdArray | None]:
        """One :class:`NdArray` per row (None for null rows)."""
        views, masks = self._views()
        names = self._row_dims()
        dec = self._attr_decoder()
        row = dec.row
        if masks is None:
            masks = [None] * len(views)
        return [
            None if v is None else NdArray._trusted(v, m, names[i] or (), row(i))
            for i, (v, m) in enumerate(zip(views, masks, strict=True))
        ]

    def __iter__(self) -> Iterator[NdArray | None]:
        return iter(self.to_pylist())

    @overload
    def __getitem__(self, index: int) -> NdArray | None: ...
    @overload
    def __getitem__(self, index: slice) -> NdColumn: ...
    def __getitem__(self, index: int | slice) -> NdArray | NdColumn | None:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                idx = pa.array(np.arange(start, stop, step, dtype=np.int64))
                return NdColumn(validate_storage(self._parts.storage.take(idx)))
            return NdColumn(validate_storage(self._parts.storage.slice(start, stop - start)))
        n = len(self)
        i = int(index)
        if i < -n or i >= n:
            raise IndexError(f"row {index} is out of range for an nd column of {n} rows")
        i %= n if n else 1
        p = self._parts
        if not p.valid[i]:
            return None
        flat, mask = self._flat_values()
        a, b = int(p.value_offsets[i]), int(p.value_offsets[i + 1])
        d0, d1 = int(p.dim_offsets[i]), int(p.dim_offsets[i + 1])
        shape = tuple(p.sizes[d0:d1].tolist())
        m = None
        if mask is not None and mask[a:b].any():
            m = mask[a:b].reshape(shape)
        dims = tuple(p.name_dict[c] for c in p.name_codes[d0:d1].tolist())
        return NdArray._trusted(flat[a:b].reshape(shape), m, dims, self._attr_decoder().row(i))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NdColumn):
            return NotImplemented
        return len(self) == len(other) and all(
            a == b for a, b in zip(self.to_pylist(), other.to_pylist(), strict=True)
        )

    __hash__ = None  # type: ignore[assignment]
