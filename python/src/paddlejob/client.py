"""PaddleJobClient: create, get, list, wait for, read the logs and events of,
scale and delete PaddleJobs, with the official Kubernetes client.
"""

from __future__ import annotations

import json
import math
import queue
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set, Union

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from . import target
from .errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    JobFailedError,
    NoClusterError,
    NotFoundError,
    PaddleJobError,
    WaitTimeoutError,
)
from .job import GROUP, MAX_REPLICAS, PLURAL, VERSION, PaddleJob

Job = Dict[str, Any]

#: Phases of a PaddleJob (status.phase).
PHASES = ("Pending", "Starting", "Running", "Completed", "Failed", "Suspended", "Queued")
TERMINAL = ("Completed", "Failed")
#: Roles of a PaddleJob, as in pod names <job>-<role>-<index>.
ROLES = ("ps", "worker", "heter")
LABEL_JOB_NAME = "batch.paddlepaddle.org/job-name"
LABEL_REPLICA_TYPE = "batch.paddlepaddle.org/replica-type"
LABEL_REPLICA_INDEX = "batch.paddlepaddle.org/replica-index"


class LogLine(NamedTuple):
    """One line of a pod's log (without its newline)."""

    pod: str
    line: str

    def __str__(self) -> str:
        return f"[{self.pod}] {self.line}"


def _api_error(action: str, e: ApiException) -> ApiError:
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
    err: ApiError = cls(action, status, reason, message, body)
    return err


def job_phase(job: Job) -> str:
    """status.phase of a PaddleJob ("" before the operator saw it)."""
    return str((job.get("status") or {}).get("phase") or "")


