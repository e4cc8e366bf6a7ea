"""The shared status vectors (test/vectors/status): metrics as floats, times
as UTC datetimes; the Go SDK's LatestMetrics and MetricHistory read the same files."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

import paddlejob
from conftest import REPO

FILES = sorted((REPO / "test" / "vectors" / "status").glob("*.json"))


def parsed(s: Optional[str]) -> Optional[datetime]:
    # The vectors' times, parsed by the standard library (Python 3.11 reads "Z"
    # and any fraction), so the SDK's own parser is not checked against itself.
    return None if s is None else datetime.fromisoformat(s.replace("Z", "+00:00"))


def assert_utc(got: Optional[datetime], want: Optional[str], what: str) -> None:
    assert got == parsed(want), what
    assert got is None or got.tzinfo == timezone.utc, what


def test_vectors_exist() -> None:
    assert len(FILES) >= 5, "shared status vectors missing"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    want: Any = v["expected"]
    st = paddlejob.Job({"metadata": {"name": "wd"}, "status": v["status"]}).status
    if want["metrics"] is None:
        assert st.progress is None
    else:
        assert st.progress is not None
        # In order, and floats (1200 is 1200.0, not the int the JSON holds).
        assert list(st.progress.metrics.items()) == [(m["name"], float(m["value"])) for m in want["metrics"]]
        assert all(type(x) is float for x in st.progress.metrics.values())
    times = want["times"]
    assert_utc(st.start_time, times["startTime"], "startTime")
    assert_utc(st.completion_time, times["completionTime"], "completionTime")
    assert_utc(st.last_restart_time, times["lastRestartTime"], "lastRestartTime")
    assert_utc(st.progress.last_update_time if st.progress else None, times["progress.lastUpdateTime"], "progress.lastUpdateTime")
    assert {c.type for c in st.conditions} == set(times["conditions"])
    for c in st.conditions:
        assert_utc(c.last_transition_time, times["conditions"][c.type], f"condition {c.type}")
    if "history" in v:
        got = paddlejob.MetricSeries.from_history(v["history"])
        assert [s.name for s in got] == [s["name"] for s in want["history"]]
        for g, w in zip(got, want["history"]):
            assert [(p.value, p.step) for p in g.points] == [(p["value"], p["step"]) for p in w["points"]], g.name
            for p, wp in zip(g.points, w["points"]):
                assert_utc(p.time, wp["time"], f"{g.name} point")


def test_history_odd_points_are_left_out() -> None:
    got = paddlejob.MetricSeries.from_history({"metrics": [
        {"name": "loss", "points": [[1795600830.5, 0.5], [1795600831, None], ["x", 1], [1795600832], 7, [1e300, 1]], "steps": [3]},
        {"name": "auc", "points": [[1795600830.5, 0.5]], "steps": {"not": "a list"}},
        "not a series",
    ]})
    assert got == [paddlejob.MetricSeries(name="loss", points=[
        paddlejob.MetricPoint(time=datetime(2026, 11, 25, 10, 0, 30, 500000, tzinfo=timezone.utc), value=0.5, step=3)]),
        paddlejob.MetricSeries(name="auc", points=[
            paddlejob.MetricPoint(time=datetime(2026, 11, 25, 10, 0, 30, 500000, tzinfo=timezone.utc), value=0.5)])]
    assert paddlejob.MetricSeries.from_history({}) == []


def test_client_reads_the_jobs_own_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client as k8s

    from test_client import client, status_error

    c = client(tmp_path)
    monkeypatch.setattr(c.custom, "get_namespaced_custom_object", lambda *a: {"metadata": {"name": "wd", "namespace": "team-a", "uid": "u-1"}})
    configmaps: Dict[str, Any] = {}

    def read(name: str, ns: str) -> Any:
        if name not in configmaps:
            raise status_error(404, "NotFound", f'configmaps "{name}" not found')
        return configmaps[name]

    monkeypatch.setattr(c.core, "read_namespaced_config_map", read)
    assert c.get_job_metric_history("wd") == []
    owner = k8s.V1OwnerReference(api_version="batch.paddlepaddle.org/v1", kind="PaddleJob", name="wd", uid="u-0")
    configmaps["wd-metrics"] = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="wd-metrics", owner_references=[owner]),
                                               data={"history.json": '{"metrics": [{"name": "loss", "points": [[1795600830.5, 0.5]]}]}'})
    assert c.get_job_metric_history("wd") == [], "an earlier job's history"
    owner.uid = "u-1"
    got = c.get_job_metric_history("wd")
    assert got == [paddlejob.MetricSeries(name="loss", points=[
        paddlejob.MetricPoint(time=datetime(2026, 11, 25, 10, 0, 30, 500000, tzinfo=timezone.utc), value=0.5)])]
