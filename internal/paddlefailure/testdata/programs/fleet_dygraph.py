"""Data-parallel training in dynamic-graph mode, as Paddle's collective quick
start writes it: fleet.init(is_collective=True), a model and optimizer made
distributed by fleet, a few steps on random data."""

import paddle
import paddle.distributed.fleet as fleet

fleet.init(is_collective=True)
model = fleet.distributed_model(paddle.nn.Linear(8, 1))
optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(0.01, parameters=model.parameters()))
for step in range(5):
    loss = paddle.mean(model(paddle.rand([16, 8])) ** 2)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
print("rank", paddle.distributed.get_rank(), "loss", float(loss), flush=True)
