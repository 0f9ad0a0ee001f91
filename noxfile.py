"""Test, lint, build and compatibility sessions for the packages of this repository.

Bare ``nox`` runs every session except ``demo`` and ``bench``, one after another; CI runs them
two at a time with README.md's test command, ``nox --parallel 2 --allow-parallel``. Useful
selections::

    nox -l                              # list every session
    nox -t tests                        # the (Python, zarr) matrix, nd_arrow, floor
    nox -t tests-3.12                   # every zarr version on Python 3.12
    nox -s "tests(python='3.12', zarr='3.4.0')"   # one cell
    nox -s nd_arrow floor lint build compat020
    nox -s build -- zarr-vlen-ndarray   # build and check one package (what a release runs)
    nox -s install                      # README.md's "From source" lines, in fresh venvs
    nox -s bench -- ARGS                # ARGS reach every benchmarks/bench_*.py script
    nox -R -s lint                      # reuse the existing venv while iterating

The scripts the sessions run inside their venvs live in tools/nox/ (linted and typed like the
packages). Nothing here touches the network at import time: versions resolve when a session runs.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import nox

nox.needs_version = ">=2025.5.1"  # download_python, default=False
nox.options.default_venv_backend = "uv"  # the floor session needs uv's --resolution lowest-direct
nox.options.error_on_missing_interpreters = True
# Only interpreters that exist on the machine count; a missing one is an error, never a download.
nox.options.download_python = "never"

ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / "tools" / "nox"
# dask/distributed run the scale-out tests; duckdb, polars, arro3 and nanoarrow exchange Arrow
# data with nd-arrow; xarray writes/reads ragged Datasets; moto (a local S3 server), s3fs, obstore
# and icechunk carry the store tool's object-store tests.
PYTEST = ("pytest", "pytest-timeout")
ARROW_ENGINES = ("arro3-core", "nanoarrow", "duckdb", "polars")
OBJECT_STORES = ("moto[server]", "s3fs", "obstore", "icechunk")
TEST_DEPS = (
    *PYTEST, "hypothesis", "jsonschema", "xarray", "dask[array]", "distributed", "awkward",
    *ARROW_ENGINES, *OBJECT_STORES,
)  # fmt: skip
# nox: mypy checks this file too; jsonschema: generate.py --check validates the vectors with it.
# import-linter >= 2.17 takes the contracts file as an argument (--config is deprecated).
LINT_DEPS = ("ruff", "mypy", "import-linter>=2.17", "nox", "jsonschema")
IMPORT_CONTRACTS = (".importlinter", "packages/nd-arrow/.importlinter")
# Always the root config (shared addopts, pythonpath, warning filters): without -c, pytest would
# pick packages/<one>/pyproject.toml when only that package's tests are collected. The timeout
# makes a hung test (e.g. a stuck Dask cluster) fail instead of eating CI.
PYTEST_OPTIONS = ("-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", "--timeout=300")
NEWEST = "newest"
# The build session's Python: it runs every package's tests on the newest zarr, from the sdists.
BUILD_PYTHON = "3.12"
# The published 0.2.0 that our codec must stay byte-compatible with (its own, separate venv).
ZVN_020 = "zarr-vlen-ndarray==0.2.0"
# Today's zspy as HyperSpy 2.5 / rosettasciio 0.15 write it (bench_hyperspy's zarr 2 venv; zarr
# 2.18.7 takes numcodecs < 0.16); s3fs carries it to the benchmark's local S3 server.
ZARR2_ZSPY = ("zarr==2.18.7", "numcodecs==0.15.2", "s3fs")
# The zarr release whose own test suite (its sdist's tests/, its pinned "test" group) must not
# change outcome when our packages are installed (zarr_suite). Its deselections, in both venvs:
# zarr's benchmark routines (the slowest tests; test_indexing covers the same reads), and what
# fetches from the network (tests/test_regression runs zarr 2 through `uv run --with`, and
# test_examples.py `uv run` scripts), which fails on this machine with or without us.
ZARR_SUITE = "3.4.2"
ZARR_SUITE_OPTIONS = (
    "-p", "no:cacheprovider", "--ignore=tests/benchmarks", "--ignore=tests/test_regression",
    "--ignore=tests/test_examples.py",
    # The flush below imports zarr before pytest can mark zarr.testing (its pytest11 plug-in)
    # for assertion rewriting: only assertion messages change, not outcomes.
    "-W", "ignore::pytest.PytestAssertRewriteWarning",
)  # fmt: skip
# In both zarr_suite venvs every interpreter starts with one data-type look-up, which registers
# the installed data-type plug-ins: zarr's tests/test_dtype/conftest.py loops over the registry
# while looking types up, which breaks on the dict growing once any plug-in is installed (the
# README of zarr-ndarray-dtype, "Loops over zarr's data-type registry"). Spawned workers need it
# too, hence a .pth file rather than a pytest plug-in.
REGISTRY_FLUSH_PTH = 'import zarr.dtype; zarr.dtype.data_type_registry.get("bool")\n'
ZARR_SUITE_ALLOWLIST = ROOT / "packages/ndarray-dtype/tests/compat/zarr_suite_allowlist.toml"
COMPAT_DIR = ROOT / "packages/vlen-ndarray-codec/tests/compat"
# HyperSpy's zspy stores, written by HyperSpy itself: the releases the stores come from, and
# zarr 2 in a venv of their own (zarr 2.18.7 takes numcodecs < 0.16).
HYPERSPY = ("hyperspy==2.5.0", "rosettasciio{}==0.15.0")
ZARR2 = ("zarr==2.18.7", "numcodecs==0.15.2")
ZSPY_STORES = ROOT / "packages/ndarray-tool/tests/hyperspy/zspy_stores.py"
WORKED_EXAMPLE = "## Worked example: a HyperSpy-shaped scan"  # README.md's section
# zarr's other codec pipeline (zarr >= 3.3); the newest-zarr cells rerun the zarr-facing tests
# under it when the installed zarr has it.
FUSED_PIPELINE = "zarr.core.codec_pipeline.FusedCodecPipeline"
# The codec's framing kernel the tests must find: "c" where it was compiled (a kernel that
# silently failed to build fails the tests), "python" where the fallback is forced.
EXPECT_KERNEL = {"ZARR_VLEN_NDARRAY_EXPECT_BACKEND": "c"}
FORCE_FALLBACK = {
    "ZARR_VLEN_NDARRAY_NO_EXTENSION": "1",
    "ZARR_VLEN_NDARRAY_EXPECT_BACKEND": "python",
}
# What the build session hides to show that the compiled package's sdist installs without a
# compiler (on its pure-Python kernel).
NO_COMPILER = {"CC": "false", "CXX": "false"}


@dataclass(frozen=True)
class Package:
    folder: str
    dist: str
    module: str
    # "group name" -> "module:attr" for every zarr.* entry point the wheel must declare
    # ("" accepts any target: it is the package author's choice).
    entry_points: dict[str, str] = field(default_factory=dict)
    # Sibling packages that must be installed from the local build (not on PyPI yet).
    local_deps: tuple[Package, ...] = ()
    forbids_zarr: bool = False
    # Its tests exercise zarr's codec pipeline (rerun under FUSED_PIPELINE).
    zarr_facing: bool = True
    # Extras whose dependencies the floor session also installs at their floors ("[xarray]").
    floor_extras: str = ""
    # Ships an optional C extension (abi3 wheel; its sdist must install without a compiler).
    compiled: bool = False
    # Console scripts the wheel must declare.
    scripts: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return f"packages/{self.folder}"

    @property
    def tests(self) -> str:
        return f"{self.path}/tests"


DTYPE = Package(
    "ndarray-dtype", "zarr-ndarray-dtype", "zarr_ndarray_dtype",
    entry_points={"zarr.data_type ndarray": "zarr_ndarray_dtype:NDArrayDType"},
    floor_extras="[dask,awkward]",
)  # fmt: skip
CODEC = Package(
    "vlen-ndarray-codec", "zarr-vlen-ndarray", "zarr_vlen_ndarray",
    entry_points={"zarr.codecs vlen-ndarray": ""}, local_deps=(DTYPE,), compiled=True,
)  # fmt: skip
RAGGED = Package(
    "ragged-ndarray-codec", "zarr-ragged-ndarray", "zarr_ragged_ndarray",
    entry_points={"zarr.codecs ragged-ndarray": ""}, local_deps=(DTYPE,),
)  # fmt: skip
ND_ARROW = Package(
    "nd-arrow", "nd-arrow", "nd_arrow",
    forbids_zarr=True, zarr_facing=False, floor_extras="[xarray,examples]",
)  # fmt: skip
TOOL = Package(
    "ndarray-tool", "zarr-ndarray-tool", "zarr_ndarray_tool",
    # nd-arrow: the [export] extra, so that the sdist's export tests run too
    local_deps=(DTYPE, CODEC, RAGGED, ND_ARROW), floor_extras="[export]",
    scripts=("zarr-ndarray",),
)  # fmt: skip
PACKAGES = (DTYPE, CODEC, RAGGED, ND_ARROW, TOOL)  # bottom layer first
EDITABLES = [arg for p in PACKAGES for arg in ("-e", p.path)]
REPORTED = ("zarr", "numcodecs", "numpy", "pyarrow", *(p.dist for p in PACKAGES))


def print_versions(session: nox.Session, python: str | Path = "python", *more: str) -> None:
    """Print the resolved versions of Python and the libraries that matter here (and ``more``)."""
    session.run(python, TOOLS / "print_versions.py", *REPORTED, *more, external=True)


def probe(session: nox.Session, question: str, python: str | Path = "python") -> str:
    """tools/nox/probe.py's answer about the venv of python (the session's by default)."""
    answer = session.run(python, TOOLS / "probe.py", question, silent=True, external=True)
    return str(answer).strip()


def run_pytest(
    session: nox.Session,
    *test_dirs: str,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> None:
    """Run pytest (with options) over the given test folders; "no tests collected" (exit 5)
    fails the session.

    Posargs reach pytest; if they name a test path, only what they name runs.
    """
    if any(Path(arg.split("::")[0]).exists() for arg in session.posargs):
        test_dirs = ()
    session.run("pytest", *PYTEST_OPTIONS, *options, *test_dirs, *session.posargs, env=env)


def fetch_sdist(session: nox.Session, requirement: str, work: Path) -> str:
    """Unpack requirement's sdist (which holds its tests) in work; the unpacked folder."""
    out = session.run("python", TOOLS / "fetch_sdist.py", requirement, work, silent=True)
    return str(out).strip().splitlines()[-1]


