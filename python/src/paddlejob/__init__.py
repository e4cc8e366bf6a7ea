"""paddlejob: PaddlePaddle distributed training jobs (PaddleJob) on Kubernetes.

Describe a job (:class:`PaddleJob`, :class:`CephFSVolume`; parameter-server
or collective), manage it (:class:`PaddleJobClient`, which returns
:class:`Job` objects with a typed :class:`JobStatus`), build its runtime
image's context (:func:`build_image_context`), and inside its pods find the
trainer's id and its share of the data (:func:`trainer_id`,
:func:`trainers`, :func:`dist_reader`, :func:`dataset_from_reader`) and
report the training's progress (:func:`report_progress`).

The client needs the Kubernetes client and is imported on first use, so a
trainer image needs only this package for the in-pod helpers. Every error is
a :class:`PaddleJobError`. The original paddle.job SDK's ``import paddle.job as job`` works too
(the ``paddle.job`` module of this distribution; docs/python-sdk.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyExistsError,
    ApiError,
    ClusterUnreachableError,
    ConflictError,
    ForbiddenError,
    ImageContextError,
    InvalidArgumentError,
    InvalidError,
    JobFailedError,
    NoClusterError,
    NoDockerEngineError,
    NotFoundError,
    PaddleJobError,
    ValidationError,
    WaitTimeoutError,
)
from .image import build_image_context
from .job import ROLES, CephFSVolume, PaddleJob
from .objects import PHASES, FailureExplanation, Job, JobCondition, JobProgress, JobStatus, MetricPoint, MetricSeries, ReplicaStatus
from .progress import ProgressReporter, flush_progress, report_progress
from .runtime import dataset_from_reader, dist_reader, trainer_id, trainers, wait_for_servers

if TYPE_CHECKING:
    from .client import LogLine, PaddleJobClient, failure_message, job_condition, job_phase

__version__ = "0.1.0"

_CLIENT_NAMES = ("PaddleJobClient", "LogLine", "job_phase", "job_condition", "failure_message")


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'paddlejob' has no attribute {name!r}")


__all__ = [
    "PHASES", "ROLES", "AlreadyExistsError", "ApiError", "CephFSVolume", "ClusterUnreachableError", "ConflictError",
    "FailureExplanation", "ForbiddenError", "ImageContextError", "InvalidArgumentError", "InvalidError", "Job", "JobCondition", "JobFailedError",
    "JobProgress", "JobStatus", "LogLine", "MetricPoint", "MetricSeries", "NoClusterError", "NoDockerEngineError", "NotFoundError", "PaddleJob",
    "PaddleJobClient", "PaddleJobError", "ProgressReporter", "ReplicaStatus", "ValidationError", "WaitTimeoutError",
    "build_image_context", "dataset_from_reader", "dist_reader", "failure_message", "flush_progress", "job_condition",
    "job_phase", "report_progress", "trainer_id", "trainers", "wait_for_servers",
]
