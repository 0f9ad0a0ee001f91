from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
import zarr
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile("ci")


@pytest.fixture
def store() -> dict:
    return {}


#: The codec pipelines the installed zarr ships.
PIPELINES = [
    path
    for path in (
        "zarr.core.codec_pipeline.BatchedCodecPipeline",
        "zarr.core.codec_pipeline.FusedCodecPipeline",  # zarr >= 3.3
    )
    if hasattr(importlib.import_module("zarr.core.codec_pipeline"), path.rsplit(".", 1)[1])
]


@pytest.fixture(params=PIPELINES, ids=lambda p: p.rsplit(".", 1)[1])
def pipeline(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each codec pipeline of the installed zarr in turn, as zarr's configuration."""
    path: str = request.param
    with zarr.config.set({"codec_pipeline.path": path}):
        yield path
