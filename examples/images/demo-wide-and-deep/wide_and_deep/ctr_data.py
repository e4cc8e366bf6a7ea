"""Synthetic click-through-rate data whose best reachable AUC is known.

A hidden "true model" draws every row: ten categorical fields from skewed
(Zipf) vocabularies, five dense features from N(0, 1), and a click with
probability sigmoid(z), where z mixes a weight per category, a linear term in
the dense features and three interactions a linear model cannot fit. The
optimal AUC is the true model's own AUC on the test rows: no model beats it in
expectation. The seed fixes the true model; `stream` picks independent row
sets (0: training rows, 1: test rows), identical on every machine.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np

VOCAB = (3, 4, 6, 10, 16, 25, 40, 64, 100, 160)
DENSE = 5
TRAIN_STREAM, TEST_STREAM = 0, 1


class Rows(NamedTuple):
    ids: np.ndarray  # int64 [n, len(VOCAB)]: category ids, offset per field
    dense: np.ndarray  # float32 [n, DENSE]
    label: np.ndarray  # float32 [n, 1]: 1 clicked, 0 not
    click_probability: np.ndarray  # float64 [n]: the true model's


def generate(rows: int, stream: int, seed: int = 1) -> Rows:
    """Draws `rows` rows of the given stream."""
    model = np.random.default_rng(seed)
    weights = [model.normal(0, 0.8, v) for v in VOCAB]
    dense_weights = model.normal(0, 0.5, DENSE)
    pair = model.normal(0, 0.8, (VOCAB[1], VOCAB[2]))

    rng = np.random.default_rng([seed, stream])
    cats = np.stack([np.minimum(rng.zipf(1.6, rows) - 1, v - 1) for v in VOCAB], axis=1)
    dense = rng.normal(size=(rows, DENSE)).astype("float32")
    z = -1.0 + sum(weights[f][cats[:, f]] for f in range(len(VOCAB))) + dense @ dense_weights
    z += 0.8 * dense[:, 0] * dense[:, 1]
    z += pair[cats[:, 1], cats[:, 2]]
    z += 0.5 * (cats[:, 0] - 1) * dense[:, 2]
    p = 1 / (1 + np.exp(-z))
    label = (rng.random(rows) < p).astype("float32").reshape(-1, 1)
    offsets = np.cumsum((0,) + VOCAB[:-1])
    return Rows((cats + offsets).astype("int64"), dense, label, p)


def vocabulary_size() -> int:
    """The number of distinct category ids over all fields."""
    return sum(VOCAB)


def auc(label: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve, ties counted half (Mann-Whitney U)."""
    label = np.asarray(label).reshape(-1)
    score = np.asarray(score).reshape(-1)
    _, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    ranks = (np.bincount(inverse, weights=ranks) / counts)[inverse]
    positives = label == 1
    n_pos = positives.sum()
    n_neg = len(label) - n_pos
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def optimal_auc(test: Rows) -> float:
    """The true model's AUC on the test rows: the best reachable."""
    return auc(test.label, test.click_probability)


def write_rows(rows: Rows, path: str) -> None:
    """Writes rows as text, one per line (see the module's doc)."""
    with open(path, "w") as f:
        for label, dense, ids in zip(rows.label[:, 0], rows.dense, rows.ids):
            f.write("\t".join([str(int(label)), *(f"{x:.4f}" for x in dense), *(str(i) for i in ids)]) + "\n")


def read_rows(path: str) -> Rows:
    """Reads rows written by write_rows (their click probability is unknown: NaN)."""
    table = np.loadtxt(path, delimiter="\t", ndmin=2)
    label = table[:, :1].astype("float32")
    dense = table[:, 1 : 1 + DENSE].astype("float32")
    ids = table[:, 1 + DENSE :].astype("int64")
    return Rows(ids, dense, label, np.full(len(label), np.nan))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write synthetic CTR rows as text.")
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--stream", type=int, default=TRAIN_STREAM)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    write_rows(generate(args.rows, args.stream), args.out)
