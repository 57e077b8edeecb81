"""einsat.dask on a real dask.distributed cluster: a LocalCluster of two
worker processes (one thread each, 256 MB each) started once for the
module; every result is compared with numpy on the same data."""

import logging
import pickle

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="einsat.dask needs dask[array] (pip install ./python[dask])")
distributed = pytest.importorskip("distributed", reason="the cluster tests need dask.distributed")

from hypothesis import given, settings, strategies as st  # noqa: E402

import einsat  # noqa: E402
import einsat.dask as ed  # noqa: E402

RTOL = 1e-12

SOFTMAX = "fn softmax(X: [b,n]R) -> [b,n]R = gen(r:b, i:n) exp(X[r,i]) / sum(j:n) exp(X[r,j])"
LAYERNORM = """
fn layernorm(X: [b,n]R, g: [n]R, beta: [n]R, inv_n: R) -> [b,n]R =
  gen(r:b, i:n)
    let mu = (sum(j:n) X[r,j]) * inv_n in
    let var = (sum(j:n) (X[r,j] - mu) * (X[r,j] - mu)) * inv_n in
    g[i] * (X[r,i] - mu) / sqrt(var + 0.00001) + beta[i]
"""
STENCIL = """
fn heat(U: [h,w]R, c: R) -> [h,w]R =
  gen(i:h, j:w) U[i,j] + c * (U[i-1,j] + U[i+1,j] + U[i,j-1] + U[i,j+2] - 4 * U[i,j])
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    for name in ("distributed", "distributed.worker.memory", "distributed.nanny.memory"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        memory_limit="256MB",
        dashboard_address=None,
        silence_logs=logging.ERROR,
        local_directory=str(tmp_path_factory.mktemp("dask-workers")),  # spill files
    ) as cluster, distributed.Client(cluster) as c:
        yield c


def close(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-13)


rng = np.random.default_rng(28)


def test_uneven_chunks_matmul(client):
    A, B = rng.random((70, 45)), rng.random((45, 33))
    dA = da.from_array(A, chunks=((20, 50), (7, 13, 25)))
    dB = da.from_array(B, chunks=((30, 15), (10, 23)))  # the shared index chunked differently
    C = ed.einsum("ij,jk->ik", dA, dB)
    assert isinstance(C, da.Array)  # lazy
    close(client.compute(C).result(), A @ B)


def test_contracted_axis_split_across_chunks(client):
    A, B = rng.random((40, 300)), rng.random((300, 20))
    dA = da.from_array(A, chunks=(40, 70))  # j: 5 chunks
    dB = da.from_array(B, chunks=(70, 20))
    before = client.run(einsat._einsat._einsum_cache_len)
    C = ed.einsum("ij,jk->ik", dA, dB, split_every=2)
    close(client.compute(C).result(), A @ B)
    # one kernel per worker process for the spec, whatever the block sizes
    after = client.run(einsat._einsat._einsum_cache_len)
    assert all(after[w] - before.get(w, 0) <= 1 for w in after)
    close(client.compute(ed.einsum("ij,ij->", dA, dA)).result(), (A * A).sum())


def test_matrix_chain(client):
    A, B, C, D = (rng.random(s) for s in [(60, 50), (50, 40), (40, 30), (30, 20)])
    ds = [da.from_array(x, chunks=17) for x in (A, B, C, D)]
    r = ed.einsum("ij,jk,kl,lm->im", *ds)
    close(client.compute(r).result(), A @ B @ C @ D)
    # no graph larger than dask's own einsum of the same arrays
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = da.einsum("ij,jk,kl,lm->im", *ds)
    assert len(r.__dask_graph__()) <= len(theirs.__dask_graph__())
    # pairwise steps: one einsat layer per product
    assert sum(1 for k in r.__dask_graph__().layers if k.startswith("einsat-einsum-")) == 3


@pytest.mark.parametrize(
    "spec, shapes, chunk",
    [
        ("ij,ij,ij->", [(6, 6)] * 3, 3),  # pairwise would take more tasks
        ("ij,jk,kl->il", [(6, 8), (8, 8), (8, 6)], 4),
        ("ab,bc,cd,da->", [(6, 6)] * 4, 2),
        ("i,ij,j->", [(8,), (8, 8), (8,)], 4),
    ],
)
def test_graph_never_larger_than_dasks(client, spec, shapes, chunk):
    import warnings

    arrays = [rng.random(s) for s in shapes]
    ds = [da.from_array(a, chunks=chunk) for a in arrays]
    ours = ed.einsum(spec, *ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = da.einsum(spec, *ds)
    assert len(ours.__dask_graph__()) <= len(theirs.__dask_graph__())
    close(client.compute(ours).result(), np.einsum(spec, *arrays))


def test_batched_and_ellipsis_and_repeated(client):
    X, Y = rng.random((7, 12, 9)), rng.random((7, 9, 11))
    dX, dY = da.from_array(X, chunks=(3, 5, 4)), da.from_array(Y, chunks=(2, 9, 6))
    close(client.compute(ed.einsum("bij,bjk->bik", dX, dY)).result(), X @ Y)
    close(client.compute(ed.einsum("...ij,...jk->...ik", dX, dY)).result(), X @ Y)
    S = rng.random((7, 10, 10))
    dS = da.from_array(S, chunks=(3, 4, 4))
    close(client.compute(ed.einsum("bii->b", dS)).result(), np.einsum("bii->b", S))
    close(client.compute(ed.einsum("bij,bjk", dX, dY)).result(), np.einsum("bij,bjk", X, Y))  # implicit: b summed


def test_fused_row_programs(client):
    X = rng.random((101, 37)) * 4
    dX = da.from_array(X, chunks=(20, 37))
    e = np.exp(X)
    misses = lambda: ed._kernel.cache_info().misses  # noqa: E731
    before = client.run(misses)
    close(client.compute(ed.map(SOFTMAX, dX)).result(), e / e.sum(1, keepdims=True))
    # compiled once per worker process for its 6 blocks
    after = client.run(misses)
    assert all(after[w] - before.get(w, 0) <= 1 for w in after)
    assert sum(after.values()) - sum(before.values()) >= 1
    g, beta = rng.random(37), rng.random(37)
    got = ed.map(LAYERNORM, dX, da.from_array(g, chunks=10), da.from_array(beta, chunks=37), 1 / 37)
    mu = X.mean(1, keepdims=True)
    want = g * (X - mu) / np.sqrt(X.var(1, keepdims=True) + 1e-5) + beta
    close(client.compute(got).result(), want)


def test_stencil_halos(client):
    U = rng.random((45, 52))
    dU = da.from_array(U, chunks=((10, 20, 15), (13, 13, 26)))
    P = np.pad(U, 2)  # einsat reads zeros beyond the ends
    c = 0.1
    core = P[2:-2, 2:-2]
    want = core + c * (P[1:-3, 2:-2] + P[3:-1, 2:-2] + P[2:-2, 1:-3] + P[2:-2, 4:] - 4 * core)
    got = ed.map(STENCIL, dU, c)
    close(client.compute(got).result(), want)
    assert got.chunks == dU.chunks
    # the same kernel as an einsat.Kernel, which pickles as its text
    k = einsat.compile(STENCIL)
    close(pickle.loads(pickle.dumps(k))(U, c), want)
    close(client.compute(ed.map(k, dU, c)).result(), want)


def test_reductions(client):
    x, y = rng.random(1000), rng.random(1000)
    dx, dy = da.from_array(x, chunks=300), da.from_array(y, chunks=(100, 400, 500))
    dot = "fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]"
    r = ed.map(dot, dx, dy)
    assert r.ndim == 0
    close(client.compute(r).result(), x @ y)
    X = rng.random((50, 90))
    rows = "fn rows(X: [b,n]R) -> [b]R = gen(r:b) sum(i:n) X[r,i] * X[r,i]"
    close(client.compute(ed.map(rows, da.from_array(X, chunks=(20, 40)))).result(), (X * X).sum(1))


def test_refused_program_names_the_axis(client):
    X = da.from_array(rng.random((40, 30)), chunks=(10, 10))
    with pytest.raises(ed.ChunkError) as e:
        ed.map(SOFTMAX, X)
    msg = str(e.value)
    assert "size `n`" in msg and "axis 1 of `X`" in msg and "sum(j:n)" in msg and "allow_rechunk=True" in msg
    assert isinstance(e.value, einsat.ShapeError)
    # a position-dependent program (a bracket on the index)
    first = "fn first(x: [n]R) -> [n]R = gen(i:n) [i = 0] * x[i]"
    with pytest.raises(ed.ChunkError, match=r"size `n`.*bracket.*axis 0 of `x`"):
        ed.map(first, da.from_array(np.arange(10.0), chunks=4))
    # with allow_rechunk the axis is made whole and the result is numpy's
    got = ed.map(SOFTMAX, X, allow_rechunk=True)
    Xn = X.compute()
    close(client.compute(got).result(), np.exp(Xn) / np.exp(Xn).sum(1, keepdims=True))
    # a let shadowing the parameter, read at an offset: its values beyond the
    # chunk are computed (exp(0) = 1, not einsat's zero padding), so refused
    shifted = "fn s(x: [n]R) -> [n]R = let x = gen(i:n) exp(x[i]) in gen(i:n) x[i-1]"
    with pytest.raises(ed.ChunkError, match=r"size `n`.*computed tensor at an offset"):
        ed.map(shifted, da.from_array(np.arange(10.0), chunks=4))
    got = ed.map(shifted, da.from_array(np.arange(10.0), chunks=4), allow_rechunk=True)
    close(client.compute(got).result(), np.concatenate([[0.0], np.exp(np.arange(9.0))]))
    with pytest.raises(ed.ChunkError, match="pairs"):
        ed.map("fn p(x: [n](R,R)) -> [n]R = gen(i:n) x[i].0", X[0])


def test_bad_einsums_are_refused_on_the_client(client):
    A = da.ones((4, 5), chunks=2)
    with pytest.raises(einsat.ShapeError, match="size 5 .* but 4"):
        ed.einsum("ij,jk->ik", A, A)
    with pytest.raises(einsat.ShapeError, match="2 operand terms but 1 array"):
        ed.einsum("ij,jk->ik", A)
    with pytest.raises(einsat.OptionError):
        ed.einsum("ij,jk->ik", A, A.T, optimize="no-such-optimizer")
    with pytest.raises(einsat.DTypeError, match="complex"):
        ed.einsum("ij->i", A.astype(complex))


def test_worker_error_arrives_on_the_client(client):
    X = da.from_array(rng.random((20, 20)), chunks=10)
    # blocks declared float64 but object arrays: einsat refuses them on the worker
    bad = X.map_blocks(lambda b: b.astype(object), dtype=np.float64)
    with pytest.raises(einsat.DTypeError, match="not supported"):
        client.compute(ed.einsum("ij,jk->ik", bad, X)).result()
    k = ed.map("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * 2", bad[0])
    with pytest.raises(einsat.DTypeError):
        k.compute()


def test_input_larger_than_a_worker_spills(client):
    # 512 MB of float64 (two workers of 256 MB): persisting it spills to disk
    n = 8192
    X = da.random.default_rng(7).random((n, n), chunks=(128, n)).persist()
    distributed.wait(X)

    def spilled(dask_worker):
        return int(dask_worker.data.spilled_total.disk)

    assert sum(client.run(spilled).values()) > 0
    got = client.compute(ed.einsum("ij,ij->i", X, X)).result()
    rows = client.compute(ed.map("fn m(X: [b,n]R) -> [b]R = gen(r:b) sum(i:n) X[r,i]", X)).result()
    # numpy on the same data, one chunk (8 MB) at a time
    for k in range(X.numblocks[0]):
        B = X.blocks[k, 0].compute()
        close(got[k * 128 : (k + 1) * 128], (B * B).sum(1))
        close(rows[k * 128 : (k + 1) * 128], B.sum(1))
    del X


def chunking(n):
    """Random chunks of an axis of ``n`` (1 to 4 pieces, possibly uneven)."""
    return st.lists(st.integers(1, n - 1), max_size=3, unique=True).map(
        lambda cuts: tuple(b - a for a, b in zip([0] + sorted(cuts), sorted(cuts) + [n]))
    )


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_random_chunkings_agree_with_numpy(client, data):
    # a chain of three and a stencil, every axis chunked at random
    shapes = [(13, 11), (11, 9), (9, 7)]
    arrays = [np.random.default_rng(k).random(s) for k, s in enumerate(shapes)]
    ds = [da.from_array(a, chunks=tuple(data.draw(chunking(n)) for n in a.shape)) for a in arrays]
    close(client.compute(ed.einsum("ij,jk,kl->il", *ds)).result(), arrays[0] @ arrays[1] @ arrays[2])
    close(client.compute(ed.einsum("ij,ij->j", ds[0], ds[0])).result(), (arrays[0] ** 2).sum(0))
    U = np.random.default_rng(9).random((12, 10))
    dU = da.from_array(U, chunks=(data.draw(chunking(12)), data.draw(chunking(10))))
    P = np.pad(U, 2)
    core = P[2:-2, 2:-2]
    want = core + 0.5 * (P[1:-3, 2:-2] + P[3:-1, 2:-2] + P[2:-2, 1:-3] + P[2:-2, 4:] - 4 * core)
    w = dU.chunks[1]
    if len(w) == 1 or min(w) >= 2:  # the halo (1 on h, 2 on w) fits every chunk
        close(client.compute(ed.map(STENCIL, dU, 0.5)).result(), want)
    else:
        with pytest.raises(ed.ChunkError, match="smallest chunk"):
            ed.map(STENCIL, dU, 0.5)


def test_dropin_contract_keeps_dask_arrays_dask(client):
    # opt_einsum's dask backend returns dask arrays for dask operands; the
    # drop-in does the same through einsat.dask (opt_einsum's own
    # test_backends.py::test_dask runs this against einsat in CI)
    rng = np.random.default_rng(5)
    a, b, c = rng.standard_normal((6, 5)), rng.standard_normal((5, 7)), rng.standard_normal((7,))
    want = np.einsum("ij,jk,k->i", a, b, c)
    views = [da.from_array(x, chunks=2) for x in (a, b, c)]
    got = einsat.contract("ij,jk,k->i", *views)
    assert isinstance(got, da.Array)
    close(got.compute(), want)
    expr = einsat.contract_expression("ij,jk,k->i", a.shape, b.shape, c.shape)
    got = expr(*views)
    assert isinstance(got, da.Array)
    close(got.compute(), want)
    # numpy operands still give numpy results
    assert isinstance(expr(a, b, c), np.ndarray)
    with pytest.raises(einsat.ShapeError):
        expr(*[da.from_array(x[:2], chunks=2) for x in (a, b, c)])
    with pytest.raises(einsat.OptionError):
        einsat.contract("ij,jk,k->i", *views, out=np.empty(6))
