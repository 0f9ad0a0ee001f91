"""The documents the tool reads and rewrites (pure): Zarr v3 array documents (SPEC 2.6: only
``data_type`` and the array -> bytes codec entry change), Zarr v2 ragged arrays as v3 ``ndarray``
arrays, the pattern HyperSpy's shape siblings give one; the command line's values."""

from __future__ import annotations

import copy
import difflib
import json
import re
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_ndarray_dtype import ELEMENT_DTYPES, NDArrayDType, NDArrayDTypeError
from zarr_ndarray_tool.errors import Refused

#: zarr's raw bytes data type: zarr 3.1.0 reads only the first spelling (which ``downgrade``
#: writes), zarr >= 3.1.4 both.
BYTES_DTYPE_NAMES = ("variable_length_bytes", "bytes")
VLEN_BYTES, VLEN_NDARRAY, SHARDING = "vlen-bytes", "vlen-ndarray", "sharding_indexed"
ZARRAY, ZATTRS = ".zarray", ".zattrs"
Pattern = tuple[int | None, ...]
Ints = npt.NDArray[np.int64]


def compact(value: object) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 200 else text[:197] + "..."


def check_array_document(meta: Any, where: str) -> dict[str, Any]:
    """``meta`` itself if it is a Zarr v3 array document; else :class:`Refused`."""
    if not isinstance(meta, dict):
        raise Refused(f"{where}: zarr.json holds {compact(meta)}, not a JSON object.")
    if meta.get("zarr_format") != 3:
        what = f"zarr.json has zarr_format {meta.get('zarr_format')!r}"
        raise Refused(f"{where}: {what}; the ndarray data type, and this tool, are Zarr v3 only.")
    if meta.get("node_type") == "group":
        how = "e.g. PATH/name for a directory store, FILE.zip::name for a zip store"
        raise Refused(f"{where} is a Zarr group, not an array; name an array inside it ({how}).")
    if meta.get("node_type") != "array":
        raise Refused(f"{where}: zarr.json has node_type {meta.get('node_type')!r}, not 'array'.")
    if not isinstance(meta.get("codecs"), list):
        raise Refused(f"{where}: zarr.json has no 'codecs' list ({compact(meta.get('codecs'))}).")
    return meta


def data_type_kind(data_type: Any) -> str:
    """``bytes`` (zarr's raw bytes), ``ndarray``, ``legacy`` (0.1.x's vlen-ndarray) or ``other``."""
    if isinstance(data_type, str):
        return "bytes" if data_type in BYTES_DTYPE_NAMES else "other"
    spec = data_type if isinstance(data_type, dict) else {}
    name, config = spec.get("name"), spec.get("configuration")
    if name == "ndarray":
        return "ndarray"
    if name == VLEN_NDARRAY and isinstance(config, dict) and "inner_shape" in config:
        return "legacy"
    return "bytes" if name in BYTES_DTYPE_NAMES and not config else "other"


def ndarray_type(at: str, spec: Any = None, dtype: Any = None, shape: Any = None) -> NDArrayDType:
    """The ``ndarray`` type of the JSON ``spec`` (or of ``dtype`` and ``shape``), or the data
    type's own refusal, at ``at``."""
    try:
        return NDArrayDType.from_json(spec, zarr_format=3) if spec else NDArrayDType(dtype, shape)
    except (NDArrayDTypeError, TypeError) as exc:
        raise Refused(f"{at}: {exc}" if at else str(exc)) from exc


def label(dt: NDArrayDType) -> str:
    """The element type as messages name it: ``float32 [null, 2]``."""
    return f"{dt.dtype} {compact(list(dt.shape)).replace(',', ', ')}"


def element_type(meta: dict[str, Any], at: str = "") -> NDArrayDType | None:
    """The checked element type of an ``ndarray`` or 0.1.x document at ``at``, else None."""
    data_type: Any = meta.get("data_type")
    if (kind := data_type_kind(data_type)) != "legacy":
        return ndarray_type(at, data_type) if kind == "ndarray" else None
    where = f"{at}: " * bool(at) + f"data_type {compact(data_type)}"
    config = data_type["configuration"]
    dtype, inner = config.get("dtype"), config.get("inner_shape")
    named = dtype in ELEMENT_DTYPES or re.fullmatch(r"[<|][biufc][0-9]{1,2}", str(dtype))
    if set(config) != {"dtype", "inner_shape"} or not isinstance(inner, list) or not named:
        raise Refused(
            f"{where}: a zarr-vlen-ndarray 0.1.x data type has exactly a dtype, one of "
            f"{', '.join(ELEMENT_DTYPES)} or a little-endian typestr such as '<f4' (others are not "
            "allowed: a guess could mistype every element), and an inner_shape, a list of integers."
        )
    return ndarray_type(where, None, dtype, [None, *inner])


