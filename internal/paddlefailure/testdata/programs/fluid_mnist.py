"""Handwritten digits with the fluid API of Paddle 1.x and 2.0-2.5."""

import numpy as np
import paddle
import paddle.fluid as fluid

paddle.enable_static()
image = fluid.data(name="image", shape=[None, 784], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
hidden = fluid.layers.fc(input=image, size=64, act="relu")
prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_cost)

exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
rng = np.random.default_rng(0)
for step in range(10):
    feed = {"image": rng.random((32, 784), dtype=np.float32), "label": rng.integers(0, 10, size=(32, 1))}
    (loss,) = exe.run(fluid.default_main_program(), feed=feed, fetch_list=[avg_cost])
    print("step", step, "loss", float(np.asarray(loss)))
