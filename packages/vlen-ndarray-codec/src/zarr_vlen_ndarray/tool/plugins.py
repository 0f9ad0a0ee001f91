"""Loading the tool's plug-ins: callables registered in an entry-point group under a name.

The one rule for every plug-in point of the tool (exporters, chunk decoders): the first entry
point of ``group`` named ``name`` that loads and is callable wins; one that raises while loading,
or is not callable, is skipped with a RuntimeWarning (a broken plug-in never breaks the tool).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

__all__ = ["load_plugin", "plugin_names"]


def load_plugin(group: str, name: str, what: str) -> Callable[..., Any] | None:
    """The plug-in registered in ``group`` under ``name``; None if there is none that loads.

    ``what`` names the kind of plug-in in warnings (e.g. ``"exporter"``).
    """
    for ep in entry_points(group=group, name=name):
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plug-in must not break the tool
            warnings.warn(
                f"the {name!r} {what} plug-in {ep.value!r} failed to load "
                f"({type(exc).__name__}: {exc}); skipped it",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        if not callable(loaded):
            warnings.warn(
                f"the {name!r} {what} plug-in {ep.value!r} is not callable; skipped it",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        plugin: Callable[..., Any] = loaded
        return plugin
    return None


def plugin_names(group: str) -> set[str]:
    """The names registered in ``group`` (nothing is loaded)."""
    return {ep.name for ep in entry_points(group=group)}