def _entries(codecs: Any, name: str) -> list[tuple[list[Any], int]]:
    """Where the codec entries ``name`` are (the list, the index), at the top or in sharding."""
    found: list[tuple[list[Any], int]] = []
    for i, entry in enumerate(codecs if isinstance(codecs, list) else ()):
        entry = entry if isinstance(entry, dict) else {"name": entry}
        if entry.get("name") == name:
            found.append((codecs, i))
        elif entry.get("name") == SHARDING and isinstance(entry.get("configuration"), dict):
            found += _entries(entry["configuration"].get("codecs"), name)
    return found


def codec_chain(codecs: Any) -> str:
    """A one-line description: ``vlen-bytes -> zstd(level=3)``, sharding nested in brackets."""
    if not isinstance(codecs, list):
        return compact(codecs)
    parts = []
    for entry in codecs:
        entry = entry if isinstance(entry, dict) else {"name": entry}
        name, config = str(entry.get("name")), entry.get("configuration")
        if name == SHARDING and isinstance(config, dict):
            shape, inner = compact(config.get("chunk_shape")), codec_chain(config.get("codecs"))
            name += f"(chunk_shape={shape})[{inner}]"
        elif isinstance(config, dict) and config:
            name += f"({', '.join(f'{k}={compact(v)}' for k, v in config.items())})"
        parts.append(name)
    return " -> ".join(parts)


def inner_chunks(meta: dict[str, Any]) -> tuple[int, ...] | None:
    """The inner chunk shape when the array is sharded (``sharding_indexed`` first), else None."""
    first = (meta.get("codecs") or [None])[0]
    if isinstance(first, dict) and first.get("name") == SHARDING:
        return tuple((first.get("configuration") or {}).get("chunk_shape") or ()) or None
    return None


_LEGACY = '{"name": "vlen-ndarray", "configuration": {"dtype": ..., "inner_shape": [...]}}'
_REWRITES = {  # command: the data type kind it takes, and what it expects
    "upgrade": ("bytes", "a raw variable-length bytes array"),
    "downgrade": ("ndarray", "an ndarray array with the vlen-ndarray codec"),
    "migrate": ("legacy", f"a zarr-vlen-ndarray 0.1.x array (data_type {_LEGACY})"),
}
_HINTS = {
    "bytes": "it holds raw variable-length bytes (use `upgrade --dtype D --shape S`)",
    "ndarray": "it already has the ndarray data type",
    "legacy": "it has the zarr-vlen-ndarray 0.1.x data type (use `migrate`)",
    "other": "this tool converts only raw-bytes, ndarray and 0.1.x vlen-ndarray arrays",
}


