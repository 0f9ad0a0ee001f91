"""Compare a run of zarr-vlen-ndarray 0.2.0's own test suite with the allow-list.

Usage: ``python suite020_check.py JUNIT_XML ALLOWLIST_TOML`` (run by ``nox -s suite020`` with the
interpreter that ran the suite). Exits non-zero when a test fails that is not allowed, when an
allowed test (for this zarr version) did not fail, or when nothing ran. Prints the counts.
"""

from __future__ import annotations

import sys
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version


def node_id(case: ET.Element) -> str:
    """``tests/test_x.py::test_name[param]`` from a junit ``testcase`` element."""
    module = case.get("classname", "").replace(".", "/")
    return f"{module}.py::{case.get('name')}"


def main(junit: str, allowlist: str) -> int:
    zarr_version = Version(version("zarr"))
    entries = tomllib.loads(Path(allowlist).read_text(encoding="utf-8"))["allowed"]
    for entry in entries:
        missing = {"test", "change", "reason"} - set(entry)
        if missing:
            print(f"allow-list entry {entry.get('test')!r} lacks {sorted(missing)}")
            return 2
    allowed = {e["test"]: e for e in entries if zarr_version in SpecifierSet(e.get("zarr", ""))}
    passed: list[str] = []
    failed: list[str] = []
    skipped: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = {child.tag for child in case}
        name = node_id(case)
        if outcome & {"failure", "error"}:
            failed.append(name)
        elif "skipped" in outcome:
            skipped.append(name)
        else:
            passed.append(name)
    unexpected = sorted(set(failed) - set(allowed))
    stale = sorted(set(allowed) - set(failed))
    total = len(passed) + len(failed) + len(skipped)
    print(
        f"zarr-vlen-ndarray 0.2.0 suite on zarr {zarr_version}: {total} tests, "
        f"{len(passed)} passed, {len(set(failed) & set(allowed))} allowed failures, "
        f"{len(skipped)} skipped, {len(unexpected)} unexpected failures"
    )
    for name in sorted(set(failed) & set(allowed)):
        print(f"  allowed: {name}")
    for name in unexpected:
        print(f"  FAILED (not in the allow-list): {name}")
    for name in stale:
        print(f"  STALE allow-list entry (the test passed or did not run): {name}")
    if total == 0:
        print("no test ran")
        return 1
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
