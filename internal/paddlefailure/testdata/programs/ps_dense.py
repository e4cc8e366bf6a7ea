"""Linear regression on 13 features with parameter servers (static graph)."""

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

paddle.enable_static()
fleet.init()

x = paddle.static.data(name="x", shape=[None, 13], dtype="float32")
y = paddle.static.data(name="y", shape=[None, 1], dtype="float32")
predict = paddle.static.nn.fc(x, size=1)
avg_cost = paddle.mean(paddle.nn.functional.square_error_cost(predict, y))

strategy = fleet.DistributedStrategy()
strategy.a_sync = True
strategy.a_sync_configs = {"k_steps": 10}
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
    for step in range(50):
        feed_x = rng.random((64, 13), dtype=np.float32)
        (loss,) = exe.run(paddle.static.default_main_program(), feed={"x": feed_x, "y": feed_x.sum(axis=1, keepdims=True)}, fetch_list=[avg_cost])
        if step % 10 == 0:
            print(f"step {step} loss {float(np.asarray(loss)):.4f}")
    fleet.stop_worker()
