"""Frame spatial accelerations and the analytical derivatives of frame kinematics.

Pinocchio's ``getFrameAcceleration``, ``computeForwardKinematicsDerivatives`` with
``getFrameVelocityDerivatives`` / ``getFrameAccelerationDerivatives``, and
``computeJointKinematicHessians`` with ``getFrameKinematicHessian``, written once over the
backend from the spatial-algebra identities below (no numeric differentiation, no AD).

Conventions
-----------
* Rows are ``[angular; linear]`` by default (``order="linear_first"``: Pinocchio's
  ``[linear; angular]``, the two 3-row blocks swapped); columns run over symdyn's speeds
  (free-flyer ``[omega; v]``, Pinocchio's ``[v; omega]``: ``symdyn.interop.pinocchio.
  matrix_from_pin``). Frames and references as in :mod:`.frames` (``"local"``, ``"world"``,
  ``"local_world_aligned"`` = Pinocchio's LOCAL, WORLD, LOCAL_WORLD_ALIGNED). Accelerations
  exclude gravity.
* Derivatives with respect to ``q`` are taken in the tangent space: column k is
  ``d/de x(q (+) e e_k)`` at e = 0 with ``(+)`` the joints' ``integrate`` (for floating and
  spherical joints a perturbation by the body twist; Pinocchio's convention).

The identities (world coordinates; paper 003, Algorithm 1, lines 5-7). For a joint j with
world motion subspace ``S_j = ^0X_j S_j``, parent body ``p(j)``, world velocities ``v`` and
accelerations ``a`` (no gravity), perturbing ``q_j`` moves the whole subtree of j by the world
twist ``S_j de``: every world motion vector m of that subtree becomes ``m + de S_j x m``, and

    Psid_j = v_p(j) x S_j,    Sd_j = v_j x S_j,    Psidd_j = a_p(j) x S_j + v_p(j) x Psid_j.

For a frame on body b with world velocity ``v_b`` and acceleration ``a_b`` and a supporting
joint j (columns of the other joints are zero):

* WORLD:  ``dv/dq_j = Psid_j - v_b x S_j``,  ``dv/dqd_j = S_j``,
  ``da/dq_j = Psidd_j - a_b x S_j - v_b x Psid_j``,  ``da/dqd_j = Psid_j + Sd_j - v_b x S_j``,
  ``da/dqdd_j = S_j``;
* LOCAL: the frame's own coordinates move with it (``d ^fX_0/dq_j = -^fX_0 (S_j x)``), so
  ``dv/dq_j = ^fX_0 Psid_j``, ``da/dq_j = ^fX_0 (Psidd_j - v_b x Psid_j)`` and the qd / qdd
  columns are the WORLD ones carried by ``^fX_0``;
* LOCAL_WORLD_ALIGNED: **Pinocchio's convention**, the WORLD derivatives moved to the frame
  origin ``p`` with world axes (``[m_ang; m_lin - p x m_ang]``) with ``p`` and the axes held
  fixed. The qd and qdd columns are the exact derivatives (the LWA Jacobian); the q columns are
  not the total derivative of the LWA velocity / acceleration (which would also move ``p`` and
  turn the axes), they are what Pinocchio 4.1 returns.

The kinematic Hessian ``H`` (6 x nv x nv) is the exact tangent derivative of
:func:`~symdyn.algorithms.frames.frame_jacobian`: ``H[:, i, j] = d J[:, i] / d q_j`` (Pinocchio's
``getFrameKinematicHessian``, whose Python binding returns the column-major tensor read in C
order: ``np.asarray(H).reshape(-1).reshape((6, nv, nv), order="F")`` is this H). With ``J`` the
WORLD Jacobian, ``dJ[:, i]/dq_j = S_j x S_i`` when joint j supports joint i (j = i included, all
column pairs of a multi-DoF joint) and 0 otherwise; LOCAL: ``^fX_0 (S_i x S_j)`` when joint i
strictly supports joint j, else 0; LOCAL_WORLD_ALIGNED: the WORLD entry moved to ``p`` minus
``[0; pdot_j x omega_i]`` (``pdot_j``: the frame origin's velocity along column j).

Joints whose motion subspace varies in body coordinates (planar) are refused by the derivatives
(ValueError naming the joint); :func:`frame_acceleration` supports them.

Pinocchio 4.1 agrees with all of the above except on frames below a spherical joint that is not
the root: there its WORLD and LOCAL_WORLD_ALIGNED ``da_dq`` (which use ``(v_p - v_b) x Sd_j``
where the derivative has ``(v_p - v_b) x Psid_j``; the two differ by ``(S_j qd_j) x S_j``, zero
for one-DoF joints) and its LOCAL kinematic Hessian differ from its own finite differences.
symdyn returns the exact derivatives there (checked against CasADi AD).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..spatial import cross_motion, skew, xform_motion, xform_motion_inv
from ..types import Array, Backend
from .common import entry
from .frames import (FrameRef, assemble_columns, check_order, check_reference, frame_transform,
                     in_order, lwa_shift, path_kinematics, resolve_frame)
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["frame_acceleration", "frame_acceleration_derivatives", "frame_kinematic_hessian",
           "frame_velocity_derivatives"]


# --- spatial acceleration ---------------------------------------------------------------------

@dispatch
def frame_acceleration(model: Model, q: Array, qd: Array, qdd: Array, frame: FrameRef,
                       reference: str = "local", *, order: str = "angular_first",
                       backend: str | None = None) -> Array:
    """Spatial acceleration ``[alpha; a]`` (6) of ``frame`` (Pinocchio's ``getFrameAcceleration``
    after ``forwardKinematics(q, v, a)``, whose ``.vector`` is ``[a; alpha]``; gravity excluded).

    ``"local"``: the body's spatial acceleration in frame coordinates (``a`` is the spatial, not
    the classical, linear acceleration of the frame origin;
    :func:`~symdyn.algorithms.frames.frame_classical_acceleration` adds ``omega x v``);
    ``"world"``: in world coordinates (at the world origin); ``"local_world_aligned"``: the
    local vector with both 3-blocks rotated into world axes. In world coordinates it is the
    time derivative of the spatial velocity: ``d/dt frame_velocity(..., "world")``.

    **Rows ``[angular; linear]``** (``order="linear_first"`` for Pinocchio's ``[linear;
    angular]``).
    """
    check_reference(reference)
    check_order(order)
    B, (qs, vs, us) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body < 0:
        return in_order(B, B.zeros(6), order)
    K = path_kinematics(B, model, qs, vs, us, bodies=[fr.body])
    Xf0, Xf = frame_transform(B, model, K, fr)
    ab = K.a[fr.body]
    if reference == "world":
        out = xform_motion_inv(B, K.X0[fr.body], ab)
    else:
        out = ab if Xf is None else xform_motion(B, Xf, ab)
        if reference == "local_world_aligned":
            R = Xf0.E.T
            out = B.vcat([R @ B.rows(out, 0, 3), R @ B.rows(out, 3, 6)])
    return in_order(B, out, order)


# --- the world-frame terms along the support of a body ----------------------------------------

class SupportTerms(NamedTuple):
    """World-coordinate quantities of the joints j supporting a body (dicts keyed by j) and of
    the body itself: ``S`` (^0X_j S_j), ``Psid``, ``Sd``, ``Psidd`` (module docstring; empty
    without qd, ``Psidd`` also without qdd), ``v``, ``a`` the body's world velocity and
    acceleration (None without qd / qdd), and the path kinematics ``K``."""

    S: dict
    Psid: dict
    Sd: dict
    Psidd: dict
    v: Any
    a: Any
    K: Any


def check_support(model, body: int, what: str) -> None:
    """Refuse joints on the support of ``body`` whose motion subspace varies in body
    coordinates (the planar joint), naming the joint."""
    for j in model.ancestors[body]:
        if not model.joints[j].S_constant:
            raise ValueError(
                f"{what}: joint {model.joints[j]!r} of body {model.names[j]!r} has a motion "
                "subspace that varies in body coordinates (planar); only joints with a constant "
                "S (revolute, prismatic, helical, spherical, floating) are supported")


def support_terms(B: Backend, model, qs, vs=None, us=None, body: int = 0) -> SupportTerms:
    """:class:`SupportTerms` of ``body`` from per-joint segments ``qs``, ``vs``, ``us``."""
    K = path_kinematics(B, model, qs, vs, us, bodies=[body])
    anc = model.ancestors[body]
    S = {j: xform_motion_inv(B, K.X0[j], K.S[j]) for j in anc}
    if vs is None:
        return SupportTerms(S, {}, {}, {}, None, None, K)
    v0 = {j: xform_motion_inv(B, K.X0[j], K.v[j]) for j in anc}
    a0 = {j: xform_motion_inv(B, K.X0[j], K.a[j]) for j in anc} if us is not None else {}
    Psid, Sd, Psidd = {}, {}, {}
    for j in anc:
        p = model.parents[j]
        Sd[j] = cross_motion(B, v0[j], S[j])                                   # line 5
        if p < 0:                                        # the root's parent is the fixed world
            Psid[j] = B.zeros(6, S[j].shape[1])
            Psidd[j] = Psid[j]
            continue
        Psid[j] = cross_motion(B, v0[p], S[j])                                 # line 6
        if us is not None:
            Psidd[j] = cross_motion(B, a0[p], S[j]) + cross_motion(B, v0[p], Psid[j])  # line 7
    return SupportTerms(S, Psid, Sd, Psidd if us is not None else {}, v0[body],
                        a0[body] if us is not None else None, K)


def _express(B: Backend, model, Xf0, cols: dict, reference: str, local_cols: dict | None = None):
    """The 6 x nv matrix of ``cols`` (world columns of the supporting joints) in ``reference``:
    WORLD as is, LOCAL_WORLD_ALIGNED moved to the frame origin, LOCAL ``^fX_0`` of
    ``local_cols`` (the world-coordinate form of the LOCAL derivative; ``cols`` if None)."""
    if reference == "local":
        M = assemble_columns(B, model, cols if local_cols is None else local_cols)
        return xform_motion(B, Xf0, M)
    M = assemble_columns(B, model, cols)
    return M if reference == "world" else lwa_shift(B, Xf0.r, M)


def _prepare(model, q, qd, qdd, frame, reference, order, backend, what):
    check_reference(reference)
    check_order(order)
    args = [("q", q, "q"), ("qd", qd, "v")] + ([("qdd", qdd, "v")] if qdd is not None else [])
    B, segs = entry(model, *args, backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body >= 0:
        check_support(model, fr.body, what)
    return B, segs, fr


# --- velocity and acceleration derivatives ------------------------------------------------------

@dispatch
def frame_velocity_derivatives(model: Model, q: Array, qd: Array, frame: FrameRef,
                               reference: str = "local", *, order: str = "angular_first",
                               backend: str | None = None) -> tuple[Array, Array]:
    """``(dv_dq, dv_dqd)`` (6 x nv each) of :func:`~symdyn.algorithms.frames.frame_velocity`
    in ``reference``: Pinocchio's ``computeForwardKinematicsDerivatives`` +
    ``getFrameVelocityDerivatives`` (rows swapped unless ``order="linear_first"``).

    ``dv_dq`` is the tangent-space derivative (module docstring); ``dv_dqd`` is the frame
    Jacobian. For ``"local_world_aligned"`` ``dv_dq`` follows Pinocchio: the WORLD derivative
    moved to the frame origin with that point and the axes held fixed, not the total
    derivative of the LWA velocity (see the module docstring)."""
    B, (qs, vs), fr = _prepare(model, q, qd, None, frame, reference, order, backend,
                               "frame_velocity_derivatives")
    if fr.body < 0:
        return in_order(B, B.zeros(6, model.nv), order), in_order(B, B.zeros(6, model.nv), order)
    T = support_terms(B, model, qs, vs, body=fr.body)
    Xf0, _ = frame_transform(B, model, T.K, fr)
    dq = {j: T.Psid[j] - cross_motion(B, T.v, S) for j, S in T.S.items()}
    out = (_express(B, model, Xf0, dq, reference, local_cols=T.Psid),
           _express(B, model, Xf0, T.S, reference))
    return tuple(in_order(B, x, order) for x in out)  # type: ignore[return-value]


@dispatch
def frame_acceleration_derivatives(model: Model, q: Array, qd: Array, qdd: Array,
                                   frame: FrameRef, reference: str = "local", *,
                                   order: str = "angular_first", backend: str | None = None
                                   ) -> tuple[Array, Array, Array, Array]:
    """``(dv_dq, da_dq, da_dqd, da_dqdd)`` (6 x nv each) of the frame's spatial velocity and
    of :func:`frame_acceleration` in ``reference``: Pinocchio's
    ``computeForwardKinematicsDerivatives`` + ``getFrameAccelerationDerivatives`` (rows swapped
    unless ``order="linear_first"``). ``da_dqdd`` is the frame Jacobian (= ``dv_dqd``).

    Tangent-space q-derivatives; ``"local_world_aligned"`` follows Pinocchio's convention for
    the q columns (the WORLD derivatives moved to the frame origin; module docstring)."""
    B, (qs, vs, us), fr = _prepare(model, q, qd, qdd, frame, reference, order, backend,
                                   "frame_acceleration_derivatives")
    if fr.body < 0:
        Z = in_order(B, B.zeros(6, model.nv), order)
        return Z, Z, Z, Z
    T = support_terms(B, model, qs, vs, us, body=fr.body)
    Xf0, _ = frame_transform(B, model, T.K, fr)
    vx = {j: cross_motion(B, T.v, S) for j, S in T.S.items()}                  # v_b x S_j
    vxPsid = {j: cross_motion(B, T.v, P) for j, P in T.Psid.items()}           # v_b x Psid_j
    dv_dq = {j: T.Psid[j] - vx[j] for j in T.S}
    da_dq = {j: T.Psidd[j] - cross_motion(B, T.a, S) - vxPsid[j] for j, S in T.S.items()}
    da_dq_local = {j: T.Psidd[j] - vxPsid[j] for j in T.S}
    da_dqd = {j: T.Psid[j] + T.Sd[j] - vx[j] for j in T.S}
    out = (_express(B, model, Xf0, dv_dq, reference, local_cols=T.Psid),
           _express(B, model, Xf0, da_dq, reference, local_cols=da_dq_local),
           _express(B, model, Xf0, da_dqd, reference),
           _express(B, model, Xf0, T.S, reference))
    return tuple(in_order(B, x, order) for x in out)  # type: ignore[return-value]


# --- kinematic Hessian ---------------------------------------------------------------------------

@dispatch
def frame_kinematic_hessian(model: Model, q: Array, frame: FrameRef, reference: str = "local",
                            *, order: str = "angular_first", backend: str | None = None) -> Any:
    """Kinematic Hessian ``H`` (6 x nv x nv): ``H[:, i, j] = d J[:, i] / d q_j`` with
    ``J = frame_jacobian(model, q, frame, reference)`` and the tangent-space derivative in q
    (module docstring). Pinocchio's ``computeJointKinematicHessians`` +
    ``getFrameKinematicHessian`` (for every reference the exact derivative of its Jacobian;
    its Python binding reads the column-major tensor in C order, see the module docstring).

    NumPy returns an ndarray; the graph backends a :class:`~symdyn.backends.tensor.Tensor3`
    whose page ``H[:, :, j]`` is ``dJ/dq_j`` (``B.pages(H)``). Rows ``[angular; linear]``
    (``order="linear_first"``: Pinocchio's)."""
    check_reference(reference)
    check_order(order)
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    fr = resolve_frame(model, frame)
    nv = model.nv
    H = B.tensor3(6, nv, nv)
    if fr.body < 0:
        return H
    check_support(model, fr.body, "frame_kinematic_hessian")
    T = support_terms(B, model, qs, body=fr.body)
    Xf0, _ = frame_transform(B, model, T.K, fr)
    anc = model.ancestors[fr.body]                   # body first, root last
    p = Xf0.r
    for j in anc:                                    # direction q_j (all columns of joint j)
        Sj = T.S[j]
        for c in range(Sj.shape[1]):
            Sjc = B.vector([Sj[r, c] for r in range(6)])
            page = _hessian_page(B, model, T.S, anc, j, Sjc, Xf0, p, reference)
            H = B.assign3(H, slice(None), slice(None), model.v_idx[j][0] + c,
                          in_order(B, page, order))
    return H


def _hessian_page(B: Backend, model, S, anc, j, Sjc, Xf0, p, reference):
    """dJ/dq_(j, c): the 6 x nv page of the direction ``Sjc`` (column c of joint j)."""
    below = anc[:anc.index(j) + 1]                   # joints i supported by j (j included)
    above = anc[anc.index(j) + 1:]                   # joints strictly supporting j
    if reference == "local":
        cols = {i: -cross_motion(B, Sjc, S[i]) for i in above}      # S_i x S_j
        return xform_motion(B, Xf0, assemble_columns(B, model, cols))
    cols = {i: cross_motion(B, Sjc, S[i]) for i in below}           # S_j x S_i
    W = assemble_columns(B, model, cols)
    if reference == "world":
        return W
    pdot = B.rows(Sjc, 3, 6) - skew(B, p) @ B.rows(Sjc, 0, 3)   # frame origin's velocity
    w = B.rows(assemble_columns(B, model, S), 0, 3)                    # world angular columns
    return lwa_shift(B, p, W) - B.vcat([B.zeros(3, model.nv), skew(B, pdot) @ w])
