"""MJCF through MuJoCo (optional extra ``mujoco``: ``pip install "symdyn[mujoco]"``).

:func:`load_mjcf` compiles an MJCF file with MuJoCo and :func:`from_mujoco` converts a compiled
``mujoco.MjModel`` into a symdyn :class:`~symdyn.model.Model`; :func:`mujoco_maps` maps
configurations, velocities, accelerations, forces and matrices between the two.

Conventions mapped (MuJoCo -> symdyn)
-------------------------------------
* Bodies: MuJoCo body ``b`` with pose ``(body_pos, body_quat)`` in its parent and joints
  ``j_1 .. j_k`` becomes a chain of k symdyn bodies (MuJoCo composes the joints of one body in
  order, each about its anchor ``jnt_pos`` in the current frame). The symdyn body of joint ``j_m``
  has its origin at the anchor ``jnt_pos`` of ``j_m`` and the axes of the MuJoCo body frame; it
  is named ``b`` when the body has a single joint anchored at its origin, else ``"b/j_m"``, and
  the MuJoCo body frame is then the frame ``model.frames["b"]`` (a fixed, massless link). The
  body's inertia (``body_mass``, ``body_ipos``, ``body_iquat``, ``body_inertia``) sits on that
  frame, so the intermediate bodies of a multi-joint body are massless. Bodies without joints are
  welded (fixed) to their parent. Named sites become frames too (``model.frames[site]``, or
  ``"site:<name>"`` when a body has the same name, with an :class:`MJCFWarning`); unnamed sites
  do not.
* Joint types: ``hinge`` -> :class:`~symdyn.joints.Revolute` about ``jnt_axis`` (body frame) and
  ``slide`` -> :class:`~symdyn.joints.Prismatic` along ``jnt_axis`` (the anchor of a slide joint
  does not affect its motion), both with ``q = qpos``: MuJoCo moves the body by ``qpos - ref``
  (``ref`` = ``qpos0``, the XML pose is at ``qpos = ref``), so the tree transform holds the
  rotation (translation) by ``-ref`` about (along) the axis, as Pinocchio's MJCF parser does;
  ``ball`` -> :class:`~symdyn.joints.Spherical`: MuJoCo's quaternion ``(w, x, y, z)`` relative to
  the body's initial orientation becomes symdyn's ``(x, y, z, w)``, and both velocities are the
  angular velocity in the body (local) frame;
  ``free`` -> :class:`~symdyn.joints.Floating` with the identity tree transform (a free joint
  ignores ``body_pos``/``body_quat``): ``qpos = [p; quat_wxyz]`` of the body frame in the world
  becomes ``[p; quat_xyzw]``.
* Free-joint velocity: MuJoCo's ``qvel = [v_world; omega_local]`` (linear velocity of the body
  origin in world coordinates, then the angular velocity in body coordinates; MuJoCo docs,
  "Floating objects"), symdyn's ``v = [omega; R^T v_world]`` (body twist, angular first), with ``R``
  the body orientation: ``v = T(q) qvel`` with the orthogonal ``T(q)`` of
  :meth:`MujocoMaps.velocity_matrix`. Accelerations (MuJoCo: "defined in the same space as the
  velocities") pick up the derivative of ``R^T``: ``vdot_O = R^T a_world - omega x (R^T v_world)``
  (:meth:`MujocoMaps.a_from_mj`); generalized forces map with ``T^{-T} = T`` and matrices by
  congruence, ``M_mj = T^T M T``. Every other joint maps identically.
* Gravity is ``opt.gravity``, or zero under ``<flag gravity="disable"/>`` (MuJoCo then applies
  none and keeps ``opt.gravity``).
* MuJoCo's world body is the frame ``"world"`` (the identity). A model whose bodies are all
  welded (no joints; or no bodies at all, an MJCF of assets only) has ``nq = nv = 0``: its
  bodies and sites are frames on the world, ``crba`` is 0 x 0 and ``rnea``/``aba`` are empty.
* Compiler settings (``<compiler angle eulerseq inertiafromgeom boundmass boundinertia
  balanceinertia alignfree ...>``) and default classes act while MuJoCo compiles; the loader
  reads the compiled ``MjModel``, so they hold as in MuJoCo.

* Actuation data, where the Model has these fields
  (:func:`symdyn.interop.pinocchio.supports_actuation`): ``dof_armature`` -> ``model.armature``
  (so ``crba`` equals ``mj_fullM``), ``dof_damping`` -> ``model.damping``, ``dof_frictionloss`` ->
  ``model.friction``, ranges of limited hinge and slide joints ->
  ``model.limits.lower/upper``, symmetric ``actuatorfrcrange`` -> ``model.limits.effort``.
  Damping is 0 under ``<flag damper="disable"/>`` and friction 0 under ``<flag
  frictionloss="disable"/>`` or ``<flag constraint="disable"/>``, as MuJoCo then applies neither.
  Comparing with ``mj_inverse``, which returns ``M qacc + bias - qfrc_passive -
  qfrc_constraint``: damping is in ``qfrc_passive`` (``-damping * qvel``), so ``mj_inverse``
  holds ``rnea + damping * v``; friction loss is a soft constraint whose force saturates at
  ``frictionloss`` with the sign of ``qacc + B qvel`` (B about 100/s for the default
  ``solref``), i.e. ``friction * sign(v)`` once ``|B v| > |qdd|``: then
  ``mj_inverse = rnea + symdyn.friction_torque(model, v)``.

What is not converted, reported by a :class:`MJCFWarning` (``strict=True`` raises
:class:`MJCFError` instead), each only while MuJoCo's flags leave it on: joint stiffness
(springs, linear or polynomial), polynomial damping (symdyn keeps the linear coefficient),
gravity compensation, fluid forces (``<option density viscosity wind>``, ellipsoid
``fluidshape``: symdyn's dynamics are those of ``density = viscosity = 0``), ``<flag
invdiscrete="enable"/>`` (``mj_inverse`` then inverts the discrete-time step, symdyn's ``rnea``
is continuous-time), equality constraints, tendons, actuators, mocap bodies (kept as fixed
bodies), flexes, the cone limits of ball joints, the gyroscopic part of a free joint's linear
armature and the friction loss of its linear dofs (MuJoCo applies both in world axes), and, for
a Model without actuation fields, armature (``mj_fullM`` is then symdyn's M plus
``diag(armature)`` in MuJoCo's coordinates; the maps carry ``armature``), damping, friction loss
and joint ranges. MuJoCo drops gravity compensation and fluid forces when springs and dampers
are both disabled, and gravity compensation when gravity is. ``<option magnetic>`` (read only by
magnetometer sensors), ``wind`` without density or viscosity, ``timestep``, ``integrator``
(without ``invdiscrete``), solver and contact settings leave the continuous-time dynamics
unchanged and are not reported.
Contacts, limits and geoms play no part in rigid-body tree dynamics (geoms only through the body
inertias MuJoCo compiled from them). Compare with ``mj_inverse``/``mj_fullM`` after disabling
constraints, springs and dampers and zeroing fluid forces (see the tests), or keep damping and
friction loss and add :func:`symdyn.friction_torque` as above.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..joints import Fixed, Floating, Joint, Prismatic, Revolute, Spherical
from ..model import Body, Model, ModelError
from ..spatial import Transform

__all__ = ["MJCFError", "MJCFWarning", "MujocoMaps", "from_mujoco", "model_name", "mujoco_maps",
           "require_mujoco"]

_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3  # mjtJoint
_TYPE_NAMES = {_FREE: "free", _BALL: "ball", _SLIDE: "slide", _HINGE: "hinge"}


class MJCFError(ValueError):
    """An MJCF file MuJoCo cannot compile, or a model symdyn cannot represent; the message names
    the file, the element and the problem."""


class MJCFWarning(UserWarning):
    """Parts of a MuJoCo model that the symdyn model leaves out (armature, passive forces,
    equality constraints, tendons, actuators ...)."""


def require_mujoco() -> Any:
    """The ``mujoco`` module, or an ImportError that says how to install it."""
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("MuJoCo is needed for this: pip install mujoco "
                          "(or pip install \"symdyn[mujoco]\")") from exc
    return mujoco


def _quat_wxyz_to_rot(q) -> np.ndarray:
    w, x, y, z = (float(c) for c in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _name(mj, objtype: str, i: int) -> str:
    mujoco = require_mujoco()
    t = getattr(mujoco.mjtObj, f"mjOBJ_{objtype.upper()}")
    return mujoco.mj_id2name(mj, t, i) or ""


def _body_name(mj, b: int) -> str:
    return "world" if b == 0 else (_name(mj, "body", b) or f"body{b}")


def joint_name(mj: Any, j: int) -> str:
    """symdyn's name for MuJoCo joint ``j``: its MJCF name, else ``"<body>:joint<k>"`` (k-th joint
    of its body)."""
    n = _name(mj, "joint", j)
    if n:
        return n
    b = int(mj.jnt_bodyid[j])
    return f"{_body_name(mj, b)}:joint{j - int(mj.body_jntadr[b])}"


def _transform(R: np.ndarray, p: np.ndarray) -> Transform:
    """symdyn tree transform of a child pose (R, p) in its parent."""
    return Transform(np.array(R, float).T.copy(), np.array(p, float).reshape(3).copy())


def _flags(mj) -> dict[str, bool]:
    """Which parts of MuJoCo's dynamics ``mj.opt.disableflags`` / ``enableflags`` leave on.

    ``gravity``: ``opt.gravity`` acts (``<flag gravity>``); ``springs`` / ``dampers``: joint and
    tendon springs / dampers (``<flag spring>`` / ``<flag damper>``; MuJoCo before 3.3.6 had one
    ``<flag passive>`` for all passive forces); ``passive``: the other passive forces (gravity
    compensation, fluid forces), which MuJoCo drops only when springs *and* dampers are off;
    ``frictionloss``, ``equality``: those constraints (each also needs ``<flag constraint>``);
    ``actuation``: actuator forces; ``invdiscrete``: ``mj_inverse`` inverts the discrete-time step."""
    mujoco = require_mujoco()
    D, E = mujoco.mjtDisableBit, mujoco.mjtEnableBit
    dis, en = int(mj.opt.disableflags), int(mj.opt.enableflags)

    def off(name: str) -> bool:
        bit = getattr(D, f"mjDSBL_{name}", None)
        return bit is not None and bool(dis & int(bit))

    if hasattr(D, "mjDSBL_PASSIVE"):   # MuJoCo before 3.3.6: one flag for every passive force
        springs = dampers = passive = not off("PASSIVE")
    else:
        springs, dampers = not off("SPRING"), not off("DAMPER")
        passive = springs or dampers
    constraint = not off("CONSTRAINT")
    inv = getattr(E, "mjENBL_INVDISCRETE", None)
    return dict(gravity=not off("GRAVITY"), springs=springs, dampers=dampers, passive=passive,
                frictionloss=constraint and not off("FRICTIONLOSS"),
                equality=constraint and not off("EQUALITY"), actuation=not off("ACTUATION"),
                invdiscrete=inv is not None and bool(en & int(inv)))


def _nonzero(mj, field: str, n: int) -> np.ndarray:
    """Which of the ``n`` rows of the array field ``field`` have a nonzero entry (all False when
    this MuJoCo version lacks the field)."""
    v = getattr(mj, field, None)
    if v is None or n == 0:
        return np.zeros(n, bool)
    return (np.asarray(v, float).reshape(n, -1) != 0).any(axis=1)


def _ignored(mj, actuation: bool, flags: dict[str, bool] | None = None) -> list[str]:
    """What the symdyn model leaves out, one line each (``actuation``: the Model keeps armature,
    damping, friction and limits; ``flags``: :func:`_flags`, so that what MuJoCo's flags switch off
    is not reported)."""
    flags = flags if flags is not None else _flags(mj)
    out = []

    def names(objtype, n, limit=8):
        shown = [_name(mj, objtype, i) or f"#{i}" for i in range(min(n, limit))]
        return ", ".join(shown) + (f", ... ({n} in all)" if n > limit else "")

    if flags["springs"]:
        springs = (_nonzero(mj, "jnt_stiffness", mj.njnt)
                   | _nonzero(mj, "jnt_stiffnesspoly", mj.njnt))
        if np.any(springs):
            out.append(f"joint stiffness (springs) on {int(np.count_nonzero(springs))} "
                       "joints/dofs")
    fields = []
    if not actuation:
        fields.append(("dof_armature", "dof_armature (mj_fullM = M + diag(armature) in MuJoCo "
                                       "coordinates)"))
        if flags["dampers"]:
            fields.append(("dof_damping", "joint damping"))
        if flags["frictionloss"]:
            fields.append(("dof_frictionloss", "joint friction loss"))
    for field, what in fields:
        v = np.asarray(getattr(mj, field), float)
        if np.any(v != 0):
            out.append(f"{what} on {int(np.count_nonzero(v))} joints/dofs")
    if flags["dampers"]:
        poly = _nonzero(mj, "dof_dampingpoly", mj.nv)
        if np.any(poly):
            out.append(f"polynomial joint damping on {int(np.count_nonzero(poly))} dofs (the "
                       "2nd and 3rd coefficients of <joint damping=\"a b c\">: symdyn's damping "
                       "keeps the linear coefficient a)")
    free = [j for j in range(mj.njnt) if int(mj.jnt_type[j]) == _FREE]
    free_arm = [joint_name(mj, j) for j in free
                if np.any(np.asarray(mj.dof_armature[mj.jnt_dofadr[j]:mj.jnt_dofadr[j] + 3]) != 0)]
    if actuation and free_arm:
        out.append(f"the gyroscopic part of the linear armature of free joints {free_arm} (symdyn "
                   "adds armature * qdd in body axes, MuJoCo armature * qacc in world axes: M "
                   "agrees, inverse dynamics differ by armature * omega x v)")
    free_fric = [joint_name(mj, j) for j in free if np.any(
        np.asarray(mj.dof_frictionloss[mj.jnt_dofadr[j]:mj.jnt_dofadr[j] + 3]) != 0)]
    if actuation and flags["frictionloss"] and free_fric:
        out.append(f"the friction loss of the linear dofs of free joints {free_fric} (MuJoCo "
                   "bounds each world-axis component, symdyn's friction each body-axis one; "
                   "symdyn keeps the values)")
    limited = np.asarray(mj.jnt_limited, bool)
    balls = [joint_name(mj, j) for j in range(mj.njnt)
             if limited[j] and int(mj.jnt_type[j]) == _BALL]
    if balls:
        out.append(f"the cone limits of ball joints {balls} (symdyn limits bound coordinates)")
    if not actuation and np.any(limited):
        out.append(f"joint ranges of {int(np.count_nonzero(limited))} joints")
    frc = [joint_name(mj, j) for j in range(mj.njnt) if bool(mj.jnt_actfrclimited[j]) and (
        not actuation or int(mj.jnt_type[j]) not in (_HINGE, _SLIDE)
        or float(mj.jnt_actfrcrange[j][0]) != -float(mj.jnt_actfrcrange[j][1]))]
    if frc:
        out.append(f"actuator-force ranges of joints {frc} (symdyn's effort limit is a symmetric "
                   "bound on one coordinate)")
    if (flags["passive"] and flags["gravity"] and np.any(np.asarray(mj.opt.gravity) != 0)
            and np.any(np.asarray(mj.body_gravcomp, float) != 0)):
        out.append("body gravity compensation (gravcomp, a passive force)")
    density, viscosity = float(mj.opt.density), float(mj.opt.viscosity)
    if flags["passive"] and (density != 0 or viscosity != 0):
        wind = np.asarray(mj.opt.wind, float)
        opts = [f"density={density:g}", f"viscosity={viscosity:g}"] + (
            [f"wind=\"{' '.join(f'{w:g}' for w in wind)}\""] if np.any(wind != 0) else [])
        fluid = getattr(mj, "geom_fluid", None)   # column 0: the ellipsoid model is on
        ell = 0 if fluid is None or not mj.ngeom else int(np.count_nonzero(
            np.asarray(fluid, float).reshape(mj.ngeom, -1)[:, 0]))
        shape = f", {ell} geoms with fluidshape=\"ellipsoid\"" if ell else ""
        out.append(f"fluid forces (<option {' '.join(opts)}>{shape}: lift, drag, viscous "
                   "resistance and added mass; symdyn's dynamics are those of density = "
                   "viscosity = 0)")
    if flags["invdiscrete"]:
        out.append("<flag invdiscrete=\"enable\"> (MuJoCo's mj_inverse then inverts the "
                   "discrete-time step of the integrator; symdyn's rnea is the continuous-time "
                   "inverse dynamics, mj_inverse without the flag)")
    if mj.neq and flags["equality"]:
        out.append(f"{mj.neq} equality constraints ({names('equality', mj.neq)})")
    if mj.ntendon:
        out.append(f"{mj.ntendon} tendons ({names('tendon', mj.ntendon)})")
    if mj.nu and flags["actuation"]:
        out.append(f"{mj.nu} actuators ({names('actuator', mj.nu)})")
    if mj.nmocap:
        mocap = [_body_name(mj, b) for b in range(mj.nbody) if int(mj.body_mocapid[b]) >= 0]
        out.append(f"mocap bodies {mocap} (kept as bodies fixed at their model pose)")
    if getattr(mj, "nflex", 0):
        out.append(f"{mj.nflex} flexes (deformable objects)")
    return out


def from_mujoco(mj_model: Any, name: str | None = None, strict: bool = False,
                source: str | None = None) -> Model:
    """A symdyn :class:`~symdyn.model.Model` of the compiled ``mujoco.MjModel`` ``mj_model``.

    Conventions: see the module docstring (:mod:`symdyn.interop.mujoco`). ``model.joint_names``
    are MuJoCo's joint names (unnamed joints: ``"<body>:joint<k>"``); use :func:`mujoco_maps`
    for qpos/qvel/qacc/forces/matrices. What the model leaves out while MuJoCo's flags leave it
    on (springs, gravity compensation, fluid forces, equality constraints, tendons, actuators,
    mocap bodies, flexes, ...; see the module docstring) is reported by one
    :class:`MJCFWarning` listing it, or refused with :class:`MJCFError` when ``strict=True``.
    A model without joints loads with ``nq = nv = 0`` (its bodies and sites are frames).
    ``source`` labels error messages (the file name; default ``"<MjModel>"``).
    """
    mj = mj_model
    label = source or "<MjModel>"
    from .pinocchio import supports_actuation

    actuation = supports_actuation()
    flags = _flags(mj)
    ignored = _ignored(mj, actuation, flags)
    if ignored:
        msg = f"{label}: left out of the symdyn model: " + "; ".join(ignored)
        if strict:
            raise MJCFError(msg + " (strict=True)")
        warnings.warn(msg, MJCFWarning, stacklevel=2)
    bodies: list[Body] = []
    used: set[str] = set()
    jnames: set[str] = set()

    def add(body: Body) -> None:
        if body.name in used:
            raise MJCFError(f"{label}: the name {body.name!r} is used twice in the symdyn model "
                            "(a body, a joint-anchor body 'body/joint' or a site): rename one")
        used.add(body.name)
        bodies.append(body)

    # MuJoCo's body 0: the frame "world" (MuJoCo reserves the name), so that a model without
    # bodies (an MJCF of assets only) is a valid Model with nv = 0 too
    add(Body("world", None, Fixed(), 0.0, np.zeros(3), np.zeros((3, 3)),
             _transform(np.eye(3), np.zeros(3))))
    frame_of: dict[int, str | None] = {0: None}  # MuJoCo body -> symdyn name of its frame
    for b in range(1, mj.nbody):
        bname = _body_name(mj, b)
        parent = frame_of[int(mj.body_parentid[b])]
        R_b = _quat_wxyz_to_rot(mj.body_quat[b])
        p_b = np.array(mj.body_pos[b], float)
        mass = float(mj.body_mass[b])
        com = np.array(mj.body_ipos[b], float)
        Ri = _quat_wxyz_to_rot(mj.body_iquat[b])
        Ic = Ri @ np.diag(np.asarray(mj.body_inertia[b], float)) @ Ri.T
        adr, num = int(mj.body_jntadr[b]), int(mj.body_jntnum[b])
        where = f"{label}: body {bname!r}"
        if num == 0:  # welded to the parent
            add(Body(bname, parent, Fixed(), mass, com, Ic, _transform(R_b, p_b)))
            frame_of[b] = bname
            continue
        types = [int(mj.jnt_type[j]) for j in range(adr, adr + num)]
        if _FREE in types:
            jn = joint_name(mj, adr + types.index(_FREE))
            if num > 1:
                raise MJCFError(f"{where}: free joint {jn!r} together with other joints in one "
                                "body (MuJoCo allows a free joint only alone)")
            if int(mj.body_parentid[b]) != 0:
                raise MJCFError(f"{where}: free joint {jn!r} in a body that is not a child of the "
                                "world: symdyn's Floating joint is relative to the parent body, "
                                "MuJoCo's free joint to the world")
        prev, X, anchor = parent, (R_b, p_b), np.zeros(3)
        for k, j in enumerate(range(adr, adr + num)):
            t, jn = types[k], joint_name(mj, j)
            if t not in _TYPE_NAMES:
                raise MJCFError(f"{where}: joint {jn!r} has the unknown MuJoCo joint type {t}")
            if jn in jnames:
                raise MJCFError(f"{where}: joint name {jn!r} is used twice")
            jnames.add(jn)
            axis = np.array(mj.jnt_axis[j], float)
            pos = np.array(mj.jnt_pos[j], float) if t in (_HINGE, _BALL) else np.zeros(3)
            joint: Joint
            if t == _FREE:
                joint, Xtree = Floating(), (np.eye(3), np.zeros(3))
            else:
                joint = Spherical() if t == _BALL else \
                    (Revolute(_axis(axis)) if t == _HINGE else Prismatic(_axis(axis)))
                R0, p0 = X   # pose of the current (previous joint's anchor) frame, moved to `pos`
                Xtree = (R0, p0 + R0 @ (pos - anchor))
                ref = float(mj.qpos0[mj.jnt_qposadr[j]]) if t in (_HINGE, _SLIDE) else 0.0
                if t == _HINGE and ref != 0.0:   # MuJoCo rotates by qpos - ref: q = qpos here
                    Xtree = (Xtree[0] @ _rot_axis(axis, -ref), Xtree[1])
                elif t == _SLIDE and ref != 0.0:
                    Xtree = (Xtree[0], Xtree[1] - ref * (Xtree[0] @ (axis / np.linalg.norm(axis))))
            last = k == num - 1
            mname = bname if (last and num == 1 and not np.any(pos)) else f"{bname}/{jn}"
            add(Body(mname, prev, joint, 0.0, np.zeros(3), np.zeros((3, 3)),
                     _transform(*Xtree), joint_name=jn))
            prev, X, anchor = mname, (np.eye(3), np.zeros(3)), pos
        if prev == bname:  # one joint at the body origin: the body itself carries the inertia
            bodies[-1] = Body(bname, bodies[-1].parent, bodies[-1].joint, mass, com, Ic,
                              bodies[-1].X_tree, joint_name=bodies[-1].joint_name)
        else:  # the MuJoCo body frame, back from the last anchor, with the inertia
            add(Body(bname, prev, Fixed(), mass, com, Ic, _transform(np.eye(3), -anchor)))
        frame_of[b] = bname
    renamed = []
    for s in range(mj.nsite):
        sname = _name(mj, "site", s)
        if not sname:
            continue
        if sname in used:  # MuJoCo names sites and bodies separately
            renamed.append(f"{sname!r} -> 'site:{sname}'")
            sname = f"site:{sname}"
        R_s = _quat_wxyz_to_rot(mj.site_quat[s])
        add(Body(sname, frame_of[int(mj.site_bodyid[s])], Fixed(), 0.0, np.zeros(3),
                 np.zeros((3, 3)), _transform(R_s, np.array(mj.site_pos[s], float))))
    if renamed:
        warnings.warn(f"{label}: sites named like a body are frames under another name: "
                      + ", ".join(renamed), MJCFWarning, stacklevel=2)
    # <flag gravity="disable"/> zeroes gravity at runtime and keeps opt.gravity
    gravity = np.array(mj.opt.gravity, float) if flags["gravity"] else np.zeros(3)
    try:
        model = Model(bodies, gravity=gravity,
                      name=name if name is not None else (model_name(mj) or "mjcf"),
                      check_inertias="semidefinite", allow_massless=True)
        return _with_mj_actuation(model, mj, flags) if actuation else model
    except ModelError as exc:
        raise MJCFError(f"{label}: {exc}") from exc


def _with_mj_actuation(model: Model, mj, flags: dict[str, bool] | None = None) -> Model:
    """``model`` with MuJoCo's armature, damping, friction loss (per dof, the free joint's
    [linear; angular] reordered) and the ranges of limited hinge and slide joints (``q = qpos``),
    and symmetric actuator-force ranges (``actfrcrange``) as effort limits. Damping is 0 where
    ``<flag damper>`` (or ``passive``) is off and friction 0 where ``<flag frictionloss>`` or
    ``<flag constraint>`` is, as MuJoCo then applies neither (``flags``: :func:`_flags`)."""
    flags = flags if flags is not None else _flags(mj)
    index = {n: i for i, n in enumerate(model.joint_names)}
    arm, damp, fric = np.zeros(model.nv), np.zeros(model.nv), np.zeros(model.nv)
    lower, upper = np.full(model.nq, -np.inf), np.full(model.nq, np.inf)
    effort = np.full(model.nv, np.inf)
    for j in range(mj.njnt):
        i, t = index[joint_name(mj, j)], int(mj.jnt_type[j])
        (qa, _), (va, vb) = model.q_idx[i], model.v_idx[i]
        d = int(mj.jnt_dofadr[j])
        dofs = np.arange(d, d + vb - va)
        if t == _FREE:
            dofs = np.concatenate([dofs[3:], dofs[:3]])   # MuJoCo [v; omega] -> symdyn [omega; v]
        arm[va:vb] = np.asarray(mj.dof_armature, float)[dofs]
        if flags["dampers"]:
            damp[va:vb] = np.asarray(mj.dof_damping, float)[dofs]
        if flags["frictionloss"]:
            fric[va:vb] = np.asarray(mj.dof_frictionloss, float)[dofs]
        if t in (_HINGE, _SLIDE):
            if bool(mj.jnt_limited[j]):
                lower[qa], upper[qa] = float(mj.jnt_range[j][0]), float(mj.jnt_range[j][1])
            if bool(mj.jnt_actfrclimited[j]):
                lo, hi = (float(x) for x in mj.jnt_actfrcrange[j])
                if lo == -hi:
                    effort[va] = hi
    return model.replace(limits={"lower": lower, "upper": upper, "effort": effort},
                         armature=arm, damping=damp, friction=fric)


def model_name(mj: Any) -> str:
    """The name an MJCF file gives its model (``<mujoco model=...>``), or ""."""
    try:
        mujoco = require_mujoco()
        return mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_MODEL, 0) or ""
    except Exception:  # pragma: no cover - older MuJoCo without the model name
        return ""


def _rot_axis(a: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the axis ``a`` (Rodrigues)."""
    a = np.asarray(a, float) / float(np.linalg.norm(a))
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)


