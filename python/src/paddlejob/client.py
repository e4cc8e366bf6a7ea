"""PaddleJobClient: create, get, list, wait for, read the logs and events of,
scale, suspend, resume and delete PaddleJobs, with the official Kubernetes
client. Jobs come back as :class:`paddlejob.Job` objects (typed, and still
readable as the dicts of the API); every error is a
:class:`paddlejob.PaddleJobError` naming the cluster.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, TypeVar, Union

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from . import target
from .errors import (
    ApiError,
    ClusterUnreachableError,
    InvalidArgumentError,
    JobFailedError,
    NoClusterError,
    NotFoundError,
    PaddleJobError,
    WaitTimeoutError,
)
from ._logs import LogLine, follow_logs
from ._transport import _STREAM_ENDED, _UNREACHABLE, _api_error, _reason
from .job import GROUP, LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, MAX_REPLICAS, PLURAL, ROLES, VERSION, PaddleJob
from .objects import PHASES, TERMINAL, Job, JobProgress, MetricSeries

__all__ = ["LABEL_JOB_NAME", "LABEL_REPLICA_INDEX", "LABEL_REPLICA_TYPE", "PHASES", "ROLES", "TERMINAL", "Job", "LogLine",
           "PaddleJobClient", "failure_message", "job_condition", "job_phase"]

_T = TypeVar("_T")


def job_phase(job: Mapping[str, Any]) -> str:
    """status.phase of a PaddleJob ("" before the operator saw it)."""
    return str((job.get("status") or {}).get("phase") or "")


def job_condition(job: Mapping[str, Any], type_: str) -> Optional[Dict[str, Any]]:
    """The status condition of a type, or None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def failure_message(job: Mapping[str, Any]) -> str:
    """Why a failed job failed, from its Failed condition ("" when it has not)."""
    c = job_condition(job, "Failed")
    if c and c.get("status") == "True":
        return f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
    return ""


