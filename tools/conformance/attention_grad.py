"""Writes tests/lang/attention_grad_torch.npz: inputs of masked attention
under autograd and the gradients torch 1.13 computes for them with the
dense trick users write, sum((softmax(masked_fill(a @ b / c, ~m, -inf), -1)
@ v) * w), its rows with no valid key set to 0 before the product (as users
must, else NaN reaches every gradient). masq masks those rows' gradients
out instead. tests/lang/attention_grad_torch.masq compares masq's fused
form against it. Run with /usr/bin/python3 (torch 1.13)."""
import os

import numpy as np
import torch

rng = np.random.default_rng(61)


def grads(a, b, c, m, v, w):
    a, b, v = (torch.from_numpy(x).requires_grad_() for x in (a, b, v))
    m, w = torch.from_numpy(m), torch.from_numpy(w)
    s = (a @ b / c).masked_fill(~m, float("-inf"))
    p = torch.where(m.any(-1, keepdim=True), torch.softmax(s, -1), torch.zeros((), dtype=s.dtype))
    ((p @ v) * w).sum().backward()
    return a.grad.numpy(), b.grad.numpy(), v.grad.numpy()


def case(name, a, b, c, m, v, w, out):
    for key, x in zip("abmvw", (a, b, m, v, w)):
        out[name + "_" + key] = x
    out[name + "_ga"], out[name + "_gb"], out[name + "_gv"] = grads(a, b, c, m, v, w)


def main():
    out = {}
    f32 = np.float32
    q, k, v, w = (rng.random((3, 2, 9, 4), dtype=f32) - 0.5 for _ in range(4))
    kt = np.swapaxes(k, -2, -1).copy()
    padded = np.arange(9)[None, None, None, :] < np.array([9, 3, 0])[:, None, None, None]
    case("padded", q, kt, 8, padded, v, w, out)
    rand = rng.random((3, 2, 9, 9)) < 0.3
    rand[0, 1, 4] = False  # a query with no valid key
    case("random", q, kt, 8, rand, v, w, out)
    qd, kd, vd, wd = (rng.random((9, 5)) - 0.5 for _ in range(4))
    causal = np.arange(9)[None, :] <= np.arange(9)[:, None]
    case("causal64", qd, kd.T.copy(), 3, causal, vd, wd, out)
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lang", "attention_grad_torch.npz")
    np.savez(path, **out)


if __name__ == "__main__":
    main()
