"""Seed 002's example: an N-gram word model trained in parameter-server mode,
each trainer on its share of the data read with paddlejob.dist_reader.

Every pod runs `python train.py`. Paddle's role maker reads the pod's role and
peers from the environment the operator provides (docs/env-contract.md);
parameter servers serve until the job completes (the operator stops them).
Each trainer writes the data set from its reader with
paddlejob.dataset_from_reader (seed 002 prepares it once on CephFS; here every
trainer writes the same deterministic file in its own container), reads its
share with paddlejob.dist_reader(file, paddlejob.trainers(),
paddlejob.trainer_id()), says which rows it read, and trains on them with
GEO-SGD (Paddle 3.0's working asynchronous mode).
"""

from __future__ import annotations

import os

# Paddle 3.0's parameter-server passes work on the legacy program IR only.
# A PaddleJob's parameter-server pods and `paddlejob launch` set this already;
# the program sets it for runs of its own.
os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.distributed.fleet as fleet  # noqa: E402

import paddlejob  # noqa: E402  (the SDK's in-pod helpers, next to this file)

VOCAB = 64  # words
CONTEXT = 4  # words before the one to predict
EMBEDDING = 16
DATA = "imikolov-5gram.csv"  # row id, 4 context words, next word


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def five_grams(rows: int):
    """A reader of a synthetic corpus's 5-grams: (row id, w1..w4, next word).

    The next word follows from the context (a rule the model can learn).
    """

    def reader():
        rng = np.random.default_rng(2)
        for row in range(rows):
            words = [int(w) for w in rng.integers(0, VOCAB, CONTEXT)]
            yield (row, *words, (words[0] + 2 * words[3]) % VOCAB)

    return reader


def build_model(k_steps: int):
    ids = paddle.static.data("ids", [None, CONTEXT], "int64")
    label = paddle.static.data("label", [None, 1], "int64")
    emb = paddle.static.nn.embedding(paddle.reshape(ids, [-1, 1]), size=[VOCAB, EMBEDDING], is_sparse=True, param_attr=paddle.ParamAttr(name="emb"))
    hidden = paddle.static.nn.fc(paddle.reshape(emb, [-1, CONTEXT * EMBEDDING]), 64, activation="relu")
    logits = paddle.static.nn.fc(hidden, VOCAB)
    loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True
    strategy.a_sync_configs = {"k_steps": k_steps}
    fleet.distributed_optimizer(paddle.optimizer.Adam(0.01), strategy).minimize(loss)
    return loss


def main() -> None:
    paddle.enable_static()
    fleet.init(fleet.PaddleCloudRoleMaker())
    loss = build_model(k_steps=5)
    if fleet.is_server():
        print(f"role=PSERVER index={fleet.server_index()} servers={fleet.server_num()}", flush=True)
        fleet.init_server()
        fleet.run_server()
        return

    trainer_id, trainers = paddlejob.trainer_id(), paddlejob.trainers()
    print(f"role=TRAINER index={fleet.worker_index()} trainers={fleet.worker_num()} sdk_trainer_id={trainer_id} sdk_trainers={trainers}", flush=True)
    rows = env_int("ROWS", 240)
    paddlejob.dataset_from_reader(DATA, five_grams(rows))
    mine = list(paddlejob.dist_reader(DATA, trainers, trainer_id)())
    print(f"trainer {trainer_id} of {trainers} read {len(mine)} of {rows} rows: {','.join(str(r[0]) for r in mine)}", flush=True)
    data = np.array(mine, dtype="int64")
    ids, label = data[:, 1 : 1 + CONTEXT], data[:, 1 + CONTEXT :]

    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    main_program = paddle.static.default_main_program()
    batch = 16
    passes = env_int("PASSES", 3)
    step = 0
    for p in range(passes):
        losses = []
        for start in range(0, len(ids), batch):
            (value,) = exe.run(main_program, feed={"ids": ids[start : start + batch], "label": label[start : start + batch]}, fetch_list=[loss])
            losses.append(float(np.asarray(value)))
            step += 1
        # The operator's progress deadline (if the job sets one) counts from here.
        paddlejob.report_progress((p + 1) / passes * 100, epoch=p + 1, total_epochs=passes, step=step, metrics={"loss": float(np.mean(losses))})
        print(f"pass {p + 1}: trainer={trainer_id} loss={np.mean(losses):.4f}", flush=True)
    print(f"final: trainer={trainer_id} trainers={trainers}", flush=True)
    fleet.stop_worker()


if __name__ == "__main__":
    main()
