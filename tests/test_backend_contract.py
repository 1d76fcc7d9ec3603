"""The backend contract (symdyn/backends/__init__.py) run over all five backends: every function
exists with the documented behaviour, values agree with NumPy, bad inputs raise the same exception
types, the safe helpers are exact near 0 (and CasADi's are differentiable there), and every
algorithm returns the same structure on every backend (rank 3: ndarray / Tensor3)."""
from __future__ import annotations

import importlib.util
import math
import pathlib
import re
import tokenize

import casadi as ca
import mpmath
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.backends import (BACKENDS, Backend, BackendError, Tensor3, get_backend, kind_of,
                             resolve_backend)
from symdyn.joints import Floating, Revolute, Spherical, _quat_exp, _se3_left_jacobian
from symdyn.model import Body, Model
from symdyn.models import serial_chain

HAVE_SYMENGINE = importlib.util.find_spec("symengine") is not None
HAVE_JAX = importlib.util.find_spec("jax") is not None
if HAVE_JAX:
    import jax
    jax.config.update("jax_enable_x64", True)     # symdyn refuses JAX's default float32
MISSING = {"symengine": not HAVE_SYMENGINE, "jax": not HAVE_JAX}
ALL = [pytest.param(b, marks=pytest.mark.skipif(MISSING.get(b, False), reason=f"{b} not installed"))
       for b in BACKENDS]
# JAX: values that are numbers but may be tracers: neither numeric nor graph; 1-D vectors and a
# rank-3 array like NumPy ("array-like" backends below)
ARRAY_LIKE = ("numpy", "jax")

FUNCTIONS = ("zeros", "eye", "matrix", "vector", "const", "rows", "cols", "vcat", "hcat", "block",
             "inv", "solve", "dot", "skew", "sin", "cos", "sqrt", "is_zero", "is_symbol",
             "tensor3", "set3", "page", "pages", "to_vector", "to_matrix", "to_numpy",
             "sin_over_x", "one_minus_cos_over_x2", "x_minus_sin_over_x3", "assign", "assign3",
             "concrete", "constant_scope", "sign", "atan2", "where_positive", "call_step",
             "model_constants")


@pytest.fixture(params=ALL)
def B(request):
    return get_backend(request.param)


def num(B, x) -> np.ndarray:
    """Float array of a constant backend result (vectors flattened)."""
    a = B.to_numpy(x)
    return a.reshape(-1) if a.ndim == 2 and a.shape[1] == 1 else a


def scalar(B, x) -> float:
    return float(np.asarray(B.to_numpy(B.vector([x]))).reshape(-1)[0])


# --- functions and capabilities ------------------------------------------------------------------

def test_every_function_and_capability(B):
    missing = [f for f in FUNCTIONS if not callable(getattr(B, f, None))]
    assert not missing, f"{B.name} lacks {missing}"
    assert isinstance(B.numeric, bool) and isinstance(B.graph, bool)
    assert B.graph is (not B.numeric) or B.name == "jax"      # JAX: neither
    assert B.numeric is (B.name == "numpy") and B.graph is (B.name not in ARRAY_LIKE)
    assert callable(getattr(B, "jacobian", None)) is B.graph      # graph backends differentiate
    assert not hasattr(B, "symbolic")             # replaced by numeric/graph: one way to branch


