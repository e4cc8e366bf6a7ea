"""Parameter checks beyond the shared vectors: Python's types, the seed's
aliases, and messages that name the parameter, value and rule."""

from __future__ import annotations

from typing import Any

import pytest

import paddlejob

BASE: dict[str, Any] = dict(job_name="j", runtime_image="i", entry_point="python train.py", cpu_nums=1)


def problems(**changes: Any) -> list[tuple[str, str]]:
    with pytest.raises(paddlejob.ValidationError) as e:
        paddlejob.PaddleJob(**{**BASE, **changes})
    return e.value.problems


@pytest.mark.parametrize(
    "changes, parameter, says",
    [
        (dict(memory="12X"), "memory", "memory '12X': must be a plain integer with one of the suffixes E, P, T, G, M, K"),
        (dict(cpu_nums="3"), "cpu_nums", "cpu_nums '3': must be an integer, at least 1"),
        (dict(cpu_nums=True), "cpu_nums", "must be an integer"),
        (dict(cpu_nums=2.5), "cpu_nums", "must be an integer"),
        (dict(cpu_nums=None), "cpu_nums", "cpu_nums: the CPU count of each pod is required"),
        (dict(cpu_nums=2, cpu_num=3), "cpu_num", "disagrees with cpu_nums 2"),
        (dict(use_gpu=False, gpu_nums=2), "use_gpu", "disagrees with gpu_nums 2"),
        (dict(use_gpu="yes"), "use_gpu", "must be True or False"),
        (dict(pservers=0), "pservers", "pservers 0: must be an integer between 1 and 10000"),
        (dict(trainers=0), "trainers", "between 1 and 10000"),
        (dict(memory=8), "memory", "memory 8: must be a plain integer"),
        (dict(intranet="pod"), "intranet", "intranet 'pod': want one of PodIP, Service, Host"),
        (dict(clean_pod_policy="Sometimes"), "clean_pod_policy", "want one of Always, Never, OnFailure, OnCompletion"),
        (dict(env={"A": 1}), "env", "must map variable names to string values"),
        (dict(cephfs_volume="10.0.0.1:6789"), "cephfs_volume", "must be a paddlejob.CephFSVolume"),
        (dict(cephfs_volume=paddlejob.CephFSVolume(monitors_addr=["10.0.0.1:6789", 7])), "cephfs_volume.monitors_addr", "list of them"),
    ],
)
def test_bad_value_names_parameter(changes: dict[str, Any], parameter: str, says: str) -> None:
    got = problems(**changes)
    assert [p for p, _ in got] == [parameter]
    assert says in got[0][1]


def test_every_problem_is_reported_in_one_error() -> None:
    with pytest.raises(ValueError) as e:
        paddlejob.PaddleJob(job_name="Bad_Name", runtime_image="i", entry_point="", cpu_num=0, memory="1gb")
    msg = str(e.value)
    for part in ("job_name 'Bad_Name'", "entry_point ''", "cpu_nums 0", "memory '1gb'"):
        assert part in msg


def test_paddle_job_readme_call_verbatim() -> None:
    """The paddle.job SDK README's own call, keyword for keyword."""
    job = paddlejob.PaddleJob(
        pservers=3,
        runtime_image="yancey1989/paddle-job",
        job_name="paddle-job",
        namespace="yanxu",
        use_gpu=False,
        cpu_num=3,
        trainer_package_path="/example/word2vec",
        entry_point="python train.py",
        cephfs_volume=paddlejob.CephFSVolume(monitors_addr="172.19.32.166:6789"),
    )
    obj = job.to_dict()
    assert obj["spec"]["ps"]["replicas"] == 3 and obj["spec"]["worker"]["replicas"] == 3
    assert job.cpu_nums == 3 and job.gpu_nums == 0


def test_positional_parameters_follow_the_paddle_job_table() -> None:
    job = paddlejob.PaddleJob("pos", "img", "python train.py", 2, "2G", 1, 4, 1, "ns")
    spec = job.to_dict()["spec"]
    assert (spec["ps"]["replicas"], spec["worker"]["replicas"]) == (1, 4)
    assert spec["worker"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2", "memory": "2G", "nvidia.com/gpu": "1"}


def test_monitor_list() -> None:
    v = paddlejob.CephFSVolume(monitors_addr=["10.0.0.1:6789", "10.0.0.2:6789"])
    job = paddlejob.PaddleJob(**BASE, cephfs_volume=v)
    assert job.to_dict()["spec"]["ps"]["template"]["spec"]["volumes"][0]["cephfs"]["monitors"] == ["10.0.0.1:6789", "10.0.0.2:6789"]


def test_to_dict_is_a_fresh_copy() -> None:
    job = paddlejob.PaddleJob(**BASE)
    d = job.to_dict()
    d["spec"]["worker"]["template"]["spec"]["containers"][0]["command"].append("--oops")
    assert job.to_dict()["spec"]["worker"]["template"]["spec"]["containers"][0]["command"] == ["python", "train.py"]
