"""einsat.einsum against numpy.einsum: random specs, shapes and memory
layouts (hypothesis), the grammar's corners, out=, and the cache."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einsat

RTOL = 1e-9


def close(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    # sums may be added in another order: relative to the size of the terms
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale * 64)


def layout(draw, arr):
    """The same values in some memory layout: C, Fortran, a strided slice of
    a larger array, reversed axes (negative strides), or a transposed copy
    transposed back."""
    kind = draw(st.sampled_from(["c", "f", "slice", "reversed", "transposed"]))
    if arr.ndim == 0:
        return arr.copy()
    if kind == "c":
        return np.ascontiguousarray(arr)
    if kind == "f":
        return np.asfortranarray(arr)
    if kind == "slice":
        big = np.zeros(tuple(2 * n + 1 for n in arr.shape))
        view = big[tuple(slice(1, 2 * n + 1, 2) for n in arr.shape)]
        view[...] = arr
        return view
    if kind == "reversed":
        big = np.ascontiguousarray(arr[tuple(slice(None, None, -1) for _ in arr.shape)])
        return big[tuple(slice(None, None, -1) for _ in arr.shape)]
    perm = draw(st.permutations(range(arr.ndim)))
    inv = np.argsort(perm)
    return np.ascontiguousarray(arr.transpose(perm)).transpose(inv)


@st.composite
def einsum_case(draw):
    letters = draw(st.sampled_from(["ijk", "ijkl", "abcde", "ijAB"]))
    nops = draw(st.integers(1, 3))
    sizes = {c: draw(st.integers(0, 4) if draw(st.booleans()) else st.integers(1, 4)) for c in letters}
    ops = []
    for _ in range(nops):
        rank = draw(st.integers(0, 3))
        ops.append("".join(draw(st.sampled_from(letters)) for _ in range(rank)))
    used = sorted(set("".join(ops)))
    explicit = draw(st.booleans())
    if explicit:
        out = draw(st.permutations(used))
        out = "".join(out[: draw(st.integers(0, len(out)))])
        spec = ",".join(ops) + "->" + out
    else:
        spec = ",".join(ops)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = []
    for o in ops:
        a = rng.standard_normal(tuple(sizes[c] for c in o))
        arrays.append(layout(draw, a))
    return spec, arrays


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(einsum_case())
def test_random_specs_match_numpy(case):
    spec, arrays = case
    want = np.einsum(spec, *arrays)
    got = einsat.einsum(spec, *arrays)
    close(got, want)


@st.composite
def ellipsis_case(draw):
    nops = draw(st.integers(1, 2))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    specs, arrays = [], []
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for _ in range(nops):
        sub = "".join(draw(st.lists(st.sampled_from("ij"), max_size=2)))
        # each operand takes a suffix of the batch axes, some of size 1
        k = draw(st.integers(0, len(batch)))
        b = tuple(1 if draw(st.booleans()) else n for n in batch[len(batch) - k:])
        front = draw(st.booleans())
        shape_sub = tuple(3 for _ in sub)
        if front:
            specs.append("..." + sub)
            shape = b + shape_sub
        else:
            specs.append(sub + "...")
            shape = shape_sub + b
        arrays.append(layout(draw, rng.standard_normal(shape)))
    spec = ",".join(specs)
    if draw(st.booleans()):
        spec += "->..." + "".join(sorted(set("".join(specs).replace(".", ""))))[:1]
    return spec, arrays


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(ellipsis_case())
def test_ellipsis_and_broadcasting_match_numpy(case):
    spec, arrays = case
    want = np.einsum(spec, *arrays)
    got = einsat.einsum(spec, *arrays)
    close(got, want)


@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("ij->", [(3, 4)]),
        ("ij->ji", [(3, 4)]),
        ("i,i", [(5,), (5,)]),
        ("i,j->ij", [(2,), (3,)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ij,ij->ij", [(3, 1), (3, 4)]),
        ("kii,ijj->k", [(2, 1, 1), (3, 2, 2)]),
        ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
        ("i...->...", [(2, 3)]),
        ("Ab,ba", [(2, 3), (3, 2)]),
        (" i j , j k -> i k ", [(2, 3), (3, 2)]),
        ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
        ("ij,jk->ik", [(0, 4), (4, 5)]),
        ("ij,jk->ik", [(3, 0), (0, 5)]),
    ],
)
def test_grammar(spec, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    close(einsat.einsum(spec, *arrays), np.einsum(spec, *arrays))


def test_scalars():
    A = np.arange(6.0).reshape(2, 3)
    close(einsat.einsum(",ij->ij", 2.5, A), 2.5 * A)
    close(einsat.einsum(",ij", np.float64(2.0), A), 2.0 * A)
    close(einsat.einsum(",ij", np.array(3.0), A), 3.0 * A)
    r = einsat.einsum("i,i", np.arange(3.0), np.arange(3.0))
    assert isinstance(r, float) and r == 5.0
    assert einsat.einsum("", 3.0) == 3.0
    assert einsat.einsum("...", 4.0) == 4.0


def test_dtype_conversion():
    # numpy's result dtypes (python/tests/test_dtypes.py covers them all)
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(3, dtype=np.uint8)
    r = einsat.einsum("ij,j->i", a, b)
    assert r.dtype == np.int32 and np.array_equal(r, np.einsum("ij,j->i", a, b))
    close(einsat.einsum("ij->ji", a.astype(np.float32)), a.T.astype(float))
    assert einsat.einsum("ij->ji", a.astype(np.float32)).dtype == np.float32
    r = einsat.einsum("i->i", np.array([True, False]))
    assert r.dtype == bool and list(r) == [True, False]
    close(einsat.einsum("ij,j", [[1, 2], [3, 4]], [1.0, 1.0]), [3.0, 7.0])
    close(einsat.einsum("i", np.arange(3, dtype=np.float16)), [0.0, 1.0, 2.0])
    close(einsat.einsum("i", np.arange(3.0).astype(">f8")), [0.0, 1.0, 2.0])
    assert einsat.einsum("ij,j", a, b.astype(float)).dtype == np.float64


def test_out():
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    out = np.empty((3, 5))
    r = einsat.einsum("ij,jk->ik", A, B, out=out)
    assert r is out
    close(out, A @ B)
    # a strided, Fortran-ordered and a negatively-strided out
    big = np.zeros((6, 10))
    view = big[::2, ::2]
    einsat.einsum("ij,jk->ik", A, B, out=view)
    close(big[::2, ::2], A @ B)
    assert np.all(big[1::2] == 0) and np.all(big[:, 1::2] == 0)
    f = np.asfortranarray(np.zeros((3, 5)))
    einsat.einsum("ij,jk->ik", A, B, out=f)
    close(f, A @ B)
    rev = np.zeros((3, 5))[::-1, ::-1]
    einsat.einsum("ij,jk->ik", A, B, out=rev)
    close(rev, A @ B)
    s = np.zeros(())
    einsat.einsum("i,i->", A[0], A[0], out=s)
    close(s, A[0] @ A[0])


def test_kernel_reused_across_sizes():
    spec = "ij,jk->ik"
    rng = np.random.default_rng(3)
    einsat.einsum(spec, rng.standard_normal((2, 3)), rng.standard_normal((3, 4)))
    n = einsat._einsat._einsum_cache_len()
    for m in range(1, 6):
        A, B = rng.standard_normal((m, m + 1)), rng.standard_normal((m + 1, 2))
        close(einsat.einsum(spec, A, B), A @ B)
    assert einsat._einsat._einsum_cache_len() == n


def test_inputs_not_modified_and_not_copied():
    # a view is read in place: the result follows the base's values
    base = np.arange(12.0).reshape(3, 4)
    view = base[::-1, 1::2]
    before = base.copy()
    close(einsat.einsum("ij->j", view), view.sum(axis=0))
    assert np.array_equal(base, before)


def test_float64_layouts_read_in_place_others_converted():
    base = np.arange(60.0).reshape(3, 4, 5)
    for view in (base, np.asfortranarray(base), base[::-1, 1::2, ::-2], base.transpose(2, 0, 1),
                 base[:, 0, :], np.broadcast_to(base[0], (3, 4, 5))):
        assert einsat._einsat._reads_in_place(view)
    for other in (base.astype(np.float32), base.astype(np.int64), base.astype(">f8")):
        assert not einsat._einsat._reads_in_place(other)


def test_threads_option():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((64, 64))
    for t in (None, 1, 2):
        close(einsat.einsum("ij,jk->ik", A, A, threads=t), A @ A)



def test_random_shapes_accepted_exactly_when_numpy_accepts():
    """Random specs (with `...`) over random axis sizes 1-3: einsat computes
    numpy's values where numpy accepts the operands (size-1 broadcasting
    included) and raises einsat.Error exactly where numpy refuses them."""
    import random

    r = random.Random(2)
    agreed = refused = 0
    for _ in range(1000):
        terms, ops = [], []
        for _ in range(r.randint(1, 3)):
            ell = r.random() < 0.2
            sub = "".join(r.choice("ijk") for _ in range(r.randint(0, 3)))
            extra = r.randint(0, 2) if ell else 0
            terms.append(("..." + sub) if ell else sub)
            shape = tuple(r.choice([1, 2, 3]) for _ in range(len(sub) + extra))
            ops.append(np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape) / 7)
        spec = ",".join(terms)
        if r.random() < 0.5:
            letters = sorted(set("".join(terms).replace(".", "")))
            r.shuffle(letters)
            dots = "..." if "..." in spec and r.random() < 0.8 else ""
            spec += "->" + dots + "".join(letters[: r.randint(0, len(letters))])
        try:
            want = np.einsum(spec, *ops)
        except ValueError:
            with pytest.raises(einsat.Error):
                einsat.einsum(spec, *ops)
            refused += 1
            continue
        close(einsat.einsum(spec, *ops), want)
        agreed += 1
    assert agreed > 400 and refused > 250
