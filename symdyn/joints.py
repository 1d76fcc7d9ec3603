"""Joint models.

A joint has ``nq`` configuration entries and ``nv`` velocity entries and provides

* ``calc(B, q) -> (XJ, S)``: the joint transform ``XJ`` (a compact :class:`~symdyn.spatial.Transform`
  from the joint's predecessor frame to the successor body frame) and the motion subspace ``S``
  (6 x nv, successor coordinates) such that the joint velocity is ``S qd``;
* ``Sring(B, q, qd)``: the apparent derivative of ``S`` in body coordinates (paper 000 eq. (12)),
  or ``None`` when ``S`` is constant in body coordinates (every joint here except ``Planar``);
* ``integrate(B, q, v, dt=1)``: the configuration reached from ``q`` moving with velocity ``v``
  for ``dt`` (q "plus" v), which defines configuration perturbations for quaternion joints;
* ``neutral()``: the zero configuration, ``random_q(rng)``: a random valid configuration.

Quaternions are stored ``(x, y, z, w)`` (the same order as Pinocchio's configuration vectors).
Velocities of spherical and floating joints are body velocities (generalized speeds) in the child
frame: spherical ``v = omega`` (3), floating ``v = [omega; v_O]`` (6, angular first). Pinocchio's
free-flyer uses the same body velocity with ``[linear; angular]`` order: swap the two 3-blocks.
The floating configuration is ``[p; quat]`` with ``p`` the position of the body origin in the parent
(world) frame, as in Pinocchio.
"""
from __future__ import annotations

import copy
import math

from .spatial import Transform, quat_to_rot, rot_axis, skew

_AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}  # exact: no Floats in symbolic S


def _axis(axis):
    """Normalize an axis spec to ('x'|'y'|'z', unit tuple) or (tuple, unit tuple)."""
    if isinstance(axis, str):
        if axis not in _AXES:
            raise ValueError(f"unknown joint axis {axis!r}; use 'x', 'y', 'z' or a 3-vector")
        return axis, _AXES[axis]
    try:
        a = tuple(float(c) for c in axis)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"joint axis must be 'x', 'y', 'z' or 3 numbers, got {axis!r}") from exc
    if len(a) != 3 or not all(math.isfinite(c) for c in a):
        raise ValueError(f"joint axis must be 3 finite numbers, got {axis!r}")
    n = math.sqrt(sum(c * c for c in a))
    if n < 1e-12:
        raise ValueError("joint axis must be nonzero")
    a = tuple(c / n for c in a)
    for name, e in _AXES.items():
        if all(abs(c - d) < 1e-15 for c, d in zip(a, e)):
            return name, e
    return a, a


class Joint:
    """Base class; see the module docstring for the interface."""

    nq: int = 0
    nv: int = 0
    type: str = "joint"
    S_constant: bool = True

    def calc(self, B, q):
        """``(XJ, S)`` at ``q`` (see the module docstring); every moving joint defines it."""
        raise NotImplementedError(f"{type(self).__name__} has no joint transform (calc)")

    def Sring(self, B, q, qd):
        return None

    def _constant(self, B, key: str, build):
        """``build()``, a matrix that does not depend on q: built once per numeric backend and
        kept in the joint (as the model keeps its constants); built anew on every other backend,
        whose values may belong to one trace or graph."""
        if not B.numeric:
            return build()
        cache = self.__dict__.setdefault("_numeric_constants", {})
        value = cache.get((B.name, key))
        if value is None:
            value = cache[B.name, key] = build()
        return value

    def neutral(self) -> list[float]:
        return [0.0] * self.nq

    def random_q(self, rng) -> list[float]:
        return list(rng.uniform(0, 2 * math.pi, self.nq))

    def integrate(self, B, q, v, dt=1):
        return q + v * dt

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AxisJoint(Joint):
    """Base of the one-axis joints (revolute, prismatic, helical): ``axis_spec`` as given
    ('x', 'y', 'z' or a 3-tuple) and ``axis``, the unit vector."""

    nq = nv = 1

    def __init__(self, axis="z"):
        self.axis_spec, self.axis = _axis(axis)

    def __repr__(self) -> str:
        a = self.axis_spec if isinstance(self.axis_spec, str) else tuple(round(c, 6) for c in self.axis)
        return f"{type(self).__name__}({a!r})"

    def with_axis(self, axis) -> "AxisJoint":
        """A copy of this joint about ``axis`` (every other parameter kept; caches of values
        built from the old axis dropped)."""
        new = copy.copy(self)
        for key in [k for k in vars(new) if k.startswith("_")]:
            del vars(new)[key]
        new.axis_spec, new.axis = _axis(axis)
        return new

    def _S(self, B, pitch=None, angular=True):
        return self._constant(B, "S", lambda: self._build_S(B, pitch, angular))

    def _build_S(self, B, pitch, angular):
        a = list(self.axis)
        if pitch is None:
            col = a + [0, 0, 0] if angular else [0, 0, 0] + a
        else:
            col = a + [pitch * c for c in a]
        return B.matrix([[c] for c in col])


