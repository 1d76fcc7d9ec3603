"""Frames: placements, velocities, Jacobians, their time variation and classical accelerations.

A *frame* is rigidly attached to a body: :class:`symdyn.model.Frame` ``(body, X)`` with ``X`` the
compact transform from body coordinates to the frame (``X.E`` rotates body coordinates into frame
coordinates, ``X.r`` is the frame origin in body coordinates); ``body == -1`` is the world. Every
function here accepts, as ``frame``,

* a link name: ``model.frames[name]`` (every URDF link, fixed links such as end effectors included);
* a joint name: for a moving joint (``model.joint_names``) its *successor* frame, i.e. the frame
  of the body that the joint moves (``Frame(i, identity)`` for ``model.joint_names[i]``); URDF
  puts the child link frame on the joint frame, so this is Pinocchio's ``JOINT`` frame of that
  name (``data.oMi``); see :func:`joint_frames` for the predecessor side. For a joint that does
  not move (``model.fixed_joints``: fixed URDF joints such as ur5's ``ee_fixed_joint``, joints
  locked by ``reduced_model``) its child link's frame, Pinocchio's ``FIXED_JOINT`` frame;
* ``"link:NAME"`` or ``"joint:NAME"`` where a link and a joint share ``NAME`` and are different
  frames (anymal_c's ``LF_HAA``, so100's ``gripper``): the bare name is then refused with a
  ``ValueError`` saying so (:func:`resolve_frame`);
* a body index ``i`` (the body frame, ``Frame(i, identity)``), or a :class:`~symdyn.model.Frame`.

Conventions (symdyn vs Pinocchio)
---------------------------------
Spatial motion vectors are ``[angular; linear]`` = ``[omega; v]`` in symdyn; Pinocchio's
``Motion.vector`` and the rows of its Jacobians are ``[linear; angular]``. **The functions here
have Pinocchio's names and references but return rows ``[angular; linear]`` by default**: pass
``order="linear_first"`` to get Pinocchio's row order (the two 3-row blocks swapped; see
:data:`ORDERS`). The three references are Pinocchio's:

* ``"local"`` (``pin.LOCAL``): frame coordinates; ``v`` is the velocity of the frame origin.
* ``"world"`` (``pin.WORLD``): world coordinates of the spatial velocity, whose linear part is the
  velocity of the body-fixed point that is instantaneously at the world origin
  (``v = pdot - omega x p``), not the frame origin's velocity.
* ``"local_world_aligned"`` (``pin.LOCAL_WORLD_ALIGNED``): the frame origin's velocity
  ``[omega; pdot]`` in world-aligned axes.

Jacobian columns run over the model's speeds ``qd`` (length ``nv``); floating-base and spherical
joints use body-velocity speeds (see :mod:`symdyn.joints`), so ``frame_velocity = J qd``. Pinocchio's
free-flyer speeds are ``[v; omega]``: compare with :func:`symdyn.interop.pinocchio.matrix_from_pin`.

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
from ..types import Array, Backend
from .common import entry
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Frame, Model

#: What names a frame: a link or joint name, a body index or a :class:`~symdyn.model.Frame`.
FrameRef = Any

REFERENCES = ("local", "world", "local_world_aligned")

__all__ = ["FrameRef", "KINDS", "ORDERS", "REFERENCES", "frame_classical_acceleration", "frame_jacobian",
           "frame_jacobian_time_variation", "frame_placement", "frame_velocity", "joint_frames",
           "resolve_frame"]


# --- frame names ---------------------------------------------------------------------------------

def _identity_frame(body: int, name: str | None = None):
    from ..model import Frame

    return Frame(body, Transform(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), (0.0, 0.0, 0.0)),
                 name)


@dispatch
def joint_frames(model: Model, side: str = "child") -> dict[str, Frame]:
    """Frames of the joints by joint name.

    ``side="child"`` (what a joint name resolves to elsewhere in this module): the successor
    frame of each moving joint (``model.joint_names``), rigidly attached to body ``i`` and equal
    to its body frame, ``Frame(i, identity)``; it moves with the joint (Pinocchio's ``JOINT``
    frame, ``data.oMi[joint]``). Then the joints that do not move (``model.fixed_joints``: fixed
    URDF joints and joints locked by ``reduced_model``), each the frame of its child link
    (Pinocchio's ``FIXED_JOINT`` frames).

    ``side="parent"``: the predecessor frame of each moving joint, ``Frame(parents[i],
    Xtree[i])`` fixed on the parent body (``-1``: the world), in which the joint axis is given;
    it coincides with the successor frame where the joint transform is the identity (q = 0 for
    revolute and prismatic joints). Fixed and locked joints have one frame (the child side, as
    in Pinocchio) and are not listed here.
    """
    from ..model import Frame

    if side == "child":
        out = {n: _identity_frame(i, n) for i, n in enumerate(model.joint_names)}
        out.update({n: Frame(model.frames[link].body, model.frames[link].X, n)
                    for n, link in model.fixed_joints.items()})
        return out
    if side == "parent":
        return {n: Frame(model.parents[i], model.Xtree[i], n) for i, n in enumerate(model.joint_names)}
    raise ValueError(f"side must be 'child' or 'parent', got {side!r}")


#: Prefixes that say which kind of frame a name means where a link and a joint share it.
KINDS = ("link", "joint")


def _lookup(model: Model, name: str):
    """(link frame or None, joint frame or None, whether they are one frame) for an exact name."""
    from ..model import Frame

    link = model.frames.get(name)
    joint = None
    if name in model.joint_names:
        joint = _identity_frame(model.joint_names.index(name), name)
    elif name in model.fixed_joints:
        child = model.frames[model.fixed_joints[name]]
        joint = Frame(child.body, child.X, name)
    return link, joint, link is not None and joint is not None and link == joint


def _joint_description(model: Model, name: str) -> str:
    if name in model.joint_names:
        i = model.joint_names.index(name)
        return f"the moving joint {name!r} (frame of body {model.names[i]!r}, moving with it)"
    return f"the fixed joint {name!r} (frame of its child link {model.fixed_joints[name]!r})"


def resolve_frame(model: Model, frame: FrameRef) -> Frame:
    """The :class:`~symdyn.model.Frame` that ``frame`` names.

    * a name: a link (``model.frames``), a moving joint (its successor frame, see
      :func:`joint_frames`) or a fixed or locked joint (``model.fixed_joints``: its child link's
      frame). A name that is both a link and a joint with different frames (anymal_c's
      ``LF_HAA``: the link before the joint ``LF_HAA``) raises ``ValueError``: qualify it as
      ``"link:LF_HAA"`` or ``"joint:LF_HAA"``. A link and a joint that are one frame (the same
      body, exactly equal placements: e.g. a fixed joint named after its own child link, z1's
      ``gripperStator``) need no prefix. An exact name always wins over a prefix (a
      link literally named ``"joint:x"`` is that link);
    * a body index ``i``: the body frame ``Frame(i, identity)``;
    * a :class:`~symdyn.model.Frame` (e.g. ``model.frames["tool0"]`` or a hand-made one).

    Raises ``KeyError`` for unknown names, ``ValueError`` for ambiguous names and out-of-range
    bodies, ``TypeError`` for other types."""
    from ..model import Frame

    if isinstance(frame, Frame):
        b = frame.body
        if isinstance(b, bool) or not hasattr(b, "__index__") or not -1 <= b.__index__() < model.N:
            raise ValueError(f"frame body {b!r} is out of range [-1, {model.N - 1}]")
        return frame if type(b) is int else Frame(b.__index__(), frame.X, frame.name)
    if isinstance(frame, str):
        link, joint, same = _lookup(model, frame)
        if link is not None and joint is not None and not same:
            where = "the world" if link.body < 0 else f"body {model.names[link.body]!r}"
            raise ValueError(
                f"frame name {frame!r} is ambiguous in model {model.name!r}: it is the link "
                f"{frame!r} (on {where}) "
                f"and {_joint_description(model, frame)}, two different frames; write "
                f"'link:{frame}' or 'joint:{frame}' to choose (or pass a symdyn.model.Frame, e.g. "
                f"model.frames[{frame!r}] for the link)")
        if link is not None or joint is not None:
            return link if link is not None else joint
        kind, sep, rest = frame.partition(":")
        if sep and kind in KINDS:
            link, joint, _ = _lookup(model, rest)
            found = link if kind == "link" else joint
            if found is None:
                raise KeyError(f"model {model.name!r} has no {kind} named {rest!r}"
                               + (f" (there is a {'joint' if kind == 'link' else 'link'} of that "
                                  "name)" if (link or joint) is not None else ""))
            return found
        known = sorted(set(model.frames) | set(model.joint_names) | set(model.fixed_joints))
        raise KeyError(f"model {model.name!r} has no frame or joint named {frame!r}; frames and "
                       f"joints: {', '.join(known[:20])}{', ...' if len(known) > 20 else ''}")
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


def _native_transform(B: Backend, X) -> Transform:
    E = B.const([[_entry(X.E, a, b) for b in range(3)] for a in range(3)])
    return Transform(E, B.const([_entry(X.r, k) for k in range(3)]))


def _entry(x, a, b=None):
    try:
        return x[a] if b is None else x[a, b]
    except (TypeError, IndexError):  # nested tuples
        return x[a] if b is None else x[a][b]


def check_reference(reference: str) -> None:
    """ValueError unless ``reference`` is one of :data:`REFERENCES`."""
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


def path_kinematics(B: Backend, model, q, qd=None, qdd=None, bodies=None) -> PathKinematics:
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


def _world_columns(B: Backend, model, K: PathKinematics, body: int) -> dict:
    """World-coordinate motion subspaces ^0X_j S_j of the joints j supporting ``body``."""
    return {j: xform_motion_inv(B, K.X0[j], K.S[j]) for j in model.ancestors[body]}


def assemble_columns(B: Backend, model, cols: dict, rows: int = 6):
    """The rows x nv matrix with the column blocks ``cols[j]`` of joints j (zeros elsewhere)."""
    return B.hcat([cols[j] if j in cols else B.zeros(rows, b - a)
                   for j, (a, b) in enumerate(model.v_idx)])


def frame_transform(B: Backend, model, K, fr):
    """(world -> frame transform, body -> frame transform or None when the identity)."""
    Xf = None if _is_identity(fr.X) else _native_transform(B, fr.X)
    if fr.body < 0:
        return (Xf if Xf is not None else _native_transform(B, fr.X)), Xf
    X0b = K.X0[fr.body]
    return (X0b if Xf is None else compose(B, Xf, X0b)), Xf


def lwa_shift(B: Backend, p, m):
    """[m0; m1 - p x m0]: world motion vectors (at the world origin) moved to the point p,
    world-aligned axes."""
    m0 = B.rows(m, 0, 3)
    return B.vcat([m0, B.rows(m, 3, 6) - skew(B, p) @ m0])


def _linear_plus(B: Backend, x, w, u):
    """[x0; x1 + w x u]."""
    return B.vcat([B.rows(x, 0, 3), B.rows(x, 3, 6) + skew(B, w) @ u])


# --- public functions ----------------------------------------------------------------------------

#: Row orders of the 6-row outputs: symdyn's ``[angular; linear]`` (default) or Pinocchio's
#: ``[linear; angular]``.
ORDERS = ("angular_first", "linear_first")

def check_order(order: str) -> None:
    """ValueError unless ``order`` is one of :data:`ORDERS`."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(map(repr, ORDERS))}, got {order!r} "
                         "('angular_first': symdyn's [angular; linear] rows; 'linear_first': "
                         "Pinocchio's [linear; angular])")


