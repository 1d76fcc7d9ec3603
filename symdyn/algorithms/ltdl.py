"""Sparse LTDL factorization of the joint-space inertia matrix and what it gives: solves, ``M^-1``
and ``M^-1 X`` (Featherstone, *Rigid Body Dynamics Algorithms*, Sec. 6.5, Tables 6.3 and 6.4).

``M = L^T D L`` with L unit lower triangular and ``L[k, i] != 0`` only where dof i is an ancestor
of dof k (branch-induced sparsity: no fill-in); ``Z = L^-1`` has the same pattern. Everything
works on scalar entries along the *dof parent array* ``lam`` (a multi-DoF joint is a chain of its
dofs, the first one hanging from the last dof of the parent body), so operation counts follow
the tree, not n^3: the factorization costs sum_k depth(k)^2 / 2 multiply-adds, a solve
2 nnz(L) + n, entry (i, k) of ``M^-1`` as many as dofs i and k have common ancestors (on a
floating-base robot 6 for dofs of different limbs), and row i of ``M^-1 x`` as many as dof i has
ancestors where ``L^-T x`` is nonzero.

The mass matrix and bias forces come from the ground-frame quantities of IDSVA's forward pass
(paper 003 Alg. 1 lines 1-10) and its composite inertias (line 13: ``t1 = IC S``):
``M[j, i] = S_j^T (IC_i S_i)`` for j an ancestor of i (the CRBA in ground coordinates: no
transform per step). Written once over the backends on scalars (lists of backend scalars,
``None`` for a structural zero); in expression graphs the ground-frame quantities are the same
expressions as IDSVA's, so graphs that hold both share them.
"""
from __future__ import annotations

from typing import Any

from ..spatial import compose, cross_force, cross_motion, xform_force_T, xform_motion_inv
from .common import per_body
from .rnea_derivatives import SEQUENTIAL_COLUMNS, ground_inertia
from ..types import Backend


def dof_parents(model) -> list[int]:
    """``lam[k]``: the parent dof of dof k (-1 at a root); within a joint its dofs form a chain."""
    lam, last = [], [-1] * model.N
    for i, p in enumerate(model.parents):
        a0, a1 = model.v_idx[i]
        up = last[p] if p >= 0 else -1
        for k in range(a0, a1):
            lam.append(up)
            up = k
        last[i] = up
    return lam


def ancestor_lists(lam) -> list[list[int]]:
    """The ancestors of each node of a parent array in which parents precede their children
    (``lam``: each dof's dof ancestors; ``model.parents``: each body's), nearest first."""
    anc: list[list[int]] = []
    for j in lam:
        anc.append([] if j < 0 else [j] + anc[j])
    return anc


def ground_dynamics(B: Backend, model, qd, f_ext, Xup, S):
    """Mass matrix and bias forces in ground coordinates: IDSVA's forward pass at qdd = 0 (lines
    1-10), then the composite inertias (lines 13, 21-23).

    Returns ``(H, h)``: ``H[k][j]`` the lower-triangle entries of M (armature included) for j = k
    or j an ancestor dof of k, other entries None, and ``h = rnea(q, qd, 0)`` (gravity,
    velocity-product and external forces) as a list of per-dof scalars."""
    consts = model.constants(B)
    a_grav, inertia = consts.a_grav, consts.inertia_params
    N, parents, n = model.N, model.parents, model.nv
    X0, S0, v, a, IC, f = per_body(N, 6)
    zero = B.zeros(6)
    for i, p in enumerate(parents):                                       # line 1: v0 = 0, a0 = -ag
        X0[i] = Xup[i] if p < 0 else compose(B, Xup[i], X0[p])
        S0[i] = xform_motion_inv(B, X0[i], S[i])                          # S_i in ground coordinates
        vl, al = (zero, a_grav) if p < 0 else (v[p], a[p])
        nvi = model.joints[i].nv
        segs = [(c, c + 1) for c in range(nvi)] \
            if model.joints[i].type in SEQUENTIAL_COLUMNS else [(0, nvi)]
        for c0, c1 in segs:  # one segment, or one per column of a planar joint (as IDSVA)
            Sk = B.cols(S0[i], c0, c1)
            vJ = Sk @ B.rows(qd[i], c0, c1)
            vl = vl + vJ                                                  # line 3
            al = al + cross_motion(B, vl, vJ)                             # line 4 at qdd = 0
        v[i], a[i] = vl, al
        IC[i] = ground_inertia(B, X0[i], *inertia[i])                     # line 8
        f[i] = IC[i] @ a[i] + cross_force(B, v[i], IC[i] @ v[i])          # line 10
        if f_ext[i] is not None:
            f[i] = f[i] - xform_force_T(B, X0[i], f_ext[i])
    H: list[list[Any]] = [[None] * n for _ in range(n)]
    h: list[Any] = [None] * n
    for i in reversed(range(N)):
        a0, a1 = model.v_idx[i]
        F = IC[i] @ S0[i]                                                 # line 13: IC_i composite
        tau = S0[i].T @ f[i]
        Mii = S0[i].T @ F
        if consts.armature[i] is not None:
            Mii = Mii + consts.armature[i]
        for r in range(a1 - a0):
            h[a0 + r] = tau[r]
            for c in range(r + 1):
                H[a0 + r][a0 + c] = Mii[r, c]
        j = parents[i]
        while j >= 0:                                                     # M[j, i] = S_j^T IC_i S_i
            b0, b1 = model.v_idx[j]
            Mji = S0[j].T @ F
            for r in range(b1 - b0):
                for c in range(a1 - a0):
                    H[a0 + c][b0 + r] = Mji[r, c]
            j = parents[j]
        p = parents[i]
        if p >= 0:                                                        # lines 21-23
            IC[p] = IC[p] + IC[i]
            f[p] = f[p] + f[i]
    return H, h


