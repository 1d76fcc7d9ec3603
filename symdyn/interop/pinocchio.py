"""Conversion between symdyn and Pinocchio models (``pip install pin``), the numeric reference.

Two directions:

* :func:`to_pinocchio` builds a ``pinocchio.Model`` from a numeric symdyn model: one Pinocchio
  joint per body, added in the depth-first order :func:`pinocchio_order`, named
  ``model.joint_names``, with a JOINT frame and a BODY frame named after the body, every other
  entry of ``model.frames`` (merged fixed links) as a BODY frame and every fixed joint
  (``model.fixed_joints``) as a FIXED_JOINT frame.
* :func:`from_pinocchio` builds a symdyn model from a ``pinocchio.Model`` (for instance one built by
  ``pinocchio.buildModelFromUrdf``, ``buildModelFromMJCF`` or by hand): bodies in Pinocchio's joint
  order, named after the joint's BODY frame, BODY/FIXED_JOINT/OP_FRAME/SENSOR frames as
  ``model.frames``.

Vectors: :func:`pinocchio_maps` (class :class:`PinocchioMaps`) matches the joints of a symdyn
model and a Pinocchio model **by joint name** and maps configurations, velocities (accelerations,
torques) and matrices both ways. It is valid for any pair with the same joints, whatever the order
of the bodies: Pinocchio's own URDF models order sibling subtrees differently from symdyn's
depth-first document order. The module-level functions (:func:`q_to_pin`, :func:`v_to_pin`,
:func:`v_from_pin`, :func:`matrix_from_pin`, ...) use these maps when given ``pin_model=``, and
otherwise assume the model of :func:`to_pinocchio`.

Conventions mapped:

* Placements: symdyn's ``Xtree = Transform(E, r)`` is ``SE3(E^T, r)``; inertias
  ``Inertia(m, c, Ic)`` (mass, CoM and rotational inertia about the CoM, body coordinates) in both.
* Configurations coincide joint by joint (quaternions are (x, y, z, w) in both; free-flyer
  ``[p; quat]``), except Pinocchio's unbounded revolute joints (URDF ``continuous``:
  ``JointModelRUBX/Y/Z``, ``RevoluteUnboundedUnaligned``) stored as ``(cos q, sin q)`` (nq = 2,
  nv = 1) where symdyn stores the angle ``q``: ``q_from_pin`` takes ``atan2(sin, cos)``.
* Velocities coincide except the free-flyer, whose body twist is ``[v; omega]`` in Pinocchio and
  ``[omega; v]`` in symdyn (both in body coordinates, so the map is a constant permutation).
* Joint types: revolute (``RX/RY/RZ``, ``RevoluteUnaligned``), unbounded revolute, prismatic
  (``PX/PY/PZ``, ``PrismaticUnaligned``), helical (``HX/HY/HZ``, ``HelicalUnaligned``; translation
  ``pitch * q`` along the axis in both), spherical (quaternion), free-flyer. Refused with a
  :class:`PinocchioConversionError` naming the joint: planar (Pinocchio stores (x, y, cos, sin)
  with a body-frame velocity, symdyn (x, y, theta) with their rates: not a constant map),
  ``SphericalZYX``
  (Euler angles), translation, universal, mimic and any other joint type.
* Composite joints (Pinocchio's MJCF parser makes one for a body with several joints) become a
  chain of symdyn bodies, one per sub-joint, named ``"<body>/<k>"`` (massless) before the body
  itself, with joint names ``"<composite name>/<k>"``; the maps know these names.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..joints import Fixed, Floating, Helical, Joint, Prismatic, Revolute, Spherical
from ..model import Body, Model, ModelError
from ..spatial import Transform

__all__ = ["PinocchioConversionError", "PinocchioMaps", "configuration_permutation",
           "from_pinocchio", "matrix_from_pin", "matrix_to_pin", "pinocchio_maps",
           "pinocchio_order", "q_from_pin", "q_to_pin", "supports_actuation", "to_pinocchio",
           "v_from_pin", "v_to_pin", "velocity_permutation"]


class PinocchioConversionError(ValueError):
    """A Pinocchio model (or joint) that has no symdyn equivalent, or joints that do not match;
    the message names the joint and the problem."""


def _pin():
    try:
        import pinocchio
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Pinocchio is needed for this: pip install pin") from exc
    return pinocchio


# --- symdyn -> Pinocchio --------------------------------------------------------------------------

def to_pinocchio(model: Model) -> Any:
    """A ``pinocchio.Model`` equal to the numeric symdyn ``model``.

    Joints are added in :func:`pinocchio_order` and named ``model.joint_names``; each gets a JOINT
    frame (the joint name) and a BODY frame (the body name); the other entries of ``model.frames``
    (fixed links merged into a body, or attached to the world) become BODY frames on their body's
    joint, so that :func:`from_pinocchio` gives the model back. The fixed joints
    (``model.fixed_joints``: URDF fixed joints, joints locked by ``reduced_model``) become
    FIXED_JOINT frames at their child link's placement, added before that link's BODY frame,
    which hangs from them (Pinocchio's URDF parser gives the same frames, names and types).
    Limits, armature, damping and friction are copied where the Model has them (infinite values
    as Pinocchio's +-max double)."""
    pin = _pin()
    if model.is_symbolic:
        raise ValueError("only numeric models convert to Pinocchio (use model.subs(...) first)")
    pm = pin.Model()
    pm.name = model.name
    pm.gravity = pin.Motion(np.asarray(model.gravity, float).reshape(3), np.zeros(3))
    ids = [0] * model.N
    body_frame = [0] * model.N
    for i in pinocchio_order(model):
        joint, p = model.joints[i], model.parents[i]
        E, r = (np.asarray(a, float) for a in model.Xtree[i])
        placement = pin.SE3(E.T, r.reshape(3))
        jm = _joint_model(pin, joint, model.joint_names[i])
        parent_id = 0 if p < 0 else ids[p]
        jid = pm.addJoint(parent_id, jm, placement, model.joint_names[i])
        I6 = np.asarray(model.I[i], float)
        pm.appendBodyToJoint(jid, _inertia_from_6x6(pin, I6), pin.SE3.Identity())
        ids[i] = jid
        parent_frame = 0 if p < 0 else body_frame[p]
        jf = pm.addJointFrame(jid, parent_frame)
        body_frame[i] = pm.addBodyFrame(model.names[i], jid, pin.SE3.Identity(), jf)
    if supports_actuation():
        _set_pin_actuation(model, pm)
    moving = set(model.names)
    joints_of: dict[str, list[str]] = {}        # link -> the fixed joints whose child it is
    for jn, link in model.fixed_joints.items():
        joints_of.setdefault(link, []).append(jn)

    def place(fr):
        """(joint id, placement on it, frame it hangs from) of a symdyn frame."""
        E, r = np.asarray(fr.X.E, float), np.asarray(fr.X.r, float).reshape(3)
        if fr.body < 0:
            return 0, pin.SE3(E.T, r), 0
        return ids[fr.body], pin.SE3(E.T, r), body_frame[fr.body]

    def add_fixed_joints(link) -> int | None:
        """FIXED_JOINT frames of the fixed joints whose child is ``link``, at its placement, as
        Pinocchio's URDF parser adds them before the link; the id of the last one."""
        last = None
        for jn in joints_of.get(link, ()):
            jid, M, prev = place(model.frames[link])
            last = pm.addFrame(pin.Frame(jn, jid, prev, M, pin.FrameType.FIXED_JOINT), False)
        return last

    for fname in model.names:                   # a fixed joint naming a moving body (hand-made)
        add_fixed_joints(fname)
    for fname, fr in model.frames.items():
        if fname in moving:
            continue
        fixed = add_fixed_joints(fname)
        jid, M, prev = place(fr)
        pm.addBodyFrame(fname, jid, M, prev if fixed is None else fixed)
    return pm


def _set_pin_actuation(model: Model, pm) -> None:
    """Copy the model's limits, armature, damping and friction into ``pm`` (infinite values as
    Pinocchio's +-max double; quaternion entries keep Pinocchio's bounds)."""
    maps = PinocchioMaps(model, pm)
    big = np.finfo(float).max

    def fin(x):
        return np.clip(np.asarray(x, float), -big, big)

    pm.armature = maps.v_to_pin(model.armature)
    pm.damping = maps.v_to_pin(model.damping)
    pm.friction = maps.v_to_pin(model.friction)
    pm.velocityLimit = fin(maps.v_to_pin(model.limits.velocity))
    pm.effortLimit = fin(maps.v_to_pin(model.limits.effort))
    lo, up = np.array(pm.lowerPositionLimit, float), np.array(pm.upperPositionLimit, float)
    for i, (a, b, k, _) in enumerate(maps._q):
        t = model.joints[i].type
        n = 0 if t == "spherical" else (3 if t == "floating" else b - a)
        lo[k:k + n] = fin(model.limits.lower[a:a + n])
        up[k:k + n] = fin(model.limits.upper[a:a + n])
    pm.lowerPositionLimit, pm.upperPositionLimit = lo, up


def pinocchio_order(model: Model) -> list[int]:
    """Bodies in depth-first order (children by index), the joint order of :func:`to_pinocchio`."""
    order, stack = [], [i for i in reversed(range(model.N)) if model.parents[i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(model.children[i]))
    return order


def _inertia_from_6x6(pin, I6):
    """Pinocchio inertia of a symdyn 6x6 spatial inertia, through the dynamic parameters (no
    subtraction of m c c^T, and no refusal of tiny rounding-level negative inertias)."""
    h = np.array([I6[2, 4], I6[0, 5], I6[1, 3]])  # m S(c) block: S(c)[2,1] = c_x, ...
    Io = (I6[:3, :3] + I6[:3, :3].T) / 2  # rotational inertia about the body origin
    if I6[3, 3] == 0:  # massless (a rotational inertia only, or nothing)
        inertia = pin.Inertia.Zero()
        inertia.inertia = Io
        return inertia
    pi = np.array([I6[3, 3], *h, Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]])
    return pin.Inertia.FromDynamicParameters(pi)


def _joint_model(pin, joint, jname="?"):
    t = joint.type
    if t in ("revolute", "prismatic", "helical"):
        spec = joint.axis_spec
        if t == "revolute":
            if isinstance(spec, str):
                return {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}[spec]()
            return pin.JointModelRevoluteUnaligned(np.asarray(joint.axis, float))
        if t == "prismatic":
            if isinstance(spec, str):
                return {"x": pin.JointModelPX, "y": pin.JointModelPY, "z": pin.JointModelPZ}[spec]()
            return pin.JointModelPrismaticUnaligned(np.asarray(joint.axis, float))
        return pin.JointModelHelicalUnaligned(np.asarray(joint.axis, float), joint.pitch)
    if t == "spherical":
        return pin.JointModelSpherical()
    if t == "floating":
        return pin.JointModelFreeFlyer()
    raise PinocchioConversionError(
        f"joint {jname!r}: type {t!r} has no Pinocchio equivalent in this bridge (Pinocchio's "
        "planar joint stores (x, y, cos, sin) with a body-frame velocity, symdyn's (x, y, theta) "
        "with their rates)")


# --- Pinocchio -> symdyn --------------------------------------------------------------------------

_REVOLUTE = {"JointModelRX": "x", "JointModelRY": "y", "JointModelRZ": "z"}
_UNBOUNDED = {"JointModelRUBX": "x", "JointModelRUBY": "y", "JointModelRUBZ": "z"}
_PRISMATIC = {"JointModelPX": "x", "JointModelPY": "y", "JointModelPZ": "z"}
_HELICAL = {"JointModelHX": "x", "JointModelHY": "y", "JointModelHZ": "z"}
_WHY_NOT = {
    "JointModelPlanar": "Pinocchio's planar joint stores (x, y, cos, sin) with a body-frame "
                        "velocity (vx, vy, wz), symdyn's Planar (x, y, theta) with their rates: "
                        "the velocity map depends on q",
    "JointModelSphericalZYX": "ZYX Euler angles have no symdyn joint (symdyn's Spherical uses a "
                              "quaternion and the body angular velocity)",
    "JointModelTranslation": "symdyn has no 3-D translation joint (chain three prismatic joints)",
    "JointModelUniversal": "symdyn has no universal joint (chain two revolute joints)",
    "JointModelMimic": "mimic joints are not supported (build the Pinocchio model with "
                       "mimic=False; symdyn's URDF loader keeps the relation in model.mimic)",
}


def _joint_axis_pitch(jm) -> tuple[np.ndarray, np.ndarray]:
    """(linear, angular) parts of the 1-DoF joint's motion subspace (constant for these joints)."""
    jd = jm.createData()
    jm.calc(jd, np.zeros(jm.nq) if jm.nq == 1 else np.array([1.0, 0.0]))
    S = np.asarray(jd.S, float).reshape(6)
    return S[:3], S[3:]


def _from_pin_joint(jm, jname: str) -> Joint:
    short = jm.shortname()
    if short in _REVOLUTE:
        return Revolute(_REVOLUTE[short])
    if short in _UNBOUNDED:
        return Revolute(_UNBOUNDED[short])
    if short in _PRISMATIC:
        return Prismatic(_PRISMATIC[short])
    if short in ("JointModelRevoluteUnaligned", "JointModelRevoluteUnboundedUnaligned"):
        return Revolute(tuple(_joint_axis_pitch(jm)[1]))
    if short == "JointModelPrismaticUnaligned":
        return Prismatic(tuple(_joint_axis_pitch(jm)[0]))
    if short in _HELICAL or short == "JointModelHelicalUnaligned":
        lin, ang = _joint_axis_pitch(jm)
        e = jm.extract() if hasattr(jm, "extract") else jm
        pitch = float(e.pitch) if hasattr(e, "pitch") else float(lin @ ang)
        return Helical(tuple(ang), pitch=pitch)
    if short == "JointModelSpherical":
        return Spherical()
    if short == "JointModelFreeFlyer":
        return Floating()
    why = _WHY_NOT.get(short, "no symdyn equivalent (supported: revolute, unbounded revolute, "
                              "prismatic, helical, spherical, free-flyer)")
    raise PinocchioConversionError(f"Pinocchio joint {jname!r} ({short}): {why}")


def _leaves(pm, jid: int) -> list[tuple[str, Any, int, int, Any]]:
    """Pinocchio joint ``jid`` as a list of simple joints ``(name, joint model, idx_q, idx_v,
    placement before it)``: itself, or the sub-joints of a composite joint (recursively), named
    ``"<composite name>/<k>"``; the first placement is the identity (the joint placement of
    ``jid`` comes before it)."""
    pin = _pin()
    out: list[tuple[str, Any, int, int, Any]] = []

    def walk(name, jm, iq, iv, M):
        if jm.shortname() != "JointModelComposite":
            out.append((name, jm, iq, iv, M))
            return
        e = jm.extract() if hasattr(jm, "extract") else jm
        for k, (sub, P) in enumerate(zip(e.joints, e.jointPlacements)):
            walk(f"{name}/{k}", sub, iq, iv, M * P if k == 0 else P)
            iq, iv = iq + sub.nq, iv + sub.nv

    walk(pm.names[jid], pm.joints[jid], int(pm.idx_qs[jid]), int(pm.idx_vs[jid]),
         pin.SE3.Identity())
    return out


def _se3_transform(M) -> Transform:
    """symdyn tree transform of a Pinocchio placement (child pose in its parent)."""
    return Transform(np.array(M.rotation, float).T, np.array(M.translation, float))


def _frame_type_names(pin) -> dict:
    FT = pin.FrameType
    return {FT.BODY: "BODY", FT.FIXED_JOINT: "FIXED_JOINT", FT.OP_FRAME: "OP_FRAME",
            FT.SENSOR: "SENSOR", FT.JOINT: "JOINT"}


def from_pinocchio(pin_model: Any, name: str | None = None, frames: bool = True,
                   check_inertias: bool | str = "semidefinite") -> Model:
    """A symdyn :class:`~symdyn.model.Model` equal to the ``pinocchio.Model`` ``pin_model``.

    Bodies follow Pinocchio's joint order (parents first); body i is moved by Pinocchio joint
    i + 1, whose name becomes ``model.joint_names[i]``. A body is named after the first BODY frame
    that sits on its joint with the identity placement (the URDF link), else after its joint.
    Placements, inertias (``pin_model.inertias``, already holding the fixed links' inertias),
    gravity and, where the Model has these fields (:func:`supports_actuation`), the position,
    velocity and effort limits, armature, damping and friction are copied (Pinocchio's +-max
    double becomes +-inf; position limits of (cos, sin) joints and quaternion entries are +-inf).

    ``frames=True``: Pinocchio's BODY, FIXED_JOINT, OP_FRAME and SENSOR frames (except ``universe``)
    become entries of ``model.frames`` (massless fixed bodies on the joint's body); JOINT frames
    are the bodies' own frames and are not repeated. A FIXED_JOINT frame that a BODY frame hangs
    from at the same placement (the fixed joint and its child link, as Pinocchio's URDF parser
    and :func:`to_pinocchio` make them) becomes a fixed joint instead (``model.fixed_joints``:
    joint name -> that link), as :func:`~symdyn.io.urdf.load_urdf` records it. A frame whose name is already taken (a link
    and a fixed joint of the same name) is left out with a ``UserWarning`` naming it. Frame
    inertias (``Frame.inertia``) are not added again: ``pin_model.inertias`` already holds what
    ``addFrame``/the parsers appended to the joints.

    ``check_inertias``: the inertia policy of :class:`~symdyn.model.Model` (default
    ``"semidefinite"``, the URDF policy; ``False`` keeps non-physical inertias).

    Composite joints become chains of bodies (see the module docstring). Raises
    :class:`PinocchioConversionError` naming the joint for joint types without a symdyn
    equivalent (planar, SphericalZYX, translation, universal, mimic).
    """
    pin = _pin()
    pm = pin_model
    FT = pin.FrameType
    jnames = list(pm.names)
    leaves = {j: _leaves(pm, j) for j in range(1, pm.njoints)}
    joints = {(j, k): _from_pin_joint(leaf[1], leaf[0])
              for j in leaves for k, leaf in enumerate(leaves[j])}
    # body names: the BODY frame on the joint at the identity (URDF: the child link)
    body_name: dict[int, str] = {}
    for f in pm.frames:
        jid = int(f.parentJoint)
        if (f.type == FT.BODY and jid > 0 and jid not in body_name
                and f.placement.isIdentity(1e-14)):
            body_name[jid] = f.name
    used: set[str] = set()
    bodies = []
    for jid in range(1, pm.njoints):
        bname = body_name.get(jid, jnames[jid])
        if bname in used:
            bname = f"{jnames[jid]}_body"
        used.add(bname)
        body_name[jid] = bname
        parent = int(pm.parents[jid])
        prev = None if parent == 0 else body_name[parent]
        In = pm.inertias[jid]
        for k, (lname, _, _, _, P) in enumerate(leaves[jid]):
            M = pm.jointPlacements[jid] * P if k == 0 else P
            last = k == len(leaves[jid]) - 1
            sub = bname if last else f"{bname}/{k}"  # a composite joint: massless bodies before
            if sub in used and not last:
                raise PinocchioConversionError(f"Pinocchio joint {jnames[jid]!r}: the name {sub!r} "
                                               "of an intermediate body is taken")
            used.add(sub)
            bodies.append(Body(sub, prev, joints[(jid, k)],
                               float(In.mass) if last else 0.0,
                               np.array(In.lever, float) if last else np.zeros(3),
                               np.array(In.inertia, float) if last else np.zeros((3, 3)),
                               _se3_transform(M), joint_name=lname))
            prev = sub
    if frames:
        dropped = []
        tnames = _frame_type_names(pin)
        order = sorted(range(1, len(pm.frames)), key=lambda k: pm.frames[k].type != FT.BODY)
        fixed_names: set[str] = set()
        as_joint: set[int] = set()   # FIXED_JOINT frames that became fixed joints
        for k in order:  # BODY frames (links) first: they keep their names on a clash
            f = pm.frames[k]
            if f.type == FT.JOINT or k in as_joint:
                continue
            jid = int(f.parentJoint)
            if f.type == FT.BODY and jid > 0 and body_name.get(jid) == f.name \
                    and f.placement.isIdentity(1e-14):
                continue  # the body itself
            if f.name in used:
                kind = tnames.get(f.type, f.type)
                dropped.append(f"{f.name!r} ({kind} on joint {jnames[jid]!r})")
                continue
            used.add(f.name)
            joint_name = None
            if f.type == FT.BODY:
                fj = _fixed_joint_of(pm, k)
                if fj is not None and pm.frames[fj].name not in fixed_names \
                        and pm.frames[fj].name not in jnames:
                    joint_name = pm.frames[fj].name
                    fixed_names.add(joint_name)
                    as_joint.add(fj)
            bodies.append(Body(f.name, None if jid == 0 else body_name[jid], Fixed(), 0.0,
                               (0.0, 0.0, 0.0), np.zeros((3, 3)), _se3_transform(f.placement),
                               joint_name=joint_name))
        if dropped:
            warnings.warn(f"from_pinocchio({pm.name!r}): frames left out because their name is "
                          f"already a body or frame of the model: {', '.join(dropped)}",
                          stacklevel=2)
    g = np.array(pm.gravity.linear, float)
    try:
        model = Model(bodies, gravity=g,
                      name=name if name is not None else (pm.name or "pinocchio"),
                      check_inertias=check_inertias, allow_massless=True)
        return _with_pin_actuation(model, pm)
    except ModelError as exc:
        hint = ("; pass check_inertias=False to keep the inertias as they are"
                if check_inertias and getattr(exc, "kind", None) == "inertia" else "")
        raise PinocchioConversionError(f"Pinocchio model {pm.name!r}: {exc}{hint}") from exc


def _fixed_joint_of(pm, k: int) -> int | None:
    """The FIXED_JOINT frame (its index) of which BODY frame ``k`` is the child link, as
    Pinocchio's URDF parser and :func:`to_pinocchio` make them: the frame ``k`` hangs from, on the
    same joint at the same placement; None otherwise (``universe`` is no fixed joint)."""
    f = pm.frames[k]
    p = int(f.parentFrame)
    if p <= 0 or p == k:
        return None
    fp = pm.frames[p]
    if fp.type != _pin().FrameType.FIXED_JOINT or fp.name == "universe" \
            or int(fp.parentJoint) != int(f.parentJoint) or not fp.placement.isApprox(f.placement, 1e-14):
        return None
    return p


_BIG = 1e300  # Pinocchio writes "no limit" as +-max double


def supports_actuation() -> bool:
    """Whether :class:`~symdyn.model.Model` has the actuation fields (limits, armature, damping,
    friction) that the bridges copy."""
    from .. import model as _model

    return {"limits", "armature", "damping", "friction"} <= set(getattr(_model, "ACTUATION", ()))


def _inf(x: np.ndarray) -> np.ndarray:
    x = np.array(x, float)
    x[x >= _BIG] = np.inf
    x[x <= -_BIG] = -np.inf
    return x


def _with_pin_actuation(model: Model, pm) -> Model:
    """``model`` with Pinocchio's limits, armature, damping and friction (per joint, by name).
    Position limits of (cos, sin) joints and of quaternion entries are dropped (symdyn: +-inf;
    Pinocchio bounds those coordinates by +-1.01, not the motion)."""
    maps = PinocchioMaps(model, pm)
    arm, damp, fric = (maps.v_from_pin(np.asarray(x, float))
                       for x in (pm.armature, pm.damping, pm.friction))
    vel, eff = (_inf(maps.v_from_pin(np.asarray(x, float)))
                for x in (pm.velocityLimit, pm.effortLimit))
    lower, upper = np.full(model.nq, -np.inf), np.full(model.nq, np.inf)
    lo_p, up_p = _inf(pm.lowerPositionLimit), _inf(pm.upperPositionLimit)
    for i, (a, b, k, cs) in enumerate(maps._q):
        t = model.joints[i].type
        n = 0 if cs or t == "spherical" else (3 if t == "floating" else b - a)
        lower[a:a + n], upper[a:a + n] = lo_p[k:k + n], up_p[k:k + n]
    if supports_actuation():
        limits = {"lower": lower, "upper": upper, "velocity": vel, "effort": eff}
        return model.replace(limits=limits, armature=arm, damping=damp, friction=fric)
    kept = [what for what, x in (("armature", arm), ("damping", damp), ("friction", fric))
            if np.any(x)]
    if kept or np.isfinite(lower).any() or np.isfinite(upper).any():
        warnings.warn(f"from_pinocchio({pm.name!r}): this symdyn Model has no actuation fields, so "
                      f"{', '.join(kept + ['joint limits'])} of the Pinocchio model are left out",
                      UserWarning, stacklevel=3)
    return model


# --- vector and matrix maps -----------------------------------------------------------------------

class PinocchioMaps:
    """Index maps between a symdyn model and a Pinocchio model with the same joints, matched by
    joint name (see :func:`pinocchio_maps`).

    ``v_perm``: index array with ``v_pin = v[v_perm]`` (velocities, accelerations, torques);
    ``joint_ids[i]``: the Pinocchio joint id of symdyn body i (the composite joint for its
    sub-joints); ``cos_sin[i]``: True where Pinocchio stores the angle as (cos, sin)."""

    def __init__(self, model: Model, pin_model: Any):
        pm = pin_model
        self.model, self.pin_model = model, pm
        self.nq, self.nv, self.nq_pin = model.nq, model.nv, int(pm.nq)
        leaves = {leaf[0]: (jid,) + leaf[1:4]
                  for jid in range(1, pm.njoints) for leaf in _leaves(pm, jid)}
        names = set(model.joint_names)
        missing = [n for n in model.joint_names if n not in leaves]
        extra = [n for n in leaves if n not in names]
        if missing or extra:
            raise PinocchioConversionError(
                f"joints do not match by name: symdyn model {model.name!r} has {missing} that "
                f"Pinocchio model {pm.name!r} lacks, and Pinocchio has {extra} that symdyn lacks "
                "(sub-joints of a composite joint C are named 'C/0', 'C/1', ...)")
        self.joint_ids = [leaves[n][0] for n in model.joint_names]
        self.cos_sin = []
        P = np.empty(model.nv, dtype=int)
        self._q = []  # (symdyn slice start, stop, pin start, kind)
        for i, jn in enumerate(model.joint_names):
            j = model.joints[i]
            _, jm, iq, iv = leaves[jn]
            (qa, qb), (va, vb) = model.q_idx[i], model.v_idx[i]
            nq_p, nv_p = int(jm.nq), int(jm.nv)
            short = jm.shortname()
            if nv_p != vb - va:
                raise PinocchioConversionError(
                    f"joint {jn!r}: symdyn {j!r} has nv = {vb - va}, Pinocchio {short} nv = {nv_p}")
            cs = nq_p == 2 and qb - qa == 1 and j.type == "revolute"
            if not cs and nq_p != qb - qa:
                raise PinocchioConversionError(
                    f"joint {jn!r}: symdyn {j!r} has nq = {qb - qa}, Pinocchio {short} nq = {nq_p}")
            if (j.type == "floating") != (short == "JointModelFreeFlyer"):
                raise PinocchioConversionError(
                    f"joint {jn!r}: symdyn {j!r} against Pinocchio {short}")
            self.cos_sin.append(cs)
            self._q.append((qa, qb, iq, cs))
            idx = list(range(va, vb))
            if j.type == "floating":  # [omega; v] -> Pinocchio's [v; omega]
                idx = idx[3:] + idx[:3]
            P[iv:iv + nv_p] = idx
        self.v_perm = P
        inv = np.empty_like(P)
        inv[P] = np.arange(len(P))
        self._v_inv = inv

    @staticmethod
    def _vec(x, n, what):
        a = np.asarray(x, float).reshape(-1)
        if a.shape != (n,):
            raise ValueError(f"{what} must have {n} entries, got {a.size}")
        return a

    def q_to_pin(self, q: Any) -> np.ndarray:
        """Pinocchio configuration of the symdyn configuration ``q``."""
        q = self._vec(q, self.nq, "q")
        out = np.zeros(self.nq_pin)
        for a, b, k, cs in self._q:
            if cs:
                out[k:k + 2] = math.cos(q[a]), math.sin(q[a])
            else:
                out[k:k + b - a] = q[a:b]
        return out

    def q_from_pin(self, q_pin: Any) -> np.ndarray:
        """symdyn configuration of the Pinocchio configuration ``q_pin`` (angles of (cos, sin)
        joints: atan2(sin, cos))."""
        qp = self._vec(q_pin, self.nq_pin, "q_pin")
        out = np.zeros(self.nq)
        for a, b, k, cs in self._q:
            out[a:b] = math.atan2(qp[k + 1], qp[k]) if cs else qp[k:k + b - a]
        return out

    def v_to_pin(self, v: Any) -> np.ndarray:
        """Pinocchio ordering of a velocity-sized vector (velocity, acceleration, torque)."""
        return self._vec(v, self.nv, "v")[self.v_perm]

    def v_from_pin(self, v_pin: Any) -> np.ndarray:
        """symdyn ordering of a Pinocchio velocity-sized vector."""
        return self._vec(v_pin, self.nv, "v_pin")[self._v_inv]

    def matrix_from_pin(self, A_pin: Any, rows: str | None = "v",
                        cols: str | None = "v") -> np.ndarray:
        """symdyn ordering of a Pinocchio matrix whose rows and/or columns ('v') are indexed by
        velocities (``None``: leave that dimension as it is)."""
        A = np.array(A_pin, float)
        ri = self._v_inv if rows == "v" else np.arange(A.shape[0])
        ci = self._v_inv if cols == "v" else np.arange(A.shape[1])
        return A[np.ix_(ri, ci)]

    def matrix_to_pin(self, A: Any, rows: str | None = "v", cols: str | None = "v") -> np.ndarray:
        """Pinocchio ordering of a symdyn matrix (the inverse of :meth:`matrix_from_pin`)."""
        A = np.array(A, float)
        ri = self.v_perm if rows == "v" else np.arange(A.shape[0])
        ci = self.v_perm if cols == "v" else np.arange(A.shape[1])
        return A[np.ix_(ri, ci)]


def pinocchio_maps(model: Model, pin_model: Any) -> PinocchioMaps:
    """The :class:`PinocchioMaps` between ``model`` and ``pin_model``, matched by joint name.

    Works for any Pinocchio model with the same joints (same names, compatible types), in
    particular ``pinocchio.buildModelFromUrdf(path)`` beside ``symdyn.load_urdf(path)`` (add
    ``pinocchio.JointModelFreeFlyer()`` for ``floating_base=True``: both name the root
    ``"root_joint"``). Raises :class:`PinocchioConversionError` listing joints missing on either
    side or of different sizes."""
    return PinocchioMaps(model, pin_model)


def configuration_permutation(model: Model) -> np.ndarray:
    """Index array with q_pin = q_symdyn[P] for the model of :func:`to_pinocchio`."""
    return np.array([k for i in pinocchio_order(model) for k in range(*model.q_idx[i])], dtype=int)


def velocity_permutation(model: Model) -> np.ndarray:
    """Index array P with v_pin = v_symdyn[P] (and M_pin = M[np.ix_(P, P)]) for the model of
    :func:`to_pinocchio`."""
    P = []
    for i in pinocchio_order(model):
        j, (a, b) = model.joints[i], model.v_idx[i]
        idx = list(range(a, b))
        if j.type == "floating":
            idx = idx[3:] + idx[:3]
        P.extend(idx)
    return np.array(P, dtype=int)


def q_to_pin(model: Model, q: Any, pin_model: Any = None) -> np.ndarray:
    """Pinocchio configuration of ``q``: for ``pin_model`` (matched by joint name) if given, else
    for ``to_pinocchio(model)``. With ``pin_model`` each call matches the joints again; in a loop,
    build the maps once with :func:`pinocchio_maps`."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).q_to_pin(q)
    return np.asarray(q, float)[configuration_permutation(model)]


def q_from_pin(model: Model, q_pin: Any, pin_model: Any = None) -> np.ndarray:
    """symdyn configuration of a Pinocchio configuration (inverse of :func:`q_to_pin`)."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).q_from_pin(q_pin)
    P = configuration_permutation(model)
    out = np.empty(len(P))
    out[P] = np.asarray(q_pin, float)
    return out


def v_to_pin(model: Model, v: Any, pin_model: Any = None) -> np.ndarray:
    """Pinocchio ordering of a velocity-sized vector (see :func:`q_to_pin` for ``pin_model``)."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).v_to_pin(v)
    return np.asarray(v, float)[velocity_permutation(model)]


def v_from_pin(model: Model, v_pin: Any, pin_model: Any = None) -> np.ndarray:
    """symdyn ordering of a Pinocchio velocity-sized vector."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).v_from_pin(v_pin)
    P = velocity_permutation(model)
    out = np.empty(len(P))
    out[P] = np.asarray(v_pin, float)
    return out


def matrix_from_pin(model: Model, A_pin: Any, rows: str | None = "v", cols: str | None = "v",
                    pin_model: Any = None) -> np.ndarray:
    """Convert a Pinocchio matrix indexed by velocities (rows/cols 'v'; ``None`` leaves that
    dimension alone) to symdyn ordering."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).matrix_from_pin(A_pin, rows, cols)
    P = velocity_permutation(model)
    A = np.array(A_pin, float)
    out = np.empty_like(A)
    ri = P if rows == "v" else np.arange(A.shape[0])
    ci = P if cols == "v" else np.arange(A.shape[1])
    out[np.ix_(ri, ci)] = A
    return out


def matrix_to_pin(model: Model, A: Any, rows: str | None = "v", cols: str | None = "v",
                  pin_model: Any = None) -> np.ndarray:
    """Convert a symdyn matrix indexed by velocities to Pinocchio ordering (inverse of
    :func:`matrix_from_pin`)."""
    if pin_model is not None:
        return PinocchioMaps(model, pin_model).matrix_to_pin(A, rows, cols)
    P = velocity_permutation(model)
    A = np.array(A, float)
    ri = P if rows == "v" else np.arange(A.shape[0])
    ci = P if cols == "v" else np.arange(A.shape[1])
    return A[np.ix_(ri, ci)]
