"""What the tool reports: :class:`Outcome`, :class:`Refused` (nothing changed) and
:func:`explain`, the one line with what to do for a failure of the user's environment."""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Outcome", "Progress", "Refused", "environment_failure", "explain"]

#: A progress callback: ``progress(done, total)``, called as an operation advances.
Progress = Callable[[int, int], None]


class Refused(Exception):
    """The store is not what the command expects, or it is invalid; nothing was changed. The
    message names what was found and what was expected (the CLI exits with status 1)."""


@dataclass(frozen=True)
class Outcome:
    """What a command did: its message, and for a dry run the ``zarr.json`` diff."""

    message: str
    diff: str = ""


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 ("1 cell", "2 cells")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def steps(progress: Progress | None, total: int) -> Callable[[int], None]:
    """``advance(n)``, reporting ``n`` more steps done of ``total`` to ``progress`` (if any)."""
    done = [0]

    def advance(n: int) -> None:
        done[0] = min(done[0] + n, total)
        if progress is not None:
            progress(done[0], total)

    advance(0)
    return advance


_DENIED = (errno.EACCES, errno.EPERM)
_NETWORK = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ETIMEDOUT}
_NETWORK |= {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}
_ADVICE_BY_NAME = {
    "ENOSPC EDQUOT": "free some space there, or write somewhere else",
    "EROFS": "copy the store to a writable place and run the command there",
    "EACCES EPERM": "check its permissions and those of its directory (ls -l), or run as a user "
    "allowed to access it",
    "ENOENT ENOTDIR": "check the path (was it moved or deleted meanwhile?)",
    "EIO": "the disk or network file system failed; check it (dmesg) and try again",
    "EMFILE": "too many files are open; raise the limit (ulimit -n) and try again",
    "ENFILE": "the system has too many files open; try again later",
    "ENOMEM": "the system ran out of memory; free some, or work on a smaller selection",
}
_ADVICE = {
    getattr(errno, n): text for names, text in _ADVICE_BY_NAME.items() for n in names.split()
}
# botocore's (under s3fs) and obstore's errors, looked up only in modules already imported (a
# library that was never imported cannot have raised).
_BOTO, _OBSTORE = "botocore.exceptions.", "obstore.exceptions."
_CONNECTION = [_BOTO + n for n in ("ConnectionError", "HTTPClientError")]
_CREDENTIALS = [_BOTO + n for n in ("NoCredentialsError", "PartialCredentialsError")]
_CREDENTIALS += [_BOTO + "CredentialRetrievalError", _OBSTORE + "UnauthenticatedError"]
_CREDENTIALS += [_OBSTORE + "PermissionDeniedError"]
# Where an AWS client asks the instance metadata service for credentials when it found none.
_IMDS_TOKEN = "/latest/api/token"
# S3 error codes (botocore's ClientError) that mean the credentials are wrong or lack a right.
_DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"}
_DENIED_CODES |= {"InvalidToken", "AllBucketsDisabled", "Forbidden", "403"}
_AWS = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)"
_AZURE = "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN"
_SETTINGS = {  # where each backend finds credentials and the endpoint, by URL scheme
    ("s3", "fsspec"): f"s3fs (botocore) reads the credentials from {_AWS}, AWS_PROFILE or "
    "~/.aws/credentials, and the endpoint from AWS_ENDPOINT_URL or --storage-options "
    '\'{"endpoint_url": "http://host:port"}\'',
    ("s3", "obstore"): f"obstore reads the credentials from {_AWS}, the region from AWS_REGION, "
    "and the endpoint from AWS_ENDPOINT_URL (AWS_ALLOW_HTTP=true for http://) or --storage-options "
    '\'{"endpoint": "http://host:port", "client_options": {"allow_http": true}}\'',
    ("gs", "fsspec"): "gcsfs reads the credentials from GOOGLE_APPLICATION_CREDENTIALS or `gcloud "
    "auth application-default login`, the endpoint from STORAGE_EMULATOR_HOST",
    ("gs", "obstore"): "obstore reads the credentials from GOOGLE_SERVICE_ACCOUNT (a JSON file), "
    "GOOGLE_SERVICE_ACCOUNT_KEY or GOOGLE_APPLICATION_CREDENTIALS",
    ("az", "fsspec"): "adlfs reads the credentials from AZURE_STORAGE_CONNECTION_STRING, or "
    + _AZURE,
    ("az", "obstore"): f"obstore reads the credentials from {_AZURE}, the endpoint from "
    "AZURE_STORAGE_ENDPOINT",
}
_SCHEMES = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az", "azure": "az"}