def in_order(B: Backend, x, order: str):
    """``x`` (6 rows) with its two 3-row blocks swapped for ``order="linear_first"``."""
    return x if order == "angular_first" else B.vcat([B.rows(x, 3, 6), B.rows(x, 0, 3)])


@dispatch
def frame_placement(model: Model, q: Array, frame: FrameRef, *,
                    backend: str | None = None) -> tuple[Array, Array]:
    """``(R, p)``: ``R`` (3x3) rotates frame coordinates into world coordinates and ``p`` (3) is
    the frame origin in world coordinates (Pinocchio: ``data.oMf[id].rotation``,
    ``data.oMf[id].translation``). ``frame``: a link or joint name, a body index or a
    :class:`~symdyn.model.Frame` (:func:`resolve_frame`)."""
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    fr = resolve_frame(model, frame)
    K = path_kinematics(B, model, qs, bodies=[fr.body])
    Xf0, _ = frame_transform(B, model, K, fr)
    return Xf0.E.T, Xf0.r


@dispatch
def frame_velocity(model: Model, q: Array, qd: Array, frame: FrameRef, reference: str = "local",
                   *, order: str = "angular_first", backend: str | None = None) -> Array:
    """Spatial velocity ``[omega; v]`` (6) of ``frame`` in ``reference`` (module docstring):
    ``"local"`` frame coordinates (v: frame origin velocity), ``"world"`` world coordinates (v:
    velocity of the body point at the world origin), ``"local_world_aligned"`` the frame origin
    velocity in world axes. Equals ``frame_jacobian(model, q, frame, reference) @ qd``.

    **Rows ``[angular; linear]``: the reverse of Pinocchio's ``getFrameVelocity(...).vector``**
    **(``[linear; angular]``)**. Code ported from Pinocchio passes ``order="linear_first"``,
    which swaps the two 3-row blocks and nothing else.
    """
    check_reference(reference)
    check_order(order)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return in_order(B, _velocity(B, model, qs, vs, resolve_frame(model, frame), reference), order)


