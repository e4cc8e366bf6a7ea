"""The original paddle.job SDK's runtime image build (tools/build_docker.sh): a trainer package
on a base image, by the paddlejob CLI's `paddlejob image context`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

from .errors import ImageContextError, NoDockerEngineError

#: Exit code of `paddlejob image context --build` when no Docker engine answers.
EXIT_NO_DOCKER_ENGINE = 3


def _paddlejob_binary(binary: Optional[str]) -> str:
    name = binary or os.environ.get("PADDLEJOB_BIN") or "paddlejob"
    found = shutil.which(name)
    if found is None:
        raise ImageContextError(
            f"the paddlejob CLI ({name}) is not on PATH: build it with `make build` (bin/paddlejob) or name it with binary= or $PADDLEJOB_BIN"
        )
    return found


def build_image_context(
    src: str,
    dest: str,
    base: str,
    image: str,
    entrypoint: Optional[str] = None,
    out: str = "image-context",
    build: bool = False,
    binary: Optional[str] = None,
) -> Path:
    """Writes a Docker build context into ``out`` that copies the trainer
    package ``src`` to ``dest`` on the ``base`` image (WORKDIR ``dest``,
    ENTRYPOINT ``entrypoint``), for the runtime image ``image``; with
    ``build`` also runs ``docker build``. Returns the context's path.

    It runs ``paddlejob image context`` (``binary``, $PADDLEJOB_BIN or
    paddlejob on PATH). Its refusals raise ImageContextError with the tool's
    message; NoDockerEngineError when ``build`` finds no Docker engine (the
    context is complete then).
    """
    args: List[str] = [_paddlejob_binary(binary), "image", "context", "--src", src, "--dest", dest,
                       "--base", base, "--image", image, "--out", out]
    if entrypoint is not None:
        args += ["--entrypoint", entrypoint]
    if build:
        args.append("--build")
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode == EXIT_NO_DOCKER_ENGINE and build:
        raise NoDockerEngineError(proc.stderr.strip() or proc.stdout.strip())
    if proc.returncode != 0:
        raise ImageContextError(proc.stderr.strip() or proc.stdout.strip() or f"paddlejob image context exited with {proc.returncode}")
    return Path(out)