def _axis(a: np.ndarray):
    n = float(np.linalg.norm(a))
    a = a / n
    for name, k in (("x", 0), ("y", 1), ("z", 2)):
        e = np.zeros(3)
        e[k] = 1.0
        if np.array_equal(a, e):
            return name
    return tuple(float(c) for c in a)


class MujocoMaps:
    """Maps between a symdyn model and a MuJoCo model with the same joints (matched by name);
    see :func:`mujoco_maps` and the module docstring for the conventions.

    Every method takes the configuration in the convention of the vector it converts (``qpos``
    for MuJoCo vectors, ``q`` for symdyn ones), because the free-joint velocity map depends on the
    body orientation. ``armature``: MuJoCo's ``dof_armature`` (nv, MuJoCo order)."""

    def __init__(self, model: Model, mj_model: Any):
        mj = mj_model
        self.model, self.mj_model = model, mj
        self.nq, self.nv = model.nq, model.nv
        if (int(mj.nq), int(mj.nv)) != (model.nq, model.nv):
            raise MJCFError(f"sizes differ: symdyn model {model.name!r} has nq = {model.nq}, "
                            f"nv = {model.nv}, the MuJoCo model nq = {mj.nq}, nv = {mj.nv}")
        index = {n: i for i, n in enumerate(model.joint_names)}
        self._joints = []  # (type, symdyn q slice start, v start, mj qpos adr, dof adr)
        seen = set()
        P = np.empty(model.nv, dtype=int)  # v_mj = v[P] up to the free-joint blocks
        for j in range(mj.njnt):
            jn = joint_name(mj, j)
            i = index.get(jn)
            t = int(mj.jnt_type[j])
            if i is None:
                raise MJCFError(f"MuJoCo joint {jn!r} is not a joint of symdyn model "
                                f"{model.name!r}")
            want = {_FREE: "floating", _BALL: "spherical", _SLIDE: "prismatic",
                    _HINGE: "revolute"}[t]
            if model.joints[i].type != want:
                raise MJCFError(f"joint {jn!r}: MuJoCo {_TYPE_NAMES[t]} against symdyn "
                                f"{model.joints[i]!r}")
            seen.add(i)
            qa, va = model.q_idx[i][0], model.v_idx[i][0]
            qadr, dadr = int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j])
            nv = model.joints[i].nv
            P[dadr:dadr + nv] = np.arange(va, va + nv)
            self._joints.append((t, qa, va, qadr, dadr))
        if len(seen) != model.N:
            extra = [model.joint_names[i] for i in range(model.N) if i not in seen]
            raise MJCFError(f"symdyn joints {extra} are not joints of the MuJoCo model")
        self._P = P
        self._Pinv = np.empty_like(P)
        self._Pinv[P] = np.arange(len(P))
        self.armature = np.array(mj.dof_armature, float)

    @staticmethod
    def _vec(x, n, what):
        a = np.asarray(x, float).reshape(-1)
        if a.shape != (n,):
            raise ValueError(f"{what} must have {n} entries, got {a.size}")
        return a

    # configurations
    def q_from_mj(self, qpos: Any) -> np.ndarray:
        """symdyn q of MuJoCo's qpos (hinge/slide equal, quaternions to (x, y, z, w),
        normalized as MuJoCo's kinematics normalize them)."""
        qp = self._vec(qpos, self.nq, "qpos")
        q = np.empty(self.nq)
        for t, qa, _, qadr, _ in self._joints:
            if t in (_HINGE, _SLIDE):
                q[qa] = qp[qadr]
            else:
                o = 3 if t == _FREE else 0
                q[qa:qa + o] = qp[qadr:qadr + o]
                w = qp[qadr + o:qadr + o + 4]
                w = w / np.linalg.norm(w)
                q[qa + o:qa + o + 4] = w[1], w[2], w[3], w[0]
        return q

    def q_to_mj(self, q: Any) -> np.ndarray:
        """MuJoCo's qpos of symdyn's q."""
        qs = self._vec(q, self.nq, "q")
        qp = np.empty(self.nq)
        for t, qa, _, qadr, _ in self._joints:
            if t in (_HINGE, _SLIDE):
                qp[qadr] = qs[qa]
            else:
                o = 3 if t == _FREE else 0
                qp[qadr:qadr + o] = qs[qa:qa + o]
                x = qs[qa + o:qa + o + 4]
                qp[qadr + o:qadr + o + 4] = x[3], x[0], x[1], x[2]
        return qp

    # velocities
    def _T(self, rots: dict) -> np.ndarray:
        """T with v = T qvel; ``rots``: free-joint dof address -> body rotation R."""
        T = np.zeros((self.nv, self.nv))
        T[self._P, np.arange(self.nv)] = 1.0
        for t, _, va, _, dadr in self._joints:
            if t == _FREE:
                R = rots[dadr]
                T[va:va + 6, dadr:dadr + 6] = 0.0
                T[va:va + 3, dadr + 3:dadr + 6] = np.eye(3)   # omega (local) -> symdyn first block
                T[va + 3:va + 6, dadr:dadr + 3] = R.T          # v_world -> R^T v_world
        return T

    def _rots_mj(self, qpos) -> dict:
        qp = self._vec(qpos, self.nq, "qpos")
        return {dadr: _quat_wxyz_to_rot(qp[qadr + 3:qadr + 7])
                for t, _, _, qadr, dadr in self._joints if t == _FREE}

    def _rots_sd(self, q) -> dict:
        qs = self._vec(q, self.nq, "q")
        return {dadr: _quat_wxyz_to_rot([qs[qa + 6], *qs[qa + 3:qa + 6]])
                for t, qa, _, _, dadr in self._joints if t == _FREE}

    def velocity_matrix(self, qpos: Any) -> np.ndarray:
        """The orthogonal T(qpos) with symdyn v = T qvel (a permutation without free joints)."""
        return self._T(self._rots_mj(qpos))

    def v_from_mj(self, qvel: Any, qpos: Any) -> np.ndarray:
        """symdyn v of MuJoCo's qvel at configuration qpos."""
        return self.velocity_matrix(qpos) @ self._vec(qvel, self.nv, "qvel")

    def v_to_mj(self, v: Any, q: Any) -> np.ndarray:
        """MuJoCo's qvel of symdyn's v at configuration q."""
        return self._T(self._rots_sd(q)).T @ self._vec(v, self.nv, "v")

    def a_from_mj(self, qacc: Any, qpos: Any, qvel: Any) -> np.ndarray:
        """symdyn qdd of MuJoCo's qacc (with qpos, qvel): T qacc plus, per free joint,
        ``-omega x (R^T v_world)`` on the linear block."""
        qv = self._vec(qvel, self.nv, "qvel")
        a = self.velocity_matrix(qpos) @ self._vec(qacc, self.nv, "qacc")
        rots = self._rots_mj(qpos)
        for t, _, va, _, dadr in self._joints:
            if t == _FREE:
                w, vb = qv[dadr + 3:dadr + 6], rots[dadr].T @ qv[dadr:dadr + 3]
                a[va + 3:va + 6] -= np.cross(w, vb)
        return a

    def a_to_mj(self, qdd: Any, q: Any, v: Any) -> np.ndarray:
        """MuJoCo's qacc of symdyn's qdd (with q, v): the inverse of :meth:`a_from_mj`."""
        a = self._vec(qdd, self.nv, "qdd").copy()
        vs = self._vec(v, self.nv, "v")
        for t, _, va, _, _ in self._joints:
            if t == _FREE:
                a[va + 3:va + 6] += np.cross(vs[va:va + 3], vs[va + 3:va + 6])
        return self._T(self._rots_sd(q)).T @ a

    # generalized forces and matrices
    def f_to_mj(self, tau: Any, q: Any) -> np.ndarray:
        """MuJoCo generalized force (qfrc) of symdyn's tau: T^T tau (power is invariant)."""
        return self._T(self._rots_sd(q)).T @ self._vec(tau, self.nv, "tau")

    def f_from_mj(self, qfrc: Any, qpos: Any) -> np.ndarray:
        """symdyn tau of a MuJoCo generalized force: T qfrc."""
        return self.velocity_matrix(qpos) @ self._vec(qfrc, self.nv, "qfrc")

    def matrix_to_mj(self, A: Any, q: Any) -> np.ndarray:
        """MuJoCo form T^T A T of a symdyn nv x nv matrix (mass matrix, derivative blocks)."""
        T = self._T(self._rots_sd(q))
        return T.T @ np.asarray(A, float) @ T

    def matrix_from_mj(self, A_mj: Any, qpos: Any) -> np.ndarray:
        """symdyn form T A_mj T^T of a MuJoCo nv x nv matrix (e.g. mj_fullM without armature)."""
        T = self.velocity_matrix(qpos)
        return T @ np.asarray(A_mj, float) @ T.T


def mujoco_maps(model: Model, mj_model: Any) -> MujocoMaps:
    """The :class:`MujocoMaps` between ``model`` (from :func:`from_mujoco` or built otherwise with
    the same joint names and types) and ``mj_model``."""
    return MujocoMaps(model, mj_model)
