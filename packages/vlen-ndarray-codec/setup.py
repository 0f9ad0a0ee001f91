"""Build script for the optional C framing kernel; everything else is in pyproject.toml.

The extension ``zarr_vlen_ndarray._framing_ext`` is optional: when it cannot be compiled (no C
compiler, missing Python headers) the build warns and goes on, and the package runs on its pure
numpy kernel. ``ZARR_VLEN_NDARRAY_REQUIRE_EXTENSION=1`` turns a failed compile into an error
(release wheels set it); ``ZARR_VLEN_NDARRAY_NO_EXTENSION=1`` skips the extension altogether.
It is compiled against the CPython stable ABI of 3.11 (``cp311-abi3`` wheels serve every
CPython >= 3.11), except on interpreters without a stable ABI (free-threaded CPython, PyPy).
"""

from __future__ import annotations

import os
import platform
import sysconfig
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

NO_EXTENSION = os.environ.get("ZARR_VLEN_NDARRAY_NO_EXTENSION", "") not in ("", "0")
REQUIRE_EXTENSION = os.environ.get("ZARR_VLEN_NDARRAY_REQUIRE_EXTENSION", "") not in ("", "0")
LIMITED_API = platform.python_implementation() == "CPython" and not sysconfig.get_config_var(
    "Py_GIL_DISABLED"
)
COMPILE_ERRORS = (CCompilerError, ExecError, PlatformError, OSError)


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing when the C kernel cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except COMPILE_ERRORS as exc:
            self._skip(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except COMPILE_ERRORS as exc:
            self._skip(exc)

    @staticmethod
    def _skip(exc: BaseException) -> None:
        if REQUIRE_EXTENSION:
            raise exc
        print("=" * 78)
        print(f"WARNING: the C framing kernel could not be compiled ({exc!r}).")
        print("zarr-vlen-ndarray is installed with its pure numpy kernel: same results, slower.")
        print("=" * 78)


def extensions() -> list[Extension]:
    if NO_EXTENSION:
        return []
    macros = [("Py_LIMITED_API", "0x030B0000")] if LIMITED_API else []
    return [
        Extension(
            "zarr_vlen_ndarray._framing_ext",
            sources=["src/zarr_vlen_ndarray/_framing_ext.c"],
            define_macros=macros,
            py_limited_api=LIMITED_API,
        )
    ]


options: dict[str, Any] = {}
if LIMITED_API and not NO_EXTENSION:
    options["bdist_wheel"] = {"py_limited_api": "cp311"}

setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt}, options=options)
