"""Image references on the shared vectors (test/vectors/imageref), which
the Go SDK's parser (internal/imageref) is tested against too."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from conftest import VECTORS
from paddlejob._imageref import image_problem

CASES: List[Dict[str, Any]] = json.loads((VECTORS.parent / "imageref" / "references.json").read_text())["cases"]


def test_vectors_exist() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c["ref"][:40] or "empty" for c in CASES])
def test_reference(case: Dict[str, Any]) -> None:
    problem = image_problem(case["ref"])
    if "says" not in case:
        assert problem is None
    else:
        assert problem is not None and case["says"] in problem
