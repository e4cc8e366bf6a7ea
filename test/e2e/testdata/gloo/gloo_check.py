"""A static-graph parameter-server program that calls Gloo through fleet.util.

It prints what Paddle reports, one "gloo:" line per call, so a test can
check that the numbers came from communication: each process contributes
its rank + 1 to an all-reduce, and only the other ranks' values make the sum.

Trainers: a barrier, an all-reduce and an all-gather among the workers,
then a barrier and an all-reduce among all processes, then two training
steps against the parameter servers (init_worker itself synchronises the
trainers with Gloo). Servers: a barrier and an all-reduce among the servers
and among all processes (the groups PADDLE_WITH_GLOO=2 asks for), made
before run_server, which never returns.

PADDLE_WITH_GLOO says the level; at 0 Paddle builds no Gloo context and
fleet.util returns each process's own value with a warning, which this
program prints too.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

from paddlejob import wait_for_servers  # the SDK, copied next to this file


def gloo_call(name: str, call):
    """Runs one fleet.util call and prints its result, the warnings Paddle
    raised, or the exception it failed with."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as e:  # Paddle's own failure is the report
            print(f"gloo: {name} failed: {type(e).__name__}: {e}", flush=True)
            return None
    for w in caught:
        print(f"gloo: {name} warned: {w.message}", flush=True)
    if result is not None:
        result = np.asarray(result).reshape(-1).tolist()
    print(f"gloo: {name} = {result}", flush=True)
    return result


def build_model():
    x = paddle.static.data("x", [None, 4], "float32")
    y = paddle.static.data("y", [None, 1], "float32")
    loss = paddle.mean(paddle.square(paddle.static.nn.fc(x, 1) - y))
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True
    optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(0.1), strategy)
    optimizer.minimize(loss)
    return loss


def main() -> None:
    paddle.enable_static()
    # Gloo is initialised here, in static mode, when PADDLE_WITH_GLOO is 1 or 2.
    fleet.init(fleet.PaddleCloudRoleMaker())
    level = os.environ.get("PADDLE_WITH_GLOO", "")
    loss = build_model()
    if fleet.is_server():
        index = fleet.server_index()
        print(f"gloo: role=PSERVER index={index} servers={fleet.server_num()} workers={fleet.worker_num()} PADDLE_WITH_GLOO={level}", flush=True)
        for world in ("server", "all"):
            gloo_call(f"{world} barrier", lambda: fleet.util.barrier(world))
            # Among all processes a server's rank follows the workers'.
            rank = index if world == "server" else fleet.worker_num() + index
            gloo_call(f"{world} all_reduce", lambda: fleet.util.all_reduce([rank + 1], "sum", world))
        print("gloo: server calls done", flush=True)
        fleet.init_server()
        fleet.run_server()
        return

    index = fleet.worker_index()
    print(f"gloo: role=TRAINER index={index} trainers={fleet.worker_num()} servers={fleet.server_num()} PADDLE_WITH_GLOO={level}", flush=True)
    gloo_call("worker barrier", lambda: fleet.util.barrier("worker"))
    gloo_call("worker all_reduce", lambda: fleet.util.all_reduce([index + 1], "sum", "worker"))
    gloo_call("worker all_gather", lambda: fleet.util.all_gather(index + 1, "worker"))
    gloo_call("all barrier", lambda: fleet.util.barrier("all"))
    gloo_call("all all_reduce", lambda: fleet.util.all_reduce([index + 1], "sum", "all"))

    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    wait_for_servers(fleet.server_endpoints(), 300)
    fleet.init_worker()
    rng = np.random.default_rng(index)
    for step in range(2):
        x = rng.random((8, 4), dtype=np.float32)
        (value,) = exe.run(paddle.static.default_main_program(), feed={"x": x, "y": x.sum(axis=1, keepdims=True)}, fetch_list=[loss])
        print(f"gloo: step {step} loss {float(np.asarray(value)):.4f}", flush=True)
    fleet.stop_worker()
    print("gloo: trainer done", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
