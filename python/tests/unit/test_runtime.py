"""The in-pod helpers: trainer_id, trainers, dist_reader, dataset_from_reader, wait_for_servers."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest

import paddlejob


def test_ids_from_the_env_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PADDLE_TRAINER_ID", "2")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "5")
    monkeypatch.setenv("TRAINER_ID", "9")
    monkeypatch.setenv("TRAINERS", "9")
    assert (paddlejob.trainer_id(), paddlejob.trainers()) == (2, 5)


def test_ids_from_the_paddle_job_sdk_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("TRAINER_ID", "1")
    monkeypatch.setenv("TRAINERS", "3")
    assert (paddlejob.trainer_id(), paddlejob.trainers()) == (1, 3)


def test_ids_outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "TRAINER_ID", "TRAINERS"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(RuntimeError, match=r"none of \$PADDLE_TRAINER_ID, \$TRAINER_ID is set"):
        paddlejob.trainer_id()
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "three")
    with pytest.raises(RuntimeError, match="PADDLE_TRAINERS_NUM is 'three', not an integer"):
        paddlejob.trainers()


def rows(n: int) -> Iterator[tuple[int, int, int]]:
    for i in range(n):
        yield (i, i * i, -i)


def test_dataset_then_dist_reader_reads_each_row_once(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    paddlejob.dataset_from_reader(str(data), lambda: rows(10))
    assert data.read_text().splitlines()[:2] == ["0,0,0", "1,1,-1"]
    shares = [list(paddlejob.dist_reader(str(data), 3, t)()) for t in range(3)]
    # Seed 002's rule: line n (from 1) goes to trainer n mod 3.
    assert [r[0] for r in shares[1]] == [0, 3, 6, 9]
    assert [r[0] for r in shares[2]] == [1, 4, 7]
    assert [r[0] for r in shares[0]] == [2, 5, 8]
    assert sorted(r for s in shares for r in s) == list(rows(10))


def test_dist_reader_is_a_reader_creator(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("1,2\n3,4\n")
    reader = paddlejob.dist_reader(str(data), 1, 0)
    assert list(reader()) == list(reader()) == [(1, 2), (3, 4)]


def test_dist_reader_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="trainers 0: must be an integer, at least 1"):
        paddlejob.dist_reader("x", 0, 0)
    with pytest.raises(ValueError, match=r"trainer_id 3: must be an integer from 0 to trainers-1 \(2\)"):
        paddlejob.dist_reader("x", 3, 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n\n3,x\n")
    with pytest.raises(ValueError, match="bad.csv line 3: '3,x' is not comma-separated integers"):
        list(paddlejob.dist_reader(str(bad), 2, 1)())


def test_dataset_from_reader_leaves_no_partial_file(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"

    def broken() -> Iterator[tuple[int]]:
        yield (1,)
        raise OSError("source vanished")

    with pytest.raises(OSError):
        paddlejob.dataset_from_reader(str(data), broken)
    assert list(tmp_path.iterdir()) == []


def test_wait_for_servers_returns_once_each_listens() -> None:
    first, second = socket.socket(), socket.socket()
    first.bind(("127.0.0.1", 0))
    first.listen()
    second.bind(("127.0.0.1", 0))  # bound, listening only later
    endpoints = [f"127.0.0.1:{s.getsockname()[1]}" for s in (first, second)]
    later = threading.Timer(0.5, second.listen)
    later.start()
    try:
        paddlejob.wait_for_servers(endpoints, timeout=30)
    finally:
        later.join()
        first.close()
        second.close()


def test_wait_for_servers_names_the_server_that_never_listens() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    endpoint = f"127.0.0.1:{closed.getsockname()[1]}"
    try:
        with pytest.raises(TimeoutError, match=f"parameter server {endpoint} did not accept connections within 0.5s"):
            paddlejob.wait_for_servers([endpoint], timeout=0.5)
    finally:
        closed.close()