def uv(session: nox.Session, *args: str | Path, **env: str) -> None:
    session.run("uv", *args, external=True, env={"UV_PYTHON_DOWNLOADS": "never", **env})


def venv(session: nox.Session, location: Path, *install: str | Path, **env: str) -> Path:
    """A fresh venv at location with the session's interpreter and install; return its python."""
    shutil.rmtree(location, ignore_errors=True)
    uv(session, "venv", "--quiet", "--python", Path(session.bin, "python"), location)
    python = location / "bin" / "python"
    uv(session, "pip", "install", "--python", python, *install, **env)
    return python


def built(work: Path, package: Package) -> tuple[Path, Path]:
    """The sdist and the wheel uv built for package (exactly one of each)."""
    (sdist,) = (work / package.folder).glob("*.tar.gz")
    (wheel,) = (work / package.folder).glob("*.whl")
    return sdist, wheel


@nox.session(python=BUILD_PYTHON)
def build(session: nox.Session) -> None:
    """Build sdists+wheels; check each wheel alone in a fresh venv; run the sdist's tests on it.

    ``nox -s build -- zarr-vlen-ndarray`` limits it to the named packages. The checked sdist and
    wheel of each selected package end up in ./dist/. The release workflows in
    .github/workflows/ run exactly this session for their package.
    """
    tmp = Path(session.create_tmp()).resolve()
    work = tmp / "dist"
    shutil.rmtree(work, ignore_errors=True)
    by_name = {key: p for p in PACKAGES for key in (p.dist, p.folder)}
    if unknown := [arg for arg in session.posargs if arg not in by_name]:
        session.error(f"unknown package(s) {unknown}; choose from {[p.dist for p in PACKAGES]}")
    chosen = [by_name[arg] for arg in session.posargs] or PACKAGES
    selected = [p for p in PACKAGES if p in chosen]
    # Local dependencies are built too and installed from here: they are not on PyPI yet.
    needed = [*selected, *(dep for p in selected for dep in p.local_deps)]
    for package in (p for p in PACKAGES if p in needed):
        # uv builds the sdist first and the wheel from it, which proves the sdist is complete.
        uv(session, "build", "--out-dir", work / package.folder, package.path)
        siblings = [p.module for p in PACKAGES if p is not package]
        archives = built(work, package)
        session.run("python", TOOLS / "check_archives.py", *archives, package.module, *siblings)
    failed = []  # packages whose tests fail from their sdist: all are tried, then reported
    for package in selected:
        sdist, wheel = built(work, package)
        local_wheels = [built(work, dep)[1] for dep in package.local_deps]
        python = venv(session, tmp / f"venv-{package.folder}", wheel, *local_wheels)
        print_versions(session, python)
        session.run(
            python, TOOLS / "check_installed_wheel.py", package.dist, package.module,
            json.dumps(package.entry_points), *(["--forbids-zarr"] if package.forbids_zarr else []),
            *(arg for script in package.scripts for arg in ("--script", script)), external=True,
        )  # fmt: skip
        if package.compiled:
            # The release wheels (one per platform) come from cibuildwheel in the release
            # workflow; here the same build must give an abi3 wheel that loads its C kernel, and
            # the sdist must install with $CC set to ``false``, on the pure-Python kernel.
            if "-cp311-abi3-" not in wheel.name:
                session.error(f"{wheel.name}: expected a stable-ABI (cp311-abi3) wheel")
            session.run(python, TOOLS / "check_kernel.py", "c", external=True)
            session.log(f"{package.dist}: the sdist installs without a C compiler (CC=false)")
            bare = tmp / f"venv-{package.folder}-no-compiler"
            bare_python = venv(session, bare, "--no-cache", sdist, *local_wheels, **NO_COMPILER)
            session.run(bare_python, TOOLS / "check_kernel.py", "python", external=True)
        uv(session, "pip", "install", "--python", python, *TEST_DEPS)
        try:
            session.run(python, TOOLS / "test_sdist.py", sdist, *PYTEST_OPTIONS, external=True)
        except nox.command.CommandFailed:
            failed.append(package.dist)
    if failed:
        session.error(f"tests fail when run from the sdist of: {', '.join(failed)}")
    out = ROOT / "dist"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for package in selected:
        for archive in built(work, package):
            shutil.copy2(archive, out)
        version = built(work, package)[1].name.split("-")[1]
        session.log(f"built and checked {package.dist} {version} -> dist/")


