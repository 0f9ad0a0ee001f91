"""The examples in the package's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["nd_arrow", "nd_arrow._variable", "nd_arrow._column", "nd_arrow._dataset"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
