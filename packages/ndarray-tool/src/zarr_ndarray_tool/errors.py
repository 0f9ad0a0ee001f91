"""The one exception the store tool raises for a store or request it will not act on."""

from __future__ import annotations

__all__ = ["Refused"]


class Refused(Exception):
    """The store is not what the command expects, or it is invalid; nothing was changed.

    The message names what was found and what the command expects (the CLI prints it and exits
    with status 1).
    """
