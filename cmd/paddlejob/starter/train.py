"""A PaddlePaddle distributed training program, written by `paddlejob init`.

It runs unmodified in both kinds of PaddleJob, which give every pod its role
and peers in the environment (docs/env-contract.md in the paddlejob project):

- parameter-server mode (job-ps.yaml): every pod runs `python train.py`;
  parameter servers serve, trainers train with GEO-SGD and exchange updates
  with the servers;
- collective mode (job-collective.yaml): every pod runs
  `python -m paddle.distributed.launch train.py`; trainers all-reduce their
  gradients (Gloo on CPUs, NCCL on GPUs).

It learns a binary classifier from the CSV files in --data-dir (train.csv and
test.csv: label,feature1,...; trainer i of n trains on rows r with r mod n = i),
reports its progress and metrics to the operator with paddlejob.report_progress
(paddlejob get, paddlejob metrics, kubectl get pdj -o wide show them), saves a
checkpoint after every epoch and resumes from the newest one when the job is
restarted, and writes the trained model to --output-dir/model.

Replace the model and the data reading with your own; keep the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time

PS_MODE = bool(os.environ.get("PADDLE_PSERVERS_IP_PORT_LIST"))
if PS_MODE:
    # Paddle 3.0's parameter-server passes work on the legacy program IR only.
    os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.distributed.fleet as fleet  # noqa: E402

from paddlejob import flush_progress, report_progress, wait_for_servers  # noqa: E402  (the SDK's in-pod helpers, next to this file)


def parse_args() -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=int(env("EPOCHS", "5")))
    p.add_argument("--batch-size", type=int, default=int(env("BATCH_SIZE", "64")))
    p.add_argument("--learning-rate", type=float, default=float(env("LEARNING_RATE", "0.01")))
    p.add_argument("--data-dir", default=env("DATA_DIR", "data"))
    p.add_argument("--output-dir", default=env("OUTPUT_DIR", "output"))
    p.add_argument("--k-steps", type=int, default=10, help="parameter-server mode: steps between exchanges with the servers (GEO-SGD)")
    return p.parse_args()


# ---- data -------------------------------------------------------------------


def read_csv(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float32, one row per example) and labels (float32, 0 or 1)."""
    if not os.path.exists(path):
        raise SystemExit(f"no data at {path}: mount the data volume there, or give --data-dir")
    rows = np.loadtxt(path, delimiter=",", dtype="float32", ndmin=2)
    return rows[:, 1:], rows[:, :1]


