"""Test, lint, build and compatibility sessions for the three packages of this repository.

Bare ``nox`` runs every session except ``demo`` and ``bench``. Useful selections::

    nox -l                                  # list every session
    nox -t tests                            # the whole (Python, zarr) matrix
    nox -s tests-3.12                       # every zarr version on Python 3.12
    nox -s "tests-3.12(zarr='3.4.0')"       # one pair
    nox -s nd_arrow floor lint build compat020
    nox -s build -- zarr-vlen-ndarray       # build and check one package (what a release runs)
    nox -s bench -- ARGS                    # ARGS reach every benchmarks/bench_*.py script
    nox -R -s lint                          # reuse the existing venv while iterating

Nothing here touches the network at import time: versions are resolved when a session runs.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nox

nox.needs_version = ">=2025.5.1"  # download_python, default=False
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = True
# Only interpreters that exist on the machine count; a missing one is an error, never a download.
nox.options.download_python = "never"
nox.options.sessions = [
    "tests-3.11",
    "tests-3.12",
    "tests-3.13",
    "nd_arrow",
    "floor",
    "lint",
    "build",
    "compat020",
    "suite020",
]

ROOT = Path(__file__).resolve().parent
PYTHONS = ("3.11", "3.12", "3.13")
# dask/distributed run the scale-out tests; duckdb and polars read our Parquet as plain structs;
# xarray runs zarr_ndarray_dtype.xarray's tests (they skip below its floor, e.g. in `floor`).
TEST_DEPS = (
    "pytest",
    "pytest-timeout",
    "hypothesis",
    "jsonschema",
    "dask[array]",
    "distributed",
    "duckdb",
    "polars",
    "xarray",
    # the store tool on object stores: a local S3 server, both S3 clients, icechunk
    "moto[server]",
    "s3fs",
    "obstore",
    "icechunk",
)
NEWEST = "newest"
# The published 0.2.0 that our codec must stay byte-compatible with (its own, separate venv).
ZVN_020 = "zarr-vlen-ndarray==0.2.0"
COMPAT_SCRIPT = ROOT / "packages/vlen-ndarray-codec/tests/compat/compat_020.py"
COMPAT_DIR = COMPAT_SCRIPT.parent


@dataclass(frozen=True)
class Package:
    folder: str
    dist: str
    module: str
    # (group, name) -> "module:attr" for every zarr.* entry point the wheel must declare.
    entry_points: dict[tuple[str, str], str] = field(default_factory=dict)
    # Sibling distributions that must be found next to this one (not on PyPI yet).
    local_deps: tuple[str, ...] = ()
    forbids_zarr: bool = False
    # Ships an optional C extension: platform wheels, and an sdist that installs without a compiler.
    compiled: bool = False

    @property
    def path(self) -> str:
        return f"packages/{self.folder}"


DTYPE = Package(
    "ndarray-dtype",
    "zarr-ndarray-dtype",
    "zarr_ndarray_dtype",
    entry_points={("zarr.data_type", "ndarray"): "zarr_ndarray_dtype:NDArray"},
)
CODEC = Package(
    "vlen-ndarray-codec",
    "zarr-vlen-ndarray",
    "zarr_vlen_ndarray",
    # The target is the codec engineer's choice; the name must equal the codec name in metadata.
    entry_points={("zarr.codecs", "vlen-ndarray"): ""},
    local_deps=("zarr-ndarray-dtype",),
    compiled=True,
)
RAGGED = Package(
    "ragged-ndarray-codec",
    "zarr-ragged-ndarray",
    "zarr_ragged_ndarray",
    entry_points={
        ("zarr.codecs", "ragged-ndarray"): "zarr_ragged_ndarray.codec:RaggedNDArrayCodec",
    },
    local_deps=("zarr-ndarray-dtype",),
)
ND_ARROW = Package("nd-arrow", "nd-arrow", "nd_arrow", forbids_zarr=True)
PACKAGES = (DTYPE, CODEC, RAGGED, ND_ARROW)

# Printed at the start of every session that installs something: what the resolver really picked.
_PRINT_VERSIONS = """
import importlib.metadata as md, platform, sys
print(f"{'python':<20}{platform.python_version()}  ({sys.executable})")
for name in sys.argv[1:]:
    try:
        version = md.version(name)
    except md.PackageNotFoundError:
        version = "-- not installed --"
    print(f"{name:<20}{version}")
