"""Partial derivatives of forward dynamics via eq. (5) of paper 003 (FDSVA):

    dqdd/du = -M^-1 dtau/du (u = q, qd) at qdd = aba(q, qd, tau),   dqdd/dtau = M^-1,

with dtau/du from IDSVA (:mod:`.rnea_derivatives`). Three routes to M^-1 and its products:

``"dmm"`` and ``"aza"``: one ABA pass (Featherstone Table 7.1) gives qdd and keeps the kinematics
and articulated-body quantities ``U = IA S`` and ``Dinv``; the ABA-Zero-Algorithm (AZA, paper 003
Sec. IV-E, eq. (34)): ``M^-1 b = ABA(q, 0, b, 0)`` then applies M^-1 to any set of columns b
reusing them (with qd = 0 and no gravity the bias terms vanish, so only the tau-dependent
recursions remain). All columns go through each body step together (6 x m blocks): the same
arithmetic as m column-by-column passes. M^-1 itself is AZA applied to the identity (paper 004,
Sec. V-A). The product with dtau/du is then direct matrix multiplication (``"dmm"``, O(n^3)) or
AZA on the 2n columns (``"aza"``, O(N n) 6-vector steps).

``"ltdl"`` (:func:`eq5_ltdl`): no ABA pass; M and the bias forces from IDSVA's ground-frame
quantities, the sparse factorization ``M = L^T D L`` (Featherstone Sec. 6.5, no fill-in on a
tree, :mod:`.ltdl`), qdd and M^-1 from its factors and the products through them, so that the
work follows the tree's depth (on a floating-base robot every dof has the base's 6 as ancestors,
not all n); on a free-floating root the q and linear-velocity columns need no product at all.
The smallest graphs for branched trees and robots (g1: 107k SX instructions against DMM's 185k).

``"auto"`` picks AZA from ``AUTO_CROSSOVER[kind]`` degrees of freedom on, else DMM, kind
``"numeric"`` (values: NumPy) or ``"graph"`` (expression graphs: SymPy, SymEngine, CasADi) after
the backend's capability ``B.numeric`` (measured, see below). Generated code chooses for itself
(:data:`symdyn.codegen.functions.AUTO_METHODS`: the smallest graph of "ltdl" and "aza").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import crm, xform_force_T, xform_motion
from .aba import aba_pass
from .common import entry, external_forces, joint_kinematics
from .ltdl import (ancestor_lists, dof_parents, ground_dynamics, inverse_from_factors, ltdl,
                   ltdl_solve, minv_apply, unit_lower_inverse, z_matrix)
from .rnea_derivatives import check_joints, idsva
from ..types import Array, ExternalForces

if TYPE_CHECKING:
    from ..model import Model

METHODS = ("auto", "dmm", "aza", "ltdl")

# nv from which "auto" uses AZA instead of DMM, per backend (None: always DMM). Measured on this
# machine (AMD EPYC, 2 shared cores, BLAS on 1 thread) by
#     python experiments/derivatives_numpy.py          -> reports/derivatives_numpy.md
# NumPy: no crossover up to n = 400 (chain: DMM 22.5 ms vs AZA 44 ms for the eq. (5) step): DMM is one
# BLAS product while AZA loops in Python over bodies on 6 x 3n blocks. CasADi SX: AZA has fewer
# operations and evaluates faster from n = 20 on (n = 50: 0.20 M vs 0.57 M operations, 1.0 vs
# 1.6 ms); SymPy/SymEngine expression sizes follow the same operation count.
# "numeric" (B.numeric: NumPy): run time is BLAS vs Python loops; "graph" (SymPy, SymEngine, CasADi):
# the cost is the operation count of the graph.
AUTO_CROSSOVER: dict[str, int | None] = {"numeric": None, "graph": 20}


def aba_derivatives(model: Model, q: Array, qd: Array, tau: Array, f_ext: ExternalForces = None,
                    method: str = "auto", *,
                    backend: str | None = None) -> tuple[Array, Array, Array]:
    """``(dqdd_dq, dqdd_dqd, Minv)``: partial derivatives of ``qdd = aba(model, q, qd, tau, f_ext)``.

    ``Minv = M(q)^-1 = dqdd/dtau``. q-derivatives are in the tangent space (``q (+) delta`` through the
    joints' :meth:`integrate`, Pinocchio's convention), as in :func:`rnea_derivatives`. ``f_ext[i]``
    is an external force [n; f] on body i in body coordinates. ``method`` is ``"dmm"``, ``"aza"``,
    ``"ltdl"`` or ``"auto"`` (see the module docstring).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_joints(model)
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    if method == "ltdl":
        return eq5_ltdl(B, model, qd, tau, f_ext, Xup, S)
    qdd, U, Dinv = aba_pass(B, model, q, qd, tau, f_ext, Xup, S)
    dtau_dq, dtau_dqd = idsva(B, model, qd, qdd, f_ext, Xup, S)          # eq. (5) at qdd
    n = model.nv
    if method == "auto":
        cross = AUTO_CROSSOVER["numeric" if B.numeric else "graph"]
        method = "aza" if cross is not None and n >= cross else "dmm"
    if method == "dmm":
        Minv = aza(B, model, Xup, S, U, Dinv, B.eye(n))
        return -(Minv @ dtau_dq), -(Minv @ dtau_dqd), Minv
    R = aza(B, model, Xup, S, U, Dinv, B.hcat([B.eye(n), dtau_dq, dtau_dqd]))
    return -B.cols(R, n, 2 * n), -B.cols(R, 2 * n, 3 * n), B.cols(R, 0, n)


