"""einsat from Python, cell by cell (run it whole: ``python python/examples/quickstart.py``).

Each ``# %%`` cell is one step, as in a notebook; each checks its result
against numpy, so the script fails loudly if the API stops doing what it
shows. Needs ``pip install ./python`` (and numpy).
"""

# %% 1. einsum, as numpy's: same grammar, same results; compiled once per spec
import numpy as np

import einsat

rng = np.random.default_rng(0)
A, B, x = rng.random((300, 200)), rng.random((200, 100)), rng.random(100)
C = einsat.einsum("ij,jk->ik", A, B)
assert np.allclose(C, A @ B)

# %% 2. many operands: planned (opt_einsum's optimize= and memory_limit= work too)
y = einsat.einsum("ij,jk,k->i", A, B, x, optimize="optimal")
assert np.allclose(y, A @ (B @ x))
path, report = einsat.einsum_path("ij,jk,k->i", A, B, x)
print(path)  # ['einsum_path', (1, 2), (0, 1)]: B x first, never A B
print(report)

# %% 3. a program in the text language, compiled to a kernel
mv = einsat.compile(
    """
    # a dense layer with a ReLU
    fn layer(W: [n,m]R, x: [m]R, b: [n]R) -> [n]R =
      gen(i:n) max(b[i] + sum(j:m) W[i,j] * x[j], 0)
    """
)
b = rng.random(300) - 0.5
out = mv(A, rng.random(200), b)
print(mv.optimized)
assert out.shape == (300,) and (out >= 0).all()

# %% 4. what the optimiser did, and why
report = mv.report
print(report["mode"], report["cost_before"], "->", report["cost_after"])

# %% 5. mistakes are exceptions with line and column
try:
    einsat.compile("fn f(x: [n]R) -> R = sum(i:n) y[i]")
except einsat.TypeCheckError as e:
    print(e.line, e.column, e)
    assert (e.line, e.column) == (1, 31)
try:
    einsat.einsum("ij,jk->ik", A, A)
except einsat.ShapeError as e:
    print(e)

# %% 6. drop-in for opt_einsum: contract and contract_expression
expr = einsat.contract_expression("ij,jk,k->i", A.shape, B.shape, x.shape)
assert np.allclose(expr(A, B, x), y)

# %% 7. Python functions traced into programs (einsat.fn): sizes from the arguments
from einsat import fold, gen, sum  # noqa: E402 (a cell of its own)

matvec = einsat.fn(lambda A, x: gen(lambda i: sum(lambda j: A[i, j] * x[j])))
assert np.allclose(matvec(B, x), B @ x)
print(matvec.source)  # fn f(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i, j] * x[j]

polyval = einsat.fn(lambda c, t: fold(0, lambda i, acc: acc * t + c[i]))  # Horner, in order
assert np.isclose(polyval(x[:5], 0.5), np.polyval(x[:5], 0.5))

embed = einsat.fn(lambda E, tok: gen(lambda i, j: E[tok[i], j]))  # tok: integers, a gather
tok = np.array([3, 0, 3])
assert np.array_equal(embed(A, tok), A[tok])
print("quickstart: every cell ran")
