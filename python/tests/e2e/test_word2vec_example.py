"""The paddle.job SDK's word2vec example (seed 002) end to end on a real cluster (test/e2e's local cluster runs this:
TestPythonSDK): submit the word2vec PaddleJob, a real PaddlePaddle
parameter-server job with 2 pservers and 3 trainers whose trainers read
their shard with paddlejob.dist_reader; wait for it, stream its logs, read
its events, delete it; scale another job and see the new pod.

The client uses the current context of $KUBECONFIG, as kubectl would:
TestPythonSDK points it at its local cluster.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Dict, List

import pytest

import paddlejob
from paddlejob import LogLine, PaddleJobClient

TIMEOUT = 300  # seconds for a job on two busy cores
ROWS = 240  # the image's default data set


def test_word2vec_example(client: PaddleJobClient, namespace: str) -> None:
    job = paddlejob.PaddleJob(
        job_name="word2vec",
        runtime_image="paddlejob/seed002-word2vec",
        entry_point="python train.py",
        cpu_num=1,
        pservers=2,
        trainers=3,
        namespace=namespace,
        trainer_package_path="/example/word2vec",
        # A Paddle crash or hang restarts the job (docs/lifecycle.md), as a
        # production user asks for: the product recovers it, not the test.
        restart_policy="ExitCode",
        progress_deadline_seconds=90,
    )
    created = client.create_job(job)
    assert created["spec"]["worker"]["replicas"] == 3 and created["spec"]["ps"]["replicas"] == 2
    with pytest.raises(paddlejob.AlreadyExistsError) as exists:
        client.create_job(job)
    assert 'paddlejobs.batch.paddlepaddle.org "word2vec" already exists' in exists.value.message

    # Follow the trainers' and the parameter servers' logs while the job
    # runs: waits for each pod to start and ends when the job has finished.
    # The servers' are followed, not read afterwards: the operator stops and
    # deletes them once the trainers are done.
    followed: List[LogLine] = []
    followed_ps: List[LogLine] = []
    errors: List[BaseException] = []

    def follow(role: str, into: List[LogLine]) -> None:
        try:
            for line in client.get_job_logs("word2vec", namespace, role=role, follow=True):
                print(line, flush=True)
                into.append(line)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    followers = [threading.Thread(target=follow, args=("worker", followed)),
                 threading.Thread(target=follow, args=("ps", followed_ps))]
    for f in followers:
        f.start()
    phases: List[str] = []
    done = client.wait_for_job_status("word2vec", "Completed", namespace, timeout=TIMEOUT,
                                      callback=lambda j: phases.append(paddlejob.job_phase(j)))
    for f in followers:
        f.join(timeout=120)
        assert not f.is_alive(), "following the logs did not end when the job completed"
    assert not errors, errors
    assert paddlejob.job_phase(done) == "Completed"
    assert paddlejob.job_condition(done, "Succeeded")["status"] == "True"
    assert phases[-1] == "Completed" and len(phases) >= 2, phases
    # How often Paddle failed and the operator restarted the job, visible in the output.
    restarts = int((done.get("status") or {}).get("restartCount", 0))
    print(f"PaddleJob {namespace}/word2vec restartCount {restarts}", flush=True)

    # Each trainer says who it is (to Paddle and to the SDK) and which rows it read.
    read: Dict[int, List[int]] = {}
    for pod in ("word2vec-worker-0", "word2vec-worker-1", "word2vec-worker-2"):
        index = int(pod.rsplit("-", 1)[1])
        lines = [l.line for l in followed if l.pod == pod]
        current = [l.line for l in client.get_job_logs("word2vec", namespace, pod=pod)]
        # Following repeats no line and misses none: it ends with the pod's
        # log read at once, and is that log when the job never restarted (a
        # restart brings a new pod, whose log follows the old one's).
        assert lines[len(lines) - len(current):] == current and (restarts > 0 or lines == current), pod
        text = "\n".join(current)
        assert f"role=TRAINER index={index} trainers=3 sdk_trainer_id={index} sdk_trainers=3" in text, text
        m = re.search(rf"^trainer {index} of 3 read (\d+) of {ROWS} rows: ([\d,]+)$", text, re.M)
        assert m, text
        read[index] = [int(r) for r in m.group(2).split(",")]
        assert len(read[index]) == int(m.group(1))
        assert re.search(rf"^final: trainer={index} trainers=3$", text, re.M), text
        # Seed 002's rule: counting lines from 1, line n goes to trainer n mod 3.
        assert all((row + 1) % 3 == index for row in read[index]), (index, read[index])
    counts = Counter(row for rows in read.values() for row in rows)
    assert sorted(counts) == list(range(ROWS)), "some rows were read by no trainer"
    assert set(counts.values()) == {1}, "some rows were read by more than one trainer"

    # The parameter servers are Paddle's too; the operator stopped them and,
    # with cleanPodPolicy unset, keeps the finished trainers.
    roles = sorted({(l.pod, l.line) for l in followed_ps if l.line.startswith("role=PSERVER")})
    assert roles == [("word2vec-ps-0", "role=PSERVER index=0 servers=2"),
                     ("word2vec-ps-1", "role=PSERVER index=1 servers=2")], roles
    deadline = time.monotonic() + 60
    while client.get_job_pods("word2vec", namespace, role="ps") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not client.get_job_pods("word2vec", namespace, role="ps"), "the parameter servers were not stopped"
    assert [p.metadata.name for p in client.get_job_pods("word2vec", namespace)] == [
        "word2vec-worker-0", "word2vec-worker-1", "word2vec-worker-2"]

    events = client.get_job_events("word2vec", namespace)
    created_pods = [e for e in events if e.reason == "SuccessfulCreatePod"]
    assert created_pods and "word2vec-worker-2" in " ".join(e.message or "" for e in created_pods), [
        (e.reason, e.message) for e in events]

    assert [j["metadata"]["name"] for j in client.list_jobs(namespace)] == ["word2vec"]
    client.delete_job("word2vec", namespace, wait=True, timeout=120)
    with pytest.raises(paddlejob.NotFoundError) as gone:
        client.get_job("word2vec", namespace)
    assert gone.value.status == 404 and "not found" in gone.value.message
    assert client.get_job_pods("word2vec", namespace) == []


def test_scale_adds_a_trainer(client: PaddleJobClient, namespace: str) -> None:
    """Scaling is an API operation on any job: a job of shell containers
    (the node's busybox) whose trainers report their place and wait. A
    collective one: a parameter-server job's trainers start only once its
    servers listen on PADDLE_PORT, which a shell does not."""
    job = paddlejob.PaddleJob(
        job_name="scaled",
        runtime_image="busybox",
        entry_point='sh -c \'echo "trainer=$PADDLE_TRAINER_ID trainers=$PADDLE_TRAINERS_NUM role=$PADDLE_TRAINING_ROLE"; exec sleep 600\'',
        cpu_nums=1,
        collective=True,
        trainers=1,
        namespace=namespace,
    )
    client.create_job(job)
    client.wait_for_job_status("scaled", "Running", namespace, timeout=TIMEOUT)
    first = next(iter(client.get_job_logs("scaled", namespace, pod="scaled-worker-0", follow=True)))
    assert first.line == "trainer=0 trainers=1 role=TRAINER", first

    scaled = client.scale_job("scaled", 2, namespace=namespace)
    assert scaled["spec"]["worker"]["replicas"] == 2
    assert client.get_job("scaled", namespace)["spec"]["worker"]["replicas"] == 2
    # The new trainer's first line, as soon as it starts.
    new = next(iter(client.get_job_logs("scaled", namespace, role="worker", index=1, follow=True)))
    assert new.pod == "scaled-worker-1"
    assert re.fullmatch(r"trainer=1 trainers=2 role=TRAINER", new.line), new
    client.wait_for_job_status("scaled", "Running", namespace, timeout=TIMEOUT)
    names = [p.metadata.name for p in client.get_job_pods("scaled", namespace, role="worker")]
    assert names == ["scaled-worker-0", "scaled-worker-1"]

    with pytest.raises(paddlejob.PaddleJobError, match="has no heter role to scale"):
        client.scale_job("scaled", 2, role="heter", namespace=namespace)
    with pytest.raises(paddlejob.NotFoundError):
        client.scale_job("no-such-job", 2, namespace=namespace)

    client.delete_job("scaled", namespace, wait=True, timeout=120)
    assert client.list_jobs(namespace) == [] and client.get_job_pods("scaled", namespace) == []
