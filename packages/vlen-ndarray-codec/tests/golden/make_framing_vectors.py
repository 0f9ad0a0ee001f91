"""Regenerate the framing golden vectors with numcodecs ``VLenBytes`` (zarr's ``vlen-bytes``).

Run from this folder: ``python make_framing_vectors.py``. The outputs are checked in; the tests
never call this script, they compare our framing against the files it wrote.
"""

import json
from pathlib import Path

import numpy as np
from numcodecs import VLenBytes

HERE = Path(__file__).resolve().parent

CASES = {
    "empty_chunk": [],
    "one_empty_element": [b""],
    "bytes_mixed": [b"a", b"", b"xyz", b"\x00\xff", b""],
    "words_mixed": [bytes(range(8)), b"", bytes(range(4)), bytes(range(100, 112))],
    "halfwords_mixed": [b"\x01\x00", b"", b"\x02\x00\x03\x00\x04\x00"],
    "long_element": [bytes(i % 251 for i in range(258)), b"\x07"],
    "all_empty": [b"", b"", b""],
}


def main() -> None:
    manifest = {}
    for name, payloads in CASES.items():
        cells = np.empty(len(payloads), dtype=object)
        cells[:] = payloads
        framed = bytes(VLenBytes().encode(cells))
        (HERE / f"framing_{name}.bin").write_bytes(framed)
        manifest[name] = {
            "file": f"framing_{name}.bin",
            "payloads_hex": [p.hex() for p in payloads],
        }
    (HERE / "framing.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