@nox.session(python="3.12", tags=["tests"])
def zarr_suite(session: nox.Session) -> None:
    """zarr's own test suite with all our packages installed, judged against a venv without.

    Both venvs hold zarr ZARR_SUITE and the test group its sdist pins. The suite runs in this
    one (with our packages, their hooks and entry points); a test that fails here fails the
    session unless zarr_suite_allowlist.toml names it with its reason or it fails in the venv
    without our packages too (rerun there), and so does a test that venv collects but that did
    not run here.
    """
    tmp = Path(session.create_tmp()).resolve()
    session.install("pip")
    source = Path(fetch_sdist(session, f"zarr=={ZARR_SUITE}", tmp / "zarr-sdist"))
    pyproject = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))
    suite = (f"zarr=={ZARR_SUITE}", *pyproject["dependency-groups"]["test"])
    session.install(*EDITABLES, *suite)
    bare = venv(session, tmp / "venv-without", *suite)
    ours = Path(session.bin, "python")
    for python in (bare, ours):
        print_versions(session, python)
        purelib = probe(session, "purelib", python)
        Path(purelib, "zz_zarr_registry_flush.pth").write_text(REGISTRY_FLUSH_PTH)
    collected, junit = tmp / "collected-without.txt", tmp / "junit-with.xml"
    profile = {"HYPOTHESIS_PROFILE": "ci"}  # zarr's CI profile: derandomized, as in its CI
    with session.chdir(source):
        ids = session.run(
            bare, "-m", "pytest", "--collect-only", "-q", *ZARR_SUITE_OPTIONS, "tests",
            silent=True, external=True, env=profile,
        )  # fmt: skip
        collected.write_text(str(ids), encoding="utf-8")
        session.run(
            "python", "-m", "pytest", "-n", "2", "-q", f"--junitxml={junit}",
            *ZARR_SUITE_OPTIONS, "tests", env=profile, success_codes=[0, 1],
        )  # fmt: skip
        session.run(
            "python", TOOLS / "suite_check.py", f"zarr {ZARR_SUITE}'s own suite", junit,
            ZARR_SUITE_ALLOWLIST, "--baseline", bare, "--collected", collected,
            "--root", source, "--", *ZARR_SUITE_OPTIONS, env=profile,
        )  # fmt: skip


