"""The ``zarr-ndarray`` console script: each subcommand is the :mod:`.api` function of its name,
its help the docstring of its ``_run_`` function. The exit statuses are in the epilog; anything
else than a refusal or a failure of the environment is a bug, one line on stderr
(``ZARR_NDARRAY_TRACEBACK=1`` shows its traceback)."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from zarr_ndarray_tool import _documents as docs
from zarr_ndarray_tool import api
from zarr_ndarray_tool._export import COMPRESSIONS, INSTALL_HINT
from zarr_ndarray_tool._stores import BACKENDS
from zarr_ndarray_tool._tree import DEFAULT_SAMPLE
from zarr_ndarray_tool.errors import Outcome, Progress, Refused, explain, settings

__all__ = ["build_parser", "main"]

PROG = "zarr-ndarray"
_PATH = (
    "the array (upgrade, downgrade: or a Zarr v2 hierarchy; export: or a group): a directory "
    "(s.zarr/group/array), a zip store (s.zip), an array in one (s.zip::group/array), or a URL "
    "(s3://bucket/s.zarr/array, gs://, az://, memory://, file://)"
)
_EXAMPLE = """'{"endpoint_url": "http://127.0.0.1:9000"}'"""


def _usage(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as argparse's ``type``: its ValueError becomes a usage error with its message."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return convert


class _Version(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        lines = [f"Python {platform.python_version()}"]
        dists = "zarr-ndarray-tool zarr-ndarray-dtype zarr-vlen-ndarray zarr-ragged-ndarray"
        for dist in f"{dists} nd-arrow zarr numcodecs numpy pyarrow".split():
            try:
                lines.insert(-1, f"{dist} {metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                note = f" (export needs it: {INSTALL_HINT})" * (dist in ("nd-arrow", "pyarrow"))
                lines.insert(-1, f"{dist}: not installed{note}")
        _say("\n".join(lines))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect, convert, verify and export Zarr v3 arrays of ragged ndarray "
        "elements (the ndarray data type, with the vlen-ndarray or the ragged-ndarray codec). "
        "Rewrites change only metadata documents, atomically; chunks are never rewritten.",
        epilog="Exit status: 0 ok, 1 refused or invalid store (nothing changed) or a failure "
        "of the environment (disk, file system, network, credentials), 2 usage, 128 + the signal "
        "when interrupted, 141 output pipe closed.",
    )
    what = "print the versions of this tool and of the packages it works with"
    parser.add_argument("--version", action=_Version, nargs=0, help=what)
    quiet = "no progress bar on a terminal"
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet)  # before the command too
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands: dict[str, argparse.ArgumentParser] = {}
    for name in ("info", "upgrade", "downgrade", "migrate", "verify", "export"):
        run = globals()[f"_run_{name}"]
        summary, _, description = inspect.getdoc(run).partition("\n\n")  # type: ignore[union-attr]
        p = commands[name] = sub.add_parser(name, help=summary, description=description)
        p.set_defaults(func=run, parser=p)
        p.add_argument("store", metavar="PATH", help=_PATH)
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=quiet)
        what = f"for a URL: the store's options, a JSON object, e.g. {_EXAMPLE}"
        p.add_argument("--storage-options", metavar="JSON", help=what)
        what = "for a URL: zarr's FsspecStore (default) or ObjectStore"
        p.add_argument("--backend", choices=BACKENDS, default="fsspec", help=what)
        if name in ("upgrade", "downgrade", "migrate"):
            p.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    commands["info"].add_argument("--json", action="store_true", help="print the report as JSON")
    p, count = commands["upgrade"], _usage(docs.parse_count)
    what = "element dtype, e.g. float32 (a Zarr v2 VLenArray array: default its own)"
    p.add_argument("--dtype", type=_usage(docs.parse_dtype_arg), help=what)
    what = "element pattern [null, d1, ..., dk]: null,2 or None,2 or [null,2] (v2 VLenArray: null)"
    p.add_argument("--shape", type=_usage(docs.parse_shape_arg), help=what)
    checks = p.add_mutually_exclusive_group()
    checks.add_argument("--verify-all", action="store_true", help="check every chunk object")
    what = f"check N chunk objects spread over the array (default {DEFAULT_SAMPLE})"
    checks.add_argument("--sample", type=count, default=DEFAULT_SAMPLE, metavar="N", help=what)
    what = "list at most N bad chunks (default 20), count the rest"
    commands["verify"].add_argument("--max-errors", type=count, default=20, metavar="N", help=what)
    p = commands["export"]
    what = "the file: Parquet, or Arrow IPC if it ends in .arrow, .feather or .ipc"
    p.add_argument("--parquet", required=True, type=Path, metavar="OUT", help=what)
    p.add_argument("--compression", choices=COMPRESSIONS, default="zstd", help="IPC: zstd/lz4/none")
    p.add_argument("--compression-level", type=int, metavar="N", help="its level")
    what = "PATH is a group: export this array of it (repeat for several; default: all)"
    p.add_argument("--array", action="append", dest="arrays", metavar="NAME", help=what)
    p.add_argument("--explode", action="store_true", help="a row per row of each cell")
    p.add_argument("--column", help="name of the cell column (default: the array's name)")
    p.add_argument("--dims", type=_usage(docs.parse_names), help="names of the cells' axes: n,xy")
    what = "only these cells, in numpy's syntax: ints, slices of step 1, '...' (e.g. '0:10, 5')"
    p.add_argument("--select", type=_usage(docs.parse_selection), default=..., help=what)
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    return parser


@contextlib.contextmanager
def _bar(args: argparse.Namespace, label: str) -> Iterator[Progress | None]:
    """A progress line on stderr, on a terminal only (``-q`` turns it off), erased at the end."""
    if args.quiet or not sys.stderr.isatty():
        yield None
        return
    last = [0.0, False]

    def draw(done: int, total: int) -> None:
        if total and (done == total or time.monotonic() - last[0] >= 0.1):
            filled = 30 * done // total
            sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            sys.stderr.flush()
            last[:] = [time.monotonic(), True]

    try:
        yield draw
    finally:
        if last[1]:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _say(text: str) -> None:
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:  # /dev/full, a full disk under a redirection: name the output
        _silence_stdout()
        raise OSError(exc.errno, exc.strerror, "standard output") from exc


def _call(args: argparse.Namespace, function: Callable[..., Any], label: str = "") -> Any:
    """``function`` (of :mod:`.api`) on PATH with the command's options it takes (the names are
    the same), the storage options parsed, and a progress line."""
    with contextlib.suppress(ValueError):
        args.storage_options = json.loads(args.storage_options or "{}")
    if not isinstance(args.storage_options, dict):
        what = f"--storage-options {args.storage_options!r} is not a valid JSON object"
        raise Refused(f"{what}; give e.g. {_EXAMPLE}.")
    names = {*inspect.signature(function).parameters, "storage_options", "backend"}
    with _bar(args, label) as args.progress:
        return function(**{k: v for k, v in vars(args).items() if k in names})


def _show(outcome: Outcome) -> int:
    sys.stdout.write(outcome.diff)
    _say(outcome.message)
    return 0


def _run_info(args: argparse.Namespace) -> int:
    """data type, codecs, chunks, extents

    Describe the array (data type, chunk grid, codecs, fill value, bytes) and the distribution of
    its cells' extents in every written chunk; chunks that do not decode are counted (status 1)."""
    result = _call(args, api.info, "reading chunks")
    _say(json.dumps(result.report, indent=2) if args.json else result.message)
    if bad := result.report.get("unreadable_chunks"):  # status 1, the first named on stderr
        first, objects = result.report["unreadable"][0], result.report["written_chunks"]
        what = f"{bad} of {objects} chunk objects could not be read; run `verify` to check each"
        raise Refused(f"{result.report['path']}: {first}; {what}.")
    return 0