class PaddleJobClient:
    """A client of one cluster's PaddleJobs.

    The cluster is chosen as kubectl chooses it: ``config_file`` and
    ``context`` when given, else the current context of $KUBECONFIG or
    ~/.kube/config (``paddlejob up`` makes the local cluster's context
    current), else the in-cluster service account inside a pod; otherwise
    :class:`NoClusterError`. ``namespace`` defaults to the context's, else
    "default". ``api_client`` uses a configured kubernetes.client.ApiClient
    as is. ``target`` names the cluster, for messages.
    """

    def __init__(
        self,
        config_file: Optional[str] = None,
        context: Optional[str] = None,
        namespace: Optional[str] = None,
        api_client: Optional[k8s.ApiClient] = None,
    ) -> None:
        ns: Optional[str] = None
        if api_client is not None:
            self.api_client = api_client
            self.target = f"the given ApiClient ({api_client.configuration.host})"
        else:
            kubeconfig = target.kubeconfig_path(config_file)
            try:
                self.api_client = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
                ns = target.context_namespace(kubeconfig, context)
                name = context or target.current_context(kubeconfig)
                self.target = f"context {name!r} ({self.api_client.configuration.host})"
            except k8s_config.ConfigException as e:
                if config_file or context:
                    raise NoClusterError(f"kubeconfig {config_file or '(default)'} context {context or '(current)'}: {e}") from None
                try:
                    k8s_config.load_incluster_config()
                except k8s_config.ConfigException:
                    raise NoClusterError(
                        "no cluster: no kubeconfig ($KUBECONFIG or ~/.kube/config) names a current context and this is not a pod; "
                        "start the local cluster (paddlejob up), which becomes the current context, or pass config_file and context"
                    ) from None
                self.api_client = k8s.ApiClient()
                self.target = f"the in-cluster service account ({self.api_client.configuration.host})"
        self.namespace = namespace or ns or "default"
        self.custom = k8s.CustomObjectsApi(self.api_client)
        self.core = k8s.CoreV1Api(self.api_client)

    def _ns(self, namespace: Optional[str]) -> str:
        return namespace or self.namespace

    def _call(self, action: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Calls the API: its refusals become typed ApiErrors, a cluster that
        does not answer a ClusterUnreachableError; both name the cluster."""
        try:
            return fn(*args, **kwargs)
        except ApiException as e:
            raise _api_error(action, e, self.target) from None
        except _UNREACHABLE as e:
            raise ClusterUnreachableError(action, self.target, _reason(e)) from None

    # Jobs.

    def create_job(self, job: Union[PaddleJob, Mapping[str, Any]], namespace: Optional[str] = None) -> Job:
        """Creates a job (a PaddleJob, or a PaddleJob object as a dict or
        Job) and returns it as stored.

        Unknown fields are refused (strict field validation, as kubectl does).
        The namespace is ``namespace``, else the job's, else the client's.
        """
        if isinstance(job, PaddleJob):
            body = job.to_dict()
        elif isinstance(job, Job):
            body = job.to_dict()
        else:
            body = json.loads(json.dumps(dict(job)))
        meta = body.setdefault("metadata", {})
        ns = namespace or meta.get("namespace") or self.namespace
        meta["namespace"] = ns
        action = f"creating PaddleJob {ns}/{meta.get('name', '')}"
        return Job(self._call(action, self.custom.create_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, body, field_validation="Strict"))

    def train(self, job: Union[PaddleJob, Mapping[str, Any]], namespace: Optional[str] = None) -> str:
        """Creates a job and returns its name (Kubeflow's TrainerClient.train)."""
        return self.create_job(job, namespace).name

    def get_job(self, name: str, namespace: Optional[str] = None) -> Job:
        """Returns a job; NotFoundError when there is none."""
        ns = self._ns(namespace)
        return Job(self._call(f"getting PaddleJob {ns}/{name}", self.custom.get_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, name))

    def list_jobs(self, namespace: Optional[str] = None, all_namespaces: bool = False, label_selector: Optional[str] = None) -> List[Job]:
        """Returns the jobs of a namespace (or of all), those matching
        ``label_selector`` (kubectl's -l syntax) when given, sorted by
        namespace and name."""
        kwargs: Dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        if all_namespaces:
            out = self._call("listing PaddleJobs", self.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL, **kwargs)
        else:
            out = self._call("listing PaddleJobs", self.custom.list_namespaced_custom_object, GROUP, VERSION, self._ns(namespace), PLURAL, **kwargs)
        items = [Job(j) for j in out.get("items") or []]
        items.sort(key=lambda j: (j.namespace, j.name))
        return items

    def delete_job(self, name: str, namespace: Optional[str] = None, wait: bool = False, timeout: float = 120,
                   polling_interval: Optional[float] = None) -> None:
        """Deletes a job; its pods, Service and ConfigMap go with it.

        With ``wait`` it returns once the job and its pods are gone
        (WaitTimeoutError after ``timeout`` seconds), watching them, or
        looking every ``polling_interval`` seconds when given.
        """
        ns = self._ns(namespace)
        self._call(f"deleting PaddleJob {ns}/{name}", self.custom.delete_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, name,
                   propagation_policy="Background")
        if not wait:
            return
        deadline = time.monotonic() + timeout
        job: Optional[Job] = None
        while True:
            try:
                job = self.get_job(name, ns)
            except NotFoundError:
                job = None
            pods = [] if job is not None else self.get_job_pods(name, ns)
            if job is None and not pods:
                return
            if time.monotonic() > deadline:
                left = f"{len(pods)} pods" if job is None else "the job"
                raise WaitTimeoutError(job, f"PaddleJob {ns}/{name}: {left} still there {timeout:g}s after deleting it", self.target)
            wait_for = min(5.0, max(0.1, deadline - time.monotonic()))
            if polling_interval:
                time.sleep(min(polling_interval, wait_for))
            else:
                self._wait_for_change(ns, name, wait_for, pods=job is None)

    def scale_job(self, name: str, replicas: int, role: str = "worker", namespace: Optional[str] = None) -> Job:
        """Sets the replicas of a role (worker, ps or heter) of a job and returns the job."""
        if role not in ROLES:
            raise InvalidArgumentError(f"role {role!r}: want one of {', '.join(ROLES)}")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 1 <= replicas <= MAX_REPLICAS:
            raise InvalidArgumentError(f"replicas {replicas!r}: must be an integer between 1 and {MAX_REPLICAS}")
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        if role not in job.spec:
            raise InvalidArgumentError(f"PaddleJob {ns}/{name} has no {role} role to scale")
        return Job(self._call(f"scaling {role} of PaddleJob {ns}/{name} to {replicas}", self.custom.patch_namespaced_custom_object,
                              GROUP, VERSION, ns, PLURAL, name, {"spec": {role: {"replicas": replicas}}}))

    def suspend_job(self, name: str, namespace: Optional[str] = None) -> Job:
        """Suspends a job (spec.suspend): its pods are deleted, the job stays."""
        return self._set_suspend(name, namespace, True)

    def resume_job(self, name: str, namespace: Optional[str] = None) -> Job:
        """Resumes a suspended job: its pods are created again."""
        return self._set_suspend(name, namespace, False)

    def _set_suspend(self, name: str, namespace: Optional[str], suspend: bool) -> Job:
        ns = self._ns(namespace)
        verb = "suspending" if suspend else "resuming"
        return Job(self._call(f"{verb} PaddleJob {ns}/{name}", self.custom.patch_namespaced_custom_object,
                              GROUP, VERSION, ns, PLURAL, name, {"spec": {"suspend": suspend}}))

    # Waiting.

    def wait_for_job_status(
        self,
        name: str,
        status: Union[str, Iterable[str]] = "Completed",
        namespace: Optional[str] = None,
        timeout: float = 600,
        condition: Optional[str] = None,
        callback: Optional[Callable[[Job], None]] = None,
        polling_interval: Optional[float] = None,
        progress_callback: Optional[Callable[[JobProgress], None]] = None,
    ) -> Job:
        """Waits until the job's phase is one of ``status`` (or, with
        ``condition``, until that condition is True) and returns it.

        It watches the job; with ``polling_interval`` (seconds) it reads it
        that often instead. A job that fails meanwhile raises JobFailedError
        with the failure's message unless Failed is waited for; one that
        completes satisfies a wait for Running. WaitTimeoutError after
        ``timeout`` seconds. ``callback`` sees every new state of the job,
        ``progress_callback`` every new progress report of its program
        (status.progress, a :class:`paddlejob.JobProgress`).
        """
        wanted: Set[str] = {status} if isinstance(status, str) else set(status)
        for s in wanted:
            if s not in PHASES:
                raise InvalidArgumentError(f"status {s!r}: want one of {', '.join(PHASES)}")
        if polling_interval is not None and (not isinstance(polling_interval, (int, float)) or polling_interval <= 0):
            raise InvalidArgumentError(f"polling_interval {polling_interval!r}: want a number of seconds above 0")
        ns = self._ns(namespace)
        deadline = time.monotonic() + timeout
        last_progress: List[Optional[JobProgress]] = [None]

        def seen(job: Job) -> bool:
            if callback:
                callback(job)
            p = job.status.progress
            if progress_callback and p is not None and p != last_progress[0]:
                last_progress[0] = p
                progress_callback(p)
            phase = job.status.phase
            if condition is not None:
                c = job.status.condition(condition)
                if c is not None and c.true:
                    return True
            elif phase in wanted or ("Running" in wanted and phase in TERMINAL):
                return True
            if phase == "Failed":
                raise JobFailedError(job, f"PaddleJob {ns}/{name} failed: {job.status.failure_message}", self.target)
            if phase == "Completed" and condition is None:
                done = PaddleJobError(f"PaddleJob {ns}/{name} completed; it will not become {' or '.join(sorted(wanted))} [{self.target}]")
                done.target = self.target
                raise done
            return False

        job = self.get_job(name, ns)
        while True:
            if seen(job):
                return job
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                what = f"condition {condition}" if condition else f"phase {' or '.join(sorted(wanted))}"
                held = f": {job.status.pending_reason}" if job.status.pending_reason else ""
                raise WaitTimeoutError(job, f"PaddleJob {ns}/{name} did not reach {what} within {timeout:g}s (phase {job.status.phase or 'none yet'}{held})", self.target)
            if polling_interval is not None:
                time.sleep(min(polling_interval, remaining))
                job = self.get_job(name, ns)
                continue
            found = self._watch_job(ns, name, job, remaining, seen)
            if found is not None:
                return found
            job = self.get_job(name, ns)

    def _watch_job(self, ns: str, name: str, job: Job, remaining: float, seen: Callable[[Job], bool]) -> Optional[Job]:
        """Watches the job from ``job``'s version for up to ``remaining``
        seconds: the first new state ``seen`` accepts, or None when the watch
        ended first (the caller reads the job again)."""
        w = k8s_watch.Watch()
        try:
            for ev in w.stream(
                self.custom.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                field_selector=f"metadata.name={name}", resource_version=job.resource_version,
                timeout_seconds=max(1, math.ceil(remaining)), _request_timeout=remaining + 10,
            ):
                if ev["type"] == "DELETED":
                    raise NotFoundError(f"waiting for PaddleJob {ns}/{name}", 404, "NotFound", "the job was deleted while waited for", target=self.target)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    changed = Job(ev["object"])
                    if seen(changed):
                        return changed
        except ApiException as e:
            if e.status != 410:  # a too old resourceVersion: get the job again
                raise _api_error(f"watching PaddleJob {ns}/{name}", e, self.target) from None
        except _STREAM_ENDED:
            pass  # the watch's connection ended: get the job again
        finally:
            w.stop()
        return None

    def _wait_for_change(self, ns: str, name: str, seconds: float, pods: bool = False) -> None:
        """Blocks until the job (or its pods) change or seconds pass."""
        w = k8s_watch.Watch()
        try:
            if pods:
                stream = w.stream(self.core.list_namespaced_pod, ns, label_selector=f"{LABEL_JOB_NAME}={name}", timeout_seconds=max(1, math.ceil(seconds)))
            else:
                stream = w.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, field_selector=f"metadata.name={name}", timeout_seconds=max(1, math.ceil(seconds)))
            for ev in stream:
                if ev["type"] in ("DELETED", "MODIFIED"):
                    break
        except ApiException as e:
            raise _api_error(f"watching PaddleJob {ns}/{name}", e, self.target) from None
        except _STREAM_ENDED:
            pass  # the caller looks again
        finally:
            w.stop()

    # Pods, logs and events.

    def get_job_pods(self, name: str, namespace: Optional[str] = None, role: Optional[str] = None) -> List[k8s.V1Pod]:
        """The job's pods (of one role), sorted by role (ps, worker, heter) and index."""
        ns = self._ns(namespace)
        selector = f"{LABEL_JOB_NAME}={name}"
        if role:
            selector += f",{LABEL_REPLICA_TYPE}={role}"
        pods: List[k8s.V1Pod] = list(self._call(f"listing the pods of PaddleJob {ns}/{name}", self.core.list_namespaced_pod, ns, label_selector=selector).items)

        def key(p: k8s.V1Pod) -> Any:
            labels = p.metadata.labels or {}
            r = labels.get(LABEL_REPLICA_TYPE, "")
            idx = labels.get(LABEL_REPLICA_INDEX, "")
            return (ROLES.index(r) if r in ROLES else len(ROLES), int(idx) if idx.isdigit() else 0, p.metadata.name)

        return sorted(pods, key=key)

    def get_job_events(self, name: str, namespace: Optional[str] = None, include_pods: bool = False) -> List[k8s.CoreV1Event]:
        """The events about a job (and, with include_pods, its pods), oldest first."""
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        names = {name}
        if include_pods:
            names |= {p.metadata.name for p in self.get_job_pods(name, ns)}
        events = self._call(f"listing the events of PaddleJob {ns}/{name}", self.core.list_namespaced_event, ns).items
        out = [
            e for e in events
            if (e.involved_object.kind == "PaddleJob" and e.involved_object.uid == job.uid)
            or (include_pods and e.involved_object.kind == "Pod" and e.involved_object.name in names)
        ]

        def when(e: k8s.CoreV1Event) -> float:
            for t in (e.last_timestamp, e.event_time, e.first_timestamp, e.metadata.creation_timestamp):
                if t is not None:
                    return float(t.timestamp())
            return 0.0

        out.sort(key=when)
        return out

    def get_job_metric_history(self, name: str, namespace: Optional[str] = None) -> List[MetricSeries]:
        """The curve of each metric the job's training program reported, in
        the order first reported: times as UTC datetimes, values as floats.

        The operator records them in the ConfigMap NAME-metrics, about every
        second while reports come and at once when the job finishes
        (docs/progress.md); reading it needs get
        on configmaps. Empty when nothing is recorded yet or that ConfigMap is
        not the job's (not owned by it). The Go SDK's Client.MetricHistory.
        """
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        try:
            cm = self._call(f"reading the metric history of PaddleJob {ns}/{name}", self.core.read_namespaced_config_map, f"{name}-metrics", ns)
        except NotFoundError:
            return []
        owners = cm.metadata.owner_references or []
        if not any(o.kind == "PaddleJob" and o.api_version == f"{GROUP}/{VERSION}" and o.name == name and o.uid == job.uid for o in owners):
            return []
        try:
            history = json.loads((cm.data or {})["history.json"])
        except (KeyError, ValueError):
            raise PaddleJobError(f"ConfigMap {ns}/{name}-metrics holds no metric history (history.json)") from None
        return MetricSeries.from_history(history) if isinstance(history, Mapping) else []

    def get_job_logs(
        self,
        name: str,
        namespace: Optional[str] = None,
        role: str = "worker",
        index: Optional[int] = None,
        pod: Optional[str] = None,
        container: Optional[str] = None,
        follow: bool = False,
        tail_lines: Optional[int] = None,
    ) -> Iterator[LogLine]:
        """The log lines of the job's pods: one pod (``pod``, or ``role`` and
        ``index``) or every pod of ``role``.

        Without ``follow`` it returns what the pods logged so far. With
        ``follow`` it waits for each pod to start, streams its lines as they
        come until the job finishes, never repeats a line, and follows the
        newest pod (or restarted container) when one replaces another. Lines
        of several pods interleave whole.
        """
        if role not in ROLES:
            raise InvalidArgumentError(f"role {role!r}: want one of {', '.join(ROLES)}")
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        if pod is not None:
            pods = [pod]
        elif index is not None:
            pods = [f"{name}-{role}-{index}"]
        else:
            spec = job.spec.get(role)
            if spec is None:
                raise InvalidArgumentError(f"PaddleJob {ns}/{name} has no {role} role")
            pods = [f"{name}-{role}-{i}" for i in range(int(spec.get("replicas", 1)))]
        if not follow:
            return self._read_logs(ns, pods, container, tail_lines)
        return self._follow_logs(ns, name, pods, container, tail_lines)

    def _read_logs(self, ns: str, pods: List[str], container: Optional[str], tail_lines: Optional[int]) -> Iterator[LogLine]:
        for p in pods:
            kwargs: Dict[str, Any] = {}
            if container:
                kwargs["container"] = container
            if tail_lines is not None:
                kwargs["tail_lines"] = tail_lines
            text = self._call(f"reading the log of pod {ns}/{p}", self.core.read_namespaced_pod_log, p, ns, **kwargs)
            for line in str(text).splitlines():
                yield LogLine(p, line)

    def _follow_logs(self, ns: str, job: str, pods: List[str], container: Optional[str], tail_lines: Optional[int]) -> Iterator[LogLine]:
        return follow_logs(self, ns, job, pods, container, tail_lines)