def job_condition(job: Job, type_: str) -> Optional[Dict[str, Any]]:
    """The status condition of a type, or None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def failure_message(job: Job) -> str:
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
            self.target = "the given ApiClient"
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

    # Jobs.

    def create_job(self, job: Union[PaddleJob, Job], namespace: Optional[str] = None) -> Job:
        """Creates a job (a PaddleJob, or a PaddleJob object as a dict) and returns it as stored.

        Unknown fields are refused (strict field validation, as kubectl does).
        The namespace is ``namespace``, else the job's, else the client's.
        """
        body = job.to_dict() if isinstance(job, PaddleJob) else json.loads(json.dumps(job))
        meta = body.setdefault("metadata", {})
        ns = namespace or meta.get("namespace") or self.namespace
        meta["namespace"] = ns
        action = f"creating PaddleJob {ns}/{meta.get('name', '')}"
        try:
            created: Job = self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body, field_validation="Strict")
        except ApiException as e:
            raise _api_error(action, e) from None
        return created

    def train(self, job: Union[PaddleJob, Job], namespace: Optional[str] = None) -> str:
        """Creates a job and returns its name (Kubeflow's TrainerClient.train)."""
        return str(self.create_job(job, namespace)["metadata"]["name"])

    def get_job(self, name: str, namespace: Optional[str] = None) -> Job:
        """Returns a job; NotFoundError when there is none."""
        ns = self._ns(namespace)
        try:
            job: Job = self.custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
        except ApiException as e:
            raise _api_error(f"getting PaddleJob {ns}/{name}", e) from None
        return job

    def list_jobs(self, namespace: Optional[str] = None, all_namespaces: bool = False) -> List[Job]:
        """Returns the jobs of a namespace (or of all), sorted by namespace and name."""
        try:
            if all_namespaces:
                out = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
            else:
                out = self.custom.list_namespaced_custom_object(GROUP, VERSION, self._ns(namespace), PLURAL)
        except ApiException as e:
            raise _api_error("listing PaddleJobs", e) from None
        items: List[Job] = list(out.get("items") or [])
        items.sort(key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"]))
        return items

    def delete_job(self, name: str, namespace: Optional[str] = None, wait: bool = False, timeout: float = 120) -> None:
        """Deletes a job; its pods, Service and ConfigMap go with it.

        With ``wait`` it returns once the job and its pods are gone
        (WaitTimeoutError after ``timeout`` seconds).
        """
        ns = self._ns(namespace)
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, propagation_policy="Background")
        except ApiException as e:
            raise _api_error(f"deleting PaddleJob {ns}/{name}", e) from None
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
                raise WaitTimeoutError(job, f"PaddleJob {ns}/{name}: {left} still there {timeout:g}s after deleting it")
            self._wait_for_change(ns, name, min(5.0, max(0.1, deadline - time.monotonic())), pods=job is None)

    def scale_job(self, name: str, replicas: int, role: str = "worker", namespace: Optional[str] = None) -> Job:
        """Sets the replicas of a role (worker, ps or heter) of a job and returns the job."""
        if role not in ROLES:
            raise ValueError(f"role {role!r}: want one of {', '.join(ROLES)}")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 1 <= replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas {replicas!r}: must be an integer between 1 and {MAX_REPLICAS}")
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        if role not in (job.get("spec") or {}):
            raise PaddleJobError(f"PaddleJob {ns}/{name} has no {role} role to scale")
        try:
            out: Job = self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, name, {"spec": {role: {"replicas": replicas}}}
            )
        except ApiException as e:
            raise _api_error(f"scaling {role} of PaddleJob {ns}/{name} to {replicas}", e) from None
        return out

    # Waiting.

    def wait_for_job_status(
        self,
        name: str,
        status: Union[str, Iterable[str]] = "Completed",
        namespace: Optional[str] = None,
        timeout: float = 600,
        condition: Optional[str] = None,
        callback: Optional[Callable[[Job], None]] = None,
    ) -> Job:
        """Waits, watching the job, until its phase is one of ``status`` (or,
        with ``condition``, until that condition is True) and returns it.

        A job that fails meanwhile raises JobFailedError with the failure's
        message unless Failed is waited for; one that completes satisfies a
        wait for Running. WaitTimeoutError after ``timeout`` seconds.
        ``callback`` sees every new state of the job.
        """
        wanted: Set[str] = {status} if isinstance(status, str) else set(status)
        for s in wanted:
            if s not in PHASES:
                raise ValueError(f"status {s!r}: want one of {', '.join(PHASES)}")
        ns = self._ns(namespace)
        deadline = time.monotonic() + timeout

        def met(job: Job) -> bool:
            phase = job_phase(job)
            if condition is not None:
                c = job_condition(job, condition)
                if c is not None and c.get("status") == "True":
                    return True
            elif phase in wanted or ("Running" in wanted and phase in TERMINAL):
                return True
            if phase == "Failed":
                raise JobFailedError(job, f"PaddleJob {ns}/{name} failed: {failure_message(job)}")
            if phase == "Completed" and condition is None:
                raise PaddleJobError(f"PaddleJob {ns}/{name} completed; it will not become {' or '.join(sorted(wanted))}")
            return False

        job = self.get_job(name, ns)
        while True:
            if callback:
                callback(job)
            if met(job):
                return job
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                what = f"condition {condition}" if condition else f"phase {' or '.join(sorted(wanted))}"
                raise WaitTimeoutError(job, f"PaddleJob {ns}/{name} did not reach {what} within {timeout:g}s (phase {job_phase(job) or 'none yet'})")
            w = k8s_watch.Watch()
            rv = job["metadata"].get("resourceVersion")
            try:
                for ev in w.stream(
                    self.custom.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                    field_selector=f"metadata.name={name}", resource_version=rv,
                    timeout_seconds=max(1, math.ceil(remaining)), _request_timeout=remaining + 10,
                ):
                    if ev["type"] == "DELETED":
                        raise NotFoundError(f"waiting for PaddleJob {ns}/{name}", 404, "NotFound", "the job was deleted while waited for")
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        job = ev["object"]
                        if callback:
                            callback(job)
                        if met(job):
                            w.stop()
                            return job
            except ApiException as e:
                if e.status != 410:  # a too old resourceVersion: get the job again
                    raise _api_error(f"watching PaddleJob {ns}/{name}", e) from None
            except Exception as e:  # the watch's connection ended: get the job again
                if isinstance(e, PaddleJobError):
                    raise
            finally:
                w.stop()
            job = self.get_job(name, ns)

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
        except Exception:
            time.sleep(min(seconds, 1))
        finally:
            w.stop()

    # Pods, logs and events.

    def get_job_pods(self, name: str, namespace: Optional[str] = None, role: Optional[str] = None) -> List[k8s.V1Pod]:
        """The job's pods (of one role), sorted by role (ps, worker, heter) and index."""
        ns = self._ns(namespace)
        selector = f"{LABEL_JOB_NAME}={name}"
        if role:
            selector += f",{LABEL_REPLICA_TYPE}={role}"
        try:
            pods: List[k8s.V1Pod] = list(self.core.list_namespaced_pod(ns, label_selector=selector).items)
        except ApiException as e:
            raise _api_error(f"listing the pods of PaddleJob {ns}/{name}", e) from None

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
        try:
            events = self.core.list_namespaced_event(ns).items
        except ApiException as e:
            raise _api_error(f"listing the events of PaddleJob {ns}/{name}", e) from None
        uid = job["metadata"].get("uid")
        out = [
            e for e in events
            if (e.involved_object.kind == "PaddleJob" and e.involved_object.uid == uid)
            or (include_pods and e.involved_object.kind == "Pod" and e.involved_object.name in names)
        ]

        def when(e: k8s.CoreV1Event) -> float:
            for t in (e.last_timestamp, e.event_time, e.first_timestamp, e.metadata.creation_timestamp):
                if t is not None:
                    return float(t.timestamp())
            return 0.0

        out.sort(key=when)
        return out

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
            raise ValueError(f"role {role!r}: want one of {', '.join(ROLES)}")
        ns = self._ns(namespace)
        job = self.get_job(name, ns)
        if pod is not None:
            pods = [pod]
        elif index is not None:
            pods = [f"{name}-{role}-{index}"]
        else:
            spec = (job.get("spec") or {}).get(role)
            if spec is None:
                raise PaddleJobError(f"PaddleJob {ns}/{name} has no {role} role")
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
            try:
                text = self.core.read_namespaced_pod_log(p, ns, **kwargs)
            except ApiException as e:
                raise _api_error(f"reading the log of pod {ns}/{p}", e) from None
            for line in str(text).splitlines():
                yield LogLine(p, line)

    def _follow_logs(self, ns: str, job: str, pods: List[str], container: Optional[str], tail_lines: Optional[int]) -> Iterator[LogLine]:
        lines: "queue.Queue[Union[LogLine, BaseException, None]]" = queue.Queue(maxsize=10000)
        stop = threading.Event()
        followers = [_Follower(self, ns, job, p, container, tail_lines, lines, stop) for p in pods]
        for f in followers:
            f.start()
        running = len(followers)
        try:
            while running:
                item = lines.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            stop.set()
            for f in followers:
                f.close()


