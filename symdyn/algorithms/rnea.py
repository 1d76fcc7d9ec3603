"""Recursive Newton-Euler Algorithm (Featherstone 2008, Table 5.1; paper 000 eqs. (5), (7), (12), (13))."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import cross_force, cross_motion, xform_force_T, xform_motion
from .common import entry, external_forces, joint_kinematics
from ..types import Array, ExternalForces

if TYPE_CHECKING:
    from ..model import Model


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
    I, a_grav = consts.I, consts.a_grav
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    v: list[Any] = [None] * model.N
    a: list[Any] = [None] * model.N
    f: list[Any] = [None] * model.N
    for i, p in enumerate(model.parents):
        vJ = S[i] @ qd[i]
        cJ = model.joints[i].Sring(B, q[i], qd[i])
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ          # (5)
        a[i] = xform_motion(B, Xup[i], a_grav if p < 0 else a[p]) + S[i] @ qdd[i] \
            + cross_motion(B, v[i], vJ)                                       # (12)
        if cJ is not None:
            a[i] = a[i] + cJ @ qd[i]
        f[i] = I[i] @ a[i] + cross_force(B, v[i], I[i] @ v[i])               # (7)
        if f_ext[i] is not None:
            f[i] = f[i] - f_ext[i]
    tau = [None] * model.N
    for i in reversed(range(model.N)):
        p = model.parents[i]
        tau[i] = S[i].T @ f[i]                                                # (13)
        if consts.armature[i] is not None:
            tau[i] = tau[i] + consts.armature[i] @ qdd[i]                    # rotor inertia
        if p >= 0:
            f[p] = f[p] + xform_force_T(B, Xup[i], f[i])
    return B.vcat(tau)


def nonlinear_effects(model: Model, q: Array, qd: Array, f_ext: ExternalForces = None, *,
                      backend: str | None = None) -> Array:
    """C(q, qd) qd + g(q) (- external forces): rnea with qdd = 0."""
    return rnea(model, q, qd, [0.0] * model.nv, f_ext, backend=backend)


def gravity_vector(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """g(q): rnea with qd = qdd = 0."""
    zero = [0.0] * model.nv
    return rnea(model, q, zero, zero, backend=backend)
