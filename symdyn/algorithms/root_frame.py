"""Kinematics expressed in one common frame per kinematic tree (paper 000 footnote 2).

The body-frame algorithms move every force block up the tree with one transform per ancestor.
Pinocchio instead expresses all spatial quantities in ground coordinates, where composite
quantities are plain sums and each related pair (i, j) costs a few dot products. Here the common
frame of a tree is the frame of its root body (the body whose parent is the world), not the
ground: the two differ by one transform per tree, and in root coordinates a floating base keeps
its motion subspace S = 1 (so its rows of M and C are picks instead of 6x6 products).

All vectors here are true spatial vectors (velocities and derivatives relative to the inertial
frame) merely *expressed* in the root coordinates, so every dot product and sum of the paper's
formulas holds unchanged; e.g. Phidot_i = (v_i x) Phi_i + Phiring_i is the same motion vector in
any coordinates (eq. (12)), with Phiring_i transformed from body-i coordinates.
"""
from __future__ import annotations

from typing import Any

from ..spatial import compose, cross_motion, inertia_congruence, xform_motion_inv
from .common import joint_kinematics
from .steps import step
from ..types import Backend


def root_transforms(B: Backend, model, Xup):
    """X0[i]: compact transform from the coordinates of body i's tree root to body-i
    coordinates; ``None`` for the roots themselves (the identity)."""
    X0: list[Any] = [None] * model.N
    for i, p in enumerate(model.parents):
        if p >= 0:
            X0[i] = Xup[i] if X0[p] is None else compose_step(B, Xup[i], X0[p])
    return X0


compose_step = step(compose)


@step
def to_root(B: Backend, X0i, m):
    """Motion vector(s) m from body-i to root coordinates (X0i None: already there)."""
    return m if X0i is None else xform_motion_inv(B, X0i, m)


def root_kinematics(B: Backend, model, q, qd=None):
    """``(S0, v0, Sdot0)`` in root coordinates: motion subspaces S0[i] (6 x n_i), body
    velocities v0[i] (5) and Phidot0[i] = (v0[i] x) S0[i] + Phiring_i (Alg. 1 line 4); the last
    two are ``None`` when ``qd`` is None. Also returns ``X0`` (see :func:`root_transforms`)."""
    Xup, S = joint_kinematics(B, model, q)
    X0 = root_transforms(B, model, Xup)
    S0 = [to_root(B, X0[i], S[i]) for i in range(model.N)]
    v0, Sdot0 = [None] * model.N, [None] * model.N
    if qd is not None:
        for i, p in enumerate(model.parents):
            v0[i], Sdot0[i] = root_velocity(B, model.joints[i], X0[i], S0[i],
                                            None if p < 0 else v0[p], q[i], qd[i])
    return X0, S0, v0, Sdot0


@step
def root_velocity(B: Backend, joint, X0, S0, v0_p, q, qd):
    """v0_i and Phidot0_i of one body in root coordinates (``v0_p`` None at the root)."""
    vJ = S0 @ qd
    v0 = vJ if v0_p is None else v0_p + vJ                                   # (5)
    Sdot0 = cross_motion(B, v0, S0)                                          # line 4
    Sring = joint.Sring(B, q, qd)
    if Sring is not None:
        Sdot0 = Sdot0 + (Sring if X0 is None else xform_motion_inv(B, X0, Sring))
    return v0, Sdot0


def root_inertias(B: Backend, model, X0):
    """Body inertias in root coordinates, X0^T I X0 by their 10 parameters."""
    I = model.constants(B).I
    return [I[i] if X0[i] is None else inertia_congruence_step(B, X0[i], I[i])
            for i in range(model.N)]


inertia_congruence_step = step(inertia_congruence)
