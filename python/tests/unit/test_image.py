"""build_image_context runs the paddlejob CLI's `image context` (seed 002's build_docker.sh)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import paddlejob


@pytest.fixture
def package(tmp_path: Path) -> Path:
    src = tmp_path / "word2vec"
    src.mkdir()
    (src / "train.py").write_text("print('training')\n")
    return src


def test_writes_the_context(package: Path, tmp_path: Path) -> None:
    out = paddlejob.build_image_context(str(package), "/example", "paddlepaddle/paddle:3.0.0", "yancey1989/paddle-job",
                                        entrypoint="python train.py", out=str(tmp_path / "ctx"))
    dockerfile = (out / "Dockerfile").read_text()
    assert "FROM paddlepaddle/paddle:3.0.0" in dockerfile
    assert "WORKDIR /example" in dockerfile
    assert 'ENTRYPOINT ["python", "train.py"]' in dockerfile
    assert (out / "package" / "train.py").read_text() == "print('training')\n"


def test_the_tools_refusal_is_the_error(package: Path, tmp_path: Path) -> None:
    with pytest.raises(paddlejob.ImageContextError, match='--dest="example" must be an absolute path'):
        paddlejob.build_image_context(str(package), "example", "paddlepaddle/paddle", "img", out=str(tmp_path / "ctx"))


def test_build_without_a_docker_engine(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = os.environ["PADDLEJOB_BIN"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker on it
    with pytest.raises(paddlejob.NoDockerEngineError, match="docker is not on PATH"):
        paddlejob.build_image_context(str(package), "/example", "paddlepaddle/paddle", "img", out=str(tmp_path / "ctx"), build=True, binary=binary)
    assert (tmp_path / "ctx" / "Dockerfile").is_file()


def test_missing_cli(package: Path, tmp_path: Path) -> None:
    with pytest.raises(paddlejob.ImageContextError, match="is not on PATH"):
        paddlejob.build_image_context(str(package), "/example", "b", "i", out=str(tmp_path / "c"), binary=str(tmp_path / "nothing"))