def test_array_functions_agree_with_numpy(B):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b, c = rng.normal(size=3), rng.normal(size=3)
    Ab, bb, cb = B.const(A), B.const(b), B.const(c)
    vec_shape = (3,) if B.name in ARRAY_LIKE else (3, 1)
    assert tuple(bb.shape) == vec_shape and tuple(B.zeros(3).shape) == vec_shape
    assert tuple(B.vector([1, 2, 3]).shape) == vec_shape
    assert tuple(B.zeros(2, 3).shape) == (2, 3) and tuple(B.rows(bb, 1, 3).shape)[0] == 2
    close = dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(num(B, B.eye(3)), np.eye(3))
    np.testing.assert_allclose(num(B, B.matrix([[1, 2], [3, 4]])), [[1, 2], [3, 4]])
    np.testing.assert_allclose(num(B, B.rows(bb, 1, 3)), b[1:3])
    np.testing.assert_allclose(num(B, B.cols(Ab, 1, 3)), A[:, 1:3])
    np.testing.assert_allclose(num(B, B.vcat([bb, cb])), np.concatenate([b, c]))
    np.testing.assert_allclose(num(B, B.hcat([Ab, B.cols(Ab, 0, 1)])), np.hstack([A, A[:, :1]]))
    np.testing.assert_allclose(num(B, B.block([[Ab, Ab], [B.eye(3), B.zeros(3, 3)]])),
                               np.block([[A, A], [np.eye(3), np.zeros((3, 3))]]))
    np.testing.assert_allclose(num(B, B.inv(Ab)), np.linalg.inv(A), **close)
    np.testing.assert_allclose(num(B, B.solve(Ab, bb)), np.linalg.solve(A, b), **close)
    np.testing.assert_allclose(scalar(B, B.dot(bb, cb)), b @ c, **close)
    S = num(B, B.skew(bb))
    np.testing.assert_allclose(S @ c, np.cross(b, c), **close)
    np.testing.assert_allclose(S, -S.T)
    np.testing.assert_allclose(num(B, Ab @ bb), A @ b, **close)
    assert B.is_zero(B.zeros(2, 2)) and not B.is_zero(Ab)
    assert not B.is_symbol(bb[0])
    # assign: x[r, c] = v, returned (in place or a new array); ints and slices
    X = B.assign(B.zeros(3, 3), slice(0, 2), slice(1, 3), B.cols(B.rows(Ab, 0, 2), 0, 2))
    X = B.assign(X, 2, 0, bb[1])
    ref = np.zeros((3, 3))
    ref[0:2, 1:3], ref[2, 0] = A[0:2, 0:2], b[1]
    np.testing.assert_allclose(num(B, X), ref)
    assert B.concrete(bb) is (B.name in ARRAY_LIKE)
    with B.constant_scope():
        np.testing.assert_allclose(num(B, B.const(A) @ B.const(b)), A @ b, **close)


def test_atan2_and_where_positive_agree_with_numpy(B):
    """The two branch functions, on constants of every backend: atan2 in all four quadrants and
    on the axes, where_positive on both sides of 0 and at 0 (b: the condition is x > 0)."""
    for y, x in [(1.0, 2.0), (1.0, -2.0), (-1.0, -2.0), (-1.0, 2.0), (0.0, 1.0), (1.0, 0.0)]:
        assert abs(scalar(B, B.atan2(y, x)) - np.arctan2(y, x)) < 1e-15
    for x, want in [(0.5, 2.0), (0.0, 3.0), (-0.5, 3.0)]:
        assert scalar(B, B.where_positive(x, 2.0, 3.0)) == want


def test_where_positive_stays_symbolic_on_graph_backends():
    """A symbol condition gives an expression with both branches, valued by substitution."""
    import sympy as sp
    x = sp.Symbol("x", real=True)
    e = get_backend("sympy").where_positive(x, x ** 2, -x)
    assert e.subs(x, 2) == 4 and e.subs(x, -3) == 3 and e.subs(x, 0) == 0
    import casadi as ca
    s = ca.SX.sym("s")
    f = ca.Function("f", [s], [get_backend("casadi").where_positive(s, s * s, -s)])
    assert float(f(2.0)) == 4.0 and float(f(-3.0)) == 3.0 and float(f(0.0)) == 0.0


def test_is_symbol_on_graph_backends():
    assert get_backend("sympy").is_symbol(sp.Symbol("x"))
    assert not get_backend("sympy").is_symbol(sp.Symbol("x") + 1)
    assert get_backend("casadi").is_symbol(ca.SX.sym("x"))
    assert not get_backend("casadi").is_symbol(2 * ca.SX.sym("x"))


# --- rank 3 --------------------------------------------------------------------------------------

def _filled(B, n1=2, n2=3, n3=4):
    T = B.tensor3(n1, n2, n3)
    ref = np.arange(n1 * n2 * n3, dtype=float).reshape(n1, n2, n3) + 1
    for i in range(n1):
        for j in range(n2):
            for k in range(n3):
                T = B.set3(T, i, j, k, float(ref[i, j, k]))   # returns T (JAX: a new array)
    return T, ref


