"""Typed views of a stored PaddleJob: :class:`Job` and its :class:`JobStatus`.

The client returns :class:`Job` objects. A Job is also a read-only mapping
of the object as the API server returned it, so code written for the dicts
the client used to return (``job["status"]["phase"]``, ``job_phase(job)``)
keeps working; ``job.raw`` is that dict.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterator, List, Mapping, Optional

#: Phases of a PaddleJob (status.phase), in api/v1's order.
PHASES = ("Pending", "Starting", "Running", "Completed", "Failed", "Suspended", "Queued")
#: Modes of a PaddleJob (status.mode).
MODES = ("PS", "Collective", "Single")
#: The phases a job ends in.
TERMINAL = ("Completed", "Failed")


# RFC 3339 as the API server writes times (metav1.Time, and MicroTime with
# its six fractional digits), parsed here rather than by
# datetime.fromisoformat, which before Python 3.11 takes neither "Z" nor
# fractions of other than 3 or 6 digits.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))", re.ASCII)


def _time(v: Any) -> Optional[datetime]:
    """A time of the object as an aware datetime in UTC; None when missing or
    not a time (one odd value never fails reading the rest)."""
    if isinstance(v, datetime):
        return v.astimezone(timezone.utc) if v.tzinfo else v.replace(tzinfo=timezone.utc)
    m = _RFC3339.fullmatch(v) if isinstance(v, str) else None
    if not m:
        return None
    y, mo, d, h, mi, s, frac, z, sign, oh, om = m.groups()
    offset = timedelta() if z else (1 if sign == "+" else -1) * timedelta(hours=int(oh), minutes=int(om))
    try:
        # Fractions beyond microseconds are truncated, as Go keeps nanoseconds.
        t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int((frac or "0")[:6].ljust(6, "0")),
                     tzinfo=timezone(offset))
    except ValueError:  # month 13, an offset of 24 hours...
        return None
    return t.astimezone(timezone.utc)


# A metric's value as the status holds it: a decimal number (api/v1
# ProgressMetric). Checked before float(), which also takes "nan", "1_000",
# spaces and other scripts' digits; the Go SDK's LatestMetrics accepts
# exactly the same.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def _metric(v: Any) -> Optional[float]:
    """A metric's value as a float; None when it is not a finite decimal number."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str) and _DECIMAL.fullmatch(v):
        f = float(v)
    else:
        return None
    return f if math.isfinite(f) else None


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
    #: When the condition's status last changed (UTC).
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
    #: The latest value of each metric as a float, in the order first
    #: reported. A value that is not a finite decimal number (the operator
    #: never writes one) is left out; the status as served keeps it
    #: (``job["status"]["progress"]["metrics"]``).
    metrics: Dict[str, float] = field(default_factory=dict)
    reporter: str = ""
    #: When the operator received the report (UTC).
    last_update_time: Optional[datetime] = None

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]]) -> Optional["JobProgress"]:
        if not d:
            return None
        metrics: Dict[str, float] = {}
        for m in d.get("metrics") or []:
            value = _metric(m.get("value")) if isinstance(m, Mapping) else None
            if value is not None:
                metrics[str(m.get("name"))] = value
        return cls(percent=_int(d.get("percent")), eta_seconds=_int(d.get("estimatedSecondsRemaining")), epoch=_int(d.get("epoch")),
                   total_epochs=_int(d.get("totalEpochs")), step=_int(d.get("step")), metrics=metrics,
                   reporter=str(d.get("reporter") or ""), last_update_time=_time(d.get("lastUpdateTime")))


@dataclass(frozen=True)
class MetricPoint:
    """One recorded value of a metric."""

    #: When the operator received the report, to the millisecond (UTC).
    time: datetime
    value: float
    #: The training step the program reported with it, if any.
    step: Optional[int] = None


@dataclass(frozen=True)
class MetricSeries:
    """One metric's recorded curve, oldest point first."""

    name: str
    points: List[MetricPoint] = field(default_factory=list)

    @classmethod
    def from_history(cls, history: Mapping[str, Any]) -> List["MetricSeries"]:
        """The curves of a metric history as the operator writes it (the
        ConfigMap NAME-metrics' history.json: [unix seconds, value] pairs, the
        steps aside), in the order first reported. A point that is not two
        finite numbers (the operator never writes one) is left out."""
        out = []
        for s in history.get("metrics") or []:
            if not isinstance(s, Mapping):
                continue
            steps: List[Any] = s["steps"] if isinstance(s.get("steps"), list) else []
            points = []
            for i, p in enumerate(s.get("points") or []):
                t, v = (_metric(p[0]), _metric(p[1])) if isinstance(p, list) and len(p) == 2 else (None, None)
                if t is None or v is None:
                    continue
                try:
                    # Whole milliseconds, as the operator rounds them: a float's
                    # seconds would drift by a microsecond.
                    when = _EPOCH + timedelta(milliseconds=round(t * 1000))
                except OverflowError:  # beyond the year 9999
                    continue
                points.append(MetricPoint(time=when, value=v, step=_int(steps[i]) if i < len(steps) else None))
            out.append(cls(name=str(s.get("name", "")), points=points))
        return out


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


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
    #: When the operator first saw the job active (UTC), as every time here:
    #: an aware datetime, None when the status has none or it is not a time.
    start_time: Optional[datetime] = None
    #: When the job completed or failed.
    completion_time: Optional[datetime] = None
    restart_count: int = 0
    progress: Optional[JobProgress] = None
    #: When the operator last restarted the job or recreated a failed pod
    #: (to the microsecond).
    last_restart_time: Optional[datetime] = None

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]]) -> "JobStatus":
        d = d or {}
        return cls(
            phase=str(d.get("phase") or ""), mode=str(d.get("mode") or ""),
            ps=ReplicaStatus.from_dict(d.get("ps")), worker=ReplicaStatus.from_dict(d.get("worker")), heter=ReplicaStatus.from_dict(d.get("heter")),
            conditions=[JobCondition.from_dict(c) for c in d.get("conditions") or [] if isinstance(c, Mapping)],
            start_time=_time(d.get("startTime")), completion_time=_time(d.get("completionTime")),
            restart_count=int(d.get("restartCount") or 0), progress=JobProgress.from_dict(d.get("progress")),
            last_restart_time=_time(d.get("lastRestartTime")),
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
