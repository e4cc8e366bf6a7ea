"""A click-through-rate model trained with parameter servers (static graph).

Each process learns its role from the environment: servers serve the
sparse embedding and the dense parameters, trainers train on random data.
"""

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

paddle.enable_static()
fleet.init()

slots = 4
ids = [paddle.static.data(name=f"slot{i}", shape=[None, 1], dtype="int64") for i in range(slots)]
label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")

embs = [paddle.static.nn.sparse_embedding(input=x, size=[10000, 8]) for x in ids]
concat = paddle.concat([paddle.reshape(e, [-1, 8]) for e in embs], axis=1)
hidden = paddle.static.nn.fc(concat, size=32, activation="relu")
predict = paddle.static.nn.fc(hidden, size=2, activation="softmax")
cost = paddle.nn.functional.cross_entropy(input=predict, label=label)
avg_cost = paddle.mean(cost)

strategy = fleet.DistributedStrategy()
strategy.a_sync = True
optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.01), strategy)
optimizer.minimize(avg_cost)

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    rng = np.random.default_rng(fleet.worker_index())
    for step in range(20):
        feed = {f"slot{i}": rng.integers(0, 10000, size=(32, 1)).astype("int64") for i in range(slots)}
        feed["label"] = rng.integers(0, 2, size=(32, 1)).astype("int64")
        (loss,) = exe.run(paddle.static.default_main_program(), feed=feed, fetch_list=[avg_cost])
        if step % 5 == 0:
            print(f"step {step} loss {float(np.asarray(loss)):.4f}")
    fleet.stop_worker()
