"""Dynamics regressors: the dynamics written linear in the inertial parameters.

Inertial parameters (:mod:`symdyn.identification.parameters`): 10 per body, in Pinocchio's order
(``pinocchio.Inertia.toDynamicParameters``)::

    pi_i = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

with ``c`` the centre of mass in body-i coordinates and ``I_..`` the rotational inertia about the
BODY FRAME ORIGIN (not about the CoM), i.e. the blocks of the spatial inertia
``I = [[Ibar, S(h)], [S(h)^T, m 1]]`` with ``h = m c``. ``pi = [pi_0; ...; pi_{N-1}]`` stacks the
bodies in model order (fixed links merged into their parent body, as in ``model.I``).

Body level. ``I x`` is linear in ``pi_i`` for any motion vector ``x = [w; u]``:
``I x = [Ibar w - S(u) h; m u + S(w) h] = Phi(x) pi_i`` with the 6 x 10 matrix
:func:`body_inertia_map`. The body forces of the algorithms are then

* RNEA (7): ``f = I a + v x* I v = (Phi(a) + (v x*) Phi(v)) pi_i``
  (Pinocchio's ``bodyRegressor(v, a)``, rows reordered ``[n; f]``);
* Slotine-Li with the Christoffel-consistent C* (paper 000 eq. (10), Remark 2):
  ``f = I a_r + B(v, I) v_r`` with
  ``B(v, I) v_r = 1/2 [(v x*) I v_r + (v_r x*) I v - I (v x v_r)]``,
  so ``f = (Phi(a_r - 1/2 v x v_r) + 1/2 [(v x*) Phi(v_r) + (v_r x*) Phi(v)]) pi_i``.
  With ``v_r = v`` it is RNEA's ``Phi(a) + (v x*) Phi(v)``.

Tree level (like Pinocchio's ``computeJointTorqueRegressor``): joint j's torque is
``S_j^T sum_{i in subtree(j)} X_{j<-i}^T f_i``, so the nv x 10N regressor has the blocks
``Y[j, i] = S_j^T (X_{j<-i}^T Y_i)`` for ``j`` an ancestor of ``i`` (or ``i`` itself) and zeros
elsewhere; each body's 6 x 10 matrix is moved up its ancestor path once: O(N d) work.

Energies: ``T = 1/2 sum v_i^T I_i v_i = Y_T pi`` with the body row
``[u.u/2, (u x w)^T, w1^2/2, w1 w2, w2^2/2, w1 w3, w2 w3, w3^2/2]`` for ``v_i = [w; u]``;
``V = -sum m_i g . c_i(world) = Y_V pi`` with the body row ``[-g . p_i, -(E_i g)^T, 0]``
(``p_i`` the body origin in world coordinates, ``E_i`` world -> body rotation).

Armature. ``model.armature`` (rotor inertia on the joint speeds, added by ``rnea`` as
``armature * qdd`` and by ``crba`` to M's diagonal) is not an inertial parameter of a body. By
default the regressors cover the rigid-body part only: ``Y @ pi`` is the quantity of
``model.replace(armature=0)``. With ``armature=True`` they append nv columns, one per speed, and
``Y @ [pi; model.armature]`` is the quantity of ``model`` itself: ``diag(qdd)`` for the joint
torque regressor, ``diag(qr_dd)`` for Slotine-Li, ``qd_k^2 / 2`` for the kinetic energy (the
potential energy does not depend on the armature). ``symdyn.inertial_parameters(model,
armature=True)`` gives that vector.

Every function here is written once over the backends (NumPy, SymPy, SymEngine, CasADi) and
returns a native matrix of the inputs' backend.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import (bottom, compose, cross_force, cross_motion, skew, top, xform_force_T,
                       xform_motion)
from .common import entry, joint_kinematics
from .coriolis import check_factorization
from ..types import Array, Backend
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

#: The 10 inertial parameters of one body, in order (Pinocchio's ``toDynamicParameters``).
PARAMETER_NAMES = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_yy", "I_xz", "I_yz", "I_zz")


def body_inertia_map(B: Backend, x: Array) -> Array:
    """The 6 x 10 matrix ``Phi(x)`` with ``I x = Phi(x) pi_i`` for a motion vector ``x = [w; u]``
    and the body's parameters ``pi_i`` (see the module docstring):
    ``I x = [Ibar w - S(u) h; m u + S(w) h]``."""
    w, u = top(B, x), bottom(B, x)
    w1, w2, w3, u1, u2, u3 = w[0], w[1], w[2], u[0], u[1], u[2]
    return B.matrix([
        #  m    h_x  h_y  h_z   xx  xy  yy  xz  yz  zz
        [0, 0, u3, -u2, w1, w2, 0, w3, 0, 0],
        [0, -u3, 0, u1, 0, w1, w2, 0, w3, 0],
        [0, u2, -u1, 0, 0, 0, 0, w1, w2, w3],
        [u1, 0, -w3, w2, 0, 0, 0, 0, 0, 0],
        [u2, w3, 0, -w1, 0, 0, 0, 0, 0, 0],
        [u3, -w2, w1, 0, 0, 0, 0, 0, 0, 0],
    ])


def body_regressor(B: Backend, v: Array, a: Array) -> Array:
    """RNEA's body force as a 6 x 10 map: ``I a + v x* I v = body_regressor(v, a) pi_i``."""
    return body_inertia_map(B, a) + cross_force(B, v, body_inertia_map(B, v))


