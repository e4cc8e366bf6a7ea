"""In-pod helpers of the original paddle.job SDK: who this trainer is, and its share of the data;
and the wait for the parameter servers that Paddle 3.0 no longer makes.

They need nothing but the standard library, so a trainer image only needs
this package, not the Kubernetes client. The operator gives every pod the
environment of docs/env-contract.md.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable, Iterable, Iterator, Tuple


def _env_int(names: Tuple[str, ...], what: str) -> int:
    for name in names:
        value = os.environ.get(name)
        if value is None or value == "":
            continue
        try:
            return int(value)
        except ValueError:
            raise RuntimeError(f"{what}: ${name} is {value!r}, not an integer") from None
    raise RuntimeError(
        f"{what}: none of {', '.join('$' + n for n in names)} is set; "
        "the operator sets them in every pod of a PaddleJob (docs/env-contract.md)"
    )


def trainer_id() -> int:
    """This pod's index within its role: 0 to trainers()-1 on a trainer.

    Read from PADDLE_TRAINER_ID, else the original paddle.job SDK's TRAINER_ID.
    """
    return _env_int(("PADDLE_TRAINER_ID", "TRAINER_ID"), "trainer_id()")


def trainers() -> int:
    """The number of trainers of the job: PADDLE_TRAINERS_NUM, else the original paddle.job SDK's TRAINERS."""
    return _env_int(("PADDLE_TRAINERS_NUM", "TRAINERS"), "trainers()")


def dist_reader(filename: str, trainers: int, trainer_id: int) -> Callable[[], Iterator[Tuple[int, ...]]]:
    """A reader creator of this trainer's share of a CSV file of integers.

    The original paddle.job SDK's rule: counting lines from 1, line n belongs to the trainer
    whose id is n mod trainers (so with 3 trainers, trainer 1 reads lines 1,
    4, 7...). Each line is yielded as a tuple of ints. Every trainer reading
    the same file with its own id reads every line exactly once.
    """
    if not isinstance(trainers, int) or isinstance(trainers, bool) or trainers < 1:
        raise ValueError(f"trainers {trainers!r}: must be an integer, at least 1")
    if not isinstance(trainer_id, int) or isinstance(trainer_id, bool) or not 0 <= trainer_id < trainers:
        raise ValueError(f"trainer_id {trainer_id!r}: must be an integer from 0 to trainers-1 ({trainers - 1})")

    def dist_reader_creator() -> Iterator[Tuple[int, ...]]:
        with open(filename) as f:
            for n, line in enumerate(f, start=1):
                if n % trainers != trainer_id:
                    continue
                try:
                    yield tuple(int(cell) for cell in line.split(","))
                except ValueError:
                    raise ValueError(f"{filename} line {n}: {line.rstrip()!r} is not comma-separated integers") from None

    return dist_reader_creator


def dataset_from_reader(filename: str, reader: Callable[[], Iterable[Iterable[Any]]]) -> None:
    """Writes every item reader() yields as one comma-separated line of filename.

    The file appears complete or not at all (it is written aside and renamed),
    so trainers never read half of it.
    """
    tmp = f"{filename}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            for item in reader():
                f.write(",".join(str(d) for d in item))
                f.write("\n")
        os.replace(tmp, filename)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)




def wait_for_servers(endpoints: Iterable[str], timeout: float = 300) -> None:
    """Waits until every parameter server ("host:port") accepts connections.

    Paddle 2.x trainers waited for the servers themselves; Paddle 3.0's
    wait_server_ready does nothing, and a trainer that reaches a server
    before it listens fails ("push dense param failed"). A PaddleJob starts
    trainers once the servers listen, except ps-0 when Gloo is on (it
    listens only after the trainers joined its Gloo store), and `paddlejob
    launch` once every pserver listens: call this on a trainer before
    fleet.init_worker(), with fleet.server_endpoints(), when Gloo is on or
    the program is started some other way. Raises TimeoutError naming the
    first server that did not answer in time.
    """
    deadline = time.monotonic() + timeout
    for endpoint in endpoints:
        host, port = endpoint.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"parameter server {endpoint} did not accept connections within {timeout:g}s"
                    ) from None
                time.sleep(0.2)