def rewritten(
    meta: dict[str, Any], where: str, command: str, dtype: Any = None, shape: Any = None
) -> dict:
    """A copy of ``meta`` with the data type and the one array -> bytes codec entry ``command``
    rewrites swapped in place, every other key and the order kept (SPEC 2.6): ``upgrade`` types
    raw bytes + ``vlen-bytes`` as ``ndarray`` (``dtype``, ``shape``) + ``vlen-ndarray``,
    ``downgrade`` reverses it, ``migrate`` turns the 0.1.x data type into ``ndarray``."""
    (kind, expects), old = _REWRITES[command], VLEN_BYTES if command == "upgrade" else VLEN_NDARRAY
    if (found := data_type_kind(check_array_document(meta, where).get("data_type"))) != kind:
        raise Refused(
            f"{where}: {command} expects {expects}, but the data_type is "
            f"{compact(meta.get('data_type'))}: {_HINTS[found]}."
        )
    dt: Any = new_element_type(dtype, shape) if command == "upgrade" else element_type(meta, where)
    if command == "downgrade" and not dt.pattern.is_leading_variable:
        raise Refused(
            f"{where}: the pattern {compact(list(dt.shape))} is not [null, d1, ..., dk], so its "
            f"chunks are not vlen-bytes framed (codec chain {codec_chain(meta['codecs'])}); only "
            "vlen-ndarray arrays downgrade by a metadata rewrite."
        )
    out, fill = copy.deepcopy(meta), meta.get("fill_value")
    if len(entries := _entries(out["codecs"], old)) != 1:
        raise Refused(
            f"{where}: the codec chain {codec_chain(meta['codecs'])} has {len(entries) or 'no'} "
            f"{old!r} codec{'s' * (len(entries) != 1)}; {command} expects exactly one {old} codec "
            "(at the top level or inside sharding)."
        )
    holder, at = entries[0]
    entry = holder[at] if isinstance(holder[at], dict) else {"": holder[at]}
    extra = entry.get("configuration", {}) != {} or entry.keys() - {"name", "configuration"}
    if command == "migrate" and extra:
        raise Refused(
            f'{where}: the codec entry {compact(entry)} is not {{"name": "vlen-ndarray", '
            '"configuration": {}}; the codec takes no parameters.'
        )
    holder[at] = _codec(VLEN_BYTES if command == "downgrade" else VLEN_NDARRAY)
    out["data_type"] = BYTES_DTYPE_NAMES[0] if command == "downgrade" else dt.to_json(3)
    try:
        if command != "downgrade":
            dt.from_json_scalar(fill, zarr_format=3)
        elif not isinstance(fill, str):
            raise TypeError("not a base64 string")
    except (ValueError, TypeError) as exc:
        typed = BYTES_DTYPE_NAMES[0] if command == "downgrade" else label(dt)
        raise Refused(
            f"{where}: the fill_value {compact(fill)} is not a valid fill for {typed} ({exc}); "
            f"{command} keeps the fill value as it is, so it refuses this store."
        ) from exc
    return out


def new_element_type(dtype: str, shape: Pattern) -> NDArrayDType:
    """The element type an ``upgrade`` writes; :class:`Refused` if vlen-ndarray cannot serve it."""
    if not (dt := ndarray_type("", None, dtype, shape)).pattern.is_leading_variable:
        raise Refused(
            f"--shape {compact(list(dt.shape))}: a vlen-bytes store can only become a vlen-ndarray "
            "one, whose patterns have one leading variable axis, [null, d1, ..., dk] (e.g. null,2)."
        )
    return dt


def bytes_view(meta: dict[str, Any], where: str) -> dict:
    """The document read as raw variable-length bytes (in memory only)."""
    kind = data_type_kind(check_array_document(meta, where).get("data_type"))
    if kind == "bytes":
        return {**meta, "data_type": BYTES_DTYPE_NAMES[0]}
    if kind == "other":
        raise Refused(
            f"{where}: this command expects a raw-bytes, ndarray or 0.1.x vlen-ndarray array, but "
            f"the data_type is {compact(meta.get('data_type'))}."
        )
    return rewritten(
        rewritten(meta, where, "migrate") if kind == "legacy" else meta, where, "downgrade"
    )


def dumps_like(meta: dict[str, Any], original: str) -> str:
    """``meta`` as JSON in the layout of ``original`` (indent, separators, final newline), so
    that a downgrade after an upgrade gives the original bytes back."""
    indent = match.group(1) if (match := re.match(r"\{\r?\n([ \t]+)\"", original)) else None
    tight = indent is None and re.search(r'"\s*:\S', original) and not re.search(r'":\s', original)
    separators = (",", ":") if tight else None
    text = json.dumps(meta, indent=indent, separators=separators, ensure_ascii=original.isascii())
    return text + "\n" * original.endswith("\n")


