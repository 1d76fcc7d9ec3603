"""Kinetic and potential energy.

``T = 1/2 sum_i v_i . (I_i v_i)`` over the bodies (``v_i`` the body velocities, equal to
``1/2 qd^T M(q) qd``) and ``V = -sum_i m_i g . c_i = -m g . c`` with ``g = model.gravity`` and
``c_i`` the bodies' centres of mass in world coordinates (Pinocchio's ``computeKineticEnergy`` and
``computePotentialEnergy``, same convention: V = 0 at a centre of mass on the world origin). With
``tau = rnea(q, qd, qdd)`` (gravity included) they satisfy the power balance
``d/dt (T + V) = qd^T tau``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import Array
from .common import entry
from .frames import path_kinematics

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["kinetic_energy", "mechanical_energy", "potential_energy"]


def kinetic_energy(model: Model, q: Array, qd: Array, *, backend: str | None = None) -> Any:
    """Kinetic energy ``T = 1/2 qd^T M(q) qd`` (a scalar of the backend), by one velocity pass."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    I = model.constants(B).I
    K = path_kinematics(B, model, qs, vs)
    T: Any = None
    for i in range(model.N):
        Ti = B.dot(K.v[i], I[i] @ K.v[i])
        T = Ti if T is None else T + Ti
    return T / 2


def _potential(B, model, K):
    consts = model.constants(B)
    g_neg = B.rows(consts.a_grav, 3, 6)  # a_grav = [0; -g]
    V = None
    for i in range(model.N):
        m, c, _ = consts.inertia_params[i]
        X = K.X0[i]
        Vi = B.dot(g_neg, m * (X.r + X.E.T @ c))
        V = Vi if V is None else V + Vi
    return V


def potential_energy(model: Model, q: Array, *, backend: str | None = None) -> Any:
    """Gravitational potential energy ``V = -m g . c`` (a scalar of the backend), gravity from
    ``model.gravity``; Pinocchio's ``computePotentialEnergy``."""
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    return _potential(B, model, path_kinematics(B, model, qs))


def mechanical_energy(model: Model, q: Array, qd: Array, *, backend: str | None = None) -> Any:
    """``T + V`` (Pinocchio's ``computeMechanicalEnergy``)."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    I = model.constants(B).I
    K = path_kinematics(B, model, qs, vs)
    E = _potential(B, model, K)
    for i in range(model.N):
        E = E + B.dot(K.v[i], I[i] @ K.v[i]) / 2
    return E
