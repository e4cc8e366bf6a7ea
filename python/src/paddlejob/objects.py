"""Typed views of a stored PaddleJob: :class:`Job` and its :class:`JobStatus`.

The client returns :class:`Job` objects. A Job is also a read-only mapping
of the object as the API server returned it, so code written for the dicts
the client used to return (``job["status"]["phase"]``, ``job_phase(job)``)
keeps working; ``job.raw`` is that dict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional

#: Phases of a PaddleJob (status.phase), in api/v1's order.
PHASES = ("Pending", "Starting", "Running", "Completed", "Failed", "Suspended", "Queued")
#: Modes of a PaddleJob (status.mode).
MODES = ("PS", "Collective", "Single")
#: The phases a job ends in.
TERMINAL = ("Completed", "Failed")


def _time(v: Any) -> Optional[datetime]:
    if isinstance(v, datetime):
        return v
    if isinstance(v, str) and v:
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _int(v: Any) -> Optional[int]:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class ReplicaStatus:
    """The pods of one role (status.ps, status.worker, status.heter), by state."""

    pending: int = 0
    starting: int = 0
    running: int = 0
    failed: int = 0
    succeeded: int = 0
    #: Pods still running when the job finished, which the operator stopped.
    stopped: int = 0
    unknown: int = 0
    restarts: int = 0
    #: "running/replicas", as kubectl get pdj shows it.
    ready: str = ""

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]]) -> Optional["ReplicaStatus"]:
        if not d:
            return None

        def n(k: str) -> int:
            return int(d.get(k) or 0)

        return cls(pending=n("pending"), starting=n("starting"), running=n("running"), failed=n("failed"),
                   succeeded=n("succeeded"), stopped=n("stopped"), unknown=n("unknown"), restarts=n("restarts"), ready=str(d.get("ready") or ""))


@dataclass(frozen=True)
class JobCondition:
    """A status condition: Created, Running, Succeeded, Failed, Suspended, Restarting..."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: Optional[datetime] = None

    @property
    def true(self) -> bool:
        return self.status == "True"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "JobCondition":
        return cls(type=str(d.get("type", "")), status=str(d.get("status", "")), reason=str(d.get("reason") or ""),
                   message=str(d.get("message") or ""), last_transition_time=_time(d.get("lastTransitionTime")))


@dataclass(frozen=True)
class JobProgress:
    """What the training program last reported (status.progress; docs/progress.md)."""

    percent: Optional[int] = None
    eta_seconds: Optional[int] = None
    epoch: Optional[int] = None
    total_epochs: Optional[int] = None
    step: Optional[int] = None
    #: The latest value of each metric, in the order first reported.
    metrics: Dict[str, str] = field(default_factory=dict)
    reporter: str = ""
    last_update_time: Optional[datetime] = None

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]]) -> Optional["JobProgress"]:
        if not d:
            return None
        metrics = {str(m.get("name")): str(m.get("value")) for m in d.get("metrics") or [] if isinstance(m, Mapping)}
        return cls(percent=_int(d.get("percent")), eta_seconds=_int(d.get("estimatedSecondsRemaining")), epoch=_int(d.get("epoch")),
                   total_epochs=_int(d.get("totalEpochs")), step=_int(d.get("step")), metrics=metrics,
                   reporter=str(d.get("reporter") or ""), last_update_time=_time(d.get("lastUpdateTime")))


# The sentence in which the operator writes a known failure's explanation
# into a message: "Known failure [<id>]: <cause> Fix: <fix> See <doc>"
# (internal/paddlefailure/message.go; the Go SDK parses it the same way).
_EXPLANATION = re.compile(
    r"Known failure \[([a-z0-9]+(?:-[a-z0-9]+)*)\]: (.+) Fix: (.+?) See (docs/[A-Za-z0-9._/-]+#[a-z0-9_-]+)")


@dataclass(frozen=True)
class FailureExplanation:
    """What a known failure means (docs/paddle-known-issues.md, "Failures the operator explains")."""

    #: The failure's id in the operator's table (missing-module, read-only-file-system...).
    id: str
    #: Why the container failed, naming what its log and its pod showed.
    cause: str
    #: What to change.
    fix: str
    #: Where it is described: docs/paddle-known-issues.md#<anchor>.
    doc: str

    @classmethod
    def parse(cls, message: str) -> Optional["FailureExplanation"]:
        """The explanation in a condition's or an event's message, or None."""
        m = _EXPLANATION.search(message)
        if not m:
            return None
        return cls(id=m.group(1), cause=m.group(2), fix=m.group(3), doc=m.group(4))


