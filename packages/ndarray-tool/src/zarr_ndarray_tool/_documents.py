"""The documents the tool reads and rewrites (pure): Zarr v3 array documents (SPEC 2.6: only
``data_type`` and the one array -> bytes codec entry change, in place, every other key and the
key order kept), Zarr v2 ragged arrays described as v3 ``ndarray`` arrays over the same chunks,
the pattern HyperSpy's shape siblings give one, and what the command line's values mean. The
``ndarray`` data type JSON and fill value are checked by the data type itself.
"""

from __future__ import annotations

import ast
import copy
import difflib
import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType, ShapePattern
from zarr_ndarray_dtype.errors import NDArrayDTypeError
from zarr_ndarray_tool.errors import Refused

#: zarr's variable-length bytes data type: zarr 3.1.0 reads only the first spelling, which
#: ``downgrade`` writes; zarr >= 3.1.4 also reads ``bytes``.
BYTES_DTYPE_NAMES = ("variable_length_bytes", "bytes")
DOWNGRADE_DTYPE_NAME = "variable_length_bytes"
VLEN_BYTES, VLEN_NDARRAY, SHARDING = "vlen-bytes", "vlen-ndarray", "sharding_indexed"
ZARRAY, ZATTRS = ".zarray", ".zattrs"
#: The attribute of an array upgraded from Zarr v2 that keeps its v2 documents for ``downgrade``.
V2_ATTRIBUTE = "_zarr_vlen_ndarray_v2"
#: A ``data_type``: zarr's raw bytes, ``ndarray``, the 0.1.x ``vlen-ndarray`` one, or another.
Kind = Literal["bytes", "ndarray", "legacy", "other"]
Pattern = tuple[int | None, ...]


def compact(value: object) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 200 else text[:197] + "..."


def check_array_document(meta: object, where: str) -> dict[str, Any]:
    """``meta`` itself if it is a Zarr v3 array document; else :class:`Refused`."""
    if not isinstance(meta, dict):
        raise Refused(f"{where}: zarr.json holds {compact(meta)}, not a JSON object.")
    if meta.get("zarr_format") != 3:
        raise Refused(
            f"{where}: zarr.json has zarr_format {meta.get('zarr_format')!r}; this tool handles "
            "Zarr v3 arrays only (the ndarray data type is not defined for Zarr v2)."
        )
    if meta.get("node_type") == "group":
        raise Refused(
            f"{where} is a Zarr group, not an array; name an array inside it "
            "(e.g. PATH/name for a directory store, FILE.zip::name for a zip store)."
        )
    if meta.get("node_type") != "array":
        raise Refused(
            f"{where}: zarr.json has node_type {meta.get('node_type')!r}; expected 'array'."
        )
    if not isinstance(meta.get("codecs"), list):
        raise Refused(f"{where}: zarr.json has no 'codecs' list ({compact(meta.get('codecs'))}).")
    return meta


def data_type_kind(data_type: object) -> Kind:
    if isinstance(data_type, str):
        return "bytes" if data_type in BYTES_DTYPE_NAMES else "other"
    if isinstance(data_type, dict):
        name, config = data_type.get("name"), data_type.get("configuration")
        if name == "ndarray":
            return "ndarray"
        if name == VLEN_NDARRAY and isinstance(config, dict) and "inner_shape" in config:
            return "legacy"
        if name in BYTES_DTYPE_NAMES and not config:
            return "bytes"
    return "other"


@dataclass(frozen=True)
class ElementType:
    """An ``ndarray`` element type, checked by the data type (:class:`NDArrayDType`)."""

    dtype: NDArrayDType

    @property
    def name(self) -> str:
        return str(self.dtype.dtype)

    @property
    def pattern(self) -> ShapePattern:
        return ShapePattern.from_json(self.shape)

    @property
    def shape(self) -> list[int | None]:
        return [None if d is None else int(d) for d in self.dtype.shape]

    @property
    def itemsize(self) -> int:
        return int(np.dtype(self.name).itemsize)

    @property
    def unit(self) -> int:
        """Bytes one step along the variable axis adds (``itemsize`` x fixed extents)."""
        return self.itemsize * math.prod(d for d in self.shape if d is not None)

    def to_json(self) -> dict[str, Any]:
        return {"name": "ndarray", "configuration": {"dtype": self.name, "shape": self.shape}}

    def __str__(self) -> str:
        return f"{self.name} {compact(self.shape).replace(',', ', ')}"


