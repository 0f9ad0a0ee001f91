"""The golden vectors under tests/golden/registry copy the repository's
registry/examples/vlen-ndarray.

The copy ships in the sdist (tests never read outside the package folder); in a repository
clone this test checks that it has not drifted from the original. From an sdist it is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

COPY = Path(__file__).resolve().parent / "golden/registry"
# Only in a clone: packages/vlen-ndarray-codec/tests -> repository root.
ROOT = Path(__file__).resolve().parent.parent.parent.parent
ORIGINAL = ROOT / "registry" / "examples" / "vlen-ndarray"


@pytest.mark.skipif(not ORIGINAL.is_dir(), reason="not in a repository clone (e.g. an sdist)")
def test_golden_copy_equals_the_registry() -> None:
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.json")}

    copy, original = files(COPY), files(ORIGINAL)
    assert sorted(copy) == sorted(original), "copy the registry examples again"
    assert copy == original, "copy the registry examples again"
