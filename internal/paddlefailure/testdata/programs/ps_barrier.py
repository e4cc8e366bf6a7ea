"""The click-through-rate model of ps_ctr.py with every process meeting at a
barrier before training: servers and trainers alike (the "all" group)."""

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

paddle.enable_static()
fleet.init()

x = paddle.static.data(name="x", shape=[None, 13], dtype="float32")
label = paddle.static.data(name="label", shape=[None, 1], dtype="float32")
predict = paddle.nn.functional.sigmoid(paddle.static.nn.fc(x, size=1))
avg_cost = paddle.mean(paddle.nn.functional.binary_cross_entropy(predict, label))

strategy = fleet.DistributedStrategy()
strategy.a_sync = True
strategy.a_sync_configs = {"k_steps": 10}
optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.01), strategy)
optimizer.minimize(avg_cost)

# Every process is here: servers have their tables, trainers their programs.
fleet.util.barrier("all")

if fleet.is_server():
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    rng = np.random.default_rng(fleet.worker_index())
    for step in range(20):
        feed_x = rng.random((64, 13), dtype=np.float32)
        feed_y = (feed_x.sum(axis=1, keepdims=True) > 6.5).astype(np.float32)
        exe.run(paddle.static.default_main_program(), feed={"x": feed_x, "label": feed_y}, fetch_list=[avg_cost])
    fleet.stop_worker()
