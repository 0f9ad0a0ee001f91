"""The ``zarr-ndarray`` console script, on argparse (no dependency for a codec package's tool).

Exit status: 0 success; 1 the store was refused (nothing changed) or the environment failed (one
line with what to do, :func:`.errors.explain`); 2 a usage error; 141 the reader of the output went
away (``| head``). Anything else is a bug, reported on one line (``ZARR_NDARRAY_TRACEBACK=1``
shows its traceback).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from zarr_ndarray_tool import api
from zarr_ndarray_tool._arguments import (
    parse_count,
    parse_dtype_arg,
    parse_names,
    parse_selection,
    parse_shape_arg,
)
from zarr_ndarray_tool._commands import DEFAULT_SAMPLE, Outcome
from zarr_ndarray_tool._export import INSTALL_HINT
from zarr_ndarray_tool._info import render
from zarr_ndarray_tool._remote import BACKENDS, parse_storage_options, settings
from zarr_ndarray_tool._text import counted
from zarr_ndarray_tool.errors import Refused, explain
from zarr_ndarray_tool.progress import Progress

__all__ = ["build_parser", "main"]

T = TypeVar("T")
PROG = "zarr-ndarray"
#: What ``--version`` reports: this tool, the packages it works with, and the host libraries.
DISTRIBUTIONS = (
    ("zarr-ndarray-tool", ""),
    ("zarr-ndarray-dtype", ""),
    ("zarr-vlen-ndarray", ""),
    ("zarr-ragged-ndarray", ""),
    ("nd-arrow", f" (export needs it: {INSTALL_HINT})"),
    ("zarr", ""),
    ("numcodecs", ""),
    ("numpy", ""),
    ("pyarrow", f" (export needs it: {INSTALL_HINT})"),
)

_PATH_HELP = (
    "the array (for upgrade and downgrade also a Zarr v2 hierarchy's group): a directory "
    "(store.zarr/group/array), a zip store (store.zip), an array inside one "
    "(store.zip::group/array), or a URL zarr understands "
    "(s3://bucket/store.zarr/array, gs://..., az://..., memory://..., file://...)"
)


def _usage(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as argparse's ``type``: its ValueError becomes a usage error with its message."""

    @functools.wraps(parse)
    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return convert


