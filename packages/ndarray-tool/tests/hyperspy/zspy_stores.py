"""HyperSpy's own zspy stores, upgraded to Zarr v3 and back (run by ``nox -s hyperspy``).

Four commands, each run in the venv that has what it needs (DIR holds ``<case>.zspy`` stores
and the cells each was given, ``<case>.npy``)::

    python zspy_stores.py write DIR       # HyperSpy + zarr 2: one store per case
    python zspy_stores.py read DIR        # HyperSpy (zarr 2, or zarr 3 with our packages)
    python zspy_stores.py v3 DIR          # zarr 3 with our packages, no HyperSpy
    python zspy_stores.py same DIR OTHER  # every file of both, byte for byte
    python zspy_stores.py example DIR     # HyperSpy + zarr 2: DIR/experiment.zspy alone

``write`` saves one ragged signal per case with HyperSpy (``BaseSignal(cells, ragged=True)``;
eager, or lazily from dask; with a list of strings and numbers in its original metadata) and
keeps the cells it was given. ``read`` loads every store with HyperSpy, eagerly and lazily, and
compares every cell with the given ones (dtype, shape, values). ``v3`` opens every upgraded
store with ``zarr.open_group(path, zarr_format=3)``, reads every array, compares the signal's
cells with the given ones (directly for a ``[null, d1..dk]`` pattern; flattened, with the shape
sibling, for ``[null]``) and every node's attributes with the v2 ``.zattrs`` the upgrade kept.
Each prints one line per store and check; any difference exits with status 1.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

warnings.simplefilter("ignore")  # zarr 2's deprecation notes, HyperSpy's numba note


def _grid(nav: tuple[int, ...], make: Any) -> np.ndarray:
    cells = np.empty(nav, dtype=object)
    for k, index in enumerate(np.ndindex(*nav)):
        cells[index] = make(k)
    return cells


def _ragged(nav: tuple[int, ...], trailing: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)

    def make(k: int) -> np.ndarray:
        n = 0 if k % 5 == 3 else int(rng.poisson(6))  # some empty cells
        if dt.kind == "f":
            return rng.standard_normal((n, *trailing)).astype(dt)
        return rng.integers(0, 1000, (n, *trailing)).astype(dt)

    return _grid(nav, make)


def _mixed() -> np.ndarray:
    shapes = [(3, 2), (4,), (2, 3, 2), (0, 2), (1, 2)]
    return _grid((5,), lambda k: np.arange(np.prod(shapes[k]), dtype="f8").reshape(shapes[k]))


#: case -> (cells, save options); ``lazy`` saves from dask with those navigation chunks.
CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "nav1_f8_n2": (lambda: _ragged((7,), (2,), "f8", 1), {}),
    "nav2_f4_n": (lambda: _ragged((4, 3), (), "f4", 2), {}),
    "nav3_i8_n3": (lambda: _ragged((2, 3, 4), (3,), "i8", 3), {}),
    "nav2_u2_n2x2": (lambda: _ragged((3, 5), (2, 2), "u2", 4), {}),
    "nav2_f8_n2_zstd": (lambda: _ragged((6, 4), (2,), "f8", 5), {"compressor": "zstd"}),
    "nav2_f8_n2_lazy": (lambda: _ragged((6, 4), (2,), "f8", 6), {"lazy": (3, 2)}),
    "nav1_f4_n2_lazy_uneven": (lambda: _ragged((7,), (2,), "f4", 7), {"lazy": (3,)}),
    "nav1_f8_mixed_rank": (_mixed, {}),
}


def write(out: Path) -> None:
    import hyperspy.api as hs
    import numcodecs

    out.mkdir(parents=True, exist_ok=True)
    for case, (make, options) in CASES.items():
        cells = make()
        signal = hs.signals.BaseSignal(cells, ragged=True)
        signal.metadata.General.title = case
        signal.original_metadata.add_dictionary(
            {"detector": {"names": ["alpha", "beta"], "gain": 2.5, "counts": np.arange(3)}}
        )
        kwargs: dict[str, Any] = {}
        if options.get("compressor") == "zstd":
            kwargs["compressor"] = numcodecs.Zstd(level=3)
        if "lazy" in options:
            signal = signal.as_lazy()
            signal.data = signal.data.rechunk(options["lazy"])
        signal.save(out / f"{case}.zspy", overwrite=True, **kwargs)
        np.save(out / f"{case}.npy", cells, allow_pickle=True)
        print(f"{case}: navigation {cells.shape}, saved by HyperSpy", flush=True)


def example(folder: Path) -> None:
    """The store the README's worked example upgrades: a 2-D scan of (n, 2) float64 vectors."""
    import hyperspy.api as hs

    signal = hs.signals.BaseSignal(_ragged((8, 6), (2,), "f8", 8), ragged=True)
    signal.metadata.General.title = "experiment"
    signal.save(folder / "experiment.zspy", overwrite=True)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


