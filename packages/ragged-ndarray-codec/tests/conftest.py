"""Make the shared helper module (``_zrn_helpers``) importable in pytest's importlib mode."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import settings

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

settings.register_profile("zrn-ci", max_examples=60, deadline=None)
settings.load_profile("zrn-ci")
