"""Every kind of error einsum, contract and einsum_path give names the
user's index letters and operand positions (with the subscripts the user
wrote), never the names of the function einsat builds for the einsum
(parameters `A`, `B`, ..., `T26`; sizes `ni`, `nj`, ...; the letters that
stand for the axes under `...`)."""

import re

import numpy as np
import pytest

import einsat

ENTRY = {
    "einsum": einsat.einsum,
    "contract": einsat.contract,
    "einsum_path": einsat.einsum_path,
}

# (spec, operand shapes, exception, what the message must say)
CASES = [
    # sizes of one index across operands
    ("ij,jk->ik", [(2, 3), (4, 5)], einsat.ShapeError,
     ["operand 1 ('jk'): index 'j' has size 4", "operand 0 ('ij') gives it size 3"]),
    ("ij,jk", [(2, 3), (4, 5)], einsat.ShapeError, ["operand 1 ('jk')", "operand 0 ('ij')"]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (2, 2)], einsat.ShapeError,
     ["operand 2 ('kl'): index 'k' has size 2", "operand 1 ('jk') gives it size 4"]),
    ("xy,yz,zw,wv->xv", [(2, 3), (3, 4), (4, 5), (6, 2)], einsat.ShapeError,
     ["operand 3 ('wv'): index 'w' has size 6", "operand 2 ('zw') gives it size 5"]),
    # a repeated index within one operand (a diagonal)
    ("ii->i", [(2, 3)], einsat.ShapeError, ["operand 0 ('ii'): index 'i' has size 3 on axis 1 but size 2 on axis 0"]),
    ("iij->j", [(2, 3, 4)], einsat.ShapeError, ["operand 0 ('iij'): index 'i' has size 3 on axis 1"]),
    ("ij,iij->j", [(2, 4), (2, 3, 4)], einsat.ShapeError, ["operand 1 ('iij'): index 'i' (axis 1) has size 3 but operand 0 ('ij') gives it size 2"]),
    # the axes under ...
    ("...i,...i", [(2, 3), (3, 3)], einsat.ShapeError,
     ["operand 1 ('...i'): axis 0 (under ...) has size 3", "operand 0 ('...i') has size 2"]),
    ("...i,...i->...", [(4, 2, 3), (4, 3, 3)], einsat.ShapeError, ["axis 1 (under ...)", "operand 0 ('...i')"]),
    # letters beyond ASCII
    ("i×,×j->ij", [(2, 3), (4, 3)], einsat.ShapeError, ["operand 1 ('×j'): index '×' has size 4"]),
    # ranks and counts
    ("ij->ij", [(3,)], einsat.ShapeError, ["operand 0 has 1 axes", "`ij`"]),
    ("ij,j->i", [(2, 3)], einsat.ShapeError, ["the spec has 2 operands but 1 was given"]),
    ("ij,j->i", [(2, 3), (3,), (3,)], einsat.ShapeError, ["the spec has 2 operands but 3 were given"]),
    ("i,j->ij", [(), (3,)], einsat.ShapeError, ["operand 0 has 0 axes", "`i`"]),
    ("i,i->", [(3,), (3, 3)], einsat.ShapeError, ["operand 1 has 2 axes", "`i`"]),
    # grammar
    ("ij->k", [(2, 3)], einsat.ParseError, ["output index `k`", "column 5"]),
    ("ij->ii", [(2, 3)], einsat.ParseError, ["output index `i` appears twice"]),
    ("ij->i->j", [(2, 3)], einsat.ParseError, ["`->` appears more than once"]),
    ("i.j", [(2, 3)], einsat.ParseError, ["`.` appears only as part of `...`"]),
    ("i1", [(2, 3)], einsat.ParseError, ["`1` is not an index letter"]),
    ("...i->i", [(2, 3)], einsat.ShapeError, ["axes under `...` but the output has no `...`"]),
]


def internal_names(message, spec):
    """The names in `message` that are einsat's, not the user's: quoted
    single letters the spec does not have (parameter names, the letters of
    the axes under `...`), size names, argument names."""
    bad = []
    for q in re.findall(r"'([^'\s])'|`([^`\s])`", message):
        c = q[0] or q[1]
        if c not in spec and c not in ".,->":
            bad.append(c)
    bad += re.findall(r"`n[A-Za-z]\w*`", message)
    bad += re.findall(r"argument `", message)
    bad += re.findall(r"\bT\d+\b", message)
    bad += re.findall(r"named \w+ twice", message)
    return bad


def shapes_to_ops(shapes):
    return [np.ones(s) if s != () else 2.0 for s in shapes]