def _velocity(B: Backend, model, qs, vs, fr, reference):
    if fr.body < 0:
        return B.zeros(6)
    K = path_kinematics(B, model, qs, vs, bodies=[fr.body])
    Xf0, Xf = frame_transform(B, model, K, fr)
    vb = K.v[fr.body]
    if reference == "world":
        return xform_motion_inv(B, K.X0[fr.body], vb)
    vf = vb if Xf is None else xform_motion(B, Xf, vb)
    if reference == "local":
        return vf
    R = Xf0.E.T
    return B.vcat([R @ B.rows(vf, 0, 3), R @ B.rows(vf, 3, 6)])


@dispatch
def frame_jacobian(model: Model, q: Array, frame: FrameRef, reference: str = "local", *,
                   order: str = "angular_first", backend: str | None = None) -> Array:
    """Frame Jacobian (6 x nv, rows ``[angular; linear]``: NOT Pinocchio's order, see below) with
    ``frame_velocity(model, q, qd, frame, reference) = J qd``: Pinocchio's ``getFrameJacobian``
    with its rows swapped. Columns of joints that do not support the frame
    are zero.

    **Rows ``[angular; linear]``: the reverse of Pinocchio's ``getFrameJacobian``**
    **(``[linear; angular]``)**. Code ported from Pinocchio passes ``order="linear_first"``,
    which swaps the two 3-row blocks and nothing else. The columns stay over symdyn's speeds (free-flyer ``[omega; v]``, Pinocchio's
    ``[v; omega]``; Pinocchio's column order: ``symdyn.interop.pinocchio.matrix_to_pin(model, J,
    rows=None, pin_model=pm)``).
    """
    check_reference(reference)
    check_order(order)
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    return in_order(B, _jacobian(B, model, qs, resolve_frame(model, frame), reference), order)


