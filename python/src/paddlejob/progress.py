"""Report a training program's progress and metrics to the PaddleJob operator.

In a pod of a PaddleJob whose operator has the feature on, the operator sets
``PADDLEJOB_PROGRESS_URL`` and ``PADDLEJOB_PROGRESS_TOKEN_FILE`` (a token
bound to the pod, for the operator only); what is reported shows in the job's
``status.progress``, ``kubectl get pdj``, ``paddlejob get`` and
``paddlejob metrics`` (docs/progress.md).

* :func:`report_progress` for a custom training loop;
* :class:`ProgressCallback` for ``paddle.Model.fit`` (imported on first use,
  so this module needs nothing but the standard library).

Reporting never stops training: outside such a pod it warns once and does
nothing; a failed report is logged and dropped. Reports closer together than
``min_interval`` seconds are merged into the next one, so calling it every
step costs no more than calling it every second.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional

ENV_URL = "PADDLEJOB_PROGRESS_URL"
ENV_TOKEN_FILE = "PADDLEJOB_PROGRESS_TOKEN_FILE"

#: At most this many metrics a report (the operator refuses more).
MAX_METRICS = 16

log = logging.getLogger("paddlejob.progress")

__all__ = ["ProgressReporter", "ProgressCallback", "report_progress", "flush_progress"]


class ProgressReporter:
    """Sends progress reports to the operator, at most one per ``min_interval``.

    ``url`` and ``token_file`` default to the variables the operator sets.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token_file: Optional[str] = None,
        min_interval: float = 1.0,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        max_retry_wait: float = 5.0,
    ) -> None:
        self.url = url if url is not None else os.environ.get(ENV_URL, "")
        self.token_file = token_file if token_file is not None else os.environ.get(ENV_TOKEN_FILE, "")
        self.min_interval = min_interval
        self.timeout = timeout
        self._lock = threading.Lock()
        self._pending: Dict[str, Any] = {}
        # When the last report went out; None until the first, which is never
        # held back (monotonic clocks may start near zero, e.g. at boot).
        self._last_sent: Optional[float] = None
        self._clock = clock
        self._sleep = sleep
        self.max_retry_wait = max_retry_wait
        self._warned: set[str] = set()

    @property
    def configured(self) -> bool:
        return bool(self.url and self.token_file)

    def report(
        self,
        percent: Optional[float] = None,
        *,
        epoch: Optional[int] = None,
        total_epochs: Optional[int] = None,
        step: Optional[int] = None,
        eta_seconds: Optional[float] = None,
        metrics: Optional[Mapping[str, Any]] = None,
    ) -> bool:
        """Reports progress; True when the operator accepted it now.

        False when it was merged into a later report (too soon after the last
        one), when reporting is not configured, or when it failed (logged).
        A report at 100 percent is sent at once, waiting out the operator's
        rate limit (its Retry-After, at most ``max_retry_wait`` seconds).
        """
        try:
            fields = self._fields(percent, epoch, total_epochs, step, eta_seconds, metrics)
            with self._lock:
                _merge(self._pending, fields)
                if not self._pending:
                    return False
                if not self.configured:
                    self._warn_once(
                        "unconfigured",
                        "progress reports go nowhere: $%s and $%s are not set (not in a PaddleJob pod, "
                        "or the operator runs without --progress-bind-address)",
                        ENV_URL,
                        ENV_TOKEN_FILE,
                    )
                    self._pending = {}
                    return False
                final = self._pending.get("percent") is not None and self._pending["percent"] >= 100
                if not final and self._last_sent is not None and self._clock() - self._last_sent < self.min_interval:
                    return False
                # The last report has no later one to ride on: it waits out a
                # rate limit rather than being lost.
                return self._send_locked(wait_if_limited=final)
        except Exception as e:  # noqa: BLE001 - reporting must never stop training
            self._warn_once(type(e).__name__, "progress report dropped: %s", e)
            return False

    def flush(self) -> bool:
        """Sends what is merged and not sent yet, whatever the interval,
        waiting out the operator's rate limit as a final report does."""
        try:
            with self._lock:
                if not self._pending or not self.configured:
                    return False
                return self._send_locked(wait_if_limited=True)
        except Exception as e:  # noqa: BLE001
            self._warn_once(type(e).__name__, "progress report dropped: %s", e)
            return False

    def _fields(
        self,
        percent: Optional[float],
        epoch: Optional[int],
        total_epochs: Optional[int],
        step: Optional[int],
        eta_seconds: Optional[float],
        metrics: Optional[Mapping[str, Any]],
    ) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if percent is not None:
            p = float(percent)
            if math.isfinite(p):
                out["percent"] = min(100.0, max(0.0, p))
        for name, v in (("epoch", epoch), ("totalEpochs", total_epochs), ("step", step), ("etaSeconds", eta_seconds)):
            if v is not None:
                out[name] = max(0, int(v))
        if metrics:
            ms: Dict[str, float] = {}
            for k, v in metrics.items():
                f = _to_float(v)
                if f is None:
                    self._warn_once("metric:" + str(k), "metric %r is not a finite number (%r): not reported", k, v)
                    continue
                ms[str(k)] = f
            if ms:
                out["metrics"] = ms
        return out

    def _send_locked(self, wait_if_limited: bool = False) -> bool:
        body = dict(self._pending)
        if "metrics" in body and len(body["metrics"]) > MAX_METRICS:
            self._warn_once("too-many", "more than %d metrics: only the first %d are reported", MAX_METRICS, MAX_METRICS)
            body["metrics"] = dict(list(body["metrics"].items())[:MAX_METRICS])
        with open(self.token_file, encoding="utf-8") as f:  # the kubelet renews it: read it every time
            token = f.read().strip()
        data = json.dumps(body).encode()
        self._last_sent = self._clock()
        for attempt in range(3):
            req = urllib.request.Request(
                self.url,
                data=data,
                method="POST",
                headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    resp.read()
                self._pending = {}
                return True
            except urllib.error.HTTPError as e:
                detail = _error_of(e)
                if e.code == 503 and attempt < 2:
                    continue  # a standby replica: another connection may reach the leader
                if e.code == 429:
                    if wait_if_limited and attempt < 2:
                        self._sleep(_retry_after(e, self.max_retry_wait))
                        continue
                    return False  # kept pending: merged into the next report
                self._pending = {}
                self._warn_once("http-%d" % e.code, "progress report refused (HTTP %d): %s", e.code, detail)
                return False
            except (urllib.error.URLError, OSError) as e:
                self._pending = {}
                self._warn_once("unreachable", "progress report failed: the operator at %s: %s", self.url, e)
                return False
        return False

    def _warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key in self._warned:
            log.debug(msg, *args)
            return
        self._warned.add(key)
        log.warning(msg, *args)


def _merge(into: Dict[str, Any], fields: Mapping[str, Any]) -> None:
    for k, v in fields.items():
        if k == "metrics":
            into.setdefault("metrics", {}).update(v)
        else:
            into[k] = v


def _to_float(v: Any) -> Optional[float]:
    """A metric as a float: numbers, numpy scalars and arrays, one-element tensors."""
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            return None
        v = v[0]
    if hasattr(v, "numpy"):
        v = v.numpy()  # a tensor
    if hasattr(v, "item"):
        try:
            v = v.item()
        except (ValueError, TypeError):
            return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _retry_after(e: urllib.error.HTTPError, cap: float) -> float:
    """The wait a 429 asks for (its Retry-After seconds), at most cap."""
    try:
        wait = float(e.headers.get("Retry-After", "1"))
    except (TypeError, ValueError):
        wait = 1.0
    return min(max(wait, 0.0), cap)


def _error_of(e: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(e.read().decode("utf-8", "replace")).get("error", e.reason))
    except Exception:  # noqa: BLE001
        return str(e.reason)


_default: Optional[ProgressReporter] = None
_default_lock = threading.Lock()


def _reporter() -> ProgressReporter:
    global _default
    with _default_lock:
        if _default is None:
            _default = ProgressReporter()
            # What waits for the interval is sent when the program exits.
            atexit.register(_default.flush)
        return _default


def report_progress(
    percent: Optional[float] = None,
    *,
    epoch: Optional[int] = None,
    total_epochs: Optional[int] = None,
    step: Optional[int] = None,
    eta_seconds: Optional[float] = None,
    metrics: Optional[Mapping[str, Any]] = None,
) -> bool:
    """Reports this training program's progress to the operator.

    ``percent`` is how much of the training is done (0-100); ``metrics`` the
    latest values of named metrics (``{"loss": 0.41, "auc": 0.73}``, at most
    16; numpy scalars and one-element tensors are fine). Never raises; see
    :class:`ProgressReporter` for what the result means.
    """
    return _reporter().report(
        percent, epoch=epoch, total_epochs=total_epochs, step=step, eta_seconds=eta_seconds, metrics=metrics
    )


def flush_progress() -> bool:
    """Sends a report merged into a later one, e.g. before the program exits."""
    return _reporter().flush()


_callback_class: Any = None


def _make_callback_class() -> Any:
    import importlib

    # Only ProgressCallback needs Paddle, imported here on first use.
    base: Any = importlib.import_module("paddle").callbacks.Callback

    class ProgressCallback(base):  # type: ignore[misc]
        """Reports ``paddle.Model.fit``'s progress: percent, epoch, step and the
        logged metrics (evaluation metrics prefixed ``eval_``)."""

        def __init__(self, reporter: Optional[ProgressReporter] = None) -> None:
            super().__init__()
            self.reporter = reporter or _reporter()
            self.epoch = 0
            self.global_step = 0

        def _percent(self, epoch: int, step: Optional[int]) -> Optional[float]:
            epochs = self.params.get("epochs") if self.params else None
            if not epochs:
                return None
            steps = self.params.get("steps")
            done = float(epoch)
            if step is not None and steps:
                done += min(1.0, (step + 1) / steps)
            return float(100.0 * done / epochs)

        def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
            self.epoch = epoch

        def on_train_batch_end(self, step: int, logs: Optional[Dict[str, Any]] = None) -> None:
            self.global_step += 1
            p = self._percent(self.epoch, step)
            self.reporter.report(
                None if p is None else min(p, 99.99),  # 100 once the training ends
                epoch=self.epoch + 1,
                total_epochs=(self.params or {}).get("epochs"),
                step=self.global_step,
                metrics=_metrics(logs),
            )

        def on_eval_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
            self.reporter.report(metrics={"eval_" + k: v for k, v in (_metrics(logs) or {}).items()})

        def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
            self.reporter.report(100.0, step=self.global_step, metrics=_metrics(logs))
            self.reporter.flush()

    return ProgressCallback


def _metrics(logs: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    if not logs:
        return None
    skip = {"step", "batch_size", "steps", "epoch"}
    return {k: v for k, v in logs.items() if k not in skip and _to_float(v) is not None}


def __getattr__(name: str) -> Any:
    global _callback_class
    if name == "ProgressCallback":
        if _callback_class is None:
            _callback_class = _make_callback_class()
        return _callback_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
