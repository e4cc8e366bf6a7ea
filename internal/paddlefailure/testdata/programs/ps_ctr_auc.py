"""The click-through-rate model of ps_ctr.py, evaluated with scikit-learn's AUC."""

import numpy as np
import paddle
import paddle.distributed.fleet as fleet
from sklearn.metrics import roc_auc_score

paddle.enable_static()
fleet.init()

x = paddle.static.data(name="x", shape=[None, 13], dtype="float32")
label = paddle.static.data(name="label", shape=[None, 1], dtype="float32")
predict = paddle.nn.functional.sigmoid(paddle.static.nn.fc(x, size=1))
avg_cost = paddle.mean(paddle.nn.functional.binary_cross_entropy(predict, label))

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
        feed_x = rng.random((64, 13), dtype=np.float32)
        feed_y = (feed_x.sum(axis=1, keepdims=True) > 6.5).astype(np.float32)
        (p,) = exe.run(paddle.static.default_main_program(), feed={"x": feed_x, "label": feed_y}, fetch_list=[predict])
    print("auc", roc_auc_score(feed_y.ravel(), np.asarray(p).ravel()))
    fleet.stop_worker()