@pytest.mark.parametrize("entry", sorted(ENTRY))
@pytest.mark.parametrize("spec,shapes,exc,says", CASES)
def test_messages_in_the_users_terms(entry, spec, shapes, exc, says):
    with pytest.raises(exc) as e:
        ENTRY[entry](spec, *shapes_to_ops(shapes))
    m = str(e.value)
    for s in says:
        assert s in m, (m, s)
    assert not internal_names(m, spec), m


def test_many_operands_name_positions_past_26():
    # operands past the 26th are `T26`, ... inside einsat
    n = 30
    letters = [einsat.get_symbol(k) for k in range(n + 1)]
    spec = ",".join(letters[k] + letters[k + 1] for k in range(n)) + "->" + letters[0] + letters[n]
    ops = [np.ones((2, 2)) for _ in range(n)]
    ops[28] = np.ones((3, 2))
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum(spec, *ops)
    m = str(e.value)
    assert "operand 28 ('%s%s')" % (letters[28], letters[29]) in m
    assert "operand 27" in m
    assert not internal_names(m, spec), m


def test_out_errors():
    a, b = np.ones((2, 3)), np.ones((3, 5))
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum("ij,jk->ik", a, b, out=np.ones((2, 2)))
    m = str(e.value)
    assert "out has shape [2, 2]" in m and "the result ('ik') has shape [2, 5]" in m
    assert not internal_names(m, "ij,jk->ik"), m
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum("ij,jk", a, b, out=np.ones((3, 3)))
    assert "out has shape [3, 3]" in str(e.value)
    ro = np.ones((2, 5))
    ro.flags.writeable = False
    with pytest.raises(einsat.ShapeError, match="out cannot be written: the array is read-only"):
        einsat.einsum("ij,jk->ik", a, b, out=ro)


def test_out_overlapping_an_operand():
    a = np.ones((2, 2))
    with pytest.raises(einsat.ShapeError, match="out overlaps operand 1") as e:
        einsat.einsum("ij,jk->ik", np.ones((2, 2)), a, out=a)
    assert not internal_names(str(e.value), "ij,jk->ik")


def test_too_large_operands_and_results():
    big = np.broadcast_to(0.0, (2**16 + 1,))
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum("i,j->ij", big, big)
    m = str(e.value)
    assert "too large" in m, m
    assert not internal_names(m, "i,j->ij"), m
    huge = np.broadcast_to(0.0, (2**31 + 1,))
    with pytest.raises((einsat.ShapeError, einsat.OutOfMemoryError)) as e:
        einsat.einsum("i,i->", huge, huge)
    m = str(e.value)
    assert not internal_names(m, "i,i->"), m


def test_option_and_dtype_errors():
    a = np.ones((2, 3))
    with pytest.raises(einsat.OptionError, match="optimize=.bogus.: not a path optimizer"):
        einsat.einsum("ij,jk->ik", a, a.T, optimize="bogus")
    with pytest.raises(einsat.OptionError, match="step 0 names position 5"):
        einsat.einsum("ij,jk->ik", a, a.T, optimize=[(0, 5)])
    with pytest.raises(einsat.DTypeError, match="operand 1"):
        einsat.einsum("ij,jk->ik", a, np.array([["x"] * 2] * 3))
    with pytest.raises(einsat.OptionError, match="memory_limit"):
        einsat.einsum("ij,jk->ik", a, a.T, memory_limit="x")


def test_interleaved_form_messages():
    a, b = np.ones((2, 3)), np.ones((4, 5))
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum(a, [0, 1], b, [1, 2], [0, 2])
    m = str(e.value)
    assert "operand 1" in m and "operand 0" in m
    assert "in the interleaved form's letters: 0 is A, 1 is B, 2 is C" in m
    for f in (einsat.contract, einsat.einsum_path):
        with pytest.raises(einsat.ShapeError) as e:
            f(a, [0, 1], b, [1, 2], [0, 2])
        assert str(e.value).count("interleaved form's letters") == 1
    with pytest.raises(einsat.ParseError, match="5 is F"):
        einsat.einsum(a, [0, 1], [5])


def test_contract_expression_messages():
    e = einsat.contract_expression("ij,jk->ik", (2, 3), (3, 4))
    with pytest.raises(einsat.ShapeError, match="takes 2 operands but 1 was given"):
        e(np.ones((2, 3)))
    with pytest.raises(einsat.ShapeError, match=r"operand 1 has shape \[4, 5\]"):
        e(np.ones((2, 3)), np.ones((4, 5)))
