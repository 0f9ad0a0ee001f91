"""One timing rule for every benchmark: runs after a garbage collection, implementations
alternating round by round; the minimum (the run least disturbed by the rest of the machine)
and the median are reported, ratios are taken of minima measured side by side.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_time", "rounds", "spread"]


def _once(fn: Callable[[], Any]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    del result
    return elapsed


def rounds(ops: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Seconds of ``repeats`` calls of every op, the ops taking turns within each round."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(repeats):
        for name, fn in ops.items():
            times[name].append(_once(fn))
    return times


def best_time(fn: Callable[[], Any], repeats: int) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn``."""
    return min(rounds({"": fn}, repeats)[""])


def spread(times: list[float]) -> str:
    """``min / median`` of some runs, for a table cell."""
    return f"{min(times):.3f} / {statistics.median(times):.3f}"
