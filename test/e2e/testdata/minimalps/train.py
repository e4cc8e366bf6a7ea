"""Linear regression in parameter-server mode, as Paddle's own quick start
writes one: fleet with the PaddleCloudRoleMaker, asynchronous training (GEO-SGD,
or plain a_sync with --k_steps 0), the servers serving, the trainers training.
Nothing else: no wait for the servers, no flags of Paddle's, no progress
reports.
"""

import argparse

import numpy as np
import paddle
import paddle.distributed.fleet as fleet

parser = argparse.ArgumentParser()
parser.add_argument("--k_steps", type=int, default=10, help="GEO-SGD's local steps; 0: plain asynchronous training")
args = parser.parse_args()

paddle.enable_static()
fleet.init(fleet.PaddleCloudRoleMaker())
print(f"paddle={paddle.__version__}", flush=True)

x = paddle.static.data(name="x", shape=[None, 13], dtype="float32")
y = paddle.static.data(name="y", shape=[None, 1], dtype="float32")
prediction = paddle.static.nn.fc(x, 1)
loss = paddle.mean(paddle.nn.functional.square_error_cost(prediction, y))

strategy = fleet.DistributedStrategy()
strategy.a_sync = True
if args.k_steps > 0:
    strategy.a_sync_configs = {"k_steps": args.k_steps}
optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.05), strategy)
optimizer.minimize(loss)

if fleet.is_server():
    print(f"server {fleet.server_index()} of {fleet.server_num()}", flush=True)
    fleet.init_server()
    fleet.run_server()
else:
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    print(f"trainer {fleet.worker_index()} of {fleet.worker_num()}, {fleet.server_num()} servers", flush=True)
    rng = np.random.default_rng(fleet.worker_index())
    weights = np.linspace(-1, 1, 13).astype("float32").reshape(13, 1)
    for step in range(200):
        features = rng.random((32, 13), dtype=np.float32)
        labels = features @ weights + 0.5
        (cost,) = exe.run(paddle.static.default_main_program(), feed={"x": features, "y": labels}, fetch_list=[loss])
        if step % 50 == 0 or step == 199:
            print(f"step {step} loss {float(np.mean(cost)):.6f}", flush=True)
    fleet.stop_worker()