class Revolute(AxisJoint):
    """Rotation by q about a unit axis (fixed in both frames)."""

    type = "revolute"

    def calc(self, B, q):
        E = rot_axis(B, self.axis_spec, B.cos(q[0]), B.sin(q[0]))
        return Transform(E, B.zeros(3)), self._S(B)


class Prismatic(AxisJoint):
    """Translation by q along a unit axis."""

    type = "prismatic"

    def calc(self, B, q):
        r = B.vector([c * q[0] for c in self.axis])
        return Transform(B.eye(3), r), self._S(B, angular=False)

    def random_q(self, rng):
        return list(rng.uniform(-1, 1, 1))


class Helical(AxisJoint):
    """Screw motion: rotation q and translation pitch*q along a unit axis."""

    type = "helical"

    def __init__(self, axis="z", pitch=0.1):
        super().__init__(axis)
        self.pitch = float(pitch)
        if not math.isfinite(self.pitch):
            raise ValueError("helical joint pitch must be finite")

    def __repr__(self) -> str:
        return f"Helical({self.axis_spec!r}, pitch={self.pitch})"

    def calc(self, B, q):
        E = rot_axis(B, self.axis_spec, B.cos(q[0]), B.sin(q[0]))
        r = B.vector([c * self.pitch * q[0] for c in self.axis])
        return Transform(E, r), self._S(B, pitch=self.pitch)


def _quat_mul(a, b):
    """Hamilton product of quaternions in (x, y, z, w) order (entries: backend scalars)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz]


def _quat_exp(B, w):
    """Unit quaternion (x, y, z, w) of the rotation vector w (a 3-vector), smooth at w = 0:
    ``[sin(t/2)/t w; cos(t/2)]`` with t = |w|, through the backend's safe helpers of t^2
    (cos(t/2) = 1 - (t/2)^2 (1 - cos(t/2))/(t/2)^2)."""
    th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    k = B.sin_over_x(th2 / 4) / 2                                   # sin(t/2)/t
    c = 1 - (th2 / 4) * B.one_minus_cos_over_x2(th2 / 4)            # cos(t/2)
    return [k * w[0], k * w[1], k * w[2], c]


def _random_quat(rng):
    u = rng.normal(size=4)
    u /= math.sqrt(float(u @ u))
    return list(u)


class Spherical(Joint):
    """Ball joint: q = unit quaternion (x, y, z, w) of the child in the parent frame,
    v = angular velocity of the child in child coordinates (nq = 4, nv = 3)."""

    type = "spherical"
    nq, nv = 4, 3

    def calc(self, B, q):
        R = quat_to_rot(B, q[0], q[1], q[2], q[3])
        S = self._constant(B, "S", lambda: B.matrix([[1, 0, 0], [0, 1, 0], [0, 0, 1],
                                                     [0, 0, 0], [0, 0, 0], [0, 0, 0]]))
        return Transform(R.T, B.zeros(3)), S

    def neutral(self):
        return [0.0, 0.0, 0.0, 1.0]

    def random_q(self, rng):
        return _random_quat(rng)

    def integrate(self, B, q, v, dt=1):
        dq = _quat_exp(B, [v[0] * dt, v[1] * dt, v[2] * dt])
        return B.vector(_quat_mul([q[0], q[1], q[2], q[3]], dq))


class Floating(Joint):
    """Free-flyer: q = [p (3, origin in parent frame); quaternion (x, y, z, w)],
    v = body spatial velocity [omega; v_O] in child coordinates (nq = 7, nv = 6)."""

    type = "floating"
    nq, nv = 7, 6

    def calc(self, B, q):
        R = quat_to_rot(B, q[3], q[4], q[5], q[6])
        return Transform(R.T, B.rows(q, 0, 3)), self._constant(B, "S", lambda: B.eye(6))

    def neutral(self):
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]

    def random_q(self, rng):
        return list(rng.uniform(-1, 1, 3)) + _random_quat(rng)

    def integrate(self, B, q, v, dt=1):
        """Exact integration on SE(3) for constant body velocity would couple p and R; we use the
        same convention as Pinocchio's ``integrate`` for a free-flyer: the SE(3) exponential."""
        w = [v[0] * dt, v[1] * dt, v[2] * dt]
        u = B.vector([v[3] * dt, v[4] * dt, v[5] * dt])
        R = quat_to_rot(B, q[3], q[4], q[5], q[6])
        V = _se3_left_jacobian(B, w)
        p = B.rows(q, 0, 3) + R @ (V @ u)
        quat = _quat_mul([q[3], q[4], q[5], q[6]], _quat_exp(B, w))
        return B.vcat([p, B.vector(quat)])