@dataclass(frozen=True)
class JobStatus:
    """status of a PaddleJob."""

    #: One of PHASES; "" before the operator has seen the job.
    phase: str = ""
    #: PS, Collective or Single.
    mode: str = ""
    ps: Optional[ReplicaStatus] = None
    worker: Optional[ReplicaStatus] = None
    heter: Optional[ReplicaStatus] = None
    conditions: List[JobCondition] = field(default_factory=list)
    start_time: Optional[datetime] = None
    completion_time: Optional[datetime] = None
    restart_count: int = 0
    progress: Optional[JobProgress] = None

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]]) -> "JobStatus":
        d = d or {}
        return cls(
            phase=str(d.get("phase") or ""), mode=str(d.get("mode") or ""),
            ps=ReplicaStatus.from_dict(d.get("ps")), worker=ReplicaStatus.from_dict(d.get("worker")), heter=ReplicaStatus.from_dict(d.get("heter")),
            conditions=[JobCondition.from_dict(c) for c in d.get("conditions") or [] if isinstance(c, Mapping)],
            start_time=_time(d.get("startTime")), completion_time=_time(d.get("completionTime")),
            restart_count=int(d.get("restartCount") or 0), progress=JobProgress.from_dict(d.get("progress")),
        )

    def condition(self, type_: str) -> Optional[JobCondition]:
        """The condition of a type, or None."""
        return next((c for c in self.conditions if c.type == type_), None)

    @property
    def finished(self) -> bool:
        return self.phase in TERMINAL

    @property
    def failure_explanation(self) -> Optional[FailureExplanation]:
        """The explanation of the job's latest failure when the operator knows it, else None.

        The latest failure is the Failed condition's when the job failed,
        else the Restarting condition's (the failure the job last restarted
        after, kept once its pods run again).
        """
        failed = self.condition("Failed")
        if failed and failed.true:
            return FailureExplanation.parse(failed.message)
        restarting = self.condition("Restarting")
        return FailureExplanation.parse(restarting.message) if restarting else None

    @property
    def pending_reason(self) -> str:
        """Why a Pending job's pods cannot run ("reason: message"), in the
        scheduler's or the kubelet's words with the pods named, "" when
        nothing holds them (Running condition, reason Unschedulable or
        CannotStart)."""
        c = self.condition("Running")
        if self.phase == "Pending" and c and not c.true and c.reason in ("Unschedulable", "CannotStart"):
            return f"{c.reason}: {c.message}"
        return ""

    @property
    def failure_message(self) -> str:
        """Why a failed job failed ("reason: message"), "" when it has not."""
        c = self.condition("Failed")
        if c and c.true:
            return f"{c.reason}: {c.message}".strip(": ")
        return ""


class Job(Mapping[str, Any]):
    """A PaddleJob as the API server returned it.

    Typed fields — ``name``, ``namespace``, ``uid``, ``labels``,
    ``created``, ``spec`` (a dict), ``replicas`` (per role) and ``status``
    (a :class:`JobStatus`) — and, for code written for the client's former
    dicts, a read-only mapping of the object itself (``job["metadata"]``).
    ``to_dict()`` and ``to_yaml()`` give the object back.
    """

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.raw: Dict[str, Any] = dict(obj)
        meta = self.raw.get("metadata") or {}
        self.name: str = str(meta.get("name", ""))
        self.namespace: str = str(meta.get("namespace", ""))
        self.uid: str = str(meta.get("uid", ""))
        self.labels: Dict[str, str] = dict(meta.get("labels") or {})
        self.created: Optional[datetime] = _time(meta.get("creationTimestamp"))
        self.resource_version: str = str(meta.get("resourceVersion", ""))
        self.spec: Dict[str, Any] = dict(self.raw.get("spec") or {})
        self.status: JobStatus = JobStatus.from_dict(self.raw.get("status"))

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def replicas(self) -> Dict[str, int]:
        """The replicas of each role the job has: {"ps": 2, "worker": 3}."""
        return {r: int((self.spec.get(r) or {}).get("replicas", 1)) for r in ("ps", "worker", "heter") if r in self.spec}

    # The mapping of the former dicts.
    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def to_dict(self) -> Dict[str, Any]:
        """The object, as a dict (a copy)."""
        import copy

        return copy.deepcopy(self.raw)

    def to_yaml(self) -> str:
        """The object as YAML (needs PyYAML, which the kubernetes client brings)."""
        import yaml

        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    def __repr__(self) -> str:
        return f"Job(name={self.name!r}, namespace={self.namespace!r}, phase={self.status.phase!r}, replicas={self.replicas!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Job):
            return self.raw == other.raw
        if isinstance(other, Mapping):
            return self.raw == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
