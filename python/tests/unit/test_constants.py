"""The SDK's constants are the CRD's and api/v1's: read from
config/crd/bases (what the API server enforces) and api/v1's Go source
(the operator's names), so that the two never drift."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import yaml

import paddlejob
from paddlejob import client, job, objects
from conftest import REPO


def crd_schema() -> Dict[str, Any]:
    (crd_file,) = sorted((REPO / "config" / "crd" / "bases").glob("*paddlejobs.yaml"))
    crd = yaml.safe_load(crd_file.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: Dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def go_constants(type_name: str) -> List[str]:
    """The values of Go constants of a type in api/v1, in source order."""
    src = "\n".join(p.read_text() for p in sorted((REPO / "api" / "v1").glob("*_types.go")))
    return re.findall(rf'^\s*\w+\s+{type_name}\s*=\s*"([^"]*)"', src, re.M)


def go_string(name: str) -> str:
    src = (REPO / "api" / "v1" / "paddlejob_types.go").read_text()
    m = re.search(rf'^\s*{name}\s*=\s*"([^"]*)"', src, re.M)
    assert m, f"api/v1 has no constant {name}"
    return m.group(1)


def test_enums_and_limits_are_the_crds() -> None:
    spec = crd_schema()["properties"]["spec"]["properties"]
    assert list(job.INTRANETS) == spec["intranet"]["enum"]
    assert list(job.CLEAN_POD_POLICIES) == spec["cleanPodPolicy"]["enum"]
    assert list(job.RESTART_SCOPES) == spec["restartScope"]["enum"]
    for role in job.ROLES:
        assert role in spec, f"the CRD has no role {role}"
        assert list(job.RESTART_POLICIES) == spec[role]["properties"]["restartPolicy"]["enum"]
        replicas = spec[role]["properties"]["replicas"]
        assert (replicas["minimum"], replicas["maximum"]) == (1, job.MAX_REPLICAS)
    assert set(job.ROLES) == {k for k, v in spec.items() if "template" in v.get("properties", {})}
    rules = [r["rule"] for r in crd_schema()["x-kubernetes-validations"]]
    assert f"size(self.metadata.name) <= {job.MAX_JOB_NAME_LENGTH}" in rules
    assert any(job._JOB_NAME.pattern in r for r in rules), rules


def test_phases_modes_and_labels_are_api_v1s() -> None:
    assert list(objects.PHASES) == go_constants("PaddleJobPhase")
    assert list(objects.MODES) == go_constants("PaddleJobMode")
    assert client.PHASES is objects.PHASES and paddlejob.PHASES is objects.PHASES
    # The phases a job ends in: api/v1's IsFinished.
    helpers = (REPO / "api" / "v1" / "helpers.go").read_text()
    finished = re.search(r"func \(s \*PaddleJobStatus\) IsFinished\(\) bool \{\s*return ([^\n]*)", helpers)
    assert finished, "api/v1 has no IsFinished"
    assert sorted(re.findall(r"PaddleJob(\w+)", finished.group(1))) == sorted(objects.TERMINAL), finished.group(1)
    assert job.LABEL_JOB_NAME == go_string("LabelJobName")
    assert job.LABEL_REPLICA_TYPE == go_string("LabelReplicaType")
    assert job.LABEL_REPLICA_INDEX == go_string("LabelReplicaIndex")
    assert list(job.ROLES) == go_constants("ReplicaType")
