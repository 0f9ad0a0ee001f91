"""Wording of the tool's output: counts with their noun ("1 cell", "2 cells")."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (nouns here take an "s")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
