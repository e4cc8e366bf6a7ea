"""A LLaMA-style feed-forward block trained data-parallel, written for Paddle 3."""

import paddle
import paddle.distributed as dist
from paddle.incubate.nn.functional import swiglu


class FeedForward(paddle.nn.Layer):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate_up = paddle.nn.Linear(dim, 2 * hidden)
        self.down = paddle.nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(swiglu(self.gate_up(x)))


dist.init_parallel_env()
model = paddle.DataParallel(FeedForward(64, 128))
optimizer = paddle.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
for step in range(10):
    x = paddle.randn([16, 64])
    loss = paddle.nn.functional.mse_loss(model(x), x)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    print(f"step {step} loss {float(loss):.4f}")
