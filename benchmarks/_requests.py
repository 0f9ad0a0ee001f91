"""The requests a read makes to its store, per call: GETs, bytes fetched, and the seconds with at
least one GET in flight (the store's share of the read's wall time; the rest is zarr's and ours).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from zarr.storage import WrapperStore

__all__ = ["Counted", "report_requests"]


class Counted(WrapperStore[Any]):
    """A store that counts the GETs zarr makes through it; ``per_call`` keeps each op's last."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.calls: dict[str, tuple[int, int, float]] = {}  # op -> GETs, bytes, busy seconds
        self._reset()

    def _reset(self) -> None:
        self.gets, self.nbytes, self.busy = 0, 0, 0.0
        self._in_flight, self._since = 0, 0.0

    # zarr awaits every request on its one event loop: no lock is needed for the counts
    def _begin(self) -> None:
        if not self._in_flight:
            self._since = time.perf_counter()
        self._in_flight += 1

    def _end(self) -> None:
        self._in_flight -= 1
        if not self._in_flight:
            self.busy += time.perf_counter() - self._since

    def _got(self, buffers: Iterable[Any]) -> None:
        self.gets += 1
        self.nbytes += sum(len(b) for b in buffers if b is not None)

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self._begin()
        try:
            out = await self._store.get(key, prototype, byte_range)
        finally:
            self._end()
        self._got([out])
        return out

    async def get_partial_values(self, prototype: Any, key_ranges: Iterable[Any]) -> Any:
        key_ranges = list(key_ranges)
        self._begin()
        try:
            out = await self._store.get_partial_values(prototype, key_ranges)
        finally:
            self._end()
        for buffer in out:
            self._got([buffer])
        return out

    async def get_ranges(self, key: str, byte_ranges: Any, **options: Any) -> AsyncIterator[Any]:
        """zarr >= 3.4's coalescing reads of a shard's inner chunks: one GET per batch."""
        self._begin()
        try:
            async for batch in self._store.get_ranges(key, byte_ranges, **options):
                self._got(buffer for _, buffer in batch)
                yield batch
        finally:
            self._end()

    def per_call(self, ops: dict[str, Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
        """``ops``, each recording the GETs of its latest call in ``calls[name]``."""

        def counting(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
            def call() -> Any:
                self._reset()
                result = fn()
                self.calls[name] = (self.gets, self.nbytes, self.busy)
                return result

            return call

        return {name: counting(name, fn) for name, fn in ops.items()}


def report_requests(title: str, calls: dict[str, tuple[int, int, float]]) -> None:
    """A table of ``Counted.calls``: each op's GETs, MB and seconds with a GET in flight."""
    print(f"\n{title:<44}{'GETs':>8}{'MB':>10}{'GET in flight s':>18}")
    for name, (gets, nbytes, busy) in calls.items():
        print(f"{name:<44}{gets:>8}{nbytes / 1e6:>10.2f}{busy:>18.4f}")
