"""``moto_server`` serving ranged GETs as S3 does: at the cost of the range, not the object.

moto 5 answers a ranged GET by reading the whole object out of its spooled temporary file and
slicing it, so every request costs a read of the object (a 1-byte range of a 644 MB shard:
about a third of a second); a read that fetches a shard's inner chunks by byte range then pays
that for every request. This launcher keeps each object's bytes once read, so a ranged GET
copies only its range, as S3 does. Run as ``python _moto_ranged.py [moto_server options]``.
"""

from __future__ import annotations

import sys
from typing import Any

from moto.s3 import models
from moto.server import main

_plain = models.FakeKey.value


def _get(self: Any) -> bytes:
    kept = self.__dict__.get("_kept_value")
    if kept is None:
        kept = self.__dict__["_kept_value"] = _plain.fget(self)
    return kept  # type: ignore[no-any-return]


def _set(self: Any, value: bytes) -> None:
    self.__dict__.pop("_kept_value", None)
    _plain.fset(self, value)


models.FakeKey.value = property(_get, _set)  # type: ignore[assignment]

if __name__ == "__main__":
    sys.exit(main())