"""
_REPORTED = ("zarr", "numcodecs", "numpy", "pyarrow", *(p.dist for p in PACKAGES))

_ASSERT_NO_ZARR = """
import importlib.util, sys
if importlib.util.find_spec("zarr") is not None:
    sys.exit(f"zarr is importable from {sys.prefix}, but nd-arrow must work without it")
print("ok: zarr is not importable")
"""


# --------------------------------------------------------------------------------- helpers


def print_versions(session: nox.Session, python: str = "python") -> None:
    """Print the resolved versions of Python and the libraries that matter here."""
    script = script_file(session, "print_versions.py", _PRINT_VERSIONS)
    session.run(python, script, *_REPORTED, external=True)


def install_ours(
    session: nox.Session, *requirements: str, packages: tuple[Package, ...] = PACKAGES
) -> None:
    """Install our packages (editable) and extra requirements in one resolver run."""
    editables = [arg for p in packages for arg in ("-e", p.path)]
    session.install(*editables, *requirements)


def zarr_requirement(spec: str) -> str:
    """``'3.4.0'`` -> exactly that release, ``'3.4.*'`` -> its latest patch, newest -> unpinned."""
    return "zarr" if spec == NEWEST else f"zarr=={spec}"


def pyarrow_requirement(spec: str) -> str:
    return "pyarrow" if spec == NEWEST else f"pyarrow=={spec}"


PYTEST_TIMEOUT_S = 300
# zarr-vlen-ndarray's framing kernel: the tests fail unless BACKEND is the expected one, so a kernel
# that silently failed to build cannot pass for a tested one; NO_EXTENSION forces the fallback.
EXPECT_KERNEL = {"ZARR_VLEN_NDARRAY_EXPECT_BACKEND": "c"}
FALLBACK_KERNEL = {
    "ZARR_VLEN_NDARRAY_NO_EXTENSION": "1",
    "ZARR_VLEN_NDARRAY_EXPECT_BACKEND": "python",
}


def run_pytest(session: nox.Session, *test_dirs: str, env: dict[str, str] | None = None) -> None:
    """Run pytest over the given test folders; "no tests collected" (exit 5) fails the session."""
    missing = [d for d in test_dirs if not (ROOT / d).is_dir()]
    if missing:
        session.error(f"test folder(s) missing: {', '.join(missing)}")
    # Always the root config (shared addopts, pythonpath, warning filters): without -c, pytest
    # would pick packages/<one>/pyproject.toml when only that package's tests are collected.
    # A hung test (e.g. a stuck Dask cluster) fails after PYTEST_TIMEOUT_S instead of eating CI.
    session.run(
        "pytest", "-c", "pyproject.toml", "-p", "no:cacheprovider",
        f"--timeout={PYTEST_TIMEOUT_S}", *test_dirs, *session.posargs, env=env,
    )  # fmt: skip


def all_test_dirs() -> list[str]:
    return [f"{p.path}/tests" for p in PACKAGES]


def uv_binary(session: nox.Session) -> str:
    uv = shutil.which("uv")
    if uv is None:
        session.error("this session needs uv on PATH: python -m pip install uv")
    return uv


def make_venv(session: nox.Session, location: Path) -> str:
    """Create a fresh, empty venv with the session's interpreter; return its python."""
    uv = uv_binary(session)
    location = location.resolve()  # absolute: scripts receive it and may change directory
    if location.exists():
        shutil.rmtree(location)
    base = Path(session.bin, "python")
    session.run(
        uv, "venv", "--quiet", "--python", str(base), str(location),
        external=True, env={"UV_PYTHON_DOWNLOADS": "never"},
    )  # fmt: skip
    return str(location / "bin" / "python")


def venv_install(
    session: nox.Session, python: str, *args: str, env: dict[str, str] | None = None
) -> None:
    uv = uv_binary(session)
    session.run(uv, "pip", "install", "--python", python, *args, external=True, env=env)