def make_element_type(dtype: object, shape: object, where: str = "") -> ElementType:
    """The element type ``dtype``, ``shape``; :class:`Refused` with the data type's rule."""
    try:
        return ElementType(NDArrayDType(dtype=dtype, shape=shape))  # type: ignore[arg-type]
    except (NDArrayDTypeError, TypeError) as exc:
        raise Refused(f"{where}: {exc}" if where else str(exc)) from exc


def element_type(meta: dict[str, Any], at: str = "") -> ElementType | None:
    """The checked element type of an ``ndarray`` or 0.1.x document at ``at``, else None."""
    data_type = meta.get("data_type")
    kind = data_type_kind(data_type)
    if kind == "ndarray":
        try:
            return ElementType(NDArrayDType.from_json(data_type, zarr_format=3))  # type: ignore[arg-type]
        except (NDArrayDTypeError, TypeError) as exc:
            raise Refused(f"{at}: {exc}" if at else str(exc)) from exc
    if kind != "legacy":
        return None
    assert isinstance(data_type, dict)
    config = data_type["configuration"]
    where = f"{at}: " * bool(at) + f"data_type {compact(data_type)}"
    inner, dtype = config.get("inner_shape"), config.get("dtype")
    if set(config) != {"dtype", "inner_shape"} or not isinstance(inner, list):
        raise Refused(
            f"{where}: a zarr-vlen-ndarray 0.1.x data type has a configuration with exactly "
            "dtype and inner_shape (a list of integers >= 1)."
        )
    if not (dtype in ELEMENT_DTYPES or re.fullmatch(r"[<|][biufc][0-9]{1,2}", str(dtype))):
        raise Refused(
            f"{where}: element dtype {compact(dtype)} is neither one of the 14 names "
            f"{', '.join(ELEMENT_DTYPES)} nor an explicit little-endian typestr such as '<f4'; it is not allowed (a guess "
            "could mistype every element)."
        )
    try:
        pattern = ShapePattern.from_json([None, *inner])
    except NDArrayDTypeError as exc:
        raise Refused(f"{where}: {exc}") from exc
    return make_element_type(dtype, tuple(pattern.to_json()), where)


# ------------------------------------------------------------------------------ codec chains


def _codec_name(entry: object) -> str:
    return str(entry.get("name")) if isinstance(entry, dict) else str(entry)


def codec_chain(codecs: object) -> str:
    """A one-line description: ``vlen-bytes -> zstd(level=3)``, sharding nested in brackets."""
    if not isinstance(codecs, list):
        return compact(codecs)
    parts = []
    for entry in codecs:
        name = _codec_name(entry)
        config = entry.get("configuration") if isinstance(entry, dict) else None
        if name == SHARDING and isinstance(config, dict):
            inner = codec_chain(config.get("codecs"))
            parts.append(f"{name}(chunk_shape={compact(config.get('chunk_shape'))})[{inner}]")
        elif isinstance(config, dict) and config:
            parts.append(f"{name}({', '.join(f'{k}={compact(v)}' for k, v in config.items())})")
        else:
            parts.append(name)
    return " -> ".join(parts)


def inner_chunks(meta: dict[str, Any]) -> tuple[int, ...] | None:
    """The inner chunk shape when the array is sharded (``sharding_indexed`` first), else None."""
    first = (meta.get("codecs") or [None])[0]
    shape = (first.get("configuration") or {}).get("chunk_shape") if isinstance(first, dict) else 0
    if _codec_name(first) == SHARDING and isinstance(shape, list):
        return tuple(shape)
    return None


def _entries(codecs: object, name: str) -> list[tuple[list[Any], int]]:
    """Where the codec entries named ``name`` are, as (the list holding one, its index): at the
    top level and in sharding's codec chains."""
    found: list[tuple[list[Any], int]] = []
    for i, entry in enumerate(codecs if isinstance(codecs, list) else ()):
        config = entry.get("configuration") if isinstance(entry, dict) else None
        if _codec_name(entry) == name:
            found.append((codecs, i))  # type: ignore[arg-type]
        elif _codec_name(entry) == SHARDING and isinstance(config, dict):
            found += _entries(config.get("codecs"), name)
    return found


