"""``upgrade``/``downgrade`` of whole Zarr v2 hierarchies (zspy stores) with zarr's migration."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from _zt_helpers import run, snapshot, write_v2_ragged
from _zt_zspy import SIGNAL, dumps_v2, write_zspy

from zarr_ndarray_tool import api
from zarr_ndarray_tool._tree import KEPT, MIGRATION_RELEASE, migrated_document
from zarr_ndarray_tool.errors import Refused

CaptureFixture = pytest.CaptureFixture[str]
HAS_MIGRATION = importlib.util.find_spec("zarr.metadata") is not None  # zarr >= 3.1.3
needs_migration = pytest.mark.skipif(
    not HAS_MIGRATION, reason=f"zarr's v2 -> v3 migration needs zarr >= {MIGRATION_RELEASE}"
)
# zarr 3.1.3-3.1.x notes every numcodecs.* codec it meets (here: none of the tool's doing).
pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")


def ragged(nav: tuple[int, ...], trailing: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cells = np.empty(nav, dtype=object)
    for k, index in enumerate(np.ndindex(*nav)):
        n = 0 if k % 4 == 1 else int(rng.integers(1, 6))
        cells[index] = (rng.standard_normal((n, *trailing)) * 50).astype(dtype)
    return cells


def v2_documents(root: Path) -> dict[str, bytes]:
    names = (".zgroup", ".zarray", ".zattrs", ".zmetadata")
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.name in names}


def assert_cells(array: Any, cells: np.ndarray) -> None:
    got = np.asarray(array[...], dtype=object)
    assert got.shape == cells.shape
    for index in np.ndindex(*cells.shape):
        assert got[index].dtype == cells[index].dtype
        np.testing.assert_array_equal(got[index], cells[index])


@needs_migration
@pytest.mark.parametrize(
    ("nav", "trailing", "dtype", "chunks"),
    [
        ((7,), (2,), "<f8", None),  # a line scan of diffraction vectors
        ((4, 3), (), "<f4", None),  # spectra on a 2-D scan: [null] is the pattern anyway
        ((2, 3, 4), (3,), "<i8", (1, 3, 2)),  # 3-D navigation, several chunks
        ((3, 5), (2, 2), "<u2", (3, 5)),
    ],
)
def test_a_zspy_store_upgrades_whole_reads_in_zarr_3_and_downgrades_byte_for_byte(
    tmp_path: Path,
    capsys: CaptureFixture,
    nav: tuple[int, ...],
    trailing: tuple[int, ...],
    dtype: str,
    chunks: tuple[int, ...] | None,
) -> None:
    root = tmp_path / "s.zspy"
    cells = ragged(nav, trailing, dtype, 3)
    write_zspy(root, cells, chunks=chunks)
    before = snapshot(root)
    status, out, err = run(capsys, "upgrade", str(root))
    assert status == 0, err
    pattern = [None, *trailing]
    assert f"{SIGNAL}/data: array ndarray {np.dtype(dtype).name} {json.dumps(pattern)}" in (
        out.replace("None", "null")
    )
    assert v2_documents(root) == {}  # every v2 document is gone (kept in KEPT)
    group = zarr.open_group(root, mode="r", zarr_format=3)
    data = group[f"{SIGNAL}/data"]
    assert data.metadata.data_type.shape == tuple(pattern)
    assert_cells(data, cells)
    shapes = group[f"{SIGNAL}/_ragged_shapes_data"][...]
    assert [tuple(s) for s in shapes.reshape(-1)] == [c.shape for c in cells.reshape(-1)]
    assert group[f"{SIGNAL}/original_metadata/_list_names"][...].tolist() == ["alpha", "beta"]
    assert group[f"{SIGNAL}/original_metadata/counts"][...].tolist() == [0, 1, 2, 3]
    assert dict(group.attrs) == {"file_format": "ZSpy", "file_format_version": "3.3"}
    assert dict(group[f"{SIGNAL}/axis-0"].attrs)["size"] == nav[0]

    status, out, err = run(capsys, "downgrade", str(root))
    assert status == 0, err
    assert {k: v[0] for k, v in snapshot(root).items()} == {k: v[0] for k, v in before.items()}


@needs_migration
def test_groups_and_plain_arrays_get_exactly_what_zarrs_own_migration_writes(
    tmp_path: Path,
) -> None:
    from zarr.metadata.migrate_v3 import migrate_v2_to_v3

    root = tmp_path / "s.zspy"
    write_zspy(root, ragged((3,), (2,), "<f8", 1), consolidated=False)
    theirs = tmp_path / "theirs"
    shutil.copytree(root, theirs)
    for node in ("data", "_ragged_shapes_data", "original_metadata/_list_names"):
        shutil.rmtree(theirs / SIGNAL / node)  # zarr's migration stops at object arrays
    migrate_v2_to_v3(input_store=zarr.storage.LocalStore(theirs))
    compared = 0
    for written in theirs.rglob("zarr.json"):
        folder = written.parent
        names = [n for n in (".zgroup", ".zarray", ".zattrs") if (folder / n).exists()]
        docs = {n: (folder / n).read_text() for n in names}
        assert migrated_document(docs, str(folder)) == written.read_text()
        compared += 1
    assert compared == 9  # every group and the plain array


@needs_migration
def test_dry_run_lists_every_node_and_what_it_becomes(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    root = tmp_path / "s.zspy"
    write_zspy(root, ragged((4,), (2,), "<f8", 1))
    before = snapshot(root)
    status, out, _ = run(capsys, "upgrade", str(root), "--dry-run")
    assert status == 0 and snapshot(root) == before
    assert "/: group (zarr's migration)" in out
    assert f"{SIGNAL}/data: array ndarray float64 [null, 2]: every cell is (n, 2)" in out
    assert f"{SIGNAL}/original_metadata/_list_names: array of strings" in out
    assert f"{SIGNAL}/original_metadata/counts: array <u2 (bytes" in out
    assert ".zmetadata: removed (consolidated v2 metadata; kept for downgrade)" in out
    assert "dry run: upgrade 12 nodes of a Zarr v2 hierarchy to Zarr v3; nothing written" in out


@needs_migration
def test_cells_of_several_ranks_or_padded_edge_chunks_stay_flattened_with_the_reason(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    mixed = np.empty(3, dtype=object)
    mixed[:] = [np.ones((2, 3)), np.ones(4), np.ones((1, 3))]
    write_zspy(tmp_path / "a", mixed)
    status, out, _ = run(capsys, "upgrade", str(tmp_path / "a"))
    assert status == 0
    assert "[null]: its cells differ in rank (cell (0,) is (2, 3) but cell (1,) is (4,))" in out
    # zarr 2 pads a lazily written edge chunk with fill cells of one item: not whole rows
    write_zspy(tmp_path / "b", ragged((5,), (2,), "<f8", 2), chunks=(2,), pad=np.zeros(1))
    status, out, _ = run(capsys, "upgrade", str(tmp_path / "b"))
    assert status == 0
    assert "[null]: every cell is (n, 2), but chunk 2: " in out and "stay flattened" in out
    assert "the element at (5,) (beyond the array's shape (5,), in the edge chunk's padding" in out
    assert_cells(
        zarr.open_array(tmp_path / "b" / SIGNAL / "data"), _flat(ragged((5,), (2,), "<f8", 2))
    )


def _flat(cells: np.ndarray) -> np.ndarray:
    out = np.empty(cells.shape, dtype=object)
    for index in np.ndindex(*cells.shape):
        out[index] = cells[index].reshape(-1)
    return out


def _json2_node(root: Path) -> None:
    folder = root / SIGNAL / "original_metadata" / "legacy"
    folder.mkdir()
    doc = json.loads((root / SIGNAL / "original_metadata" / "_list_names" / ".zarray").read_text())
    doc["filters"] = [numcodecs.JSON().get_config()]
    (folder / ".zarray").write_text(dumps_v2(doc))


def _disagreeing_shapes(root: Path) -> None:
    shutil.rmtree(root)
    cells = ragged((4,), (2,), "<f8", 1)
    shapes = [np.array(c.shape, "<i8") for c in cells]
    shapes[2] = np.array([9, 2], "<i8")
    write_zspy(root, cells, shapes=shapes)


def _corrupt_chunk(root: Path) -> None:
    (root / SIGNAL / "data" / "0").write_bytes(b"not blosc")


@needs_migration
@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (_json2_node, "original_metadata/legacy: an object array of the numcodecs object codec"),
        (_disagreeing_shapes, "the shape sibling says cell (2,) is (9, 2) (18 items)"),
        (_corrupt_chunk, f"{SIGNAL}/data: not upgraded (nothing written): chunk 0"),
    ],
)
def test_one_node_that_cannot_be_upgraded_refuses_the_whole_hierarchy(
    tmp_path: Path, capsys: CaptureFixture, spoil: Any, says: str
) -> None:
    root = tmp_path / "s.zspy"
    write_zspy(root, ragged((4,), (2,), "<f8", 1))
    spoil(root)
    before = snapshot(root)
    status, _, err = run(capsys, "upgrade", str(root))
    assert status == 1 and says in err, err
    assert snapshot(root) == before


@needs_migration
def test_a_zip_store_is_rewritten_once_and_restored(tmp_path: Path, capsys: CaptureFixture) -> None:
    folder = tmp_path / "s.zspy"
    cells = ragged((6,), (2,), "<f4", 4)
    write_zspy(folder, cells)
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(folder).as_posix())
    members = _members(archive)
    assert run(capsys, "upgrade", str(archive))[0] == 0
    store = zarr.storage.ZipStore(archive, mode="r")
    assert_cells(zarr.open_group(store, mode="r", zarr_format=3)[f"{SIGNAL}/data"], cells)
    store.close()
    assert run(capsys, "downgrade", str(archive))[0] == 0
    assert _members(archive) == members


def _members(archive: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


@needs_migration
def test_any_store_through_the_api_and_a_changed_node_stops_the_downgrade(
    tmp_path: Path,
) -> None:
    root = tmp_path / "s.zspy"
    cells = ragged((3, 2), (2,), "<f8", 5)
    write_zspy(root, cells)
    before = snapshot(root)
    store = zarr.storage.LocalStore(root)
    outcome = api.upgrade(store)
    assert "upgrade 13 nodes of a Zarr v2 hierarchy to Zarr v3" in outcome.message
    assert (root / KEPT).exists()
    with pytest.raises(Refused, match=r"this hierarchy was upgraded before"):
        api.upgrade(store)
    group = zarr.open_group(root, mode="r+", zarr_format=3)
    group["Experiments"].attrs["note"] = "changed after the upgrade"
    changed = snapshot(root)
    with pytest.raises(Refused, match=r"Experiments/zarr.json changed since the upgrade"):
        api.downgrade(store)
    assert snapshot(root) == changed
    del group["Experiments"].attrs["note"]
    api.downgrade(store)
    assert {k: v[0] for k, v in snapshot(root).items()} == {k: v[0] for k, v in before.items()}


@needs_migration
def test_a_hierarchy_holding_zarr_3_nodes_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "s.zspy"
    write_zspy(root, ragged((3,), (2,), "<f8", 1))
    (root / "Experiments" / "zarr.json").write_text("{}")
    with pytest.raises(Refused, match=r"Experiments hold a zarr.json already"):
        api.upgrade(zarr.storage.LocalStore(root))


def test_zarr_without_its_migration_refuses_whole_hierarchies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zarr.metadata.migrate_v3", None)  # as in zarr < 3.1.3
    root = tmp_path / "s.zspy"
    write_zspy(root, ragged((3,), (2,), "<f8", 1))
    before = snapshot(root)
    with pytest.raises(
        Refused,
        match=rf"{MIGRATION_RELEASE} and later have; this is zarr .*: pip install 'zarr>=3.1.3'",
    ):
        api.upgrade(zarr.storage.LocalStore(root))
    assert snapshot(root) == before


@needs_migration
def test_the_legacy_sibling_name_and_vlenbytes_arrays_given_their_element_type(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    cells = ragged((4,), (3,), "<i8", 6)  # HyperSpy <= 1.7: ragged_shapes, int64 cells
    write_zspy(tmp_path / "old", cells, sibling="ragged_shapes")
    status, out, _ = run(capsys, "upgrade", str(tmp_path / "old"))
    assert status == 0
    assert "data: array ndarray int64 [null, 3]: every cell is (n, 3)" in out
    assert "(shapes in ragged_shapes)" in out
    assert_cells(zarr.open_array(tmp_path / "old" / SIGNAL / "data"), cells)
    # a VLenBytes array of raw element bytes: refused without its element type, then typed
    root = tmp_path / "raw"
    write_zspy(root, ragged((3,), (2,), "<f4", 7))
    raw = [c.tobytes() for c in ragged((3,), (2,), "<f4", 7)]
    shutil.rmtree(root / SIGNAL / "data")
    write_v2_ragged(
        root / SIGNAL / "data",
        raw,
        filters=[numcodecs.VLenBytes()],
        separator="/",
        chunks=(3,),
    )
    (root / ".zmetadata").unlink()
    before = snapshot(root)
    status, _, err = run(capsys, "upgrade", str(root))
    assert status == 1 and "give its element type with --dtype and --shape" in err
    assert snapshot(root) == before
    status, out, err = run(capsys, "upgrade", str(root), "--dtype", "float32", "--shape", "null,2")
    assert status == 0, err
    assert_cells(zarr.open_array(root / SIGNAL / "data"), ragged((3,), (2,), "<f4", 7))