def _given(path: Path) -> np.ndarray:
    return np.asarray(np.load(path, allow_pickle=True))


def _stores(folder: Path) -> list[tuple[Path, np.ndarray]]:
    return [(p, _given(p.with_suffix(".npy"))) for p in sorted(folder.glob("*.zspy"))]


def read(folder: Path) -> bool:
    return all([_read(store, want) for store, want in _stores(folder)])


def _read(store: Path, want: np.ndarray) -> bool:
    import hyperspy.api as hs

    ok = True
    for lazy in (False, True):
        data = hs.load(store, lazy=lazy).data
        data = data.compute() if lazy else data
        same = data.shape == want.shape and all(
            _same(np.asarray(data[i]), want[i]) for i in np.ndindex(*want.shape)
        )
        ok &= same
        how = "lazily" if lazy else "eagerly"
        print(f"{store.name}: HyperSpy reads it {how}: {'equal' if same else 'DIFFERENT'}")
    return ok


def v3(folder: Path) -> bool:
    return all([_v3(store, want) for store, want in _stores(folder)])


def _v3(store: Path, want: np.ndarray) -> bool:
    import zarr

    from zarr_ndarray_tool._tree import KEPT

    kept = json.loads((store / KEPT).read_text())["v2"]
    root = zarr.open_group(store, mode="r", zarr_format=3)
    ok, arrays = True, 0
    for path, node in [("", root), *root.members(max_depth=None)]:
        zattrs = kept.get(f"{path}/.zattrs" if path else ".zattrs")
        attrs = dict(node.attrs)
        attrs.pop("_zarr_vlen_ndarray_v2", None)  # a ragged array keeps its own v2 documents
        if attrs != (json.loads(zattrs) if zattrs else {}):
            print(f"{store.name}: {path}: attributes DIFFERENT: {attrs}")
            ok = False
        if isinstance(node, zarr.Array):
            node[...]  # every array reads
            arrays += 1
    data = root[f"Experiments/{store.stem}/data"]
    dtype = data.metadata.data_type
    got = np.asarray(data[...], dtype=object)
    if None in dtype.shape[1:] or dtype.shape == (None,):
        shapes = root[f"Experiments/{store.stem}/_ragged_shapes_data"][...]
        same = all(
            _same(got[i], want[i].reshape(-1)) and tuple(shapes[i]) == want[i].shape
            for i in np.ndindex(*want.shape)
        )
    else:
        same = all(_same(got[i], want[i]) for i in np.ndindex(*want.shape))
    print(
        f"{store.name}: zarr.open_group(zarr_format=3) reads {arrays} arrays; the signal is "
        f"{dtype!r}: its cells are {'equal' if same else 'DIFFERENT'} to what HyperSpy was given"
    )
    return ok and same


def same(folder: Path, other: Path) -> bool:
    """Every file below both folders, byte for byte (the downgrade restored everything)."""
    mine = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    theirs = {p.relative_to(other): p.read_bytes() for p in other.rglob("*") if p.is_file()}
    differ = sorted(str(k) for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    print(f"{folder} and {other}: {len(mine)} files, {len(differ)} differ {differ[:5]}")
    return not differ


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command in ("write", "example"):
        {"write": write, "example": example}[command](Path(args[0]))
        sys.exit(0)
    if command == "same":
        sys.exit(0 if same(Path(args[0]), Path(args[1])) else 1)
    sys.exit(0 if {"read": read, "v3": v3}[command](Path(args[0])) else 1)
