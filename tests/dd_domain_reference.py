"""Prints the reference values of tests/suite/dd_domain.rs: mpmath at 60 digits, as
double-doubles (hi, lo). Run: python3 tests/dd_domain_reference.py (needs mpmath)."""
import mpmath as mp

mp.mp.dps = 60


def dd(v):
    hi = float(v)
    lo = float(v - mp.mpf(hi))
    return hi, lo


cases = {
    "exp": [0.5, -3.25, 1e-12, 100.125, 700.5, -300.5, 0.6931471805599453, 37.0],
    "ln": [1e-300, 0.9999999999, 1.0000000001, 3.0, 0.1, 1e300, 2.5e-310],
    "tanh": [1e-10, -2.5e-6, 0.3, 0.75, 1.7, -5.5, 20.0],
    "sin": [1e-8, 0.5, 3.0, 3.141592653589793, 100.0, -1234.5],
    "cos": [1e-8, 0.5, 1.5707963267948966, 3.0, 100.0, -1234.5],
    "sqrt": [2.0, 1e-300, 3e300, 0.1, 5e-320],
}
divs = [(1.0, 3.0), (2.0, 7.0), (-1e300, 3.0), (1e-300, 7e10), (0.1, 0.3), (5.0, -1.1)]
fns = {"exp": mp.exp, "ln": mp.log, "tanh": mp.tanh, "sin": mp.sin, "cos": mp.cos, "sqrt": mp.sqrt}
for name, xs in cases.items():
    print(f"const {name.upper()}: &[(f64, (f64, f64))] = &[")
    for x in xs:
        hi, lo = dd(fns[name](mp.mpf(x)))
        print(f"    ({x!r}, ({hi!r}, {lo!r})),")
    print("];")
print("const DIV: &[((f64, f64), (f64, f64))] = &[")
for a, b in divs:
    hi, lo = dd(mp.mpf(a) / mp.mpf(b))
    print(f"    (({a!r}, {b!r}), ({hi!r}, {lo!r})),")
print("];")
