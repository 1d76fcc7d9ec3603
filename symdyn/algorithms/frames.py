"""Frames: placements, velocities, Jacobians, their time variation and classical accelerations.

A *frame* is rigidly attached to a body: :class:`symdyn.model.Frame` ``(body, X)`` with ``X`` the
compact transform from body coordinates to the frame (``X.E`` rotates body coordinates into frame
coordinates, ``X.r`` is the frame origin in body coordinates); ``body == -1`` is the world. Every
function here accepts, as ``frame``,

* a link name: ``model.frames[name]`` (every URDF link, fixed links such as end effectors included);
* a joint name (a name of ``model.joint_names`` that is not also a link name): the joint's
  *successor* frame, i.e. the frame of the body that the joint moves (``Frame(i, identity)`` for
  ``model.joint_names[i]``). URDF puts the child link frame on the joint frame, so this is also
  Pinocchio's ``JOINT`` frame of that name (``data.oMi``); see :func:`joint_frames` for the
  predecessor side;
* a body index ``i`` (the body frame, ``Frame(i, identity)``), or a :class:`~symdyn.model.Frame`.

Conventions (symdyn vs Pinocchio)
---------------------------------
Spatial motion vectors are ``[angular; linear]`` = ``[omega; v]`` in symdyn; Pinocchio's
``Motion.vector`` and the rows of its Jacobians are ``[linear; angular]`` (swap the two 3-blocks
to compare). The three references are Pinocchio's:

* ``"local"`` (``pin.LOCAL``): frame coordinates; ``v`` is the velocity of the frame origin.
* ``"world"`` (``pin.WORLD``): world coordinates of the spatial velocity, whose linear part is the
  velocity of the body-fixed point that is instantaneously at the world origin
  (``v = pdot - omega x p``), not the frame origin's velocity.
* ``"local_world_aligned"`` (``pin.LOCAL_WORLD_ALIGNED``): the frame origin's velocity
  ``[omega; pdot]`` in world-aligned axes.

Jacobian columns run over the model's speeds ``qd`` (length ``nv``); floating-base and spherical
joints use body-velocity speeds (see :mod:`symdyn.joints`), so ``frame_velocity = J qd``. Pinocchio's
free-flyer speeds are ``[v; omega]``: compare with :func:`symdyn.pinocchio_bridge.matrix_from_pin`.

``frame_jacobian_time_variation`` is the exact time derivative ``dJ/dt`` of ``frame_jacobian`` for
the same reference along the motion (``q`` moving with speeds ``qd``), Pinocchio's
``getFrameJacobianTimeVariation``. ``frame_classical_acceleration`` is Pinocchio's
``getFrameClassicalAcceleration``: the spatial acceleration plus ``[0; omega x v]``, i.e.
``[alpha; pddot]`` of the frame origin in the chosen axes (for ``"world"``: of the body-fixed point
at the world origin). With ``qdd = 0`` it is the task-space drift:

* ``"local_world_aligned"``: ``drift = dJ/dt qd`` exactly (``[omega; pdot] = J qd``, so
  ``[alpha; pddot] = J qdd + dJ/dt qd``);
* ``"local"``: ``drift = dJ/dt qd + [0; omega x v]`` (frame coordinates);
* ``"world"``: ``drift = dJ/dt qd + [0; omega x v]`` (world coordinates, ``v`` the world linear
  velocity defined above).

Accelerations exclude gravity (Pinocchio's ``forwardKinematics(q, v, a)`` likewise).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..spatial import Transform, compose, cross_motion, skew, xform_motion, xform_motion_inv
from ..types import Array
from .common import entry

if TYPE_CHECKING:
    from ..model import Frame, Model

#: What names a frame: a link or joint name, a body index or a :class:`~symdyn.model.Frame`.
FrameRef = Any

REFERENCES = ("local", "world", "local_world_aligned")

__all__ = ["FrameRef", "REFERENCES", "frame_classical_acceleration", "frame_jacobian",
           "frame_jacobian_time_variation", "frame_placement", "frame_velocity", "joint_frames",
           "resolve_frame"]


# --- frame names ---------------------------------------------------------------------------------

def _identity_frame(body: int):
    from ..model import Frame

    return Frame(body, Transform(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (0.0, 0.0, 0.0)))


def joint_frames(model: Model, side: str = "child") -> dict[str, Frame]:
    """Frames of the moving joints by joint name (``model.joint_names``).

    ``side="child"`` (what a joint name resolves to elsewhere in this module): the successor
    frame, rigidly attached to body ``i`` and equal to its body frame, ``Frame(i, identity)``;
    it moves with the joint (Pinocchio's ``JOINT`` frame, ``data.oMi[joint]``). ``side="parent"``:
    the predecessor frame ``Frame(parents[i], Xtree[i])`` fixed on the parent body (``-1``: the
    world), in which the joint axis is given; the two coincide where the joint transform is the
    identity (q = 0 for revolute and prismatic joints).

    Fixed URDF joints are merged away by the Model and their names are not kept; their child
    link is in ``model.frames`` under the link's name.
    """
    from ..model import Frame

    if side == "child":
        return {n: _identity_frame(i) for i, n in enumerate(model.joint_names)}
    if side == "parent":
        return {n: Frame(model.parents[i], model.Xtree[i]) for i, n in enumerate(model.joint_names)}
    raise ValueError(f"side must be 'child' or 'parent', got {side!r}")


def resolve_frame(model: Model, frame: FrameRef) -> Frame:
    """The :class:`~symdyn.model.Frame` that ``frame`` names: a link name (``model.frames``), a
    joint name (its successor frame, see :func:`joint_frames`), a body index or a Frame."""
    from ..model import Frame

    if isinstance(frame, Frame):
        b = frame.body
        if isinstance(b, bool) or not hasattr(b, "__index__") or not -1 <= b.__index__() < model.N:
            raise ValueError(f"frame body {b!r} is out of range [-1, {model.N - 1}]")
        return frame if type(b) is int else Frame(b.__index__(), frame.X)
    if isinstance(frame, str):
        if frame in model.frames:
            return model.frames[frame]
        if frame in model.joint_names:
            return _identity_frame(model.joint_names.index(frame))
        known = sorted(model.frames)
        raise KeyError(f"model {model.name!r} has no frame or joint named {frame!r}; frames: "
                       f"{', '.join(known[:20])}{', ...' if len(known) > 20 else ''}")
    if isinstance(frame, bool) or not hasattr(frame, "__index__"):
        raise TypeError(f"frame must be a frame or joint name, a body index or a Frame, "
                        f"got {type(frame).__name__}")
    i = frame.__index__()
    if not 0 <= i < model.N:
        raise ValueError(f"body index {i} is out of range [0, {model.N - 1}]")
    return _identity_frame(i)


def _is_identity(X) -> bool:
    try:
        return all(_entry(X.E, a, b) == (1 if a == b else 0) for a in range(3) for b in range(3)) \
            and all(_entry(X.r, k) == 0 for k in range(3))
    except (TypeError, IndexError):
        return False


def _native_transform(B, X) -> Transform:
    E = B.const([[_entry(X.E, a, b) for b in range(3)] for a in range(3)])
    return Transform(E, B.const([_entry(X.r, k) for k in range(3)]))


def _entry(x, a, b=None):
    try:
        return x[a] if b is None else x[a, b]
    except (TypeError, IndexError):  # nested tuples
        return x[a] if b is None else x[a][b]


def _check_reference(reference: str) -> None:
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(map(repr, REFERENCES))}, "
                         f"got {reference!r}")


# --- kinematics along the support of a body ----------------------------------------------------

class PathKinematics(NamedTuple):
    """Per-body quantities for the bodies in ``bodies`` (a dict body -> value for each field):
    ``X0`` world -> body transforms, ``S`` motion subspaces, ``Sring`` the apparent derivatives
    of S (6 x nv_i; None when S is constant or qd is not given), ``v``/``a`` body velocities and
    accelerations in body coordinates (empty when qd / qdd are not given)."""

    bodies: list
    X0: dict
    S: dict
    Sring: dict
    v: dict
    a: dict


def path_kinematics(B, model, q, qd=None, qdd=None, bodies=None) -> PathKinematics:
    """Forward kinematics restricted to ``bodies`` and their ancestors (all bodies if None).

    ``q``, ``qd``, ``qdd``: per-joint segments (from :func:`entry`). Velocities and accelerations
    are in body coordinates; accelerations start from zero (no gravity), as in RNEA's
    ``a_i = Xup_i a_p + S_i qdd_i + v_i x S_i qd_i + Sring_i qd_i``.
    """
    if bodies is None:
        need = list(range(model.N))
    else:
        need = sorted({j for b in bodies if b >= 0 for j in model.ancestors[b]})
    Xtree = model.constants(B).Xtree
    X0: dict = {}
    S: dict = {}
    Sr: dict = {}
    v: dict = {}
    a: dict = {}
    for i in need:
        p, joint = model.parents[i], model.joints[i]
        XJ, S[i] = joint.calc(B, q[i])
        Xup = compose(B, XJ, Xtree[i])
        X0[i] = Xup if p < 0 else compose(B, Xup, X0[p])
        Sr[i] = joint.Sring(B, q[i], qd[i]) if qd is not None else None
        if qd is None:
            continue
        vJ = S[i] @ qd[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup, v[p]) + vJ
        if qdd is None:
            continue
        ai = S[i] @ qdd[i] + cross_motion(B, v[i], vJ)
        if Sr[i] is not None:
            ai = ai + Sr[i] @ qd[i]
        a[i] = ai if p < 0 else xform_motion(B, Xup, a[p]) + ai
    return PathKinematics(need, X0, S, Sr, v, a)


def _world_columns(B, model, K: PathKinematics, body: int) -> dict:
    """World-coordinate motion subspaces ^0X_j S_j of the joints j supporting ``body``."""
    return {j: xform_motion_inv(B, K.X0[j], K.S[j]) for j in model.ancestors[body]}


def _assemble(B, model, cols: dict, rows: int = 6):
    return B.hcat([cols[j] if j in cols else B.zeros(rows, b - a)
                   for j, (a, b) in enumerate(model.v_idx)])


def _frame_transform(B, model, K, fr):
    """(world -> frame transform, body -> frame transform or None when the identity)."""
    Xf = None if _is_identity(fr.X) else _native_transform(B, fr.X)
    if fr.body < 0:
        return (Xf if Xf is not None else _native_transform(B, fr.X)), Xf
    X0b = K.X0[fr.body]
    return (X0b if Xf is None else compose(B, Xf, X0b)), Xf


def _lwa_shift(B, p, m):
    """[m0; m1 - p x m0]: world motion vectors (at the world origin) moved to the point p,
    world-aligned axes."""
    m0 = B.rows(m, 0, 3)
    return B.vcat([m0, B.rows(m, 3, 6) - skew(B, p) @ m0])


def _linear_plus(B, x, w, u):
    """[x0; x1 + w x u]."""
    return B.vcat([B.rows(x, 0, 3), B.rows(x, 3, 6) + skew(B, w) @ u])


# --- public functions ----------------------------------------------------------------------------

def frame_placement(model: Model, q: Array, frame: FrameRef, *,
                    backend: str | None = None) -> tuple[Array, Array]:
    """``(R, p)``: ``R`` (3x3) rotates frame coordinates into world coordinates and ``p`` (3) is
    the frame origin in world coordinates (Pinocchio: ``data.oMf[id].rotation``,
    ``data.oMf[id].translation``)."""
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    fr = resolve_frame(model, frame)
    K = path_kinematics(B, model, qs, bodies=[fr.body])
    Xf0, _ = _frame_transform(B, model, K, fr)
    return Xf0.E.T, Xf0.r


def frame_velocity(model: Model, q: Array, qd: Array, frame: FrameRef, reference: str = "local",
                   *, backend: str | None = None) -> Array:
    """Spatial velocity ``[omega; v]`` (6) of ``frame`` in ``reference`` (module docstring):
    ``"local"`` frame coordinates (v: frame origin velocity), ``"world"`` world coordinates (v:
    velocity of the body point at the world origin), ``"local_world_aligned"`` the frame origin
    velocity in world axes. Equals ``frame_jacobian(model, q, frame, reference) @ qd``.
    Pinocchio's ``getFrameVelocity(..., rf).vector`` is ``[v; omega]``."""
    _check_reference(reference)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body < 0:
        return B.zeros(6)
    K = path_kinematics(B, model, qs, vs, bodies=[fr.body])
    Xf0, Xf = _frame_transform(B, model, K, fr)
    vb = K.v[fr.body]
    if reference == "world":
        return xform_motion_inv(B, K.X0[fr.body], vb)
    vf = vb if Xf is None else xform_motion(B, Xf, vb)
    if reference == "local":
        return vf
    R = Xf0.E.T
    return B.vcat([R @ B.rows(vf, 0, 3), R @ B.rows(vf, 3, 6)])


def frame_jacobian(model: Model, q: Array, frame: FrameRef, reference: str = "local", *,
                   backend: str | None = None) -> Array:
    """Frame Jacobian (6 x nv, rows ``[angular; linear]``) with
    ``frame_velocity(model, q, qd, frame, reference) = J qd`` (Pinocchio's ``getFrameJacobian``,
    whose rows are ``[linear; angular]`` and whose free-flyer columns are ``[v; omega]``).
    Columns of joints that do not support the frame are zero."""
    _check_reference(reference)
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body < 0:
        return B.zeros(6, model.nv)
    K = path_kinematics(B, model, qs, bodies=[fr.body])
    Xf0, _ = _frame_transform(B, model, K, fr)
    J0 = _assemble(B, model, _world_columns(B, model, K, fr.body))
    if reference == "world":
        return J0
    if reference == "local":
        return xform_motion(B, Xf0, J0)
    return _lwa_shift(B, Xf0.r, J0)


def _world_jacobian_rate(B, model, K, body):
    """(J0, dJ0/dt) in world coordinates: columns ^0X_j S_j and v0_j x ^0X_j S_j + ^0X_j Sring_j."""
    J, dJ = {}, {}
    for j in model.ancestors[body]:
        J[j] = xform_motion_inv(B, K.X0[j], K.S[j])
        v0j = xform_motion_inv(B, K.X0[j], K.v[j])
        dJ[j] = cross_motion(B, v0j, J[j])
        if K.Sring[j] is not None:
            dJ[j] = dJ[j] + xform_motion_inv(B, K.X0[j], K.Sring[j])
    return _assemble(B, model, J), _assemble(B, model, dJ)


def frame_jacobian_time_variation(model: Model, q: Array, qd: Array, frame: FrameRef,
                                  reference: str = "local", *,
                                  backend: str | None = None) -> Array:
    """``dJ/dt`` (6 x nv): the time derivative of :func:`frame_jacobian` for the same reference
    while ``q`` moves with speeds ``qd`` (Pinocchio's ``getFrameJacobianTimeVariation`` after
    ``computeJointJacobiansTimeVariation``; rows ``[angular; linear]`` here).

    world: column j is ``v0_j x J0_j`` (+ the apparent derivative of S_j for planar joints);
    local: ``^fX_0 (dJ0 - v0_f x J0)``; local_world_aligned: ``[dJ0_w; dJ0_v - p x dJ0_w -
    pdot x J0_w]``."""
    _check_reference(reference)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body < 0:
        return B.zeros(6, model.nv)
    K = path_kinematics(B, model, qs, vs, bodies=[fr.body])
    Xf0, _ = _frame_transform(B, model, K, fr)
    J0, dJ0 = _world_jacobian_rate(B, model, K, fr.body)
    if reference == "world":
        return dJ0
    v0 = xform_motion_inv(B, K.X0[fr.body], K.v[fr.body])
    if reference == "local":
        return xform_motion(B, Xf0, dJ0 - cross_motion(B, v0, J0))
    p, w = Xf0.r, B.rows(v0, 0, 3)
    pdot = B.rows(v0, 3, 6) + skew(B, w) @ p
    return _lwa_shift(B, p, dJ0) - B.vcat([B.zeros(3, model.nv), skew(B, pdot) @ B.rows(J0, 0, 3)])


def frame_classical_acceleration(model: Model, q: Array, qd: Array, qdd: Array, frame: FrameRef,
                                 reference: str = "local", *,
                                 backend: str | None = None) -> Array:
    """Classical acceleration ``[alpha; a]`` (6) of ``frame`` (Pinocchio's
    ``getFrameClassicalAcceleration``: the spatial acceleration plus ``[0; omega x v]`` in the same
    reference). ``"local"``/``"local_world_aligned"``: ``a`` is the frame origin's acceleration
    ``pddot`` in frame / world axes; ``"world"``: the acceleration of the body point at the world
    origin. Gravity is not included. With ``qdd = 0`` this is the task-space drift; for
    ``"local_world_aligned"`` it equals ``frame_jacobian_time_variation(...) @ qd`` (the other
    references add ``[0; omega x v]``, see the module docstring)."""
    _check_reference(reference)
    B, (qs, vs, us) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    fr = resolve_frame(model, frame)
    if fr.body < 0:
        return B.zeros(6)
    K = path_kinematics(B, model, qs, vs, us, bodies=[fr.body])
    Xf0, Xf = _frame_transform(B, model, K, fr)
    vb, ab = K.v[fr.body], K.a[fr.body]
    if reference == "world":
        X0b = K.X0[fr.body]
        v0, a0 = xform_motion_inv(B, X0b, vb), xform_motion_inv(B, X0b, ab)
        return _linear_plus(B, a0, B.rows(v0, 0, 3), B.rows(v0, 3, 6))
    vf, af = (vb, ab) if Xf is None else (xform_motion(B, Xf, vb), xform_motion(B, Xf, ab))
    acc = _linear_plus(B, af, B.rows(vf, 0, 3), B.rows(vf, 3, 6))
    if reference == "local":
        return acc
    R = Xf0.E.T
    return B.vcat([R @ B.rows(acc, 0, 3), R @ B.rows(acc, 3, 6)])
