"""The package's public names, and the names before the renames (deprecated aliases)."""

from __future__ import annotations

import numpy as np
import pytest

import nd_arrow

RENAMED = {
    "NdArray": "NdVariable",
    "NdRecordBatch": "NdDataset",
    "NdArrayType": "NdType",
    "NdArrayScalar": "NdScalar",
}


@pytest.mark.parametrize(("old", "new"), RENAMED.items())
def test_old_names_warn_and_are_the_new_classes(old: str, new: str) -> None:
    with pytest.warns(
        DeprecationWarning, match=f"nd_arrow.{old} is deprecated: use nd_arrow.{new}"
    ):
        cls = getattr(nd_arrow, old)
    assert cls is getattr(nd_arrow, new)
    assert old not in nd_arrow.__all__ and new in nd_arrow.__all__


def test_old_names_import_and_work() -> None:
    with pytest.warns(DeprecationWarning, match="deprecated"):
        from nd_arrow import NdArray, NdRecordBatch
    batch = NdRecordBatch({"t": NdArray(np.zeros(2), ["x"])})
    assert isinstance(batch, nd_arrow.NdDataset) and batch.sizes == {"x": 2}


def test_unknown_names_still_raise() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NdNothing'"):
        nd_arrow.NdNothing  # noqa: B018


def test_every_public_name_is_there() -> None:
    assert all(hasattr(nd_arrow, name) for name in nd_arrow.__all__)