def _jacobian(B: Backend, model, qs, fr, reference):
    if fr.body < 0:
        return B.zeros(6, model.nv)
    K = path_kinematics(B, model, qs, bodies=[fr.body])
    Xf0, _ = frame_transform(B, model, K, fr)
    J0 = assemble_columns(B, model, _world_columns(B, model, K, fr.body))
    if reference == "world":
        return J0
    if reference == "local":
        return xform_motion(B, Xf0, J0)
    return lwa_shift(B, Xf0.r, J0)


def _world_jacobian_rate(B: Backend, model, K, body):
    """(J0, dJ0/dt) in world coordinates: columns ^0X_j S_j and v0_j x ^0X_j S_j + ^0X_j Sring_j."""
    J, dJ = {}, {}
    for j in model.ancestors[body]:
        J[j] = xform_motion_inv(B, K.X0[j], K.S[j])
        v0j = xform_motion_inv(B, K.X0[j], K.v[j])
        dJ[j] = cross_motion(B, v0j, J[j])
        if K.Sring[j] is not None:
            dJ[j] = dJ[j] + xform_motion_inv(B, K.X0[j], K.Sring[j])
    return assemble_columns(B, model, J), assemble_columns(B, model, dJ)


@dispatch
def frame_jacobian_time_variation(model: Model, q: Array, qd: Array, frame: FrameRef,
                                  reference: str = "local", *, order: str = "angular_first",
                                  backend: str | None = None) -> Array:
    """``dJ/dt`` (6 x nv): the time derivative of :func:`frame_jacobian` for the same reference
    while ``q`` moves with speeds ``qd`` (Pinocchio's ``getFrameJacobianTimeVariation`` after
    ``computeJointJacobiansTimeVariation``, with its rows swapped: rows 0-2 angular, 3-5 linear).

    world: column j is ``v0_j x J0_j`` (+ the apparent derivative of S_j for planar joints);
    local: ``^fX_0 (dJ0 - v0_f x J0)``; local_world_aligned: ``[dJ0_w; dJ0_v - p x dJ0_w -
    pdot x J0_w]``.

    **Rows ``[angular; linear]``: the reverse of Pinocchio's ``getFrameJacobianTimeVariation``**
    **(``[linear; angular]``)**. Code ported from Pinocchio passes ``order="linear_first"``,
    which swaps the two 3-row blocks and nothing else. The columns stay over symdyn's speeds (free-flyer ``[omega; v]``, Pinocchio's
    ``[v; omega]``; Pinocchio's column order: ``symdyn.interop.pinocchio.matrix_to_pin(model, J,
    rows=None, pin_model=pm)``).
    """
    check_reference(reference)
    check_order(order)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return in_order(B, _jacobian_rate(B, model, qs, vs, resolve_frame(model, frame), reference),
                     order)


