"""Helpers for tests/test_matrix.py: symbolic calls on every backend (SymEngine included),
evaluation of any result structure at numbers, and independent references built with CasADi AD.

Kept apart from conftest.py so that the matrix does not depend on how conftest's ``run`` and
``evaluate`` treat SymEngine or the Christoffel result structure (ndarray, NDimArray, list of pages,
or a ``symdyn.backends.Tensor3`` with ``.pages``).
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import sympy as sp

import symdyn as sd
from symdyn.backends import get_backend

try:  # SymEngine is optional
    import symengine as se
except ImportError:  # pragma: no cover - depends on the environment
    se = None


# --- symbols and constants per backend ---------------------------------------------------------

def symbols(backend: str, name: str, n: int):
    """(column of n fresh symbols in ``backend``, list of the scalar symbols)."""
    if backend == "sympy":
        syms = list(sp.symbols(f"{name}_0:{n}"))
        return sp.Matrix(syms), syms
    if backend == "symengine":
        syms = [se.Symbol(f"{name}_{k}") for k in range(n)]
        return se.DenseMatrix([[s] for s in syms]), syms
    s = ca.SX.sym(name, n)
    return s, [s]


def constant(backend: str, x):
    """A numeric vector as a constant of ``backend`` (keeps SymPy away from symbolic q)."""
    arr = np.asarray(x, float).reshape(-1)
    if backend == "sympy":
        return sp.Matrix([sp.Float(float(v)) for v in arr])
    if backend == "symengine":
        return se.DenseMatrix([[se.RealDouble(float(v))] for v in arr])
    return ca.SX(ca.DM(arr.reshape(-1, 1)))


class Point:
    """The numbers at which a symbolic backend's results are evaluated."""

    def __init__(self, backend: str):
        self.backend = backend
        self.syms: list = []
        self.vals: list = []

    def add(self, syms, vals):
        vals = np.asarray(vals, float).reshape(-1)
        if self.backend == "casadi":
            self.syms += syms
            self.vals.append(vals)
        else:
            self.syms += syms
            self.vals += [float(v) for v in vals]

    # -- evaluation --------------------------------------------------------------------------
    def matrix(self, x) -> np.ndarray:
        """A native matrix/vector/scalar of this backend as a float ndarray of its shape."""
        if isinstance(x, np.ndarray) and x.dtype != object:
            return np.asarray(x, float)
        if self.backend == "casadi":
            if isinstance(x, ca.DM):
                return np.array(x, float)
            f = ca.Function("f", self.syms, [ca.SX(x)])
            return np.array(f(*self.vals), float)
        if self.backend == "sympy":
            return get_backend("sympy").evaluate(x, dict(zip(self.syms, self.vals)))
        if self.backend == "symengine":
            sub = {s: se.RealDouble(v) for s, v in zip(self.syms, self.vals)}
            if isinstance(x, se.DenseMatrix):
                y = x.subs(sub)
                return np.array([[float(y[i, j]) for j in range(y.shape[1])]
                                 for i in range(y.shape[0])], float)
            return np.array(float(se.sympify(x).subs(sub)))
        return np.asarray(x, float)

    def many(self, xs) -> list:
        """Several native matrices at once (one CasADi Function for all of them)."""
        xs = list(xs)
        if self.backend == "casadi" and xs and not all(isinstance(x, np.ndarray) for x in xs):
            f = ca.Function("f", self.syms, [ca.SX(x) for x in xs])
            out = f(*self.vals)
            out = out if isinstance(out, (list, tuple)) else [out]
            return [np.array(o, float) for o in out]
        return [self.matrix(x) for x in xs]

    def gamma(self, G) -> np.ndarray:
        """Christoffel symbols as a float (nv, nv, nv) array from any of the result structures:
        ndarray, SymPy NDimArray, list of pages, or an object with ``.pages`` (pages[k] =
        Gamma[:, :, k]); ``B.pages`` is used where the backend provides it."""
        if isinstance(G, np.ndarray) and G.dtype != object:
            return np.asarray(G, float)
        pages = getattr(G, "pages", None)
        if pages is None:
            fn = getattr(get_backend(self.backend), "pages", None)
            if fn is not None and not isinstance(G, sp.NDimArray):
                try:
                    pages = list(fn(G))
                except Exception:  # noqa: BLE001 - older contract: fall through
                    pages = None
        if pages is None and isinstance(G, (list, tuple)):
            pages = list(G)
        if pages is not None:
            return np.stack(self.many(pages), axis=2)
        if isinstance(G, sp.NDimArray):
            return get_backend("sympy").evaluate(G, dict(zip(self.syms, self.vals)))
        return np.asarray(G, float)


def call(backend: str, fn, model, args, kinds, numeric=(), **kw):
    """``fn(model, *args)`` on ``backend`` with symbols for the arguments (except the positions
    in ``numeric``, passed as constants); returns (native result, Point to evaluate it)."""
    pt = Point(backend)
    if backend == "numpy":
        return fn(model, *args, **kw), pt
    ins = []
    for k, (a, kind) in enumerate(zip(args, kinds)):
        if k in numeric:
            ins.append(constant(backend, a))
            continue
        x, syms = symbols(backend, f"{kind}{k}", np.size(a))
        pt.add(syms, a)
        ins.append(x)
    return fn(model, *ins, **kw), pt


# --- independent references (CasADi AD at numbers) ---------------------------------------------

def tangent_jacobian(model, fn, q, *rest):
    """J[..., k] = d/de_k fn(model, q (+) e, *rest) at e = 0, by CasADi AD of the algorithm
    traced on SX (q (+) e through sd.integrate); shape fn's shape + (nv,)."""
    e = ca.SX.sym("e", model.nv)
    qe = sd.integrate(model, ca.SX(ca.DM(np.asarray(q, float))), e, backend="casadi")
    rest_ca = [ca.SX(ca.DM(np.asarray(r, float))) for r in rest]
    y = ca.SX(fn(model, qe, *rest_ca, backend="casadi"))
    J = np.array(ca.Function("J", [e], [ca.jacobian(ca.vec(y), e)])(np.zeros(model.nv)), float)
    if y.shape[1] == 1:
        return J.reshape(y.shape[0], model.nv)
    return J.reshape(tuple(y.shape) + (model.nv,), order="F")


def velocity_jacobian(model, fn, q, qd, *rest):
    """d/de fn(model, q, qd + e, *rest) at e = 0 by CasADi AD (a vector fn: nv x nv)."""
    e = ca.SX.sym("e", model.nv)
    args = [ca.SX(ca.DM(np.asarray(x, float))) for x in (q, qd) + rest]
    args[1] = args[1] + e
    y = ca.SX(fn(model, *args, backend="casadi"))
    return np.array(ca.Function("J", [e], [ca.jacobian(y, e)])(np.zeros(model.nv)), float)


def mass_matrix_derivative(model, q) -> np.ndarray:
    """dM[:, :, k] = dM/de_k (q (+) e) at e = 0 (tangent space), from CRBA by CasADi AD."""
    return tangent_jacobian(model, sd.crba, q)


def christoffel_eq4(dM) -> np.ndarray:
    """Eq. (4) from the tangent derivative of M (generalized coordinates only):
    Gamma[i, j, k] = 1/2 (dM[i, j, k] + dM[i, k, j] - dM[j, k, i])."""
    return 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
