"""Checks and rewrites of one Zarr v3 array document (a parsed ``zarr.json``; pure): the
metadata rewrites of SPEC.md 2.6 change only ``data_type`` and the one array -> bytes codec
entry, in place, so every other key and the key order are kept.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from zarr_ndarray_dtype.cells import check_bool_bytes
from zarr_ndarray_dtype.errors import (
    CellError,
    ElementDTypeError,
    FillValueError,
    ShapePatternError,
)
from zarr_ndarray_dtype.fill import decode_fill
from zarr_ndarray_dtype.pattern import ELEMENT_DTYPES, ShapePattern, parse_element_dtype
from zarr_ndarray_tool.errors import Refused

#: zarr's variable-length bytes data type: zarr 3.1.0 reads only the first spelling, which
#: ``downgrade`` writes; zarr >= 3.1.4 also reads ``bytes``.
BYTES_DTYPE_NAMES = ("variable_length_bytes", "bytes")
DOWNGRADE_DTYPE_NAME = "variable_length_bytes"
NDARRAY = "ndarray"
VLEN_BYTES = "vlen-bytes"
VLEN_NDARRAY = "vlen-ndarray"
SHARDING = "sharding_indexed"

#: A ``data_type``: zarr's raw bytes, ``ndarray``, the 0.1.x ``vlen-ndarray`` one, or another.
Kind = Literal["bytes", "ndarray", "legacy", "other"]


def _compact(value: object) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 200 else text[:197] + "..."


def check_array_document(meta: object, where: str) -> dict[str, Any]:
    """``meta`` itself if it is a Zarr v3 array document; else :class:`Refused`."""
    if not isinstance(meta, dict):
        raise Refused(f"{where}: zarr.json holds {_compact(meta)}, not a JSON object.")
    fmt = meta.get("zarr_format")
    if fmt != 3:
        raise Refused(
            f"{where}: zarr.json has zarr_format {fmt!r}; this tool handles Zarr v3 arrays only "
            "(the ndarray data type is not defined for Zarr v2)."
        )
    node = meta.get("node_type")
    if node == "group":
        raise Refused(
            f"{where} is a Zarr group, not an array; name an array inside it "
            "(e.g. PATH/name for a directory store, FILE.zip::name for a zip store)."
        )
    if node != "array":
        raise Refused(f"{where}: zarr.json has node_type {node!r}; expected 'array'.")
    if not isinstance(meta.get("codecs"), list):
        raise Refused(f"{where}: zarr.json has no 'codecs' list ({_compact(meta.get('codecs'))}).")
    return meta


def data_type_kind(data_type: object) -> Kind:
    """Classify a ``data_type`` JSON value (see :data:`Kind`)."""
    if isinstance(data_type, str):
        return "bytes" if data_type in BYTES_DTYPE_NAMES else "other"
    if isinstance(data_type, dict):
        name = data_type.get("name")
        config = data_type.get("configuration")
        if name == NDARRAY:
            return "ndarray"
        if name == VLEN_NDARRAY and isinstance(config, dict) and "inner_shape" in config:
            return "legacy"
        if name in BYTES_DTYPE_NAMES and not config:
            return "bytes"
    return "other"


@dataclass(frozen=True)
class ElementType:
    """An ``ndarray`` element type: a canonical dtype name and a validated pattern."""

    dtype: str
    pattern: ShapePattern

    @property
    def itemsize(self) -> int:
        return int(np.dtype(self.dtype).itemsize)

    @property
    def unit(self) -> int:
        """Bytes one step along the variable axis adds (``itemsize`` x fixed extents)."""
        return self.itemsize * self.pattern.fixed_items

    def to_json(self) -> dict[str, Any]:
        return {"name": NDARRAY, "configuration": {"dtype": self.dtype, "shape": self.shape}}

    @property
    def shape(self) -> list[int | None]:
        return self.pattern.to_json()

    def __str__(self) -> str:
        return f"{self.dtype} {_compact(self.shape).replace(',', ', ')}"


def _strict_dtype(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in ELEMENT_DTYPES:
        raise Refused(
            f"{where}: element dtype {_compact(value)} is not one of the 14 names "
            f"{', '.join(ELEMENT_DTYPES)}."
        )
    return value


def _pattern_from_json(value: object, where: str) -> ShapePattern:
    try:
        return ShapePattern.from_json(value)
    except ShapePatternError as exc:
        raise Refused(f"{where}: {exc}") from exc


def element_type(meta: dict[str, Any], at: str = "") -> ElementType | None:
    """The checked element type of an ``ndarray`` or 0.1.x document at ``at``, else None."""
    data_type = meta.get("data_type")
    kind = data_type_kind(data_type)
    if kind not in ("ndarray", "legacy"):
        return None
    assert isinstance(data_type, dict)
    config = data_type.get("configuration")
    where = f"{at}: " * bool(at) + f"data_type {_compact(data_type)}"
    if not isinstance(config, dict):
        raise Refused(f"{where}: the configuration is not a JSON object.")
    if kind == "ndarray":
        if set(data_type) != {"name", "configuration"} or set(config) != {"dtype", "shape"}:
            raise Refused(
                f"{where}: an ndarray data type has exactly the keys name and configuration, "
                "and its configuration exactly dtype and shape."
            )
        return ElementType(
            _strict_dtype(config["dtype"], where), _pattern_from_json(config["shape"], where)
        )
    inner = config.get("inner_shape")
    if set(config) != {"dtype", "inner_shape"} or not isinstance(inner, list):
        raise Refused(
            f"{where}: a zarr-vlen-ndarray 0.1.x data type has a configuration with exactly "
            "dtype and inner_shape (a list of integers >= 1)."
        )
    return ElementType(
        _legacy_dtype(config["dtype"], where), _pattern_from_json([None, *inner], where)
    )


def _legacy_dtype(value: object, where: str) -> str:
    """A 0.1.x element dtype: one of the 14 names, or an explicit little-endian typestr."""
    if isinstance(value, str) and value in ELEMENT_DTYPES:
        return value
    if isinstance(value, str) and re.fullmatch(r"[<|][biufc][0-9]{1,2}", value):
        try:
            return parse_element_dtype(value)
        except ElementDTypeError as exc:
            raise Refused(f"{where}: {exc}") from exc
    raise Refused(
        f"{where}: element dtype {_compact(value)} is neither one of the 14 names "
        f"{', '.join(ELEMENT_DTYPES)} nor an explicit little-endian typestr such as '<f4'; "
        "it is not allowed (a guess could mistype every element)."
    )


# ------------------------------------------------------------------------------ codec chains


def _codec_name(entry: object) -> str:
    if isinstance(entry, dict):
        return str(entry.get("name"))
    return str(entry)


def codec_chain(codecs: object) -> str:
    """A one-line description: ``vlen-bytes -> zstd(level=3)``, sharding nested in brackets."""
    if not isinstance(codecs, list):
        return _compact(codecs)
    parts = []
    for entry in codecs:
        name = _codec_name(entry)
        config = entry.get("configuration") if isinstance(entry, dict) else None
        if name == SHARDING and isinstance(config, dict):
            inner = codec_chain(config.get("codecs"))
            parts.append(f"{name}(chunk_shape={_compact(config.get('chunk_shape'))})[{inner}]")
        elif isinstance(config, dict) and config:
            args = ", ".join(f"{k}={_compact(v)}" for k, v in config.items())
            parts.append(f"{name}({args})")
        else:
            parts.append(name)
    return " -> ".join(parts)


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


def _check_vlen_ndarray_entry(meta: dict[str, Any], where: str) -> None:
    """The vlen-ndarray codec entry must be parameter-free (or the store would not open)."""
    found = _entries(meta["codecs"], VLEN_NDARRAY)
    if len(found) != 1:
        raise Refused(
            f"{where}: the codec chain {codec_chain(meta['codecs'])} has "
            f"{len(found) or 'no'} 'vlen-ndarray' codec entries; expected exactly one."
        )
    holder, i = found[0]
    entry = holder[i]
    config = entry.get("configuration", {}) if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or set(entry) - {"name", "configuration"} or config != {}:
        raise Refused(
            f"{where}: the codec entry {_compact(entry)} is not "
            '{"name": "vlen-ndarray", "configuration": {}}; the codec takes no parameters.'
        )


def _check_fill(meta: dict[str, Any], etype: ElementType, where: str, command: str) -> None:
    fill = meta.get("fill_value")
    try:
        payload, _shape = decode_fill(fill, etype.pattern, etype.itemsize)
        if etype.dtype == "bool":
            check_bool_bytes(np.frombuffer(payload, np.uint8))
    except (FillValueError, CellError) as exc:
        raise Refused(
            f"{where}: the fill_value {_compact(fill)} is not a valid fill for {etype} ({exc}); "
            f"{command} keeps the fill value as it is, so it refuses this store."
        ) from exc


def _with_data_type(meta: dict[str, Any], data_type: Any, codecs: list[Any]) -> dict[str, Any]:
    out = copy.deepcopy(meta)  # the keys replaced in place: their order is kept
    out["data_type"] = copy.deepcopy(data_type)
    out["codecs"] = codecs
    return out


# ------------------------------------------------------------------------------ the rewrites


def _wrong_kind(meta: dict[str, Any], where: str, command: str, expects: str) -> Refused:
    kind = data_type_kind(meta.get("data_type"))
    hint = {
        "bytes": "it holds raw variable-length bytes (use `upgrade --dtype D --shape S`)",
        "ndarray": "it already has the ndarray data type",
        "legacy": "it has the zarr-vlen-ndarray 0.1.x data type (use `migrate`)",
        "other": "this tool converts only raw-bytes, ndarray and 0.1.x vlen-ndarray arrays",
    }[kind]
    return Refused(
        f"{where}: {command} expects {expects}, but the data_type is "
        f"{_compact(meta.get('data_type'))}: {hint}."
    )


def upgrade(meta: dict[str, Any], dtype: str, shape: tuple[int | None, ...], where: str) -> dict:
    """``variable_length_bytes``/``bytes`` + ``vlen-bytes`` -> ``ndarray`` + ``vlen-ndarray`` of
    the element type ``dtype``, ``shape``; the fill value kept, and checked (not the chunks)."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "bytes":
        raise _wrong_kind(meta, where, "upgrade", "a raw variable-length bytes array")
    etype = new_element_type(dtype, shape)
    codecs = _swap_serializer(meta, VLEN_BYTES, VLEN_NDARRAY, where, "upgrade")
    _check_fill(meta, etype, where, "upgrade")
    return _with_data_type(meta, etype.to_json(), codecs)


