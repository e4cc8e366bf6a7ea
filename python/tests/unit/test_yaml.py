"""PaddleJob.to_yaml and from_yaml: the job as `kubectl apply -f` takes it,
and back to the parameters, for every shared vector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

import paddlejob
from conftest import VECTORS

BUILT = [f for f in sorted(VECTORS.glob("*.json")) if "expected" in json.loads(f.read_text())]


@pytest.mark.parametrize("path", BUILT, ids=[f.stem for f in BUILT])
def test_from_dict_gives_the_parameters_back(path: Path) -> None:
    expected: Dict[str, Any] = json.loads(path.read_text())["expected"]
    job = paddlejob.PaddleJob.from_dict(expected)
    assert job.to_dict() == expected
    assert yaml.safe_load(job.to_yaml()) == expected
    assert paddlejob.PaddleJob.from_yaml(job.to_yaml()).to_dict() == expected


def test_from_yaml_takes_the_first_paddlejob_of_a_manifest() -> None:
    job = paddlejob.PaddleJob(job_name="j", runtime_image="i", entry_point="sh -c 'echo \"hi there\"'", cpu_nums=1, collective=True, trainers=2)
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + job.to_yaml()
    back = paddlejob.PaddleJob.from_yaml(manifest)
    assert back.collective and back.trainers == 2 and back.entry_point == "sh -c 'echo \"hi there\"'"
    with pytest.raises(paddlejob.ValidationError, match="no document of kind PaddleJob"):
        paddlejob.PaddleJob.from_yaml("apiVersion: v1\nkind: ConfigMap\n")


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda o: o["spec"].update(elastic=1), "spec.elastic"),
        (lambda o: o["spec"]["worker"]["template"]["spec"]["containers"].append({"name": "sidecar"}), "spec.worker.template.spec"),
        (lambda o: o["spec"]["ps"]["template"]["spec"]["containers"][0].update(image="other"), "a pserver unlike the trainers"),
        (lambda o: o["spec"]["worker"]["template"]["spec"]["containers"][0].update(ports=[]), "containers[0].ports"),
    ],
)
def test_what_the_parameters_cannot_say_is_named(change: Any, says: str) -> None:
    obj = paddlejob.PaddleJob(job_name="j", runtime_image="i", entry_point="python train.py", cpu_nums=1).to_dict()
    change(obj)
    with pytest.raises(paddlejob.ValidationError, match="cannot express") as e:
        paddlejob.PaddleJob.from_dict(obj)
    assert says in str(e.value)