def ltdl(H, lam):
    """Table 6.3 in place on the lower triangle ``H``: ``H[k][i]`` (i an ancestor dof of k)
    becomes ``L[k, i]`` and ``H[k][k]`` becomes ``D_k``, with ``M = L^T D L``. Returns the
    reciprocals ``1 / D_k`` (one division per dof; the factors and solves multiply by them)."""
    n = len(H)
    Dinv: list[Any] = [None] * n
    for k in reversed(range(n)):
        Dinv[k] = 1 / H[k][k]
        i = lam[k]
        while i >= 0:
            a = H[k][i] * Dinv[k]
            j = i
            while j >= 0:
                H[i][j] = H[i][j] - a * H[k][j]
                j = lam[j]
            H[k][i] = a
            i = lam[i]
    return Dinv


def ltdl_solve(H, anc, Dinv, y):
    """Table 6.4: ``M^-1 y`` for a list of scalars y, from the factors of :func:`ltdl` and the dof
    ancestors ``anc`` (:func:`ancestor_lists`): ``L^T z = y`` from the leaves up, ``z D^-1``,
    ``L x = z`` from the root down."""
    n = len(H)
    x = list(y)
    for i in reversed(range(n)):                                          # L^T z = y
        for j in anc[i]:
            x[j] = x[j] - H[i][j] * x[i]
    for i in range(n):
        x[i] = x[i] * Dinv[i]
        for j in reversed(anc[i]):                                        # L x = z
            x[i] = x[i] - H[i][j] * x[j]
    return x


def unit_lower_inverse(H, anc):
    """``Z = L^-1`` for the unit lower factor in ``H``: from ``L Z = 1``,
    ``Z[i, j] = -(L[i, j] + sum_m L[i, m] Z[m, j])`` over the dofs m strictly between j and i,
    rows from the root. Returns per-dof dicts ``Z[i] = {j: Z[i, j]}`` over the ancestors j of i
    (``Z[i, i] = 1``)."""
    Z: list[dict] = []
    for i in range(len(H)):
        row = {}
        for p, j in enumerate(anc[i]):                                    # anc[i][:p]: between j, i
            s = H[i][j]
            for m in anc[i][:p]:
                s = s + H[i][m] * Z[m][j]
            row[j] = -s
        Z.append(row)
    return Z


def inverse_from_factors(Z, anc, Dinv):
    """``M^-1 = Z D^-1 Z^T`` as n x n scalars (symmetric): entry (i, k) sums ``Z[i, j] Z[k, j] / D_j``
    over the common ancestors-or-self j of dofs i and k."""
    n = len(Z)
    ZD = [{j: z * Dinv[j] for j, z in Z[k].items()} for k in range(n)]   # Z D^-1
    Y: list[list[Any]] = [[None] * n for _ in range(n)]
    for i in range(n):
        up = set(anc[i])
        for k in range(i + 1):
            s = Dinv[i] if k == i else Z[i][k] * Dinv[k] if k in up else None   # j = k
            for j in reversed(anc[k]):                                    # j above k
                if j in up:
                    t = Z[i][j] * ZD[k][j]
                    s = t if s is None else s + t
            Y[i][k] = Y[k][i] = 0 if s is None else s                     # other trees: 0
    return Y


def minv_apply(B: Backend, H, anc, Zm, Dinv, X):
    """``M^-1 X`` for an n x m backend matrix X, all columns at once: ``L^T W = X`` row by row from
    the leaves up (a row of X that is zero stays zero until a descendant's row reaches it: column c
    of dtau/du stays on the ancestors and descendants of dof c), ``W D^-1``, then ``Z W`` with the
    backend matrix ``Zm`` of :func:`unit_lower_inverse` (graph backends skip its zeros and W's).
    With ``Dinv = -1 / D`` it returns ``-M^-1 X``."""
    x = [B.rows(X, i, i + 1) for i in range(len(H))]
    for i in reversed(range(len(H))):                                     # L^T W = X
        for j in anc[i]:
            x[j] = x[j] - H[i][j] * x[i]
    return Zm @ B.vcat([Dinv[i] * x[i] for i in range(len(H))])


def z_matrix(B: Backend, Z):
    """``Z = L^-1`` of :func:`unit_lower_inverse` as an n x n backend matrix."""
    n = len(Z)
    return B.matrix([[1 if j == i else Z[i].get(j, 0) for j in range(n)] for i in range(n)])
