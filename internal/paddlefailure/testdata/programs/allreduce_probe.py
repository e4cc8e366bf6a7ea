"""All-reduce in collective mode, as Paddle's collective tutorials show it.

Every rank contributes a tensor of its own, [rank + 1, 10 * (rank + 1)], and
after the all-reduce each holds the sum over the ranks: only communication
with every other rank makes it. Each rank prints what Paddle reports: its
rank, the world size, its endpoint and the reduced tensor.
"""

import os

import paddle
import paddle.distributed as dist

dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
x = paddle.to_tensor([rank + 1.0, 10.0 * (rank + 1)])
dist.all_reduce(x)
endpoint = os.environ.get("PADDLE_CURRENT_ENDPOINT", "")
print(f"role=TRAINER rank={rank} world_size={world} endpoint={endpoint}", flush=True)
print(f"all_reduce rank={rank} sum={x.numpy().tolist()}", flush=True)