def _swap_serializer(meta: dict[str, Any], old: str, new: str, where: str, command: str) -> list:
    """A copy of the codecs with the one ``old`` entry replaced by ``new``'s (order kept)."""
    codecs = copy.deepcopy(meta["codecs"])
    found = _entries(codecs, old)
    if len(found) != 1:
        raise Refused(
            f"{where}: the codec chain {codec_chain(meta['codecs'])} has {len(found) or 'no'} "
            f"{old!r} codec{'s' if len(found) != 1 else ''}; {command} expects exactly one {old} "
            "codec (at the top level or inside sharding)."
        )
    holder, i = found[0]
    holder[i] = {"name": new, "configuration": {}}
    return codecs


def _check_fill(meta: dict[str, Any], etype: ElementType, where: str, command: str) -> None:
    fill = meta.get("fill_value")
    try:
        etype.dtype.from_json_scalar(fill, zarr_format=3)
    except (ValueError, TypeError) as exc:
        raise Refused(
            f"{where}: the fill_value {compact(fill)} is not a valid fill for {etype} ({exc}); "
            f"{command} keeps the fill value as it is, so it refuses this store."
        ) from exc


def _with_data_type(meta: dict[str, Any], data_type: Any, codecs: list[Any]) -> dict[str, Any]:
    out = copy.deepcopy(meta)  # the keys replaced in place: their order is kept
    out["data_type"], out["codecs"] = copy.deepcopy(data_type), codecs
    return out


# ------------------------------------------------------------------------------ the rewrites


def _wrong_kind(meta: dict[str, Any], where: str, command: str, expects: str) -> Refused:
    hint = {
        "bytes": "it holds raw variable-length bytes (use `upgrade --dtype D --shape S`)",
        "ndarray": "it already has the ndarray data type",
        "legacy": "it has the zarr-vlen-ndarray 0.1.x data type (use `migrate`)",
        "other": "this tool converts only raw-bytes, ndarray and 0.1.x vlen-ndarray arrays",
    }[data_type_kind(meta.get("data_type"))]
    return Refused(
        f"{where}: {command} expects {expects}, but the data_type is "
        f"{compact(meta.get('data_type'))}: {hint}."
    )


def new_element_type(dtype: str, shape: Pattern) -> ElementType:
    """The element type an ``upgrade`` writes; :class:`Refused` if vlen-ndarray cannot serve it."""
    etype = make_element_type(dtype, shape)
    if not etype.pattern.is_leading_variable:
        raise Refused(
            f"--shape {compact(etype.shape)}: the vlen-ndarray codec serves only patterns "
            "with one leading variable axis, [null, d1, ..., dk]; a vlen-bytes store can only "
            "become one of those (e.g. --shape null or --shape null,2)."
        )
    return etype


def upgrade(meta: dict[str, Any], dtype: str, shape: Pattern, where: str) -> dict:
    """raw bytes + ``vlen-bytes`` -> ``ndarray`` + ``vlen-ndarray``; the fill kept and checked."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "bytes":
        raise _wrong_kind(meta, where, "upgrade", "a raw variable-length bytes array")
    etype = new_element_type(dtype, shape)
    codecs = _swap_serializer(meta, VLEN_BYTES, VLEN_NDARRAY, where, "upgrade")
    _check_fill(meta, etype, where, "upgrade")
    return _with_data_type(meta, etype.to_json(), codecs)


def downgrade(meta: dict[str, Any], where: str) -> dict:
    """``ndarray`` + ``vlen-ndarray`` -> ``variable_length_bytes`` + ``vlen-bytes`` (fill kept)."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "ndarray":
        raise _wrong_kind(meta, where, "downgrade", "an ndarray array with the vlen-ndarray codec")
    etype = element_type(meta, where)
    assert etype is not None
    if not etype.pattern.is_leading_variable:
        raise Refused(
            f"{where}: the pattern {compact(etype.shape)} is not [null, d1, ..., dk], so its "
            f"chunks are not vlen-bytes framed (codec chain {codec_chain(meta['codecs'])}); only "
            "vlen-ndarray arrays downgrade by a metadata rewrite."
        )
    codecs = _swap_serializer(meta, VLEN_NDARRAY, VLEN_BYTES, where, "downgrade")
    if not isinstance(meta.get("fill_value"), str):
        raise Refused(
            f"{where}: the fill_value {compact(meta.get('fill_value'))} is not a base64 string; "
            "zarr's variable_length_bytes type could not read it."
        )
    return _with_data_type(meta, DOWNGRADE_DTYPE_NAME, codecs)


