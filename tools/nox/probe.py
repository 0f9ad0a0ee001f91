"""Answer one question about the installed packages on stdout (used by noxfile.py).

    python tools/nox/probe.py fused-pipeline   # "yes" if zarr ships FusedCodecPipeline
    python tools/nox/probe.py vlen-backend     # zarr_vlen_ndarray.framing.BACKEND, or "python"

noxfile.py uses the answers to decide which extra test runs a session needs: the suite under
zarr's other codec pipeline, and the pure-Python fallback of the compiled framing kernel.
"""

from __future__ import annotations

import importlib
import sys

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


def main(argv: list[str]) -> int:
    questions = {
        "fused-pipeline": lambda: "yes" if has_attribute(FUSED_PIPELINE) else "no",
        "vlen-backend": vlen_backend,
    }
    if len(argv) != 1 or argv[0] not in questions:
        print(f"usage: probe.py {{{','.join(questions)}}}", file=sys.stderr)
        return 2
    print(questions[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
