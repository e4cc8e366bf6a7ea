"""How the client talks to the cluster: the transport errors it tells
apart and the API errors it raises (:mod:`paddlejob.errors`)."""

from __future__ import annotations

import json
from typing import Any, Optional

import urllib3.exceptions
from kubernetes.client.rest import ApiException

from .errors import AlreadyExistsError, ApiError, ConflictError, ForbiddenError, InvalidError, NotFoundError

#: What the transport raises when the cluster does not answer.
_UNREACHABLE = (urllib3.exceptions.MaxRetryError, urllib3.exceptions.NewConnectionError, urllib3.exceptions.ProtocolError,
                urllib3.exceptions.TimeoutError, urllib3.exceptions.SSLError, ConnectionError)
#: What ends a watch's stream without an error of the cluster's: the server
#: closing it, a read timing out. The wait then reads the job again.
_STREAM_ENDED = (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError, ConnectionError)


def _api_error(action: str, e: ApiException, target: Optional[str] = None) -> ApiError:
    status = int(e.status or 0)
    reason, message = str(e.reason or ""), str(e.reason or "")
    body: Any = None
    try:
        body = json.loads(e.body) if e.body else None
    except (TypeError, ValueError):
        body = e.body
    if isinstance(body, dict):
        reason = str(body.get("reason") or reason)
        message = str(body.get("message") or message)
    cls: Any = ApiError
    if status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
    elif status in (400, 422):
        cls = InvalidError
    elif status in (401, 403):
        cls = ForbiddenError
    err: ApiError = cls(action, status, reason, message, body, target)
    return err


def _reason(e: BaseException) -> str:
    """The gist of a transport error: urllib3's wrapped cause, without the URL."""
    cause = getattr(e, "reason", None) or e
    text = str(cause)
    # "<urllib3.connection.HTTPSConnection object at 0x...>: Failed to establish..."
    if ">: " in text:
        text = text.split(">: ", 1)[1]
    return text
