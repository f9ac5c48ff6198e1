#!/usr/bin/env python3
"""Writes the dataset of examples/train.masq: blobs_x.npy and blobs_y.npy.

300 points in 2-D drawn around three centres (classes 0, 1, 2), shuffled.
As a real labelling job leaves them, about a fifth of the labels are
missing (-1, which the script masks out) and one is corrupt (9, not a
class: the batch holding it fails and the script catches that).
Deterministic: numpy's legacy RandomState stream is fixed, and .npy files
have no timestamps, so running it again rewrites the same bytes.

    python3 examples/data/gen_blobs.py [OUT_DIR]   (default: this folder)
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.RandomState(2026)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    n_per = 100
    x = np.concatenate([c + 0.9 * rng.randn(n_per, 2) for c in centres]).astype(np.float32)
    y = np.repeat(np.arange(3), n_per).astype(np.int64)
    order = rng.permutation(len(y))
    x, y = x[order], y[order]
    y[rng.rand(len(y)) < 0.2] = -1        # missing labels
    y[137] = 9                            # one corrupt label, in the fourth batch of 40
    np.save(os.path.join(out, "blobs_x.npy"), x)
    np.save(os.path.join(out, "blobs_y.npy"), y)


if __name__ == "__main__":
    main()
