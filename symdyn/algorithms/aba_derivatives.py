"""Partial derivatives of forward dynamics via eq. (5) of paper 003 (FDSVA):

    dqdd/du = -M^-1 dtau/du (u = q, qd) at qdd = aba(q, qd, tau),   dqdd/dtau = M^-1,

with dtau/du from IDSVA (:mod:`.rnea_derivatives`). One ABA pass (Featherstone Table 7.1) gives
qdd and keeps the kinematics and articulated-body quantities ``U = IA S`` and ``Dinv``; the
ABA-Zero-Algorithm (AZA, paper 003 Sec. IV-E, eq. (34)): ``M^-1 b = ABA(q, 0, b, 0)`` then applies
M^-1 to any set of columns b reusing them (with qd = 0 and no gravity the bias terms vanish, so
only the tau-dependent recursions remain). All columns go through each body step together (6 x m
blocks): the same arithmetic as m column-by-column passes.

M^-1 itself is AZA applied to the identity (paper 004, Sec. V-A). The product with dtau/du is then
``"dmm"``: direct matrix multiplication (O(n^3)), or ``"aza"``: AZA on the 2n columns (O(n^2)).
``"auto"`` picks AZA from ``AUTO_CROSSOVER[kind]`` degrees of freedom on, kind ``"numeric"`` (values:
NumPy) or ``"graph"`` (expression graphs: SymPy, SymEngine, CasADi) after the backend's capability
``B.numeric`` (measured, see below).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import xform_force_T, xform_motion
from .aba import aba_pass
from .common import entry, external_forces, joint_kinematics
from .rnea_derivatives import check_joints, idsva
from ..types import Array, ExternalForces

if TYPE_CHECKING:
    from ..model import Model

METHODS = ("auto", "dmm", "aza")

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
    is an external force [n; f] on body i in body coordinates. ``method`` is ``"dmm"``, ``"aza"`` or
    ``"auto"`` (see the module docstring).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_joints(model)
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
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
