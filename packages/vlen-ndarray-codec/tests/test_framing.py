"""Tests for zarr_vlen_ndarray.framing: golden vectors, round trips, hostile input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numcodecs import VLenBytes

from zarr_vlen_ndarray.framing import FramingError, decode_frames, encode_frames

GOLDEN = Path(__file__).parent / "golden"
MANIFEST = json.loads((GOLDEN / "framing.json").read_text(encoding="utf-8"))


def _pack(payloads: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    flat = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    return flat, np.array([len(p) for p in payloads], dtype=np.int64)


def _numcodecs_encode(payloads: list[bytes]) -> bytes:
    cells = np.empty(len(payloads), dtype=object)
    cells[:] = payloads
    return bytes(VLenBytes().encode(cells))


def _reference_parse(raw: bytes, count: int, unit: int) -> list[bytes] | None:
    """An independent, obviously-correct parser: the payloads, or None if the chunk is bad."""
    if len(raw) < 4 or int.from_bytes(raw[:4], "little") != count:
        return None
    out = []
    p = 4
    for _ in range(count):
        if p + 4 > len(raw):
            return None
        length = int.from_bytes(raw[p : p + 4], "little")
        p += 4
        if p + length > len(raw) or length % unit:
            return None
        out.append(raw[p : p + length])
        p += length
    return out if p == len(raw) else None


def _units_dividing(payloads: list[bytes]) -> list[int]:
    g = 0
    for p in payloads:
        g = math.gcd(g, len(p))
    return [u for u in (1, 2, 3, 4, 8, 12, 16) if g % u == 0]


# ------------------------------------------------------------------------- golden vectors


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_golden_encode(name: str) -> None:
    case = MANIFEST[name]
    payloads = [bytes.fromhex(h) for h in case["payloads_hex"]]
    expected = (GOLDEN / case["file"]).read_bytes()
    assert encode_frames(*_pack(payloads)).tobytes() == expected


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_golden_decode(name: str) -> None:
    case = MANIFEST[name]
    payloads = [bytes.fromhex(h) for h in case["payloads_hex"]]
    raw = np.frombuffer((GOLDEN / case["file"]).read_bytes(), dtype=np.uint8)
    for unit in _units_dividing(payloads):
        flat, nbytes = decode_frames(raw, len(payloads), unit)
        assert flat.tobytes() == b"".join(payloads)
        assert nbytes.tolist() == [len(p) for p in payloads]


def test_golden_files_match_numcodecs() -> None:
    for case in MANIFEST.values():
        payloads = [bytes.fromhex(h) for h in case["payloads_hex"]]
        assert (GOLDEN / case["file"]).read_bytes() == _numcodecs_encode(payloads)


# --------------------------------------------------------------------------- round trips

payload_lists = st.lists(st.binary(max_size=40), max_size=30)


@given(payload_lists)
def test_encode_matches_numcodecs(payloads: list[bytes]) -> None:
    assert encode_frames(*_pack(payloads)).tobytes() == _numcodecs_encode(payloads)


@st.composite
def unit_payloads(draw: st.DrawFn) -> tuple[int, list[bytes]]:
    unit = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24]))
    counts = draw(st.lists(st.integers(0, 6), max_size=30))
    return unit, [draw(st.binary(min_size=c * unit, max_size=c * unit)) for c in counts]


@given(unit_payloads())
def test_round_trip_with_unit(case: tuple[int, list[bytes]]) -> None:
    unit, payloads = case
    framed = encode_frames(*_pack(payloads))
    flat, nbytes = decode_frames(framed, len(payloads), unit)
    assert flat.tobytes() == b"".join(payloads)
    assert nbytes.tolist() == [len(p) for p in payloads]
    assert flat.flags.c_contiguous
    assert nbytes.dtype == np.int64


def test_decode_output_is_a_copy() -> None:
    framed = encode_frames(*_pack([b"abcd", b"efgh"]))
    flat, _ = decode_frames(framed, 2, 4)
    framed[8:12] = 0
    assert flat.tobytes() == b"abcdefgh"


def test_decode_accepts_bytes_like() -> None:
    raw = _numcodecs_encode([b"ab", b"cdef"])
    flat, nbytes = decode_frames(np.frombuffer(raw, dtype=np.uint8), 2, 2)
    assert flat.tobytes() == b"abcdef"
    assert nbytes.tolist() == [2, 4]


def test_decode_unaligned_input() -> None:
    raw = _numcodecs_encode([b"abcd", b"", b"efghijkl"])
    buffer = np.zeros(len(raw) + 1, dtype=np.uint8)
    buffer[1:] = np.frombuffer(raw, dtype=np.uint8)
    for unit in (1, 4):
        flat, _ = decode_frames(buffer[1:], 3, unit)
        assert flat.tobytes() == b"abcdefghijkl"


# ------------------------------------------------------------------------ hostile input


@st.composite
def mutated_chunks(draw: st.DrawFn) -> tuple[bytes, int, int, list[bytes]]:
    unit, payloads = draw(unit_payloads())
    raw = bytearray(_numcodecs_encode(payloads))
    payload_at = []  # byte offsets of payload bytes (mutating one keeps the chunk valid)
    p = 4
    for item in payloads:
        payload_at.extend(range(p + 4, p + 4 + len(item)))
        p += 4 + len(item)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        kinds = ["payload", "flip", "truncate", "append", "insert", "delete", "u32"]
        kind = draw(st.sampled_from(kinds))
        inside = [i for i in payload_at if i < len(raw)]
        if kind == "payload" and inside:
            raw[draw(st.sampled_from(inside))] ^= draw(st.integers(1, 255))
        elif kind == "flip" and raw:
            i = draw(st.integers(0, len(raw) - 1))
            raw[i] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del raw[draw(st.integers(0, len(raw))) :]
        elif kind == "append":
            raw += draw(st.binary(min_size=1, max_size=8))
        elif kind == "insert":
            i = draw(st.integers(0, len(raw)))
            raw[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and raw:
            i = draw(st.integers(0, len(raw) - 1))
            del raw[i : i + draw(st.integers(1, 8))]
        elif kind == "u32" and len(raw) >= 4:
            i = draw(st.integers(0, len(raw) - 4))
            value = draw(st.sampled_from([0, 1, unit, 2**31 - 1, 2**32 - 1]) | st.integers(0, 64))
            raw[i : i + 4] = value.to_bytes(4, "little")
    n = len(payloads)
    count = draw(st.sampled_from([n, n, n, n + 1, max(n - 1, 0)]))
    return bytes(raw), count, unit, payloads


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_chunks())
def test_fuzz_mutated_chunks(case: tuple[bytes, int, int, list[bytes]]) -> None:
    raw, count, unit, _ = case
    expected = _reference_parse(raw, count, unit)
    try:
        flat, nbytes = decode_frames(np.frombuffer(raw, dtype=np.uint8), count, unit)
    except FramingError:
        assert expected is None
        return
    assert expected is not None
    assert flat.tobytes() == b"".join(expected)
    assert nbytes.tolist() == [len(p) for p in expected]


def _framed(hex_string: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(hex_string), dtype=np.uint8)


@pytest.mark.parametrize(
    ("hex_string", "count", "unit", "message"),
    [
        (
            "",
            2,
            8,
            r"truncated chunk: 0 bytes, too short for the 4-byte element count \(SPEC 2.5/1\)",
        ),
        ("020000", 2, 8, r"3 bytes, too short for the 4-byte"),
        ("01000000 00000000", 2, 8, r"header claims 1 elements but the chunk holds 2.*2.5/2"),
        ("ffffffff 00000000", 2, 8, r"header claims 4294967295 elements"),
        ("02000000 00000000", 2, 8, r"prefix of element 1 of 2 starts at byte 8 but .* only 8"),
        ("ffffffff 00000000", 2**32 - 1, 8, r"element 1 of 4294967295 starts at byte 8"),
        (
            "02000000 08000000 0000803f00000040 000000",
            2,
            8,
            r"length prefix of element 1 of 2 starts at byte 16 but the chunk has only 19",
        ),
        (
            "02000000 ffffff7f 00000000",
            2,
            8,
            r"element 0 of 2 claims 2147483647 bytes at byte 8, running to byte 2147483655 past",
        ),
        (
            "02000000 04000000 00000000 00000000",
            2,
            8,
            r"element 0 of 2 is 4 bytes, not a whole number of 8-byte elements \(SPEC 2.5/4\)",
        ),
        (
            "02000000 00000000 03000000 000000",
            2,
            2,
            r"element 1 of 2 is 3 bytes, not a whole number of 2-byte",
        ),
        (
            "02000000 00000000 00000000 00",
            2,
            1,
            r"1 trailing bytes after the last of 2 elements \(SPEC 2.5/5\)",
        ),
        ("00000000 00000000", 0, 4, r"4 trailing bytes after the last of 0 elements"),
    ],
)
def test_hostile_messages(hex_string: str, count: int, unit: int, message: str) -> None:
    with pytest.raises(FramingError, match=message):
        decode_frames(_framed(hex_string), count, unit)


def test_framing_error_is_value_error() -> None:
    assert issubclass(FramingError, ValueError)


def test_unit_name_in_message() -> None:
    with pytest.raises(FramingError, match=r"8-byte rows of float32 x \(2,\)s"):
        decode_frames(_framed("01000000 04000000 00000000"), 1, 8, what="rows of float32 x (2,)")


def test_bad_row_nbytes() -> None:
    with pytest.raises(ValueError, match="row_nbytes must be >= 1"):
        decode_frames(_framed("00000000"), 0, 0)


# -------------------------------------------------------------------------- encode limits


def test_encode_refuses_long_element() -> None:
    with pytest.raises(FramingError, match=r"element 1 of 4294967296 bytes.*at most 4294967295"):
        encode_frames(np.zeros(0, np.uint8), np.array([0, 2**32], dtype=np.int64))


def test_encode_refuses_too_many_elements() -> None:
    with pytest.raises(FramingError, match=r"cannot frame 4 elements.*at most 3 elements"):
        encode_frames(np.zeros(0, np.uint8), np.zeros(4, dtype=np.int64), limit=3)
    # A limit never raises the u32 bound itself.
    with pytest.raises(FramingError, match=r"at most 4294967295 bytes"):
        encode_frames(np.zeros(0, np.uint8), np.array([0, 2**32]), limit=2**40)


def test_encode_refuses_inconsistent_lengths() -> None:
    with pytest.raises(FramingError, match=r"sum to 3 bytes but the payload has 4"):
        encode_frames(np.zeros(4, np.uint8), np.array([1, 2], dtype=np.int64))
    with pytest.raises(FramingError, match=r">= 0, got -1"):
        encode_frames(np.zeros(0, np.uint8), np.array([1, -1], dtype=np.int64))


def test_encode_refuses_non_uint8_payload() -> None:
    with pytest.raises(TypeError, match="1-D C-contiguous uint8"):
        encode_frames(np.zeros(2, np.float32), np.array([8], dtype=np.int64))  # type: ignore[arg-type]


def test_encode_limit_error_names_the_element_index() -> None:
    with pytest.raises(FramingError) as exc:
        encode_frames(np.zeros(0, np.uint8), np.array([0, 0, 2**32], dtype=np.int64))
    assert exc.value.element == 2
    with pytest.raises(FramingError) as other:
        encode_frames(np.zeros(4, np.uint8), np.array([1, 2], dtype=np.int64))
    assert other.value.element is None
