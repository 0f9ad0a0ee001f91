"""Run the Python blocks of one section of a Markdown file, in order, as one script.

Usage: python run_readme.py FILE.md "## Heading" CWD

The script runs in CWD in a fresh interpreter; each ``print(...)  # X`` line must print X (as the
packages' README tests check, with test_support.py beside this script).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from test_support import assert_printed_as_commented, readme_examples, run_script


def main(readme: Path, heading: str, cwd: Path) -> None:
    text = readme.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = re.compile(r"^## ", re.M).search(text, start + len(heading))
    with tempfile.TemporaryDirectory() as tmp:
        section = Path(tmp, "section.md")
        section.write_text(text[start : end.start() if end else len(text)], encoding="utf-8")
        code = "\n".join(readme_examples(section).values())
    if not code:
        raise SystemExit(f"{readme}: no python block under {heading!r}")
    out = run_script(code, cwd).stdout
    print(out, end="")
    assert_printed_as_commented(code, out)
    print(f"{readme}: the example under {heading!r} ran and printed what it says")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
