"""Data-parallel training of a small classifier with fleet's collective mode."""

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

fleet.init(is_collective=True)

model = paddle.nn.Sequential(paddle.nn.Linear(784, 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 10))
optimizer = paddle.optimizer.Adam(learning_rate=0.001, parameters=model.parameters())
optimizer = fleet.distributed_optimizer(optimizer)
model = fleet.distributed_model(model)

rng = np.random.default_rng(fleet.worker_index())
for step in range(20):
    x = paddle.to_tensor(rng.random((32, 784), dtype=np.float32))
    y = paddle.to_tensor(rng.integers(0, 10, size=(32, 1)))
    loss = paddle.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    if step % 5 == 0:
        print(f"rank {fleet.worker_index()} step {step} loss {float(loss):.4f}")
