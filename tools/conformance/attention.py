"""Writes tests/lang/attention_torch.npz: inputs of masked attention and
what torch 1.13 computes for them with the dense trick users write,
softmax(masked_fill(a @ b / c, ~m, -inf), -1) @ v (NaN rows where a query
has no valid key, which masq masks out instead). tests/lang/attention_torch.masq
compares masq's fused form against it. Run with /usr/bin/python3 (torch 1.13)."""
import os

import numpy as np
import torch

rng = np.random.default_rng(16)


def trick(a, b, c, m, v):
    s = (a @ b / c).masked_fill(~m, float("-inf"))
    return torch.softmax(s, -1) @ v


def case(name, a, b, c, m, v, out):
    t = [torch.from_numpy(x) for x in (a, b, m, v)]
    out[name + "_a"], out[name + "_b"], out[name + "_m"], out[name + "_v"] = a, b, m, v
    out[name + "_out"] = trick(t[0], t[1], c, t[2], t[3]).numpy()


def main():
    out = {}
    f32 = np.float32
    q, k, v = (rng.random((2, 2, 9, 4), dtype=f32) - 0.5 for _ in range(3))
    padded = np.arange(9)[None, None, None, :] < np.array([9, 3])[:, None, None, None]
    case("padded", q, np.swapaxes(k, -2, -1).copy(), 8, padded, v, out)
    rand = rng.random((2, 2, 9, 9)) < 0.3
    rand[0, 1, 4] = False  # a query with no valid key
    case("random", q, np.swapaxes(k, -2, -1).copy(), 8, rand, v, out)
    qd, kd, vd = (rng.random((9, 5)) - 0.5 for _ in range(3))
    causal = np.arange(9)[None, :] <= np.arange(9)[:, None]
    case("causal64", qd, kd.T.copy(), 3, causal, vd, out)
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lang", "attention_torch.npz")
    np.savez(path, **out)


if __name__ == "__main__":
    main()
