"""The JSON metadata of a parameter-free codec of the ``ndarray`` data type (pure logic).

Both codec packages (``vlen-ndarray``, ``ragged-ndarray``) store ``{"name": <name>,
"configuration": {}}``; the configuration may be omitted, and when present it must be empty (the
element dtype and shape belong to the data type). One strict check serves both.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["parse_codec_metadata"]

#: The section of SPEC.md with each codec's metadata rules (1: the object, 2: its configuration).
_SECTIONS = {"vlen-ndarray": "2.2", "ragged-ndarray": "5.1"}


def parse_codec_metadata(
    data: object,
    name: str,
    error: type[ValueError],
    not_object_error: type[ValueError] | None = None,
) -> None:
    """Check codec metadata strictly: ``name``, an optional empty configuration, nothing else.

    Raises ``error`` (``not_object_error`` when given and ``data`` is not a JSON object at all),
    naming the rule of SPEC.md broken.
    """
    section = _SECTIONS.get(name, "?")
    if not isinstance(data, Mapping):
        raise (not_object_error or error)(
            f"codec metadata {data!r} is not a JSON object; expected "
            f'{{"name": "{name}", "configuration": {{}}}} (SPEC {section}/1).'
        )
    extra = sorted(set(data) - {"name", "configuration"})
    if extra:
        raise error(
            f"codec metadata {dict(data)!r} has unexpected keys {extra}; the {name!r} codec "
            f"metadata has only 'name' and an optional empty 'configuration' (SPEC {section}/1)."
        )
    if data.get("name") != name:
        raise error(
            f"codec metadata {dict(data)!r} does not name the {name!r} codec (SPEC {section}/1)."
        )
    if "configuration" in data:
        config = data["configuration"]
        if not isinstance(config, Mapping):
            raise error(
                f"the {name!r} codec configuration {config!r} is not a JSON object; the "
                f"codec is parameter-free: use {{}} or omit 'configuration' (SPEC {section}/2)."
            )
        if config:
            raise error(
                f"the {name!r} codec takes no parameters, got configuration "
                f"{dict(config)!r}; the element dtype and shape belong to the 'ndarray' data "
                f'type: use "configuration": {{}} or omit it (SPEC {section}/2).'
            )
