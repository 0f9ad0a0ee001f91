"""Peak extra memory of one call, as the kernel counts it: resident pages (RSS), not Python's
allocations. Run it in a fresh process, after the imports and a first small call, so that the
baseline holds everything but the call's own memory. Standard library only: the zarr 2 venv of
bench_hyperspy.py imports it too.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["FIXED_MMAP", "peak_extra"]

#: glibc keeps freed blocks of up to its dynamic mmap threshold (it rises to the largest block
#: freed) in per-thread arenas, so RSS also holds what zarr's decompression threads freed; with
#: the threshold fixed (in a child's environment), blocks of 1 MiB and more go back to the
#: system when freed.
FIXED_MMAP = {"MALLOC_MMAP_THRESHOLD_": str(1 << 20)}


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(key)


def peak_extra(fn: Callable[[], Any]) -> tuple[int, Any]:
    """The peak RSS above the current one while ``fn()`` runs, in bytes, and its result."""
    gc.collect()
    base = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again here
    result = fn()
    return _status("VmHWM") - base, result
