"""Forward kinematics and body Jacobians."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import compose, xform_motion
from .common import entry, joint_kinematics
from ..types import Array
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model


@dispatch
def forward_kinematics(model: Model, q: Array, qd: Array | None = None, *,
                       backend: str | None = None) -> tuple[list[Array], list[Array], list[Array]]:
    """Body poses in the world frame and, if qd is given, body velocities.

    Returns ``(R, p, v)``: ``R[i]`` rotates body-i coordinates into world coordinates, ``p[i]``
    is body i's origin in world coordinates and ``v[i]`` its spatial velocity [w; v_O] in body
    coordinates (``None`` entries when qd is not given).
    """
    args = [("q", q, "q")] + ([("qd", qd, "v")] if qd is not None else [])
    B, segs = entry(model, *args, backend=backend)
    q = segs[0]
    Xup, S = joint_kinematics(B, model, q)
    X0: list[Any] = [None] * model.N
    v: list[Any] = [None] * model.N
    for i, p in enumerate(model.parents):
        X0[i] = Xup[i] if p < 0 else compose(B, Xup[i], X0[p])
        if qd is not None:
            vJ = S[i] @ segs[1][i]
            v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ
    return [X.E.T for X in X0], [X.r for X in X0], v


@dispatch
def body_jacobians(model: Model, q: Array, *, backend: str | None = None) -> list[Array]:
    """Body Jacobians J[k] (6 x nv, body-k coordinates) with v_k = J[k] qd (paper 000 Remark 4)."""
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    Xup, S = joint_kinematics(B, model, q)
    # cols[k][j] = X_{k<-j} S_j for ancestors j of k
    cols: list[dict[int, Any]] = [{} for _ in range(model.N)]
    for k, p in enumerate(model.parents):
        cols[k] = {} if p < 0 else {j: xform_motion(B, Xup[k], Sj) for j, Sj in cols[p].items()}
        cols[k][k] = S[k]
    J = []
    for k in range(model.N):
        J.append(B.hcat([cols[k][j] if j in cols[k] else B.zeros(6, b - a)
                         for j, (a, b) in enumerate(model.v_idx)]))
    return J


