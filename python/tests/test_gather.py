"""Gathers: integer array parameters (`tok: [n]Z`) read inside an index,
`E[tok[i], j]`. Integer numpy arrays are accepted (converted to float64);
a refused element is a ShapeError naming the array, position and value."""

import numpy as np
import pytest

import einsat

PROG = "fn embed(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]"


def test_embedding_lookup_with_integer_arrays():
    k = einsat.compile(PROG, fn="embed")
    E = np.arange(15.0).reshape(5, 3)
    for dtype in (np.int64, np.int32, np.uint8, np.float64):
        tok = np.array([3, 0, 4, 3], dtype=dtype)
        np.testing.assert_array_equal(k(E, tok), E[tok.astype(np.int64)])


def test_refused_elements_are_shape_errors():
    k = einsat.compile(PROG, fn="embed")
    E = np.arange(15.0).reshape(5, 3)
    with pytest.raises(einsat.ShapeError, match=r"tok\[2\] = 7 is outside 0\.\.5"):
        k(E, np.array([0, 1, 7]))
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 0\.5 is not an integer"):
        k(E, np.array([0.5]))
