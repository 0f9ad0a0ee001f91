"""Both framing kernels, the compiled one (C) and the reference (Python), agree with numcodecs'
``VLenBytes`` (the oracle) and give identical results.

Every public framing function runs once per kernel (by swapping ``framing._kernel`` for the
duration of one call) and the outcomes are compared: equal arrays (bytes, dtype, shape) or the
same exception type with the same message. Inputs: the golden vectors, random chunks, mutated
(hostile) chunks. The comparisons need the C kernel; when it was not built (an install without
a compiler) they are skipped, and ``ZARR_VLEN_NDARRAY_EXPECT_BACKEND=c`` (set by the nox test
sessions) turns a missing kernel into a failure instead.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numcodecs import VLenBytes

from zarr_vlen_ndarray import _framing_ref, framing
from zarr_vlen_ndarray.framing import FramingError, decode_frames, encode_frames

try:
    _framing_c: ModuleType | None = importlib.import_module("zarr_vlen_ndarray._framing_c")
except ImportError:
    _framing_c = None

KERNELS: dict[str, Any] = {"python": _framing_ref}
if _framing_c is not None:
    KERNELS["c"] = _framing_c
needs_c = pytest.mark.skipif(
    _framing_c is None, reason="the C kernel is not built (installed without a compiler)"
)

GOLDEN = Path(__file__).parent / "golden"
MANIFEST = json.loads((GOLDEN / "framing.json").read_text(encoding="utf-8"))
EXPECT_ENV = "ZARR_VLEN_NDARRAY_EXPECT_BACKEND"


@contextmanager
def _kernel(name: str) -> Iterator[None]:
    saved = framing._kernel
    framing._kernel = KERNELS[name]
    try:
        yield
    finally:
        framing._kernel = saved


def _outcome(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """What ``fn`` returns with kernel ``name`` (arrays as (dtype, shape, bytes)), or its error."""
    with _kernel(name):
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            return ("raised", type(exc), str(exc))
    items = result if isinstance(result, tuple) else (result,)
    return tuple(
        (a.dtype.str, a.shape, a.flags.c_contiguous, a.tobytes())
        if isinstance(a, np.ndarray)
        else a
        for a in items
    )


def _same_everywhere(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    outcomes = {name: _outcome(name, fn, *args, **kwargs) for name in KERNELS}
    assert outcomes["c"] == outcomes["python"]
    return outcomes["python"]


def _pack(payloads: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    flat = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    return flat, np.array([len(p) for p in payloads], dtype=np.int64)


# ------------------------------------------------------------------------- backend choice


def test_backend_names_the_kernel_in_use() -> None:
    assert framing.BACKEND == framing._kernel.NAME
    assert framing.BACKEND in ("c", "python")
    if os.environ.get(framing.NO_EXTENSION_ENV, "") not in ("", "0"):
        assert framing.BACKEND == "python"
    expected = os.environ.get(EXPECT_ENV)
    if expected:
        assert expected == framing.BACKEND, (
            f"{EXPECT_ENV}={expected} but BACKEND is {framing.BACKEND}"
        )
        if expected == "c":
            assert _framing_c is not None


@pytest.mark.parametrize(("value", "expected"), [("1", "python"), ("0", None), ("", None)])
def test_environment_variable_forces_the_fallback(value: str, expected: str | None) -> None:
    env = {**os.environ, framing.NO_EXTENSION_ENV: value}
    code = "import zarr_vlen_ndarray.framing as f; print(f.BACKEND)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    default = "c" if _framing_c is not None else "python"
    assert out.stdout.strip() == (expected or default)


# ------------------------------------------------------------------------- golden vectors


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_golden_vectors_on_each_kernel(kernel: str, name: str) -> None:
    case = MANIFEST[name]
    payloads = [bytes.fromhex(h) for h in case["payloads_hex"]]
    expected = (GOLDEN / case["file"]).read_bytes()
    with _kernel(kernel):
        assert encode_frames(*_pack(payloads)).tobytes() == expected
        for unit in (1, 2, 4):
            if any(len(p) % unit for p in payloads):
                continue
            flat, nbytes = decode_frames(np.frombuffer(expected, np.uint8), len(payloads), unit)
            assert flat.tobytes() == b"".join(payloads)
            assert nbytes.tolist() == [len(p) for p in payloads]


# ----------------------------------------------------------------------- random chunks

units = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24])


@st.composite
def unit_payloads(draw: st.DrawFn) -> tuple[int, list[bytes]]:
    unit = draw(units)
    counts = draw(st.lists(st.integers(0, 6), max_size=40))
    return unit, [draw(st.binary(min_size=c * unit, max_size=c * unit)) for c in counts]


@needs_c
@given(unit_payloads(), st.integers(0, 3))
def test_same_frames_and_payloads_on_random_chunks(
    case: tuple[int, list[bytes]], misalign: int
) -> None:
    unit, payloads = case
    framed = _same_everywhere(encode_frames, *_pack(payloads))
    raw = framed[0][3]
    # Decode from a buffer that starts `misalign` bytes into an allocation (unaligned input).
    buffer = np.zeros(len(raw) + misalign, np.uint8)[misalign:]
    buffer[:] = np.frombuffer(raw, np.uint8)
    decoded = _same_everywhere(decode_frames, buffer, len(payloads), unit, what="thing")
    assert decoded[0][3] == b"".join(payloads)
    assert np.frombuffer(decoded[1][3], np.int64).tolist() == [len(p) for p in payloads]
    for name, kernel in KERNELS.items():  # the scan itself: same starts, same lengths
        starts, nbytes = kernel.scan(buffer, len(payloads), unit)
        expected = np.cumsum([0] + [4 + len(p) for p in payloads])[:-1] + 4
        assert starts.tolist() == expected.tolist(), name
        assert nbytes.tolist() == [len(p) for p in payloads], name


@needs_c
def test_same_results_on_a_large_chunk() -> None:
    rng = np.random.default_rng(10)
    rows = rng.poisson(8, 100_000).astype(np.int64)
    payload = rng.integers(0, 256, int(rows.sum()) * 8, dtype=np.uint8)
    framed = _same_everywhere(encode_frames, payload, rows * 8)
    raw = np.frombuffer(framed[0][3], np.uint8)
    decoded = _same_everywhere(decode_frames, raw, rows.size, 8)
    assert decoded[0][3] == payload.tobytes()


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@given(st.lists(st.binary(max_size=40), max_size=30))
def test_each_kernel_agrees_with_numcodecs(kernel: str, payloads: list[bytes]) -> None:
    """numcodecs' VLenBytes is the oracle of the framing: the same bytes, both ways."""
    objects = np.empty(len(payloads), dtype=object)
    objects[:] = payloads
    oracle = bytes(VLenBytes().encode(objects))
    with _kernel(kernel):
        assert encode_frames(*_pack(payloads)).tobytes() == oracle
        flat, nbytes = decode_frames(np.frombuffer(oracle, np.uint8), len(payloads))
    assert flat.tobytes() == b"".join(payloads)
    assert nbytes.tolist() == [len(p) for p in payloads]