@nox.session(python="3.11", tags=["tests"])
def floor(session: nox.Session) -> None:
    """Python 3.11 with every dependency our packages declare (extras too) at its floor.

    The floors come from the packages' own metadata: uv's lowest-direct resolution picks the
    lowest version each package allows, then tools/nox/check_floors.py proves each was reached
    and pins what is installed. The test tools are added afterwards, constrained to those pins.
    """
    floors = [arg for p in PACKAGES for arg in ("-e", p.path + p.floor_extras)]
    session.install("--resolution", "lowest-direct", *floors)
    pins = Path(session.create_tmp()).resolve() / "floor-constraints.txt"
    ours = [p.dist + p.floor_extras for p in PACKAGES]
    session.run("python", TOOLS / "check_floors.py", "--pin", pins, *ours)
    # The object-store clients cannot join the floor set (moto needs a python-dateutil the floor
    # xarray's pandas excludes); their tests skip here and run in every matrix cell.
    session.install("-c", str(pins), *(d for d in TEST_DEPS if d not in OBJECT_STORES))
    print_versions(session)
    run_pytest(session, *(p.tests for p in PACKAGES), env=EXPECT_KERNEL)


# (Python, zarr) cells. "3.m.0" is the first release of a minor, "3.m.*" its latest patch and
# "newest" whatever the index serves today (possibly a minor newer than listed here). Each zarr
# release is tested once per end of the Python range it supports, and no (Python, zarr) pair
# twice: zarr 3.1 (zarr >= 3.2 needs Python >= 3.12) runs its latest patch on 3.11 and 3.1.0 on
# 3.13 (3.1.0 on 3.11 is the floor session's pair), the later minors on 3.12, the newest on 3.13
# and, from the sdists, in the build session on 3.12 (BUILD_PYTHON).
ZARR_MINORS = ("3.1", "3.2", "3.3", "3.4")
MATRIX = {
    "3.11": ["3.1.*"],
    "3.12": [v for m in ZARR_MINORS[1:] for v in (f"{m}.0", f"{m}.*")],
    "3.13": ["3.1.0", NEWEST],  # 3.1.0 is the oldest zarr that installs and passes on 3.13
}
# The slow tier (pytest -m slow: README examples, subprocesses, Dask clusters, the command line,
# object-store endpoints) runs once per Python: in the floor session (3.11), from the sdists in
# the build session (3.12, the newest zarr) and in the newest cell (3.13); the other cells run
# the rest. The newest cell also reruns the codec's tests on the framing kernel's pure-Python
# fallback and the zarr-facing tests under zarr's FusedCodecPipeline.
NEWEST_CELL = ("3.13", NEWEST)
NOT_SLOW = ("-m", "not slow")