def aza(B, model, Xup, S, U, Dinv, b):
    """ABA-Zero-Algorithm, eq. (34): ``M^-1 b = ABA(q, 0, b, 0)`` for an nv x m matrix ``b``, reusing
    the kinematics ``Xup``, ``S`` and the articulated-body ``U``, ``Dinv`` of one ABA pass."""
    N, parents = model.N, model.parents
    pA, u = [None] * N, [None] * N
    for i in reversed(range(N)):
        p = parents[i]
        bi = B.rows(b, *model.v_idx[i])
        u[i] = bi if pA[i] is None else bi - S[i].T @ pA[i]               # u = tau - S^T pA
        if p >= 0:
            pa = U[i] @ (Dinv[i] @ u[i])                                   # Ia c = 0 (qd = 0)
            if pA[i] is not None:
                pa = pa + pA[i]
            pa = xform_force_T(B, Xup[i], pa)
            pA[p] = pa if pA[p] is None else pA[p] + pa
    a, qdd = [None] * N, [None] * N
    for i, p in enumerate(parents):
        if p < 0:                                                          # a_0 = 0 (no gravity)
            qdd[i] = Dinv[i] @ u[i]
            a[i] = S[i] @ qdd[i]
        else:
            ai = xform_motion(B, Xup[i], a[p])
            qdd[i] = Dinv[i] @ (u[i] - U[i].T @ ai)
            a[i] = ai + S[i] @ qdd[i]
    return B.vcat(qdd)


def eq5_ltdl(B, model, qd, tau, f_ext, Xup, S):
    """Eq. (5) through the sparse LTDL factors of M (:mod:`.ltdl`), without an ABA pass.

    M and the bias forces h from IDSVA's ground-frame quantities, ``M = L^T D L`` (Table 6.3),
    ``qdd = M^-1 (tau - h)`` by two sparse triangular solves, ``M^-1 = Z D^-1 Z^T`` with
    ``Z = L^-1``, IDSVA at qdd, then ``dqdd/du = -M^-1 dtau/du`` column by column through the
    factors: column c of dtau/du is nonzero only on the ancestors and descendants of dof c, and
    ``L^-T`` keeps it there, so only ``Z`` fills it in.

    A free-floating root r (no armature) needs no product on some columns: tau depends on q_r only
    through the apparent gravity ``w = X_r a_grav`` of the root (f_ext acts in body coordinates),
    which enters like the root acceleration, so ``dtau/dq_r = M[:, r] crm(w)`` and
    ``dqdd/dq_r = -M^-1 M[:, r] crm(w) = -[crm(w); 0]``; and a uniform translation of the whole
    system (Galilean invariance) adds ``-omega_r x delta`` to the root's spatial acceleration and
    changes nothing else: on the root's linear-velocity columns ``dqdd/dqd = -[crm(v_r)[:, 3:6]; 0]``.
    """
    n = model.nv
    lam = dof_parents(model)
    anc = ancestor_lists(lam)
    H, h = ground_dynamics(B, model, qd, f_ext, Xup, S)
    Dinv = ltdl(H, lam)                                                   # M = L^T D L
    tau_v = B.vcat(tau)
    qdd_v = B.vector(ltdl_solve(H, anc, Dinv, [tau_v[k] - h[k] for k in range(n)]))
    qdd = [B.rows(qdd_v, a, b) for a, b in model.v_idx]
    Z = unit_lower_inverse(H, anc)                                        # Z = L^-1
    Minv = B.matrix(inverse_from_factors(Z, anc, Dinv))
    dtau_dq, dtau_dqd = idsva(B, model, qd, qdd, f_ext, Xup, S)           # eq. (5) at qdd
    neg_Dinv, Zm = [-d for d in Dinv], z_matrix(B, Z)

    def minus_minv(X, c0, c1):                                            # -M^-1 X[:, c0:c1]
        return minv_apply(B, H, anc, Zm, neg_Dinv, B.cols(X, c0, c1))

    a_grav, arm = model.constants(B).a_grav, model.constants(B).armature
    dq_cols, dqd_cols, c = [], [], 0                                      # column blocks, in order
    for i, p in enumerate(model.parents):
        if p >= 0 or model.joints[i].type != "floating" or arm[i] is not None:
            continue                                                      # not a free root
        a0, a1 = model.v_idx[i]
        if c < a0:
            dq_cols.append(minus_minv(dtau_dq, c, a0))
            dqd_cols.append(minus_minv(dtau_dqd, c, a0))
        dq_cols.append(_rows_at(B, n, a0, -crm(B, xform_motion(B, Xup[i], a_grav))))
        dqd_cols.append(minus_minv(dtau_dqd, a0, a0 + 3))                 # angular columns
        dqd_cols.append(_rows_at(B, n, a0, -B.cols(crm(B, qd[i]), 3, 6)))  # linear (v_r = qd_r)
        c = a1
    if c < n:
        dq_cols.append(minus_minv(dtau_dq, c, n))
        dqd_cols.append(minus_minv(dtau_dqd, c, n))
    return B.hcat(dq_cols), B.hcat(dqd_cols), Minv


def _rows_at(B, n, a0, X):
    """The n-row matrix holding X in rows a0.. and zeros elsewhere."""
    a1 = a0 + X.shape[0]
    parts = ([B.zeros(a0, X.shape[1])] if a0 else []) + [X] + \
        ([B.zeros(n - a1, X.shape[1])] if a1 < n else [])
    return B.vcat(parts)