# ---------------------------------------------------------------------- mutated chunks


@st.composite
def mutated_chunks(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """A valid chunk with a few hostile edits aimed at the header, the prefixes and the end."""
    unit, payloads = draw(unit_payloads())
    raw = bytearray(encode_frames(*_pack(payloads)).tobytes())
    prefixes = [0]
    p = 4
    for item in payloads:
        prefixes.append(p)
        p += 4 + len(item)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["prefix", "byte", "truncate", "extend", "splice"]))
        if kind == "prefix" and len(raw) >= 4:
            at = min(draw(st.sampled_from(prefixes)), len(raw) - 4)
            value = draw(
                st.sampled_from([0, 1, 3, unit, unit + 1, 2**31, 2**32 - 1]) | st.integers(0, 99)
            )
            raw[at : at + 4] = value.to_bytes(4, "little")
        elif kind == "byte" and raw:
            at = draw(st.integers(0, len(raw) - 1))
            raw[at] = draw(st.integers(0, 255))
        elif kind == "truncate":
            del raw[draw(st.integers(0, len(raw))) :]
        elif kind == "extend":
            raw += draw(st.binary(min_size=1, max_size=9))
        elif kind == "splice":
            at = draw(st.integers(0, len(raw)))
            raw[at : at + draw(st.integers(0, 5))] = draw(st.binary(max_size=5))
    n = len(payloads)
    count = draw(st.sampled_from([n, n, n, n + 1, max(n - 1, 0), 2**32 - 1]))
    return bytes(raw), count, unit


@needs_c
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_chunks())
def test_same_outcome_on_mutated_chunks(case: tuple[bytes, int, int]) -> None:
    raw, count, unit = case
    data = np.frombuffer(raw, np.uint8)
    outcome = _same_everywhere(decode_frames, data, count, unit, what="8-byte row")
    if outcome[0] == "raised":
        assert outcome[1] is FramingError
    header_ok = len(raw) >= 4 + 4 * count and int.from_bytes(raw[:4], "little") == count
    for name, kernel in KERNELS.items():  # past the header checks, the scans agree on validity
        if header_ok:
            assert (kernel.scan(data, count, unit) is None) == (outcome[0] == "raised"), name


# ------------------------------------------------------------------------ encode errors


