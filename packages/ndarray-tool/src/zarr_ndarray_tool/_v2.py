"""Zarr v2 ragged arrays (numcodecs ``VLenArray``/``VLenBytes``) described as Zarr v3 ``ndarray``
arrays over the same chunks (pure): numcodecs frames a ``VLenArray`` element as ``VLenBytes`` of
its raw bytes, which is the ``vlen-ndarray`` wire format. The v3 document keeps the v2 documents'
texts in an attribute, so that ``downgrade`` restores them byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from zarr_ndarray_dtype.errors import ElementDTypeError
from zarr_ndarray_dtype.pattern import parse_element_dtype
from zarr_ndarray_tool._metadata import ElementType, new_element_type
from zarr_ndarray_tool.errors import Refused

ZARRAY = ".zarray"
ZATTRS = ".zattrs"
#: The attribute of an upgraded array that keeps the v2 documents for ``downgrade``.
V2_ATTRIBUTE = "_zarr_vlen_ndarray_v2"
_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: "bitshuffle"}


def document_text(data: bytes | None, name: str, where: str) -> str | None:
    """A stored v2 document ``name`` as text (None when absent); refused unless UTF-8."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{where}: {name} is not UTF-8 text ({exc}).") from exc


def _load(text: str, what: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Refused(f"{where}: {what} is not valid JSON ({exc}).") from exc


def _codec(name: str, **configuration: Any) -> dict[str, Any]:
    return {"name": name, "configuration": configuration}


def compressor_twin(compressor: object, where: str) -> list[dict[str, Any]]:
    """The v3 codec entries that decode exactly what the v2 ``compressor`` encoded: none, zstd,
    blosc, and zlib and lz4 as ``numcodecs.zlib``/``numcodecs.lz4`` (v3's ``gzip`` frames
    differently)."""
    if compressor is None:
        return []
    if not isinstance(compressor, dict):
        raise _no_twin(compressor, where)
    c = compressor
    if c.get("id") == "zstd":
        return [_codec("zstd", level=int(c.get("level", 0)), checksum=bool(c.get("checksum")))]
    if c.get("id") == "blosc" and c.get("shuffle", 1) in _BLOSC_SHUFFLE:
        # numcodecs blosc-compresses the framed chunk as bytes: typesize 1 (AUTOSHUFFLE with
        # typesize 1 is bit shuffle). Blosc frames carry their own parameters, so decoding
        # never depends on these values; they make zarr v3 write the same kind of frames.
        shuffle = _BLOSC_SHUFFLE[c.get("shuffle", 1)]
        return [
            _codec("blosc", typesize=1, cname=c.get("cname", "lz4"), clevel=int(c.get("clevel", 5)),
                   shuffle=shuffle, blocksize=int(c.get("blocksize", 0)))
        ]  # fmt: skip
    if c.get("id") == "zlib":
        return [_codec("numcodecs.zlib", level=c.get("level", 1))]
    if c.get("id") == "lz4":
        return [_codec("numcodecs.lz4", acceleration=c.get("acceleration", 1))]
    raise _no_twin(compressor, where)


def _no_twin(compressor: object, where: str) -> Refused:
    return Refused(
        f"{where}: the compressor {json.dumps(compressor)} has no byte-identical Zarr v3 codec "
        "this tool maps (zstd, blosc, zlib, lz4 or none); recompress the array, or read it with "
        "zarr-python 2."
    )


def _element_dtype(filt: dict[str, Any], dtype: str | None, where: str) -> str:
    """The element dtype of a ``vlen-array`` filter (little-endian only; agrees with ``dtype``)."""
    text = filt.get("dtype")
    try:
        np_dtype = np.dtype(text)  # type: ignore[call-overload]
    except TypeError as exc:
        raise Refused(f"{where}: the VLenArray filter's dtype {text!r} is not a dtype.") from exc
    if np_dtype.byteorder == ">":
        raise Refused(
            f"{where}: the VLenArray filter's dtype {text!r} is big-endian; vlen-ndarray "
            "elements are little-endian, so these chunks are not byte-compatible (rewrite the "
            "array with a little-endian dtype)."
        )
    try:
        name = parse_element_dtype(np_dtype.str)
    except ElementDTypeError as exc:
        raise Refused(f"{where}: the VLenArray filter's dtype {text!r}: {exc}") from exc
    if dtype is not None and dtype != name:
        raise Refused(
            f"{where}: --dtype {dtype} disagrees with the VLenArray filter's dtype {text!r} "
            f"({name}); leave --dtype out or give {name}."
        )
    return name


def v3_from_v2(
    zarray_text: str,
    zattrs_text: str | None,
    dtype: str | None,
    shape: tuple[int | None, ...] | None,
    where: str,
) -> tuple[dict[str, Any], ElementType]:
    """The v3 ``zarr.json`` document for a v2 ragged array, and its element type.

    ``dtype``/``shape`` are ``--dtype``/``--shape``: optional for a ``VLenArray`` array (default
    its dtype and ``[null]``), required for a ``VLenBytes`` array of raw element bytes.
    """
    zarray = _load(zarray_text, ZARRAY, where)
    attrs = {} if zattrs_text is None else _load(zattrs_text, ZATTRS, where)
    if not isinstance(zarray, dict) or zarray.get("zarr_format") != 2:
        raise Refused(f"{where}: {ZARRAY} is not a Zarr v2 array document.")
    if not isinstance(attrs, dict):
        raise Refused(f"{where}: {ZATTRS} is not a JSON object.")
    etype = _ragged_element_type(zarray, dtype, shape, where)
    array_shape, chunks, separator = _grid(zarray, where)
    meta: dict[str, Any] = {
        "shape": array_shape,
        "data_type": etype.to_json(),
        "chunk_grid": _codec("regular", chunk_shape=chunks),
        "chunk_key_encoding": _codec("v2", separator=separator),
        "fill_value": "",
        "codecs": [_codec("vlen-ndarray"), *compressor_twin(zarray.get("compressor"), where)],
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


def _ragged_element_type(
    zarray: dict[str, Any], dtype: str | None, shape: tuple[int | None, ...] | None, where: str
) -> ElementType:
    """The element type of a v2 object array of one ``VLenArray`` or ``VLenBytes`` filter."""
    if zarray.get("dtype") != "|O":
        raise Refused(
            f"{where}: the Zarr v2 dtype is {zarray.get('dtype')!r}; only object arrays ('|O') "
            "with a VLenArray or VLenBytes filter hold ragged elements."
        )
    filters = zarray.get("filters")
    ids = [f.get("id") if isinstance(f, dict) else f for f in filters or []]
    if ids not in (["vlen-array"], ["vlen-bytes"]):
        raise Refused(
            f"{where}: the filters are {json.dumps(filters)}; upgrade needs exactly one "
            "VLenArray or VLenBytes filter (other filters change the chunk bytes)."
        )
    assert isinstance(filters, list)
    if ids == ["vlen-array"]:
        name = _element_dtype(filters[0], dtype, where)
        return new_element_type(name, shape if shape is not None else (None,))
    if dtype is None or shape is None:
        raise Refused(
            f"{where}: a VLenBytes array holds raw bytes; give the element type with "
            "--dtype and --shape (e.g. --dtype float32 --shape null,2)."
        )
    return new_element_type(dtype, shape)


def _grid(zarray: dict[str, Any], where: str) -> tuple[list[int], list[int], str]:
    """The v2 array's shape, chunk shape and key separator, if v3 can describe its chunks."""
    shape, chunks = zarray.get("shape"), zarray.get("chunks")
    if not (
        isinstance(shape, list)
        and isinstance(chunks, list)
        and len(chunks) == len(shape)
        and all(isinstance(s, int) and s >= 0 for s in shape)
        and all(isinstance(c, int) and c >= 1 for c in chunks)
    ):
        raise Refused(f"{where}: shape {shape!r} / chunks {chunks!r} are not valid.")
    order = zarray.get("order", "C")
    if order not in ("C", "F") or (order == "F" and len(shape) > 1):
        raise Refused(
            f"{where}: order {order!r} with {len(shape)} dimensions stores chunks "
            "transposed, which a v3 array cannot describe without a transpose codec on object "
            "elements; rewrite the array in C order."
        )
    separator = zarray.get("dimension_separator", ".")
    if separator not in (".", "/"):
        raise Refused(f"{where}: dimension_separator {separator!r} is not '.' or '/'.")
    return shape, chunks, separator


def original_documents(meta: dict[str, Any], where: str) -> tuple[str, str | None] | None:
    """The v2 ``.zarray``/``.zattrs`` texts an upgraded array keeps; None for other arrays.

    Refused when the array's document is no longer what the upgrade wrote from them (a
    downgrade would silently drop the change).
    """
    attrs = meta.get("attributes")
    kept = attrs.get(V2_ATTRIBUTE) if isinstance(attrs, dict) else None
    if kept is None:
        return None
    zarray_text = kept.get(ZARRAY) if isinstance(kept, dict) else None
    zattrs_text = kept.get(ZATTRS) if isinstance(kept, dict) else None
    if not isinstance(zarray_text, str) or not (
        zattrs_text is None or isinstance(zattrs_text, str)
    ):
        raise Refused(f"{where}: the attribute {V2_ATTRIBUTE!r} is not what upgrade wrote.")
    config = meta.get("data_type", {}).get("configuration", {})
    expected, _etype = v3_from_v2(
        zarray_text, zattrs_text, config.get("dtype"), tuple(config.get("shape", [None])), where
    )
    changed = sorted(k for k in set(expected) | set(meta) if expected.get(k) != meta.get(k))
    if changed:
        raise Refused(
            f"{where}: {', '.join(changed)} changed since the array was upgraded from Zarr v2; "
            "restoring the v2 documents would lose that, so downgrade refuses."
        )
    return zarray_text, zattrs_text