def migrate(meta: dict[str, Any], where: str) -> dict:
    """0.1.x ``vlen-ndarray``/``inner_shape`` data type -> ``ndarray`` ``[null, *inner_shape]``."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "legacy":
        legacy = '{"name": "vlen-ndarray", "configuration": {"dtype": ..., "inner_shape": [...]}}'
        raise _wrong_kind(
            meta, where, "migrate", f"a zarr-vlen-ndarray 0.1.x array (data_type {legacy})"
        )
    etype = element_type(meta, where)
    assert etype is not None
    found = _entries(meta["codecs"], VLEN_NDARRAY)
    entry = found[0][0][found[0][1]] if len(found) == 1 else None
    if len(found) != 1:
        raise Refused(
            f"{where}: the codec chain {codec_chain(meta['codecs'])} has "
            f"{len(found) or 'no'} 'vlen-ndarray' codec entries; expected exactly one."
        )
    if (
        not isinstance(entry, dict)
        or set(entry) - {"name", "configuration"}
        or entry.get("configuration", {}) != {}
    ):
        raise Refused(
            f"{where}: the codec entry {compact(entry)} is not "
            '{"name": "vlen-ndarray", "configuration": {}}; the codec takes no parameters.'
        )
    _check_fill(meta, etype, where, "migrate")
    return _with_data_type(meta, etype.to_json(), copy.deepcopy(meta["codecs"]))


def bytes_view(meta: dict[str, Any], where: str) -> dict:
    """The document read as raw variable-length bytes (in memory only)."""
    check_array_document(meta, where)
    kind = data_type_kind(meta.get("data_type"))
    if kind == "bytes":
        return {**copy.deepcopy(meta), "data_type": DOWNGRADE_DTYPE_NAME}
    if kind == "legacy":
        return downgrade(migrate(meta, where), where)
    if kind == "ndarray":
        return downgrade(meta, where)
    raise _wrong_kind(
        meta, where, "this command", "a raw-bytes, ndarray or 0.1.x vlen-ndarray array"
    )


def with_shape(meta: dict[str, Any], shape: tuple[int, ...]) -> dict:
    """A copy of ``meta`` with another array ``shape`` (to read edge chunks whole)."""
    return {**copy.deepcopy(meta), "shape": list(shape)}


def dumps_like(meta: dict[str, Any], original: str) -> str:
    """``meta`` as JSON in the layout of ``original`` (indent, separators, final newline), so
    that a downgrade after an upgrade gives the original bytes back."""
    match = re.match(r"\{\r?\n([ \t]+)\"", original)
    indent: str | None = match.group(1) if match else None
    separators = None
    if indent is None and re.search(r'"\s*:\S', original) and not re.search(r'":\s', original):
        separators = (",", ":")
    text = json.dumps(meta, indent=indent, separators=separators, ensure_ascii=original.isascii())
    return text + "\n" if original.endswith("\n") else text


def json_diff(old: dict[str, Any], new: dict[str, Any], label: str) -> str:
    """A unified diff of two documents, both rendered with indent 2 (for ``--dry-run``)."""
    a = json.dumps(old, indent=2).splitlines(keepends=True)
    b = json.dumps(new, indent=2).splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=f"{label} (current)", tofile=f"{label} (new)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# ------------------------------------------------------------------------------ the chunk grid


@dataclass(frozen=True)
class Grid:
    """A regular chunk grid: the array's ``shape`` and its ``chunks`` (chunk or shard shape)."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    @property
    def nchunks(self) -> int:
        return math.prod(self.grid_shape)

    def indices(self) -> Any:
        return itertools.product(*map(range, self.grid_shape))

    def padded(self) -> Grid:
        """The grid of whole chunks (edge chunks read whole, as the codecs decode them)."""
        return Grid(
            tuple(g * c for g, c in zip(self.grid_shape, self.chunks, strict=True)), self.chunks
        )

    def region(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(
            slice(i * c, min((i + 1) * c, s))
            for i, c, s in zip(index, self.chunks, self.shape, strict=True)
        )


def grid_of(meta: dict[str, Any], where: str) -> Grid:
    """The array's regular chunk grid; :class:`Refused` naming what is wrong with it."""
    grid, shape = meta.get("chunk_grid"), meta.get("shape")
    config = grid.get("configuration") if isinstance(grid, dict) else None
    chunks = config.get("chunk_shape") if isinstance(config, dict) else None

    def sizes(value: object, least: int) -> bool:
        return isinstance(value, list) and all(type(v) is int and v >= least for v in value)

    if not sizes(shape, 0):
        raise Refused(f"{where}: zarr.json's shape {json.dumps(shape)} is not a list of sizes.")
    if grid is None:
        raise Refused(f"{where}: zarr.json has no chunk_grid; an array needs one.")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        raise Refused(
            f"{where}: chunk_grid {json.dumps(grid)}; this tool reads regular chunk grids only."
        )
    if not sizes(chunks, 1):
        raise Refused(
            f"{where}: the regular chunk_grid's chunk_shape {json.dumps(chunks)} is not a list "
            "of positive integers."
        )
    assert isinstance(shape, list) and isinstance(chunks, list)
    if len(chunks) != len(shape):
        raise Refused(
            f"{where}: the shape {json.dumps(shape)} has {len(shape)} dimensions but the "
            f"chunk_shape {json.dumps(chunks)} has {len(chunks)}; zarr.json contradicts itself."
        )
    return Grid(tuple(shape), tuple(chunks))


# ------------------------------------------------------------------------------ Zarr v2


def document_text(data: bytes | None, name: str, where: str) -> str | None:
    """A stored v2 document ``name`` as text (None when absent); refused unless UTF-8."""
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{where}: {name} is not UTF-8 text ({exc}).") from exc


def _load(text: str, what: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Refused(f"{where}: {what} is not valid JSON ({exc}).") from exc


def _codec(name: str, **configuration: Any) -> dict[str, Any]:
    return {"name": name, "configuration": configuration}


_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: "bitshuffle"}


def compressor_twin(c: object, where: str) -> list[dict[str, Any]]:
    """The v3 codec entries that decode exactly what the v2 compressor ``c`` encoded: none,
    zstd, blosc, and zlib and lz4 as ``numcodecs.zlib``/``numcodecs.lz4`` (v3's ``gzip`` frames
    differently)."""
    if c is None:
        return []
    cid = c.get("id") if isinstance(c, dict) else None
    if cid == "zstd":
        return [_codec("zstd", level=int(c.get("level", 0)), checksum=bool(c.get("checksum")))]  # type: ignore[union-attr]
    if cid == "blosc" and c.get("shuffle", 1) in _BLOSC_SHUFFLE:  # type: ignore[union-attr]
        # numcodecs blosc-compresses the framed chunk as bytes (typesize 1); blosc frames carry
        # their own parameters, so these values only make zarr v3 write the same kind of frames.
        c = dict(c)  # type: ignore[arg-type]
        return [
            _codec("blosc", typesize=1, cname=c.get("cname", "lz4"), clevel=int(c.get("clevel", 5)),
                   shuffle=_BLOSC_SHUFFLE[c.get("shuffle", 1)], blocksize=int(c.get("blocksize", 0)))
        ]  # fmt: skip
    if cid == "zlib":
        return [_codec("numcodecs.zlib", level=c.get("level", 1))]  # type: ignore[union-attr]
    if cid == "lz4":
        return [_codec("numcodecs.lz4", acceleration=c.get("acceleration", 1))]  # type: ignore[union-attr]
    raise Refused(
        f"{where}: the compressor {json.dumps(c)} has no byte-identical Zarr v3 codec this tool "
        "maps (zstd, blosc, zlib, lz4 or none); recompress the array, or read it with "
        "zarr-python 2."
    )


def _ragged_element_type(
    zarray: dict[str, Any], dtype: str | None, shape: Pattern | None, where: str
) -> ElementType:
    """The element type of a v2 object array of one ``VLenArray`` or ``VLenBytes`` filter."""
    if zarray.get("dtype") != "|O":
        raise Refused(
            f"{where}: the Zarr v2 dtype is {zarray.get('dtype')!r}; only object arrays ('|O') "
            "with a VLenArray or VLenBytes filter hold ragged elements."
        )
    filters = zarray.get("filters") or []
    ids = [f.get("id") if isinstance(f, dict) else f for f in filters]
    if ids not in (["vlen-array"], ["vlen-bytes"]):
        raise Refused(
            f"{where}: the filters are {json.dumps(zarray.get('filters'))}; upgrade needs exactly "
            "one VLenArray or VLenBytes filter (other filters change the chunk bytes)."
        )
    if ids == ["vlen-bytes"]:
        if dtype is None or shape is None:
            raise Refused(
                f"{where}: a VLenBytes array holds raw bytes; give the element type with "
                "--dtype and --shape (e.g. --dtype float32 --shape null,2)."
            )
        return new_element_type(dtype, shape)
    text = filters[0].get("dtype")
    try:
        np_dtype = np.dtype(text)
    except TypeError as exc:
        raise Refused(f"{where}: the VLenArray filter's dtype {text!r} is not a dtype.") from exc
    if np_dtype.byteorder == ">":
        raise Refused(
            f"{where}: the VLenArray filter's dtype {text!r} is big-endian; vlen-ndarray "
            "elements are little-endian, so these chunks are not byte-compatible (rewrite the "
            "array with a little-endian dtype)."
        )
    name = make_element_type(
        np_dtype.str, (None,), f"{where}: the VLenArray filter's dtype {text!r}"
    ).name
    if dtype is not None and dtype != name:
        raise Refused(
            f"{where}: --dtype {dtype} disagrees with the VLenArray filter's dtype {text!r} "
            f"({name}); leave --dtype out or give {name}."
        )
    return new_element_type(name, shape if shape is not None else (None,))


def v3_from_v2(
    zarray_text: str, zattrs_text: str | None, dtype: str | None, shape: Pattern | None, where: str
) -> tuple[dict[str, Any], ElementType]:
    """The v3 ``zarr.json`` for a v2 ragged array, and its element type. ``dtype``/``shape``
    (``--dtype``/``--shape``) are optional for ``VLenArray``, required for ``VLenBytes``."""
    zarray = _load(zarray_text, ZARRAY, where)
    attrs = {} if zattrs_text is None else _load(zattrs_text, ZATTRS, where)
    if not isinstance(zarray, dict) or zarray.get("zarr_format") != 2:
        raise Refused(f"{where}: {ZARRAY} is not a Zarr v2 array document.")
    if not isinstance(attrs, dict):
        raise Refused(f"{where}: {ZATTRS} is not a JSON object.")
    etype = _ragged_element_type(zarray, dtype, shape, where)
    array_shape, chunks = zarray.get("shape"), zarray.get("chunks")
    if not (
        isinstance(array_shape, list) and isinstance(chunks, list) and len(chunks) == len(array_shape)
        and all(type(s) is int and s >= 0 for s in array_shape)
        and all(type(c) is int and c >= 1 for c in chunks)
    ):  # fmt: skip
        raise Refused(f"{where}: shape {array_shape!r} / chunks {chunks!r} are not valid.")
    order = zarray.get("order", "C")
    if order not in ("C", "F") or (order == "F" and len(array_shape) > 1):
        raise Refused(
            f"{where}: order {order!r} with {len(array_shape)} dimensions stores chunks "
            "transposed, which a v3 array cannot describe without a transpose codec on object "
            "elements; rewrite the array in C order."
        )
    separator = zarray.get("dimension_separator", ".")
    if separator not in (".", "/"):
        raise Refused(f"{where}: dimension_separator {separator!r} is not '.' or '/'.")
    meta: dict[str, Any] = {
        "shape": array_shape,
        "data_type": etype.to_json(),
        "chunk_grid": _codec("regular", chunk_shape=chunks),
        "chunk_key_encoding": _codec("v2", separator=separator),
        "fill_value": "",
        "codecs": [_codec(VLEN_NDARRAY), *compressor_twin(zarray.get("compressor"), where)],
        "attributes": {**attrs, V2_ATTRIBUTE: {ZARRAY: zarray_text, ZATTRS: zattrs_text}},
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }
    names = attrs.get("_ARRAY_DIMENSIONS")  # xarray's v2 convention
    if (
        isinstance(names, list)
        and len(names) == len(array_shape)
        and all(isinstance(n, str) for n in names)
    ):
        meta["dimension_names"] = names
    return meta, etype


def original_documents(meta: dict[str, Any], where: str) -> tuple[str, str | None] | None:
    """The v2 ``.zarray``/``.zattrs`` texts an upgraded array keeps (None for other arrays);
    Refused when the document changed since the upgrade (a downgrade would drop the change)."""
    attrs = meta.get("attributes")
    kept = attrs.get(V2_ATTRIBUTE) if isinstance(attrs, dict) else None
    if kept is None:
        return None
    zarray, zattrs = (kept.get(ZARRAY), kept.get(ZATTRS)) if isinstance(kept, dict) else (0, 0)
    if not isinstance(zarray, str) or not (zattrs is None or isinstance(zattrs, str)):
        raise Refused(f"{where}: the attribute {V2_ATTRIBUTE!r} is not what upgrade wrote.")
    config = meta.get("data_type", {}).get("configuration", {})
    shape = tuple(config.get("shape", [None]))
    expected, _ = v3_from_v2(zarray, zattrs, config.get("dtype"), shape, where)
    changed = sorted(k for k in set(expected) | set(meta) if expected.get(k) != meta.get(k))
    if changed:
        raise Refused(
            f"{where}: {', '.join(changed)} changed since the array was upgraded from Zarr v2; "
            "restoring the v2 documents would lose that, so downgrade refuses."
        )
    return zarray, zattrs


# ------------------------------------------------------------------------------ HyperSpy

# HyperSpy stores a ragged signal's cells flattened, as a VLenArray array K, and each cell's
# shape in a sibling array, _ragged_shapes_K (ragged_shapes before RosettaSciIO 0.2, preferred by
# its reader when present). When every cell has one rank k >= 1 and the same trailing extents,
# the flattened cells are the bytes of [null, d1..d(k-1)] cells.
SIBLING_PREFIX, LEGACY_SIBLING = "_ragged_shapes_", "ragged_shapes"


def sibling_of(name: str, arrays: set[str]) -> str | None:
    """The shape sibling of the ragged array ``name`` among its group's arrays, found as
    RosettaSciIO's reader finds it; None when it has none (a sibling has none itself)."""
    if name == LEGACY_SIBLING or name.startswith(SIBLING_PREFIX):
        return None
    return next((c for c in (LEGACY_SIBLING, SIBLING_PREFIX + name) if c in arrays), None)


def pattern_of(
    ranks: npt.NDArray[np.int64],
    extents: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    grid: tuple[int, ...],
    where: str,
) -> tuple[Pattern, str]:
    """The pattern of a ragged array whose cells (C order over ``grid``) have the ranks
    ``ranks``, their extents back to back in ``extents`` and ``sizes`` items each; and why, in
    words. Refused when a shape does not give its cell's item count."""
    ends = np.cumsum(ranks)
    starts = ends - ranks
    items = np.ones(ranks.size, dtype=np.int64)  # a 0-d cell holds one item
    if (ranks > 0).any():
        items[ranks > 0] = np.multiply.reduceat(extents, starts[ranks > 0])

    def cell(at: int) -> str:
        shape = tuple(int(e) for e in extents[starts[at] : ends[at]])
        return f"cell {tuple(int(i) for i in np.unravel_index(at, grid))} is {shape}"

    bad = np.flatnonzero(items != sizes)
    if bad.size:
        at = int(bad[0])
        raise Refused(
            f"{where}: the shape sibling says {cell(at)} ({int(items[at])} items), but the data "
            f"holds {int(sizes[at])} items there; the two arrays disagree, so the store cannot "
            "be upgraded as it is (check that HyperSpy wrote both)."
        )
    if not ranks.size:
        return (None,), "it holds no cells"
    rank = int(ranks[0])
    if not (ranks == rank).all():
        other = int(np.flatnonzero(ranks != rank)[0])
        return (
            None,
        ), f"its cells differ in rank ({cell(0)} but {cell(other)}), so the cells stay flattened"
    if rank <= 1:
        return (None,), "every cell is (n,)" if rank else "every cell is 0-d (one item)"
    table = extents.reshape(-1, rank)[:, 1:]
    odd = np.flatnonzero((table != table[0]).any(axis=1))
    if odd.size:
        return (None,), (
            f"its cells differ in trailing extents ({cell(0)} but {cell(int(odd[0]))}), so the "
            "cells stay flattened"
        )
    trailing = tuple(int(d) for d in table[0])
    return (None, *trailing), f"every cell is (n, {', '.join(map(str, trailing))})"


# ------------------------------------------------------------------------------ the command line


def parse_shape_arg(text: str) -> Pattern:
    """``--shape``: ``null,2``, ``None,2``, ``[null, 2]``, ``(None, 2)`` or ``null``."""
    body = text.strip()
    if body[:1] in "[(" and body[-1:] in "])":
        body = body[1:-1]
    tokens = [t.strip() for t in body.split(",")]
    if len(tokens) > 1 and tokens[-1] == "":
        tokens.pop()  # a trailing comma, as in "(None,)"
    entries: list[int | None] = []
    for token in tokens:
        if token.lower() not in ("null", "none") and not re.fullmatch(r"[0-9]+", token):
            raise ValueError(
                f"--shape {text!r}: entry {token!r} is neither null/None nor an integer; "
                "give e.g. null,2"
            )
        entries.append(int(token) if token.isdigit() else None)
    NDArrayDType(dtype="uint8", shape=tuple(entries))  # ShapePatternError names a bad entry
    return tuple(entries)


def parse_dtype_arg(text: str) -> str:
    """``--dtype``: one of the element dtype names (``<f4`` is read as float32)."""
    return str(NDArrayDType(dtype=text, shape=(None,)).dtype)


def parse_selection(text: str) -> Any:
    """``--select``: numpy's basic indexing as written in Python (``"0:10, 5"``, ``"..., -1"``)
    parsed without evaluating anything; ValueError naming the part that is not an int, a slice
    of ints or ``...``."""
    problem = f"{text!r} is not numpy index syntax (e.g. '0:10, 5')"
    try:
        tree = ast.parse(f"_[{text}]", mode="eval").body
    except SyntaxError as exc:
        raise ValueError(problem) from exc
    if not (isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Name)):
        raise ValueError(problem)  # text that closed the bracket: "0] + [1"
    parts = tree.slice.elts if isinstance(tree.slice, ast.Tuple) else [tree.slice]

    def number(node: ast.expr | None) -> int | None:
        if node is None:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = number(node.operand)
            if value is not None:
                return -value
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        raise ValueError(f"{ast.unparse(node)!r} in {text!r} is not an integer")

    out: list[Any] = []
    for part in parts:
        if isinstance(part, ast.Constant) and part.value is Ellipsis:
            out.append(Ellipsis)
        elif isinstance(part, ast.Slice):
            out.append(slice(number(part.lower), number(part.upper), number(part.step)))
        else:
            out.append(number(part))
    return tuple(out)


def parse_count(text: str) -> int:
    """``--sample``, ``--max-errors``: a positive integer."""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r} is not a positive integer")
    return int(text)


def parse_names(text: str) -> list[str]:
    """``--dims``: comma-separated names."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ValueError(f"{text!r}: give comma-separated names, e.g. n,xy")
    return names


def parse_storage_options(text: str | None) -> dict[str, Any]:
    """``--storage-options``: a JSON object; Refused otherwise."""
    try:
        value = json.loads(text) if text else {}
    except ValueError as exc:
        raise Refused(f"--storage-options {text!r} is not valid JSON ({exc}).") from exc
    if not isinstance(value, dict):
        raise Refused(
            f"--storage-options {text!r} is not a JSON object; give e.g. "
            '\'{"endpoint_url": "http://127.0.0.1:9000"}\'.'
        )
    return value