@needs_c
@given(
    st.lists(st.integers(-3, 40), max_size=20),
    st.integers(-2, 2),
)
def test_same_encode_errors(lengths: list[int], skew: int) -> None:
    nbytes = np.array(lengths, dtype=np.int64)
    size = max(int(nbytes.sum()) + skew, 0)
    payload = np.arange(size, dtype=np.uint8)
    outcome = _same_everywhere(encode_frames, payload, nbytes)
    bad = any(n < 0 for n in lengths) or size != sum(lengths)
    assert (outcome[0] == "raised") == bad


@needs_c
def test_same_encode_error_for_an_element_too_long() -> None:
    outcome = _same_everywhere(encode_frames, np.zeros(0, np.uint8), np.array([0, 2**32]))
    assert outcome[:2] == ("raised", FramingError)


@needs_c
def test_encode_accepts_strided_lengths() -> None:
    lengths = np.array([3, 99, 0, 99, 5], dtype=np.int64)[::2]
    _same_everywhere(encode_frames, np.arange(8, dtype=np.uint8), lengths)


# ------------------------------------------------------------------------ gather into


def _into(data: np.ndarray, count: int, unit: int, picked: list[int], gap: int) -> Any:
    """Elements ``picked`` (any order) gathered into a larger zeroed array, ``gap`` bytes
    apart: nothing between or around them may be written."""
    starts, nbytes = framing.scan_frames(data, count, unit)
    chosen = np.array(picked, dtype=np.intp)
    sizes = nbytes[chosen]
    dst = np.cumsum(np.concatenate([[gap], sizes[:-1] + gap])).astype(np.int64)[: chosen.size]
    big = np.zeros(int(sizes.sum()) + gap * (chosen.size + 1), np.uint8)
    framing.gather_into(data, starts[chosen], sizes, big, dst)
    return big


@needs_c
@given(unit_payloads(), st.integers(0, 3), st.data())
def test_same_gather_into(case: tuple[int, list[bytes]], misalign: int, data: Any) -> None:
    unit, payloads = case
    raw = encode_frames(*_pack(payloads)).tobytes()
    buffer = np.zeros(len(raw) + misalign, np.uint8)[misalign:]
    buffer[:] = np.frombuffer(raw, np.uint8)
    n = len(payloads)
    run = data.draw(st.booleans())  # a run of consecutive elements back to back, or any
    if run:
        a = data.draw(st.integers(0, n))
        picked, gap = list(range(a, data.draw(st.integers(a, n)))), 0
    else:
        picked = data.draw(st.lists(st.integers(0, n - 1), max_size=6)) if n else []
        gap = data.draw(st.integers(0, 5))
    got = _same_everywhere(_into, buffer, n, unit, picked, gap)
    expected = b"".join(b"\0" * gap + payloads[i] for i in picked) + b"\0" * gap
    assert got[0][3] == expected


def _packed(data: np.ndarray, count: int, unit: int, a: int, b: int, at: int) -> Any:
    """Elements a..b-1 gathered back to back from byte ``at`` (an int dst)."""
    starts, nbytes = framing.scan_frames(data, count, unit)
    out = np.zeros(int(nbytes[a:b].sum()) + at + 2, np.uint8)
    framing.gather_into(data, starts[a:b], nbytes[a:b], out, at)
    return out


@needs_c
@given(unit_payloads(), st.integers(0, 5), st.data())
def test_same_gather_into_back_to_back(case: tuple[int, list[bytes]], at: int, data: Any) -> None:
    unit, payloads = case
    raw = encode_frames(*_pack(payloads))
    n = len(payloads)
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    got = _same_everywhere(_packed, raw, n, unit, a, b, at)
    assert got[0][3] == b"\0" * at + b"".join(payloads[a:b]) + b"\0" * 2


@needs_c
@given(unit_payloads(), st.sampled_from(["short", "shift", "negative", "past", "header", "dst"]))
def test_same_gather_into_errors(case: tuple[int, list[bytes]], kind: str) -> None:
    unit, payloads = case
    data = encode_frames(*_pack(payloads))
    starts, nbytes = framing.scan_frames(data, len(payloads), unit)
    out = np.zeros(int(nbytes.sum()), np.uint8)
    dst = np.cumsum(np.concatenate([[0], nbytes[:-1]])).astype(np.int64)[: nbytes.size]
    if kind == "short" and nbytes.sum():
        out = np.zeros(out.size - 1, np.uint8)
    elif kind == "shift" and starts.size:
        starts = starts + 1
    elif kind == "negative" and starts.size:
        nbytes = nbytes.copy()
        nbytes[-1] = -1
    elif kind == "past" and starts.size:
        starts = starts + data.size
    elif kind == "header" and starts.size:
        starts = starts - starts[0]
    elif kind == "dst" and starts.size:
        dst = dst - 1
    outcome = _same_everywhere(framing.gather_into, data, starts, nbytes, out, dst)
    broken = bool(nbytes.sum()) if kind == "short" else bool(starts.size)
    if kind == "shift" and starts.size:  # one byte later is inside the chunk but the last one
        broken = True
    assert outcome[:2] == (("raised", ValueError) if broken else (None,))


