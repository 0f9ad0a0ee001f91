from __future__ import annotations

import importlib
import importlib.util
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


#: The codec pipelines the installed zarr ships, and zarrs-python's (strict: it never falls
#: back) where its wheel is installed.
PIPELINES = [
    path
    for path in (
        "zarr.core.codec_pipeline.BatchedCodecPipeline",
        "zarr.core.codec_pipeline.FusedCodecPipeline",  # zarr >= 3.3
    )
    if hasattr(importlib.import_module("zarr.core.codec_pipeline"), path.rsplit(".", 1)[1])
]
if importlib.util.find_spec("zarrs") is not None:
    PIPELINES.append("zarrs.ZarrsCodecPipeline")


@pytest.fixture(params=PIPELINES, ids=lambda p: p.rsplit(".", 1)[1])
def pipeline(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each codec pipeline in turn, as zarr's configuration."""
    path: str = request.param
    with zarr.config.set({"codec_pipeline.path": path, "codec_pipeline.strict": True}):
        yield path
