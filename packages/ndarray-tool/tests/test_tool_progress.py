"""The progress bar: drawn on a terminal only, silent when disabled or piped."""

from __future__ import annotations

import io

from zarr_ndarray_tool.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_on_a_terminal_and_erases_itself() -> None:
    stream = FakeTTY()
    with Progress(4, "reading", stream=stream) as bar:
        for _ in range(4):
            bar.advance()
        assert bar.render() == f"reading [{'#' * 30}] 4/4"
    text = stream.getvalue()
    assert "\rreading [" in text
    assert "4/4" in text  # the last step is always drawn
    assert text.endswith("\r\x1b[2K")


def test_silent_when_not_a_terminal_or_disabled_or_empty() -> None:
    for stream, enabled, total in (
        (io.StringIO(), None, 3),
        (FakeTTY(), False, 3),
        (FakeTTY(), None, 0),
    ):
        with Progress(total, "x", stream=stream, enabled=enabled) as bar:
            bar.advance()
        assert stream.getvalue() == ""


def test_render_counts_and_clamps() -> None:
    bar = Progress(3, "step", stream=io.StringIO(), enabled=False)
    bar.advance()
    assert bar.render() == f"step [{'#' * 10}{'.' * 20}] 1/3"
    bar.advance(10)
    assert bar.done == 3
