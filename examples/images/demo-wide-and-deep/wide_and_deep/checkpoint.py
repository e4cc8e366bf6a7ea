"""Per-pass checkpoints of the wide & deep example, and resuming from them.

After pass N (counting from 1) trainer 0 writes the directory pass-<N-1>,
five digits, under the output directory:

  model.*          the test program and its parameters: the model to serve
  train.*          the training program's persistables: the parameters and
                   trainer 0's optimizer state (Adam's moments and powers)
  checkpoint.json  the passes done and the test AUC after them (measured just
                   before the save; the other trainers' GEO updates may
                   still move trainer 0's parameters in between)

It is written under a hidden temporary name and renamed into place when
complete, so a directory named pass-* is always whole; one without
checkpoint.json (an older version of this program wrote those) is not a
checkpoint.

Why the trainers alone save and load, in GEO-SGD: each trainer keeps a whole
local copy of every parameter, dense and sparse, and fleet.init_worker()
makes trainer 0 push its copy to the parameter servers and the other
trainers pull it from them. A checkpoint loaded into trainer 0's scope before
init_worker() thus restores the servers' tables and the other trainers'
parameters too (those load the optimizer state only); the servers need no
access to the output directory. Paddle's server-side checkpoints do not
restore a GEO job: measured with Paddle 3.0.0, fleet.save_persistables()
writes the servers' dense table but no sparse table, fleet.init_server(dirname)
loads sparse tables only, and a job restarted that way starts untrained.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import NamedTuple, Optional

import paddle

META = "checkpoint.json"
_NAME = re.compile(r"pass-(\d{5})")


class Checkpoint(NamedTuple):
    passes_done: int
    path: str
    test_auc: float

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def name_after(passes_done: int) -> str:
    """The directory saved after pass `passes_done` (counting from 1)."""
    return f"pass-{passes_done - 1:05d}"


def read(path: str) -> Optional[Checkpoint]:
    """The checkpoint in directory `path`, or None when it is not a complete one."""
    m = _NAME.fullmatch(os.path.basename(path))
    if not m:
        return None
    try:
        with open(os.path.join(path, META)) as f:
            meta = json.load(f)
        passes_done, test_auc = int(meta["passes_done"]), float(meta["test_auc"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if passes_done != int(m.group(1)) + 1:
        return None
    return Checkpoint(passes_done, path, test_auc)


def newest(output_dir: str) -> Optional[Checkpoint]:
    """The complete checkpoint with the most passes done in output_dir, or None."""
    try:
        names = os.listdir(output_dir)
    except OSError:
        return None
    found = [c for c in (read(os.path.join(output_dir, n)) for n in names) if c]
    return max(found, default=None, key=lambda c: c.passes_done)


def save(output_dir: str, passes_done: int, test_auc: float, main_program, test_program) -> str:
    """Writes the checkpoint after pass `passes_done` from the global scope; returns its path."""
    final = os.path.join(output_dir, name_after(passes_done))
    tmp = os.path.join(output_dir, "." + name_after(passes_done) + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a save a crash interrupted
    paddle.static.save(test_program, os.path.join(tmp, "model"))
    paddle.static.save(main_program, os.path.join(tmp, "train"))
    with open(os.path.join(tmp, META), "w") as f:
        json.dump({"passes_done": passes_done, "test_auc": round(test_auc, 6)}, f)
    if os.path.exists(final):
        # A directory of that name from an earlier run: replaced whole.
        old = os.path.join(output_dir, "." + name_after(passes_done) + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    return final


def load(ckpt: Checkpoint, main_program, parameters: bool) -> None:
    """Sets the training program's persistables in the global scope from ckpt.

    With parameters False it sets the optimizer state only: a trainer other
    than trainer 0 gets the parameters from the servers in init_worker().
    """
    state = paddle.static.load_program_state(os.path.join(ckpt.path, "train"))
    if not parameters:
        names = {p.name for p in main_program.all_parameters()}
        state = {k: v for k, v in state.items() if k not in names}
    paddle.static.set_program_state(main_program, state)
