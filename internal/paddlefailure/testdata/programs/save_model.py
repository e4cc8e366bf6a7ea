"""Data-parallel training that saves the model in the output directory."""

import os

import numpy as np
import paddle
import paddle.distributed as dist

output = os.environ.get("OUTPUT_DIR", "/output")
dist.init_parallel_env()
model = paddle.DataParallel(paddle.nn.Sequential(paddle.nn.Linear(13, 32), paddle.nn.ReLU(), paddle.nn.Linear(32, 1)))
optimizer = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
rng = np.random.default_rng(dist.get_rank())
for epoch in range(3):
    x = paddle.to_tensor(rng.random((64, 13), dtype=np.float32))
    y = paddle.sum(x, axis=1, keepdim=True)
    loss = paddle.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    print(f"epoch {epoch} loss {float(loss):.4f}")
if dist.get_rank() == 0:
    paddle.save(model.state_dict(), os.path.join(output, "model.pdparams"))
    print("saved", output)
