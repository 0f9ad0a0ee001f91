from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile("ci")


@pytest.fixture
def store() -> dict:
    return {}
