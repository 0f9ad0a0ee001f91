"""What the machine can do, printed beside every benchmark: copy bandwidth and cores.

A ratio means little without the physical limit next to it: a read of ``B`` bytes cannot beat
``B / copy_bandwidth`` seconds on this machine, whatever the code does.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

__all__ = ["copy_bandwidth", "describe"]


def copy_bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Bytes per second of one ``np.copyto`` between two ``nbytes`` buffers (best of repeats)."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return nbytes / best


def describe() -> str:
    """One line: Python, numpy, cores and the memcpy bandwidth in GB/s."""
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}; memcpy "
        f"{copy_bandwidth() / 1e9:.2f} GB/s (np.copyto of 256 MiB, best of 5)"
    )


if __name__ == "__main__":
    print(describe())