def same_release(session: nox.Session, spec: str) -> str | None:
    """The other session that tests the very release ``3.m.*`` resolved to, on this Python.

    ``3.m.*`` duplicates ``3.m.0`` while a minor has no patch release, and on BUILD_PYTHON the
    build session (every package's tests from its sdist, on the newest zarr) while ``3.m`` is the
    newest minor; CI then runs that release once, not twice.
    """
    resolved = probe(session, "zarr-version")
    if resolved == spec.replace("*", "0"):
        return f"the cell zarr={spec.replace('*', '0')!r}"
    if str(session.python) == BUILD_PYTHON and resolved == probe(session, "newest-zarr"):
        return "the build session (the newest zarr, every package's tests from its sdist)"
    return None


def _cells() -> list[tuple[str, str]]:
    """The matrix, the newest cell first (the longest sessions start first under --parallel)."""
    rest = [(py, z) for py, specs in MATRIX.items() for z in specs if (py, z) != NEWEST_CELL]
    return [NEWEST_CELL, *rest]


@nox.session(tags=["tests"])
@nox.parametrize(("python", "zarr"), [nox.param(py, z, tags=[f"tests-{py}"]) for py, z in _cells()])
def tests(session: nox.Session, zarr: str) -> None:
    """Every package's tests at one (Python, zarr) cell; the slow tier only in the newest."""
    session.install(*EDITABLES, "zarr" if zarr == NEWEST else f"zarr=={zarr}", *TEST_DEPS)
    print_versions(session)
    if zarr.endswith(".*") and (same := same_release(session, zarr)):
        session.log(f"zarr {zarr} resolves to the release {same} tests: skipped")
        return
    newest = (str(session.python), zarr) == NEWEST_CELL
    tier = () if newest else NOT_SLOW
    run_pytest(session, *(p.tests for p in PACKAGES), options=tier, env=EXPECT_KERNEL)
    if not newest:
        return

    if probe(session, "vlen-backend") == "python":
        session.log("codec framing runs on its Python fallback already: no second run")
    else:
        session.log("rerun the codec tests on the Python fallback of the framing kernel")
        run_pytest(session, CODEC.tests, options=NOT_SLOW, env=FORCE_FALLBACK)
    if probe(session, "fused-pipeline") == "no":
        session.log(f"this zarr has no {FUSED_PIPELINE}: no second pipeline to test")
    else:
        session.log(f"rerun the zarr-facing tests under {FUSED_PIPELINE}")
        zarr_facing = [p.tests for p in PACKAGES if p.zarr_facing]
        fused = {"ZARR_CODEC_PIPELINE__PATH": FUSED_PIPELINE, **EXPECT_KERNEL}
        run_pytest(session, *zarr_facing, options=NOT_SLOW, env=fused)


# zarrs-python's Rust codec pipeline, strict (never falling back to zarr's): the engine reads
# and writes ndarray chunks without any pipeline, and their arrays get zarr's own.
ZARRS_PIPELINE = {
    "ZARR_CODEC_PIPELINE__PATH": "zarrs.ZarrsCodecPipeline",
    "ZARR_CODEC_PIPELINE__STRICT": "true",
}


