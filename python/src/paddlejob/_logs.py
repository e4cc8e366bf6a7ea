"""The log lines of a job's pods, read once or followed across restarts and
recreations (:meth:`paddlejob.PaddleJobClient.get_job_logs`)."""

from __future__ import annotations

import queue
import socket
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, NamedTuple, Optional, Set, Union

from kubernetes.client.rest import ApiException

from ._transport import _STREAM_ENDED, _api_error
from .errors import NotFoundError
from .objects import TERMINAL

if TYPE_CHECKING:
    from .client import PaddleJobClient


class LogLine(NamedTuple):
    """One line of a pod's log (without its newline)."""

    pod: str
    line: str

    def __str__(self) -> str:
        return f"[{self.pod}] {self.line}"


def follow_logs(c: "PaddleJobClient", ns: str, job: str, pods: List[str], container: Optional[str],
                tail_lines: Optional[int]) -> Iterator[LogLine]:
    """The pods' lines as they come, one follower thread per pod, until the
    job finishes; lines of several pods interleave whole."""
    lines: "queue.Queue[Union[LogLine, BaseException, None]]" = queue.Queue(maxsize=10000)
    stop = threading.Event()
    followers = [_Follower(c, ns, job, p, container, tail_lines, lines, stop) for p in pods]
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
            raise _api_error(f"getting pod {self.ns}/{self.pod}", e, self.c.target) from None
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
        return job.status.phase in TERMINAL

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
            raise _api_error(f"reading the log of pod {self.ns}/{self.pod}", e, self.c.target) from None
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
        except (*_STREAM_ENDED, OSError, ValueError):
            # The connection broke, or close() shut its socket down (ValueError:
            # a read of a closed file): resume, or stop when asked to.
            if self.stop.is_set():
                return
        finally:
            resp, self.resp = self.resp, None
            try:
                resp.close()  # this thread's own stream: no lock to wait for
            except (OSError, *_STREAM_ENDED):
                pass
