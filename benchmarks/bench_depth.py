"""How many of our modules the everyday paths enter, followed at runtime in every thread.

On a sharded ``[null, 2]`` float32 array (64 x 64 cells, shards of 32 x 32, inner chunks of
16 x 16, zstd), the second call of each path (the first imports and warms caches):

  zarr.open_array + read_columnar     (issue 37: at most 12)
  a[:] = cells                        (at most 12)
  zarr-ndarray export A --parquet O   (at most 22; the command's main(), in this process)

Every Python function called is recorded, in every thread (``threading.setprofile_all_threads``,
Python >= 3.12); a module counts once, however often it is entered. No assertions.

Run:  python benchmarks/bench_depth.py
"""

from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarr_vlen_ndarray  # noqa: F401  (the codec of [null, 2])
from zarr_ndarray_dtype import NDArrayDType, read_columnar, write_columnar

OURS = ("zarr_ndarray_dtype", "zarr_vlen_ndarray", "zarr_ragged_ndarray", "nd_arrow")
OURS += ("zarr_ndarray_tool",)


def entered(fn: Callable[[], Any]) -> list[str]:
    """Our modules the second call of ``fn`` enters, in any thread."""
    fn()
    seen: set[str] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and (name := frame.f_globals.get("__name__", "")).startswith(OURS):
            seen.add(name)

    threading.setprofile_all_threads(profile)
    try:
        fn()
    finally:
        threading.setprofile_all_threads(None)
    return sorted(seen)


def main() -> None:
    if sys.version_info < (3, 12):
        print("bench_depth: needs Python >= 3.12 (threading.setprofile_all_threads)")
        return
    root = Path(tempfile.mkdtemp())
    array = zarr.create_array(
        root / "cells.zarr", shape=(64, 64), chunks=(16, 16), shards=(32, 32),
        dtype=NDArrayDType("float32", (None, 2)), compressors=zarr.codecs.ZstdCodec(),
    )  # fmt: skip
    rng = np.random.default_rng(0)
    offsets = np.concatenate([[0], np.cumsum(rng.poisson(5, 64 * 64))])
    write_columnar(array, rng.random((int(offsets[-1]), 2)).astype("f4"), offsets)
    cells = np.empty((64, 64), dtype=object)
    for index in np.ndindex(64, 64):
        cells[index] = rng.random((int(rng.integers(0, 5)), 2)).astype("f4")

    def export() -> None:
        from zarr_ndarray_tool.cli import main as command

        out = root / "cells.parquet"
        out.unlink(missing_ok=True)
        command(["export", str(root / "cells.zarr"), "--parquet", str(out), "-q"])

    paths = {
        "zarr.open_array + read_columnar": lambda: read_columnar(
            zarr.open_array(root / "cells.zarr")
        ),
        "a[:] = cells": lambda: array.__setitem__(slice(None), cells),
        "zarr-ndarray export A --parquet O": export,
    }
    for name, fn in paths.items():
        modules = entered(fn)
        print(f"{name}: {len(modules)} of our modules")
        print("    " + ", ".join(modules))


if __name__ == "__main__":
    main()
