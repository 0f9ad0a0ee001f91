"""The README's Python examples run as written (the Dask one where dask is installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _zvn_support import readme_examples, run_script

BLOCKS = readme_examples(Path(__file__).resolve().parents[1] / "README.md")


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


def test_the_install_hint_is_the_readme_s_line() -> None:
    """The data type's refusals name the command this README installs the codec with."""
    from zarr_ndarray_dtype.codecs import install_hint

    command = install_hint("zarr-vlen-ndarray").split(" (")[0]
    readme = Path(__file__).resolve().parents[1] / "README.md"
    assert command in readme.read_text(encoding="utf-8").splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS.values(), ids=BLOCKS.keys())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    needs = [m for m in ("dask", "distributed") if m in code]
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    run_script(code, tmp_path, timeout=240)