class _Version(argparse.Action):
    """``--version``: print :func:`_versions` (one line per package, not rewrapped) and exit."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        _say(_versions())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("path", metavar="PATH", help=_PATH_HELP)
    common.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar (it is shown on a terminal)"
    )
    common.add_argument(
        "--storage-options",
        metavar="JSON",
        help="for a URL: options of the store, a JSON object (e.g. "
        '\'{"endpoint_url": "http://127.0.0.1:9000"}\'); credentials come from the '
        "environment and config files as usual",
    )
    common.add_argument(
        "--backend",
        choices=BACKENDS,
        default="fsspec",
        help="for a URL: open it with fsspec (zarr.storage.FsspecStore, the default) or "
        "obstore (zarr.storage.ObjectStore); the storage options are that library's",
    )
    rewrite = argparse.ArgumentParser(add_help=False)
    rewrite.add_argument(
        "--dry-run", action="store_true", help="print the zarr.json diff; write nothing"
    )

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect, convert, verify and export Zarr v3 arrays of ragged ndarray "
        "elements (the ndarray data type, with the vlen-ndarray or the ragged-ndarray codec). "
        "Metadata rewrites change only the array's zarr.json, atomically; chunks are never "
        "rewritten.",
        epilog="Exit status: 0 ok, 1 refused or invalid store (nothing changed) or a failure "
        "of the environment (disk, file system, network, credentials), 2 usage, 141 output pipe "
        "closed.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="print the version of this tool and of the packages it works with, and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "info",
        parents=[common],
        help="data type, codecs, chunks, extents",
        description="Describe the array: data type and pattern, chunk grid, codecs, fill value, "
        "stored and payload bytes, and the distribution of the cells' variable extents. Every "
        "written chunk is decoded (no cell values are copied); a chunk that does not decode is "
        "named, and nothing is printed but that.",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run_info)

    p = sub.add_parser(
        "upgrade",
        parents=[common, rewrite],
        help="variable_length_bytes + vlen-bytes (or a Zarr v2 VLenArray / VLenBytes array) "
        "-> ndarray + vlen-ndarray",
        description="Type a raw-bytes array: every element must be the little-endian C-order "
        "bytes of an ndarray of the given dtype and pattern. Chunks are checked first (a "
        "sample, or all with --verify-all); the fill value is kept and must fit the pattern. "
        "A Zarr v2 array with a numcodecs VLenArray filter (or VLenBytes, with --dtype and "
        "--shape) gets a v3 zarr.json that reads its chunks unchanged; its v2 documents are kept "
        "in the attributes, so `downgrade` restores them byte for byte. PATH may also be a Zarr "
        "v2 group (a HyperSpy .zspy store, say): every node below it is upgraded, groups and "
        "ordinary arrays by zarr's own v2 -> v3 migration (zarr >= 3.1.3), ragged arrays as "
        "above, a HyperSpy ragged array with the pattern its shape sibling gives; every node is "
        "checked before anything is written, and `downgrade` restores every v2 document.",
    )
    p.add_argument(
        "--dtype",
        type=_usage(parse_dtype_arg),
        help="element dtype, e.g. float32 (a Zarr v2 VLenArray array: default its own dtype)",
    )
    p.add_argument(
        "--shape",
        type=_usage(parse_shape_arg),
        help="element pattern [null, d1, ..., dk], written null,2 or None,2 or [null,2] "
        "(a Zarr v2 VLenArray array: default null)",
    )
    check = p.add_mutually_exclusive_group()
    check.add_argument("--verify-all", action="store_true", help="check every chunk object")
    check.add_argument(
        "--sample",
        type=_usage(parse_count),
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"check N chunk objects spread over the array (default {DEFAULT_SAMPLE})",
    )
    p.set_defaults(func=_run_upgrade, parser=p)

    p = sub.add_parser(
        "downgrade",
        parents=[common, rewrite],
        help="ndarray + vlen-ndarray -> variable_length_bytes + vlen-bytes",
        description="Make the array readable by zarr-python without this package: elements "
        "read as their raw little-endian bytes. On a hierarchy `upgrade` turned from Zarr v2 "
        "to v3, restore every v2 document byte for byte and remove the zarr.json files.",
    )
    p.set_defaults(func=_run_downgrade)

    p = sub.add_parser(
        "migrate",
        parents=[common, rewrite],
        help="zarr-vlen-ndarray 0.1.x vlen-ndarray/inner_shape data type -> ndarray",
        description="Rewrite the data type zarr-vlen-ndarray 0.1.x wrote (name vlen-ndarray, "
        "configuration inner_shape) as the ndarray data type; the chunks, already in the "
        "vlen-ndarray format, are not touched.",
    )
    p.set_defaults(func=_run_migrate)

    p = sub.add_parser(
        "verify",
        parents=[common],
        help="decode every chunk; report the first bad one",
        description="Decode every stored chunk object of an ndarray array (every inner chunk "
        "of a shard, edge chunks whole) with all the rules of its codec, or of a raw-bytes "
        "array as vlen-bytes. The first chunk that does not decode is named with the reason; "
        "exit status 1.",
    )
    p.set_defaults(func=_run_verify)

    p = sub.add_parser(
        "export",
        parents=[common],
        help="write the cells to Parquet (needs nd-arrow)",
        description="Write one Parquet row per cell (an nd_arrow.array column plus one int64 "
        "coordinate column per array dimension), one row group per chunk, in C order. OUT "
        "appears only when the whole export succeeded. Needs "
        "pip install 'zarr-ndarray-tool[export]'.",
    )
    p.add_argument("--parquet", required=True, type=Path, metavar="OUT", help="output file")
    p.add_argument("--column", help="name of the cell column (default: the array's name)")
    p.add_argument(
        "--dims",
        type=_usage(parse_names),
        help="names of the element axes, comma-separated (e.g. n,xy)",
    )
    p.add_argument(
        "--select",
        type=_usage(parse_selection),
        default=...,
        metavar="INDEX",
        help="export only these cells, in numpy's index syntax: ints and slices (step 1), one "
        "per array dimension, and '...' (e.g. --select '0:10, 5'; default: every cell)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.set_defaults(func=_run_export)
    return parser


def _progress(args: argparse.Namespace, label: str) -> Progress:
    """The command's progress bar (its total is set once the operation knows it)."""
    return Progress(0, label, enabled=False if args.quiet else None)