@nox.session(python=max(MATRIX), tags=["tests"])
def zarrs(session: nox.Session) -> None:
    """The data type's and the codecs' tests under zarrs-python's pipeline in strict mode, on the
    newest zarr; tests that create plain arrays zarrs cannot serve (vlen-bytes: ``plain_zarr``)
    are left out (the store tool's, which upgrade such arrays: its test_pipelines runs its
    commands under every pipeline). Skipped where no zarrs wheel installs (it is compiled)."""
    session.install(*EDITABLES, "zarr", *TEST_DEPS)
    try:
        session.install("zarrs")
    except nox.command.CommandFailed:
        session.skip("zarrs has no wheel that installs on this machine")
    print_versions(session, "python", "zarrs")
    zarr_facing = [*(p.tests for p in (DTYPE, CODEC, RAGGED)), f"{TOOL.tests}/test_pipelines.py"]
    options = ("-m", "not slow and not plain_zarr")
    run_pytest(session, *zarr_facing, options=options, env={**ZARRS_PIPELINE, **EXPECT_KERNEL})


def declared_floor(package: Package, dist: str) -> str:
    """``"pyarrow==18"`` for a package that declares ``pyarrow>=18``: its floor, pinned."""
    metadata = tomllib.loads((ROOT / package.path / "pyproject.toml").read_text(encoding="utf-8"))
    for requirement in metadata["project"]["dependencies"]:
        name, sep, floor = requirement.partition(">=")
        if sep and name.strip() == dist:
            return f"{dist}=={floor.strip()}"
    raise LookupError(f"{package.path}/pyproject.toml declares no {dist}>= floor")


@nox.session(tags=["tests"])
@nox.parametrize("python", [min(MATRIX), max(MATRIX)])
def nd_arrow(session: nox.Session) -> None:
    """nd-arrow alone: no zarr in the venv, pyarrow at its declared floor, oldest and newest Python.

    Every tests cell runs nd-arrow's tests on the newest pyarrow too, beside zarr.
    """
    pin = declared_floor(ND_ARROW, "pyarrow")
    session.install("-e", ND_ARROW.path, pin, *PYTEST, "hypothesis", "xarray", *ARROW_ENGINES)
    print_versions(session)
    session.run("python", TOOLS / "assert_no_zarr.py")
    run_pytest(session, ND_ARROW.tests)


