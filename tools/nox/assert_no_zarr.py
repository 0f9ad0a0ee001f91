"""Fail if zarr is importable: nd-arrow alone must work without it (used by noxfile.py)."""

from __future__ import annotations

import importlib.util
import sys


def main() -> int:
    if importlib.util.find_spec("zarr") is not None:
        print(f"zarr is importable from {sys.prefix}, but nd-arrow must work without it")
        return 1
    print("ok: zarr is not importable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