def test_gather_into_refuses_wrong_arrays() -> None:
    data = encode_frames(np.arange(6, dtype=np.uint8), np.array([2, 4], dtype=np.int64))
    starts, nbytes = framing.scan_frames(data, 2, 2)
    dst = np.array([0, 2])
    with pytest.raises(TypeError, match="out must be a 1-D C-contiguous uint8"):
        framing.gather_into(data, starts, nbytes, np.zeros(12, np.uint8)[::2], dst)
    with pytest.raises(TypeError, match="writable"):
        framing.gather_into(data, starts, nbytes, np.frombuffer(b"\0" * 6, np.uint8), dst)
    with pytest.raises(TypeError, match="data must be"):
        framing.gather_into(data.astype(np.int16), starts, nbytes, np.zeros(6, np.uint8), dst)
    with pytest.raises(ValueError, match="have 1, 2, 2 entries"):
        framing.gather_into(data, starts[:1], nbytes, np.zeros(6, np.uint8), dst)
    out = np.zeros(4, np.uint8)
    framing.gather_into(data, starts[1:], nbytes[1:], out, np.array([0]))
    assert out.tolist() == [2, 3, 4, 5]


# ------------------------------------------------------------------------- C kernel guards


@needs_c
def test_c_kernel_refuses_inconsistent_calls() -> None:
    """Misuse of the private extension raises instead of reading or writing out of bounds."""
    from zarr_vlen_ndarray import _framing_ext

    chunk = encode_frames(np.arange(6, dtype=np.uint8), np.array([2, 4], dtype=np.int64))
    starts = np.empty(2, np.int64)
    nbytes = np.empty(2, np.int64)
    assert _framing_ext.scan(chunk, 2, 2, starts, nbytes) is True
    with pytest.raises(ValueError, match="fewer than count"):
        _framing_ext.scan(chunk, 3, 1, starts, nbytes)
    with pytest.raises(ValueError, match="unit >= 1"):
        _framing_ext.scan(chunk, 2, 0, starts, nbytes)
    dst = np.array([0, 2], np.int64)
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.gather(chunk, starts, nbytes, np.empty(5, np.uint8), dst)
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.gather(chunk, starts + 100, nbytes, np.empty(6, np.uint8), dst)
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.gather(chunk, starts, nbytes, np.empty(6, np.uint8), dst + 1)
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.gather(chunk, starts, nbytes, np.empty(6, np.uint8), dst[:1])
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.frame(np.zeros(6, np.uint8), np.array([2, 5]), np.empty(20, np.uint8))
    with pytest.raises(ValueError, match="do not fit"):
        _framing_ext.frame(np.zeros(6, np.uint8), np.array([-1, 7]), np.empty(18, np.uint8))
    with pytest.raises(ValueError, match="whole number of 8-byte"):
        _framing_ext.scan(chunk, 2, 2, np.empty(12, np.uint8), nbytes)
    with pytest.raises(ValueError, match="not C-contiguous"):  # numpy refuses PyBUF_SIMPLE
        _framing_ext.scan(chunk, 2, 2, starts[::-1], nbytes)
    with pytest.raises((BufferError, TypeError)):
        _framing_ext.gather(chunk, starts, nbytes, b"\0" * 6, dst)  # read-only output


@needs_c
def test_c_kernel_in_concurrent_threads() -> None:
    """The C loops run without the GIL: concurrent decodes and encodes still give exact results."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(7)
    cases = []
    for _ in range(8):
        rows = rng.poisson(8, 20_000).astype(np.int64)
        payload = rng.integers(0, 256, int(rows.sum()) * 8, dtype=np.uint8)
        cases.append((payload, rows * 8))

    def round_trip(case: tuple[np.ndarray, np.ndarray]) -> bool:
        payload, nbytes = case
        with_c = KERNELS["c"]
        framed = np.empty(4 + 4 * nbytes.size + payload.size, np.uint8)
        with_c.frame(payload, nbytes, framed)
        scanned = with_c.scan(framed, nbytes.size, 8)
        assert scanned is not None
        flat = np.empty(int(scanned[1].sum()), np.uint8)
        dst = np.concatenate([[0], np.cumsum(scanned[1][:-1])]).astype(np.int64)[: nbytes.size]
        with_c.gather(framed, *scanned, flat, dst)
        return flat.tobytes() == payload.tobytes() and scanned[1].tolist() == nbytes.tolist()

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(round_trip, cases * 4))
