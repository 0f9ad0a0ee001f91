"""Shared test helper: run a script in a fresh interpreter that records every pandas import."""

from __future__ import annotations

import subprocess
import sys

#: Script lines that record (in ``asked``) every attempt to import pandas, installed or not.
RECORD_PANDAS_IMPORTS = """
asked = []
class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            asked.append(name)
        return None
sys.meta_path.insert(0, Recorder())
"""


def run_script(code: str) -> None:
    """Run ``code`` in a fresh interpreter; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