def test_rank3_contract(B):
    T, ref = _filled(B)
    assert T.shape == (2, 3, 4) and T.ndim == 3 and len(T) == 2
    if B.numeric:
        assert isinstance(T, np.ndarray)
    elif B.name == "jax":
        assert isinstance(T, B.ndarray) and kind_of(T) == "jax"
    else:
        assert isinstance(T, Tensor3) and all(isinstance(p, B.ndarray) for p in T.pages)
        assert kind_of(T) == B.name
    np.testing.assert_array_equal(B.to_numpy(T), ref)
    pages = B.pages(T)
    assert len(pages) == 4
    for k in range(4):
        page = B.page(T, k)
        assert tuple(page.shape) == (2, 3)
        np.testing.assert_array_equal(num(B, page), ref[:, :, k])
        np.testing.assert_array_equal(num(B, pages[k]), ref[:, :, k])
        np.testing.assert_array_equal(num(B, T[:, :, k]), ref[:, :, k])
    assert scalar(B, T[1, 2, 3]) == ref[1, 2, 3]
    assert scalar(B, T[-1, 0, -2]) == ref[-1, 0, -2]                 # ndarray's negative indices
    if B.name != "jax":                          # JAX arrays are immutable: B.set3 only
        T[0, 1, 2] = 7.5
        assert scalar(B, T[0, 1, 2]) == 7.5 and scalar(B, B.page(T, 2)[0, 1]) == 7.5
        with pytest.raises(IndexError):
            T[2, 0, 0]
    T = B.set3(T, 0, 1, 3, -2.5)
    assert scalar(B, T[0, 1, 3]) == -2.5


def test_assign3_writes_blocks_across_pages(B):
    """T[i, j, k] = blk with two of (i, j, k) slices, blk over the sliced axes (NumPy's rule)."""
    rng = np.random.default_rng(3)
    blk = rng.normal(size=(2, 3))
    ref = np.zeros((3, 4, 5))
    T = B.tensor3(3, 4, 5)
    for key in [(slice(0, 2), slice(1, 4), 2), (slice(1, 3), 0, slice(2, 5)),
                (2, slice(2, 4), slice(0, 3))]:
        ref[key] = blk
        T = B.assign3(T, *key, B.const(blk))
    np.testing.assert_array_equal(B.to_numpy(T), ref)


def test_tensor3_refuses_what_it_cannot_do_like_an_ndarray():
    T, _ = _filled(get_backend("casadi"))
    with pytest.raises(TypeError, match="B.pages"):
        list(T)                                  # pages iterate over k, an ndarray over i
    with pytest.raises(IndexError, match=r"T\[:, :, k\]"):
        T[0]
    with pytest.raises(IndexError):
        T[:, 0, 1]
    with pytest.raises(TypeError, match="rank-3"):
        get_backend("casadi").pages([ca.SX(2, 2)])
    with pytest.raises(TypeError, match="rank-3"):
        get_backend("numpy").page(np.zeros((2, 2)), 0)
    with pytest.raises(ValueError, match="page 1"):
        Tensor3([sp.zeros(2, 2), sp.zeros(3, 2)])
    S, ref = _filled(get_backend("sympy"))
    np.testing.assert_array_equal(np.array(S, dtype=float), ref)   # __array__: ndarray of entries


# --- input validation: the same exception types on every backend ----------------------------------

