"""The paddle.job SDK's README code with `import paddle.job as job`, a collective job
from the SDK, and typed errors, on a real cluster (test/e2e's local
cluster: TestPythonSDK)."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest
from kubernetes import client as k8s

import paddlejob
from conftest import create_namespace
from paddlejob import PaddleJobClient

TIMEOUT = 300  # seconds for a job on two busy cores

# The paddle.job SDK's README, verbatim.
PADDLE_JOB_README = '''
import paddle.job as job
paddle_job=job.PaddleJob(
    pservers=3,
    runtime_image="yancey1989/paddle-job",
    job_name="paddle-job",
    namespace="yanxu",
    use_gpu=False,
    cpu_num=3,
    trainer_package_path="/example/word2vec",
    entry_point="python train.py",
    cephfs_volume=job.CephFSVolume(
        monitors_addr="172.19.32.166:6789"
    ))
'''


def test_paddle_job_readme_example(client: PaddleJobClient) -> None:
    scope: Dict[str, Any] = {}
    exec(PADDLE_JOB_README, scope)
    paddle_job = scope["paddle_job"]
    import paddle.job

    assert isinstance(paddle_job, paddle.job.PaddleJob) and paddle_job.namespace == "yanxu"
    # What the local cluster needs, and only that: it mounts no CephFS (no
    # local node does), and its image of seed 002's trainer package at
    # /example/word2vec is paddlejob/seed002-word2vec (yancey1989/paddle-job
    # is not to be had). A Paddle crash or hang restarts the job, as a
    # production user asks for: the product recovers it, not the test.
    paddle_job.cephfs_volume = None
    paddle_job.runtime_image = "paddlejob/seed002-word2vec"
    paddle_job.restart_policy, paddle_job.progress_deadline_seconds = "ExitCode", 90
    create_namespace(client, "yanxu")
    try:
        created = client.create_job(paddle_job)
        assert isinstance(created, paddlejob.Job) and created.replicas == {"ps": 3, "worker": 3}
        reports: List[paddlejob.JobProgress] = []
        done = client.wait_for_job_status("paddle-job", "Completed", namespace="yanxu", timeout=TIMEOUT, progress_callback=reports.append)
        assert done.status.phase == "Completed" and done.status.condition("Succeeded").true  # type: ignore[union-attr]
        print(f"PaddleJob yanxu/paddle-job restartCount {done.status.restart_count}; progress reports seen: {[r.percent for r in reports]}", flush=True)
        assert reports and reports[-1].percent == 100 and "loss" in reports[-1].metrics, reports
        for index in range(3):
            log = "\n".join(l.line for l in client.get_job_logs("paddle-job", "yanxu", pod=f"paddle-job-worker-{index}"))
            assert f"role=TRAINER index={index} trainers=3 sdk_trainer_id={index} sdk_trainers=3" in log, log
            assert re.search(rf"^final: trainer={index} trainers=3$", log, re.M), log
    finally:
        k8s.CoreV1Api(client.api_client).delete_namespace("yanxu")


def test_collective_job(client: PaddleJobClient, namespace: str) -> None:
    job = paddlejob.PaddleJob(
        job_name="resnet", runtime_image="registry.baidubce.com/paddle-operator/demo-resnet:v1",
        entry_point="python -m paddle.distributed.launch train_fleet.py", cpu_nums=1, trainers=2,
        namespace=namespace, collective=True,
    )
    obj = job.to_dict()
    assert "ps" not in obj["spec"] and obj["spec"]["worker"]["replicas"] == 2
    assert paddlejob.PaddleJob.from_yaml(job.to_yaml()).to_dict() == obj
    client.create_job(job)
    states: List[str] = []
    done = client.wait_for_job_status("resnet", "Completed", namespace, timeout=TIMEOUT, polling_interval=1,
                                      callback=lambda j: states.append(j.status.phase))
    assert done.status.mode == "Collective" and done.status.worker is not None and done.status.worker.succeeded == 2, done.status
    assert states[-1] == "Completed"
    logs = {i: "\n".join(l.line for l in client.get_job_logs("resnet", namespace, pod=f"resnet-worker-{i}")) for i in range(2)}
    # Paddle itself says each rank's place in a world of two.
    for rank in range(2):
        assert any(f"role=TRAINER rank={rank} world_size=2" in log for log in logs.values()), logs
    losses = [float(m) for m in re.findall(r"^epoch \d+/\d+: loss=([\d.]+)", logs[0], re.M)]
    assert len(losses) >= 2 and losses[-1] < losses[0], logs[0]


def test_errors_are_typed_and_name_the_cluster(client: PaddleJobClient, namespace: str) -> None:
    with pytest.raises(paddlejob.NotFoundError) as missing:
        client.get_job("no-such-job", namespace)
    assert missing.value.target == client.target and client.target in str(missing.value)
    # The operator's admission refuses a container named as its own.
    bad = paddlejob.PaddleJob(job_name="bad", runtime_image="busybox", entry_point="sh", cpu_nums=1, namespace=namespace, collective=True).to_dict()
    bad["spec"]["worker"]["template"]["spec"]["containers"][0]["name"] = "wait-for-endpoints"
    with pytest.raises(paddlejob.InvalidError) as invalid:
        client.create_job(bad)
    assert 'spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved' in invalid.value.message
    assert isinstance(invalid.value, paddlejob.PaddleJobError) and invalid.value.target == client.target
    with pytest.raises(paddlejob.InvalidArgumentError):
        client.scale_job("bad", 0, namespace=namespace)
    # A cluster that does not answer: the same context, a port nothing listens on.
    config = k8s.Configuration()
    config.host, config.retries = "https://127.0.0.1:9", 0
    down = PaddleJobClient(api_client=k8s.ApiClient(config))
    with pytest.raises(paddlejob.ClusterUnreachableError) as unreachable:
        down.list_jobs(namespace)
    assert "cannot reach the given ApiClient (https://127.0.0.1:9)" in str(unreachable.value) and "refused" in str(unreachable.value).lower()
