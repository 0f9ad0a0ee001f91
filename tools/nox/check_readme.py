"""Check that README.md's commands and session names are true (run by the ``lint`` session).

    python tools/nox/check_readme.py

- The table of sessions in README.md (its header ``| session | what it runs |``) names exactly
  the sessions ``nox -l`` lists, as it spells them.
- The nox command ``.ci/run`` runs is README.md's test command, after ``&&``, literally.
- Every ``nox -s NAME`` and ``nox -t TAG`` written in README.md and CONTRIBUTING.md selects a
  session: a name ``nox -l`` lists, a session function (``nd_arrow``), or a tag.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "CONTRIBUTING.md")


def listed() -> list[tuple[str, set[str]]]:
    """Every session ``nox -l`` lists (those run only when named too), with its tags."""
    out = subprocess.run(
        [sys.executable, "-m", "nox", "-l", "-f", str(ROOT / "noxfile.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sessions = []
    for line in out.splitlines():
        if line[:2] in ("* ", "- "):
            match = re.fullmatch(r"(.+?)(?: \[([^\]]*)\])?(?: -> .*)?", line[2:])
            assert match is not None, line
            sessions.append((match[1], set(match[2].split(",")) if match[2] else set()))
    return sessions


def table_names(readme: str) -> set[str]:
    """The backticked names in the first cell of the rows of README.md's session table."""
    names: set[str] = set()
    rows = readme.split("\n| session | what it runs |\n", 1)[1].split("\n\n", 1)[0]
    for line in rows.splitlines():
        names.update(re.findall(r"`([^`]+)`", line.split(" | ")[0]))
    return names


def selections(text: str) -> list[tuple[str, str]]:
    """``("-s", name)`` and ``("-t", tag)`` of every nox command in ``text``'s code."""
    found = []
    for code in re.findall(r"`([^`\n]*nox [^`\n]*)`|^(nox .*)$", text, re.M):
        command = next(c for c in code if c)
        try:
            words = shlex.split(command[command.index("nox ") :], comments=True)
        except ValueError:
            continue  # a code span cut by a line break
        option = None
        for word in words[1:]:
            if word in ("-s", "--session", "-t", "--tags"):
                option = "-t" if word in ("-t", "--tags") else "-s"
            elif word.startswith("-") or word in ("&&", "|"):
                option = None
            elif option is not None and not word.isupper():  # NAME, ARGS: placeholders
                found.append((option, word))
    return found


def main() -> int:
    sessions = listed()
    names = {name for name, _ in sessions}
    functions = {re.split(r"[-(]", name, maxsplit=1)[0] for name in names}
    tags = {tag for _, tagged in sessions for tag in tagged}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    problems = []
    in_table = table_names(readme)
    if in_table != names:
        problems.append(
            f"README.md's session table: not in `nox -l`: {sorted(in_table - names)}; "
            f"missing: {sorted(names - in_table)}"
        )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (command,) = re.findall(r"^(nox --parallel [^|\n]*?)\s*(?:\|\||$)", ci, re.M)
    if f"&& {command}\n" not in readme:
        problems.append(f"README.md has no test command ending in `&& {command}` (.ci/run's)")
    for doc in DOCS:
        for option, value in selections((ROOT / doc).read_text(encoding="utf-8")):
            known = tags if option == "-t" else names | functions
            if value not in known:
                problems.append(f"{doc}: `nox {option} {value}` selects nothing in `nox -l`")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print(
            f"ok: README.md names the {len(names)} sessions of `nox -l`; .ci/run runs `{command}`"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
