"""One timing rule for every benchmark: the best of ``repeats`` runs, after a garbage collection.

The minimum is the run least disturbed by the rest of the machine; ratios are taken of minima
measured in the same process, side by side.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_time"]


def best_time(fn: Callable[[], Any], repeats: int) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` (each after ``gc.collect()``)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
