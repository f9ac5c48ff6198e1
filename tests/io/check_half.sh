#!/bin/sh
# float16 and bfloat16 conversions, bit for bit against torch 1.13:
#   1. every one of the 65536 float16 values (NaNs included) loads from .npy
#      and converts to float32 exactly, as numpy;
#   2. float32 -> float16 and -> bfloat16 rounding (to nearest, ties to
#      even) at every tie and one float32 ulp either side of it, plus a
#      million random float32 bit patterns, as torch's .half()/.bfloat16();
#      bfloat16 comes back through to(x, float32), which is exact.
# Usage: sh tests/io/check_half.sh path/to/masq; last line
# "io-half: N passed, N failed".
SUITE=io-half MODULE=torch PACKAGE=python3-torch
. "$(dirname "$0")/python_prelude.sh"

"$py" - "$masq" <<'PY'
import subprocess, sys
import numpy as np, torch

masq = sys.argv[1]
import checks
from checks import check

def first_diff(got, want, src):
    i = int(np.flatnonzero(got != want)[0])
    return "input bits %08x: got %04x, want %04x" % (src[i], got[i], want[i])

# 1. all float16 values to float32
all16 = np.arange(65536, dtype=np.uint16)
np.save("all16.npy", all16.view(np.float16))
# 2. float32 inputs: every float16 tie (v + half an ulp) and its neighbours,
#    the same for bfloat16, and random bit patterns
f16 = all16.view(np.float16).astype(np.float32)
fin = np.isfinite(f16)
with np.errstate(over="ignore"):  # the largest float16's next is inf
    nxt = np.nextafter(all16.view(np.float16), np.float16(np.inf)).astype(np.float32)
ties16 = ((f16[fin].astype(np.float64) + nxt[fin]) / 2).astype(np.float32)
bf = (all16.astype(np.uint32) << 16).view(np.float32)
bfin = bf[np.isfinite(bf)]
ties_bf = (bfin.view(np.uint32) + np.uint32(0x8000)).view(np.float32)
base = np.concatenate([ties16, ties_bf, f16[fin], bfin])
near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))])
rand = np.random.default_rng(17).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
x32 = np.concatenate([near, rand]).astype(np.float32)
np.save("x32.npy", x32)

script = """
save("out16.npy", to(load("all16.npy"), float32))
x = load("x32.npy")
save("h.npy", to(x, float16))
save("b.npy", to(to(x, bfloat16), float32))
"""
open("half.masq", "w").write(script)
r = subprocess.run([masq, "half.masq"], capture_output=True, text=True)
check("masq ran", r.returncode == 0, r.stderr)
if r.returncode == 0:
    got = np.load("out16.npy").view(np.uint32)
    want = all16.view(np.float16).astype(np.float32).view(np.uint32)
    check("float16 -> float32, all 65536", np.array_equal(got, want), first_diff(got, want, all16) if not np.array_equal(got, want) else "")
    h = np.load("h.npy")
    check("float16 saved as <f2", h.dtype == np.float16)
    got = h.view(np.uint16)
    want = torch.from_numpy(x32).half().numpy().view(np.uint16)
    ok = np.array_equal(got, want)
    check("float32 -> float16, %d values" % len(x32), ok, "" if ok else first_diff(got, want, x32.view(np.uint32)))
    got = (np.load("b.npy").view(np.uint32) >> 16).astype(np.uint16)
    want = torch.from_numpy(x32).bfloat16().view(torch.int16).numpy().view(np.uint16)
    ok = np.array_equal(got, want)
    check("float32 -> bfloat16, %d values" % len(x32), ok, "" if ok else first_diff(got, want, x32.view(np.uint32)))
checks.report("io-half")
PY