def body_slotine_li_regressor(B: Backend, v: Array, vr: Array, ar: Array,
                              factorization: str = "christoffel") -> Array:
    """The Slotine-Li body force as a 6 x 10 map:
    ``I a_r + B(v, I) v_r = body_slotine_li_regressor(v, v_r, a_r) pi_i`` with eq. (10)
    ``B(v, I) v_r = 1/2 [(v x*) I v_r + (v_r x*) I v - I (v x v_r)]`` (``"christoffel"``), or
    eq. (9) ``B(v, I) v_r = (v x*) I v_r`` (``"simple"``)."""
    if factorization == "simple":
        return body_inertia_map(B, ar) + cross_force(B, v, body_inertia_map(B, vr))
    sym = cross_force(B, v, body_inertia_map(B, vr)) + cross_force(B, vr, body_inertia_map(B, v))
    return body_inertia_map(B, ar - cross_motion(B, v, vr) / 2) + sym / 2


def check_armature_flag(armature: Any) -> bool:
    """``armature`` must be True or False (a TypeError otherwise: a vector of armature values
    belongs in the model, ``model.replace(armature=...)``, not here)."""
    dtype = getattr(armature, "dtype", None)              # an array library's boolean scalar
    if isinstance(armature, bool) or (getattr(armature, "shape", None) == ()
                                      and getattr(dtype, "kind", None) == "b"):
        return bool(armature)
    raise TypeError(f"armature must be True (append the nv armature columns) or False, got "
                    f"{armature!r}; the armature values themselves are model.armature")


def _diagonal(B: Backend, x, n):
    """``diag(x)`` of a joint's speed segment ``x`` (``n`` entries) as an n x n matrix."""
    return B.matrix([[x[k] if k == c else 0 for c in range(n)] for k in range(n)])


def _tree_regressor(B: Backend, model, Xup, S, Y, diag=None):
    """nv x 10N regressor from the body-level 6 x 10 maps ``Y[i]`` (forces in body-i coordinates):
    block (j, i) = S_j^T X_{j<-i}^T Y_i for every ancestor j of i (i included). ``diag``: the
    per-joint speed segments whose diagonal fills nv further columns (the armature columns)."""
    out = B.zeros(model.nv, 10 * model.N + (0 if diag is None else model.nv))
    if diag is not None:
        n0 = 10 * model.N
        for i, (a, b) in enumerate(model.v_idx):
            out = B.assign(out, slice(a, b), slice(n0 + a, n0 + b), _diagonal(B, diag[i], b - a))
    for i in range(model.N):
        F, j = Y[i], i
        while True:
            a, b = model.v_idx[j]
            out = B.assign(out, slice(a, b), slice(10 * i, 10 * i + 10), S[j].T @ F)   # (13)
            p = model.parents[j]
            if p < 0:
                break
            F = xform_force_T(B, Xup[j], F)                                   # X^T f, rootward
            j = p
    return out