def script_file(session: nox.Session, name: str, code: str) -> str:
    """Write a helper script into the session's temp folder (keeps the command log short)."""
    path = Path(session.create_tmp(), name)
    path.write_text(code, encoding="utf-8")
    return str(path)


def installed_version(session: nox.Session, dist: str, python: str = "python") -> str:
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    out = session.run(python, "-c", code, silent=True, external=True)
    return str(out).strip()


def venv_with_zvn020(session: nox.Session, location: Path, zarr_version: str) -> str:
    """A venv holding the published zarr-vlen-ndarray 0.2.0 and exactly ``zarr_version``."""
    python = make_venv(session, location)
    venv_install(session, python, ZVN_020, f"zarr=={zarr_version}")
    print_versions(session, python)
    return python


# ------------------------------------------------------------------------------ test matrix

# (Python, zarr) pairs. "3.m.0" is the first release of a minor, "3.m.*" its latest patch and
# "newest" whatever the index serves today (possibly a minor newer than listed here).
# zarr >= 3.2 needs Python >= 3.12, so on 3.11 "latest" means the latest 3.1 patch.
ZARR_MINORS = ("3.1", "3.2", "3.3", "3.4")
ZARR_BY_PYTHON = {
    "3.11": ["3.1.0", "3.1.*"],
    "3.12": [v for m in ZARR_MINORS for v in (f"{m}.0", f"{m}.*")] + [NEWEST],
    # 3.1.0 is the oldest zarr that installs and passes on 3.13.
    "3.13": ["3.1.0", NEWEST],
}


def _register_tests(python: str, zarr_specs: list[str]) -> None:
    """One session per Python, so that names read ``tests-3.12(zarr='3.4.0')``."""

    @nox.session(name=f"tests-{python}", python=python, tags=["tests"])
    @nox.parametrize("zarr", zarr_specs)
    def tests(session: nox.Session, zarr: str) -> None:
        """Our three packages and their tests at one (Python, zarr) pair.

        On the last zarr of each Python, the codec's tests run a second time on the pure numpy
        framing kernel (ZARR_VLEN_NDARRAY_NO_EXTENSION=1), so each Python tests both kernels.
        """
        install_ours(session, zarr_requirement(zarr), *TEST_DEPS)
        print_versions(session)
        run_pytest(session, *all_test_dirs(), env=EXPECT_KERNEL)
        if zarr == zarr_specs[-1]:
            session.log("again on the pure numpy framing kernel (the fallback):")
            run_pytest(session, f"{CODEC.path}/tests", env=FALLBACK_KERNEL)


for _python, _specs in ZARR_BY_PYTHON.items():
    _register_tests(_python, _specs)


@nox.session(python=list(PYTHONS), tags=["tests"])
@nox.parametrize("pyarrow", ["18.0.0", NEWEST])
def nd_arrow(session: nox.Session, pyarrow: str) -> None:
    """nd-arrow alone: no zarr in the venv, pyarrow at its floor and at the newest release."""
    install_ours(session, pyarrow_requirement(pyarrow), "pytest", "pytest-timeout", "hypothesis",
                 "xarray", packages=(ND_ARROW,))  # fmt: skip
    print_versions(session)
    session.run("python", script_file(session, "assert_no_zarr.py", _ASSERT_NO_ZARR))
    run_pytest(session, f"{ND_ARROW.path}/tests")


# The lowest version of every dependency any package declares. numpy 1.26 is only possible
# because zarr 3.1.0-3.1.5 accept it (3.1.6+ need numpy >= 2). xarray is nd-arrow's extra.
FLOOR = (
    "numpy==1.26.*",
    "zarr==3.1.0",
    "numcodecs==0.14.*",
    "pyarrow==18.0.0",
    "xarray==2024.1.*",
)


@nox.session(python="3.11", tags=["tests"])
def floor(session: nox.Session) -> None:
    """Python 3.11 with every declared dependency at its floor."""
    install_ours(session, *FLOOR, *TEST_DEPS)
    print_versions(session)
    run_pytest(session, *all_test_dirs(), env=EXPECT_KERNEL)


