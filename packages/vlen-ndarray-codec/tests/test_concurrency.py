"""Several threads and several processes writing disjoint chunk regions of one array at once
(local store) while others read; then every cell is read back exactly. Pickled arrays, codecs
and data types unpickle in a fresh process that has not imported our packages."""

from __future__ import annotations

import multiprocessing
import pickle
import textwrap
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import zarr
from _zvn_helpers import run_fresh
from zvn_concurrency_workers import (
    cells,
    check_snapshot,
    expected_cell,
    read_while_writing,
    write_region,
)

from zarr_ndarray_dtype.codecs import FixedCellBytesCodec
from zarr_vlen_ndarray import NDArrayDType, VlenNDArrayCodec

CHUNK = 16
WRITERS = 4
CHUNKS_PER_WRITER = 6
N = CHUNK * CHUNKS_PER_WRITER * WRITERS
TIMEOUT_S = 240


def _create(path: Path) -> str:
    zarr.create_array(
        store=str(path),
        shape=(N,),
        chunks=(CHUNK,),
        dtype=NDArrayDType(dtype="float32", shape=(None, 2)),
        serializer=VlenNDArrayCodec(),
        # Uncompressed, so a reader that catches a chunk mid-write (zarr 3.1's LocalStore does
        # not write atomically) hands the torn bytes to our codec, which must refuse them
        # (zstd would refuse them first, with a RuntimeError of its own).
        compressors=None,
    )
    return str(path)


def _regions() -> list[tuple[int, int]]:
    # Interleaved: writer w owns chunks w, w + WRITERS, ... so neighbours belong to others.
    out = []
    for w in range(WRITERS):
        for k in range(CHUNKS_PER_WRITER):
            start = (k * WRITERS + w) * CHUNK
            out.append((w, start))
    return out


def _final_check(path: str) -> None:
    values = zarr.open_array(path, mode="r")[:]
    assert len(values) == N
    check_snapshot(values)
    assert all(values[i].shape == expected_cell(i).shape for i in range(N))  # all written


def test_threads_write_disjoint_chunks_while_others_read(tmp_path: Path) -> None:
    path = _create(tmp_path / "threads.zarr")
    with ThreadPoolExecutor(max_workers=WRITERS + 2) as pool:
        readers = [pool.submit(read_while_writing, path, 15) for _ in range(2)]
        # Each writer thread writes its chunks one at a time, half a chunk per assignment.
        writers = [
            pool.submit(write_region, path, start, start + CHUNK, CHUNK // 2)
            for _, start in _regions()
        ]
        assert sum(f.result(timeout=TIMEOUT_S) for f in writers) == N
        for f in readers:
            clean, torn = f.result(timeout=TIMEOUT_S)
            assert clean + torn == 15
    _final_check(path)


@pytest.mark.slow
def test_processes_write_disjoint_chunks_while_others_read(tmp_path: Path) -> None:
    path = _create(tmp_path / "processes.zarr")
    spawn = multiprocessing.get_context("spawn")  # fresh interpreters, as on a cluster
    with ProcessPoolExecutor(max_workers=3, mp_context=spawn) as pool:
        reader = pool.submit(read_while_writing, path, 10)
        by_writer: dict[int, list[int]] = {}
        for w, start in _regions():
            by_writer.setdefault(w, []).append(start)
        writers = [
            pool.submit(write_region, path, start, start + CHUNK, CHUNK)
            for starts in by_writer.values()
            for start in starts
        ]
        assert sum(f.result(timeout=TIMEOUT_S) for f in writers) == N
        clean, torn = reader.result(timeout=TIMEOUT_S)
        assert clean + torn == 10
    _final_check(path)


def test_parallel_readers_of_a_finished_array_agree(tmp_path: Path) -> None:
    path = _create(tmp_path / "done.zarr")
    write_region(path, 0, N, 4 * CHUNK)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: read_while_writing(path, 3), range(4)))
    assert results == [(3, 0)] * 4


# ------------------------------------------------------------------------------- pickling


FRESH = textwrap.dedent(
    """
    import json, pickle, sys
    ours = ("zarr_ndarray_dtype", "zarr_vlen_ndarray")
    before = [m for m in ours if m in sys.modules]
    with open(sys.argv[1], "rb") as f:
        objects = pickle.load(f)
    ragged, fixed, codec, fixed_codec, dtype = objects
    print(json.dumps({
        "before": before,
        "after": [m for m in ours if m in sys.modules],
        "ragged": [c.tolist() for c in ragged[:]],
        "fixed": [c.tolist() for c in fixed[:]],
        "codec": codec.to_dict(),
        "fixed_codec": [type(fixed_codec).__name__, fixed_codec.to_dict()],
        "dtype": dtype.to_json(zarr_format=3),
    }))
    """
)


def test_arrays_codecs_and_dtypes_unpickle_in_a_fresh_process(tmp_path: Path) -> None:
    ragged = zarr.open_array(_create(tmp_path / "ragged.zarr"), mode="r+")
    ragged[:5] = cells(0, 5)
    fixed = zarr.create_array(
        store=str(tmp_path / "fixed.zarr"),
        shape=(3,),
        chunks=(2,),
        dtype=NDArrayDType(dtype="int16", shape=(2,)),
    )
    fixed_cells = np.empty(3, dtype=object)
    fixed_cells[:] = [np.array([i, -i], dtype="<i2") for i in range(3)]
    fixed[:] = fixed_cells
    objects = (
        zarr.open_array(str(tmp_path / "ragged.zarr"), mode="r"),
        zarr.open_array(str(tmp_path / "fixed.zarr"), mode="r"),
        VlenNDArrayCodec(),
        FixedCellBytesCodec(endian="little"),
        NDArrayDType(dtype="uint8", shape=(None, 3)),
    )
    pickled = tmp_path / "objects.pickle"
    pickled.write_bytes(pickle.dumps(objects))
    report = run_fresh(FRESH, str(pickled), timeout=TIMEOUT_S)
    assert report["before"] == []
    assert sorted(report["after"]) == ["zarr_ndarray_dtype", "zarr_vlen_ndarray"]
    assert report["ragged"][:5] == [expected_cell(i).tolist() for i in range(5)]
    assert report["ragged"][5:] == [[]] * (N - 5)
    assert report["fixed"] == [[0, 0], [1, -1], [2, -2]]
    assert report["codec"] == {"name": "vlen-ndarray", "configuration": {}}
    assert report["fixed_codec"] == [
        "FixedCellBytesCodec",
        {"name": "bytes", "configuration": {"endian": "little"}},
    ]
    assert report["dtype"] == {
        "name": "ndarray",
        "configuration": {"dtype": "uint8", "shape": [None, 3]},
    }


@pytest.mark.parametrize("obj", [VlenNDArrayCodec(), FixedCellBytesCodec(endian="little")])
def test_codecs_pickle_round_trip(obj: object) -> None:
    again = pickle.loads(pickle.dumps(obj))
    assert again == obj and type(again) is type(obj)
