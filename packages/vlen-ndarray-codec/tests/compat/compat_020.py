"""Cross-version driver: stores written by zarr-vlen-ndarray 0.2.0 and by this package.

    python compat_020.py write DIR   # write every case below into DIR/<case>
    python compat_020.py check DIR   # reopen DIR/<case> and check every cell and chunk

The nox session ``compat020`` runs it in two venvs (A: zarr-vlen-ndarray 0.2.0 from PyPI,
B: this repository): A writes OLD, B writes NEW, A checks NEW, B checks OLD. So the script
uses only names both implementations export (``NDArray``, ``VlenNDArrayCodec``, ``unbox``)
and computes all expected data itself (deterministic integer arithmetic, no RNG streams).

``check`` verifies: the array metadata (data type, codec, fill value JSON); every cell read
through a slice and through scalar reads (dtype, shape, exact bytes; unwritten and fill cells
equal to the fill); and, for unsharded arrays, every stored chunk object byte for byte against
numcodecs ``VLenBytes`` of the cells' raw bytes (decompressed with numcodecs ``Zstd`` first),
including chunks that must not exist (empty-chunk elision).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from numcodecs import VLenBytes, Zstd

from zarr_vlen_ndarray import NDArray, VlenNDArrayCodec, unbox

ELEMENT_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


@dataclass(frozen=True)
class Case:
    name: str
    dtype: str
    pattern: tuple[int | None, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None = None
    zstd: bool = False
    order: str = "C"
    fill: tuple[int, ...] | None = None  # leading-extent rows of a non-empty fill cell
    # Writes, in order: ("slice", start, stop) writes cells of a flat C-order index range;
    # ("none", i) writes None into flat cell i (via a slice); ("empty", start, stop) writes
    # empty cells; ("scalar", i) writes one cell with arr[index] = cell.
    writes: tuple[tuple[Any, ...], ...] = field(default_factory=tuple)
    salt: int = 0  # varies which cells come out empty


def _cases() -> list[Case]:
    cases = [
        Case(
            "f32_pairs_zstd_partial",
            "float32",
            (None, 2),
            (10,),
            (4,),
            zstd=True,
            writes=(("slice", 0, 8), ("none", 3), ("scalar", 5)),
        ),
        Case("u64_rank2", "uint64", (None,), (6, 5), (4, 2), writes=(("slice", 0, 30),)),
        Case(
            "bool_rows_zstd",
            "bool",
            (None, 3),
            (7,),
            (3,),
            zstd=True,
            writes=(("slice", 1, 6),),
        ),
        Case(
            "c128_sharded",
            "complex128",
            (None, 2, 2),
            (6,),
            (2,),
            shards=(4,),
            zstd=True,
            writes=(("slice", 0, 5),),
        ),
        Case(
            "i16_nonempty_fill",
            "int16",
            (None,),
            (5,),
            (2,),
            fill=(3,),
            writes=(("slice", 0, 2), ("scalar", 4)),
        ),
        Case(
            "f64_forder_sharded",
            "float64",
            (None, 3),
            (3, 4),
            (2, 2),
            shards=(2, 4),
            order="F",
            writes=(("slice", 0, 12),),
        ),
        Case(
            "i8_elided_chunk",
            "int8",
            (None,),
            (6,),
            (2,),
            writes=(("slice", 0, 6), ("empty", 0, 2), ("none", 3)),
        ),
        Case("u8_rank0", "uint8", (None, 4), (), (), writes=(("scalar", 0),), salt=1),
        # A scalar write of a cell equal to the fill: zarr must elide the chunk.
        Case(
            "scalar_empty_write",
            "float32",
            (None,),
            (4,),
            (2,),
            writes=(("slice", 2, 4), ("scalar", 0)),
            salt=3,  # makes the scalar write at cell 0 (step 1) an empty cell
        ),
    ]
    cases += [
        Case(f"every_dtype_{name}", name, (None, 2), (5,), (2,), writes=(("slice", 0, 4),))
        for name in ELEMENT_DTYPES
    ]
    return cases


# ----------------------------------------------------------------------- deterministic data


def _bits(count: int, salt: int) -> np.ndarray:
    """``count`` pseudo-random bytes from integer arithmetic (identical on every platform)."""
    i = np.arange(count, dtype=np.uint64) + np.uint64(salt * 7919 + 1)
    mixed = (i * np.uint64(2654435761) + np.uint64(salt)) % np.uint64(2**32)
    mixed ^= mixed >> np.uint64(13)
    return (mixed % np.uint64(251)).astype(np.uint8)


def _cell(case: Case, flat_index: int, salt: int) -> np.ndarray:
    """The cell written at ``flat_index`` (its leading extent varies, 0 included)."""
    item = np.dtype(case.dtype).newbyteorder("<")
    fixed = tuple(d for d in case.pattern[1:] if d is not None)
    rows = (flat_index * 5 + salt + case.salt) % 4
    shape = (rows, *fixed)
    count = int(np.prod(shape))
    raw = _bits(count * item.itemsize, flat_index + 31 * salt)
    if item.kind == "b":
        return (raw[:count] % 2).astype(bool).reshape(shape)
    if item.kind == "f":
        # Finite values only, so that NaN payload bits cannot differ between writers.
        return (raw[:count].astype(np.float64) / 7.0 - 10.0).astype(item).reshape(shape)
    if item.kind == "c":
        real = raw[:count].astype(np.float64) / 3.0
        return (real - 1j * real).astype(item).reshape(shape)
    return raw.view(item).reshape(shape)


def _fill_cell(case: Case) -> np.ndarray:
    item = np.dtype(case.dtype).newbyteorder("<")
    fixed = tuple(d for d in case.pattern[1:] if d is not None)
    if case.fill is None:
        return np.zeros((0, *fixed), dtype=item)
    shape = (case.fill[0], *fixed)
    return (np.arange(int(np.prod(shape))) + 1).astype(item).reshape(shape)


def _expected(case: Case) -> np.ndarray:
    """The array content after all writes, as a flat C-order object array."""
    count = int(np.prod(case.shape))
    fill = _fill_cell(case)
    out = np.empty(count, dtype=object)
    for i in range(count):
        out[i] = fill
    for step, write in enumerate(case.writes):
        if write[0] == "slice":
            for i in range(write[1], write[2]):
                out[i] = _cell(case, i, step)
        elif write[0] == "none":
            out[write[1]] = np.zeros((0, *fill.shape[1:]), dtype=fill.dtype)
        elif write[0] == "empty":
            for i in range(write[1], write[2]):
                out[i] = np.zeros((0, *fill.shape[1:]), dtype=fill.dtype)
        else:
            out[write[1]] = _cell(case, write[1], step)
    return out


def _dtype(case: Case) -> Any:
    return NDArray(dtype=case.dtype, shape=case.pattern)


# ------------------------------------------------------------------------------------ write


def write_case(root: Path, case: Case) -> None:
    kwargs: dict[str, Any] = {}
    if case.shards is not None:
        kwargs["shards"] = case.shards
    if case.fill is not None:
        kwargs["fill_value"] = _fill_cell(case)
    arr = zarr.create_array(
        zarr.storage.LocalStore(root / case.name),
        shape=case.shape,
        chunks=case.chunks,
        dtype=_dtype(case),
        serializer=VlenNDArrayCodec(),
        compressors=[zarr.codecs.ZstdCodec(level=3)] if case.zstd else None,
        config={"order": case.order},
        **kwargs,
    )
    for step, write in enumerate(case.writes):
        if write[0] == "slice":
            start, stop = write[1], write[2]
            staged = np.empty(stop - start, dtype=object)
            for i in range(start, stop):
                staged[i - start] = _cell(case, i, step)
            _set_flat(arr, case, start, stop, staged)
        elif write[0] == "none":
            staged = np.empty(1, dtype=object)
            staged[0] = None
            _set_flat(arr, case, write[1], write[1] + 1, staged)
        elif write[0] == "empty":
            start, stop = write[1], write[2]
            staged = np.empty(stop - start, dtype=object)
            for i in range(stop - start):
                staged[i] = np.zeros((0, *_fill_cell(case).shape[1:]), dtype=_fill_cell(case).dtype)
            _set_flat(arr, case, start, stop, staged)
        else:
            index = np.unravel_index(write[1], case.shape) if case.shape else ()
            arr[tuple(int(i) for i in index)] = _cell(case, write[1], step)


def _set_flat(arr: Any, case: Case, start: int, stop: int, staged: np.ndarray) -> None:
    """Write flat C-order cells [start, stop) (a whole array for ranks >= 2)."""
    if len(case.shape) <= 1:
        arr[start:stop] = staged
        return
    if (start, stop) != (0, int(np.prod(case.shape))):
        raise ValueError(f"{case.name}: partial writes are only used on 1-d arrays")
    arr[...] = staged.reshape(case.shape)


# ------------------------------------------------------------------------------------ check


class Mismatch(AssertionError):
    pass


def _same_cell(got: Any, want: np.ndarray, where: str) -> None:
    got = unbox(got)
    if not isinstance(got, np.ndarray):
        raise Mismatch(f"{where}: got {type(got).__name__}, expected an ndarray")
    if got.dtype != want.dtype or got.shape != want.shape:
        raise Mismatch(f"{where}: got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}")
    if np.ascontiguousarray(got).tobytes() != want.tobytes():
        raise Mismatch(f"{where}: cell bytes differ")


def _check_metadata(root: Path, case: Case) -> None:
    meta = json.loads((root / case.name / "zarr.json").read_text(encoding="utf-8"))
    expected_type = {
        "name": "ndarray",
        "configuration": {"dtype": case.dtype, "shape": list(case.pattern)},
    }
    if meta["data_type"] != expected_type:
        raise Mismatch(f"{case.name}: data_type {meta['data_type']} != {expected_type}")
    codecs = meta["codecs"]
    if case.shards is not None:
        if codecs[0]["name"] != "sharding_indexed":
            raise Mismatch(f"{case.name}: expected sharding, got {codecs}")
        codecs = codecs[0]["configuration"]["codecs"]
    if codecs[0] != {"name": "vlen-ndarray", "configuration": {}}:
        raise Mismatch(f"{case.name}: serializer {codecs[0]}")
    import base64

    fill = base64.b64encode(_fill_cell(case).tobytes()).decode("ascii")
    if meta["fill_value"] != fill:
        raise Mismatch(f"{case.name}: fill_value {meta['fill_value']!r} != {fill!r}")


def _chunk_payloads(case: Case, expected: np.ndarray, chunk_index: tuple[int, ...]) -> np.ndarray:
    """Raw cell bytes of one chunk in C order, padded with the fill beyond the array edge."""
    grid = expected.reshape(case.shape)
    fill = _fill_cell(case).tobytes()
    payloads = np.empty(int(np.prod(case.chunks)), dtype=object)
    for k, local in enumerate(np.ndindex(case.chunks)):
        index = tuple(
            c * size + i for c, size, i in zip(chunk_index, case.chunks, local, strict=True)
        )
        inside = all(i < n for i, n in zip(index, case.shape, strict=True))
        payloads[k] = grid[index].tobytes() if inside else fill
    return payloads


def _check_chunks(root: Path, case: Case, expected: np.ndarray) -> None:
    if case.shards is not None:
        return
    grid_shape = tuple(-(-n // c) for n, c in zip(case.shape, case.chunks, strict=True))
    fill = _fill_cell(case).tobytes()
    for chunk_index in np.ndindex(grid_shape):
        payloads = _chunk_payloads(case, expected, chunk_index)
        path = root / case.name / "c" / "/".join(str(i) for i in chunk_index)
        if case.shape == ():
            path = root / case.name / "c"
        all_fill = all(p == fill for p in payloads)
        if not path.exists():
            if not all_fill:
                raise Mismatch(f"{case.name}: chunk {chunk_index} is missing")
            continue
        if all_fill:
            raise Mismatch(f"{case.name}: chunk {chunk_index} holds only fill but was stored")
        blob = path.read_bytes()
        if case.zstd:
            blob = bytes(Zstd().decode(blob))
        if blob != bytes(VLenBytes().encode(payloads)):
            raise Mismatch(f"{case.name}: chunk {chunk_index} is not vlen-bytes of the cells")


def check_case(root: Path, case: Case) -> None:
    _check_metadata(root, case)
    arr = zarr.open_array(zarr.storage.LocalStore(root / case.name), mode="r")
    expected = _expected(case)
    cells = np.asarray(arr[...])
    if case.shape == () and cells.dtype != object:
        cells = np.array(None, dtype=object)
        cells[()] = np.asarray(arr[...])
    flat = cells.reshape(-1)
    if flat.shape != expected.shape:
        raise Mismatch(f"{case.name}: read {cells.shape}, expected {case.shape}")
    for i, want in enumerate(expected):
        _same_cell(flat[i], want, f"{case.name} cell {i} (slice read)")
    for i in range(0, expected.size, 3):
        index = tuple(int(j) for j in np.unravel_index(i, case.shape)) if case.shape else ()
        _same_cell(arr[index], expected[i], f"{case.name} cell {i} (scalar read)")
    _check_chunks(root, case, expected)


# ------------------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in {"write", "check"}:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[2])
    import zarr_vlen_ndarray

    version = getattr(zarr_vlen_ndarray, "__version__", "?")
    print(f"zarr-vlen-ndarray {version}, zarr {zarr.__version__}: {argv[1]} {root}")
    failures = []
    for case in _cases():
        try:
            if argv[1] == "write":
                root.mkdir(parents=True, exist_ok=True)
                write_case(root, case)
            else:
                check_case(root, case)
        except Exception as exc:  # report every case, then fail
            failures.append(f"{case.name}: {type(exc).__name__}: {exc}")
            print(f"FAIL {case.name}: {type(exc).__name__}: {exc}")
        else:
            print(f"ok   {case.name}")
    if failures:
        print(f"{len(failures)} of {len(_cases())} cases failed", file=sys.stderr)
        return 1
    print(f"all {len(_cases())} cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
