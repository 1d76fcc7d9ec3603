"""Composite-Rigid-Body Algorithm (Featherstone 2008, Table 6.2; paper 000 eqs. (15), (17), (19))."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import inertia_congruence_sym, xform_force_T
from .common import assemble_blocks, entry, joint_kinematics
from .root_frame import root_inertias, root_kinematics
from .steps import step
from ..types import Array, Backend
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


FRAMES = ("body", "root")


@dispatch
def crba(model: Model, q: Array, *, frame: str = "body", backend: str | None = None) -> Array:
    """Joint-space mass matrix M(q) (nv x nv, full and symmetric) in the inputs' backend,
    ``model.armature`` included on the diagonal (``model.replace(armature=0)`` leaves it out).

    ``frame="body"``: Featherstone's listing (body coordinates; F moves up with one transform
    per ancestor). ``frame="root"``: every quantity in the coordinates of its tree's root body
    (paper 000 footnote 2, as :func:`~symdyn.algorithms.coriolis.coriolis_matrix`): composite
    inertias are plain sums and M_ji = S_j^T F_i needs no transform, for O(N) poses up front
    (:mod:`symdyn.algorithms.root_frame`). Same M; which graph is smaller depends on the model.
    """
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; choose 'body' or 'root'")
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    armature = model.constants(B).armature
    if frame == "root":
        X0, S, _, _ = root_kinematics(B, model, q)
        I, X = root_inertias(B, model, X0), [None] * model.N
    else:
        X, S = joint_kinematics(B, model, q)
        I = model.constants(B).I
    IC = list(I)
    for i in reversed(range(model.N)):
        p = model.parents[i]
        if p >= 0:
            IC[p] = crba_composite(B, IC[p], X[i], IC[i])
    M = {}
    for i in range(model.N):
        F, M[i, i] = crba_diagonal(B, IC[i], S[i], armature[i])
        j = i
        while model.parents[j] >= 0:
            F, M[model.parents[j], i] = crba_ancestor(B, X[j], F, S[model.parents[j]])
            j = model.parents[j]
            M[i, j] = M[j, i].T
    return assemble_blocks(B, model, M)


@step
def crba_composite(B: Backend, IC_p, Xup, IC):
    """The parent's composite inertia with this subtree's added: IC_p + X^T IC X (``Xup`` None:
    both in one frame)."""
    return IC_p + (IC if Xup is None else inertia_congruence_sym(B, Xup, IC))  # (15)


@step
def crba_diagonal(B: Backend, IC, S, armature):
    """F = IC S and the diagonal block M_ii = S^T F (+ rotor inertia)."""
    F = IC @ S
    M_ii = S.T @ F                                                  # (19)
    return F, (M_ii if armature is None else M_ii + armature)


@step
def crba_ancestor(B: Backend, Xup, F, S_p):
    """F moved to the parent's coordinates (``Xup`` None: one frame) and M_pi = S_p^T F."""
    if Xup is not None:
        F = xform_force_T(B, Xup, F)
    return F, S_p.T @ F                                             # (17)