# ----------------------------------------------------------------------------------- lint


@nox.session(python="3.12")
def lint(session: nox.Session) -> None:
    """ruff, mypy (root config) on every package's src, and the import-linter contracts."""
    install_ours(session, "ruff", "mypy", "import-linter", *TEST_DEPS)
    print_versions(session)
    session.run("ruff", "--version")
    checks = [("ruff", "check", "."), ("ruff", "format", "--check", ".")]
    checks += [("mypy", "--config-file", "pyproject.toml", f"{p.path}/src") for p in PACKAGES]
    checks += [("lint-imports", "--config", ".importlinter")]  # the package graph contracts
    checks.append(("lint-imports", "--config", f"{ND_ARROW.path}/.importlinter"))
    failed = []
    for command in checks:  # run every check, then fail with the list of those that failed
        try:
            session.run(*command)
        except nox.command.CommandFailed:
            failed.append(" ".join(command))
    if failed:
        session.error("failed: " + "; ".join(failed))


# ---------------------------------------------------------------------------------- build

_CHECK_INSTALLED_WHEEL = """
import importlib, importlib.metadata as md, importlib.util, json, sys
dist, module, forbids_zarr = sys.argv[1], sys.argv[2], sys.argv[4]
expected = json.loads(sys.argv[3])
importlib.import_module(module)
found = {
    f"{ep.group} {ep.name}": ep.value
    for ep in md.distribution(dist).entry_points
    if ep.group.startswith("zarr")
}
if set(found) != set(expected):
    sys.exit(f"{dist}: zarr entry points {found} differ from the expected {sorted(expected)}")
for ep in md.distribution(dist).entry_points:
    key = f"{ep.group} {ep.name}"
    if key not in expected:
        continue
    if expected[key] and ep.value != expected[key]:
        sys.exit(f"{dist}: entry point {key} -> {ep.value}, expected {expected[key]}")
    obj = ep.load()
    print(f"ok: entry point {key} -> {ep.value} loads {obj!r}")
if forbids_zarr == "1" and importlib.util.find_spec("zarr") is not None:
    sys.exit(f"{dist}: installing the wheel alone pulled in zarr")
print(f"ok: {dist} {md.version(dist)} imports as {module}")
"""

