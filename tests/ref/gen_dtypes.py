# Prints what tests/lang/dtypes_narrow.masq must print, from torch 1.13:
#   /usr/bin/python3 tests/ref/gen_dtypes.py > tests/lang/dtypes_narrow.out
# masq names dtypes without torch's "torch." prefix; dtype(x) is the name.
import torch

def masq_repr(x):
    # torch wraps the dtype suffix counting "torch."; masq counts its own
    # shorter suffix (docs/DIFFERENCES.md), so a suffix torch moved to a new
    # line may still fit on the last one
    r = repr(x).replace("torch.", "")
    head, sep, suffix = r.rpartition(",\n       dtype=")
    if sep and len(head.split("\n")[-1]) + len(", dtype=" + suffix) - 1 <= 80:
        r = head + ", dtype=" + suffix
    return r

def s(*xs):
    print(" ".join(masq_repr(x) if isinstance(x, torch.Tensor) else str(x) for x in xs))

def name(t): return str(t.dtype).replace("torch.", "")

v = [1.1, -2.5, 300.7, 65519.0, 65520.0, 1e-8, 3e-8, 0.1]
for d in [torch.int8, torch.int16, torch.int32, torch.uint8, torch.float16, torch.bfloat16]:
    # masq converts a float list to its float32 tensor first, then to d
    x = torch.tensor(v).to(d)
    s(name(x), x)
s(torch.tensor([1, 2, 300, -129]).to(torch.int8))
s(torch.tensor([1, 2, 300, -1]).to(torch.uint8))
s(torch.tensor(3, dtype=torch.int32))
s(torch.tensor([], dtype=torch.int16))
h = torch.tensor([[1.5, 2.0], [-3.25, 1e-3]]).half()
s(h[0], h[:, 1], name(h[1]))
s(h.bfloat16(), h.short(), h.double())
s(torch.tensor([1.00390625, 1.01171875, -1.00390625]).bfloat16())
s(torch.tensor([2049, 2051, 4097]).half())
s(torch.tensor(7, dtype=torch.int8).item(), torch.tensor(0.5).half().item())
