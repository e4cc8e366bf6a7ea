"""The progress reporter against a local HTTP server playing the operator."""

from __future__ import annotations

import json
import logging
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import paddlejob
from paddlejob import progress


class Operator:
    """Records the reports it receives and answers with the queued codes."""

    def __init__(self) -> None:
        self.reports: List[Tuple[Dict[str, str], Dict[str, Any]]] = []
        self.codes: List[int] = []
        operator = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                operator.reports.append((dict(self.headers), json.loads(body)))
                code = operator.codes.pop(0) if operator.codes else 202
                payload = b'{"accepted":true}' if code == 202 else json.dumps({"error": f"refused {code}"}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if code == 429:
                    self.send_header("Retry-After", "2")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/namespaces/ns/paddlejobs/wd/progress"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Operator]:
    op = Operator()
    token = tmp_path / "token"
    token.write_text("pod-token\n")
    monkeypatch.setenv(progress.ENV_URL, op.url)
    monkeypatch.setenv(progress.ENV_TOKEN_FILE, str(token))
    monkeypatch.setattr(progress, "_default", None)
    yield op
    op.server.shutdown()
    op.server.server_close()


def test_report_sends_the_token_and_the_fields(operator: Operator) -> None:
    assert paddlejob.report_progress(40, epoch=2, total_epochs=5, step=300, metrics={"auc": 0.73, "loss": 0.41})
    (headers, body), = operator.reports
    assert headers["Authorization"] == "Bearer pod-token"
    assert body == {"percent": 40.0, "epoch": 2, "totalEpochs": 5, "step": 300, "metrics": {"auc": 0.73, "loss": 0.41}}


def test_reports_within_the_interval_are_merged_into_the_next(operator: Operator) -> None:
    r = progress.ProgressReporter(min_interval=3600)
    assert r.report(10, metrics={"auc": 0.6})
    assert not r.report(20, metrics={"loss": 0.5})
    assert not r.report(30, step=7)
    assert len(operator.reports) == 1
    # The final report goes at once, with everything merged since the last.
    assert r.report(100)
    assert operator.reports[1][1] == {"percent": 100.0, "step": 7, "metrics": {"loss": 0.5}}


def test_the_first_report_goes_out_on_a_clock_that_starts_near_zero(operator: Operator) -> None:
    # A machine up for less than min_interval: time.monotonic() is small.
    now = [0.25]
    r = progress.ProgressReporter(min_interval=1.0, clock=lambda: now[0])
    assert r.report(5, step=1)
    assert not r.report(6, step=2)
    now[0] += 1.0
    assert r.report(7, step=3)
    assert [body["step"] for _, body in operator.reports] == [1, 3]


def test_flush_sends_what_waits(operator: Operator) -> None:
    r = progress.ProgressReporter(min_interval=3600)
    r.report(10)
    r.report(50, metrics={"auc": 0.7})
    assert r.flush()
    assert operator.reports[-1][1] == {"percent": 50.0, "metrics": {"auc": 0.7}}
    assert not r.flush()  # nothing left


def test_unconfigured_warns_once_and_does_nothing(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(progress.ENV_URL, raising=False)
    monkeypatch.delenv(progress.ENV_TOKEN_FILE, raising=False)
    monkeypatch.setattr(progress, "_default", None)
    with caplog.at_level(logging.WARNING, logger="paddlejob.progress"):
        assert not paddlejob.report_progress(10)
        assert not paddlejob.report_progress(20)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and progress.ENV_URL in warnings[0].getMessage()


def test_failures_never_raise(operator: Operator, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    operator.codes = [400]
    r = progress.ProgressReporter(min_interval=0)
    with caplog.at_level(logging.WARNING, logger="paddlejob.progress"):
        assert not r.report(10)
    assert "HTTP 400" in caplog.text and "refused 400" in caplog.text
    assert "pod-token" not in caplog.text
    # Nobody listening.
    down = progress.ProgressReporter(url="http://127.0.0.1:9/none", token_file=r.token_file, min_interval=0)
    assert not down.report(10)
    # No token file.
    missing = progress.ProgressReporter(url=operator.url, token_file=str(tmp_path / "absent"), min_interval=0)
    assert not missing.report(10)
    # Values that are not numbers are dropped, the rest reported.
    assert r.report(20, metrics={"loss": float("nan"), "auc": "high", "acc": [0.9]})
    assert operator.reports[-1][1] == {"percent": 20.0, "metrics": {"acc": 0.9}}


def test_standby_is_retried_and_rate_limit_keeps_the_report(operator: Operator) -> None:
    operator.codes = [503, 202]
    r = progress.ProgressReporter(min_interval=0)
    assert r.report(10)
    assert len(operator.reports) == 2
    operator.codes = [429]
    assert not r.report(20, metrics={"auc": 0.5})
    assert r.report(30)  # the refused report's metrics come along
    assert operator.reports[-1][1] == {"percent": 30.0, "metrics": {"auc": 0.5}}


def test_the_final_report_and_a_flush_wait_out_the_rate_limit(operator: Operator) -> None:
    waits: List[float] = []
    r = progress.ProgressReporter(min_interval=60, sleep=waits.append, max_retry_wait=1.5)
    assert r.report(50)
    operator.codes = [429, 202]
    assert r.report(100, metrics={"auc": 0.9})  # no later report would carry it
    assert waits == [1.5]  # the operator's Retry-After (2 s), capped
    assert operator.reports[-1][1] == {"percent": 100.0, "metrics": {"auc": 0.9}}
    assert not r.report(99, metrics={"loss": 0.3})  # within the interval: waits
    operator.codes = [429, 429, 429]
    assert not r.flush()  # still limited after its retries: kept for the next
    assert waits == [1.5, 1.5, 1.5]
    assert len(operator.reports) == 6
    assert r.flush()
    assert operator.reports[-1][1] == {"percent": 99.0, "metrics": {"loss": 0.3}}


def test_callback_reports_fit_progress(operator: Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for paddle.callbacks: the callback only subclasses Callback.
    class Callback:
        def __init__(self) -> None:
            self.params: Dict[str, Any] = {}

    fake = types.ModuleType("paddle")
    fake.callbacks = types.SimpleNamespace(Callback=Callback)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "paddle", fake)
    monkeypatch.setattr(progress, "_callback_class", None)
    cb = progress.ProgressCallback(progress.ProgressReporter(min_interval=0))
    assert isinstance(cb, Callback)
    cb.params = {"epochs": 2, "steps": 4}
    cb.on_epoch_begin(1)
    cb.on_train_batch_end(1, {"loss": [0.5], "step": 1, "batch_size": 8})
    assert operator.reports[-1][1] == {"percent": 75.0, "epoch": 2, "totalEpochs": 2, "step": 1, "metrics": {"loss": 0.5}}
    cb.on_eval_end({"acc": 0.8, "loss": [0.4]})
    assert operator.reports[-1][1] == {"metrics": {"eval_acc": 0.8, "eval_loss": 0.4}}
    cb.on_train_end({})
    assert operator.reports[-1][1]["percent"] == 100.0
