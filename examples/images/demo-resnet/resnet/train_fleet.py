"""Collective (data-parallel) training of a small ResNet, started by
`python -m paddle.distributed.launch train_fleet.py` in every pod.

Dygraph data parallel: every rank trains on its shard of a synthetic image set
(ten classes, each a fixed pattern under noise and a random shift), gradients
are all-reduced (Gloo on CPU, NCCL on GPU), and rank 0 reports the loss of
every epoch and the accuracy on held-out images.

The ranks share one process group, the one paddle.distributed.init_parallel_env
creates, and the model is a paddle.DataParallel: what fleet.distributed_model
makes of it for plain data parallelism. fleet.init(is_collective=True) would
also create Paddle's hybrid-parallel groups (the data group and two check
groups of all the ranks) one after the other, and Paddle (2.6.2 to 3.3.1)
cannot create Gloo groups back to back reliably: a rank may read a peer's
address of the previous group and fail ("connect ...: Connection refused") or
hang (docs/paddle-known-issues.md, "Gloo groups created one after another"). With a checkpoint directory
(--checkpoint-dir or PADDLE_CHECKPOINT_DIR, on storage every pod shares) rank
0 saves the model after every epoch and every rank resumes from the newest
one: an elastic job, whose training processes Paddle's launcher restarts
whenever workers join or leave, picks up where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F

from paddlejob.progress import flush_progress, report_progress  # the SDK, copied next to this file

CLASSES = 10
SIZE = 16


def parse_args() -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=int(env("EPOCHS", "3")))
    p.add_argument("--images", type=int, default=int(env("IMAGES", "1536")), help="training images of the whole job")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--checkpoint-dir", default=env("PADDLE_CHECKPOINT_DIR", ""))
    p.add_argument("--epoch-delay", type=float, default=float(env("EPOCH_DELAY", "0")), help="seconds to sleep after each epoch (to give tests time to scale a job)")
    return p.parse_args()


def synthetic_images(count: int, stream: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Images of ten classes: a class's fixed pattern, shifted, under noise."""
    patterns = np.random.default_rng(seed).normal(0, 1, (CLASSES, 3, SIZE, SIZE)).astype("float32")
    rng = np.random.default_rng([seed, stream])
    labels = rng.integers(0, CLASSES, count)
    shifts = rng.integers(-2, 3, (count, 2))
    images = np.stack([np.roll(patterns[c], tuple(s), axis=(1, 2)) for c, s in zip(labels, shifts)])
    images += rng.normal(0, 1.0, images.shape).astype("float32")
    return images.astype("float32"), labels.astype("int64").reshape(-1, 1)


class BasicBlock(nn.Layer):
    def __init__(self, channels_in: int, channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2D(channels_in, channels, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(channels)
        self.conv2 = nn.Conv2D(channels, channels, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(channels)
        self.shortcut = None
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(nn.Conv2D(channels_in, channels, 1, stride=stride, bias_attr=False), nn.BatchNorm2D(channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class SmallResNet(nn.Layer):
    """A ResNet of three stages of one basic block each (16, 32, 64 channels)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 16, 3, padding=1, bias_attr=False), nn.BatchNorm2D(16), nn.ReLU())
        self.stages = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2))
        self.head = nn.Linear(64, CLASSES)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def newest_checkpoint(directory: str) -> tuple[int, str] | None:
    """The newest complete checkpoint: (epochs done, path prefix), or None."""
    try:
        with open(os.path.join(directory, "latest.json")) as f:
            latest = json.load(f)
        return latest["epochs"], os.path.join(directory, latest["name"])
    except (OSError, ValueError, KeyError):
        return None


def save_checkpoint(directory: str, epochs: int, model, optimizer) -> None:
    name = f"epoch-{epochs:03d}"
    paddle.save(model.state_dict(), os.path.join(directory, name + ".pdparams"))
    paddle.save(optimizer.state_dict(), os.path.join(directory, name + ".pdopt"))
    # latest.json is written last and renamed into place: a reader never
    # sees a checkpoint that is still being written.
    tmp = os.path.join(directory, "latest.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"epochs": epochs, "name": name}, f)
    os.replace(tmp, os.path.join(directory, "latest.json"))


def main() -> None:
    args = parse_args()
    # The release this process imported: the local node runs each image on
    # the one it asks for.
    print(f"paddle={paddle.__version__}", flush=True)
    # The CPU threads Paddle computes with: importing paddle set
    # OMP_NUM_THREADS to what it uses (1 when the pod did not set it).
    print(f"omp_num_threads={os.environ['OMP_NUM_THREADS']}", flush=True)
    dist.init_parallel_env()  # one process group of all the ranks (none for one rank)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"role=TRAINER rank={rank} world_size={world} endpoint={os.environ.get('PADDLE_CURRENT_ENDPOINT', '')}", flush=True)

    paddle.seed(1)
    model = SmallResNet()
    optimizer = paddle.optimizer.Momentum(args.learning_rate, momentum=0.9, parameters=model.parameters())
    start_epoch = 0
    if args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        found = newest_checkpoint(args.checkpoint_dir)
        if found:
            start_epoch, prefix = found
            model.set_state_dict(paddle.load(prefix + ".pdparams"))
            optimizer.set_state_dict(paddle.load(prefix + ".pdopt"))
            print(f"rank {rank}: resumed after epoch {start_epoch} from {prefix}", flush=True)
    if world > 1:
        model = paddle.DataParallel(model)  # all-reduces the gradients in backward

    images, labels = synthetic_images(args.images, stream=0)
    mine = np.arange(args.images) % world == rank
    images, labels = images[mine], labels[mine]
    test_images, test_labels = synthetic_images(512, stream=1)

    started = time.monotonic()
    for epoch in range(start_epoch, args.epochs):
        model.train()
        order = np.random.default_rng([epoch, rank]).permutation(len(labels))
        losses = []
        for start in range(0, len(order), args.batch_size):
            batch = order[start : start + args.batch_size]
            loss = F.cross_entropy(model(paddle.to_tensor(images[batch])), paddle.to_tensor(labels[batch]))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
        job_loss = float(np.mean(losses))
        if world > 1:
            mean_loss = paddle.to_tensor([job_loss])
            dist.all_reduce(mean_loss)  # the job's loss: every rank's mean, averaged
            job_loss = float(mean_loss.numpy()[0]) / world
        model.eval()
        with paddle.no_grad():
            predicted = model(paddle.to_tensor(test_images)).argmax(axis=1).numpy().reshape(-1, 1)
        accuracy = float((predicted == test_labels).mean())
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss={job_loss:.4f} test_accuracy={accuracy:.3f} world_size={world} ({time.monotonic() - started:.1f}s)", flush=True)
            if args.checkpoint_dir:
                save_checkpoint(args.checkpoint_dir, epoch + 1, model, optimizer)
        # Every rank reports: a job whose ranks all stop reporting is hung,
        # and the operator's progress deadline restarts it.
        report_progress(100.0 * (epoch + 1) / args.epochs, epoch=epoch + 1, total_epochs=args.epochs,
                        metrics={"loss": job_loss, "test_accuracy": accuracy})
        if world > 1:
            dist.barrier()
        if args.epoch_delay:
            time.sleep(args.epoch_delay)
    flush_progress()
    if rank == 0:
        print(f"final: rank=0 world_size={world} loss={job_loss:.4f} test_accuracy={accuracy:.3f}", flush=True)


if __name__ == "__main__":
    main()
