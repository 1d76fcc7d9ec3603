"""Sparse solves for the contact algorithms, over the backends on scalar entries.

The joint-space inertia matrix is factored as ``M = L^T D L`` along the tree (Featherstone,
*Rigid Body Dynamics Algorithms*, Sec. 6.5, Table 6.3; :mod:`symdyn.algorithms.ltdl`), and the
contact problems are reduced to the operational-space inverse ``G = J M^-1 J^T`` of size nc
(the sparse route of Featherstone's Ch. 8 for constrained systems):

* ``W = L^-T J^T`` (nv x nc) by one leaves-to-root sweep over the columns of J^T (rows of
  dofs that support no contact stay structural zeros),
* ``G = W^T D^-1 W`` (nc x nc), factored by a small dense ``L D L^T`` (:func:`small_ldl`),
* ``M^-1 (b + J^T lam) = L^-1 D^-1 (L^-T b + W lam)`` by one root-to-leaves sweep.

Entries are backend scalars (NumPy floats, SymPy expressions, CasADi SX) or, for several
right-hand sides at once, backend rows (1 x m); ``None`` is a structural zero.
"""
from __future__ import annotations

import math
from typing import Any

from ..algorithms.common import joint_kinematics
from ..algorithms.ltdl import ancestor_lists, dof_parents, ground_dynamics, ltdl
from ..types import Backend

__all__ = ["MassFactors", "RANK_RTOL", "factor_mass_matrix", "l_solve", "lt_solve", "small_ldl",
           "small_ldl_solve"]

#: Relative pivot below which ``J M^-1 J^T`` counts as singular where values are known: a pivot
#: ``d_k <= RANK_RTOL * G_kk`` means row k of J is (numerically) a combination of the rows before.
RANK_RTOL = 1e-10


class MassFactors:
    """``M = L^T D L`` at one state: ``H`` (``H[k][i] = L[k, i]`` for i an ancestor dof of k),
    ``Dinv[k] = 1 / D_k``, the dof ancestor lists ``anc`` and the bias forces ``h = rnea(q, qd,
    0)`` as a list of scalars (None when no speeds were given)."""

    def __init__(self, H, Dinv, anc, h):
        self.H, self.Dinv, self.anc, self.h = H, Dinv, anc, h


def factor_mass_matrix(B: Backend, model, qs, vs=None) -> MassFactors:
    """Factor M (armature included) and, with ``vs``, compute the bias forces, from IDSVA's
    ground-frame forward pass (:func:`symdyn.algorithms.ltdl.ground_dynamics`)."""
    Xup, S = joint_kinematics(B, model, qs)
    speeds = vs if vs is not None else [B.zeros(b - a) for a, b in model.v_idx]
    H, h = ground_dynamics(B, model, speeds, [None] * model.N, Xup, S)
    lam = dof_parents(model)
    Dinv = ltdl(H, lam)
    return MassFactors(H, Dinv, ancestor_lists(lam), h if vs is not None else None)


def _sub(a, b):
    """a - b with None as zero."""
    if b is None:
        return a
    return -b if a is None else a - b


def lt_solve(F: MassFactors, y: list) -> list:
    """``L^-T y`` (Table 6.4, first half: from the leaves up); ``y`` a list of entries, None
    for zeros (a zero stays None until a descendant reaches it)."""
    x = list(y)
    for i in reversed(range(len(x))):
        if x[i] is None:
            continue
        for j in F.anc[i]:
            x[j] = _sub(x[j], F.H[i][j] * x[i])
    return x


def l_solve(F: MassFactors, z: list) -> list:
    """``L^-1 D^-1 z`` (Table 6.4, second half: from the root down); None entries of the result
    are zeros."""
    x = list(z)
    for i in range(len(x)):
        xi = None if x[i] is None else x[i] * F.Dinv[i]
        for j in reversed(F.anc[i]):
            if x[j] is not None:
                xi = _sub(xi, F.H[i][j] * x[j])
        x[i] = xi
    return x


def weighted_gram(F: MassFactors, W: list, nc: int, B: Backend):
    """``W^T D^-1 W`` (nc x nc backend matrix) for W a list of 1 x nc rows (None: zero rows)."""
    G = None
    for k, w in enumerate(W):
        if w is None:
            continue
        t = F.Dinv[k] * (w.T @ w)
        G = t if G is None else G + t
    return B.zeros(nc, nc) if G is None else G


def small_ldl(B: Backend, G: list[list[Any]], what: str, check: bool = True) -> tuple[list, list]:
    """``G = L D L^T`` for a small symmetric positive definite matrix given as scalars (no
    pivoting). Returns ``(L, Dinv)`` with ``L[i][k]`` for k < i. With ``check`` and where the
    values are known (NumPy, JAX outside a trace), a non-finite pivot or a pivot
    ``d_k <= RANK_RTOL * G_kk`` (or a zero diagonal) raises ``ValueError`` naming ``what``: the
    inputs hold NaN/inf, or the rows of J are linearly dependent."""
    n = len(G)
    L: list[list[Any]] = [[None] * n for _ in range(n)]
    d: list[Any] = [None] * n
    Dinv: list[Any] = [None] * n
    scale = 0.0
    for k in range(n):
        dk = G[k][k]
        for m in range(k):
            dk = dk - L[k][m] * L[k][m] * d[m]
        if check and B.concrete(dk):                   # values known: NumPy, eager JAX
            _check_pivot(float(dk), float(G[k][k]), k, what, scale)
            scale = max(scale, float(G[k][k]))
        d[k] = dk
        Dinv[k] = 1 / dk
        for i in range(k + 1, n):
            s = G[i][k]
            for m in range(k):
                s = s - L[i][m] * L[k][m] * d[m]
            L[i][k] = s * Dinv[k]
    return L, Dinv


def _check_pivot(dk: float, gkk: float, k: int, what: str, scale: float) -> None:
    if not (math.isfinite(dk) and math.isfinite(gkk)):
        raise ValueError(f"{what}: J M^-1 J^T has non-finite entries (row {k}): the state or "
                         "the torques hold NaN or inf")
    if not dk > RANK_RTOL * gkk or gkk <= 1e-14 * max(scale, gkk) or gkk <= 0:
        raise ValueError(
            f"{what}: J M^-1 J^T is singular (row {k} of the contact Jacobian depends on the rows "
            f"before it: pivot {dk:.3g} against diagonal {gkk:.3g}); the contacts are redundant "
            "or at a singular configuration. Remove redundant contacts or pass damping > 0 for "
            "the regularized solution")


def small_ldl_solve(L: list, Dinv: list, b: list) -> list:
    """``G^-1 b`` from :func:`small_ldl` for a list b of scalars or rows."""
    n = len(b)
    y = list(b)
    for i in range(n):
        for m in range(i):
            y[i] = y[i] - L[i][m] * y[m]
    for i in range(n):
        y[i] = y[i] * Dinv[i]
    for i in reversed(range(n)):
        for m in range(i + 1, n):
            y[i] = y[i] - L[m][i] * y[m]
    return y
