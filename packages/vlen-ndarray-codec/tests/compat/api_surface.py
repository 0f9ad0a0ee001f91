"""The public surface of ``zarr_vlen_ndarray``: dump it to JSON, or compare ours with 0.2.0's.

``python api_surface.py dump OUT.json`` (run by any interpreter that has a zarr_vlen_ndarray)
writes every public name of ``zarr_vlen_ndarray``, ``zarr_vlen_ndarray.dtype`` and
``zarr_vlen_ndarray.codec``: functions and classes with their signatures (parameter names,
kinds, defaults, annotations as written) and, for classes, every public member and every zarr
protocol member they define. ``python api_surface.py compare OLD.json`` checks that the installed
package offers everything in OLD.json compatibly: same or more permissive parameters, the same
defaults, the same annotations (zarr's own types, never ``Any`` where OLD had a type).

``nox -s suite020`` dumps the published 0.2.0 in its own venv and compares; ``api020.json`` in
this folder is that dump, checked by ``test_api_surface.py`` in every test run.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Any

MODULES = ("zarr_vlen_ndarray", "zarr_vlen_ndarray.dtype", "zarr_vlen_ndarray.codec")
# Packages whose classes are compared member by member (the data type moved to the second).
OURS = {"zarr_vlen_ndarray", "zarr_ndarray_dtype"}
# Private members that are part of zarr's ZDType / codec protocols (zarr calls them).
PROTOCOL = {
    "_zarr_v3_name",
    "_check_json_v2",
    "_check_json_v3",
    "_from_json_v2",
    "_from_json_v3",
    "_check_scalar",
    "_decode_single",
    "_encode_single",
}
# Names bound by ``import``/``from ... import`` of the standard library or typing helpers: not
# part of anyone's API.
_NOT_API_MODULES = {"typing", "dataclasses", "__future__", "collections.abc", "builtins", "abc"}
# Accepted differences of annotation text (old, new): the new one admits at least as much.
WIDENINGS = {
    ("bytes", "bytes | bytearray | memoryview | np.ndarray"),
    ("np.dtype[Any]", "np.dtype[Any] | str | type"),
}


def _text(annotation: Any) -> str | None:
    if annotation is inspect.Parameter.empty:
        return None
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _signature(obj: Any) -> dict[str, Any] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return {
        "parameters": [
            {
                "name": p.name,
                "kind": p.kind.name,
                "default": None if p.default is p.empty else repr(p.default),
                "annotation": _text(p.annotation),
            }
            for p in sig.parameters.values()
        ],
        "return": _text(sig.return_annotation),
    }


def _member(cls: type, name: str) -> dict[str, Any]:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, classmethod | staticmethod):
        kind = type(raw).__name__
        return {"kind": kind, "signature": _signature(getattr(cls, name))}
    if isinstance(raw, property):
        return {"kind": "property", "return": _text(inspect.signature(raw.fget).return_annotation)}
    if inspect.isfunction(raw):
        return {"kind": "method", "signature": _signature(raw)}
    fields = getattr(cls, "__dataclass_fields__", {})
    if name in fields and fields[name]._field_type is dataclasses._FIELD:  # type: ignore[attr-defined]
        field = fields[name]
        default = None if field.default is field.default_factory else repr(field.default)
        return {"kind": "field", "default": default}
    return {"kind": "attribute", "value": repr(getattr(cls, name))[:200]}


def _class(cls: type) -> dict[str, Any]:
    names = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in OURS:
            continue
        names |= {n for n in vars(klass) if not n.startswith("_") or n in PROTOCOL}
    names |= {n for n in getattr(cls, "__dataclass_fields__", {}) if not n.startswith("_")}
    names |= {n for n in PROTOCOL if hasattr(cls, n) and cls.__module__.split(".")[0] in OURS}
    return {
        "kind": "class",
        "bases": [b.__name__ for b in cls.__mro__[1:]],
        "init": _signature(cls),
        "members": {n: _member(cls, n) for n in sorted(names)},
    }


def _public(module: types.ModuleType) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, obj in sorted(vars(module).items()):
        if (name.startswith("_") and name != "__version__") or name == "TYPE_CHECKING":
            continue
        if isinstance(obj, types.ModuleType):
            continue
        home = getattr(obj, "__module__", None)
        if home in _NOT_API_MODULES or (home or "").startswith("typing"):
            continue
        if isinstance(obj, type):
            if (home or "").split(".")[0] in OURS:
                out[name] = _class(obj)
            else:  # a re-export of a zarr / numcodecs class: it must stay importable
                out[name] = {"kind": "reexport", "qualname": f"{home}.{obj.__qualname__}"}
        elif callable(obj) and (home or "").split(".")[0] in OURS:
            out[name] = {"kind": "function", "signature": _signature(obj)}
        elif callable(obj):  # zarr's own function re-exported: its signature is zarr's
            out[name] = {"kind": "reexport", "qualname": f"{home}.{obj.__qualname__}"}
        else:
            out[name] = {"kind": "constant", "type": type(obj).__name__}
    if hasattr(module, "__all__"):
        out["__all__"] = {"kind": "all", "names": sorted(module.__all__)}
    return out


def dump() -> dict[str, Any]:
    # Resolve class objects through the package that defines them, whatever module is asked.
    return {name: _public(importlib.import_module(name)) for name in MODULES}


# ------------------------------------------------------------------------------- comparing


# numpy.ndarray's constructor parameters (VlenScalar, an ndarray subclass, inherits them).
_NDARRAY_INIT = ["shape", "dtype", "buffer", "offset", "strides", "order"]


def _compare_signature(
    where: str, old: dict[str, Any] | None, new: dict[str, Any] | None
) -> list[str]:
    if old is None:
        return []
    if new is None:
        if [p["name"] for p in old["parameters"]] == _NDARRAY_INIT:
            return []  # numpy.ndarray's own constructor: numpy < 2 gives it no signature
        return [f"{where}: no inspectable signature"]
    problems = []
    new_params = {p["name"]: p for p in new["parameters"]}
    positional_old = [p["name"] for p in old["parameters"] if "POSITIONAL" in p["kind"]]
    positional_new = [p["name"] for p in new["parameters"] if "POSITIONAL" in p["kind"]]
    if positional_new[: len(positional_old)] != positional_old:
        problems.append(f"{where}: positional parameters {positional_new} != {positional_old}")
    for p in old["parameters"]:
        if p["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        q = new_params.get(p["name"])
        if q is None:
            if not any(x["kind"] == "VAR_KEYWORD" for x in new["parameters"]):
                problems.append(f"{where}: parameter {p['name']!r} is gone")
            continue
        if p["kind"] != q["kind"] and not (
            p["kind"] == "KEYWORD_ONLY" and q["kind"] == "POSITIONAL_OR_KEYWORD"
        ):
            problems.append(f"{where}: parameter {p['name']!r} is {q['kind']}, was {p['kind']}")
        if p["default"] != q["default"] and p["default"] is not None:
            problems.append(
                f"{where}: default of {p['name']!r} is {q['default']}, was {p['default']}"
            )
        problems += _compare_annotation(f"{where}({p['name']})", p["annotation"], q["annotation"])
    old_names = {p["name"] for p in old["parameters"]}
    for q in new["parameters"]:
        required = q["default"] is None and q["kind"] not in ("VAR_POSITIONAL", "VAR_KEYWORD")
        if q["name"] not in old_names and required:
            problems.append(f"{where}: new required parameter {q['name']!r}")
    problems += _compare_annotation(f"{where} -> ", old["return"], new["return"])
    return problems


def _compare_annotation(where: str, old: str | None, new: str | None) -> list[str]:
    if old is None or old == new or (old, new) in WIDENINGS:
        return []
    if old == "Self" and new is not None and new.endswith("Self"):
        return []
    return [f"{where}: annotated {new!r}, was {old!r}"]


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for module, names in old.items():
        ours = new.get(module, {})
        for name, spec in names.items():
            where = f"{module}.{name}"
            mine = ours.get(name)
            if mine is None:
                problems.append(f"{where}: missing")
                continue
            kind = spec["kind"]
            if kind == "all":
                gone = sorted(set(spec["names"]) - set(mine["names"]))
                if gone:
                    problems.append(f"{where}: {gone} no longer listed")
            elif kind == "function":
                problems += _compare_signature(where, spec["signature"], mine.get("signature"))
            elif kind == "class":
                if mine["kind"] != "class":
                    problems.append(f"{where}: is a {mine['kind']}, was a class")
                    continue
                problems += _compare_signature(f"{where}()", spec["init"], mine["init"])
                for member, m_old in spec["members"].items():
                    m_new = mine["members"].get(member)
                    mwhere = f"{where}.{member}"
                    if m_new is None:
                        problems.append(f"{mwhere}: missing")
                    elif m_new["kind"] != m_old["kind"]:
                        problems.append(f"{mwhere}: is a {m_new['kind']}, was a {m_old['kind']}")
                    elif "signature" in m_old:
                        problems += _compare_signature(
                            mwhere, m_old["signature"], m_new["signature"]
                        )
                    elif m_old["kind"] == "property":
                        problems += _compare_annotation(mwhere, m_old["return"], m_new["return"])
                    elif m_old["kind"] == "field" and m_old["default"] != m_new["default"]:
                        problems.append(
                            f"{mwhere}: default {m_new['default']}, was {m_old['default']}"
                        )
                    elif m_old["kind"] == "attribute" and m_old["value"] != m_new["value"]:
                        problems.append(f"{mwhere}: value {m_new['value']}, was {m_old['value']}")
            elif kind == "constant" and mine["kind"] != "constant":
                problems.append(f"{where}: is a {mine['kind']}, was a constant")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "dump":
        Path(argv[1]).write_text(json.dumps(dump(), indent=1, sort_keys=True) + "\n")
        return 0
    if len(argv) == 2 and argv[0] == "compare":
        old = json.loads(Path(argv[1]).read_text())
        problems = compare(old, dump())
        for line in problems:
            print(line)
        count = sum(len(v) for v in old.values())
        print(f"{len(problems)} incompatibilities in {count} public names of 0.2.0")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
