"""Conversion of symdyn models and vectors to Pinocchio (``pip install pin``), the numeric reference.

Conventions mapped here:
* Pinocchio needs joints in depth-first order (contiguous subtrees); bodies are added in the
  depth-first order :func:`pinocchio_order`, and the permutations below map indices. Each body is one
  Pinocchio joint whose
  placement is ``SE3(E^T, r)`` for symdyn's ``Xtree = (E, r)``; inertias are ``Inertia(m, c, Ic)``.
* Configurations coincide up to the body order (quaternions are (x, y, z, w) in both; free-flyer ``[p; quat]``).
* Velocities coincide except the free-flyer, whose body velocity is ``[v; omega]`` in Pinocchio and
  ``[omega; v]`` in symdyn: :func:`velocity_permutation` gives the index map.
* Planar joints have no equivalent (Pinocchio's planar joint uses (x, y, cos, sin)); they are rejected.
"""
from __future__ import annotations

import numpy as np


def _pin():
    try:
        import pinocchio
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Pinocchio is needed for this: pip install pin") from exc
    return pinocchio


def to_pinocchio(model):
    """A ``pinocchio.Model`` equal to the numeric symdyn ``model``."""
    pin = _pin()
    if model.is_symbolic:
        raise ValueError("only numeric models convert to Pinocchio (use model.subs(...) first)")
    pm = pin.Model()
    pm.name = model.name
    pm.gravity = pin.Motion(np.asarray(model.gravity, float).reshape(3), np.zeros(3))
    ids = [0] * model.N
    for i in pinocchio_order(model):
        joint, p = model.joints[i], model.parents[i]
        E, r = (np.asarray(a, float) for a in model.Xtree[i])
        placement = pin.SE3(E.T, r.reshape(3))
        jm = _joint_model(pin, joint)
        parent_id = 0 if p < 0 else ids[p]
        jid = pm.addJoint(parent_id, jm, placement, model.joint_names[i])
        I6 = np.asarray(model.I[i], float)
        pm.appendBodyToJoint(jid, _inertia_from_6x6(pin, I6), pin.SE3.Identity())
        ids[i] = jid
    return pm


def pinocchio_order(model) -> list[int]:
    """Bodies in depth-first order (children by index), the joint order of :func:`to_pinocchio`."""
    order, stack = [], [i for i in reversed(range(model.N)) if model.parents[i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(model.children[i]))
    return order


def configuration_permutation(model) -> np.ndarray:
    """Index array with q_pin = q_symdyn[P]."""
    return np.array([k for i in pinocchio_order(model) for k in range(*model.q_idx[i])], dtype=int)


def q_to_pin(model, q):
    return np.asarray(q, float)[configuration_permutation(model)]


def _inertia_from_6x6(pin, I6):
    m = I6[3, 3]
    h = np.array([I6[2, 4], I6[0, 5], I6[1, 3]])  # m S(c) block: S(c)[2,1] = c_x, ...
    c = h / m
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    Ic = I6[:3, :3] - m * C @ C.T
    return pin.Inertia(m, c, (Ic + Ic.T) / 2)


def _joint_model(pin, joint):
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
    raise ValueError(f"joint type {t!r} has no Pinocchio equivalent in this bridge")


def velocity_permutation(model) -> np.ndarray:
    """Index array P with v_pin = v_symdyn[P] (and M_pin = M[np.ix_(P, P)])."""
    P = []
    for i in pinocchio_order(model):
        j, (a, b) = model.joints[i], model.v_idx[i]
        idx = list(range(a, b))
        if j.type == "floating":
            idx = idx[3:] + idx[:3]
        P.extend(idx)
    return np.array(P, dtype=int)


def v_to_pin(model, v):
    return np.asarray(v, float)[velocity_permutation(model)]


def v_from_pin(model, v_pin):
    P = velocity_permutation(model)
    out = np.empty(len(P))
    out[P] = np.asarray(v_pin, float)
    return out


def matrix_from_pin(model, A_pin, rows="v", cols="v"):
    """Convert a Pinocchio matrix indexed by velocities (rows/cols 'v') to symdyn ordering."""
    P = velocity_permutation(model)
    A = np.array(A_pin, float)
    out = np.empty_like(A)
    ri = P if rows == "v" else np.arange(A.shape[0])
    ci = P if cols == "v" else np.arange(A.shape[1])
    out[np.ix_(ri, ci)] = A
    return out
