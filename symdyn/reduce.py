"""Reduced models (locked joints) and mimic-joint coupling.

Locked joints: :func:`reduced_model` (``reduced_model(model, lock=...)``), Pinocchio's
``buildReducedModel``. Each locked joint becomes rigid at the given value (default: its neutral
configuration, 0 or the identity quaternion): its body is merged into its parent with the exact
composite inertia ``X^T I X`` through the locked joint transform ``X = XJ(q_lock) Xtree``, its
children hang from the parent through the same transform, and every frame of the merged body (its
link, fixed links merged into it earlier) stays in ``model.frames`` as a frame of the body it was
merged into (a locked body on the world becomes a world frame, ``body == -1``, and its inertia no
longer counts). Remaining joints keep their order, names and actuation data (limits, armature,
damping, friction). Each locked joint's name becomes a frame (``model.fixed_joints``: joint name
-> its child link, whose frame it is), as Pinocchio keeps a locked joint as a FIXED_JOINT frame.
A lock value outside the joint's position limits (``model.limits``) gives a ``UserWarning``
naming the joint, the value and the limits (the model is built all the same). Mimic relations:
locking a master locks its mimic joints at ``multiplier * value + offset`` too; a locked mimic
joint simply leaves ``model.mimic``.

Mimic joints (URDF ``<mimic>``): symdyn loads them as independent joints and records the relation
``q_mimic = multiplier * q_master + offset`` in ``model.mimic`` (name -> :class:`~symdyn.model.Mimic`).
The coupled system has the *independent* coordinates (every joint that is not a mimic joint, in
model order): ``q = expand_mimic(model, q_r)``, ``qd = G qd_r``, ``qdd = G qdd_r`` with the constant
``G = mimic_matrix(model)`` (nv x nv_r), and back, ``q_r = reduce_mimic(model, q)`` (the independent
joints' entries of a full state, from a simulator or a log), so the coupled dynamics is

    M_r = G^T M G,    tau_r = G^T rnea(q, G qd_r, G qdd_r),    qdd_r = M_r^-1 (tau_r - G^T h),

what :func:`mimic_crba`, :func:`mimic_rnea` and :func:`mimic_aba` compute on every backend (the
same as Pinocchio 4's ``buildModel(..., mimic=True)``; ``tau_r`` is the generalized force on the
independent coordinates, the master's actuator driving its mimic joints).
"""
from __future__ import annotations

import inspect
import math
import warnings
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from . import spatial
from .backends import get_backend, resolve_backend
from .model import Frame, Limits, ModelError, freeze, is_sympy
from .spatial import Transform
from .types import Array

if TYPE_CHECKING:
    from .model import Model

__all__ = ["expand_mimic", "lock_values", "mimic_aba", "mimic_crba", "mimic_independent",
           "mimic_matrix", "mimic_rnea", "reduce_mimic", "reduced_model"]


# --- locked joints ----------------------------------------------------------------------------------

def _lock_value(model: "Model", i: int, value: Any, sym: bool):
    """The locked configuration of body i's joint as a backend vector (validated)."""
    joint, jn = model.joints[i], model.joint_names[i]
    if value is None:
        vals = list(joint.neutral())
    else:
        if is_sympy(value) and not hasattr(value, "shape"):
            vals = [value]
        else:
            arr = value if isinstance(value, (list, tuple)) or is_sympy(value) else np.asarray(value)
            try:
                vals = [value] if np.ndim(arr) == 0 and not is_sympy(value) else list(arr)
            except TypeError:
                raise ModelError(f"lock value of joint {jn!r} must be a number or {joint.nq} "
                                 f"numbers, got {value!r}") from None
        if len(vals) != joint.nq:
            raise ModelError(f"lock value of joint {jn!r} ({joint!r}) must have {joint.nq} "
                             f"entr{'y' if joint.nq == 1 else 'ies'}, got {len(vals)}")
        if not sym:
            try:
                vals = [float(v) for v in vals]
            except (TypeError, ValueError):
                raise ModelError(f"lock value of joint {jn!r} must be numbers, got {value!r}") from None
            if not all(math.isfinite(v) for v in vals):
                raise ModelError(f"lock value of joint {jn!r} contains NaN or inf: {vals}")
            if joint.type in ("spherical", "floating"):
                n = math.sqrt(sum(v * v for v in vals[-4:]))
                if abs(n - 1) > 1e-6:
                    raise ModelError(f"lock value of joint {jn!r}: the quaternion (x, y, z, w) "
                                     f"must have norm 1, got {n:.6g}")
    return vals


