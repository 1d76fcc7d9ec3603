"""with_inertial_parameters takes pi as a vector (10N,), a column (10N, 1), a row (1, 10N) or an
(N, 10) array with one row per body, whatever holds it (NumPy, SymPy, nested lists); other shapes
are refused with a ValueError naming the accepted ones."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.identification.parameters import inertial_parameters, with_inertial_parameters
from symdyn.models import serial_chain

MODEL = serial_chain(2, seed=3)
N = MODEL.N


def _layouts(flat):
    """The accepted layouts of a flat sequence of 10 N entries, as NumPy arrays, SymPy matrices
    and nested lists."""
    a = np.array(flat, dtype=object)
    out = {}
    for name, shape in (("vector", (10 * N,)), ("column", (10 * N, 1)), ("row", (1, 10 * N)),
                        ("per body", (N, 10))):
        arr = a.reshape(shape)
        out[f"numpy {name}"] = arr if any(isinstance(x, sp.Basic) for x in flat) \
            else arr.astype(float)
        out[f"list {name}"] = arr.tolist()
        if len(shape) == 2:
            out[f"sympy {name}"] = sp.Matrix(arr.tolist())
    out["tuple"] = tuple(flat)
    return out


@pytest.mark.parametrize("layout", list(_layouts(list(range(10 * N)))))
def test_numeric_layouts_give_the_same_model(layout):
    pi = inertial_parameters(MODEL) * 1.5
    m2 = with_inertial_parameters(MODEL, _layouts(list(pi))[layout])
    assert not m2.is_symbolic
    np.testing.assert_allclose(inertial_parameters(m2), pi, rtol=1e-14)
    q = MODEL.random_q(0)
    np.testing.assert_allclose(sd.crba(m2, q), sd.crba(with_inertial_parameters(MODEL, pi), q),
                               rtol=1e-14)


def test_sympy_numbers_give_a_numeric_model():
    pi = inertial_parameters(MODEL)
    m2 = sd.with_inertial_parameters(MODEL, sp.Matrix([sp.Float(x) for x in pi]))
    assert not m2.is_symbolic
    np.testing.assert_allclose(inertial_parameters(m2), pi, rtol=1e-14)


@pytest.mark.parametrize("layout", list(_layouts(list(range(10 * N)))))
def test_symbolic_layouts_give_the_same_model(layout):
    syms = sp.symbols(f"p0:{10 * N}")
    m2 = with_inertial_parameters(MODEL, _layouts(list(syms))[layout])
    assert m2.is_symbolic and list(inertial_parameters(m2)) == list(syms)


@pytest.mark.parametrize("shape", [(4, 5), (10, N), (N, 10, 1), (5, 2, 2)])
def test_other_shapes_are_refused(shape):
    pi = inertial_parameters(MODEL).reshape(shape)
    for given in (pi, pi.tolist()) + ((sp.Matrix(pi.tolist()),) if len(shape) == 2 else ()):
        with pytest.raises(ValueError, match=rf"\(N, 10\) = \({N}, 10\).*got shape"):
            with_inertial_parameters(MODEL, given)


def test_wrong_count_and_bad_entries():
    pi = inertial_parameters(MODEL)
    with pytest.raises(ValueError, match="10 N"):
        with_inertial_parameters(MODEL, pi[:-1].reshape(-1, 1))
    with pytest.raises(ValueError, match="got a float"):
        with_inertial_parameters(MODEL, 1.0)
    ragged = [list(pi[:10]), list(pi[10:19])]
    with pytest.raises(ValueError, match="entry 0 is a list"):
        with_inertial_parameters(MODEL, ragged)


def test_armature_entries_in_a_column_or_row():
    """With armature=True pi has 10 N + nv entries: a vector, column or row; no (N, 10) layout
    holds the armature, so that shape is refused."""
    model = MODEL.replace(armature=[0.1, 0.2])
    full = inertial_parameters(model, armature=True)
    for given in (full.reshape(-1, 1), full.reshape(1, -1), sp.Matrix(full.tolist())):
        m2 = with_inertial_parameters(model, given, armature=True)
        np.testing.assert_allclose(inertial_parameters(m2, armature=True), full, rtol=1e-14)
    with pytest.raises(ValueError, match=r"a column \(22, 1\).*got shape \(2, 10\)"):
        with_inertial_parameters(model, full[:20].reshape(N, 10), armature=True)
