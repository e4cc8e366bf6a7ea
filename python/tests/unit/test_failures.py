"""The shared failure vectors (test/vectors/failures): the Go SDK's FailureExplanation reads the same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paddlejob
from conftest import REPO

FILES = sorted((REPO / "test" / "vectors" / "failures").glob("*.json"))


def test_vectors_exist() -> None:
    assert len(FILES) >= 5, "shared failure vectors missing"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    job = paddlejob.Job({"metadata": {"name": "mm"}, "status": v["status"]})
    got = job.status.failure_explanation
    if v["expected"] is None:
        assert got is None
    else:
        assert got == paddlejob.FailureExplanation(**v["expected"])


def test_parse_needs_the_whole_sentence() -> None:
    assert paddlejob.FailureExplanation.parse("pod j-worker-0: container \"paddle\" exited with code 1 (Error)") is None
    assert paddlejob.FailureExplanation.parse("Known failure [x]: no fix, no reference") is None
    e = paddlejob.FailureExplanation.parse("... Known failure [out-of-memory]: Killed. Fix: Less. See docs/paddle-known-issues.md#oom (and 1 more failed pods)")
    assert e == paddlejob.FailureExplanation(id="out-of-memory", cause="Killed.", fix="Less.", doc="docs/paddle-known-issues.md#oom")