def _se3_left_jacobian(B, w):
    """V(w) = I + (1 - cos t)/t^2 S(w) + (t - sin t)/t^3 S(w)^2, t = |w| (the backend's safe
    helpers of t^2: exact near 0 in NumPy, finite derivatives at 0 in CasADi)."""
    W = skew(B, B.vector(w))
    th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a = B.one_minus_cos_over_x2(th2)
    b = B.x_minus_sin_over_x3(th2)
    return B.eye(3) + a * W + b * (W @ W)


class Planar(Joint):
    """Planar joint in the predecessor's x-y plane: q = (x, y, theta) with qd = d/dt q.

    S depends on theta in body coordinates, so ``Sring`` is nonzero: this joint exercises the
    Phi-ring terms of paper 000 eq. (12) and Algorithm 1 line 4.
    """

    type = "planar"
    nq, nv = 3, 3
    S_constant = False

    def calc(self, B, q):
        c, s = B.cos(q[2]), B.sin(q[2])
        E = rot_axis(B, "z", c, s)
        r = B.vector([q[0], q[1], 0])
        S = B.matrix([[0, 0, 0], [0, 0, 0], [0, 0, 1], [c, s, 0], [-s, c, 0], [0, 0, 0]])
        return Transform(E, r), S

    def Sring(self, B, q, qd):
        c, s, w = B.cos(q[2]), B.sin(q[2]), qd[2]
        return B.matrix([[0, 0, 0], [0, 0, 0], [0, 0, 0],
                         [-s * w, c * w, 0], [-c * w, -s * w, 0], [0, 0, 0]])

    def random_q(self, rng):
        return list(rng.uniform(-1, 1, 2)) + [float(rng.uniform(0, 2 * math.pi))]


class Fixed(Joint):
    """Rigid attachment. Fixed bodies are merged into their parent when the Model is built."""

    type = "fixed"
    nq = nv = 0


JOINT_TYPES = {
    "revolute": Revolute, "continuous": Revolute, "prismatic": Prismatic, "helical": Helical,
    "spherical": Spherical, "floating": Floating, "free": Floating, "planar": Planar,
    "fixed": Fixed,
}


def make_joint(kind: str, axis="z", pitch: float | None = None) -> Joint:
    """The one joint factory: a joint by type name (:data:`JOINT_TYPES`: 'revolute', 'continuous'
    (= revolute), 'prismatic', 'helical', 'spherical', 'floating', 'free' (= floating), 'planar',
    'fixed').

    ``axis`` ('x', 'y', 'z' or a nonzero 3-vector, normalized) is used by revolute, prismatic
    and helical joints; ``pitch`` (translation per radian, default 0.1) only by helical joints.
    Builders, :func:`symdyn.models.random_joint` and the URDF loader construct joints here.
    Raises ValueError naming an unknown type, or a ``pitch`` given to a joint without one.
    """
    cls = JOINT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown joint type {kind!r}; known: {', '.join(sorted(JOINT_TYPES))}")
    if pitch is not None and cls is not Helical:
        raise ValueError(f"joint type {kind!r} takes no pitch (only 'helical' does)")
    if cls is Helical:
        return Helical(axis) if pitch is None else Helical(axis, pitch=pitch)
    if cls in (Revolute, Prismatic):
        return cls(axis)
    return cls()
