"""The SDK's exceptions."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


class ValidationError(ValueError):
    """Bad PaddleJob parameters, found before anything is sent.

    ``problems`` lists every problem as (parameter, message); the message
    names the value and the rule. ``parameters`` are the parameter names.
    """

    def __init__(self, problems: Sequence[Tuple[str, str]]) -> None:
        self.problems: List[Tuple[str, str]] = list(problems)
        super().__init__("invalid PaddleJob parameters: " + "; ".join(msg for _, msg in self.problems))

    @property
    def parameters(self) -> List[str]:
        return [p for p, _ in self.problems]


class PaddleJobError(Exception):
    """The base of the client's errors."""


class NoClusterError(PaddleJobError):
    """No cluster to talk to: no kubeconfig context, and not in a pod."""


class ApiError(PaddleJobError):
    """The API server refused a request.

    ``status`` is the HTTP status, ``reason`` the Status reason (NotFound,
    AlreadyExists, Invalid, Forbidden...) and ``message`` the API server's own
    message.
    """

    def __init__(self, action: str, status: int, reason: str, message: str, body: Optional[Any] = None) -> None:
        self.action, self.status, self.reason, self.message, self.body = action, status, reason, message, body
        super().__init__(f"{action}: {message} ({status} {reason})")


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
    """The job failed while being waited for; ``job`` is the failed PaddleJob."""

    def __init__(self, job: Any, message: str) -> None:
        self.job = job
        super().__init__(message)


class WaitTimeoutError(PaddleJobError, TimeoutError):
    """The job did not reach the status waited for in time; ``job`` is its last state."""

    def __init__(self, job: Any, message: str) -> None:
        self.job = job
        super().__init__(message)


class ImageContextError(PaddleJobError):
    """`paddlejob image context` failed; the message is the tool's."""


class NoDockerEngineError(ImageContextError):
    """The build context is written but no Docker engine answered to build it."""
