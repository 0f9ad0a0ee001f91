"""A small progress bar on stderr, drawn only on a terminal: a 60-line counter rather than a
runtime dependency (tqdm, rich) for a codec package's tool.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress", "counting"]

_WIDTH = 30
_INTERVAL = 0.1


class Progress:
    """Count ``total`` steps; draw ``label [#####.....] done/total`` on ``stream``.

    ``enabled=None`` (the default) draws only when ``stream`` is a TTY, and only while there is
    a total (the operation may set ``total`` once it knows it). The line is erased when the
    context exits, so nothing is left between the command's own output.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
    ) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self._stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._last = 0.0
        self._drawn = False

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._drawn:
            self._stream.write("\r\x1b[2K")
            self._stream.flush()

    def advance(self, steps: int = 1) -> None:
        self.done = min(self.done + steps, self.total)
        self._draw(force=self.done == self.total)

    def render(self) -> str:
        """The bar's text for the current count."""
        filled = _WIDTH * self.done // self.total if self.total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total}"

    def _draw(self, *, force: bool = False) -> None:
        if not (self.enabled and self.total > 0):
            return
        now = time.monotonic()
        if not force and now - self._last < _INTERVAL:
            return
        self._last = now
        self._stream.write("\r" + self.render())
        self._stream.flush()
        self._drawn = True


def counting(progress: Progress | None, total: int) -> Progress:
    """``progress`` (else a bar that draws nothing) counting to ``total``: an operation learns
    its total once it has listed what it will do."""
    bar = progress if progress is not None else Progress(0, "", enabled=False)
    bar.total = total
    return bar
