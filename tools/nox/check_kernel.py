"""Check which framing kernel zarr-vlen-ndarray loaded (used by noxfile.py's build session).

    python tools/nox/check_kernel.py {c,python}

Round-trips a small framed chunk and fails unless ``zarr_vlen_ndarray.framing.BACKEND`` is the
expected one. Warnings are errors: a kernel that was built but fails to load warns.
"""

from __future__ import annotations

import sys
import warnings


def main(expected: str) -> int:
    warnings.simplefilter("error")
    import numpy as np

    from zarr_vlen_ndarray import framing

    payload, nbytes = np.arange(24, dtype=np.uint8), np.array([8, 0, 16])
    flat, lengths = framing.decode_frames(framing.encode_frames(payload, nbytes), 3, 8)
    if flat.tobytes() != payload.tobytes() or lengths.tolist() != [8, 0, 16]:
        print("framing round trip failed", file=sys.stderr)
        return 1
    if expected != framing.BACKEND:
        print(f"zarr_vlen_ndarray.framing.BACKEND is {framing.BACKEND!r}, not {expected!r}")
        return 1
    print(f"ok: zarr_vlen_ndarray.framing.BACKEND == {framing.BACKEND!r}, round trip ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
