"""Reference derivatives of inverse and forward dynamics, to check the analytical algorithms.

The analytical derivatives are :func:`symdyn.rnea_derivatives` (IDSVA, paper 003 Algorithm 1) and
:func:`symdyn.aba_derivatives` (eq. (5) with DMM or AZA); they run on every backend. The routes
here only serve to check them and work at numbers only (NumPy in, NumPy out):

* ``method="ad"``: CasADi automatic differentiation of the generic ``rnea``/``aba`` traced on SX
  (:func:`symdyn.autodiff.ad_jacobians`), exact to rounding;
* ``method="fd"``: central differences of the NumPy ``rnea``/``aba``, step ``h`` (default
  eps^(1/3)), error O(h^2) + O(eps/h). Configuration steps are taken in the tangent space,
  ``q (+) (+-h e_k)`` through :meth:`Model.integrate`. (The complex step is not offered: the NumPy
  backend computes in float64, so an imaginary perturbation would be discarded.)

All q-derivatives are in the tangent space (nv columns), Pinocchio's convention; spatial vectors are
[angular; linear]; ``f_ext[i]`` is a force [n; f] on body i in body coordinates.
"""
from __future__ import annotations

import numpy as np

from .algorithms.aba import aba
from .algorithms.configuration import integrate
from .algorithms.rnea import rnea
from .model import Model
from .types import Array, ExternalForces

__all__ = ["METHODS", "H_DEFAULT", "reference_aba_derivatives", "reference_mass_matrix_rate",
           "reference_rnea_derivatives"]

METHODS = ("ad", "fd")
H_DEFAULT = float(np.finfo(float).eps) ** (1 / 3)


def reference_rnea_derivatives(model: Model, q: Array, qd: Array, qdd: Array,
                               f_ext: ExternalForces = None, method: str = "ad", *,
                               h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """Reference ``(dtau_dq, dtau_dqd)`` of ``rnea(model, q, qd, qdd, f_ext)`` (NumPy, nv x nv
    each) by automatic differentiation (``method="ad"``) or central differences (``"fd"``)."""
    _method(method, "symdyn.rnea_derivatives (IDSVA)")
    q, qd, qdd = _numeric(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"))

    def fn(m, q_, qd_, qdd_, backend=None):
        return rnea(m, q_, qd_, qdd_, f_ext, backend=backend)

    if method == "ad":
        return _ad(model, fn, (q, qd, qdd), 2)
    return _fd(model, fn, (q, qd, qdd), 2, h)


def reference_aba_derivatives(model: Model, q: Array, qd: Array, tau: Array,
                              f_ext: ExternalForces = None, method: str = "ad", *,
                              h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference ``(dqdd_dq, dqdd_dqd, Minv)`` of ``aba(model, q, qd, tau, f_ext)`` (NumPy;
    ``Minv = dqdd/dtau``) by automatic differentiation (``method="ad"``) or central differences
    (``"fd"``)."""
    _method(method, "symdyn.aba_derivatives (eq. (5), DMM or AZA)")
    q, qd, tau = _numeric(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"))

    def fn(m, q_, qd_, tau_, backend=None):
        return aba(m, q_, qd_, tau_, f_ext, backend=backend)

    if method == "ad":
        return _ad(model, fn, (q, qd, tau), 3)
    return _fd(model, fn, (q, qd, tau), 3, h)


def _method(method, analytical: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown reference method {method!r}; choose 'ad' or 'fd' (the "
                         f"analytical derivatives are {analytical})")


def _numeric(model, *args):
    """Validate numeric inputs for the reference routes (NumPy vectors)."""
    from .algorithms.common import entry

    B, segs = entry(model, *args)
    if not B.numeric:
        raise TypeError("the reference derivatives need numeric inputs (NumPy), got symbolic "
                        f"ones ({B.name}); the analytical symdyn.rnea_derivatives / "
                        "aba_derivatives run on every backend")
    return [np.concatenate([np.atleast_1d(s) for s in seg]) for seg in segs]


def _ad(model, fn, args, n_wrt):
    from .autodiff import ad_jacobians

    out = ad_jacobians(model, fn, list(args), ["q", "v", "v"], list(range(n_wrt)))
    return tuple(out[1:])


def _fd(model, fn, args, n_wrt, h):
    """Central differences of fn(model, *args) (NumPy); q steps in the tangent space."""
    if isinstance(h, bool) or not (isinstance(h, (int, float)) and np.isfinite(h) and h > 0):
        raise ValueError(f"finite-difference step h must be a positive number, got {h!r}")
    nv = model.nv
    out = []
    for k in range(n_wrt):
        J = np.empty((nv, nv))
        for c in range(nv):
            e = np.zeros(nv)
            e[c] = h
            plus, minus = list(args), list(args)
            if k == 0:
                plus[0] = integrate(model, args[0], e)
                minus[0] = integrate(model, args[0], -e)
            else:
                plus[k] = args[k] + e
                minus[k] = args[k] - e
            J[:, c] = (fn(model, *plus) - fn(model, *minus)) / (2 * h)
        out.append(J)
    return tuple(out)


def reference_mass_matrix_rate(model: Model, q: Array, qd: Array) -> np.ndarray:
    """Reference ``Mdot(q, qd) = d/dt M(q(t))`` (NumPy) by forward-mode automatic differentiation
    of CRBA along the motion: ``d/de crba(q (+) e qd)`` at e = 0 (tangent space, so quaternion
    joints move by their body velocities). Independent of Algorithm 1, which forms Mdot as
    C + C^T (Prop. 1). ``q`` (nq,) and ``qd`` (nv,) give an nv x nv matrix; stacks of states
    ``(B, nq)`` and ``(B, nv)`` give ``(B, nv, nv)`` from one traced function."""
    import casadi as ca

    from .algorithms.crba import crba

    Q, QD = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    single = Q.ndim == 1
    Q, QD = np.atleast_2d(Q), np.atleast_2d(QD)
    if Q.shape[1:] != (model.nq,) or QD.shape[1:] != (model.nv,) or len(Q) != len(QD):
        raise ValueError(f"q and qd must have shapes ({model.nq},) and ({model.nv},) (or stacks "
                         f"(B, {model.nq}) and (B, {model.nv})), got {Q.shape} and {QD.shape}")
    for what, x in (("q", Q), ("qd", QD)):
        _numeric(model, (what, x[0], "q" if what == "q" else "v"))
    q0, dq, v = ca.SX.sym("q", model.nq), ca.SX.sym("dq", model.nv), ca.SX.sym("qd", model.nv)
    M = crba(model, integrate(model, q0, dq, backend="casadi"), backend="casadi")
    Mdot = ca.substitute(ca.jtimes(ca.vec(M), dq, v), dq, ca.SX.zeros(model.nv))
    f = ca.Function("Mdot", [q0, v], [Mdot]).map(len(Q))
    n = model.nv
    out = np.array(f(Q.T, QD.T), dtype=float).T.reshape(len(Q), n, n).transpose(0, 2, 1)
    return out[0] if single else out