# What an sdist may contain (relative to its top folder): the package's own allowlist plus
# what the build backend adds.
_SDIST_ALLOWED_TOP = {"src", "tests", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"}
_SDIST_ALLOWED_TOP.add(".gitignore")  # hatchling copies the repository's .gitignore in
_SDIST_ALLOWED_TOP |= {"setup.py", "setup.cfg"}  # setuptools (the compiled package's backend)

# Which framing kernel an installed zarr-vlen-ndarray loads, with a round trip through it.
_CHECK_KERNEL = """
import sys, warnings
warnings.simplefilter("error")  # a kernel that was built but fails to load warns: fail here
import numpy as np
from zarr_vlen_ndarray import framing
payload, nbytes = np.arange(24, dtype=np.uint8), np.array([8, 0, 16])
flat, lengths = framing.decode_frames(framing.encode_frames(payload, nbytes), 3, 8)
assert flat.tobytes() == payload.tobytes() and lengths.tolist() == [8, 0, 16]
if framing.BACKEND != sys.argv[1]:
    sys.exit(f"zarr_vlen_ndarray.framing.BACKEND is {framing.BACKEND!r}, not {sys.argv[1]!r}")
print(f"ok: zarr_vlen_ndarray.framing.BACKEND == {framing.BACKEND!r}, round trip ok")
"""
# A build environment with the C compiler hidden: setuptools runs $CC, and `false` always fails.
_NO_COMPILER = {"CC": "false", "CXX": "false"}


def check_sdist(session: nox.Session, sdist: Path, package: Package) -> None:
    """The sdist holds only this package's allowlisted files: nothing from siblings or root."""
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = {name.split("/", 1)[0] for name in names}
    if len(top) != 1:
        session.error(f"{sdist.name}: expected one top-level folder, found {sorted(top)}")
    members = [name.split("/", 1)[1] for name in names if "/" in name]
    stray = sorted({m.split("/", 1)[0] for m in members} - _SDIST_ALLOWED_TOP)
    siblings = [p.module for p in PACKAGES if p is not package]
    leaked = [m for m in members if any(s in m.split("/") for s in siblings)]
    if stray or leaked:
        session.error(f"{sdist.name}: unexpected entries {stray}, sibling files {leaked}")
    if not any(m.startswith(f"src/{package.module}/") for m in members):
        session.error(f"{sdist.name}: does not contain src/{package.module}/")
    session.log(f"ok: {sdist.name} holds {len(members)} entries, none from siblings")


def check_wheel_files(session: nox.Session, wheel: Path, package: Package) -> None:
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/", 1)[0] for name in archive.namelist()}
    expected = {package.module}
    extra = sorted(t for t in top - expected if not t.endswith(".dist-info"))
    if extra or package.module not in top:
        session.error(f"{wheel.name}: top-level entries {sorted(top)}, expected {package.module}")
    session.log(f"ok: {wheel.name} holds only {package.module}")


def built(out: Path, package: Package, pattern: str) -> Path:
    stem = package.dist.replace("-", "_")
    matches = sorted(out.glob(f"{stem}-{pattern}"))
    if len(matches) != 1:
        raise FileNotFoundError(f"expected one {stem}-{pattern} in {out}, found {matches}")
    return matches[0]


def check_compiled(session: nox.Session, tmp: Path, work: Path, package: Package) -> None:
    """The wheel built here is abi3 and loads its C kernel; the sdist without a compiler works.

    The release wheels (one per platform) come from cibuildwheel in the release workflow; this
    checks the same build locally, then installs the sdist with $CC set to ``false`` and checks
    that the install succeeds on the pure numpy kernel.
    """
    wheel = built(work, package, "*.whl")
    if "-cp311-abi3-" not in wheel.name:
        session.error(f"{wheel.name}: expected a stable-ABI (cp311-abi3) wheel")
    kernel_script = script_file(session, "check_kernel.py", _CHECK_KERNEL)
    python = str(tmp / f"venv-{package.folder}" / "bin" / "python")
    session.run(python, kernel_script, "c", external=True)

    session.log(f"{package.dist}: the sdist installs without a C compiler (CC=false)")
    python = make_venv(session, tmp / f"venv-{package.folder}-no-compiler")
    sdist = built(work, package, "*.tar.gz")
    find_links = ["--find-links", str(work)] if package.local_deps else []
    venv_install(session, python, "--no-cache", str(sdist), *find_links, env=_NO_COMPILER)
    session.run(python, kernel_script, "python", external=True)


def selected_packages(session: nox.Session) -> list[Package]:
    """Packages named in posargs (PyPI name or folder), default all."""
    by_name = {key: p for p in PACKAGES for key in (p.dist, p.folder)}
    unknown = [arg for arg in session.posargs if arg not in by_name]
    if unknown:
        session.error(f"unknown package(s) {unknown}; choose from {[p.dist for p in PACKAGES]}")
    wanted = {by_name[arg].dist for arg in session.posargs} or {p.dist for p in PACKAGES}
    return [p for p in PACKAGES if p.dist in wanted]


def sdist_pytest_ini() -> str:
    """The root pytest settings, for a package's tests run from its unpacked sdist."""
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    lines = ["[pytest]", "addopts = " + " ".join(options.get("addopts", [])), "pythonpath = tests"]
    lines.append(f"xfail_strict = {str(options.get('xfail_strict', False)).lower()}")
    lines += ["filterwarnings ="] + [f"    {rule}" for rule in options.get("filterwarnings", [])]
    return "\n".join(lines) + "\n"


def run_sdist_tests(
    session: nox.Session, python: str, sdist: Path, tmp: Path, find_links: list[str]
) -> None:
    """Unpack the sdist and run its own tests there against the installed wheel.

    Proves the tests need nothing outside the package folder (golden vectors, helpers, README).
    After the wheel check, so the test dependencies cannot hide a missing runtime dependency.
    """
    unpacked = tmp / "sdist-tests"
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    (top / "pytest.ini").write_text(sdist_pytest_ini(), encoding="utf-8")
    venv_install(session, python, *TEST_DEPS, *find_links)
    with session.chdir(top):
        session.run(
            python, "-m", "pytest", "-c", "pytest.ini", "-p", "no:cacheprovider",
            f"--timeout={PYTEST_TIMEOUT_S}", "tests", external=True,
        )  # fmt: skip


@nox.session(python="3.12")
def build(session: nox.Session) -> None:
    """Build sdists+wheels; install every wheel alone in a fresh venv and check it; then run
    each package's tests from its unpacked sdist in that venv.

    ``nox -s build -- zarr-vlen-ndarray`` limits it to the named packages. The checked sdist and
    wheel of each selected package end up in ./dist/. The release workflows in
    .github/workflows/ run exactly this session for their package.
    """
    uv = uv_binary(session)
    tmp = Path(session.create_tmp())
    work = tmp / "dist"
    shutil.rmtree(work, ignore_errors=True)
    selected = selected_packages(session)
    # Local dependencies are built too: they are not on PyPI yet, so --find-links points here.
    needed = {dep for p in selected for dep in p.local_deps}
    needed |= {p.dist for p in selected}
    to_build = [p for p in PACKAGES if p.dist in needed]
    versions = {}
    for package in to_build:
        # uv builds the sdist first and the wheel from it, which proves the sdist is complete.
        session.run(uv, "build", "--out-dir", str(work), package.path, external=True)
        check_sdist(session, built(work, package, "*.tar.gz"), package)
        check_wheel_files(session, built(work, package, "*.whl"), package)
        versions[package.dist] = built(work, package, "*.whl").name.split("-")[1]

    check_script = script_file(session, "check_installed_wheel.py", _CHECK_INSTALLED_WHEEL)
    for package in selected:
        wheel = built(work, package, "*.whl")
        python = make_venv(session, tmp / f"venv-{package.folder}")
        find_links = ["--find-links", str(work)] if package.local_deps else []
        venv_install(session, python, str(wheel), *find_links)
        for dep in package.local_deps:
            got = installed_version(session, dep, python)
            if got != versions[dep]:
                session.error(f"{package.dist} installed {dep} {got}, not the local build")
        expected = {f"{g} {n}": v for (g, n), v in package.entry_points.items()}
        session.run(
            python, check_script, package.dist, package.module,
            json.dumps(expected), "1" if package.forbids_zarr else "0", external=True,
        )  # fmt: skip
        if package.compiled:
            check_compiled(session, tmp, work, package)
        run_sdist_tests(session, python, built(work, package, "*.tar.gz"), tmp, find_links)

    out = ROOT / "dist"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for package in selected:
        for pattern in ("*.tar.gz", "*.whl"):
            shutil.copy2(built(work, package, pattern), out)
        session.log(f"built and checked {package.dist} {versions[package.dist]} -> dist/")


# ------------------------------------------------------------------------- compatibility


@nox.session(python="3.12")
def compat020(session: nox.Session) -> None:
    """Round trip between the published zarr-vlen-ndarray 0.2.0 (venv A) and ours (venv B).

    A writes OLD, B writes NEW, A checks NEW, B checks OLD. Both venvs use the same zarr.
    """
    if not COMPAT_SCRIPT.is_file():
        session.error(
            f"{COMPAT_SCRIPT.relative_to(ROOT)} does not exist yet: the codec's compatibility "
            "driver (subcommands 'write DIR' and 'check DIR') is needed for this session"
        )
    tmp = Path(session.create_tmp())
    python_b = make_venv(session, tmp / "venv-ours")
    venv_install(session, python_b, *(arg for p in PACKAGES for arg in ("-e", p.path)))
    zarr_version = installed_version(session, "zarr", python_b)

    # Venv A is the session venv: the published 0.2.0 with the very same zarr release.
    session.install(ZVN_020, f"zarr=={zarr_version}")
    session.log("venv A (zarr-vlen-ndarray 0.2.0):")
    print_versions(session)
    session.log("venv B (this repository):")
    print_versions(session, python_b)

    old, new = tmp / "written-by-020", tmp / "written-by-ours"
    for folder in (old, new):
        shutil.rmtree(folder, ignore_errors=True)
    script = str(COMPAT_SCRIPT)
    session.run("python", script, "write", str(old))
    session.run(python_b, script, "write", str(new), external=True)
    session.run("python", script, "check", str(new))
    session.run(python_b, script, "check", str(old), external=True)


@nox.session(python="3.12")
@nox.parametrize("zarr", [NEWEST, "3.1.0"])
def suite020(session: nox.Session, zarr: str) -> None:
    """The published zarr-vlen-ndarray 0.2.0's own tests (from its sdist) against our packages.

    Every test must pass except those in tests/compat/suite020_allowlist.toml (deliberate
    changes, with reasons); an allowed test that passes fails the session too (stale entry).
    Then 0.2.0's public surface is dumped in its own venv and compared with ours.
    """
    install_ours(session, zarr_requirement(zarr), "pytest", "pytest-timeout", "pip")
    print_versions(session)
    tmp = Path(session.create_tmp()) / "suite020"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    session.run(
        "python", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
        ZVN_020, "--dest", str(tmp),
    )  # fmt: skip
    (sdist,) = tmp.glob("zarr_vlen_ndarray-0.2.0.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp, filter="data")
    # Only its tests/: the suite must import OUR zarr_vlen_ndarray, not the sdist's src/.
    run = tmp / "run"
    shutil.copytree(tmp / "zarr_vlen_ndarray-0.2.0" / "tests", run / "tests")
    (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # 0.2.0's settings
    junit = tmp / "junit.xml"
    session.run(
        "python", "-m", "pytest", "-c", str(run / "pytest.ini"), "--rootdir", str(run),
        "-p", "no:cacheprovider", f"--timeout={PYTEST_TIMEOUT_S}", f"--junitxml={junit}",
        "-q", str(run / "tests"),
        success_codes=[0, 1],  # failures are judged against the allow-list next
    )  # fmt: skip
    session.run(
        "python", str(COMPAT_DIR / "suite020_check.py"), str(junit),
        str(COMPAT_DIR / "suite020_allowlist.toml"),
    )  # fmt: skip

    old_python = venv_with_zvn020(session, tmp / "venv-zvn020", installed_version(session, "zarr"))
    dumped = tmp / "api020.json"
    api_script = str(COMPAT_DIR / "api_surface.py")
    session.run(old_python, api_script, "dump", str(dumped), external=True)
    session.run("python", api_script, "compare", str(dumped))
    if zarr == NEWEST and json.loads(dumped.read_text()) != json.loads(
        (COMPAT_DIR / "api020.json").read_text()
    ):
        session.error(f"{COMPAT_DIR / 'api020.json'} differs from the fresh dump {dumped}")


# ------------------------------------------------------------------------ not run by default


@nox.session(python="3.12", default=False)
def bench(session: nox.Session) -> None:
    """Run every benchmarks/bench_*.py (sorted) with posargs; 0.2.0's python is $ZVN020_PYTHON."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    if not scripts:
        session.error("no benchmarks/bench_*.py scripts to run")
    install_ours(session, "ndarrow", "psutil")
    print_versions(session)
    zarr_version = installed_version(session, "zarr")
    tmp = Path(session.create_tmp())
    zvn020_python = venv_with_zvn020(session, tmp / "venv-zvn020", zarr_version)
    for script in scripts:
        session.run("python", str(script), *session.posargs, env={"ZVN020_PYTHON": zvn020_python})


DEMO_SCRIPT = ROOT / "examples/demo.py"


# No pinned interpreter: the demo runs on the Python that runs nox (any of 3.11-3.13), so the
# README's demo command works on a fresh machine with a single Python and pip.
@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """End-to-end demo of the three packages: examples/demo.py (its --help lists the options).

    It writes to a temporary folder that it removes; ``nox -s demo -- --out DIR`` keeps the store
    and the Parquet files in DIR.
    """
    install_ours(session, "pyarrow", "xarray")
    print_versions(session)
    session.run("python", str(DEMO_SCRIPT), *session.posargs)
