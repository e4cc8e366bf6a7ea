"""Waiting (polling_interval, callbacks) and the errors' types, at unit
level: the client's API calls are replaced by a scripted sequence of
states (a policy test); tests/e2e waits on a real cluster."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import paddlejob
from paddlejob import errors
from test_client import client


def state(phase: str, percent: Any = None, failed: str = "") -> Dict[str, Any]:
    status: Dict[str, Any] = {"phase": phase}
    if percent is not None:
        status["progress"] = {"percent": percent}
    if failed:
        status["conditions"] = [{"type": "Failed", "status": "True", "reason": "PodFailed", "message": failed}]
    return {"metadata": {"name": "j", "namespace": "team-a", "resourceVersion": "1"}, "spec": {"worker": {}}, "status": status}


def scripted(c: paddlejob.PaddleJobClient, monkeypatch: pytest.MonkeyPatch, states: List[Dict[str, Any]]) -> List[str]:
    """Makes get_job return the states in turn; returns the calls made."""
    calls: List[str] = []
    it: Iterator[Dict[str, Any]] = iter(states)

    def get(group: str, version: str, ns: str, plural: str, name: str) -> Dict[str, Any]:
        calls.append(f"{ns}/{name}")
        return next(it)

    monkeypatch.setattr(c.custom, "get_namespaced_custom_object", get)
    monkeypatch.setattr("time.sleep", lambda s: calls.append(f"sleep {s:g}"))
    return calls


def test_polling_with_callbacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = client(tmp_path)
    calls = scripted(c, monkeypatch, [state("Pending"), state("Running", 10), state("Running", 10), state("Running", 60), state("Completed", 100)])
    seen: List[str] = []
    progress: List[Any] = []
    done = c.wait_for_job_status("j", polling_interval=2, callback=lambda j: seen.append(j.status.phase), progress_callback=progress.append)
    assert isinstance(done, paddlejob.Job) and done.status.phase == "Completed"
    assert seen == ["Pending", "Running", "Running", "Running", "Completed"]
    # Each new report once: the repeated 10% is not passed on again.
    assert [p.percent for p in progress] == [10, 60, 100] and isinstance(progress[0], paddlejob.JobProgress)
    assert calls == ["team-a/j", "sleep 2", "team-a/j", "sleep 2", "team-a/j", "sleep 2", "team-a/j", "sleep 2", "team-a/j"]


def test_a_failure_while_waiting_names_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = client(tmp_path)
    scripted(c, monkeypatch, [state("Running"), state("Failed", failed="pod j-worker-0: exit 3")])
    with pytest.raises(paddlejob.JobFailedError) as e:
        c.wait_for_job_status("j", polling_interval=1)
    assert "PaddleJob team-a/j failed: PodFailed: pod j-worker-0: exit 3" in str(e.value)
    assert e.value.target == c.target and c.target in str(e.value)
    assert isinstance(e.value.job, paddlejob.Job) and e.value.job.status.phase == "Failed"


def test_a_bug_in_a_callback_is_not_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = client(tmp_path)
    scripted(c, monkeypatch, [state("Running"), state("Running")])

    def broken(job: paddlejob.Job) -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        c.wait_for_job_status("j", polling_interval=1, callback=broken)


def test_bad_polling_interval(tmp_path: Path) -> None:
    with pytest.raises(paddlejob.InvalidArgumentError, match="polling_interval 0"):
        client(tmp_path).wait_for_job_status("j", polling_interval=0)


def test_an_unreachable_cluster_is_named(tmp_path: Path) -> None:
    c = client(tmp_path)  # its server is 127.0.0.1:9, where nothing listens
    c.api_client.configuration.retries = 0
    with pytest.raises(paddlejob.ClusterUnreachableError) as e:
        c.get_job("j")
    msg = str(e.value)
    assert msg.startswith("getting PaddleJob team-a/j: cannot reach context 'team' (https://127.0.0.1:9): "), msg
    assert "refused" in msg.lower(), msg
    assert isinstance(e.value, paddlejob.PaddleJobError) and e.value.target == c.target


def test_every_error_is_a_paddlejob_error() -> None:
    classes = [obj for _, obj in inspect.getmembers(errors, inspect.isclass) if issubclass(obj, BaseException) and obj.__module__ == errors.__name__]
    assert len(classes) >= 14
    for cls in classes:
        assert issubclass(cls, paddlejob.PaddleJobError), cls
        assert getattr(paddlejob, cls.__name__) is cls, f"{cls.__name__} is not exported"
    # What used to be a ValueError still is one.
    assert issubclass(paddlejob.ValidationError, ValueError) and issubclass(paddlejob.InvalidArgumentError, ValueError)


def test_argument_errors_are_typed(tmp_path: Path) -> None:
    c = client(tmp_path)
    with pytest.raises(paddlejob.InvalidArgumentError):
        c.scale_job("j", 0)
    with pytest.raises(paddlejob.InvalidArgumentError):
        c.get_job_logs("j", role="pserver")


