#!/usr/bin/env python3
"""Regenerates the coefficient tables of src/vmath/tanh.rs (`M`, `C0`, `C`,
`EXP2`) and prints each interval's fitted error in ulps.

    python3 src/vmath/tanh_tables.py          # needs mpmath (pip install mpmath)

Interval 0 is [0, W0): tanh(a) = a + a^3 * P(a^2), P of degree D-2 fitted to
(tanh(sqrt(u))/sqrt(u) - 1)/u on u in [0, (1.0001 W0)^2]. Intervals 1..15
cover [W0, 4.759): interval k is where the index map g(a) = a (A - B a) lies
in [C + k - 1/2, C + k + 1/2) (the kernel computes that index with one fma
and a rounding), each expanded around a point m_k whose tanh is within
2^-12 ulp of a double (so C0 = tanh(m_k) is nearly exact) as
tanh(m_k + r) = C0 + r * p(r), p of degree D-1. Each fit is Chebyshev
interpolation in 40-digit arithmetic, the coefficients rounded to doubles;
the errors printed are of the rounded coefficients evaluated exactly (the
kernel's own rounding is bounded in tanh.rs's module doc).
"""
import math

import mpmath as mp

mp.mp.dps = 40
D, C, A, B = 11, 2.0, 5.2, 0.32  # degree, index offset, index map a (A - B a)
W0 = (A - math.sqrt(A * A - 4 * B * (C + 0.5))) / (2 * B)


def cheb_fit(f, lo, hi, deg):
    """Monomial coefficients of the Chebyshev interpolant of f on [lo, hi]."""
    n = deg + 1
    nodes = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    a, b = mp.matrix(n, n), mp.matrix(n, 1)
    for i, x in enumerate(nodes):
        for j in range(n):
            a[i, j] = x ** j
        b[i] = f(x)
    c = mp.lu_solve(a, b)
    return [c[j] for j in range(n)]


def ulp(x):
    x = abs(float(x))
    return 5e-324 if x == 0 else (math.ulp(x) if x < 1 else 2.0 ** -53)


def ginv(y):
    return (A - math.sqrt(A * A - 4 * B * y)) / (2 * B)


def near_exact_m(center):
    """A double near `center` whose tanh is within 2^-12 ulp of a double."""
    best = None
    for i in range(3000):
        for m in (center + i * math.ulp(center), center - i * math.ulp(center)):
            t = mp.tanh(mp.mpf(m))
            off = abs(t - mp.mpf(float(t))) / ulp(float(t))
            if best is None or off < best[0]:
                best = (float(off), m)
            if off < 2 ** -12:
                return best
    return best


def main():
    iv = []
    u1 = mp.mpf(W0 * 1.0001) ** 2
    g0 = lambda u: (mp.tanh(mp.sqrt(u)) / mp.sqrt(u) - 1) / u if u > 0 else mp.mpf(-1) / 3
    cd = [float(c) for c in cheb_fit(g0, mp.mpf(0), u1, D - 1)]
    w = 0
    for k in range(1, 401):
        a = mp.mpf(W0 * 1.0001) * k / 400
        p = mp.mpf(0)
        for c in reversed(cd):
            p = p * a * a + mp.mpf(c)
        t = mp.tanh(a)
        w = max(w, abs(a + a ** 3 * p - t) / ulp(t))
    print(f"// interval 0 [0, {W0}): fit error {float(w):.3g} ulp")
    iv.append({"m": 0.0, "c0": 0.0, "c": cd})
    for k in range(1, 16):
        lo, hi = ginv(C + k - 0.5), ginv(C + k + 0.5)
        lo2, hi2 = lo - (hi - lo) * 1e-6, hi + (hi - lo) * 1e-6
        _, m = near_exact_m((lo + hi) / 2)
        cs = cheb_fit(lambda r: mp.tanh(m + r), mp.mpf(lo2 - m), mp.mpf(hi2 - m), D)
        c0 = float(mp.tanh(m))
        cd = [float(c) for c in cs[1:]]
        w = 0
        for j in range(201):
            r = mp.mpf(lo2 + (hi2 - lo2) * j / 200) - mp.mpf(m)
            p = mp.mpf(0)
            for c in reversed(cd):
                p = p * r + mp.mpf(c)
            t = mp.tanh(m + r)
            w = max(w, abs(mp.mpf(c0) + r * p - t) / ulp(t))
        print(f"// interval {k:2d} [{lo:.4f}, {hi:.4f}) m = {m!r}: fit error {float(w):.3g} ulp")
        iv.append({"m": m, "c0": c0, "c": cd})

    def lit(v):
        s = repr(float(v))
        return s if ("e" in s or "." in s) else s + ".0"

    print(f"const M: [f64; 16] = [{', '.join(lit(i['m']) for i in iv)}];")
    print(f"const C0: [f64; 16] = [{', '.join(lit(i['c0']) for i in iv)}];")
    print(f"const C: [[f64; 16]; {D}] = [")
    for j in range(D):
        print("    [" + ", ".join(lit(i["c"][j]) for i in iv) + "],")
    print("];")
    exp2 = ", ".join(lit(2 * mp.power(2, mp.mpf(j) / 16)) for j in range(16))
    print(f"const EXP2: [f64; 16] = [{exp2}];")


if __name__ == "__main__":
    main()
