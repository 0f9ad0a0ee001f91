"""info, verify and export give the same under every codec pipeline: zarr's Batched and Fused
(zarr >= 3.3) and zarrs-python's in strict mode (where installed), set before the array is
opened: the engine reads the chunks itself."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import zarr

from zarr_ndarray_dtype import NDArrayDType, write_columnar

pytest.importorskip("zarr_vlen_ndarray")
pytest.importorskip("nd_arrow")

PIPELINES = [
    path
    for path in (
        "zarr.core.codec_pipeline.BatchedCodecPipeline",
        "zarr.core.codec_pipeline.FusedCodecPipeline",
    )
    if hasattr(importlib.import_module("zarr.core.codec_pipeline"), path.rsplit(".", 1)[1])
]
if importlib.util.find_spec("zarrs") is not None:
    PIPELINES.append("zarrs.ZarrsCodecPipeline")


def _commands(root: Path, pipeline: str) -> list[Any]:
    from zarr_ndarray_tool import api

    out = root / f"{pipeline.rsplit('.', 1)[1]}.parquet"
    with zarr.config.set({"codec_pipeline.path": pipeline, "codec_pipeline.strict": True}):
        info = api.info(root / "cells.zarr")
        verify = api.verify(root / "cells.zarr")
        api.export(root / "cells.zarr", parquet=out)
    return [info.report, verify.failed, pq.read_table(out).to_pylist()]


def test_the_tool_gives_the_same_under_every_pipeline(tmp_path: Path) -> None:
    array = zarr.create_array(
        tmp_path / "cells.zarr", shape=(40, 6), chunks=(4, 3), shards=(8, 6),
        dtype=NDArrayDType("float32", (None, 2)), compressors=zarr.codecs.ZstdCodec(level=1),
    )  # fmt: skip
    rng = np.random.default_rng(1)
    offsets = np.concatenate([[0], np.cumsum(rng.poisson(2, 240))])
    write_columnar(array, rng.random((int(offsets[-1]), 2)).astype("f4"), offsets)
    results = [_commands(tmp_path, pipeline) for pipeline in PIPELINES]
    assert all(result == results[0] for result in results[1:])
    assert results[0][1] == 0 and len(results[0][2]) == 240
