"""The shared vectors (test/vectors/paddlejob): the Go SDK is tested against the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

import paddlejob
from conftest import VECTORS

FILES = sorted(VECTORS.glob("*.json"))


def build(parameters: Dict[str, Any]) -> paddlejob.PaddleJob:
    p = dict(parameters)
    if "cephfs_volume" in p:
        p["cephfs_volume"] = paddlejob.CephFSVolume(**p["cephfs_volume"])
    return paddlejob.PaddleJob(**p)


def test_vectors_exist() -> None:
    assert len(FILES) >= 10, f"shared vectors missing in {VECTORS}"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_vector(path: Path) -> None:
    v = json.loads(path.read_text())
    assert ("expected" in v) != ("errors" in v), "a vector holds either expected or errors"
    if "errors" in v:
        with pytest.raises(paddlejob.ValidationError) as e:
            build(v["parameters"])
        assert sorted(e.value.parameters) == sorted(v["errors"])
        assert isinstance(e.value, ValueError)
        return
    assert build(v["parameters"]).to_dict() == v["expected"]
