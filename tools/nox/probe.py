"""Answer one question about the venv that runs this script on stdout (used by noxfile.py).

    python tools/nox/probe.py fused-pipeline   # "yes" if zarr ships FusedCodecPipeline
    python tools/nox/probe.py vlen-backend     # zarr_vlen_ndarray.framing.BACKEND, or "python"
    python tools/nox/probe.py zarr-version     # the installed zarr release
    python tools/nox/probe.py newest-zarr      # the zarr release uv resolves for it today
    python tools/nox/probe.py purelib          # the venv's site-packages folder

noxfile.py uses the answers to decide which extra test runs a session needs (the suite under
zarr's other codec pipeline, the pure-Python fallback of the compiled framing kernel), to skip a
``3.m.*`` cell that tests the same release as another cell, and to give a second venv the same
zarr release.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import sysconfig
from collections.abc import Callable

FUSED_PIPELINE = "zarr.core.codec_pipeline.FusedCodecPipeline"


def has_attribute(dotted: str) -> bool:
    module_name, _, attribute = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    return hasattr(module, attribute)


def vlen_backend() -> str:
    """The framing backend the codec picked at import; "python" before a kernel exists."""
    framing = importlib.import_module("zarr_vlen_ndarray.framing")
    return str(getattr(framing, "BACKEND", "python"))


def newest_zarr() -> str:
    """The zarr release the index serves this interpreter today (what ``zarr`` would install)."""
    pins = subprocess.run(
        ["uv", "pip", "compile", "-", "--quiet", "--no-header", "--python", sys.executable],
        input="zarr\n", capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return next(pin.split("==")[1] for pin in pins.split() if pin.startswith("zarr=="))


def main(argv: list[str]) -> int:
    questions: dict[str, Callable[[], str]] = {
        "fused-pipeline": lambda: "yes" if has_attribute(FUSED_PIPELINE) else "no",
        "vlen-backend": vlen_backend,
        "zarr-version": lambda: importlib.metadata.version("zarr"),
        "newest-zarr": newest_zarr,
        "purelib": lambda: sysconfig.get_paths()["purelib"],
    }
    if len(argv) != 1 or argv[0] not in questions:
        print(f"usage: probe.py {{{','.join(questions)}}}", file=sys.stderr)
        return 2
    print(questions[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
