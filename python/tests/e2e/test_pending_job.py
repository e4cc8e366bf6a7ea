"""A job whose workers ask for more CPUs than the cluster has says why it
waits, through the SDK (test/e2e's local cluster: TestPythonSDK)."""

from __future__ import annotations

from kubernetes import client as k8s
from kubernetes import watch

import paddlejob
from paddlejob import PaddleJobClient


def test_an_unschedulable_job_says_why(client: PaddleJobClient, namespace: str) -> None:
    container = {"name": "paddle", "image": "busybox:1.36", "command": ["sh", "-c", "exec sleep 600"],
                 "resources": {"requests": {"cpu": "1000"}}}
    client.create_job({
        "apiVersion": "batch.paddlepaddle.org/v1", "kind": "PaddleJob",
        "metadata": {"name": "huge"},
        "spec": {"worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}},
    }, namespace=namespace)
    # The operator writes the reason once the scheduler has tried the pods:
    # watch the job until it does.
    job = client.get_job("huge", namespace)
    stream = watch.Watch()
    for event in stream.stream(k8s.CustomObjectsApi(client.api_client).list_namespaced_custom_object,
                               "batch.paddlepaddle.org", "v1", namespace, "paddlejobs",
                               field_selector="metadata.name=huge", timeout_seconds=120):
        job = paddlejob.Job(event["object"])
        # The scheduler tries the pods one by one: wait until both are named.
        if "huge-worker-0, huge-worker-1" in job.status.pending_reason:
            stream.stop()
    assert job.status.phase == "Pending", job.status
    want = "Unschedulable: the scheduler cannot place huge-worker-0, huge-worker-1: 0/1 nodes are available: 1 Insufficient cpu."
    assert job.status.pending_reason == want, job.status.pending_reason
    assert job.status.worker is not None and (job.status.worker.pending, job.status.worker.ready) == (2, "0/2")
