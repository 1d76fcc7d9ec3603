"""C* by differentiating the bias vector, with the structure-constant correction for generalized
speeds (paper 001 Sec. VI-D, eqs. (29)-(32)).

This module imports CasADi (it differentiates symdyn's RNEA with ``casadi.jacobian``) and NumPy;
it is the one place in :mod:`symdyn.constrained` that is not written over the generic backends.

Derivation. With ``(C nu)_i = sum_jk Gamma_ijk nu_j nu_k`` (the bias without gravity),
``D = d(C nu)/d nu`` has ``D_ij = C*_ij + sum_k Gamma_ikj nu_k`` (29). For the Riemannian
connection ``Gamma_ijk - Gamma_ikj = <X_i, [X_k, X_j]> = sum_l M_il c^l_kj`` (torsion-free, (30))
with structure constants ``[X_k, X_j] = c^l_kj X_l`` of the basis fields of the speeds. Hence (31)

    C*(q, nu) = 1/2 [D + M Xi(q, nu)],   Xi[l, j] = sum_k c^l_kj nu_k.

For an open chain the fields of different joints commute, so Xi is block diagonal (32): for
joint K with motion subspace S (6 x n, body coordinates) the body twist of ``[X_k, X_j]`` is
``w_kj = phi_k x phi_j + d_k phi_j - d_j phi_k`` (``d_k phi_j = dPhiring/dnu_k e_j``; zero for
constant S), so ``Xi_K = Psi^T [(S nu_K) x S + Phiring(nu_K) - (dPhiring/dnu_j nu_K)_j]`` with the
dual vectors ``Psi`` (``Psi^T S = 1``). Completing S by an orthogonal complement ``S_perp``,
``[S S_perp]^-T = [S (S^T S)^-1, S_perp (S_perp^T S_perp)^-1]``, so ``Psi = S (S^T S)^-1``; the
result does not depend on the complement because every ``w_kj`` lies in span(S) (checked).
Spherical joints give the so(3) bracket, floating ones the se(3) bracket; revolute, prismatic,
helical and planar joints (generalized coordinates) give Xi_K = 0.
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from ..algorithms.common import entry
from ..algorithms.crba import crba
from ..algorithms.rnea import rnea
from ..backends import get_backend
from ..spatial import cross_motion

_CA = get_backend("casadi")


def _q_casadi(model, q):
    """q as a CasADi SX column (validated; numbers checked for unit quaternions)."""
    if isinstance(q, ca.MX):
        raise TypeError("q is a casadi.MX; use casadi.SX or numbers")
    if isinstance(q, ca.SX):
        return _CA.to_vector(q, model.nq, "q"), True
    entry(model, ("q", q, "q"), backend="numpy")
    return ca.SX(ca.DM(np.asarray(q, float).reshape(-1, 1))), False


def _structure_blocks(model, qv, nu, check: bool):
    """Per joint: Xi_K(q, nu_K) (n x n SX), eq. (32)."""
    Bc = _CA
    blocks = []
    for i, joint in enumerate(model.joints):
        (a, b), (c, d) = model.q_idx[i], model.v_idx[i]
        qi, nui = qv[a:b], nu[c:d]
        n = d - c
        S = joint.calc(Bc, qi)[1]
        W = cross_motion(Bc, S @ nui, S)                                      # phi_k x phi_j nu_k
        if not joint.S_constant:
            units = [Bc.vector([1 if t == s else 0 for t in range(n)]) for s in range(n)]
            W = W + joint.Sring(Bc, qi, nui) \
                - Bc.hcat([joint.Sring(Bc, qi, units[s]) @ nui for s in range(n)])
        Psi = S @ Bc.inv(S.T @ S)                                             # dual vectors
        Xi = Psi.T @ W
        if check:
            res = ca.Function("res", [nu], [W - S @ Xi])
            for s in range(n):
                e = np.zeros(model.nv)
                e[c + s] = 1.0
                r = float(np.abs(np.array(res(e))).max())
                if r > 1e-9:
                    raise ValueError(f"joint {i} ({model.names[i]!r}): the Lie bracket of its speed "
                                     f"fields leaves span(S) (residual {r:.2e}); eq. (32) needs a "
                                     "joint whose motion subspace is closed under the bracket")
        blocks.append(Xi)
    return blocks


def structure_matrix(model, q, nu):
    """``Xi(q, nu)`` (nv x nv, block diagonal): ``Xi[l, j] = sum_k c^l_kj nu_k`` (eq. (32)).
    ``q``, ``nu``: numbers or CasADi SX; returns a NumPy array for numbers, else SX."""
    qv, sym = _q_casadi(model, q)
    nus = ca.SX.sym("nu", model.nv)
    blocks = _structure_blocks(model, qv, nus, check=not sym)
    Xi = ca.SX(model.nv, model.nv)
    for i, blk in enumerate(blocks):
        c, d = model.v_idx[i]
        Xi[c:d, c:d] = blk
    return _finish(Xi, nus, nu, model, sym)


def structure_constants(model, q) -> np.ndarray:
    """``c[l, k, j]`` with ``[X_k, X_j] = sum_l c[l, k, j] X_l`` for the model's speed fields at
    numeric ``q`` (nonzero only for k, j, l of one spherical or floating joint)."""
    nv = model.nv
    c = np.zeros((nv, nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = 1.0
        c[:, k, :] = structure_matrix(model, q, e)
    return c


def _finish(X, nus, nu, model, sym_q):
    """Substitute nu into X; numbers -> NumPy."""
    if isinstance(nu, ca.SX):
        return ca.substitute(X, nus, _CA.to_vector(nu, model.nv, "nu"))
    nu = get_backend("numpy").to_vector(nu, model.nv, "nu")
    out = ca.substitute(X, nus, ca.SX(ca.DM(nu.reshape(-1, 1))))
    return out if sym_q else np.array(ca.DM(ca.evalf(out)), float)


def coriolis_by_differentiation(model, q, qd):
    """Christoffel-consistent C*(q, qd) from ``d(C qd)/d qd`` (CasADi AD of RNEA) plus the
    structure-constant correction, paper 001 eqs. (29)-(32): ``C* = 1/2 [D + M Xi]``.

    ``q``/``qd``: numbers (returns a NumPy array) or CasADi SX (returns SX). Equals
    :func:`symdyn.algorithms.coriolis.coriolis_matrix`'s C* for any open chain, generalized
    speeds (spherical, floating) included.
    """
    qv, sym = _q_casadi(model, q)
    nus = ca.SX.sym("nu", model.nv)
    bias = rnea(model, qv, nus, ca.SX(model.nv, 1), backend="casadi")       # C nu + g
    D = ca.jacobian(bias, nus)                                               # (29)
    M = crba(model, qv, backend="casadi")
    Xi = ca.SX(model.nv, model.nv)
    for i, blk in enumerate(_structure_blocks(model, qv, nus, check=not sym)):
        c, d = model.v_idx[i]
        Xi[c:d, c:d] = blk
    return _finish((D + M @ Xi) / 2, nus, qd, model, sym or isinstance(qd, ca.SX))  # (31)-(32)


def christoffel_by_differentiation(model, q) -> np.ndarray:
    """Generalized Christoffel symbols ``Gamma[:, :, k] = C*(q, e_k)`` (nv x nv x nv NumPy array)
    at numeric ``q``, from :func:`coriolis_by_differentiation` (C* is linear in the speeds)."""
    if isinstance(q, (ca.SX, ca.MX)):
        raise TypeError("christoffel_by_differentiation evaluates at numbers; for symbolic q use "
                        "coriolis_by_differentiation(model, q, e_k) page by page")
    nv = model.nv
    nus = ca.SX.sym("nu", nv)
    C = coriolis_by_differentiation(model, q, nus)
    f = ca.Function("Cstar", [nus], [C])
    G = np.zeros((nv, nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = 1.0
        G[:, :, k] = np.array(f(e), float)
    return G
