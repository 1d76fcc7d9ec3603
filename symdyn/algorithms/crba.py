"""Composite-Rigid-Body Algorithm (Featherstone 2008, Table 6.2; paper 000 eqs. (15), (17), (19))."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import inertia_congruence_sym, xform_force_T
from .common import assemble_blocks, entry, joint_kinematics
from ..types import Array

if TYPE_CHECKING:
    from ..model import Model


def crba(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """Joint-space mass matrix M(q) (nv x nv, full and symmetric) in the inputs' backend,
    ``model.armature`` included on the diagonal (``model.replace(armature=0)`` leaves it out)."""
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    I, armature = model.constants(B).I, model.constants(B).armature
    Xup, S = joint_kinematics(B, model, q)
    IC = list(I)
    for i in reversed(range(model.N)):
        p = model.parents[i]
        if p >= 0:
            IC[p] = IC[p] + inertia_congruence_sym(B, Xup[i], IC[i])   # X^T I^C X, (15)
    M = {}
    for i in range(model.N):
        F = IC[i] @ S[i]
        M[i, i] = S[i].T @ F                                       # (19)
        if armature[i] is not None:
            M[i, i] = M[i, i] + armature[i]                        # rotor inertia
        j = i
        while model.parents[j] >= 0:
            F = xform_force_T(B, Xup[j], F)
            j = model.parents[j]
            M[j, i] = S[j].T @ F                                   # (17)
            M[i, j] = M[j, i].T
    return assemble_blocks(B, model, M)
