"""Articulated-Body Algorithm (Featherstone 2008, Table 7.1), multi-DoF joints included."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import congruence, cross_force, cross_motion, xform_force_T, xform_motion
from .common import entry, external_forces, joint_kinematics
from ..types import Array, ExternalForces

if TYPE_CHECKING:
    from ..model import Model


def aba(model: Model, q: Array, qd: Array, tau: Array, f_ext: ExternalForces = None, *,
        backend: str | None = None) -> Array:
    """Forward dynamics qdd = M^-1 (tau - C qd - g + sum J^T f_ext).

    ``f_ext[i]`` is an external force [n; f] on body i in body coordinates. M includes
    ``model.armature`` (added to D_i = S_i^T U_i, as in Pinocchio).
    """
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    qdd, _, _ = aba_pass(B, model, q, qd, tau, f_ext, Xup, S)
    return B.vcat(qdd)


def aba_pass(B, model, q, qd, tau, f_ext, Xup, S):
    """The three ABA passes on per-body segments; returns per-body ``qdd`` segments and the
    articulated-body quantities ``U[i] = IA_i S_i`` and ``Dinv[i] = (S_i^T U_i)^-1`` (reused by
    the ABA-Zero-Algorithm in :mod:`symdyn.algorithms.aba_derivatives`)."""
    consts = model.constants(B)
    I, a_grav = consts.I, consts.a_grav
    N, parents = model.N, model.parents
    v, c, IA, pA = [None] * N, [None] * N, [None] * N, [None] * N
    for i, p in enumerate(parents):
        vJ = S[i] @ qd[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ
        c[i] = cross_motion(B, v[i], vJ)
        cJ = model.joints[i].Sring(B, q[i], qd[i])
        if cJ is not None:
            c[i] = c[i] + cJ @ qd[i]
        IA[i] = I[i]
        pA[i] = cross_force(B, v[i], I[i] @ v[i])
        if f_ext[i] is not None:
            pA[i] = pA[i] - f_ext[i]
    U: list[Any] = [None] * N
    Dinv: list[Any] = [None] * N
    u: list[Any] = [None] * N
    for i in reversed(range(N)):
        p = parents[i]
        U[i] = IA[i] @ S[i]
        D = S[i].T @ U[i]
        Dinv[i] = B.inv(D if consts.armature[i] is None else D + consts.armature[i])  # + rotor inertia
        u[i] = tau[i] - S[i].T @ pA[i]
        if p >= 0:
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ (Dinv[i] @ u[i])
            IA[p] = IA[p] + congruence(B, Xup[i], Ia)
            pA[p] = pA[p] + xform_force_T(B, Xup[i], pa)
    a, qdd = [None] * N, [None] * N
    for i, p in enumerate(parents):
        a[i] = xform_motion(B, Xup[i], a_grav if p < 0 else a[p]) + c[i]
        qdd[i] = Dinv[i] @ (u[i] - U[i].T @ a[i])
        a[i] = a[i] + S[i] @ qdd[i]
    return qdd, U, Dinv