def _say(text: str) -> None:
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:  # /dev/full, a full disk under a redirection: name the output
        _silence_stdout()
        raise OSError(exc.errno, exc.strerror, "standard output") from exc


def _where(args: argparse.Namespace) -> dict[str, Any]:
    """The array as the API takes it: PATH, its storage options and backend."""
    options = parse_storage_options(args.storage_options)
    return {"store": args.path, "storage_options": options, "backend": args.backend}


def _show(outcome: Outcome) -> int:
    if outcome.diff:
        sys.stdout.write(outcome.diff)
    _say(outcome.message)
    return 0


# ------------------------------------------------------------------------------ commands


def _run_info(args: argparse.Namespace) -> int:
    with _progress(args, "reading chunks") as bar:
        report = api.info(**_where(args), progress=bar)
    _say(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def _run_upgrade(args: argparse.Namespace) -> int:
    if args.dtype is not None and args.shape is None:
        args.parser.error("--dtype needs --shape (the element pattern, e.g. --shape null,2)")
    with _progress(args, "checking chunks") as bar:
        outcome = api.upgrade(
            **_where(args),
            dtype=args.dtype,
            shape=args.shape,
            verify_all=args.verify_all,
            sample=args.sample,
            dry_run=args.dry_run,
            progress=bar,
        )
    return _show(outcome)


def _run_downgrade(args: argparse.Namespace) -> int:
    return _show(api.downgrade(**_where(args), dry_run=args.dry_run))


def _run_migrate(args: argparse.Namespace) -> int:
    return _show(api.migrate(**_where(args), dry_run=args.dry_run))


def _run_verify(args: argparse.Namespace) -> int:
    with _progress(args, "decoding chunks") as bar:
        outcome = api.verify(**_where(args), progress=bar)
    return _show(outcome)


def _run_export(args: argparse.Namespace) -> int:
    with _progress(args, "exporting cells") as bar:
        rows = api.export(
            **_where(args),
            path="",
            out=args.parquet,
            column=args.column,
            dims=args.dims,
            select=args.select,
            overwrite=args.overwrite,
            progress=bar,
        )
    _say(f"{args.path}: wrote {counted(rows, 'row')} to {args.parquet}")
    return 0


def _versions() -> str:
    """``--version``: this tool's version and that of every package it works with."""
    lines = []
    for dist, note in DISTRIBUTIONS:
        try:
            lines.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{dist}: not installed{note}")
    lines.append(f"Python {platform.python_version()}")
    return "\n".join(lines)


def _report(exc: Exception, args: argparse.Namespace) -> str:
    """The one line for any failure: the environment's (what to do), a refusal, or a bug."""
    if isinstance(exc, Refused):
        return str(exc)
    found = explain(exc, args.path, settings(args.path, args.backend))
    if found is not None:
        return found
    if os.environ.get("ZARR_NDARRAY_TRACEBACK"):
        raise exc
    return (
        f"unexpected {type(exc).__name__}: {exc} (a bug: please report it with the command; "
        "ZARR_NDARRAY_TRACEBACK=1 prints the traceback)"
    )


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tool; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except BrokenPipeError:
        # Whoever read the output stopped (| head): end quietly.
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"{PROG} {args.command}: {_report(exc, args)}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
