"""What the command line's values mean (pure): ``--shape``, ``--dtype``, ``--select``,
``--sample`` and ``--dims``. Each parser raises ValueError naming the bad part, which the CLI
reports as a usage error.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from zarr_ndarray_dtype.chunks import Selection
from zarr_ndarray_dtype.errors import ElementDTypeError
from zarr_ndarray_dtype.pattern import ShapePattern, parse_element_dtype

_NULLS = {"null", "none"}


def parse_shape_arg(text: str) -> tuple[int | None, ...]:
    """``--shape``: ``null,2``, ``None,2``, ``[null, 2]``, ``(None, 2)`` or ``null``; ValueError
    (argparse's usage error) naming the bad entry."""
    body = text.strip()
    if body[:1] in "[(" and body[-1:] in "])":
        body = body[1:-1]
    tokens = [t.strip() for t in body.split(",")]
    if len(tokens) > 1 and tokens[-1] == "":
        tokens.pop()  # a trailing comma, as in "(None,)"
    entries: list[int | None] = []
    for token in tokens:
        if token.lower() in _NULLS:
            entries.append(None)
        elif re.fullmatch(r"[0-9]+", token):
            entries.append(int(token))
        else:
            raise ValueError(
                f"--shape {text!r}: entry {token!r} is neither null/None nor an integer; "
                "give e.g. null,2"
            )
    ShapePattern.parse(entries)  # ShapePatternError (a ValueError) names a bad entry
    return tuple(entries)


def parse_dtype_arg(text: str) -> str:
    """Parse ``--dtype`` into one of the 14 element dtype names (``<f4`` is read as float32)."""
    try:
        return parse_element_dtype(text)
    except ElementDTypeError as exc:
        raise ValueError(str(exc)) from exc


def parse_selection(text: str) -> Selection:
    """``--select``: numpy's basic indexing as written in Python (``"0:10, 5"``, ``"..., -1"``,
    ``"::1"``) parsed without evaluating anything; ValueError naming the part that is not an
    int, a slice of ints or ``...``."""
    problem = f"{text!r} is not numpy index syntax (e.g. '0:10, 5')"
    try:
        tree = ast.parse(f"_[{text}]", mode="eval").body
    except SyntaxError as exc:
        raise ValueError(problem) from exc
    if not (isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Name)):
        raise ValueError(problem)  # text that closed the bracket: "0] + [1"
    parts = tree.slice.elts if isinstance(tree.slice, ast.Tuple) else [tree.slice]

    def number(node: ast.expr | None) -> int | None:
        if node is None:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = number(node.operand)
            if value is not None:
                return -value
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        raise ValueError(f"{ast.unparse(node)!r} in {text!r} is not an integer")

    out: list[int | slice | Any] = []
    for part in parts:
        if isinstance(part, ast.Constant) and part.value is Ellipsis:
            out.append(Ellipsis)
        elif isinstance(part, ast.Slice):
            out.append(slice(number(part.lower), number(part.upper), number(part.step)))
        else:
            out.append(number(part))
    return tuple(out)


def parse_count(text: str) -> int:
    """``--sample``: a positive integer."""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r} is not a positive integer")
    return int(text)


def parse_names(text: str) -> list[str]:
    """``--dims``: comma-separated names."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ValueError(f"{text!r}: give comma-separated names, e.g. n,xy")
    return names
