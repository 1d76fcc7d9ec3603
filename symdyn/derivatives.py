"""Derivatives of inverse and forward dynamics, with reference routes to compare against.

``method="idsva"`` (inverse dynamics) and ``"dmm"``/``"aza"``/``"auto"`` (forward dynamics) run the
analytical algorithms of :mod:`symdyn.algorithms.rnea_derivatives` and
:mod:`symdyn.algorithms.aba_derivatives` on any backend. The references work at numbers only and
return NumPy arrays:

* ``"ad"``: CasADi automatic differentiation of the generic ``rnea``/``aba`` traced on SX
  (:func:`symdyn.autodiff.ad_jacobians`), exact to rounding;
* ``"fd"``: central differences of the NumPy ``rnea``/``aba``, step ``h`` (default eps^(1/3)),
  error O(h^2) + O(eps/h). Configuration steps are taken in the tangent space, ``q (+) (+-h e_k)``
  through :meth:`Model.integrate`. (The complex step is not offered: the NumPy backend computes in
  float64, so an imaginary perturbation would be discarded.)

All q-derivatives are in the tangent space (nv columns), Pinocchio's convention; spatial vectors are
[angular; linear]; ``f_ext[i]`` is a force [n; f] on body i in body coordinates.
"""
from __future__ import annotations

import numpy as np

from .algorithms.aba import aba
from .algorithms.aba_derivatives import METHODS as FD_METHODS
from .algorithms.aba_derivatives import aba_derivatives as _aba_derivatives
from .algorithms.rnea import rnea
from .algorithms.rnea_derivatives import rnea_derivatives as _rnea_derivatives

ID_METHODS = ("idsva", "ad", "fd")
ABA_METHODS = FD_METHODS + ("ad", "fd")
H_DEFAULT = float(np.finfo(float).eps) ** (1 / 3)


def rnea_derivatives(model, q, qd, qdd, f_ext=None, method: str = "idsva", *,
                     backend: str | None = None, h: float = H_DEFAULT):
    """``(dtau_dq, dtau_dqd)`` of ``rnea(model, q, qd, qdd, f_ext)``, nv x nv each.

    ``method``: ``"idsva"`` (paper 003 Algorithm 1, any backend), ``"ad"`` or ``"fd"`` (references at
    numbers, NumPy arrays; see the module docstring).
    """
    if method == "idsva":
        return _rnea_derivatives(model, q, qd, qdd, f_ext, backend=backend)
    if method not in ID_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(ID_METHODS)}")
    q, qd, qdd = _numeric(model, backend, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"))

    def fn(m, q_, qd_, qdd_, backend=None):
        return rnea(m, q_, qd_, qdd_, f_ext, backend=backend)

    if method == "ad":
        return _ad(model, fn, (q, qd, qdd), 2)
    return _fd(model, fn, (q, qd, qdd), 2, h)


def aba_derivatives(model, q, qd, tau, f_ext=None, method: str = "auto", *,
                    backend: str | None = None, h: float = H_DEFAULT):
    """``(dqdd_dq, dqdd_dqd, Minv)`` of ``aba(model, q, qd, tau, f_ext)``; ``Minv = dqdd/dtau``.

    ``method``: ``"auto"``, ``"dmm"``, ``"aza"`` (eq. (5) with IDSVA, any backend), ``"ad"`` or
    ``"fd"`` (references at numbers, NumPy arrays).
    """
    if method in FD_METHODS:
        return _aba_derivatives(model, q, qd, tau, f_ext, method, backend=backend)
    if method not in ABA_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(ABA_METHODS)}")
    q, qd, tau = _numeric(model, backend, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"))

    def fn(m, q_, qd_, tau_, backend=None):
        return aba(m, q_, qd_, tau_, f_ext, backend=backend)

    if method == "ad":
        return _ad(model, fn, (q, qd, tau), 3)
    return _fd(model, fn, (q, qd, tau), 3, h)


def _numeric(model, backend, *args):
    """Validate numeric inputs for the reference routes (NumPy vectors)."""
    from .algorithms.common import entry

    if backend not in (None, "numpy"):
        raise ValueError(f"the 'ad' and 'fd' routes work at numbers (NumPy); backend={backend!r} "
                         "is not available for them")
    B, segs = entry(model, *args)
    if B.name != "numpy":
        raise TypeError("the 'ad' and 'fd' routes need numeric inputs, got symbolic ones")
    return [np.concatenate([np.atleast_1d(s) for s in seg]) for seg in segs]


def _ad(model, fn, args, n_wrt):
    from .autodiff import ad_jacobians

    out = ad_jacobians(model, fn, list(args), ["q", "v", "v"], list(range(n_wrt)))
    return tuple(out[1:])


def _fd(model, fn, args, n_wrt, h):
    """Central differences of fn(model, *args) (NumPy); q steps in the tangent space."""
    if not (isinstance(h, (int, float)) and np.isfinite(h) and h > 0):
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
                plus[0] = model.integrate(args[0], e)
                minus[0] = model.integrate(args[0], -e)
            else:
                plus[k] = args[k] + e
                minus[k] = args[k] - e
            J[:, c] = (fn(model, *plus) - fn(model, *minus)) / (2 * h)
        out.append(J)
    return tuple(out)