def lock_values(model: "Model", lock: Any) -> dict[str, list]:
    """``lock`` (joint names, a dict name -> value, or one name) as a dict name -> configuration
    values, with mimic joints of locked masters added (``multiplier * value + offset``).
    Unknown names raise :class:`~symdyn.model.ModelError` listing the joints."""
    if lock is None:
        lock = {}
    if isinstance(lock, str):
        lock = [lock]
    if not isinstance(lock, Mapping):
        try:
            lock = {name: None for name in lock}
        except TypeError:
            raise ModelError(f"lock must be joint names or a dict joint name -> value, got "
                             f"{type(lock).__name__}") from None
    sym = model.is_symbolic
    out: dict[str, list] = {}
    for name, value in lock.items():
        if name not in model.joint_names:
            raise ModelError(f"cannot lock {name!r}: not a joint of model {model.name!r} "
                             f"(joints: {', '.join(model.joint_names)})")
        out[name] = _lock_value(model, model.joint_names.index(name), value, sym)
    for jn, m in model.mimic.items():
        if m.master in out and jn not in out:
            out[jn] = [m.multiplier * out[m.master][0] + m.offset]
    if not sym:
        _warn_outside_limits(model, out, lock)
    return out


def _warn_outside_limits(model: "Model", values: dict[str, list], given: Mapping) -> None:
    """A ``UserWarning`` naming each locked joint whose value lies outside its position limits
    (``model.limits.lower``/``upper``), with the value and the limits."""
    lower, upper = model.limits.lower, model.limits.upper
    bad = []
    for jn, vals in values.items():
        i = model.joint_names.index(jn)
        a, _ = model.q_idx[i]
        for k, v in enumerate(vals):
            lo, up = float(lower[a + k]), float(upper[a + k])
            if not lo <= float(v) <= up:
                entry = f"[{k}]" if len(vals) > 1 else ""
                how = ("" if jn in given and given[jn] is not None else
                       " (its neutral value)" if jn in given else
                       f" (from its mimic relation to {model.mimic[jn].master!r})")
                bad.append(f"joint {jn!r}{entry} = {float(v):g}{how} is outside its limits "
                           f"[{lo:g}, {up:g}]")
    if bad:
        warnings.warn(f"model {model.name!r}: locking outside the joint limits: {'; '.join(bad)}",
                      UserWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning raised by the caller at the first frame outside
    symdyn (the user's call to ``reduced_model``, ``load_urdf(lock=...)``, ...)."""
    f: Any = inspect.currentframe()
    f = f.f_back if f is not None else None
    level = 1
    while f is not None and str(f.f_globals.get("__name__", "")).split(".")[0] == "symdyn":
        f, level = f.f_back, level + 1
    return level


def reduced_model(model: "Model", lock: Any = (), name: str | None = None) -> "Model":
    """``model`` with the joints of ``lock`` fixed; see the module docstring.

    ``lock``: joint names (locked at their neutral configuration) or a dict joint name -> value
    (a number for one-coordinate joints, nq numbers for multi-coordinate ones; ``None``: neutral).
    ``name``: the new model's name (default: the model's). Raises
    :class:`~symdyn.model.ModelError` for unknown joints or malformed values. Locking every joint
    gives a model with ``nq = nv = 0`` whose bodies are all frames on the world (as Pinocchio's
    ``buildReducedModel``)."""
    from .model import Model

    values = lock_values(model, lock)
    if not values:
        return model if name is None else model.replace(name=name)
    sym = model.is_symbolic
    Bk = get_backend("sympy" if sym else "numpy")
    where: list[tuple[int, Transform | None]] = []   # old body -> (new body or -1, X new -> old)
    names: list[str] = []
    parents: list[int] = []
    joints: list[Any] = []
    jnames: list[str] = []
    Xtree: list[Transform] = []
    I: list[Any] = []
    params: list[Any] = []
    kept_q: list[tuple[int, int]] = []
    kept_v: list[tuple[int, int]] = []
    for i, jn in enumerate(model.joint_names):
        p = model.parents[i]
        X = model.Xtree[i]
        k, Xp = (-1, None) if p < 0 else where[p]
        if Xp is not None:
            X = spatial.compose(Bk, X, Xp)                     # new body k -> joint predecessor
        if jn in values:
            q = Bk.vector(values[jn])
            XJ, _ = model.joints[i].calc(Bk, q)
            Xl = spatial.compose(Bk, XJ, X)                     # new body k -> old body i
            if k >= 0:
                I[k] = I[k] + spatial.congruence(Bk, Xl, model.I[i])
                params[k] = None
            where.append((k, Xl))
            continue
        where.append((len(names), None))
        names.append(model.names[i])
        parents.append(k)
        joints.append(model.joints[i])
        jnames.append(jn)
        Xtree.append(X)
        I.append(model.I[i])
        params.append(model.body_params[i])
        kept_q.append(model.q_idx[i])
        kept_v.append(model.v_idx[i])
    frames = {}
    for fname, fr in model.frames.items():
        if fr.body < 0:
            frames[fname] = fr
            continue
        k, Xw = where[fr.body]
        X = fr.X if Xw is None else spatial.compose(Bk, Transform(fr.X.E, fr.X.r), Xw)
        frames[fname] = Frame(k, Transform(freeze(X.E), freeze(X.r)), fname)
    # locked joints become fixed joints: their frame is their body's (child link) frame
    fixed_joints = dict(model.fixed_joints)
    fixed_joints.update({jn: model.names[i] for i, jn in enumerate(model.joint_names) if jn in values})

    def take(arr, idx):
        return np.concatenate([arr[a:b] for a, b in idx]) if idx else np.zeros(0)

    lim = model.limits
    actuation = dict(
        limits=Limits(take(lim.lower, kept_q), take(lim.upper, kept_q),
                      take(lim.velocity, kept_v), take(lim.effort, kept_v)),
        armature=take(model.armature, kept_v), damping=take(model.damping, kept_v),
        friction=take(model.friction, kept_v),
        mimic={jn: m for jn, m in model.mimic.items() if jn not in values})
    if not sym:
        Xtree = [Transform(np.asarray(X.E, float), np.asarray(X.r, float).reshape(3)) for X in Xtree]
    new = Model.__new__(Model)
    new._setup(name=model.name if name is None else name, gravity=model.gravity, names=names,
               parents=parents, joints=joints, joint_names=jnames, Xtree=Xtree, I=I,
               body_params=params, frames=frames, fixed_joints=fixed_joints,
               check_inertias=model.check_inertias,
               allow_massless=model.allow_massless, is_symbolic=sym, actuation=actuation)
    return new


# --- mimic joints -------------------------------------------------------------------------------------

def mimic_independent(model: "Model") -> list[str]:
    """Names of the independent joints (every joint not in ``model.mimic``), in model order:
    the joints whose coordinates make up ``q_r``, ``qd_r``."""
    return [jn for jn in model.joint_names if jn not in model.mimic]


def _reduced_layout(model: "Model"):
    """(independent body indices, their q ranges in q_r, their v column in G per v entry)."""
    bodies = [i for i, jn in enumerate(model.joint_names) if jn not in model.mimic]
    qr, vr, nq, nv = {}, {}, 0, 0
    for i in bodies:
        j = model.joints[i]
        qr[i], vr[i] = (nq, nq + j.nq), (nv, nv + j.nv)
        nq, nv = nq + j.nq, nv + j.nv
    return bodies, qr, vr, nq, nv


def mimic_matrix(model: "Model", *, backend: str | None = None) -> Array:
    """The constant ``G`` (nv x nv_r) with ``qd = G qd_r``: identity on the independent joints'
    speeds, ``multiplier`` in a mimic joint's row at its master's column. A float NumPy array, or
    the named backend's native matrix."""
    _, _, vr, _, nv_r = _reduced_layout(model)
    G = np.zeros((model.nv, nv_r))
    for i, jn in enumerate(model.joint_names):
        a, b = model.v_idx[i]
        if jn in model.mimic:
            m = model.mimic[jn]
            G[a, vr[model.joint_names.index(m.master)][0]] = m.multiplier
        else:
            c = vr[i][0]
            G[a:b, c:c + b - a] = np.eye(b - a)
    return G if backend is None else get_backend(backend).const(G.tolist())


def expand_mimic(model: "Model", q_r: Array, qd_r: Array | None = None, qdd_r: Array | None = None,
                 *, backend: str | None = None) -> Array | tuple[Array, ...]:
    """Full ``q`` (and ``qd = G qd_r``, ``qdd = G qdd_r`` when given) from the independent
    coordinates; mimic joints get ``multiplier * q_master + offset``. Returns ``q`` alone, or the
    tuple ``(q, qd[, qdd])``, in the inputs' backend."""
    bodies, qr, vr, nq_r, nv_r = _reduced_layout(model)
    B = resolve_backend(q_r, qd_r, qdd_r, backend=backend, model=model)
    q = B.to_vector(q_r, nq_r, "q_r")
    segs = []
    for i, jn in enumerate(model.joint_names):
        if jn in model.mimic:
            m = model.mimic[jn]
            a = qr[model.joint_names.index(m.master)][0]
            segs.append(B.vector([m.multiplier * q[a] + m.offset]))
        else:
            segs.append(B.rows(q, *qr[i]))
    out = [B.vcat(segs)]
    for what, x in (("qd_r", qd_r), ("qdd_r", qdd_r)):
        if x is not None:
            out.append(_times_G(B, model, B.to_vector(x, nv_r, what), vr))
    return out[0] if len(out) == 1 else tuple(out)


def reduce_mimic(model: "Model", q: Array, qd: Array | None = None, qdd: Array | None = None,
                 *, backend: str | None = None) -> Array | tuple[Array, ...]:
    """The independent coordinates ``q_r`` (and ``qd_r``, ``qdd_r`` when given) of a full state:
    the entries of the joints that mimic no other (:func:`mimic_independent`), in model order.
    The inverse of :func:`expand_mimic` on states that keep the mimic relations (the mimic
    joints' entries are dropped, not checked). Returns ``q_r`` alone, or the tuple ``(q_r,
    qd_r[, qdd_r])``, in the inputs' backend."""
    bodies = _reduced_layout(model)[0]
    B = resolve_backend(q, qd, qdd, backend=backend, model=model)
    out = []
    for what, x, n, idx in (("q", q, model.nq, model.q_idx), ("qd", qd, model.nv, model.v_idx),
                            ("qdd", qdd, model.nv, model.v_idx)):
        if x is not None:
            x = B.to_vector(x, n, what)
            out.append(B.vcat([B.rows(x, *idx[i]) for i in bodies]))
    return out[0] if len(out) == 1 else tuple(out)


def _times_G(B, model, x, vr):
    segs = []
    for i, jn in enumerate(model.joint_names):
        if jn in model.mimic:
            m = model.mimic[jn]
            a = vr[model.joint_names.index(m.master)][0]
            segs.append(B.vector([m.multiplier * x[a]]))
        else:
            segs.append(B.rows(x, *vr[i]))
    return B.vcat(segs)


def mimic_crba(model: "Model", q_r: Array, *, backend: str | None = None) -> Array:
    """``G^T M(q) G`` at ``q = expand_mimic(model, q_r)``: the mass matrix of the coupled system."""
    from .algorithms import crba

    q = expand_mimic(model, q_r, backend=backend)
    B = resolve_backend(q, backend=backend, model=model)
    G = B.const(mimic_matrix(model).tolist())
    return G.T @ crba(model, q, backend=B.name) @ G


def mimic_rnea(model: "Model", q_r: Array, qd_r: Array, qdd_r: Array, *,
               backend: str | None = None) -> Array:
    """``G^T rnea(q, G qd_r, G qdd_r)``: generalized forces on the independent coordinates."""
    from .algorithms import rnea

    q, qd, qdd = expand_mimic(model, q_r, qd_r, qdd_r, backend=backend)
    B = resolve_backend(q, qd, qdd, backend=backend, model=model)
    G = B.const(mimic_matrix(model).tolist())
    return G.T @ B.to_vector(rnea(model, q, qd, qdd, backend=B.name), model.nv, "tau")


def mimic_aba(model: "Model", q_r: Array, qd_r: Array, tau_r: Array, *,
              backend: str | None = None) -> Array:
    """Forward dynamics of the coupled system: ``qdd_r = (G^T M G)^-1 (tau_r - G^T h)`` with
    ``h = rnea(q, G qd_r, 0)`` (armature included through M)."""
    from .algorithms import crba, rnea

    q, qd = expand_mimic(model, q_r, qd_r, backend=backend)
    B = resolve_backend(q, qd, tau_r, backend=backend, model=model)
    nv_r = _reduced_layout(model)[4]
    G = B.const(mimic_matrix(model).tolist())
    h = B.to_vector(rnea(model, q, qd, [0.0] * model.nv, backend=B.name), model.nv, "h")
    Mr = G.T @ crba(model, q, backend=B.name) @ G
    return B.solve(Mr, B.to_vector(tau_r, nv_r, "tau_r") - G.T @ h)
