"""The client at unit level: errors, cluster choice and argument checks that
fail before any request. tests/e2e runs it against a real cluster."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

import paddlejob
from paddlejob import target
from paddlejob.client import _api_error

UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:9"}
users:
- name: u
  user: {token: not-a-secret}
contexts:
- name: team
  context: {cluster: c, user: u, namespace: team-a}
- name: other
  context: {cluster: c, user: u}
current-context: team
"""


def status_error(code: int, reason: str, message: str) -> ApiException:
    e = ApiException(status=code, reason="Whatever")
    e.body = json.dumps({"kind": "Status", "status": "Failure", "reason": reason, "message": message, "code": code})
    return e


@pytest.mark.parametrize(
    "code, reason, cls",
    [
        (404, "NotFound", paddlejob.NotFoundError),
        (409, "AlreadyExists", paddlejob.AlreadyExistsError),
        (409, "Conflict", paddlejob.ConflictError),
        (422, "Invalid", paddlejob.InvalidError),
        (403, "Forbidden", paddlejob.ForbiddenError),
        (500, "InternalError", paddlejob.ApiError),
    ],
)
def test_api_errors_are_typed_and_carry_the_servers_message(code: int, reason: str, cls: type) -> None:
    msg = f'paddlejobs.batch.paddlepaddle.org "j" says {reason}'
    err = _api_error("getting PaddleJob default/j", status_error(code, reason, msg))
    assert type(err) is cls
    assert isinstance(err, paddlejob.PaddleJobError)
    assert (err.status, err.reason, err.message) == (code, reason, msg)
    assert str(err) == f"getting PaddleJob default/j: {msg} ({code} {reason})"


def test_kubeconfig_context_and_its_namespace(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text(UNREACHABLE_KUBECONFIG)
    assert paddlejob.PaddleJobClient(config_file=str(kc)).namespace == "team-a"
    assert paddlejob.PaddleJobClient(config_file=str(kc), context="other").namespace == "default"
    assert paddlejob.PaddleJobClient(config_file=str(kc), namespace="mine").namespace == "mine"


def test_the_current_context_and_no_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text(UNREACHABLE_KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(kc))
    c = paddlejob.PaddleJobClient()
    assert c.namespace == "team-a" and c.target.startswith("context "), c.target
    # No kubeconfig and not in a pod: a clear error, never another cluster.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(paddlejob.NoClusterError) as e:
        paddlejob.PaddleJobClient()
    assert "paddlejob up" in str(e.value)


def client(tmp_path: Path) -> paddlejob.PaddleJobClient:
    kc = tmp_path / "kubeconfig"
    kc.write_text(UNREACHABLE_KUBECONFIG)
    return paddlejob.PaddleJobClient(config_file=str(kc))


def test_arguments_are_checked_before_any_request(tmp_path: Path) -> None:
    c = client(tmp_path)
    with pytest.raises(ValueError, match="replicas 0: must be an integer between 1 and 10000"):
        c.scale_job("j", 0)
    with pytest.raises(ValueError, match="role 'trainer': want one of ps, worker, heter"):
        c.scale_job("j", 2, role="trainer")
    with pytest.raises(ValueError, match="status 'Done': want one of Pending, Starting, Running, Completed, Failed, Suspended"):
        c.wait_for_job_status("j", status="Done")
    with pytest.raises(ValueError, match="role 'pserver'"):
        c.get_job_logs("j", role="pserver")


def test_client_names_are_lazy() -> None:
    assert paddlejob.PaddleJobClient.__module__ == "paddlejob.client"
    assert str(paddlejob.LogLine("j-worker-0", "hello")) == "[j-worker-0] hello"
    with pytest.raises(AttributeError):
        getattr(paddlejob, "NoSuchThing")