def json_diff(old: dict[str, Any], new: dict[str, Any], label: str) -> str:
    """A unified diff of two documents, both rendered with indent 2 (for ``--dry-run``)."""
    a, b = (json.dumps(d, indent=2).splitlines(keepends=True) for d in (old, new))
    lines = difflib.unified_diff(a, b, fromfile=f"{label} (current)", tofile=f"{label} (new)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class Grid(NamedTuple):
    """A regular chunk grid: the array's ``shape`` and its ``chunks`` (chunk or shard shape)."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    def padded(self) -> Grid:
        """The grid of whole chunks (edge chunks read whole, as the codecs decode them)."""
        shape = tuple(n * c for n, c in zip(self.grid_shape, self.chunks, strict=True))
        return Grid(shape, self.chunks)

    def region(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        bounds = zip(index, self.chunks, self.shape, strict=True)
        return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in bounds)


def grid_of(meta: dict[str, Any], where: str) -> Grid:
    """The array's regular chunk grid; :class:`Refused` naming what is wrong with it."""
    grid, shape = meta.get("chunk_grid"), meta.get("shape")
    config = grid.get("configuration") if isinstance(grid, dict) else None
    chunks = config.get("chunk_shape") if isinstance(config, dict) else None
    if not isinstance(shape, list) or any(type(s) is not int or s < 0 for s in shape):
        raise Refused(f"{where}: zarr.json's shape {json.dumps(shape)} is not a list of sizes.")
    if grid is None:
        raise Refused(f"{where}: zarr.json has no chunk_grid; an array needs one.")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        raise Refused(f"{where}: chunk_grid {json.dumps(grid)}; the tool reads regular grids only.")
    if not isinstance(chunks, list) or any(type(c) is not int or c < 1 for c in chunks):
        what = f"the regular chunk_grid's chunk_shape {json.dumps(chunks)}"
        raise Refused(f"{where}: {what} is not a list of positive integers.")
    if len(chunks) != len(shape):
        raise Refused(
            f"{where}: the shape {json.dumps(shape)} has {len(shape)} dimensions but the "
            f"chunk_shape {json.dumps(chunks)} has {len(chunks)}; zarr.json contradicts itself."
        )
    return Grid(tuple(shape), tuple(chunks))


def document_text(data: bytes | None, name: str, where: str) -> str | None:
    """A stored v2 document ``name`` as text (None when absent); refused unless UTF-8."""
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{where}: {name} is not UTF-8 text ({exc}).") from exc


def _codec(name: str, **configuration: Any) -> dict[str, Any]:
    return {"name": name, "configuration": configuration}


def compressor_twin(c: Any, where: str) -> list[dict[str, Any]]:
    """The v3 codec entries that decode exactly what the v2 compressor ``c`` encoded: none,
    zstd, blosc, and zlib and lz4 as ``numcodecs.zlib``/``numcodecs.lz4`` (v3's ``gzip`` frames
    differently)."""
    cid = c.get("id") if isinstance(c, dict) else c
    if cid is None:
        return []
    if cid == "zstd":
        return [_codec("zstd", level=int(c.get("level", 0)), checksum=bool(c.get("checksum")))]
    if cid == "blosc" and c.get("shuffle", 1) in (-1, 0, 1, 2):
        # numcodecs blosc-compresses the framed chunk as bytes (typesize 1); blosc frames carry
        # their own parameters, so these values only make zarr v3 write the same kind of frames.
        shuffle = {0: "noshuffle", 1: "shuffle"}.get(c.get("shuffle", 1), "bitshuffle")
        options = {"cname": c.get("cname", "lz4"), "clevel": int(c.get("clevel", 5))}
        options |= {"shuffle": shuffle, "blocksize": int(c.get("blocksize", 0))}
        return [_codec("blosc", typesize=1, **options)]
    if cid in ("zlib", "lz4"):
        key = "level" if cid == "zlib" else "acceleration"
        return [_codec(f"numcodecs.{cid}", **{key: c.get(key, 1)})]
    raise Refused(
        f"{where}: the compressor {json.dumps(c)} has no byte-identical Zarr v3 codec this tool "
        "maps (zstd, blosc, zlib, lz4 or none); recompress the array, or read it with zarr 2."
    )


def v3_from_v2(
    zarray_text: str, zattrs_text: str | None, dtype: str | None, shape: Pattern | None, where: str
) -> tuple[dict[str, Any], NDArrayDType]:
    """The v3 ``zarr.json`` for a v2 ragged array (an object array of one ``VLenArray`` or
    ``VLenBytes`` filter), and its element type: ``dtype``/``shape`` (``--dtype``/``--shape``)
    are optional for ``VLenArray`` (its dtype, ``[null]``), required for ``VLenBytes``."""
    try:
        zarray, attrs = json.loads(zarray_text), json.loads(zattrs_text or "{}")
    except ValueError as exc:
        raise Refused(f"{where}: {ZARRAY} or {ZATTRS} is not valid JSON ({exc}).") from exc
    if not isinstance(zarray, dict) or zarray.get("zarr_format") != 2 or type(attrs) is not dict:
        raise Refused(f"{where}: {ZARRAY} is no Zarr v2 array document or {ZATTRS} no object.")
    filters = zarray.get("filters") or []
    ids = [f.get("id") if isinstance(f, dict) else f for f in filters]
    if zarray.get("dtype") != "|O" or ids not in (["vlen-array"], ["vlen-bytes"]):
        raise Refused(
            f"{where}: the Zarr v2 dtype is {zarray.get('dtype')!r}, the filters "
            f"{json.dumps(zarray.get('filters'))}; upgrade needs an object array ('|O') with "
            "exactly one VLenArray or VLenBytes filter (other filters change the chunk bytes)."
        )
    if ids == ["vlen-bytes"] and (dtype is None or shape is None):
        raise Refused(
            f"{where}: a VLenBytes array holds raw bytes; give its element type with --dtype and "
            "--shape (e.g. --dtype float32 --shape null,2; they type every VLenBytes array)."
        )
    if ids == ["vlen-array"]:
        if str(text := filters[0].get("dtype")).startswith(">"):
            what = "its chunks are not vlen-ndarray's little-endian bytes; rewrite it little-endian"
            raise Refused(f"{where}: the VLenArray filter's dtype {text!r} is big-endian: {what}.")
        name = ndarray_type(f"{where}: the VLenArray filter's dtype", None, text, (None,)).dtype
        if dtype is not None and dtype != name:
            raise Refused(
                f"{where}: --dtype {dtype} disagrees with the VLenArray filter's dtype {text!r} "
                f"({name}); leave --dtype out or give {name}."
            )
        dtype, shape = name, shape or (None,)
    dt = new_element_type(dtype, shape)  # type: ignore[arg-type]
    array_shape, chunks = zarray.get("shape"), zarray.get("chunks")
    grid = _codec("regular", chunk_shape=chunks)
    try:
        ndim = len(grid_of({"shape": array_shape, "chunk_grid": grid}, "").shape)
    except Refused as exc:
        raise Refused(f"{where}: shape {array_shape!r} / chunks {chunks!r} are not valid.") from exc
    order, separator = zarray.get("order", "C"), zarray.get("dimension_separator", ".")
    if order not in ("C", "F") or (order == "F" and ndim > 1):
        raise Refused(
            f"{where}: order {order!r} with {ndim} dimensions stores chunks "
            "transposed, which a v3 array cannot describe without a transpose codec on object "
            "elements; rewrite the array in C order."
        )
    if separator not in (".", "/"):
        raise Refused(f"{where}: dimension_separator {separator!r} is not '.' or '/'.")
    meta: dict[str, Any] = {
        "shape": array_shape,
        "data_type": dt.to_json(3),
        "chunk_grid": grid,
        "chunk_key_encoding": _codec("v2", separator=separator),
        "fill_value": "",
        "codecs": [_codec(VLEN_NDARRAY), *compressor_twin(zarray.get("compressor"), where)],
        "attributes": attrs,
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }
    names = attrs.get("_ARRAY_DIMENSIONS")  # xarray's v2 convention
    if isinstance(names, list) and [type(n) for n in names] == [str] * ndim:
        meta["dimension_names"] = names
    return meta, dt


def sibling_of(name: str, arrays: set[str]) -> str | None:
    """The HyperSpy shape sibling of the ragged array ``name`` among its group's arrays, as
    RosettaSciIO's reader finds it (``ragged_shapes`` first); None for a sibling itself."""
    if name == "ragged_shapes" or name.startswith("_ragged_shapes_"):
        return None
    return next((c for c in ("ragged_shapes", f"_ragged_shapes_{name}") if c in arrays), None)


def pattern_of(
    ranks: Ints, extents: Ints, sizes: Ints, grid: tuple[int, ...], where: str
) -> tuple[Pattern, str]:
    """The pattern of a HyperSpy ragged array whose cells (C order over ``grid``) hold ``sizes``
    items flattened, their shape sibling's ``ranks`` and ``extents`` (back to back); and why. One
    rank k >= 1 and one trailing shape: the bytes of ``[null, d1..d(k-1)]`` cells."""
    ends = np.cumsum(ranks)
    starts = ends - ranks
    items = np.ones(ranks.size, dtype=np.int64)  # a 0-d cell holds one item
    if (ranks > 0).any():
        items[ranks > 0] = np.multiply.reduceat(extents, starts[ranks > 0])

    def cell(at: int) -> str:
        shape = tuple(int(e) for e in extents[starts[at] : ends[at]])
        return f"cell {tuple(int(i) for i in np.unravel_index(at, grid))} is {shape}"

    if (bad := np.flatnonzero(items != sizes)).size:
        at = int(bad[0])
        raise Refused(
            f"{where}: the shape sibling says {cell(at)} ({int(items[at])} items), but the data "
            f"holds {int(sizes[at])} items there; the two arrays disagree, so the store cannot be "
            "upgraded as it is (check that HyperSpy wrote both)."
        )
    if not ranks.size:
        return (None,), "it holds no cells"
    flat = "so the cells stay flattened"
    if (other := np.flatnonzero(ranks != ranks[0])).size:
        return (None,), f"its cells differ in rank ({cell(0)} but {cell(int(other[0]))}), {flat}"
    if ranks[0] <= 1:
        return (None,), "every cell is (n,)" if ranks[0] else "every cell is 0-d (one item)"
    table = extents.reshape(-1, int(ranks[0]))[:, 1:]
    if (odd := np.flatnonzero((table != table[0]).any(axis=1))).size:
        why = f"its cells differ in trailing extents ({cell(0)} but {cell(int(odd[0]))})"
        return (None,), f"{why}, {flat}"
    return (None, *map(int, table[0])), f"every cell is (n, {', '.join(map(str, table[0]))})"


def parse_shape_arg(text: str) -> Pattern:
    """``--shape``: ``null,2``, ``None,2``, ``[null, 2]``, ``(None, 2)`` or ``null``."""
    tokens = [t.strip() for t in re.sub(r"^\s*[\[(](.*)[\])]\s*$", r"\1", text).split(",")]
    tokens = tokens[:-1] if len(tokens) > 1 and not tokens[-1] else tokens  # as in "(None,)"
    for token in tokens:
        if token.lower() not in ("null", "none") and not token.isdecimal():
            raise ValueError(
                f"--shape {text!r}: entry {token!r} is no null/None or integer; e.g. null,2"
            )
    entries = tuple(int(t) if t.isdecimal() else None for t in tokens)
    NDArrayDType(dtype="uint8", shape=entries)  # ShapePatternError names a bad entry
    return entries


def parse_dtype_arg(text: str) -> str:
    """``--dtype``: one of the element dtype names (``<f4`` is read as float32)."""
    return NDArrayDType(dtype=text, shape=(None,)).dtype


def parse_selection(text: str) -> Any:
    """``--select``: numpy's basic indexing as written in Python (``"0:10, 5"``, ``"..., -1"``:
    ints, slices of ints and ``...``), parsed without evaluating anything."""
    out: list[Any] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(-?\d+)?\s*(?:(:)\s*(-?\d+)?\s*(?::\s*(-?\d+)?\s*)?)?", part)
        if part.strip() == "...":
            out.append(Ellipsis)
        elif match is None or not part.strip():
            raise ValueError(f"{part.strip()!r} in {text!r} is not an int, int slice or '...'")
        else:
            a, colon, b, step = (g if g in (None, ":") else int(g) for g in match.groups())
            out.append(a if colon is None else slice(a, b, step))
    return tuple(out)


def parse_count(text: str) -> int:
    """``--sample``, ``--max-errors``: a positive integer."""
    if not text.isdecimal() or int(text) < 1:
        raise ValueError(f"{text!r} is not a positive integer")
    return int(text)


def parse_names(text: str) -> list[str]:
    """``--dims``: comma-separated names."""
    if not all(names := [n.strip() for n in text.split(",")]):
        raise ValueError(f"{text!r}: give comma-separated names, e.g. n,xy")
    return names
