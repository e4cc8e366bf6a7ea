"""Image classification on a GPU, as the dygraph quick start writes it."""

import paddle
import paddle.distributed as dist

paddle.set_device("gpu")
dist.init_parallel_env()

model = paddle.DataParallel(paddle.vision.models.resnet18(num_classes=10))
optimizer = paddle.optimizer.Momentum(learning_rate=0.01, parameters=model.parameters())
for step in range(10):
    images = paddle.randn([8, 3, 32, 32])
    labels = paddle.randint(0, 10, [8, 1])
    loss = paddle.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    print(f"step {step} loss {float(loss):.4f}")
