"""Every public name of zarr-vlen-ndarray 0.2.0 exists here with a compatible signature.

``compat/api020.json`` is the dump of the published 0.2.0 made by ``compat/api_surface.py`` in a
venv holding 0.2.0 (``nox -s suite020`` re-dumps it there and checks it equals this file).
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

COMPAT = Path(__file__).resolve().parent / "compat"
API020 = json.loads((COMPAT / "api020.json").read_text(encoding="utf-8"))
# A script, not a package module: load it by path (no package-name clash between test folders).
_spec = importlib.util.spec_from_file_location("zvn_api_surface", COMPAT / "api_surface.py")
assert _spec is not None and _spec.loader is not None
api_surface = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_surface)
compare, dump = api_surface.compare, api_surface.dump


def test_every_020_name_is_here_compatibly() -> None:
    assert compare(API020, dump()) == []


def test_the_020_dump_covers_the_protocol_and_defaults() -> None:
    members = API020["zarr_vlen_ndarray.dtype"]["NDArray"]["members"]
    for name in ("_check_json_v2", "_check_json_v3", "_from_json_v3", "object_codec_id"):
        assert name in members
    init = API020["zarr_vlen_ndarray"]["NDArray"]["init"]["parameters"]
    expected = [("dtype", "'float32'"), ("shape", "(None,)")]
    assert [(p["name"], p["default"]) for p in init] == expected


def _drop(surface: dict[str, Any], *path: str) -> dict[str, Any]:
    out = copy.deepcopy(surface)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: _drop(s, "zarr_vlen_ndarray.codec", "CODEC_NAME"), "CODEC_NAME: missing"),
        (
            lambda s: _drop(s, "zarr_vlen_ndarray.dtype", "NDArray", "members", "_check_json_v2"),
            "_check_json_v2: missing",
        ),
    ],
)
def test_the_comparison_notices_a_missing_name(mutate: Any, expected: str) -> None:
    problems = compare(API020, mutate(dump()))
    assert any(expected in p for p in problems), problems


def test_the_comparison_notices_changed_defaults_and_annotations() -> None:
    ours = copy.deepcopy(dump())
    cls = ours["zarr_vlen_ndarray"]["NDArray"]
    cls["init"]["parameters"][0]["default"] = "'float64'"
    method = cls["members"]["from_json_scalar"]["signature"]
    method["parameters"][1]["annotation"] = "Any"
    problems = compare(API020, ours)
    assert any("default of 'dtype'" in p for p in problems), problems
    assert any("from_json_scalar(data): annotated 'Any', was 'JSON'" in p for p in problems)
