"""Job and JobStatus: typed views of the API's objects, still readable as
the dicts the client used to return."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict

import paddlejob

STORED: Dict[str, Any] = {
    "apiVersion": "batch.paddlepaddle.org/v1",
    "kind": "PaddleJob",
    "metadata": {"name": "wd", "namespace": "ns", "uid": "u-1", "labels": {"team": "ranking"},
                 "creationTimestamp": "2026-11-25T10:00:00Z", "resourceVersion": "42"},
    "spec": {"ps": {"replicas": 2}, "worker": {"replicas": 3}},
    "status": {
        "phase": "Failed",
        "mode": "PS",
        "worker": {"running": 2, "failed": 1, "restarts": 4, "ready": "2/3"},
        "conditions": [
            {"type": "Running", "status": "False", "reason": "JobFailed", "message": "", "lastTransitionTime": "2026-11-25T10:05:00Z"},
            {"type": "Failed", "status": "True", "reason": "PodFailed", "message": "pod wd-worker-1: exit 3", "lastTransitionTime": "2026-11-25T10:05:00Z"},
        ],
        "startTime": "2026-11-25T10:00:05Z",
        "restartCount": 1,
        "progress": {"percent": 40, "epoch": 2, "totalEpochs": 5, "estimatedSecondsRemaining": 30,
                     "metrics": [{"name": "auc", "value": "0.74"}, {"name": "loss", "value": "0.48"}], "reporter": "wd-worker-0"},
    },
}


def test_typed_fields() -> None:
    job = paddlejob.Job(STORED)
    assert (job.name, job.namespace, job.uid, job.labels, job.resource_version) == ("wd", "ns", "u-1", {"team": "ranking"}, "42")
    assert job.created == datetime(2026, 11, 25, 10, 0, tzinfo=timezone.utc)
    assert job.replicas == {"ps": 2, "worker": 3}
    st = job.status
    assert isinstance(st, paddlejob.JobStatus)
    assert (st.phase, st.mode, st.restart_count, st.finished) == ("Failed", "PS", 1, True)
    assert st.worker == paddlejob.ReplicaStatus(running=2, failed=1, restarts=4, ready="2/3") and st.ps is None
    failed = st.condition("Failed")
    assert isinstance(failed, paddlejob.JobCondition) and failed.true and failed.reason == "PodFailed"
    assert st.condition("Succeeded") is None
    assert st.failure_message == "PodFailed: pod wd-worker-1: exit 3"
    assert st.progress == paddlejob.JobProgress(percent=40, eta_seconds=30, epoch=2, total_epochs=5,
                                                metrics={"auc": 0.74, "loss": 0.48}, reporter="wd-worker-0")


def test_the_former_dicts_still_work() -> None:
    job = paddlejob.Job(STORED)
    assert job["metadata"]["name"] == "wd" and job["spec"]["worker"]["replicas"] == 3
    assert job.get("status", {}).get("phase") == "Failed"
    assert paddlejob.job_phase(job) == "Failed"
    assert paddlejob.job_condition(job, "Failed")["reason"] == "PodFailed"  # type: ignore[index]
    assert paddlejob.failure_message(job) == "PodFailed: pod wd-worker-1: exit 3"
    assert dict(job) == STORED and job == STORED and job.to_dict() == STORED
    assert "wd" in repr(job) and "Failed" in repr(job)


def test_a_new_job_has_an_empty_status() -> None:
    job = paddlejob.Job({"metadata": {"name": "j"}, "spec": {"worker": {}}})
    assert job.status == paddlejob.JobStatus() and job.status.phase == "" and not job.status.finished
    assert job.replicas == {"worker": 1} and job.status.progress is None and job.created is None


def test_to_yaml_round_trips() -> None:
    import yaml

    assert yaml.safe_load(paddlejob.Job(STORED).to_yaml()) == STORED


def test_a_pending_job_says_what_holds_it() -> None:
    held = "the scheduler cannot place wd-worker-0: 0/1 nodes are available: 1 Insufficient cpu."
    st = paddlejob.JobStatus.from_dict({
        "phase": "Pending",
        "worker": {"pending": 1, "ready": "0/1"},
        "conditions": [{"type": "Running", "status": "False", "reason": "Unschedulable", "message": held}],
    })
    assert st.pending_reason == "Unschedulable: " + held and st.worker == paddlejob.ReplicaStatus(pending=1, ready="0/1")
    starting = paddlejob.JobStatus.from_dict({
        "phase": "Starting",
        "conditions": [{"type": "Running", "status": "False", "reason": "WaitingForPods", "message": "waiting for wd-worker-0"}],
    })
    assert starting.pending_reason == ""


def test_a_finished_job_counts_the_pods_it_stopped() -> None:
    st = paddlejob.JobStatus.from_dict({"phase": "Completed", "ps": {"stopped": 2, "ready": "0/2"}, "worker": {"succeeded": 2, "ready": "0/2"}})
    assert st.ps == paddlejob.ReplicaStatus(stopped=2, ready="0/2") and st.worker == paddlejob.ReplicaStatus(succeeded=2, ready="0/2")


def test_odd_values_are_none_or_left_out() -> None:
    # The operator writes neither; one odd value must not fail the rest.
    st = paddlejob.JobStatus.from_dict({
        "startTime": "yesterday", "completionTime": "2026-13-01T00:00:00Z", "lastRestartTime": 5,
        "conditions": [{"type": "Running", "status": "True", "lastTransitionTime": "2026-11-25T10:05:00"}],
        "progress": {"metrics": [{"name": "loss", "value": "nan"}, {"name": "auc", "value": "0.7"}, {"name": "lr", "value": " 1"},
                                 {"name": "acc", "value": 0.5}, {"name": "top1", "value": True}, {"name": "big", "value": "1e999"},
                                 {"name": "arabic", "value": "\u0661"}, "x"]},
    })
    assert (st.start_time, st.completion_time, st.last_restart_time) == (None, None, None)
    assert st.conditions[0].last_transition_time is None  # no zone: not RFC 3339
    assert st.progress is not None and st.progress.metrics == {"auc": 0.7, "acc": 0.5}


def test_times_are_utc() -> None:
    st = paddlejob.JobStatus.from_dict({"startTime": "2026-11-25T12:00:05.123456789+02:00"})
    assert st.start_time == datetime(2026, 11, 25, 10, 0, 5, 123456, tzinfo=timezone.utc)
    assert st.start_time is not None and st.start_time.tzinfo == timezone.utc
    assert paddlejob.JobStatus.from_dict({"startTime": datetime(2026, 11, 25, 10)}).start_time == datetime(2026, 11, 25, 10, tzinfo=timezone.utc)
