"""Articulated-Body Algorithm (Featherstone 2008, Table 7.1), multi-DoF joints included."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import congruence, cross_force, cross_motion, xform_force_T, xform_motion
from .common import entry, external_forces, joint_kinematics, per_body
from .steps import step
from ..types import Array, Backend, ExternalForces
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
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


def aba_pass(B: Backend, model, q, qd, tau, f_ext, Xup, S):
    """The three ABA passes on per-body segments; returns per-body ``qdd`` segments and the
    articulated-body quantities ``U[i] = IA_i S_i`` and ``Dinv[i] = (S_i^T U_i)^-1`` (reused by
    the ABA-Zero-Algorithm in :mod:`symdyn.algorithms.aba_derivatives`)."""
    consts = model.constants(B)
    I, a_grav = consts.I, consts.a_grav
    N, parents = model.N, model.parents
    v, c, pA, IA, U, Dinv, u, a, qdd = per_body(N, 9)
    for i, p in enumerate(parents):
        v[i], c[i], pA[i] = aba_velocity(B, model.joints[i], Xup[i], S[i], I[i],
                                         None if p < 0 else v[p], q[i], qd[i], f_ext[i])
        IA[i] = I[i]
    for i in reversed(range(N)):
        p = parents[i]
        U[i], Dinv[i], u[i], IA_p, pA_p = aba_articulated(
            B, Xup[i], S[i], IA[i], pA[i], c[i], tau[i], consts.armature[i],
            None if p < 0 else IA[p], None if p < 0 else pA[p])
        if p >= 0:
            IA[p], pA[p] = IA_p, pA_p
    for i, p in enumerate(parents):
        qdd[i], a[i] = aba_acceleration(B, Xup[i], S[i], a_grav if p < 0 else a[p], c[i],
                                        U[i], Dinv[i], u[i])
    return qdd, U, Dinv


@step
def aba_velocity(B: Backend, joint, Xup, S, I, v_p, q, qd, f_ext):
    """Pass 1 for one body: velocity v, velocity-product acceleration c and bias force pA."""
    vJ = S @ qd
    v = vJ if v_p is None else xform_motion(B, Xup, v_p) + vJ
    c = cross_motion(B, v, vJ)
    cJ = joint.Sring(B, q, qd)
    if cJ is not None:
        c = c + cJ @ qd
    pA = cross_force(B, v, I @ v)
    if f_ext is not None:
        pA = pA - f_ext
    return v, c, pA


@step
def aba_articulated(B: Backend, Xup, S, IA, pA, c, tau, armature, IA_p, pA_p):
    """Pass 2 for one body: U = IA S, Dinv = (S^T U + armature)^-1, u = tau - S^T pA, and the
    parent's articulated inertia and bias force with this body's added (None at the root)."""
    U = IA @ S
    D = S.T @ U
    Dinv = B.inv(D if armature is None else D + armature)                  # + rotor inertia
    u = tau - S.T @ pA
    if IA_p is None:
        return U, Dinv, u, None, None
    Ia = IA - U @ Dinv @ U.T
    pa = pA + Ia @ c + U @ (Dinv @ u)
    return U, Dinv, u, IA_p + congruence(B, Xup, Ia), pA_p + xform_force_T(B, Xup, pa)


@step
def aba_acceleration(B: Backend, Xup, S, a_p, c, U, Dinv, u):
    """Pass 3 for one body: joint acceleration qdd and body acceleration a."""
    a = xform_motion(B, Xup, a_p) + c
    qdd = Dinv @ (u - U.T @ a)
    return qdd, a + S @ qdd