def my_shard(x: np.ndarray, y: np.ndarray, rank: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    mine = np.arange(len(y)) % world == rank
    return x[mine], y[mine]


def accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    return float(((probabilities > 0.5) == (labels > 0.5)).mean())


# ---- checkpoints ------------------------------------------------------------
# <output>/checkpoints/epoch-N/ holds what a restarted job resumes from; it is
# written under a temporary name and renamed into place, so a directory named
# epoch-N is always whole. <output>/model/ is the trained model.


def newest_checkpoint(output_dir: str) -> tuple[int, str] | None:
    """(epochs done, directory) of the newest complete checkpoint, or None."""
    root = os.path.join(output_dir, "checkpoints")
    best = None
    for name in os.listdir(root) if os.path.isdir(root) else []:
        if name.startswith("epoch-") and name[6:].isdigit() and os.path.exists(os.path.join(root, name, "done.json")):
            epochs = int(name[6:])
            if best is None or epochs > best[0]:
                best = (epochs, os.path.join(root, name))
    return best


def publish(tmp: str, final: str) -> None:
    """Moves a directory written as tmp into place as final, replacing it."""
    shutil.rmtree(final, ignore_errors=True)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    os.rename(tmp, final)


def checkpoint_dirs(output_dir: str, epochs: int) -> tuple[str, str]:
    final = os.path.join(output_dir, "checkpoints", f"epoch-{epochs}")
    tmp = os.path.join(output_dir, "checkpoints", f".epoch-{epochs}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    return tmp, final


def mark_done(directory: str, **meta: float) -> None:
    with open(os.path.join(directory, "done.json"), "w") as f:
        json.dump(meta, f)


# ---- progress ---------------------------------------------------------------


def report(epoch: int, epochs: int, step: int, steps: int, **metrics: float) -> None:
    """Reports the job's progress: at most one report a second is sent."""
    done = (epoch + step / max(steps, 1)) / epochs * 100
    report_progress(min(done, 100.0), epoch=epoch + (1 if step else 0), total_epochs=epochs, metrics=metrics)


# ---- collective mode (dygraph) ----------------------------------------------


def train_collective(args: argparse.Namespace) -> None:
    import paddle.distributed as dist

    # One process group, made by init_parallel_env: fleet.init(is_collective=True)
    # makes three on CPU, one after another, and Paddle's Gloo groups can then
    # read each other's addresses and fail (docs/paddle-known-issues.md in the
    # paddlejob project). Data parallelism needs no more.
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"role=TRAINER mode=collective rank={rank} world_size={world}", flush=True)
    x, y = my_shard(*read_csv(os.path.join(args.data_dir, "train.csv")), rank, world)
    test_x, test_y = read_csv(os.path.join(args.data_dir, "test.csv"))

    paddle.seed(1)
    model = paddle.nn.Sequential(paddle.nn.Linear(x.shape[1], 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 1))
    optimizer = paddle.optimizer.Adam(args.learning_rate, parameters=model.parameters())
    start = 0
    found = newest_checkpoint(args.output_dir)
    if found:
        start, path = found
        model.set_state_dict(paddle.load(os.path.join(path, "model.pdparams")))
        optimizer.set_state_dict(paddle.load(os.path.join(path, "model.pdopt")))
        print(f"rank {rank}: resumed after epoch {start} from {path}", flush=True)
    model = paddle.DataParallel(model)
    loss_fn = paddle.nn.BCEWithLogitsLoss()

    def evaluate() -> float:
        model.eval()
        with paddle.no_grad():
            return accuracy(paddle.nn.functional.sigmoid(model(paddle.to_tensor(test_x))).numpy(), test_y)

    if found:
        print(f"resumed model: rank={rank} test_accuracy={evaluate():.4f}", flush=True)

    steps = max(1, -(-len(y) // args.batch_size))
    started = time.monotonic()
    test_accuracy = 0.0
    for epoch in range(start, args.epochs):
        model.train()
        order = np.random.default_rng([epoch, rank]).permutation(len(y))
        losses = []
        for step, begin in enumerate(range(0, len(order), args.batch_size)):
            batch = order[begin : begin + args.batch_size]
            loss = loss_fn(model(paddle.to_tensor(x[batch])), paddle.to_tensor(y[batch]))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
            report(epoch, args.epochs, step + 1, steps, loss=float(np.mean(losses)))
        test_accuracy = evaluate()
        report(epoch + 1, args.epochs, 0, steps, accuracy=test_accuracy, loss=float(np.mean(losses)))
        flush_progress()
        print(f"epoch {epoch + 1}/{args.epochs}: loss={np.mean(losses):.4f} test_accuracy={test_accuracy:.4f} ({time.monotonic() - started:.1f}s)", flush=True)
        if rank == 0:
            tmp, final = checkpoint_dirs(args.output_dir, epoch + 1)
            paddle.save(model.state_dict(), os.path.join(tmp, "model.pdparams"))
            paddle.save(optimizer.state_dict(), os.path.join(tmp, "model.pdopt"))
            mark_done(tmp, epochs=epoch + 1, test_accuracy=test_accuracy)
            publish(tmp, final)
        if world > 1:
            dist.barrier()  # a restart finds every rank's epoch saved
    if rank == 0:
        tmp = os.path.join(args.output_dir, ".model.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        paddle.save(model.state_dict(), os.path.join(tmp, "model.pdparams"))
        mark_done(tmp, epochs=args.epochs, test_accuracy=test_accuracy)
        publish(tmp, os.path.join(args.output_dir, "model"))
        print(f"model: {os.path.join(args.output_dir, 'model')}", flush=True)
    print(f"final: rank={rank} world_size={world} test_accuracy={test_accuracy:.4f}", flush=True)


# ---- parameter-server mode (static graph) -----------------------------------


def train_ps(args: argparse.Namespace) -> None:
    paddle.enable_static()
    fleet.init(fleet.PaddleCloudRoleMaker())
    features = len(np.loadtxt(os.path.join(args.data_dir, "test.csv"), delimiter=",", max_rows=1)) - 1
    x = paddle.static.data("x", [None, features], "float32")
    label = paddle.static.data("label", [None, 1], "float32")
    hidden = paddle.static.nn.fc(x, 16, activation="relu")
    logits = paddle.static.nn.fc(hidden, 1)
    loss = paddle.mean(paddle.nn.functional.binary_cross_entropy_with_logits(logits, label))
    probability = paddle.nn.functional.sigmoid(logits)
    strategy = fleet.DistributedStrategy()
    # GEO-SGD: each trainer trains a local copy and exchanges updates with
    # the servers every k steps (Paddle 3.0's plain asynchronous mode does
    # not refresh a trainer's parameters under Executor.run).
    strategy.a_sync = True
    strategy.a_sync_configs = {"k_steps": args.k_steps}
    fleet.distributed_optimizer(paddle.optimizer.Adam(args.learning_rate), strategy).minimize(loss)
    test_program = paddle.static.default_main_program().clone(for_test=True)._prune([probability])

    if fleet.is_server():
        print(f"role=PSERVER mode=ps index={fleet.server_index()} servers={fleet.server_num()}", flush=True)
        fleet.init_server()
        fleet.run_server()
        return

    rank, world = fleet.worker_index(), fleet.worker_num()
    print(f"role=TRAINER mode=ps rank={rank} world_size={world} servers={fleet.server_num()}", flush=True)
    main = paddle.static.default_main_program()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    # Resuming: loaded before init_worker(), which makes trainer 0 push its
    # parameters to the servers and the others pull them; so trainer 0 loads
    # the parameters, every trainer the optimizer state.
    start = 0
    found = newest_checkpoint(args.output_dir)
    if found:
        start, path = found
        state = paddle.static.load_program_state(os.path.join(path, "train"))
        if rank != 0:
            names = {p.name for p in main.all_parameters()}
            state = {k: v for k, v in state.items() if k not in names}
        paddle.static.set_program_state(main, state)
        print(f"rank {rank}: resumed after epoch {start} from {path}", flush=True)
    wait_for_servers(fleet.server_endpoints(), 600)
    fleet.init_worker()

    train_x, train_y = my_shard(*read_csv(os.path.join(args.data_dir, "train.csv")), rank, world)
    test_x, test_y = read_csv(os.path.join(args.data_dir, "test.csv"))

    def evaluate() -> float:
        (probabilities,) = exe.run(test_program, feed={"x": test_x, "label": test_y}, fetch_list=[probability])
        return accuracy(np.asarray(probabilities), test_y)

    if found:
        # What this trainer holds after init_worker: trainer 0 what it
        # loaded, the others what they pulled from the servers.
        print(f"resumed model: rank={rank} test_accuracy={evaluate():.4f}", flush=True)
    steps = max(1, -(-len(train_y) // args.batch_size))
    started = time.monotonic()
    test_accuracy = 0.0
    for epoch in range(start, args.epochs):
        order = np.random.default_rng([epoch, rank]).permutation(len(train_y))
        losses = []
        for step, begin in enumerate(range(0, len(order), args.batch_size)):
            batch = order[begin : begin + args.batch_size]
            (value,) = exe.run(main, feed={"x": train_x[batch], "label": train_y[batch]}, fetch_list=[loss])
            losses.append(float(np.asarray(value)))
            report(epoch, args.epochs, step + 1, steps, loss=float(np.mean(losses)))
        test_accuracy = evaluate()
        report(epoch + 1, args.epochs, 0, steps, accuracy=test_accuracy, loss=float(np.mean(losses)))
        flush_progress()
        print(f"epoch {epoch + 1}/{args.epochs}: loss={np.mean(losses):.4f} test_accuracy={test_accuracy:.4f} ({time.monotonic() - started:.1f}s)", flush=True)
        if rank == 0:
            tmp, final = checkpoint_dirs(args.output_dir, epoch + 1)
            paddle.static.save(main, os.path.join(tmp, "train"))
            mark_done(tmp, epochs=epoch + 1, test_accuracy=test_accuracy)
            publish(tmp, final)
    if rank == 0:
        tmp = os.path.join(args.output_dir, ".model.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        paddle.static.save(test_program, os.path.join(tmp, "model"))
        mark_done(tmp, epochs=args.epochs, test_accuracy=test_accuracy)
        publish(tmp, os.path.join(args.output_dir, "model"))
        print(f"model: {os.path.join(args.output_dir, 'model')}", flush=True)
    print(f"final: rank={rank} world_size={world} test_accuracy={test_accuracy:.4f}", flush=True)
    fleet.stop_worker()


if __name__ == "__main__":
    arguments = parse_args()
    if PS_MODE:
        train_ps(arguments)
    else:
        train_collective(arguments)