@dispatch
def joint_torque_regressor(model: Model, q: Array, qd: Array, qdd: Array, *,
                           armature: bool = False, backend: str | None = None) -> Array:
    """The joint torque regressor Y (nv x 10N) with
    ``rnea(model.replace(armature=0), q, qd, qdd) == Y @ pi``.

    ``pi`` are the inertial parameters of :func:`symdyn.inertial_parameters` (10 per
    body, Pinocchio's order, inertia about the body origin); gravity comes from
    ``model.gravity`` and is included. Columns ``10 i .. 10 i + 9`` belong to body ``i``. The
    identity holds with ``rnea(model, ...)`` itself when ``model.armature`` is zero; otherwise
    ``rnea(model, ...) == Y @ pi + model.armature * qdd``. ``armature=True`` appends the nv
    columns ``diag(qdd)`` (Y is nv x (10N + nv)) so that
    ``rnea(model, q, qd, qdd) == Y @ inertial_parameters(model, armature=True)``
    (``[pi; model.armature]``). Without them it equals Pinocchio's
    ``computeJointTorqueRegressor`` up to its body order and free-flyer velocity order. O(N d):
    each body's 6 x 10 map is moved up its ancestor path once.
    """
    with_arm = check_armature_flag(armature)
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    a_grav = model.constants(B).a_grav
    Xup, S = joint_kinematics(B, model, q)
    v, a, Y = [None] * model.N, [None] * model.N, [None] * model.N
    for i, p in enumerate(model.parents):
        vJ = S[i] @ qd[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ              # (5)
        a[i] = xform_motion(B, Xup[i], a_grav if p < 0 else a[p]) + S[i] @ qdd[i] \
            + cross_motion(B, v[i], vJ)                                          # (12)
        cJ = model.joints[i].Sring(B, q[i], qd[i])
        if cJ is not None:
            a[i] = a[i] + cJ @ qd[i]
        Y[i] = body_regressor(B, v[i], a[i])                                     # (7): f_i = Y_i pi
    return _tree_regressor(B, model, Xup, S, Y, qdd if with_arm else None)


@dispatch
def slotine_li_regressor(model: Model, q: Array, qd: Array, qr_d: Array, qr_dd: Array,
                         factorization: str = "christoffel", *, armature: bool = False,
                         backend: str | None = None) -> Array:
    """The Slotine-Li regressor Y (nv x 10N) with
    ``Y @ pi == M(q) qr_dd + C*(q, qd) qr_d + g(q)`` for the Christoffel-consistent C*, where M is
    the rigid-body mass matrix, ``crba(model.replace(armature=0), q)``.

    With non-zero ``model.armature`` the full ``crba(model, q) qr_dd + C* qr_d + g`` is
    ``Y @ pi + model.armature * qr_dd``; ``armature=True`` appends the nv columns ``diag(qr_dd)``
    (Y is nv x (10N + nv)) so that it is ``Y @ inertial_parameters(model, armature=True)``
    (``[pi; model.armature]``; the armature is constant, so C* does not depend on it).

    C* is the factorization of :func:`coriolis_matrix` (paper 000 eq. (10), Remark 2; paper 001
    explains why it is the right one for passivity-based control: Mdot - 2 C* is skew and C* is
    unique among the Christoffel-consistent choices). ``qr_d``, ``qr_dd``: reference speeds and
    accelerations (e.g. ``qd_des - Lambda e``). With ``qr_d = qd`` and ``qr_dd = qdd`` it equals
    :func:`joint_torque_regressor`. Recursion (the modified RNEA of :func:`coriolis_product`):
    ``v_r,i = X v_r,p + S_i qr_d,i``, ``a_r,i = X a_r,p + S_i qr_dd,i + Phidot_i qr_d,i`` (gravity
    at the root) and ``f_i = I a_r,i + B(v_i, I) v_r,i``, linear in ``pi_i`` through
    :func:`body_slotine_li_regressor`. O(N d).

    ``factorization="simple"`` (eq. (9), ``B = (v x*) I``) gives the regressor of
    ``M qr_dd + C_simple(q, qd) qr_d + g`` instead, an admissible but not Christoffel-consistent
    factorization (for comparisons such as paper 001 Sec. IV); both agree when ``qr_d = qd``.
    """
    check_factorization(factorization)
    with_arm = check_armature_flag(armature)
    B, (q, qd, qr, qrr) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qr_d", qr_d, "v"),
                                ("qr_dd", qr_dd, "v"), backend=backend)
    a_grav = model.constants(B).a_grav
    Xup, S = joint_kinematics(B, model, q)
    N = model.N
    v, vr, ar, Y = [None] * N, [None] * N, [None] * N, [None] * N
    for i, p in enumerate(model.parents):
        vJ, vrJ = S[i] @ qd[i], S[i] @ qr[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ
        vr[i] = vrJ if p < 0 else xform_motion(B, Xup[i], vr[p]) + vrJ
        ar[i] = xform_motion(B, Xup[i], a_grav if p < 0 else ar[p]) + S[i] @ qrr[i] \
            + cross_motion(B, v[i], vrJ)                                         # Phidot_i qr_d,i
        Sring = model.joints[i].Sring(B, q[i], qd[i])
        if Sring is not None:
            ar[i] = ar[i] + Sring @ qr[i]
        Y[i] = body_slotine_li_regressor(B, v[i], vr[i], ar[i], factorization)
    return _tree_regressor(B, model, Xup, S, Y, qrr if with_arm else None)


def _velocities(B: Backend, model, q, qd):
    Xup, S = joint_kinematics(B, model, q)
    v = [None] * model.N
    for i, p in enumerate(model.parents):
        vJ = S[i] @ qd[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ
    return v


@dispatch
def kinetic_energy_regressor(model: Model, q: Array, qd: Array, *, armature: bool = False,
                             backend: str | None = None) -> Array:
    """The kinetic energy regressor (1 x 10N) with ``T = 1/2 qd^T M qd = Y @ pi`` for the
    rigid-body M (``crba(model.replace(armature=0), q)``; Pinocchio's
    ``computeKineticEnergyRegressor``).

    Body i's 10 entries are ``1/2 v_i^T Phi(v_i)``: ``[u.u/2, (u x w)^T, w1^2/2, w1 w2,
    w2^2/2, w1 w3, w2 w3, w3^2/2]`` for the body velocity ``v_i = [w; u]`` in body coordinates.
    :func:`symdyn.kinetic_energy` includes ``model.armature``: it is ``Y @ pi + 1/2 sum_k
    armature_k qd_k^2``. ``armature=True`` appends the nv entries ``qd_k^2 / 2`` (1 x (10N + nv))
    so that ``kinetic_energy(model, q, qd) == Y @ inertial_parameters(model, armature=True)``.
    """
    with_arm = check_armature_flag(armature)
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    rows = []
    for vi in _velocities(B, model, q, qd):
        w, u = top(B, vi), bottom(B, vi)
        h = skew(B, u) @ w                                                     # u x w
        w1, w2, w3 = w[0], w[1], w[2]
        rows.append(B.matrix([[B.dot(u, u) / 2, h[0], h[1], h[2], w1 * w1 / 2, w1 * w2,
                               w2 * w2 / 2, w1 * w3, w2 * w3, w3 * w3 / 2]]))
    if with_arm:
        rows += [B.matrix([[x[k] * x[k] / 2 for k in range(b - a)]])
                 for x, (a, b) in zip(qd, model.v_idx)]
    return B.hcat(rows)


@dispatch
def potential_energy_regressor(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """The potential energy regressor (1 x 10N) with ``V = -sum_i m_i g . c_i = Y @ pi``.

    ``c_i`` is body i's CoM in world coordinates (world origin as the reference, as Pinocchio's
    ``computePotentialEnergy``); body i's entries are ``[-g . p_i, -(E_i g)^T, 0 (6)]`` with
    ``p_i`` its origin in world coordinates and ``E_i`` the world -> body rotation.
    """
    B, (q,) = entry(model, ("q", q, "q"), backend=backend)
    ag = bottom(B, model.constants(B).a_grav)                                  # -g (world)
    Xup, _ = joint_kinematics(B, model, q)
    X0: list[Any] = [None] * model.N
    rows: list[Any] = []
    for i, p in enumerate(model.parents):
        X0[i] = Xup[i] if p < 0 else compose(B, Xup[i], X0[p])                 # world -> body i
        gi = X0[i].E @ ag
        rows.append(B.matrix([[B.dot(ag, X0[i].r), gi[0], gi[1], gi[2], 0, 0, 0, 0, 0, 0]]))
    return B.hcat(rows)
