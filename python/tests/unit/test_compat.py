"""The paddle.job SDK's `import paddle.job as job`: its README code verbatim,
and a paddle/job.py that never shadows PaddlePaddle's own paddle package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import paddlejob
from conftest import VECTORS

# The paddle.job SDK's README (seed 002), verbatim (only its cephfs monitor's line ends differ).
PADDLE_JOB_README = '''
import paddle.job as job
paddle_job=job.PaddleJob(
    pservers=3,
    runtime_image="yancey1989/paddle-job",
    job_name="paddle-job",
    namespace="yanxu",
    use_gpu=False,
    cpu_num=3,
    trainer_package_path="/example/word2vec",
    entry_point="python train.py",
    cephfs_volume=job.CephFSVolume(
        monitors_addr="172.19.32.166:6789"
    ))
'''


def test_paddle_job_readme_verbatim() -> None:
    scope: dict = {}
    exec(PADDLE_JOB_README, scope)
    job = scope["paddle_job"]
    assert isinstance(job, paddlejob.PaddleJob)
    want = json.loads((VECTORS / "word2vec-example.json").read_text())["expected"]
    assert job.to_dict() == want


def test_paddle_job_has_the_names_of_paddlejob() -> None:
    import paddle.job as job

    for name in ("PaddleJob", "CephFSVolume", "PaddleJobClient", "dist_reader", "dataset_from_reader", "trainer_id", "trainers"):
        assert getattr(job, name) is getattr(paddlejob, name), name


def python(code: str, path: Path) -> str:
    """Runs code in a fresh interpreter with path first on sys.path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path)] + sys.path))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()


def fake_paddlepaddle(root: Path) -> Path:
    """A stand-in for PaddlePaddle's paddle package (a regular package)."""
    (root / "paddle").mkdir(parents=True)
    (root / "paddle" / "__init__.py").write_text("__version__ = 'PaddlePaddle'\n")
    (root / "paddle" / "nn.py").write_text("LAYERS = 1\n")
    return root


def test_installed_beside_paddlepaddle_it_adds_paddle_job(tmp_path: Path) -> None:
    """A training image: paddlejob installed where PaddlePaddle is. paddle
    is PaddlePaddle, whole, and paddle.job is the paddle.job SDK's."""
    import paddle.job

    site = fake_paddlepaddle(tmp_path)
    (site / "paddle" / "job.py").write_text(Path(paddle.job.__file__).read_text())  # what pip puts there
    out = python("import paddle, paddle.nn, paddle.job as job; print(paddle.__version__, paddle.nn.LAYERS, job.PaddleJob.__module__)", site)
    assert out == "PaddlePaddle 1 paddlejob.job"


def test_it_never_shadows_paddlepaddle(tmp_path: Path) -> None:
    """paddlejob's paddle/ found first on sys.path, PaddlePaddle later:
    paddle is still PaddlePaddle (a namespace portion never wins over a
    regular package)."""
    import paddle.job

    ours = tmp_path / "ours"
    (ours / "paddle").mkdir(parents=True)
    (ours / "paddle" / "job.py").write_text(Path(paddle.job.__file__).read_text())
    theirs = fake_paddlepaddle(tmp_path / "theirs")
    out = python("import sys; sys.path.insert(1, %r); import paddle, paddle.nn; print(paddle.__version__, paddle.nn.LAYERS)" % str(theirs), ours)
    assert out == "PaddlePaddle 1"


def test_the_wheel_ships_no_paddle_init() -> None:
    import paddle
    import paddle.job

    # Without PaddlePaddle, paddle is a namespace package: no __init__.py.
    assert getattr(paddle, "__file__", None) is None, paddle
    assert not (Path(paddle.job.__file__).parent / "__init__.py").exists()