def new_element_type(dtype: str, shape: tuple[int | None, ...]) -> ElementType:
    """The element type an ``upgrade`` writes; :class:`Refused` if vlen-ndarray cannot serve it."""
    try:
        name = parse_element_dtype(dtype)
        pattern = ShapePattern.parse(list(shape))
    except (ElementDTypeError, ShapePatternError) as exc:
        raise Refused(str(exc)) from exc
    if not pattern.is_leading_variable:
        raise Refused(
            f"--shape {_compact(pattern.to_json())}: the vlen-ndarray codec serves only patterns "
            "with one leading variable axis, [null, d1, ..., dk]; a vlen-bytes store can only "
            "become one of those (e.g. --shape null or --shape null,2)."
        )
    return ElementType(name, pattern)


def downgrade(meta: dict[str, Any], where: str) -> dict:
    """``ndarray`` + ``vlen-ndarray`` -> ``variable_length_bytes`` + ``vlen-bytes`` (fill kept)."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "ndarray":
        raise _wrong_kind(meta, where, "downgrade", "an ndarray array with the vlen-ndarray codec")
    etype = element_type(meta, where)
    assert etype is not None
    if not etype.pattern.is_leading_variable:
        raise Refused(
            f"{where}: the pattern {_compact(etype.shape)} is not [null, d1, ..., dk], so its "
            f"chunks are not vlen-bytes framed (codec chain {codec_chain(meta['codecs'])}); only "
            "vlen-ndarray arrays downgrade by a metadata rewrite."
        )
    codecs = _swap_serializer(meta, VLEN_NDARRAY, VLEN_BYTES, where, "downgrade")
    if not isinstance(meta.get("fill_value"), str):
        raise Refused(
            f"{where}: the fill_value {_compact(meta.get('fill_value'))} is not a base64 string; "
            "zarr's variable_length_bytes type could not read it."
        )
    return _with_data_type(meta, DOWNGRADE_DTYPE_NAME, codecs)


def migrate(meta: dict[str, Any], where: str) -> dict:
    """0.1.x ``vlen-ndarray``/``inner_shape`` data type -> ``ndarray`` ``[null, *inner_shape]``;
    codecs and fill value kept (checked: the migrated store must open)."""
    check_array_document(meta, where)
    if data_type_kind(meta.get("data_type")) != "legacy":
        legacy = '{"name": "vlen-ndarray", "configuration": {"dtype": ..., "inner_shape": [...]}}'
        raise _wrong_kind(
            meta, where, "migrate", f"a zarr-vlen-ndarray 0.1.x array (data_type {legacy})"
        )
    etype = element_type(meta, where)
    assert etype is not None
    _check_vlen_ndarray_entry(meta, where)
    _check_fill(meta, etype, where, "migrate")
    return _with_data_type(meta, etype.to_json(), copy.deepcopy(meta["codecs"]))


def bytes_view(meta: dict[str, Any], where: str) -> dict:
    """The document read as raw variable-length bytes (in memory only): the spelling every zarr
    reads for a raw-bytes array, the downgrade of an ``ndarray`` or 0.1.x array."""
    check_array_document(meta, where)
    kind = data_type_kind(meta.get("data_type"))
    if kind == "bytes":
        out = copy.deepcopy(meta)
        out["data_type"] = DOWNGRADE_DTYPE_NAME
        return out
    if kind == "legacy":
        return downgrade(migrate(meta, where), where)
    if kind == "ndarray":
        return downgrade(meta, where)
    raise _wrong_kind(
        meta, where, "this command", "a raw-bytes, ndarray or 0.1.x vlen-ndarray array"
    )


def with_shape(meta: dict[str, Any], shape: tuple[int, ...]) -> dict:
    """A copy of ``meta`` with another array ``shape`` (to read edge chunks whole)."""
    out = copy.deepcopy(meta)
    out["shape"] = list(shape)
    return out


# ------------------------------------------------------------------------------ JSON text


def dumps_like(meta: dict[str, Any], original: str) -> str:
    """``meta`` as JSON in the layout of ``original`` (indent, separators, final newline): a
    rewrite changes only the lines of the changed values, and a downgrade after an upgrade gives
    the original bytes back."""
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
