"""Fixtures of the end-to-end tests: a client of the cluster the current
kubeconfig context names (TestPythonSDK points $KUBECONFIG at its local
cluster), and a namespace of one's own."""

from __future__ import annotations

import os
import time
import uuid
from typing import Iterator

import pytest
import yaml
from kubernetes import client as k8s

from paddlejob import PaddleJobClient


def create_namespace(client: PaddleJobClient, name: str) -> None:
    core = k8s.CoreV1Api(client.api_client)
    # PodSecurity privileged, as `paddlejob up` labels default: the tests'
    # jobs use hostPath volumes and intranet Host, which baseline refuses.
    labels = {"pod-security.kubernetes.io/enforce": "privileged"}
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name, labels=labels)))
    # Pods cannot be created before the namespace's default service account.
    deadline = time.monotonic() + 60
    while not core.list_namespaced_service_account(name, field_selector="metadata.name=default").items:
        assert time.monotonic() < deadline, f"namespace {name} has no default service account"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def client() -> PaddleJobClient:
    c = PaddleJobClient()
    # The client talks to the server of $KUBECONFIG's current context: the
    # suite's cluster, never a fallback.
    with open(os.environ["KUBECONFIG"]) as f:
        kubeconfig = yaml.safe_load(f)
    current = next(x for x in kubeconfig["contexts"] if x["name"] == kubeconfig["current-context"])
    server = next(x for x in kubeconfig["clusters"] if x["name"] == current["context"]["cluster"])
    assert c.target == f"context {current['name']!r} ({server['cluster']['server']})", c.target
    return c


@pytest.fixture
def namespace(client: PaddleJobClient) -> Iterator[str]:
    name = f"py-e2e-{uuid.uuid4().hex[:8]}"
    create_namespace(client, name)
    yield name
    k8s.CoreV1Api(client.api_client).delete_namespace(name)
