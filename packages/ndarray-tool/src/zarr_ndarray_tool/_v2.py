"""Zarr v2 ragged arrays (numcodecs ``VLenArray``/``VLenBytes``) as ``ndarray`` arrays (pure).

numcodecs ``VLenArray(dtype)`` frames each element like ``VLenBytes`` of its raw bytes (u32le
count, then u32le byte length + bytes per element), which is the ``vlen-ndarray`` wire format.
So a v2 array ``dtype "|O"``, ``filters [VLenArray("<f4")]`` reads unchanged as a v3 ``ndarray``
``float32 [null]`` array with the ``vlen-ndarray`` codec, given ``chunk_key_encoding`` ``v2``
with the array's separator and the compressor's byte-identical v3 twin:

====================  ===========================================================
v2 compressor         v3 codec
====================  ===========================================================
none                  none
``zstd``              ``zstd`` (level, checksum)
``blosc``             ``blosc`` (cname, clevel, shuffle, blocksize; typesize 1)
``zlib``              ``numcodecs.zlib`` (level) -- not ``gzip``, whose framing differs
``lz4``               ``numcodecs.lz4`` (acceleration)
====================  ===========================================================

Refused (nothing changes): other filters or more than one, big-endian element dtypes, other
compressors, ``order "F"`` with more than one dimension (chunks are stored transposed).

Where the v2 documents go: ``upgrade`` writes ``zarr.json`` carrying the original ``.zarray``
and ``.zattrs`` texts verbatim in the attribute :data:`V2_ATTRIBUTE`, then deletes the two v2
files (zarr-python warns on, and would ignore, a node holding both). ``downgrade`` of such an
array writes those texts back byte for byte and deletes ``zarr.json``, after checking that the
array's document is still exactly what the upgrade wrote (else it refuses: the changes would be
lost).
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


def compressor_twin(compressor: object, where: str) -> list[dict[str, Any]]:
    """The v3 codec entries that decode exactly what the v2 ``compressor`` encoded."""
    if compressor is None:
        return []
    if not isinstance(compressor, dict):
        raise _no_twin(compressor, where)
    cid = compressor.get("id")
    if cid == "zstd":
        return [
            {
                "name": "zstd",
                "configuration": {
                    "level": int(compressor.get("level", 0)),
                    "checksum": bool(compressor.get("checksum", False)),
                },
            }
        ]
    if cid == "blosc" and compressor.get("shuffle", 1) in _BLOSC_SHUFFLE:
        # numcodecs blosc-compresses the framed chunk as bytes: typesize 1 (AUTOSHUFFLE with
        # typesize 1 is bit shuffle). Blosc frames carry their own parameters, so decoding
        # never depends on these values; they make zarr v3 write the same kind of frames.
        return [
            {
                "name": "blosc",
                "configuration": {
                    "typesize": 1,
                    "cname": compressor.get("cname", "lz4"),
                    "clevel": int(compressor.get("clevel", 5)),
                    "shuffle": _BLOSC_SHUFFLE[compressor.get("shuffle", 1)],
                    "blocksize": int(compressor.get("blocksize", 0)),
                },
            }
        ]
    if cid == "zlib":
        return [{"name": "numcodecs.zlib", "configuration": {"level": compressor.get("level", 1)}}]
    if cid == "lz4":
        acceleration = compressor.get("acceleration", 1)
        return [{"name": "numcodecs.lz4", "configuration": {"acceleration": acceleration}}]
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
        etype = new_element_type(name, shape if shape is not None else (None,))
    else:
        if dtype is None or shape is None:
            raise Refused(
                f"{where}: a VLenBytes array holds raw bytes; give the element type with "
                "--dtype and --shape (e.g. --dtype float32 --shape null,2)."
            )
        etype = new_element_type(dtype, shape)
    array_shape = zarray.get("shape")
    chunks = zarray.get("chunks")
    if not (
        isinstance(array_shape, list)
        and isinstance(chunks, list)
        and len(chunks) == len(array_shape)
        and all(isinstance(s, int) and s >= 0 for s in array_shape)
        and all(isinstance(c, int) and c >= 1 for c in chunks)
    ):
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
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": separator}},
        "fill_value": "",
        "codecs": [
            {"name": "vlen-ndarray", "configuration": {}},
            *compressor_twin(zarray.get("compressor"), where),
        ],
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
