"""Judge a run of another project's test suite against our packages, with an allow-list.

    python tools/nox/suite_check.py LABEL JUNIT_XML ALLOWLIST_TOML
        [--baseline PYTHON --collected IDS_FILE --root DIR [-- PYTEST_ARGS...]]

Run by noxfile.py's ``suite020`` and ``zarr_suite`` sessions. A test counts against us when it
fails (or errors) in JUNIT_XML and the allow-list does not name it. With ``--baseline`` (the
interpreter of a venv without our packages) the tests that count against us are run there again,
from ``--root``: those that fail there too are the environment's, not ours. ``--collected`` lists
the node ids that venv collects (``pytest --collect-only -q``): one that did not run with our
packages (their collection broke) counts against us too. An allowed test that did not fail is a
stale entry and fails the check. Prints the counts and every finding.

Allow-list entries: ``test`` (``dotted.classname::name`` as in the junit report), optional
``zarr`` (a version specifier the entry applies to), ``change`` and ``reason``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version


def outcomes(junit: Path) -> dict[str, str]:
    """``{classname::name: "passed" | "failed" | "skipped"}`` of a junit report."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        name = f"{case.get('classname', '')}::{case.get('name')}"
        found[name] = "failed" if tags & {"failure", "error"} else (
            "skipped" if "skipped" in tags else "passed"
        )  # fmt: skip
    return found


def junit_id(node_id: str) -> str:
    """A pytest node id as junit names it: ``tests/a/t.py::C::f[p]`` -> ``tests.a.t.C::f[p]``."""
    path, *classes, name = node_id.split("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *classes]) + f"::{name}"


def node_id(test: str, root: Path) -> str:
    """The inverse of :func:`junit_id`, finding where the module path ends under ``root``."""
    dotted, name = test.split("::", 1)
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        if (root / "/".join(parts[:cut])).with_suffix(".py").is_file():
            return "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])
    raise SystemExit(f"no module of {test!r} under {root}")


def allowed_tests(allowlist: Path) -> dict[str, dict[str, str]]:
    """The allow-list entries that apply to the installed zarr, by test id."""
    entries = tomllib.loads(allowlist.read_text(encoding="utf-8"))["allowed"]
    for entry in entries:
        missing = {"test", "change", "reason"} - set(entry)
        if missing:
            raise SystemExit(f"allow-list entry {entry.get('test')!r} lacks {sorted(missing)}")
    zarr_version = Version(version("zarr"))
    return {e["test"]: e for e in entries if zarr_version in SpecifierSet(e.get("zarr", ""))}


def failing_without_us(python: str, root: Path, tests: list[str], args: list[str]) -> set[str]:
    """Which of ``tests`` fail in the venv of ``python`` too (run from ``root``)."""
    if not tests:
        return set()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "baseline.xml"
        ids = [node_id(t, root) for t in tests]
        command = [python, "-m", "pytest", *args, f"--junitxml={junit}", "-q", *ids]
        subprocess.run(command, cwd=root, check=False)
        return {t for t, o in outcomes(junit).items() if o == "failed"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label")
    parser.add_argument("junit", type=Path)
    parser.add_argument("allowlist", type=Path)
    parser.add_argument("--baseline", help="python of a venv without our packages")
    parser.add_argument("--collected", type=Path, help="node ids that venv collects")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="where the suite runs")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.pytest_args = argv[cut + 1 :]  # pytest options for the baseline reruns

    ours = outcomes(args.junit)
    allowed = allowed_tests(args.allowlist)
    failed = {t for t, o in ours.items() if o == "failed"}
    against = sorted(failed - set(allowed))
    collected = (
        {junit_id(line) for line in args.collected.read_text().splitlines() if "::" in line}
        if args.collected
        else set()
    )
    theirs = set()
    if args.baseline:  # a test only our packages bring (not collected there) is ours alone
        existing = [t for t in against if t in collected] if collected else against
        theirs = failing_without_us(args.baseline, args.root, existing, args.pytest_args)
    unexpected = [t for t in against if t not in theirs]
    vanished = sorted(collected - set(ours))
    stale = sorted(set(allowed) - failed)
    counts = {o: sum(1 for v in ours.values() if v == o) for o in ("passed", "failed", "skipped")}
    print(
        f"{args.label} on zarr {version('zarr')}: {len(ours)} tests, {counts['passed']} passed, "
        f"{len(failed & set(allowed))} allowed failures, {len(theirs)} failing without our "
        f"packages too, {counts['skipped']} skipped, {len(unexpected)} unexpected failures"
        + (f"; {len(collected)} collected without our packages" if collected else "")
    )
    for title, names in (
        ("allowed", sorted(failed & set(allowed))),
        ("fails without our packages too", sorted(theirs)),
        ("FAILED (not in the allow-list)", unexpected),
        ("MISSING (collected without our packages, not run with them)", vanished),
        ("STALE allow-list entry (the test passed or did not run)", stale),
    ):
        for name in names:
            print(f"  {title}: {name}")
    if not ours:
        print("no test ran")
        return 1
    return 1 if unexpected or stale or vanished else 0


if __name__ == "__main__":
    sys.exit(main())