def settings(url: str, backend: str) -> str | None:
    """Where ``backend`` finds credentials and the endpoint for ``url`` (None if local)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", "file", "memory"):
        return None
    return _SETTINGS.get((_SCHEMES.get(scheme, scheme), backend)) or (
        f"{backend} reads the credentials and endpoint of {scheme}:// as it documents; "
        "--storage-options JSON (passed to it as they are)"
    )


def _types(names: list[str]) -> tuple[type[BaseException], ...]:
    found = (name.rpartition(".") for name in names)
    return tuple(getattr(sys.modules[m], n) for m, _, n in found if hasattr(sys.modules.get(m), n))


def _code(exc: BaseException) -> str | None:
    """The error code of botocore's ClientError."""
    response = getattr(exc, "response", None)
    return str((response.get("Error") or {}).get("Code")) if isinstance(response, dict) else None


def environment_failure(exc: BaseException) -> BaseException | None:
    """The failure of the environment in ``exc``'s chain (``exc`` and the exceptions it was
    raised from or while handling, outermost first), or None."""
    ours = (*_types([*_CONNECTION, *_CREDENTIALS, _OBSTORE + "BaseError"]), OSError)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ours) or _code(current) in _DENIED_CODES:
            return current
        seen.add(id(current))
        context = None if current.__suppress_context__ else current.__context__
        current = current.__cause__ or context
    return None


def explain(exc: BaseException, where: str, remote: str | None = None) -> str | None:
    """The one line for a failure of the environment in ``exc``'s chain, or None (the caller
    reports a bug). ``where`` is the command's PATH; ``remote``, for a URL, which variables and
    options its backend reads (:func:`settings`)."""
    if (failure := environment_failure(exc)) is None:
        return None
    text = failure.strerror if isinstance(failure, OSError) and failure.strerror else str(failure)
    said = text.strip().splitlines()[0].strip() if text.strip() else type(failure).__name__
    code: int = failure.errno if isinstance(failure, OSError) and failure.errno else 0
    credentials = isinstance(failure, _types(_CREDENTIALS)) or _code(failure) in _DENIED_CODES
    if credentials or _IMDS_TOKEN in said:
        fix = remote or "check the credentials the store's library reads"
        return f"{where}: the credentials are missing or refused ({said}); {fix}."
    if isinstance(failure, (*_types(_CONNECTION), socket.gaierror)) or code in _NETWORK:
        kwargs, host = getattr(failure, "kwargs", None), getattr(failure, "host", None)
        url = urlsplit(str(kwargs.get("endpoint_url") or "")) if isinstance(kwargs, dict) else None
        port = f":{failure.port}" if getattr(failure, "port", None) else ""  # type: ignore[attr-defined]
        target = f"{url.scheme}://{url.netloc}" if url and url.netloc else host and f"{host}{port}"
        fix = f"; {remote}" if remote else ""
        return (
            f"{where}: cannot connect to {target or 'the store'} ({said}); check that the server "
            f"runs and that the endpoint is right{fix}."
        )
    if isinstance(failure, _types([_OBSTORE + "BaseError"])):
        fix = "check the endpoint and credentials: " + (remote or "check the store's options")
        return f"{where}: the object store failed ({said}); {fix}."
    if code in _DENIED and remote is not None:
        return f"{where}: access denied ({said}); {remote}."
    filename = getattr(failure, "filename", None)
    name = f" ({errno.errorcode[code]})" if code in errno.errorcode else ""
    advice = _ADVICE.get(code, "the system refused the operation; fix what it names and try again")
    return f"{os.fsdecode(filename) if filename else where}: {said}{name}; {advice}."