def _run_upgrade(args: argparse.Namespace) -> int:
    """variable_length_bytes + vlen-bytes (or Zarr v2 VLenArray/VLenBytes) -> ndarray

    Type a raw-bytes array as ndarray + vlen-ndarray (--dtype, --shape), or upgrade a Zarr v2
    ragged array or hierarchy (a HyperSpy .zspy store) in place, its chunks checked first."""
    if args.dtype is not None and args.shape is None:
        args.parser.error("--dtype needs --shape (the element pattern, e.g. --shape null,2)")
    return _show(_call(args, api.upgrade, "checking chunks"))


def _run_downgrade(args: argparse.Namespace) -> int:
    """ndarray + vlen-ndarray -> variable_length_bytes + vlen-bytes

    For readers without this package (raw bytes elements); an array or hierarchy upgraded from Zarr
    v2 gets its v2 documents back."""
    return _show(_call(args, api.downgrade))


def _run_migrate(args: argparse.Namespace) -> int:
    """zarr-vlen-ndarray 0.1.x vlen-ndarray/inner_shape data type -> ndarray

    Rewrite the data type zarr-vlen-ndarray 0.1.x wrote (vlen-ndarray with inner_shape) as the
    ndarray data type; the chunks are not touched."""
    return _show(_call(args, api.migrate))


def _run_verify(args: argparse.Namespace) -> int:
    """decode every chunk; report every bad one

    Decode every stored chunk object (every inner chunk of a shard) with all the rules of its codec;
    name every chunk that does not decode and why (up to --max-errors; exit status 1)."""
    result = _call(args, api.verify, "decoding chunks")
    if not result.ok:
        raise Refused(result.message)  # status 1, the message on stderr
    return _show(result)


def _run_export(args: argparse.Namespace) -> int:
    """write the cells to Parquet or Arrow IPC (needs nd-arrow)

    One row per cell (an nd_arrow.array column, an int64 column per array dimension) in C order,
    to Parquet or Arrow IPC (.arrow, .feather, .ipc); a group's arrays a column each, their cells
    checked to align. OUT appears only if all succeeded. Needs zarr-ndarray-tool[export]."""
    return _show(_call(args, api.export, "exporting cells"))


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signum)  # unwinds like Ctrl-C: temporary files are removed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tool; returns the exit status (the console script exits with it)."""
    args = build_parser().parse_args(argv)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main else None
    try:
        return int(args.func(args))
    except BrokenPipeError:  # whoever read the output stopped (| head): end quietly
        _silence_stdout()
        return 141
    except KeyboardInterrupt as exc:
        signum = signal.Signals(exc.args[0] if exc.args else signal.SIGINT)
        print(f"{PROG} {args.command}: interrupted ({signum.name})", file=sys.stderr)
        return 128 + signum
    except Exception as exc:  # the one line: the environment's failure, a refusal, or a bug
        line = explain(exc, args.store, settings(args.store, args.backend))
        line = str(exc) if isinstance(exc, Refused) else line
        if line is None and os.environ.get("ZARR_NDARRAY_TRACEBACK"):
            raise
        bug = f"unexpected {type(exc).__name__}: {exc} (a bug: please report it with the "
        bug += "command; ZARR_NDARRAY_TRACEBACK=1 prints the traceback)"
        print(f"{PROG} {args.command}: {line or bug}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
