"""A recommendation model whose embedding table holds a row for every user
id, trained data-parallel."""

import paddle
import paddle.distributed as dist

users, dim = 20_000_000, 64
dist.init_parallel_env()
print(f"building the model: {users} users x {dim}", flush=True)
model = paddle.nn.Sequential(paddle.nn.Embedding(users, dim), paddle.nn.Flatten(), paddle.nn.Linear(dim, 1))
model = paddle.DataParallel(model)
optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
for step in range(10):
    ids = paddle.randint(0, users, [256, 1])
    loss = paddle.mean(model(ids))
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    print(f"step {step} loss {float(loss):.4f}", flush=True)
