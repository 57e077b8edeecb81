#!/usr/bin/env python3
"""Regenerates the tables of src/vmath/single/tanh32.rs (`C0`, `Q0`, `P`)
and prints each interval's fit error in f32 ulps.

    python3 src/vmath/single/tanh32_tables.py   # needs mpmath (pip install mpmath)

The kernel (single/avx512.rs, `tanh16`) splits a = |x| into 26 intervals by
the bits of the f32 `a`: interval 0 is [0, 1/8); for a in [1/8, 10),
interval k = (bits(a) >> 21) - 495 is a quarter of a binade (two mantissa
bits), [2^e (1 + j/4), 2^e (1 + (j+1)/4)). The arguments are clamped to 9.5
(tanh rounds to 1 in f32 from 9.01).

Interval 0: tanh(a) = a + a * p(a), p of degree D-1 fitted to tanh(a)/a - 1
(its constant term set to 0, so tiny and subnormal a give a).
Interval k > 0: tanh(m + r) = C0 + (Q0 + r * p(r)), m the interval's middle
(the kernel computes it from the bits of a), C0 = tanh(m) rounded to f32, Q0 the f32 of the fit's
constant term (about tanh(m) - C0), p of degree D-1. Each fit is Chebyshev
interpolation in 30-digit arithmetic, the coefficients rounded to f32; the
errors printed are of the rounded coefficients evaluated exactly (the
kernel's own roundings are bounded in avx512.rs's module doc).
"""
import math
import os
import struct
import sys

import mpmath as mp

# the f64 tables' script, beside the parent module: its Chebyshev fit
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tanh_tables import cheb_fit  # noqa: E402

mp.mp.dps = 30  # (after the import, which sets 40)
D = 6  # coefficients of p


def f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def from_bits(b):
    return struct.unpack("f", struct.pack("I", b))[0]


def ulp32(x):
    x = abs(float(x))
    if x == 0:
        return 2.0 ** -149
    return 2.0 ** max(math.frexp(x)[1] - 1 - 23, -149)


def main():
    ivs = [(0.0, 0.125)] + [(from_bits((k + 495) << 21), from_bits((k + 496) << 21)) for k in range(1, 26)]
    out, worst = [], 0.0
    for k, (lo, hi) in enumerate(ivs):
        if k == 0:
            m = c0 = q0 = 0.0
            g = lambda r: mp.tanh(r) / r - 1 if r != 0 else mp.mpf(0)
            cs = cheb_fit(g, mp.mpf(0), mp.mpf(hi), D - 1)
            cs[0] = mp.mpf(0)
            p = [f32(c) for c in cs]
            value = lambda r, s: r + r * s
        else:
            m = (lo + hi) / 2
            assert m == f32(m)
            c0 = f32(mp.tanh(m))
            cs = cheb_fit(lambda r: mp.tanh(m + r) - c0, mp.mpf(lo - m), mp.mpf(hi - m), D)
            q0 = f32(cs[0])
            p = [f32(c) for c in cs[1:]]
            value = lambda r, s: c0 + (q0 + r * s)
        w = 0
        for j in range(801):
            a = mp.mpf(lo) + (mp.mpf(hi) - mp.mpf(lo)) * j / 800
            r = a - m
            s = mp.mpf(0)
            for c in reversed(p):
                s = s * r + mp.mpf(c)
            t = mp.tanh(a)
            if t != 0:
                w = max(w, abs(value(r, s) - t) / ulp32(t))
        worst = max(worst, float(w))
        print(f"// interval {k:2d} [{lo:.5f}, {hi:.5f}) m = {m!r}: fit error {float(w):.3g} ulp")
        out.append((m, c0, q0, p))
    print(f"// worst fit error {worst:.3g} ulp")

    def lit(v):
        s = repr(float(v))
        return s if ("e" in s or "." in s) else s + ".0"

    def row(xs):
        return "[" + ", ".join(lit(x) for x in xs + [0.0] * (32 - len(xs))) + "]"

    print(f"pub(super) static C0: [f32; 32] = {row([o[1] for o in out])};")
    print(f"pub(super) static Q0: [f32; 32] = {row([o[2] for o in out])};")
    print(f"pub(super) static P: [[f32; 32]; {D}] = [")
    for j in range(D):
        print(f"    {row([o[3][j] for o in out])},")
    print("];")


if __name__ == "__main__":
    main()
