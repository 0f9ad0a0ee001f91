"""What the store tool reports: :class:`Refused`, the one exception for a store or request it
will not act on, and :func:`explain`, the one line a failure of the user's environment (the
disk, the file system, the network, the credentials) gets from the command line, saying what
to do.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

__all__ = ["Refused", "environment_failure", "explain"]


class Refused(Exception):
    """The store is not what the command expects, or it is invalid; nothing was changed.

    The message names what was found and what the command expects (the CLI prints it and exits
    with status 1).
    """


# errno families: what the user can do about each.
_DENIED = (errno.EACCES, errno.EPERM)
_NETWORK = {
    errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ETIMEDOUT,
    errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN,
}  # fmt: skip
_ADVICE = {
    **dict.fromkeys((errno.ENOSPC, errno.EDQUOT), "free some space there, or write somewhere else"),
    errno.EROFS: "copy the store to a writable place and run the command there",
    **dict.fromkeys(
        _DENIED,
        "check its permissions and those of its directory (ls -l), or run as a user allowed "
        "to access it",
    ),
    **dict.fromkeys(
        (errno.ENOENT, errno.ENOTDIR), "check the path (was it moved or deleted meanwhile?)"
    ),
    errno.EIO: "the disk or network file system failed; check it (dmesg) and try again",
    errno.EMFILE: "too many files are open; raise the limit (ulimit -n) and try again",
    errno.ENFILE: "the system has too many files open; try again later",
    errno.ENOMEM: "the system ran out of memory; free some, or work on a smaller selection",
}
_OTHER = "the system refused the operation; fix what it names and try again"
# botocore's (under s3fs) and obstore's errors for an unreachable endpoint, for missing or
# refused credentials, and for any other failure of the object store: (module, class name).
_CONNECTION = (
    ("botocore.exceptions", "ConnectionError"),
    ("botocore.exceptions", "HTTPClientError"),
)
_CREDENTIALS = (
    ("botocore.exceptions", "NoCredentialsError"),
    ("botocore.exceptions", "PartialCredentialsError"),
    ("botocore.exceptions", "CredentialRetrievalError"),
    ("obstore.exceptions", "UnauthenticatedError"),
    ("obstore.exceptions", "PermissionDeniedError"),
)
_OBJECT_STORE = (("obstore.exceptions", "BaseError"),)
# Where an AWS client asks the instance metadata service for credentials when it found none.
_IMDS_TOKEN = "/latest/api/token"
# S3 error codes (botocore's ClientError) that mean the credentials are wrong or lack a right.
_DENIED_CODES = {
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
    "InvalidToken", "AllBucketsDisabled", "Forbidden", "403",
}  # fmt: skip


def _types(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The named exception classes of the modules already loaded (a library that was never
    imported cannot have raised)."""
    modules = ((sys.modules.get(module), name) for module, name in names)
    return tuple(getattr(m, name) for m, name in modules if hasattr(m, name))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )


def _client_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return str(code) if code is not None else None


def environment_failure(exc: BaseException) -> BaseException | None:
    """The failure of the environment in ``exc``'s chain (outermost first), or None."""
    ours = (*_types(_CONNECTION), *_types(_CREDENTIALS), *_types(_OBJECT_STORE), OSError)
    for failure in _chain(exc):
        if isinstance(failure, ours) or _client_code(failure) in _DENIED_CODES:
            return failure
    return None


def _said(failure: BaseException) -> str:
    """What the system or library said: the first line, without the file name OSError adds."""
    if isinstance(failure, OSError) and failure.strerror:
        text = failure.strerror
    else:
        text = str(failure) or type(failure).__name__
    return text.strip().splitlines()[0].strip() if text.strip() else type(failure).__name__


def _endpoint(failure: BaseException) -> str | None:
    """The endpoint (scheme://host:port) a connection failure names, if it names one."""
    kwargs = getattr(failure, "kwargs", None)  # botocore's errors keep their arguments
    url = kwargs.get("endpoint_url") if isinstance(kwargs, dict) else None
    host = getattr(failure, "host", None)
    if url:
        parts = urlsplit(str(url))
        return f"{parts.scheme}://{parts.netloc}"
    if host:
        port = getattr(failure, "port", None)
        return f"{host}:{port}" if port else str(host)
    return None


def explain(exc: BaseException, where: str, remote: str | None = None) -> str | None:
    """The one line the CLI prints for a failure of the environment in ``exc``'s chain (None
    when there is none: the caller reports a bug). A :class:`Refused` is reported as it is:
    where the tool refuses after a store's error (a conditional PUT that failed), that error
    is its reason, not the environment's failure.

    ``where`` is what the command worked on (its PATH); ``remote``, for a URL, says which
    variables and options its backend reads for credentials and the endpoint
    (:func:`zarr_ndarray_tool._remote.settings`).
    """
    failure = environment_failure(exc)
    if failure is None:
        return None
    said = _said(failure)
    code: int = failure.errno if isinstance(failure, OSError) and failure.errno else 0
    if (
        isinstance(failure, _types(_CREDENTIALS))
        or _client_code(failure) in _DENIED_CODES
        or _IMDS_TOKEN in said  # obstore found no credentials and asked the instance metadata
    ):
        fix = remote or "check the credentials the store's library reads"
        return f"{where}: the credentials are missing or refused ({said}); {fix}."
    if isinstance(failure, (*_types(_CONNECTION), socket.gaierror)) or code in _NETWORK:
        target = _endpoint(failure) or "the store"
        fix = f"; {remote}" if remote else ""
        return (
            f"{where}: cannot connect to {target} ({said}); check that the server runs and "
            f"that the endpoint is right{fix}."
        )
    if isinstance(failure, _types(_OBJECT_STORE)):
        fix = remote or "check the store's options"
        return (
            f"{where}: the object store failed ({said}); check the endpoint and credentials: {fix}."
        )
    if code in _DENIED and remote is not None:
        return f"{where}: access denied ({said}); {remote}."
    filename = getattr(failure, "filename", None)
    subject = os.fsdecode(filename) if filename else where
    name = f" ({errno.errorcode[code]})" if code in errno.errorcode else ""
    return f"{subject}: {said}{name}; {_ADVICE.get(code, _OTHER)}."
