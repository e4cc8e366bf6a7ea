"""The SDK's exceptions: every one is a :class:`PaddleJobError`.

Those of a client name its cluster: ``target`` is the client's target
(``context 'paddlejob' (https://127.0.0.1:6443)``), and the message ends
with it, so a log line says which cluster refused or could not be reached.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


class PaddleJobError(Exception):
    """The base of the SDK's errors. ``target`` names the cluster, when a
    client raised it."""

    target: Optional[str] = None


class ValidationError(PaddleJobError, ValueError):
    """Bad PaddleJob parameters, found before anything is sent.

    ``problems`` lists every problem as (parameter, message); the message
    names the value and the rule. ``parameters`` are the parameter names. It
    is a ValueError too, as it always was.
    """

    def __init__(self, problems: Sequence[Tuple[str, str]]) -> None:
        self.problems: List[Tuple[str, str]] = list(problems)
        super().__init__("invalid PaddleJob parameters: " + "; ".join(msg for _, msg in self.problems))

    @property
    def parameters(self) -> List[str]:
        return [p for p, _ in self.problems]


class InvalidArgumentError(PaddleJobError, ValueError):
    """A bad argument to a client method (a role, a replica count, a phase to
    wait for), found before any request. It is a ValueError too."""


class NoClusterError(PaddleJobError):
    """No cluster to talk to: no kubeconfig context, and not in a pod."""


class ClusterUnreachableError(PaddleJobError):
    """The client's cluster did not answer (connection refused, a timeout, a
    TLS failure); the message names the context and server."""

    def __init__(self, action: str, target: str, reason: str) -> None:
        self.action, self.target, self.reason = action, target, reason
        super().__init__(f"{action}: cannot reach {target}: {reason}")


class ApiError(PaddleJobError):
    """The API server refused a request.

    ``status`` is the HTTP status, ``reason`` the Status reason (NotFound,
    AlreadyExists, Invalid, Forbidden...), ``message`` the API server's own
    message and ``target`` the cluster.
    """

    def __init__(self, action: str, status: int, reason: str, message: str, body: Optional[Any] = None, target: Optional[str] = None) -> None:
        self.action, self.status, self.reason, self.message, self.body = action, status, reason, message, body
        self.target = target
        where = f" [{target}]" if target else ""
        super().__init__(f"{action}: {message} ({status} {reason}){where}")


class NotFoundError(ApiError):
    """The object does not exist (404)."""


class AlreadyExistsError(ApiError):
    """An object of that name exists already (409 AlreadyExists)."""


class ConflictError(ApiError):
    """The object changed meanwhile (409 Conflict)."""


class InvalidError(ApiError):
    """The API server or the operator's admission rejected the object (422 Invalid, or 400)."""


class ForbiddenError(ApiError):
    """The credentials may not do this (401, 403)."""


class JobFailedError(PaddleJobError):
    """The job failed while being waited for; ``job`` is the failed job (a :class:`paddlejob.Job`)."""

    def __init__(self, job: Any, message: str, target: Optional[str] = None) -> None:
        self.job, self.target = job, target
        super().__init__(message + (f" [{target}]" if target else ""))


class WaitTimeoutError(PaddleJobError, TimeoutError):
    """The job did not reach the status waited for in time; ``job`` is its last state."""

    def __init__(self, job: Any, message: str, target: Optional[str] = None) -> None:
        self.job, self.target = job, target
        super().__init__(message + (f" [{target}]" if target else ""))


class ImageContextError(PaddleJobError):
    """`paddlejob image context` failed; the message is the tool's."""


class NoDockerEngineError(ImageContextError):
    """The build context is written but no Docker engine answered to build it."""
