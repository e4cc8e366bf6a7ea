"""Shared fixtures: where the repository's shared test vectors are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "test" / "vectors" / "paddlejob"
