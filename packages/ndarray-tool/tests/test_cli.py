"""The console script end to end, on small stores written by zarr itself."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from _zt_helpers import (
    CLI,
    cells_f32x2,
    read_json,
    run,
    run_cli,
    snapshot,
    tool_output,
    write_bytes_array,
    write_ndarray_array,
    zip_store,
)
from zarr.codecs import ZstdCodec

from zarr_ndarray_dtype import NDArrayDType
from zarr_ndarray_tool import _documents as md
from zarr_ndarray_tool.cli import build_parser

F32X2 = NDArrayDType(dtype="float32", shape=(None, 2))
CaptureFixture = pytest.CaptureFixture[str]


def assert_cells_equal(actual: Any, expected: list[np.ndarray]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(a), e)
        assert np.asarray(a).shape == e.shape


@pytest.fixture
def bytes_store(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    cells = cells_f32x2(10)
    path = tmp_path / "raw.zarr"
    write_bytes_array(
        path, [c.tobytes() for c in cells], attributes={"k": "v"}, dimension_names=["cell"]
    )
    return path, cells


def test_upgrade_then_read_with_the_codec(bytes_store: Any, capsys: CaptureFixture) -> None:
    path, cells = bytes_store
    status, out, err = run(capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "null,2")
    assert (status, err) == (0, "")
    assert "upgrade to float32 [null, 2]; checked 3 of 3 chunk objects" in out
    meta = read_json(path / "zarr.json")
    assert meta["data_type"] == {
        "name": "ndarray",
        "configuration": {"dtype": "float32", "shape": [None, 2]},
    }
    assert meta["attributes"] == {"k": "v"} and meta["dimension_names"] == ["cell"]
    assert_cells_equal(zarr.open_array(path, mode="r")[:], cells)
    assert run(capsys, "verify", str(path))[0] == 0


def test_upgrade_downgrade_round_trip_restores_zarr_json_bytes(
    bytes_store: Any, capsys: CaptureFixture
) -> None:
    path, _cells = bytes_store
    original = (path / "zarr.json").read_bytes()
    chunks = {p.name: p.read_bytes() for p in (path / "c").iterdir()}
    assert run(capsys, "upgrade", str(path), "--dtype", "<f4", "--shape", "[null, 2]")[0] == 0
    assert run(capsys, "downgrade", str(path))[0] == 0
    assert (path / "zarr.json").read_bytes() == original
    assert {p.name: p.read_bytes() for p in (path / "c").iterdir()} == chunks


def test_dry_run_changes_nothing(bytes_store: Any, capsys: CaptureFixture) -> None:
    path, _cells = bytes_store
    before = snapshot(path)
    status, out, _ = run(
        capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "None,2", "--dry-run"
    )
    assert status == 0
    assert '+      "name": "vlen-ndarray",' in out
    assert "nothing written" in out
    assert snapshot(path) == before


def test_a_wrong_shape_is_refused_before_anything_is_written(
    bytes_store: Any, capsys: CaptureFixture
) -> None:
    path, _cells = bytes_store
    before = snapshot(path)
    # 8-byte rows fit float64 [null] too (a lie the bytes cannot reveal), but not [null, 3].
    status, out, err = run(capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "null,3")
    assert (status, out) == (1, "")
    assert "not upgraded (nothing written): chunk c/0: the element at (0,)" in err
    assert "not a whole number of 12-byte rows of float32 [null, 3]" in err
    assert snapshot(path) == before


def test_sampling_versus_verify_all(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = [b"\x00" * 4] * 40
    cells[21] = b"\x00" * 3  # chunk c/5 (of 10) holds an element of 3 bytes
    write_bytes_array(tmp_path / "a", cells)
    args = ("upgrade", str(tmp_path / "a"), "--dtype", "int32", "--shape", "null")
    status, _, err = run(capsys, *args, "--sample", "4", "--dry-run")  # c/0, c/3, c/6, c/9
    assert status == 0
    status, _, err = run(capsys, *args, "--verify-all", "--dry-run")
    assert status == 1
    assert "chunk c/5: the element at (21,) is 3 bytes" in err


def test_upgrade_checks_the_padding_of_edge_chunks(tmp_path: Path, capsys: CaptureFixture) -> None:
    # zarr writes fill elements of a bytes array with trailing NULs stripped: b"\x01" here.
    write_bytes_array(tmp_path / "a", [b"\x05\x00\x00\x00"] * 5, fill_value=b"\x01\x00\x00\x00")
    status, _, err = run(
        capsys, "upgrade", str(tmp_path / "a"), "--dtype", "int32", "--shape", "null"
    )
    assert status == 1
    assert "chunk c/1: the element at (5,) (beyond the array's shape" in err
    assert "trailing NUL bytes stripped" in err


def test_bool_bytes_are_checked(tmp_path: Path, capsys: CaptureFixture) -> None:
    write_bytes_array(tmp_path / "a", [b"\x01\x00", b"\x02"])
    status, _, err = run(
        capsys, "upgrade", str(tmp_path / "a"), "--dtype", "bool", "--shape", "null"
    )
    assert status == 1
    assert (
        "not upgraded (nothing written): chunk c/0: cannot decode the 'vlen-ndarray' chunk" in err
    )
    assert "element 1 (C order) holds the byte 0x02, but bool items must be 0x00 or 0x01" in err


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            ["upgrade", "{nd}", "--dtype", "float32", "--shape", "null,2"],
            "already has the ndarray data type",
        ),
        (["downgrade", "{raw}"], "downgrade expects an ndarray array"),
        (["migrate", "{nd}"], "migrate expects a zarr-vlen-ndarray 0.1.x array"),
        (["upgrade", "{int}", "--dtype", "int8", "--shape", "null"], 'data_type is "int32"'),
        (["upgrade", "{v2}", "--dtype", "int8", "--shape", "null"], "Zarr v2"),
        (["info", "{group}"], "is a Zarr group, not an array"),
        (["verify", "{missing}"], "does not exist"),
        (["upgrade", "{raw}", "--dtype", "int8", "--shape", "2,null"], r"\[null, d1, \.\.\., dk\]"),
        (["export", "{raw}", "--parquet", "{out}"], "run `upgrade` first"),
        (["upgrade", "{raw}"], "needs the element type: --dtype D --shape S"),
        (["upgrade", "{raw}", "--shape", "null"], "needs the element type: --dtype D --shape S"),
    ],
)
def test_refusals_exit_1_and_change_nothing(
    tmp_path: Path, capsys: CaptureFixture, argv: list[str], match: str
) -> None:
    write_ndarray_array(tmp_path / "nd", cells_f32x2(3), F32X2)
    write_bytes_array(tmp_path / "raw", [b"ab"])
    zarr.create_array(tmp_path / "int", shape=(2,), dtype="int32")
    zarr.create_array(tmp_path / "v2", shape=(2,), dtype="int32", zarr_format=2)
    write_ndarray_array(
        zarr.open_group(tmp_path / "group", mode="w").store, cells_f32x2(2), F32X2, name="a"
    )
    paths = {k: str(tmp_path / k) for k in ("nd", "raw", "int", "v2", "group", "missing", "out")}
    before = snapshot(tmp_path)
    status, out, err = run(capsys, *(a.format(**paths) for a in argv))
    assert status == 1
    assert out == ""
    assert err.startswith(f"zarr-ndarray {argv[0]}: ")
    assert re.search(match, err), err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate", "x"],
        ["upgrade", "x", "--dtype", "float32"],
        ["upgrade", "x", "--dtype", "float32", "--shape", "null,2.5"],
        ["upgrade", "x", "--dtype", "float", "--shape", "null,0"],
        ["upgrade", "x", "--dtype", ">f4", "--shape", "null"],
        ["upgrade", "x", "--dtype", "int8", "--shape", "null", "--sample", "0"],
        ["upgrade", "x", "--dtype", "int8", "--shape", "null", "--sample", "2", "--verify-all"],
        ["export", "x"],
    ],
)
def test_usage_errors_exit_2(capsys: CaptureFixture, argv: list[str]) -> None:
    status, _out, err = run(capsys, *argv)
    assert status == 2
    assert "usage:" in err


def test_info_text_and_json(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = [np.zeros((n, 2), "<f4") for n in (0, 1, 1, 2, 3, 3, 3)]
    write_ndarray_array(tmp_path / "a", cells, F32X2, chunks=(2,), shards=(4,))
    status, out, _ = run(capsys, "info", str(tmp_path / "a"), "--json")
    assert status == 0
    report = json.loads(out)
    assert report["element"] == {"dtype": "float32", "shape": [None, 2], "unit_bytes": 8}
    assert report["inner_chunk_shape"] == [2] and report["chunk_shape"] == [4]
    assert report["codecs"].startswith("sharding_indexed(chunk_shape=[2])[vlen-ndarray")
    assert report["cells"] == 7 and report["written_chunks"] == 2
    assert report["payload_bytes"] == 8 * 13
    assert report["stored_bytes"] == sum(p.stat().st_size for p in (tmp_path / "a" / "c").iterdir())
    # shard 1 holds cells 4..7; cell 7 is padding beyond the shape and is not counted
    assert report["cells_in_written_chunks"] == 7
    extent = report["extent"]
    assert (extent["min"], extent["median"], extent["max"], extent["empty"]) == (0, 2, 3, 1)
    assert extent["histogram"] == [[0, 0, 1], [1, 1, 2], [2, 2, 1], [3, 3, 3]]
    status, text, _ = run(capsys, "info", str(tmp_path / "a"))
    assert "ndarray float32 [null, 2] (unit 8 B)" in text
    assert "rows per element: min 0" in text
    assert "7 (2 of 2 chunk objects written, holding 7 cells)" in text
    assert "framing    : " in text  # the vlen-ndarray framing kernel in use


def test_info_on_a_plain_array_shows_metadata_only(tmp_path: Path, capsys: CaptureFixture) -> None:
    zarr.create_array(tmp_path / "i", shape=(3,), dtype="int32")[:] = 1
    status, out, _ = run(capsys, "info", str(tmp_path / "i"), "--json")
    assert status == 0
    report = json.loads(out)
    assert report["data_type"] == "int32" and "extent" not in report
    assert "framing_backend" not in report
    status, text, _ = run(capsys, "info", str(tmp_path / "i"))
    assert "framing" not in text


def test_migrate_a_0_1_store(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = cells_f32x2(9)
    path = tmp_path / "old"
    write_ndarray_array(path, cells, F32X2)
    meta = read_json(path / "zarr.json")
    meta["data_type"] = {
        "name": "vlen-ndarray",
        "configuration": {"dtype": "float32", "inner_shape": [2]},
    }
    (path / "zarr.json").write_text(json.dumps(meta, indent=2))
    status, _, err = run(capsys, "verify", str(path))
    assert status == 1 and "run `migrate` first" in err
    status, out, _ = run(capsys, "info", str(path))
    assert status == 0 and "0.1.x metadata: run `migrate`" in out
    status, out, _ = run(capsys, "migrate", str(path))
    assert status == 0, out
    assert read_json(path / "zarr.json")["data_type"]["name"] == "ndarray"
    assert_cells_equal(zarr.open_array(path, mode="r")[:], cells)


def corrupt_chunk(path: Path, key: str) -> None:
    """Rewrite one chunk object so that its first element is one byte short."""
    import numcodecs

    zstd = numcodecs.Zstd()
    raw = bytearray(zstd.decode((path / key).read_bytes()))
    raw[4] -= 1  # first length prefix
    (path / key).write_bytes(zstd.encode(bytes(raw[:-1])))


def test_verify_reports_every_bad_chunk(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "a"
    cells = [np.ones((2, 2), "<f4")] * 12
    write_ndarray_array(path, cells, F32X2, compressors=[ZstdCodec(level=1)])
    assert run(capsys, "verify", str(path))[0] == 0
    corrupt_chunk(path, "c/1")
    corrupt_chunk(path, "c/2")
    status, out, err = run(capsys, "verify", str(path))
    assert (status, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"zarr-ndarray verify: {path}: 2 of 3 chunk objects do not decode:"
    assert lines[1].startswith("  cannot decode the 'vlen-ndarray' chunk 'c/1'")
    assert lines[2].startswith("  cannot decode the 'vlen-ndarray' chunk 'c/2'")
    assert "not a whole number" in err and "run `verify`" not in err and len(lines) == 3
    status, _, err = run(capsys, "verify", str(path), "--max-errors", "1")
    assert status == 1 and err.splitlines()[2] == "  ... and 1 more (--max-errors N lists more)"


def test_verify_names_the_inner_chunk_of_a_shard(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "a"
    write_ndarray_array(
        path, [np.ones((1, 2), "<f4")] * 8, F32X2, chunks=(2,), shards=(4,), compressors=None
    )
    raw = bytearray((path / "c" / "1").read_bytes())
    inner_1 = raw.find(b"\x02\x00\x00\x00\x08\x00\x00\x00", 10)  # second inner chunk
    raw[inner_1 + 4] = 7
    (path / "c" / "1").write_bytes(bytes(raw))
    status, _, err = run(capsys, "verify", str(path))
    assert status == 1
    assert "cannot decode the 'vlen-ndarray' inner chunk 1 of shard 'c/1'" in err
    assert "inner chunk 0 of" not in err  # the good inner chunk of the shard is not listed


def test_zip_store_round_trip(tmp_path: Path, capsys: CaptureFixture) -> None:
    cells = cells_f32x2(7)
    zpath = tmp_path / "s.zip"
    zs = zip_store(zpath)
    write_bytes_array(zs, [c.tobytes() for c in cells], name="grp/arr", chunks=(2,), shards=(4,))
    zs.close()
    with zipfile.ZipFile(zpath) as zf:
        original = {n: zf.read(n) for n in zf.namelist()}
    target = f"{zpath}::grp/arr"
    assert run(capsys, "upgrade", target, "--dtype", "float32", "--shape", "null,2")[0] == 0
    assert run(capsys, "verify", target)[0] == 0
    zs = zarr.storage.ZipStore(zpath, mode="r")
    assert_cells_equal(zarr.open_array(zs, path="grp/arr")[:], cells)
    if zs._is_open:  # zarr 3.1.0's ZipStore.close fails on a store it never opened
        zs.close()
    assert run(capsys, "downgrade", target)[0] == 0
    with zipfile.ZipFile(zpath) as zf:
        assert {n: zf.read(n) for n in zf.namelist()} == original
    before = snapshot(zpath)
    assert (
        run(capsys, "upgrade", target, "--dtype", "float32", "--shape", "null,2", "--dry-run")[0]
        == 0
    )
    assert snapshot(zpath) == before


def test_export_to_parquet(tmp_path: Path, capsys: CaptureFixture) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    nd_arrow = pytest.importorskip("nd_arrow")  # export --parquet writes through nd-arrow
    cells = cells_f32x2(9)
    write_ndarray_array(tmp_path / "pts", cells, F32X2, dimension_names=["cell"])
    out = tmp_path / "pts.parquet"
    status, text, err = run(
        capsys, "export", str(tmp_path / "pts"), "--parquet", str(out), "--dims", "n,xy"
    )
    assert status == 0, err
    assert "wrote 9 rows" in text
    table = pq.read_table(out)
    assert table.column_names == ["cell", "pts"]
    assert table.column("cell").to_pylist() == list(range(9))
    column = nd_arrow.NdColumn.from_arrow(table.column("pts").combine_chunks())
    assert_cells_equal([row.values for row in column], cells)
    assert column[0].dims == ("n", "xy")
    # list items keep the nd_arrow item name in the Parquet schema itself
    values_type = pq.read_schema(out).field("pts").type.storage_type.field("values").type
    assert values_type.value_field.name == "item"
    status, _, err = run(capsys, "export", str(tmp_path / "pts"), "--parquet", str(out))
    assert status == 1 and "pass --overwrite" in err
    assert (
        run(capsys, "export", str(tmp_path / "pts"), "--parquet", str(out), "--overwrite")[0] == 0
    )


def test_rewrite_refuses_when_zarr_json_changed_meanwhile(
    bytes_store: Any, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = bytes_store
    real = md.rewritten

    def racing_upgrade(*args: Any, **kwargs: Any) -> Any:
        (path / "zarr.json").write_text((path / "zarr.json").read_text() + " ")
        return real(*args, **kwargs)

    monkeypatch.setattr(md, "rewritten", racing_upgrade)
    status, _, err = run(capsys, "upgrade", str(path), "--dtype", "float32", "--shape", "null,2")
    assert status == 1 and "changed while this command ran" in err


@pytest.mark.slow
def test_python_dash_m_entry(bytes_store: Any) -> None:
    path, _ = bytes_store
    done = subprocess.run(
        [*CLI, "info", str(path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "bytes"
    assert done.stderr.count("reading chunks") == 0  # no progress bar when not a terminal


# ------------------------------------------------- the command in a subprocess, as users run it


def _damaged_stores(root: Path) -> dict[str, tuple[Path, str]]:
    """Arrays with one damaged object each: (path, the name the report must give)."""
    import zarr_ragged_ndarray as zrn

    zstd = [ZstdCodec(level=1)]
    cells = cells_f32x2(12)
    made = {
        "vlen-zstd": write_ndarray_array(root / "v", cells, F32X2, compressors=zstd),
        "ragged-zstd": write_ndarray_array(
            root / "r", cells, F32X2, compressors=zstd, serializer=zrn.RaggedNDArrayCodec()
        ),
        "bytes-zstd": write_bytes_array(root / "b", [c.tobytes() for c in cells], compressors=zstd),
        "shard-index": write_ndarray_array(root / "s", cells, F32X2, chunks=(2,), shards=(4,)),
    }
    out = {}
    for name, array in made.items():
        path = Path(array.store.root) / array.path if array.path else Path(array.store.root)
        key = path / "c" / "1"
        raw = key.read_bytes()
        if name == "shard-index":  # the index (with its crc32c) is the last 4 * 2 * 8 + 4 bytes
            key.write_bytes(raw[:-10] + bytes([raw[-10] ^ 0xFF]) + raw[-9:])
            out[name] = (path, "the index of the stored shard 'c/1' does not decode")
        else:
            key.write_bytes(raw[:-7])  # truncate -s -7
            out[name] = (path, "the stored chunk 'c/1' does not decode (RuntimeError: Zstd")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("command", ["info", "info --json", "verify", "export"])
def test_every_command_reports_a_chunk_that_does_not_decode_the_same_way(
    tmp_path: Path, command: str
) -> None:
    if command == "export":
        pytest.importorskip("nd_arrow")  # the [export] extra
    for name, (path, named) in _damaged_stores(tmp_path).items():
        if command == "export" and name == "bytes-zstd":
            continue  # export refuses raw bytes before reading a chunk
        extra = ["--parquet", str(tmp_path / f"{name}.parquet")] if command == "export" else []
        done = run_cli(*command.split(), str(path), *extra)
        assert done.returncode == 1 and "Traceback" not in done.stderr, (name, done)
        prefix = f"zarr-ndarray {command.split()[0]}: {path}: "
        if command == "verify":  # every bad chunk, one a line
            assert done.stdout == "" and done.stderr.startswith(prefix + "1 of 3 chunk objects"), (
                done
            )
            assert (
                done.stderr.splitlines()[1]
                == "  "
                + named.split(" (")[0]
                + done.stderr.split(named.split(" (")[0], 1)[1].splitlines()[0]
            )
        else:  # one line; info still prints its summary, the bad chunk left out
            assert done.stderr.startswith(prefix + named) and done.stderr.count("\n") == 1, done
            assert "run `verify`" in done.stderr
            assert ("1 of 3 chunk objects could not be read" in done.stderr) == command.startswith(
                "info"
            )
            assert (done.stdout == "") == (command == "export"), done.stdout
        if command == "info":
            assert "unreadable : 1 chunk object could not be read" in done.stdout
        if command == "info --json":
            assert json.loads(done.stdout)["unreadable_chunks"] == 1
        assert not (tmp_path / f"{name}.parquet").exists()


@pytest.mark.slow
def test_a_closed_output_pipe_ends_the_command_quietly(bytes_store: Any) -> None:
    path, _ = bytes_store
    command = [*CLI, "info", str(path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # `| head -0`: the reader is gone before the first line
        err = tool_output(child.stderr.read().decode())
        assert child.wait(timeout=120) == 141
    assert err == ""
    done = subprocess.run(
        f"{shlex.join(command)} | head -2", shell=True, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[0] == f"path       : {path}"
    assert tool_output(done.stderr) == ""


@pytest.mark.slow
def test_export_refuses_an_output_it_cannot_write_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "a"
    write_ndarray_array(path, cells_f32x2(4), F32X2)
    for out, why in [
        (tmp_path / "missing" / "x.parquet", "the directory"),
        (tmp_path, "is a directory"),
    ]:
        done = run_cli("export", str(path), "--parquet", str(out))
        assert (done.returncode, done.stdout) == (1, ""), done
        assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr
        assert not (tmp_path / "missing").exists()


@pytest.mark.slow
def test_verify_clears_its_progress_bar_before_the_result_on_a_terminal(tmp_path: Path) -> None:
    import pty

    path = tmp_path / "a"
    write_ndarray_array(path, cells_f32x2(64), F32X2, chunks=(4,))
    for command in ("verify", "info"):
        main, child = pty.openpty()
        with open(main, "rb", buffering=0) as terminal:
            done = run_cli(command, str(path), stdout=child, stderr=child, capture_output=False)
            os.close(child)
            text = tool_output(_read_all(terminal).decode().replace("\r\n", "\n"))
        assert done.returncode == 0
        assert "chunks [" in text  # the bar was drawn, on the terminal
        first = text.split("\n")[0]
        assert first.rsplit("\x1b[2K", 1)[-1] in (
            f"{path}: all 16 chunk objects decode",
            f"path       : {path}",
        ), repr(first)


def _read_all(terminal: Any) -> bytes:
    chunks = []
    while True:
        try:
            chunk = terminal.read(65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.slow
def test_help_describes_every_command_and_both_codecs() -> None:
    parser = build_parser()
    assert "vlen-ndarray" in (parser.description or "")
    assert "ragged-ndarray" in (parser.description or "")
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        assert sub.description and len(sub.description) > 60, name
    done = run_cli("verify", "-h")
    assert done.returncode == 0 and "Decode every stored chunk object" in done.stdout


def test_histogram_bins_are_of_one_width(tmp_path: Path, capsys: CaptureFixture) -> None:
    """Bins of unequal width would draw false dips (a 1-wide bin beside a 2-wide one)."""
    path = tmp_path / "a"
    write_ndarray_array(path, [np.zeros((k, 2), "<f4") for k in range(96)], F32X2, chunks=(32,))
    status, out, _ = run(capsys, "info", str(path), "--json")
    histogram = json.loads(out)["extent"]["histogram"]
    assert status == 0 and len(histogram) == 10
    assert {hi - lo for lo, hi, _ in histogram} == {9}
    assert histogram[0][0] == 0 and histogram[-1][1] >= 95
    assert [c for _, _, c in histogram] == [10] * 9 + [6]


def test_counts_of_one_are_singular(tmp_path: Path, capsys: CaptureFixture) -> None:
    pytest.importorskip("nd_arrow")
    path = tmp_path / "a"
    write_ndarray_array(path, [np.ones((1, 2), "<f4")], F32X2, chunks=(1,))
    status, out, _ = run(capsys, "info", str(path))
    assert status == 0 and "(1 of 1 chunk object written, holding 1 cell)" in out
    status, out, _ = run(capsys, "export", str(path), "--parquet", str(tmp_path / "x.parquet"))
    assert status == 0 and out.strip().endswith("wrote 1 row to " + str(tmp_path / "x.parquet"))
    status, out, _ = run(capsys, "verify", str(path))
    assert status == 0 and out.strip().endswith("the one chunk object decodes")


def test_version_names_every_package(capsys: CaptureFixture) -> None:
    from importlib import metadata

    status, out, _ = run(capsys, "--version")
    assert status == 0
    lines = out.splitlines()
    for dist in (
        "zarr-ndarray-tool",
        "zarr-ndarray-dtype",
        "zarr-vlen-ndarray",
        "zarr-ragged-ndarray",
        "zarr",
        "numpy",
    ):
        assert f"{dist} {metadata.version(dist)}" in lines, (dist, lines)
    assert any(line.startswith("nd-arrow") for line in lines)
    assert lines[-1].startswith("Python 3.")
    assert run_cli("--version").stdout.splitlines() == lines  # the console script too


def test_verify_counts_the_chunks_of_the_grid_that_are_absent(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    """An object deleted by accident reads as fill: verify says so."""
    path = tmp_path / "a"
    write_ndarray_array(path, [np.ones((1, 2), "<f4")] * 16, F32X2, chunks=(2,))
    status, out, _ = run(capsys, "verify", str(path))
    assert (status, out.strip()) == (0, f"{path}: all 8 chunk objects decode")
    for key in ("c/1", "c/5"):
        (path / key).unlink()
    status, out, _ = run(capsys, "verify", str(path))
    assert status == 0
    assert out.strip() == (
        f"{path}: all 6 chunk objects decode; 2 of the grid's 8 chunks have no objects and read "
        "as the fill value: unwritten, or deleted?"
    )
    for key in ("c/0", "c/2", "c/3", "c/4", "c/6"):
        (path / key).unlink()
    status, out, _ = run(capsys, "verify", str(path))
    assert out.strip().endswith(
        "the one chunk object decodes; 7 of the grid's 8 chunks have no objects and read as the "
        "fill value: unwritten, or deleted?"
    )


def test_an_unknown_element_dtype_gets_one_message_from_every_command(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / "a"
    write_ndarray_array(path, [np.ones((1, 2), "<f4")] * 4, F32X2)
    meta = read_json(path / "zarr.json")
    meta["data_type"]["configuration"]["dtype"] = "int128"
    (path / "zarr.json").write_text(json.dumps(meta))
    said = set()
    for command in ("info", "verify", "downgrade"):
        status, out, err = run(capsys, command, str(path))
        assert (status, out) == (1, ""), err
        said.add(err.split(": ", 1)[1])
    (message,) = said
    # the data type's own rule, as zarr's registry reports it
    assert message.startswith(f"{path}: ") and "'int128' must be one of bool" in message
    assert message.endswith("spelled exactly so (SPEC 1.3/3).\n")


def test_info_of_empty_cells_has_no_payload_ratio(tmp_path: Path, capsys: CaptureFixture) -> None:
    write_ndarray_array(tmp_path / "a", [np.zeros((0, 2), "<f4")] * 3, F32X2)
    status, out, err = run(capsys, "info", str(tmp_path / "a"))
    assert status == 0, err
    assert "; element payload 0 B\n" in out and "stored/payload" not in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_is_drawn_on_a_terminal_only_and_erased(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from zarr_ndarray_tool.cli import _bar

    for stream, quiet, drawn in (
        (_Terminal(), False, True),
        (_Terminal(), True, False),
        (io.StringIO(), False, False),
    ):
        monkeypatch.setattr(sys, "stderr", stream)
        with _bar(argparse.Namespace(quiet=quiet), "reading") as draw:
            assert (draw is not None) == drawn
            for done in range(5) if draw else ():
                draw(done, 4)
        text = stream.getvalue()
        assert (f"\rreading [{'#' * 30}] 4/4" in text) == drawn
        assert text.endswith("\r\x1b[2K") == drawn


@pytest.mark.parametrize(
    "argv", [["-q", "info", "A"], ["info", "-q", "A"], ["--quiet", "info", "A"]]
)
def test_quiet_is_accepted_before_or_after_the_command(argv: list[str]) -> None:
    from zarr_ndarray_tool.cli import build_parser

    assert build_parser().parse_args(argv).quiet is True
    assert build_parser().parse_args(["info", "A"]).quiet is False
