"""The README's Python examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
# A block whose first line is "# needs: module>=version, module" runs only where those import.
NEEDS = re.compile(r"# needs: (.*)\n")


def skip_unless_importable(code: str) -> None:
    needs = NEEDS.match(code)
    for requirement in needs.group(1).split(",") if needs else ():
        module, _, minversion = requirement.strip().partition(">=")
        pytest.importorskip(module, minversion=minversion or None)


def test_the_readme_has_examples() -> None:
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    skip_unless_importable(code)
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