BAD_INPUTS = {
    "wrong length": ([1.0, 2.0, 3.0], ValueError, "x must have"),
    "nan": ([1.0, float("nan")], ValueError, "NaN or inf"),
    "inf": (np.array([float("inf"), 0.0]), ValueError, "NaN or inf"),
    "python complex": ([1.0 + 2.0j, 0.0], TypeError, "complex"),
    "complex array": (np.array([1.0, 2.0], dtype=complex), TypeError, "complex"),
    "sympy complex": ([1 + 2 * sp.I, 0], TypeError, "x"),
    "none": (None, TypeError, "x must be"),
    "scalar": (1.5, ValueError, "x must"),
    "text": ("ab", TypeError, "x must be"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_vectors_raise_the_same_types(B, case):
    x, exc, match = BAD_INPUTS[case]
    with pytest.raises(exc, match=match):
        B.to_vector(x, 2, "x")


@pytest.mark.parametrize("case", ["nan", "complex", "shape"])
def test_bad_matrices_raise_the_same_types(B, case):
    x, exc = {"nan": (np.diag([1.0, np.nan]), ValueError),
              "complex": (np.eye(2) * (1 + 1j), TypeError),
              "shape": (np.eye(3), ValueError)}[case]
    with pytest.raises(exc, match="A"):
        B.to_matrix(x, (2, 2), "A")


def test_complex_input_is_refused_not_truncated():
    """NumPy used to drop the imaginary part with a ComplexWarning and return a wrong answer."""
    model = serial_chain(2, seed=3)
    q = np.array([0.3 + 0.1j, -1.1])
    with pytest.raises(TypeError, match=r"\bq\b.*complex"):
        sd.rnea(model, q, np.zeros(2), np.zeros(2))
    with pytest.raises(TypeError, match=r"\bqd\b.*complex"):
        sd.rnea(model, [0.3, -1.1], [1j, 0], np.zeros(2))
    with pytest.raises(TypeError, match="complex"):
        sd.crba(model, [0.3, 1 + 2 * sp.I])
    with pytest.raises(TypeError, match="complex"):
        sd.crba(model, [0.3, complex(1, 2)], backend="casadi")


def test_casadi_constants_with_nan_or_inf_are_refused():
    """They were accepted and gave NaN results; symbolic SX entries stay accepted."""
    model = serial_chain(2, seed=3)
    with pytest.raises(ValueError, match=r"q contains NaN or inf at index 1"):
        sd.crba(model, ca.SX(ca.DM([0.3, np.nan])))
    x = ca.SX.sym("x")
    with pytest.raises(ValueError, match="qd contains NaN or inf at index 0"):
        sd.rnea(model, ca.vertcat(x, 0.1), ca.vertcat(ca.SX(np.inf), x), ca.SX.zeros(2))
    with pytest.raises(ValueError, match="NaN or inf"):
        get_backend("casadi").to_vector(ca.DM([1.0, -np.inf]), 2, "tau")
    with pytest.raises(ValueError, match=r"A contains NaN or inf at \[1, 0\]"):
        get_backend("casadi").to_matrix(ca.SX(ca.DM([[1, 0], [np.nan, 1]])), (2, 2), "A")
    with pytest.raises(ValueError, match="q contains NaN or inf"):
        sd.crba(model, ca.DM([0.3, np.inf]))                         # DM: numbers (NumPy backend)
    with pytest.raises(ValueError, match="q contains NaN or inf"):
        sd.crba(model, ca.DM([0.3, np.nan]), backend="casadi")
    M = sd.crba(model, ca.vertcat(x, 0.2))                           # mixed symbol/constant: fine
    assert M.shape == (2, 2)


# --- numerically safe helpers ----------------------------------------------------------------------

DEFINITIONS = {
    "sin_over_x": lambda t: mpmath.sin(t) / t,
    "one_minus_cos_over_x2": lambda t: (1 - mpmath.cos(t)) / t ** 2,
    "x_minus_sin_over_x3": lambda t: (t - mpmath.sin(t)) / t ** 3,
}
AT_ZERO = {"sin_over_x": 1.0, "one_minus_cos_over_x2": 0.5, "x_minus_sin_over_x3": 1.0 / 6}
X2 = [1e-300, 1e-16, 1e-8, 1e-4, 0.01, 0.1, 0.5, 2.0, 3.999, 4.0, 4.001, 9.0, 40.0]


def _helper_value(B, fname, x2: float) -> float:
    f = getattr(B, fname)
    if B.name == "casadi":
        s = ca.SX.sym("s")
        return float(ca.Function("f", [s], [f(s)])(x2))
    if B.graph:                                   # exact closed forms: evaluate at 50 digits
        e = sp.sympify(f(B.vector([sp.Symbol("s")])[0]))
        return float(e.subs({v: sp.Rational(repr(x2)) for v in e.free_symbols}).evalf(50))
    return float(f(x2))


@pytest.mark.parametrize("fname", list(DEFINITIONS))
def test_safe_helpers_match_their_definition(B, fname):
    for x2 in X2:
        if B.graph and B.name != "casadi" and x2 < 1e-8:
            continue                              # closed forms: exact, evaluated at 50 digits
        with mpmath.workdps(400):                 # the definitions cancel near 0
            ref = float(DEFINITIONS[fname](mpmath.sqrt(mpmath.mpf(repr(x2)))))
        got = _helper_value(B, fname, x2)
        # relative to the value; far from 0 to the size of the terms (sin x/x near x = 2 pi)
        tol = 4e-16 * (abs(ref) if x2 <= 2 else max(abs(ref), 1 / math.sqrt(x2)))
        assert abs(got - ref) <= tol, (B.name, fname, x2, got, ref)
    if not B.graph or B.name == "casadi":         # exact closed forms are 0/0 at exactly 0
        assert _helper_value(B, fname, 0.0) == AT_ZERO[fname]


@pytest.mark.parametrize("fname", list(DEFINITIONS))
def test_casadi_helpers_are_smooth_at_zero(fname):
    """Value and first two derivatives in x2 at 0 are the series coefficients (finite)."""
    s = ca.SX.sym("s")
    y = getattr(get_backend("casadi"), fname)(s)
    d1 = ca.jacobian(y, s)
    d2 = ca.jacobian(d1, s)
    vals = [float(v) for v in ca.Function("f", [s], [y, d1, d2])(0.0)]
    # series c0 + c1 x2 + c2 x2^2: derivatives c1 and 2 c2
    c = {"sin_over_x": (1, -1 / 6, 1 / 120), "one_minus_cos_over_x2": (1 / 2, -1 / 24, 1 / 720),
         "x_minus_sin_over_x3": (1 / 6, -1 / 120, 1 / 5040)}[fname]
    np.testing.assert_allclose(vals, [c[0], c[1], 2 * c[2]], rtol=1e-14)


def test_numpy_se3_jacobian_and_quat_exp_are_exact_near_zero():
    """The closed forms cancel near 0: (t - sin t)/t^3 lost ~1e-9 at t = 1e-3 before the series."""
    B = get_backend("numpy")
    for t in (1e-3, 3e-3, 1e-2, 0.2):
        w = np.array([0.6, -0.8, 0.0]) * t
        V = _se3_left_jacobian(B, list(w))
        with mpmath.workdps(60):
            tm = mpmath.mpf(t)
            a = float((1 - mpmath.cos(tm)) / tm ** 2)
            b = float((tm - mpmath.sin(tm)) / tm ** 3)
            k, c = float(mpmath.sin(tm / 2) / tm), float(mpmath.cos(tm / 2))
        W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        ref = np.eye(3) + a * W + b * (W @ W)
        np.testing.assert_allclose(V, ref, rtol=1e-15, atol=1e-17)
        q = _quat_exp(B, list(w))
        np.testing.assert_allclose(q, [k * w[0], k * w[1], k * w[2], c],
                                   rtol=1e-15, atol=1e-18)
        np.testing.assert_allclose(b, B.x_minus_sin_over_x3(t * t), rtol=2e-16)


def test_casadi_integrate_is_twice_differentiable_at_zero():
    """q (+) v through the CasADi helpers: finite first and second derivatives at v = 0 (the
    tangent-space derivatives are taken there), first derivatives equal to NumPy's differences."""
    CB = get_backend("casadi")
    q0 = np.array([0.1, -0.2, 0.3, 0.1, 0.5, -0.3, 0.0])
    q0[3:] /= np.linalg.norm(q0[3:])
    v = ca.SX.sym("v", 6)
    qn = Floating().integrate(CB, CB.const(q0), v)
    J, H = ca.jacobian(qn, v), ca.jacobian(ca.jacobian(qn[4], v), v)
    Jv, Hv = (np.array(m) for m in ca.Function("f", [v], [J, H])(np.zeros(6)))
    assert np.all(np.isfinite(Jv)) and np.all(np.isfinite(Hv))
    NB, h = get_backend("numpy"), 1e-6
    fd = np.column_stack([(Floating().integrate(NB, q0, e * h) - Floating().integrate(NB, q0, -e * h))
                          / (2 * h) for e in np.eye(6)])
    np.testing.assert_allclose(Jv, fd, atol=1e-8)
    sph = Spherical().integrate(CB, CB.const([0, 0, 0, 1.0]), ca.SX.sym("w", 3))
    assert sph.shape == (4, 1)


# --- every algorithm: one structure per backend ------------------------------------------------

def _spherical_model():
    return Model([Body("ball", None, Spherical(), 1.5, (0.1, 0.2, 0.3), np.diag([0.3, 0.2, 0.25])),
                  Body("arm", "ball", Revolute("y"), 0.7, (0.0, 0.0, 0.4), np.diag([0.05, 0.06, 0.02]))],
                 name="ball_arm")


MODELS = {"chain2": lambda: serial_chain(2, seed=3), "spherical": _spherical_model}


def _as_backend(B, x):
    """Numbers as the backend's own constant vector (symbols would only slow SymPy down here)."""
    return np.asarray(x, float) if B.numeric else B.const(np.asarray(x, float))


def _native_types(B):
    """(type of vectors and matrices, type of rank-3 results) of backend B."""
    if B.numeric:
        return np.ndarray, np.ndarray
    return B.ndarray, (B.ndarray if B.name in ARRAY_LIKE else Tensor3)


@pytest.mark.parametrize("mname", list(MODELS))
def test_every_algorithm_returns_one_structure(B, mname):
    model = MODELS[mname]()
    rng = np.random.default_rng(7)
    nv = model.nv
    q, qd, qdd = model.random_q(rng), rng.uniform(-1, 1, nv), rng.uniform(-1, 1, nv)
    tau = sd.rnea(model, q, qd, qdd)
    qb, qdb, qddb, taub = (_as_backend(B, x) for x in (q, qd, qdd, tau))
    vec, mat = ((nv,) if B.name in ARRAY_LIKE else (nv, 1)), (nv, nv)
    native, rank3 = _native_types(B)

    def check(x, shape, ref):
        assert isinstance(x, native) and tuple(x.shape) == shape, (type(x), x.shape)
        np.testing.assert_allclose(num(B, x), ref, rtol=1e-10, atol=1e-10)

    check(sd.rnea(model, qb, qdb, qddb), vec, tau)
    check(sd.crba(model, qb), mat, sd.crba(model, q))
    check(sd.aba(model, qb, qdb, taub), vec, qdd)
    for got, ref in zip(sd.coriolis_matrix(model, qb, qdb), sd.coriolis_matrix(model, q, qd)):
        check(got, mat, ref)
    for got, ref in zip(sd.rnea_derivatives(model, qb, qdb, qddb),
                        sd.rnea_derivatives(model, q, qd, qdd)):
        check(got, mat, ref)
    for got, ref in zip(sd.aba_derivatives(model, qb, qdb, taub),
                        sd.aba_derivatives(model, q, qd, tau)):
        check(got, mat, ref)
    G = sd.christoffel(model, qb)
    ref = sd.christoffel(model, q)
    assert G.shape == (nv, nv, nv) and isinstance(G, rank3)
    np.testing.assert_allclose(B.to_numpy(G), ref, rtol=1e-10, atol=1e-10)
    # the convention through the contract alone: C = sum_k Gamma[:, :, k] qd[k]
    C = sd.coriolis_matrix(model, qb, qdb)[2]
    Csum = B.zeros(nv, nv)
    for k, page in enumerate(B.pages(G)):
        assert isinstance(page, native) and tuple(page.shape) == mat
        Csum = Csum + page * qdb[k]
    np.testing.assert_allclose(num(B, Csum), num(B, C), rtol=1e-10, atol=1e-10)


def test_graph_christoffel_pages_are_native_and_symbolic():
    """CasADi/SymPy Tensor3 pages built from symbols evaluate to NumPy's Gamma."""
    model = _spherical_model()
    q = model.random_q(np.random.default_rng(2))
    qs = ca.SX.sym("q", model.nq)
    G = sd.christoffel(model, qs)
    pages = ca.Function("g", [qs], get_backend("casadi").pages(G))(q)
    np.testing.assert_allclose(np.stack([np.array(p) for p in pages], axis=2),
                               sd.christoffel(model, q), atol=1e-12)
    m2 = serial_chain(2, seed=3)
    syms = sp.symbols("q0:2")
    Gs = sd.christoffel(m2, sp.Matrix(syms))
    assert isinstance(Gs, Tensor3) and isinstance(Gs[:, :, 1], sp.MatrixBase)
    at = {s: v for s, v in zip(syms, [0.3, -1.1])}
    np.testing.assert_allclose(get_backend("sympy").evaluate(Gs, at), sd.christoffel(m2, [0.3, -1.1]),
                               atol=1e-12)


# --- no backend branches outside the backends -------------------------------------------------------

BRANCH = re.compile(r"\bB\.symbolic\b|\bB\.name\s*(==|!=|\bin\b|\bnot in\b)|\bbackend\.name\s*(==|!=)")


def test_no_backend_branches_outside_backends():
    root = pathlib.Path(sd.__file__).parent
    bad = [f"{p.relative_to(root)}:{n}: {line.strip()}"
           for p in sorted(root.rglob("*.py")) if "backends" not in p.parts
           for n, line in enumerate(p.read_text().splitlines(), 1) if BRANCH.search(line)]
    assert not bad, "branch on a backend capability (B.numeric / B.graph) or move the " \
                    "difference into a backend function:\n" + "\n".join(bad)


def test_math_helper_module_is_pure():
    """symdyn.backends._series imports nothing but math (NumPy and CasADi share its series)."""
    src = (pathlib.Path(sd.__file__).parent / "backends" / "_series.py").read_text()
    assert re.findall(r"^(?:from|import) (\S+)", src, re.M) == ["__future__", "math"]


# --- the hooks: how an algorithm runs in a backend -------------------------------------------------

def test_hooks_of_the_backend_modules(B):
    """``call_step(fn, args)`` is ``fn(B, *args)``; ``model_constants`` builds the constants once
    per backend, cached in the model, and is what ``Model.constants`` returns."""
    assert isinstance(B, Backend)
    assert B.call_step(lambda B_, a, b: (B_, a, b), (1, None)) == (B, 1, None)
    model = serial_chain(2, seed=1)
    consts = B.model_constants(model)
    assert consts is model.constants(B) is B.model_constants(model)
    np.testing.assert_allclose(num(B, consts.I[1]), np.asarray(model.I[1], dtype=float))


def test_resolve_backend_takes_a_backend_object():
    """A backend module given as an object is checked as its name; another :class:`Backend` is
    used as given; anything else is refused by name."""
    from symdyn.codegen.recursive import Recorder

    x = sp.Matrix(sp.symbols("x0:2"))
    assert resolve_backend(x, backend=get_backend("sympy")) is get_backend("sympy")
    with pytest.raises(BackendError, match="inputs are sympy"):
        resolve_backend(x, backend=get_backend("numpy"))
    recording = Recorder("t").backend
    assert isinstance(recording, Backend) and resolve_backend(x, backend=recording) is recording
    with pytest.raises(BackendError, match="backend must be a name .* or a Backend, got object"):
        resolve_backend(x, backend=object())


def _code_words(path: pathlib.Path, words: set[str]) -> list[str]:
    """Names in ``path``'s code (not its prose) that are one of ``words``, and string literals
    that are such a name (``getattr(B, "recorder")``)."""
    found = []
    with tokenize.open(path) as f:
        for tok in tokenize.generate_tokens(f.readline):
            text = tok.string.strip("\'\"") if tok.type == tokenize.STRING else tok.string
            if tok.type in (tokenize.NAME, tokenize.STRING) and text in words:
                found.append(f"{path.name}:{tok.start[0]}: {tok.line.strip()}")
    return found


def test_core_knows_nothing_of_compiled_forms():
    """model.py and algorithms/ run on whatever backend they are given: no recorder, no codegen
    in their code (algorithms/: not even in their prose); the compiled forms plug in through the
    backend's hooks."""
    root = pathlib.Path(sd.__file__).parent
    algorithms = sorted((root / "algorithms").glob("*.py"))
    bad = [f"{p.name}:{n}: {line.strip()}" for p in algorithms
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"recorder|codegen|\.recursive\b", line)]
    bad += _code_words(root / "model.py", {"recorder", "codegen", "recursive"})
    assert not bad, "the core refers to the compiled forms:\n" + "\n".join(bad)
