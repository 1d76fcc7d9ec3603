"""Kinetic and potential energy.

``T = 1/2 sum_i v_i . (I_i v_i) + 1/2 sum_k armature_k qd_k^2`` (``v_i`` the body velocities;
equal to ``1/2 qd^T M(q) qd`` with M from :func:`~symdyn.algorithms.crba.crba`, which holds
``model.armature`` on its diagonal: the rotors' energy, as Pinocchio's ``computeKineticEnergy``
and MuJoCo count it; ``model.replace(armature=0)`` leaves it out) and
``V = -sum_i m_i g . c_i = -m g . c`` with ``g = model.gravity`` and ``c_i`` the bodies' centres
of mass in world coordinates (Pinocchio's ``computeKineticEnergy`` and
``computePotentialEnergy``, same convention: V = 0 at a centre of mass on the world origin). With
``tau = rnea(q, qd, qdd)`` (gravity included) they satisfy the power balance
``d/dt (T + V) = qd^T tau``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import Array, Backend
from .common import entry
from .frames import path_kinematics
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["kinetic_energy", "mechanical_energy", "potential_energy"]


def _twice_kinetic(B: Backend, model, vs, K):
    """``2 T = sum_i v_i . I_i v_i + sum_k armature_k qd_k^2`` (joints without armature add
    nothing, so their expressions are those of a model without armature)."""
    consts = model.constants(B)
    T = B.dot(B.zeros(1), B.zeros(1))                      # no moving body: no kinetic energy
    for i in range(model.N):
        T = T + B.dot(K.v[i], consts.I[i] @ K.v[i])
        if consts.armature[i] is not None:                                     # rotor inertia
            T = T + B.dot(vs[i], consts.armature[i] @ vs[i])
    return T


@dispatch
def kinetic_energy(model: Model, q: Array, qd: Array, *, backend: str | None = None) -> Any:
    """Kinetic energy ``T = 1/2 qd^T M(q) qd`` (a scalar of the backend), by one velocity pass.

    M is :func:`~symdyn.algorithms.crba.crba`'s, ``model.armature`` included (``1/2 sum_k
    armature_k qd_k^2`` on top of the bodies' energy, as Pinocchio's ``computeKineticEnergy``);
    ``kinetic_energy(model.replace(armature=0), q, qd)`` is the bodies' part alone."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return _twice_kinetic(B, model, vs, path_kinematics(B, model, qs, vs)) / 2


def _potential(B: Backend, model, K):
    consts = model.constants(B)
    g_neg = B.rows(consts.a_grav, 3, 6)  # a_grav = [0; -g]
    V = B.dot(B.zeros(1), B.zeros(1))                      # bodies welded to the world: V = 0
    for i in range(model.N):
        m, c, _ = consts.inertia_params[i]
        X = K.X0[i]
        V = V + B.dot(g_neg, m * (X.r + X.E.T @ c))
    return V


@dispatch
def potential_energy(model: Model, q: Array, *, backend: str | None = None) -> Any:
    """Gravitational potential energy ``V = -m g . c`` (a scalar of the backend), gravity from
    ``model.gravity``; Pinocchio's ``computePotentialEnergy``."""
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    return _potential(B, model, path_kinematics(B, model, qs))


@dispatch
def mechanical_energy(model: Model, q: Array, qd: Array, *, backend: str | None = None) -> Any:
    """``T + V`` (Pinocchio's ``computeMechanicalEnergy``), T with ``model.armature`` as in
    :func:`kinetic_energy`."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    K = path_kinematics(B, model, qs, vs)
    return _potential(B, model, K) + _twice_kinetic(B, model, vs, K) / 2
