"""zarr_ndarray_dtype.testing: README examples taken out and run as programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from zarr_ndarray_dtype.testing import readme_examples, run_example


def test_readme_examples_takes_the_python_blocks_in_order(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n\n"
        "text\n\n```python\nprint(2)\n```\n",
        encoding="utf-8",
    )
    assert readme_examples(readme) == {"block0": "x = 1\n", "block1": "print(2)\n"}


def test_readme_examples_of_a_readme_without_any(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\n```\nplain\n```\n", encoding="utf-8")
    assert readme_examples(readme) == {}


def test_run_example_returns_what_it_printed(tmp_path: Path) -> None:
    done = run_example("import warnings\nwarnings.warn('hidden')\nprint(6 * 7)\n", tmp_path)
    assert done.stdout == "42\n"
    assert done.stderr == ""
    assert (tmp_path / "example.py").is_file()


def test_run_example_raises_with_the_error_of_a_failing_example(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"(?s)exited with 1:\n.*ZeroDivisionError"):
        run_example("1 / 0\n", tmp_path)


def test_run_example_gives_up_after_the_timeout(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_example("import time\ntime.sleep(30)\n", tmp_path, timeout=0.5)
