"""Recursive Newton-Euler Algorithm (Featherstone 2008, Table 5.1; paper 000 eqs. (5), (7), (12), (13))."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import cross_force, cross_motion, xform_force_T, xform_motion
from .common import entry, external_forces, joint_kinematics, per_body
from .steps import step
from ..types import Array, Backend, ExternalForces
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
def rnea(model: Model, q: Array, qd: Array, qdd: Array, f_ext: ExternalForces = None, *,
         backend: str | None = None) -> Array:
    """Inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) - sum J^T f_ext.

    ``f_ext[i]`` is an external spatial force [n; f] on body i in body-i coordinates. Gravity comes
    from ``model.gravity``; ``model.armature`` adds ``armature * qdd`` (M includes it, as in
    :func:`~symdyn.algorithms.crba.crba`). Returns a vector of length nv in the inputs' backend.
    """
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    consts = model.constants(B)
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    v, a, f, tau = per_body(model.N, 4)
    for i, p in enumerate(model.parents):
        v[i], a[i], f[i] = rnea_forward(B, model.joints[i], Xup[i], S[i], consts.I[i],
                                        None if p < 0 else v[p],
                                        consts.a_grav if p < 0 else a[p],
                                        q[i], qd[i], qdd[i], f_ext[i])
    for i in reversed(range(model.N)):
        p = model.parents[i]
        tau[i], f_p = rnea_backward(B, Xup[i], S[i], f[i], consts.armature[i], qdd[i],
                                    None if p < 0 else f[p])
        if p >= 0:
            f[p] = f_p
    return B.vcat(tau)


@step
def rnea_forward(B: Backend, joint, Xup, S, I, v_p, a_p, q, qd, qdd, f_ext):
    """Forward pass for one body: velocity, acceleration and net force (``v_p`` is None at the
    root, ``a_p`` the parent's acceleration or the gravity acceleration a_grav)."""
    vJ = S @ qd
    v = vJ if v_p is None else xform_motion(B, Xup, v_p) + vJ                 # (5)
    a = xform_motion(B, Xup, a_p) + S @ qdd + cross_motion(B, v, vJ)           # (12)
    cJ = joint.Sring(B, q, qd)
    if cJ is not None:
        a = a + cJ @ qd
    f = I @ a + cross_force(B, v, I @ v)                                       # (7)
    if f_ext is not None:
        f = f - f_ext
    return v, a, f


@step
def rnea_backward(B: Backend, Xup, S, f, armature, qdd, f_p):
    """Backward pass for one body: its joint force and the parent's force with this body's
    added (``f_p`` None at the root)."""
    tau = S.T @ f                                                              # (13)
    if armature is not None:
        tau = tau + armature @ qdd                                             # rotor inertia
    return tau, (None if f_p is None else f_p + xform_force_T(B, Xup, f))


@dispatch
def nonlinear_effects(model: Model, q: Array, qd: Array, f_ext: ExternalForces = None, *,
                      backend: str | None = None) -> Array:
    """C(q, qd) qd + g(q) (- external forces): rnea with qdd = 0."""
    return rnea(model, q, qd, [0.0] * model.nv, f_ext, backend=backend)


@dispatch
def gravity_vector(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """g(q): rnea with qd = qdd = 0."""
    zero = [0.0] * model.nv
    return rnea(model, q, zero, zero, backend=backend)
