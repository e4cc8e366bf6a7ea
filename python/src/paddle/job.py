"""The original paddle.job SDK's ``paddle.job``, kept for its users: ``import paddle.job as job``
then ``job.PaddleJob(...)``, ``job.CephFSVolume(...)`` work as the original SDK's
README shows them. New code imports :mod:`paddlejob`, which has the same
names and more (PaddleJobClient, collective jobs, typed results).

``paddle`` is PaddlePaddle's own package. This distribution ships no
``paddle/__init__.py``, only this module, so it never replaces PaddlePaddle:

- without PaddlePaddle, ``paddle`` is a namespace package holding ``job``
  alone (a client machine that only submits jobs);
- with PaddlePaddle installed into the same environment (a training image),
  this file sits in PaddlePaddle's package directory, ``import paddle`` is
  PaddlePaddle, unchanged, and ``paddle.job`` is this module;
- with PaddlePaddle in another directory of ``sys.path`` than this
  distribution, Python finds PaddlePaddle's ``paddle`` and not this module:
  install paddlejob where PaddlePaddle is, or ``import paddlejob``.
"""

from __future__ import annotations

from typing import Any

from paddlejob import (
    CephFSVolume,
    PaddleJob,
    PaddleJobError,
    ValidationError,
    dataset_from_reader,
    dist_reader,
    trainer_id,
    trainers,
)

__all__ = ["CephFSVolume", "PaddleJob", "PaddleJobClient", "PaddleJobError", "ValidationError", "dataset_from_reader",
           "dist_reader", "trainer_id", "trainers"]


def __getattr__(name: str) -> Any:
    # The client needs the Kubernetes client: imported on first use, as in paddlejob.
    if name == "PaddleJobClient":
        from paddlejob.client import PaddleJobClient

        return PaddleJobClient
    raise AttributeError(f"module 'paddle.job' has no attribute {name!r}")
