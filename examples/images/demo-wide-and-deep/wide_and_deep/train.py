"""Wide & deep click-through-rate training in parameter-server mode.

A PaddlePaddle fleet program as a PaddleJob runs it unmodified: every pod runs
`python3 train.py`; PaddleCloudRoleMaker reads the pod's role, index and peers
from the environment the operator provides (docs/env-contract.md). Parameter
servers serve until the job completes; trainers train on their shard of the
synthetic data (row i goes to trainer i mod trainers), report the test AUC after
every pass next to the data's optimum, and trainer 0 saves a checkpoint of every
pass as pass-0000N under the output directory. Started again on an output
directory that holds checkpoints (a job restarted after a failure, or run again
with more passes), the trainers resume from the newest complete one and skip
the passes it holds (checkpoint.py).

The parameter servers run GEO-SGD (a_sync with k_steps): each trainer trains a
local copy and exchanges updates with the servers every k steps. Paddle 3.0's
plain async mode never refreshes a trainer's dense parameters when the
program is driven by Executor.run, so it does not learn here.
"""

from __future__ import annotations

import argparse
import os
import time

# Paddle 3.0's parameter-server passes work on the legacy program IR only.
# A PaddleJob's parameter-server pods and `paddlejob launch` set this already;
# the program sets it for runs of its own.
os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.distributed.fleet as fleet  # noqa: E402

import checkpoint  # noqa: E402
import ctr_data  # noqa: E402

from paddlejob import wait_for_servers  # noqa: E402  (the SDK, copied next to this file)
from paddlejob.progress import flush_progress, report_progress  # noqa: E402


