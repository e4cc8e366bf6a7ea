"""Image references, checked as pkg/client.ValidateImage checks them: the
API server stores any string, and a kubelet then fails to pull a bad one
(InvalidImageName); checking before submitting says why at once.

    [registry[:port]/]component[/component...][:tag][@algorithm:hex]
"""

from __future__ import annotations

import re
from typing import Optional

_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$")
_REGISTRY = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}$")
_MAX_NAME = 255


def image_problem(ref: str) -> Optional[str]:
    """What is wrong with an image reference, or None."""
    if ref == "":
        return "the image is required"
    if ref.strip() != ref or any(c in ref for c in " \t\n\r"):
        return "an image reference has no spaces, e.g. registry.example.com/team/trainer:v1"
    name, at, digest = ref.partition("@")
    if at and not _DIGEST.match(digest):
        return f"digest {digest!r}: want ALGORITHM:HEX, e.g. sha256:<64 hex digits>"
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG.match(tag):
            return f"tag {tag!r}: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"
    if name == "":
        return "the repository name is missing"
    if len(name) > _MAX_NAME:
        return f"the repository name has {len(name)} characters; at most {_MAX_NAME}"
    parts = name.split("/")
    first = parts[0]
    if len(parts) > 1 and (any(c in first for c in ".:") or first == "localhost" or first != first.lower()):
        if not _REGISTRY.match(first):
            return f"registry {first!r}: want a host name, optionally with a port (registry.example.com:5000)"
        parts = parts[1:]
    for p in parts:
        if not _COMPONENT.match(p):
            if p != p.lower():
                return f"{p!r}: repository names are lowercase"
            return f"{p!r}: a repository name's parts are lowercase letters and digits, joined by '.', '_' or '-'"
    return None