def _jacobian_rate(B: Backend, model, qs, vs, fr, reference):
    if fr.body < 0:
        return B.zeros(6, model.nv)
    K = path_kinematics(B, model, qs, vs, bodies=[fr.body])
    Xf0, _ = frame_transform(B, model, K, fr)
    J0, dJ0 = _world_jacobian_rate(B, model, K, fr.body)
    if reference == "world":
        return dJ0
    v0 = xform_motion_inv(B, K.X0[fr.body], K.v[fr.body])
    if reference == "local":
        return xform_motion(B, Xf0, dJ0 - cross_motion(B, v0, J0))
    p, w = Xf0.r, B.rows(v0, 0, 3)
    pdot = B.rows(v0, 3, 6) + skew(B, w) @ p
    return lwa_shift(B, p, dJ0) - B.vcat([B.zeros(3, model.nv), skew(B, pdot) @ B.rows(J0, 0, 3)])


@dispatch
def frame_classical_acceleration(model: Model, q: Array, qd: Array, qdd: Array, frame: FrameRef,
                                 reference: str = "local", *, order: str = "angular_first",
                                 backend: str | None = None) -> Array:
    """Classical acceleration ``[alpha; a]`` (6) of ``frame`` (Pinocchio's
    ``getFrameClassicalAcceleration``: the spatial acceleration plus ``[0; omega x v]`` in the same
    reference, whose ``.vector`` is ``[a; alpha]``). ``"local"``/``"local_world_aligned"``: ``a``
    is the frame origin's acceleration ``pddot`` in frame / world axes; ``"world"``: the
    acceleration of the body point at the world origin. Gravity is not included. With ``qdd = 0``
    this is the task-space drift; for ``"local_world_aligned"`` it equals
    ``frame_jacobian_time_variation(...) @ qd`` (the other references add ``[0; omega x v]``, see
    the module docstring).

    **Rows ``[angular; linear]``: the reverse of Pinocchio's ``getFrameClassicalAcceleration(...).vector``**
    **(``[linear; angular]``)**. Code ported from Pinocchio passes ``order="linear_first"``,
    which swaps the two 3-row blocks and nothing else.
    """
    check_reference(reference)
    check_order(order)
    B, (qs, vs, us) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    return in_order(B, _classical(B, model, qs, vs, us, resolve_frame(model, frame), reference),
                     order)


def _classical(B: Backend, model, qs, vs, us, fr, reference):
    if fr.body < 0:
        return B.zeros(6)
    K = path_kinematics(B, model, qs, vs, us, bodies=[fr.body])
    Xf0, Xf = frame_transform(B, model, K, fr)
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