@nox.session(python="3.12", tags=["tests"])
@nox.parametrize("zarr", [NEWEST, "3.1.0"])
def suite020(session: nox.Session, zarr: str) -> None:
    """The published zarr-vlen-ndarray 0.2.0's own tests (from its sdist) against our packages.

    Every test must pass except those in tests/compat/suite020_allowlist.toml (deliberate
    changes, with reasons); an allowed test that passes fails the session too (stale entry).
    Then 0.2.0's public surface is dumped in its own venv and compared with ours.
    """
    session.install(*EDITABLES, "zarr" if zarr == NEWEST else f"zarr=={zarr}", *PYTEST, "pip")
    print_versions(session)
    tmp = Path(session.create_tmp()).resolve()
    junit, dumped = tmp / "junit.xml", tmp / "api020.json"
    sdist = Path(fetch_sdist(session, ZVN_020, tmp / "suite020"))
    # Only its tests/, under 0.2.0's own (empty) pytest settings, so it imports OUR packages.
    run = tmp / "suite020-run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(sdist / "tests", run / "tests")
    (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    session.run(
        "pytest", "-c", run / "pytest.ini", "--rootdir", run, "-p", "no:cacheprovider",
        "--timeout=300", f"--junitxml={junit}", "-q", run / "tests", success_codes=[0, 1],
    )  # fmt: skip
    allowlist = COMPAT_DIR / "suite020_allowlist.toml"
    session.run(
        "python", TOOLS / "suite_check.py", "zarr-vlen-ndarray 0.2.0 suite", junit, allowlist
    )
    zarr_pin = f"zarr=={probe(session, 'zarr-version')}"
    old_python = venv(session, tmp / "venv-zvn020", ZVN_020, zarr_pin)
    api_script = COMPAT_DIR / "api_surface.py"
    session.run(old_python, api_script, "dump", dumped, external=True)
    session.run("python", api_script, "compare", dumped)
    pinned = COMPAT_DIR / "api020.json"
    if zarr == NEWEST and json.loads(dumped.read_text()) != json.loads(pinned.read_text()):
        session.error(f"{pinned} differs from the fresh dump {dumped}")


@nox.session(python="3.12")
def lint(session: nox.Session) -> None:
    """ruff, mypy (root config) on every package and tools/nox, and import-linter contracts."""
    session.install(*EDITABLES, *LINT_DEPS)
    print_versions(session)
    session.run("ruff", "--version")
    mypy = ("mypy", "--config-file", "pyproject.toml")
    checks = [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        *((*mypy, f"{p.path}/src") for p in PACKAGES),
        (*mypy, "noxfile.py", "tools/nox"),
        ("python", "registry/examples/generate.py", "--check"),  # vectors and their copies
        ("python", "tools/nox/check_readme.py"),  # README's session names and test command
        *(("lint-imports", contracts) for contracts in IMPORT_CONTRACTS),
    ]
    failed = []
    for command in checks:  # run every check, then fail with the list of those that failed
        try:
            session.run(*command)
        except nox.command.CommandFailed:
            failed.append(" ".join(command))
    if failed:
        session.error("failed: " + "; ".join(failed))


@nox.session(python="3.12", tags=["tests"])
def hyperspy(session: nox.Session) -> None:
    """HyperSpy's own zspy stores upgraded whole to Zarr v3 by the store tool, and back.

    HyperSpy with zarr 2 (a venv of their own) saves ragged signals: 1-, 2- and 3-d navigation,
    several dtypes and trailing shapes, eagerly and lazily from dask, with strings in their
    metadata. Here (the newest zarr, our packages and HyperSpy): ``zarr-ndarray upgrade`` turns
    each store into Zarr v3; zarr.open_group(zarr_format=3) reads every array, the signal equal
    to what HyperSpy was given, and HyperSpy reads the upgraded store equal too;
    ``zarr-ndarray downgrade`` restores every file byte for byte, and HyperSpy with zarr 2 reads
    the stores again (tests/hyperspy/zspy_stores.py). Then README.md's worked example runs, and
    upgrades a store HyperSpy saved for it.
    """
    hyperspy = (HYPERSPY[0], HYPERSPY[1].format(""))
    session.install(*EDITABLES, "zarr", *hyperspy, "xarray")
    print_versions(session, "python", "hyperspy", "rosettasciio")
    tmp = Path(session.create_tmp()).resolve()
    zarr2 = venv(session, tmp / "venv-zarr2", HYPERSPY[0], HYPERSPY[1].format("[zspy]"), *ZARR2)
    print_versions(session, zarr2, "hyperspy", "rosettasciio")
    stores, original = tmp / "stores", tmp / "original"
    for folder in (stores, original):
        shutil.rmtree(folder, ignore_errors=True)
    session.run(zarr2, ZSPY_STORES, "write", stores, external=True)
    shutil.copytree(stores, original)
    for store in sorted(stores.glob("*.zspy")):
        session.run("zarr-ndarray", "upgrade", "-q", store)
    session.run("python", ZSPY_STORES, "v3", stores)
    session.run("python", ZSPY_STORES, "read", stores)  # HyperSpy on zarr 3 with our packages
    for store in sorted(stores.glob("*.zspy")):
        session.run("zarr-ndarray", "downgrade", "-q", store)
    session.run("python", ZSPY_STORES, "same", stores, original)
    session.run(zarr2, ZSPY_STORES, "read", stores, external=True)
    # The README's worked example, beside a store HyperSpy saved for it to upgrade.
    example = tmp / "example"
    shutil.rmtree(example, ignore_errors=True)
    example.mkdir()
    session.run(zarr2, ZSPY_STORES, "example", example, external=True)
    session.run("python", TOOLS / "run_readme.py", ROOT / "README.md", WORKED_EXAMPLE, example)


@nox.session(python="3.12")
def compat020(session: nox.Session) -> None:
    """Round trip between the published zarr-vlen-ndarray 0.2.0 (venv A) and ours (venv B).

    A writes OLD, B writes NEW, A checks NEW, B checks OLD. Both venvs use the same zarr.
    """
    tmp = Path(session.create_tmp()).resolve()
    python_b = venv(session, tmp / "venv-ours", *EDITABLES)
    # Venv A is the session venv: the published 0.2.0 with the very same zarr release.
    session.install(ZVN_020, f"zarr=={probe(session, 'zarr-version', python_b)}")
    session.log("venv A (zarr-vlen-ndarray 0.2.0):")
    print_versions(session)
    session.log("venv B (this repository):")
    print_versions(session, python_b)
    old, new = tmp / "written-by-020", tmp / "written-by-ours"
    for folder in (old, new):
        shutil.rmtree(folder, ignore_errors=True)
    script = COMPAT_DIR / "compat_020.py"
    session.run("python", script, "write", old)
    session.run(python_b, script, "write", new, external=True)
    session.run("python", script, "check", new)
    session.run(python_b, script, "check", old, external=True)


@nox.session(python="3.12", default=False)
def bench(session: nox.Session) -> None:
    """Run every benchmarks/bench_*.py (sorted) with posargs; 0.2.0's python is $ZVN020_PYTHON,
    zarr 2's (bench_hyperspy) $ZARR2_PYTHON."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    if not scripts:
        session.error("no benchmarks/bench_*.py scripts to run")
    # ndarrow: nd-arrow's peer; moto + obstore: workloads (z) and (h) on a local S3 server.
    session.install(*EDITABLES, "ndarrow", "psutil", "moto[server]", "obstore")
    print_versions(session)
    # 0.2.0 in its own venv, with the very same zarr release.
    zarr_pin = f"zarr=={probe(session, 'zarr-version')}"
    tmp = Path(session.create_tmp()).resolve()
    zvn020_python = venv(session, tmp / "venv-zvn020", ZVN_020, zarr_pin)
    print_versions(session, zvn020_python)
    zarr2_python = venv(session, tmp / "venv-zarr2", *ZARR2_ZSPY)
    print_versions(session, zarr2_python)
    env = {"ZVN020_PYTHON": str(zvn020_python), "ZARR2_PYTHON": str(zarr2_python)}
    for script in scripts:
        session.run("python", script, *session.posargs, env=env)


FROM_SOURCE = "### From source"  # README.md's section whose sh block the install session runs


def from_source_lines(readme: Path) -> list[str]:
    """The command lines of the first ``sh`` block under README.md's :data:`FROM_SOURCE`."""
    text = readme.read_text(encoding="utf-8")
    block = text[text.index(FROM_SOURCE + "\n") :].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


@nox.session(python="3.12")
def install(session: nox.Session) -> None:
    """README.md's "From source" lines, each run as written (pip) in a fresh venv at the root.

    Each package alone (with the sibling packages its line names) and all five together must
    install from this checkout, import, and run their console script
    (tools/nox/check_source_install.py); each package's README must hold its own line. The
    worked example runs in the venv of the last line (all five, with the extras it uses).
    """
    tmp = Path(session.create_tmp()).resolve()
    lines = from_source_lines(ROOT / "README.md")
    alone = set()
    for i, line in enumerate(lines):
        args = shlex.split(line, comments=True)
        if args[:4] != ["python", "-m", "pip", "install"] or not args[4:]:
            session.error(f"README.md, {FROM_SOURCE!r}: {line!r} is not `python -m pip install`")
        packages = args[4:]
        location = tmp / f"venv-{i}"
        shutil.rmtree(location, ignore_errors=True)
        uv(session, "venv", "--quiet", "--seed", "--python", Path(session.bin, "python"), location)
        python = location / "bin" / "python"
        session.log(f"fresh venv: {line}")
        with session.chdir(ROOT):
            session.run(python, "-m", "pip", "install", *packages, external=True)
        session.run(python, TOOLS / "check_source_install.py", ROOT, *packages, external=True)
        folder = packages[-1].removeprefix("./packages/").split("[")[0]  # the package, last
        alone.add(folder)
        readme = ROOT / "packages" / folder / "README.md"
        commands = {
            r.split("#", 1)[0].strip() for r in readme.read_text(encoding="utf-8").splitlines()
        }
        if (command := line.split("#", 1)[0].strip()) not in commands:
            session.error(f"{readme.relative_to(ROOT)} does not hold its line: {command}")
    if missing := {p.folder for p in PACKAGES} - alone:
        session.error(f"README.md, {FROM_SOURCE!r}: no line installs {sorted(missing)}")
    example = tmp / "example"  # an empty folder: no HyperSpy store beside it
    shutil.rmtree(example, ignore_errors=True)
    example.mkdir()
    session.run(python, TOOLS / "run_readme.py", ROOT / "README.md", WORKED_EXAMPLE, example,
                external=True)  # fmt: skip


# No pinned interpreter: the demo runs on the Python that runs nox (any of 3.11-3.13), so the
# README's demo command works on a fresh machine with a single Python and pip.
@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """End-to-end demo of the packages: examples/demo.py (its --help lists the options).

    It writes to a temporary folder that it removes; ``nox -s demo -- --out DIR`` keeps the store
    and the Parquet files in DIR.
    """
    session.install(*EDITABLES, "pyarrow", "xarray")
    print_versions(session)
    session.run("python", ROOT / "examples/demo.py", *session.posargs)
