"""Image references, read as the kubelet reads them (the Go module
github.com/distribution/reference, which internal/imageref uses; both are
tested on test/vectors/imageref): the API server stores any string, and a
kubelet then fails to pull a bad one (InvalidImageName); checking before
submitting says why at once.

    [registry[:port]/]component[/component...][:tag][@algorithm:hex]
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

# distribution's grammar (regexp.go), with Go's \w spelt out.
_WORD = r"[0-9A-Za-z_]"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG_PATTERN = rf"{_WORD}[0-9A-Za-z_.-]{{0,127}}"
_DIGEST_PATTERN = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"

_REFERENCE = re.compile(rf"^((?:{_DOMAIN}/)?{_REMOTE_NAME})(?::({_TAG_PATTERN}))?(?:@({_DIGEST_PATTERN}))?$")
_NAME = re.compile(rf"^(?:({_DOMAIN})/)?({_REMOTE_NAME})$")
_TAG = re.compile(rf"^{_TAG_PATTERN}$")
_DOMAIN_ONLY = re.compile(rf"^{_DOMAIN}$")
_COMPONENT = re.compile(rf"^{_PATH_COMPONENT}$")
_IDENTIFIER = re.compile(r"^[a-f0-9]{64}$")
#: The digests go-digest accepts: algorithm and hex length.
_DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
_MAX_PATH = 255


def _split_docker_domain(name: str) -> Tuple[str, str]:
    """distribution's splitDockerDomain: the registry and the rest, Docker
    Hub's filled in ("busybox" is docker.io, library/busybox)."""
    first, slash, rest = name.partition("/")
    if not slash:
        return "docker.io", "library/" + name
    if first == "localhost" or any(c in first for c in ".:") or first != first.lower():
        domain, remote = ("docker.io", rest) if first == "index.docker.io" else (first, rest)
    else:
        domain, remote = "docker.io", name
    if domain == "docker.io" and "/" not in remote:
        remote = "library/" + remote
    return domain, remote


def _digest_ok(digest: str) -> bool:
    algorithm, _, hex_ = digest.partition(":")
    n = _DIGEST_LENGTHS.get(algorithm)
    return n is not None and re.fullmatch(rf"[a-f0-9]{{{n}}}", hex_) is not None


def _parse(ref: str) -> Tuple[Optional[str], str]:
    """distribution's ParseNormalizedNamed: why it refuses ref (None when it
    does not) and the registry it reads ("" when its first part is no
    host name)."""
    if _IDENTIFIER.match(ref):
        return "cannot specify 64-byte hexadecimal strings", ""
    domain, remainder = _split_docker_domain(ref)
    remote = remainder.split(":", 1)[0]
    if remote != remote.lower():
        return "repository name must be lowercase", ""
    m = _REFERENCE.match(domain + "/" + remainder)
    if m is None:
        return "invalid reference format", ""
    name = _NAME.match(m.group(1))
    host, path = (name.group(1) or "", name.group(2)) if name else ("", m.group(1))
    if len(path) > _MAX_PATH:
        return "too long", ""
    if m.group(3) and not _digest_ok(m.group(3)):
        return "invalid digest", ""
    return None, host


def image_problem(ref: str) -> Optional[str]:
    """What is wrong with an image reference, or None; the same words as the
    Go SDK's (internal/imageref)."""
    if ref == "":
        return "the image is required"
    if ref.strip() != ref or any(c in ref for c in " \t\n\r"):
        return "an image reference has no spaces, e.g. registry.example.com/team/trainer:v1"
    error, host = _parse(ref)
    if error is None:
        if host and host != "localhost" and not any(c in host for c in ".:"):
            return f"{host!r}: repository names are lowercase (a registry's host name has a dot or a port, or is localhost)"
        return None
    if error == "too long":
        return f"the repository name is too long: at most {_MAX_PATH} characters"
    return _explain(ref, error)


def _explain(ref: str, error: str) -> str:
    """The part of ref to change, checked with the grammar's own pieces."""
    name, at, digest = ref.partition("@")
    if at and (not re.fullmatch(_DIGEST_PATTERN, digest) or not _digest_ok(digest)):
        return f"digest {digest!r}: want ALGORITHM:HEX, e.g. sha256:<64 lowercase hex digits>"
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG.match(tag):
            return f"tag {tag!r}: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"
    if name == "":
        return "the repository name is missing"
    parts = name.split("/")
    first = parts[0]
    if len(parts) > 1 and (any(c in first for c in ".:") or first == "localhost"):
        if not _DOMAIN_ONLY.match(first):
            return f"registry {first!r}: want a host name, optionally with a port (registry.example.com:5000)"
        parts = parts[1:]
    for p in parts:
        if p != p.lower():
            return f"{p!r}: repository names are lowercase"
        if not _COMPONENT.match(p):
            return f"{p!r}: a repository name's parts are lowercase letters and digits, joined by '.', '_' or '-'"
    return f"{ref!r} is not an image reference [registry/]name[:tag][@digest]: {error}"