def parse_args() -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--passes", type=int, default=int(env("PASSES", "5")))
    p.add_argument("--rows", type=int, default=int(env("ROWS", "40000")), help="training rows of the whole job")
    p.add_argument("--train-data", default="", help="a file of this trainer's rows (ctr_data.py's format) instead of its shard of generated rows")
    p.add_argument("--test-rows", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--learning-rate", type=float, default=0.005)
    p.add_argument("--k-steps", type=int, default=20, help="GEO-SGD: steps between exchanges with the servers")
    p.add_argument("--output-dir", default=env("PADDLE_OUTPUT_DIR", "output"))
    p.add_argument("--server-timeout", type=float, default=600, help="seconds to wait for the parameter servers")
    return p.parse_args()


def build_model(learning_rate: float, k_steps: int):
    """The wide & deep network; returns its inputs, loss and probability."""
    fields = len(ctr_data.VOCAB)
    ids = paddle.static.data("ids", [None, fields], "int64")
    dense = paddle.static.data("dense", [None, ctr_data.DENSE], "float32")
    label = paddle.static.data("label", [None, 1], "float32")
    # One embedding row per category id: fleet's sparse tables take [n, 1] ids.
    flat_ids = paddle.reshape(ids, [-1, 1])
    size = ctr_data.vocabulary_size()
    wide = paddle.static.nn.embedding(flat_ids, size=[size, 1], is_sparse=True, param_attr=paddle.ParamAttr(name="wide"))
    deep = paddle.static.nn.embedding(flat_ids, size=[size, 8], is_sparse=True, param_attr=paddle.ParamAttr(name="deep"))
    hidden = paddle.concat([paddle.reshape(deep, [-1, fields * 8]), dense], axis=1)
    hidden = paddle.static.nn.fc(hidden, 32, activation="relu")
    hidden = paddle.static.nn.fc(hidden, 16, activation="relu")
    logit = (
        paddle.static.nn.fc(hidden, 1)
        + paddle.sum(paddle.reshape(wide, [-1, fields]), axis=1, keepdim=True)
        + paddle.static.nn.fc(dense, 1)
    )
    loss = paddle.mean(paddle.nn.functional.binary_cross_entropy_with_logits(logit, label))
    probability = paddle.nn.functional.sigmoid(logit)

    optimizer = paddle.optimizer.Adam(learning_rate)
    if fleet.server_num() > 0:
        strategy = fleet.DistributedStrategy()
        strategy.a_sync = True
        strategy.a_sync_configs = {"k_steps": k_steps}
        optimizer = fleet.distributed_optimizer(optimizer, strategy)
    # else: no parameter servers (a single trainer, seed 000): train locally.
    optimizer.minimize(loss)
    # Evaluation runs the forward pass only: prune what computes the
    # probability out of the distributed training program.
    test_program = paddle.static.default_main_program().clone(for_test=True)._prune([probability])
    return (ids, dense, label), loss, probability, test_program


def run_server() -> None:
    index, count = fleet.server_index(), fleet.server_num()
    print(f"role=PSERVER index={index} servers={count} endpoint={fleet.server_endpoints()[index]}", flush=True)
    fleet.init_server()
    fleet.run_server()


def run_trainer(args: argparse.Namespace, inputs, loss, probability, test_program) -> None:
    index, count = fleet.worker_index(), fleet.worker_num()
    servers = fleet.server_endpoints()
    print(f"role=TRAINER index={index} trainers={count} servers={len(servers)} pservers={','.join(servers)}", flush=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    main = paddle.static.default_main_program()
    # Resuming: loaded before init_worker(), which makes trainer 0 push its
    # parameters to the (new, empty) servers and the others pull them; so
    # trainer 0 loads the parameters, and every trainer the optimizer state
    # (trainer 0's: Adam's moments and powers).
    resumed = agreed_checkpoint(args.output_dir, count)
    start_pass = resumed.passes_done if resumed else 0
    if resumed:
        checkpoint.load(resumed, main, parameters=index == 0 or not servers)
        skipped = f"skipping passes 1-{start_pass}" if start_pass > 1 else "skipping pass 1"
        todo = f"training passes {start_pass + 1}-{args.passes}" if start_pass < args.passes else "no pass left to train"
        print(f"resumed from {resumed.name} (test_auc={resumed.test_auc:.4f}): {skipped}, {todo}", flush=True)
    if servers:
        # A PaddleJob and `paddlejob launch` start trainers once the servers
        # listen. The wait is for the one layout they cannot order, withGloo
        # 2 over a shared directory, where a server listens only after the
        # trainers joined it in fleet.init(), and for runs outside either
        # (docs/env-contract.md#start-up-order).
        wait_for_servers(servers, args.server_timeout)
        fleet.init_worker()

    if args.train_data:
        train = ctr_data.read_rows(args.train_data)
        ids, dense, label = train.ids, train.dense, train.label
        print(f"trainer {index}: {len(label)} training rows from {args.train_data}", flush=True)
    else:
        train = ctr_data.generate(args.rows, ctr_data.TRAIN_STREAM)
        mine = np.arange(args.rows) % count == index  # this trainer's shard
        ids, dense, label = train.ids[mine], train.dense[mine], train.label[mine]
        print(f"trainer {index}: {len(label)} of {args.rows} training rows (row r when r mod {count} = {index})", flush=True)
    test = ctr_data.generate(args.test_rows, ctr_data.TEST_STREAM)
    best = ctr_data.optimal_auc(test)

    test_feed = {"ids": test.ids, "dense": test.dense, "label": test.label}
    # The untrained model's AUC (about 0.5), or the resumed one's, is the
    # first report, so the AUC comes first among the job's metrics
    # (`kubectl get pdj -o wide` shows it).
    (predicted,) = exe.run(test_program, feed=test_feed, fetch_list=[probability])
    test_auc = ctr_data.auc(test.label, predicted)
    if resumed:
        # What this trainer holds after init_worker: trainer 0 what it loaded,
        # the others what they pulled from the servers; either may also hold
        # GEO updates of another trainer that reached it since.
        print(f"resumed model: trainer={index} test_auc={test_auc:.4f}", flush=True)
    batches = max(1, -(-len(label) // args.batch_size))
    step = start_pass * batches
    report_progress(
        min(start_pass, args.passes) / args.passes * 100, epoch=start_pass, total_epochs=args.passes, step=step, metrics={"auc": test_auc}
    )
    started = time.monotonic()
    for p in range(start_pass, args.passes):
        order = np.random.default_rng([p, index]).permutation(len(label))
        losses = []
        for b, start in enumerate(range(0, len(order), args.batch_size)):
            batch = order[start : start + args.batch_size]
            (value,) = exe.run(main, feed={"ids": ids[batch], "dense": dense[batch], "label": label[batch]}, fetch_list=[loss])
            losses.append(float(np.asarray(value)))
            step += 1
            # The reporter sends at most one report a second, merging the rest.
            done = (p + (b + 1) / batches) / args.passes * 100
            report_progress(min(done, 99.9), epoch=p + 1, total_epochs=args.passes, step=step, metrics={"loss": float(np.mean(losses))})
        (predicted,) = exe.run(test_program, feed=test_feed, fetch_list=[probability])
        test_auc = ctr_data.auc(test.label, predicted)
        # 100% once the last pass is evaluated; AUC first: `kubectl get pdj -o wide` shows it.
        report_progress(
            (p + 1) / args.passes * 100,
            epoch=p + 1,
            total_epochs=args.passes,
            step=step,
            metrics={"auc": test_auc, "loss": float(np.mean(losses))},
        )
        flush_progress()
        print(
            f"pass {p + 1}/{args.passes}: train_loss={np.mean(losses):.4f} test_auc={test_auc:.4f} "
            f"optimal_auc={best:.4f} ({time.monotonic() - started:.1f}s)",
            flush=True,
        )
        if index == 0:
            checkpoint.save(args.output_dir, p + 1, test_auc, main, test_program)
    print(f"final: trainer={index} trainers={count} test_auc={test_auc:.4f} optimal_auc={best:.4f}", flush=True)
    if servers:
        fleet.stop_worker()


def agreed_checkpoint(output_dir: str, trainers: int) -> checkpoint.Checkpoint | None:
    """The checkpoint every trainer resumes from: the newest that all of them see.

    Each trainer looks at the output directory; the trainers take the fewest
    passes any of them found (a Gloo all-reduce among trainers), so that they
    skip the same passes. Without Gloo (withGloo 0) each keeps what it found,
    the same when they share the directory.
    """
    mine = checkpoint.newest(output_dir)
    found = mine.passes_done if mine else 0
    agreed = found
    if trainers > 1 and fleet.server_num() > 0:
        agreed = int(np.asarray(fleet.util.all_reduce([found], mode="min", comm_world="worker")).reshape(-1)[0])
    if agreed == 0:
        return None
    if agreed == found:
        return mine
    ckpt = checkpoint.read(os.path.join(output_dir, checkpoint.name_after(agreed)))
    if ckpt is None:
        raise RuntimeError(f"the trainers agreed to resume after pass {agreed}, but {output_dir} holds no complete {checkpoint.name_after(agreed)}")
    return ckpt


def main() -> None:
    args = parse_args()
    # The release this process imported: the local node runs each image on
    # the one it asks for.
    print(f"paddle={paddle.__version__}", flush=True)
    paddle.enable_static()
    fleet.init(fleet.PaddleCloudRoleMaker())
    inputs, loss, probability, test_program = build_model(args.learning_rate, args.k_steps)
    if fleet.is_server():
        run_server()
    else:
        run_trainer(args, inputs, loss, probability, test_program)


if __name__ == "__main__":
    main()