def _chunks(resp: Any) -> Iterator[bytes]:
    """The bytes of a streamed response as they arrive (urllib3's stream()
    would wait for a full buffer, holding back a quiet log's lines)."""
    read1 = getattr(resp, "read1", None)
    if read1 is None:  # urllib3 1.x
        yield from resp.stream(1)
        return
    while True:
        data = read1(65536)
        if not data:
            return
        yield bytes(data)


class _Follower(threading.Thread):
    """Follows the log of one pod name across restarts and recreations."""

    def __init__(self, c: PaddleJobClient, ns: str, job: str, pod: str, container: Optional[str], tail_lines: Optional[int],
                 out: "queue.Queue[Union[LogLine, BaseException, None]]", stop: threading.Event) -> None:
        super().__init__(daemon=True, name=f"logs-{pod}")
        self.c, self.ns, self.job, self.pod, self.container, self.tail_lines = c, ns, job, pod, container, tail_lines
        self.out, self.stop = out, stop
        self.resp: Any = None
        # Lines already passed on, per container instance (pod uid, restart count).
        self.seen: Dict[Any, int] = {}

    def close(self) -> None:
        """Ends a stream this thread reads: shuts its socket down, so the
        blocked read returns (closing the response from another thread
        would wait for the reader's lock)."""
        r = self.resp
        conn = getattr(r, "connection", None) or getattr(r, "_connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # handed to the reader
            if not self.stop.is_set():
                self.out.put(e)
        finally:
            self.out.put(None)

    def _instance(self) -> Any:
        """(uid, restart count) of the pod's container once it started, else None; "gone" when no pod exists."""
        try:
            p = self.c.core.read_namespaced_pod(self.pod, self.ns)
        except ApiException as e:
            if e.status == 404:
                return "gone"
            raise _api_error(f"getting pod {self.ns}/{self.pod}", e) from None
        statuses = p.status.container_statuses or []
        st = next((s for s in statuses if self.container in (None, s.name)), None)
        if st is None or st.state is None or (st.state.running is None and st.state.terminated is None):
            return None
        return (p.metadata.uid, int(st.restart_count or 0), st.state.terminated is not None)

    def _job_finished(self) -> bool:
        try:
            job = self.c.get_job(self.job, self.ns)
        except NotFoundError:
            return True
        return job_phase(job) in TERMINAL

    def _run(self) -> None:
        drained: Set[Any] = set()  # instances whose whole log was read after they stopped
        while not self.stop.is_set():
            inst = self._instance()
            if inst is None or inst == "gone" or (inst[0], inst[1]) in drained:
                # Not started, gone, or read to its end: wait for a new
                # instance (a restart, a recreated pod) until the job finishes.
                if self._job_finished():
                    return
                self.stop.wait(0.5)
                continue
            uid, restarts, terminated = inst
            key = (uid, restarts)
            self._stream(key, follow=not terminated)
            if terminated and not self.stop.is_set():
                drained.add(key)
            # Else the container stopped (read its end next round) or the
            # connection broke (resume without repeating a line).

    def _stream(self, key: Any, follow: bool) -> None:
        kwargs: Dict[str, Any] = {"follow": follow, "_preload_content": False}
        if self.container:
            kwargs["container"] = self.container
        if self.tail_lines is not None and key not in self.seen:
            # Start tail_lines before the end: skip what precedes them.
            try:
                text = self.c.core.read_namespaced_pod_log(self.pod, self.ns, **({"container": self.container} if self.container else {}))
                self.seen[key] = max(0, len(str(text).splitlines()) - self.tail_lines)
            except ApiException:
                self.seen[key] = 0
        try:
            self.resp = self.c.core.read_namespaced_pod_log(self.pod, self.ns, **kwargs)
        except ApiException as e:
            if e.status in (400, 404):  # not started yet, or gone meanwhile
                self.stop.wait(0.5)
                return
            raise _api_error(f"reading the log of pod {self.ns}/{self.pod}", e) from None
        skip = self.seen.get(key, 0)
        n = 0
        buf = b""
        try:
            for chunk in _chunks(self.resp):
                buf += chunk
                *complete, buf = buf.split(b"\n")
                for raw in complete:
                    n += 1
                    if n > skip:
                        self.seen[key] = n
                        self.out.put(LogLine(self.pod, raw.decode("utf-8", "replace")))
            if buf and not follow:
                n += 1
                if n > skip:
                    self.seen[key] = n
                    self.out.put(LogLine(self.pod, buf.decode("utf-8", "replace")))
        except Exception:
            if self.stop.is_set():
                return
        finally:
            resp, self.resp = self.resp, None
            try:
                resp.close()  # this thread's own stream: no lock to wait for
            except Exception:
                pass
