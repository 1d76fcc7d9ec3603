"""Analytical first-order derivatives of the rigid contact dynamics: Pinocchio's
``computeConstraintDynamicsDerivatives`` and ``computeImpulseDynamicsDerivatives``, written once
over the backends (no finite differences, no differentiation through the solver).

Route (Carpentier & Mansard, RSS 2018): the solution ``(y, lam)`` of a KKT system::

    r1 = M(q) y + (terms in q, qd) - tau - J(q)^T lam = 0,    r2 = c(q, qd, y) + damping lam = 0

(``y = qdd`` and ``c`` the contact acceleration plus Baumgarte terms for
:func:`~symdyn.contact.constraint_dynamics`; ``y = qd_plus`` and ``c = J (qd_plus + e qd_minus)``
for :func:`~symdyn.contact.impulse_dynamics`, e the restitution) has, for any input x, the
implicit derivatives::

    dlam/dx = G^-1 (J M^-1 dr1/dx - dr2/dx),    dy/dx = -M^-1 (dr1/dx - J^T dlam/dx),

``G = J M^-1 J^T + damping I``, the partials ``dr/dx`` taken at fixed ``(y, lam)``; never a
dense solve of the (nv + nc) system:

* constraint dynamics: ``-M^-1 dr1/dq``, ``-M^-1 dr1/dqd`` and ``M^-1`` are FDSVA
  (:func:`symdyn.aba_derivatives`, paper 003 eq. (5)) with the contact forces as external
  forces (its qdd is the constrained one); the rest are products with ``J M^-1`` and the small
  factorization of G (:mod:`symdyn.algorithms.dense` steps: dense blocks, native product loops
  where the algorithm is compiled step by step; the dynamics and each contact's rows are steps
  of their own);
* impulses: through the tree's ``L^T D L`` factors and the factors of G (:mod:`.sparse`).

* ``dr1/dq``, ``dr1/dqd``: IDSVA (:func:`symdyn.rnea_derivatives`) at ``(q, qd, y)`` with the
  contact forces ``lam`` as external forces on the contact bodies. IDSVA holds an external
  force fixed to its body; a force given in ``"local_world_aligned"`` axes keeps its world
  axes and one in ``"world"`` coordinates stays put, which adds ``J^T d(lam_carried)/dq`` to
  ``dr1/dq`` (the force carried by the body: ``omega_j x lam`` per 3-block, ``S_j x* lam``
  for ``"world"``).
* ``dr2/dq``, ``dr2/dqd``: the exact tangent derivatives of the contact velocity and
  acceleration from the world terms ``S_j, Psid_j, Sd_j, Psidd_j`` of
  :mod:`symdyn.algorithms.kinematics_derivatives` (paper 003, Alg. 1, lines 5-7), in frame
  coordinates (``^fX_0 Psid_j`` and ``^fX_0 (Psidd_j - v x Psid_j)``), the classical term
  ``omega x v`` of 3-D contacts differentiated by the product rule, and for
  ``"local_world_aligned"`` rows ``R x`` of a local quantity x the total derivative
  ``R dx/dq + omega_j x (R x)`` (the axes are world axes, the origin moves with the frame).

Position error (Baumgarte ``kp``): the derivative holds each contact's *anchor* fixed where it is
at ``q``: its ``target`` (a point for a 3-D contact, a placement for a 6-D one), otherwise the
contact's placement at ``q``. For a contact without target the error is zero at ``q`` and its
tangent derivative is the contact Jacobian, so ``kp`` contributes ``kp J`` (Pinocchio's
``RigidConstraintModel`` anchored at its placement). This is not the derivative of
:func:`~symdyn.contact.constraint_dynamics` seen as a function of q alone, whose anchor follows q
(and whose ``kp`` term then vanishes identically); it equals that derivative for contacts with a
target or with ``kp = 0``. A 6-D target's error ``e = log6(c2Mc1)`` (frame coordinates; c1 the
frame, c2 the target) moves with the frame's body twist ``J_f dq`` as ``de = Jlog6(c2Mc1) J_f
dq`` (:func:`symdyn.spatial.jlog6`; Pinocchio: ``Jlog6(c1Mc2.inverse()) dac_da``); in
``"local_world_aligned"`` axes the rows ``R e`` turn as every such row (below), in ``"world"``
coordinates ``^0X_f e`` adds ``S_j x (^0X_f e)`` to column j.

Pinocchio 4.1 agrees (tests/test_contact_derivatives.py) except for ``"local_world_aligned"``
contacts with ``damping > 0``: its q columns use identities that hold only while the contact
rows vanish (``damping = 0``); e.g. it adds the turning of a world-axes force to ``dlam/dq``
after the solve instead of to the dynamics, which for 3-D contacts is the whole difference.
The derivatives here are exact in that case too (checked against CasADi AD). Its q columns
differ also for ``"local_world_aligned"`` 6-D contacts with a target and ``kp > 0``:
Pinocchio 4.1 applies ``Jlog6`` (an operator on frame-coordinate twists) to the world-axes
Jacobian and leaves out the turning of the error's axes (tests/test_contact_target6.py; CasADi
AD agrees with the ones here).

Derivatives with respect to q are taken in the tangent space: column k is
``d/de x(q (+) e e_k)`` at e = 0 (free-flyer and spherical joints: a body twist), as
:func:`symdyn.rnea_derivatives`. Rows of ``lam`` follow :func:`~symdyn.contact.constraint_dynamics`
(``[angular; linear]`` per 6-D contact). Joints whose motion subspace varies in body
coordinates (planar) are refused on the support of a contact.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..algorithms.aba_derivatives import aba_derivatives
from ..algorithms.common import entry
from ..algorithms.dense import negated_sum, product, total
from ..algorithms.frames import assemble_columns, frame_transform
from ..algorithms.kinematics_derivatives import check_support, support_terms
from ..algorithms.rnea_derivatives import rnea_derivatives
from ..spatial import (cross_motion, crfbar, jlog6, log6, skew, xform_force, xform_force_T,
                       xform_motion, xform_motion_inv)
from ..types import Array, Backend
from .contact import Contact, ResolvedContact, nonneg_number, resolve_contacts
from .dynamics import OperationalSpace, impulse_dynamics, solve_constraint_dynamics
from .kinematics import contact_terms, relative_placement
from .sparse import (MassFactors, factor_mass_matrix, l_solve, lt_solve, small_ldl,
                     small_ldl_solve)
from ..algorithms.dispatch import dispatch
from ..algorithms.steps import run_as_step

__all__ = ["constraint_dynamics_derivatives", "impulse_dynamics_derivatives"]


# --- the contact rows and their partial derivatives --------------------------------------------

class _Rows:
    """One contact's rows in its reference: ``J`` and the partials of ``r2`` (dim x nv each),
    the contact force as a body force (``wrench``, body coordinates) and the correction
    ``J^T carried`` of ``dr1/dq`` for forces that do not turn with the body (``carried``:
    dim x nv, or None)."""

    def __init__(self, J, dr_dq, dr_dqd, wrench, carried):
        self.J, self.dr_dq, self.dr_dqd = J, dr_dq, dr_dqd
        self.wrench, self.carried = wrench, carried


def _lin(B: Backend, x):
    return B.rows(x, 3, 6)


def _ang(B: Backend, x):
    return B.rows(x, 0, 3)


def _blocks(B: Backend, x, dim: int) -> list:
    """The 3-row blocks of a contact quantity (one for 3-D, [angular, linear] for 6-D)."""
    return [x] if dim == 3 else [_ang(B, x), _lin(B, x)]


def _frame_partials(B: Backend, model, T, Xf0, world: bool):
    """The frame's spatial velocity ``v`` and acceleration ``a`` (None without accelerations)
    and the exact tangent partials ``J``, ``dv`` (d/dq), ``da`` (d/dq), ``dad`` (d/dqd) as
    6 x nv matrices, in world coordinates (``world``) or frame coordinates (``^fX_0`` of the
    world-form columns ``Psid_j`` and ``Psidd_j - v x Psid_j``; kinematics_derivatives
    docstring)."""
    with_acc = T.a is not None
    cols: dict[str, dict] = {"J": T.S, "dv": {}, "da": {}, "dad": {}}
    for j, S in T.S.items():
        vxS = cross_motion(B, T.v, S)
        cols["dv"][j] = T.Psid[j] - vxS if world else T.Psid[j]
        if with_acc:
            cols["dad"][j] = T.Psid[j] + T.Sd[j] - vxS
            da = T.Psidd[j] - cross_motion(B, T.v, T.Psid[j])
            cols["da"][j] = da - cross_motion(B, T.a, S) if world else da
    mats = {k: assemble_columns(B, model, v) for k, v in cols.items() if v}
    if world:
        return T.v, T.a, mats
    mats = {k: xform_motion(B, Xf0, m) for k, m in mats.items()}
    return (xform_motion(B, Xf0, T.v), xform_motion(B, Xf0, T.a) if with_acc else None, mats)


def _contact_rows(B: Backend, model, qs, vs, us, rc: ResolvedContact, lam, speed_gain: float,
                  position_gain: float) -> _Rows:
    """:class:`_Rows` of one contact for ``r2 = c + speed_gain v_c + position_gain e_c``, with
    ``c`` the contact acceleration at ``us`` (None: no ``c``, velocity rows only), ``v_c`` the
    contact velocity at ``vs`` and ``e_c`` the position error from the anchor (module
    docstring); ``lam`` the contact's force (dim entries)."""
    c, fr = rc.contact, rc.frame
    dim, ref = c.dim, c.reference
    T = support_terms(B, model, qs, vs, us, body=fr.body)
    Xf0, Xf = frame_transform(B, model, T.K, fr)
    with_acc = us is not None
    v, a, mats = _frame_partials(B, model, T, Xf0, ref == "world")
    J, dv_dq = mats["J"], mats["dv"]
    # (value, d/dq, d/dqd) of each term of r2 (d/dqd None: no qd dependence)
    if dim == 6:
        vel = (v, dv_dq, J)
        acc = (a, mats["da"], mats["dad"]) if with_acc else None
        err = (B.zeros(6), J, None) if c.target is None or not position_gain \
            else _placement_error_rows(B, Xf0, c.target, J, ref == "world")
    else:
        w, u = _ang(B, v), _lin(B, v)
        vel = (u, _lin(B, dv_dq), _lin(B, J))
        acc = None
        if with_acc:                                 # classical: a_lin + omega x v
            wx, ux = skew(B, w), skew(B, u)
            acc = (_lin(B, a) + wx @ u,
                   _lin(B, mats["da"]) + wx @ _lin(B, dv_dq) - ux @ _ang(B, dv_dq),
                   _lin(B, mats["dad"]) + wx @ _lin(B, J) - ux @ _ang(B, J))
        if c.target is None:                         # anchor at the placement at q
            err = (B.zeros(3), _lin(B, J), None)
        else:                                        # R^T (p - target), frame axes
            e = Xf0.E @ (Xf0.r - B.const(list(c.target)))
            err = (e, _lin(B, J) + skew(B, e) @ _ang(B, J), None)
        J = _lin(B, J)
    terms = [(1.0, acc), (speed_gain, vel), (position_gain, err)]
    Omega = None
    if ref == "local_world_aligned":                 # R x: R dx/dq + omega_j x (R x)
        R = Xf0.E.T
        Omega = R @ _ang(B, mats["J"])               # world angular columns
        terms = [(g, None if t is None else _to_world_axes(B, R, Omega, t, dim)) for g, t in terms]
        J = B.vcat([R @ b for b in _blocks(B, J, dim)])
    dr_dq, dr_dqd = B.zeros(dim, model.nv), B.zeros(dim, model.nv)
    for g, t in terms:
        if t is not None and g:
            dr_dq = dr_dq + g * t[1]
            if t[2] is not None:
                dr_dqd = dr_dqd + g * t[2]
    wrench, carried = _force_terms(B, T.K.X0[fr.body], Xf0, Xf, ref, dim, lam, J, Omega)
    return _Rows(J, dr_dq, dr_dqd, wrench, carried)


def _placement_error_rows(B: Backend, Xf0, target, J, world: bool):
    """(value, d/dq, None) of a 6-D contact's placement error (``"local"`` axes; ``J``: the
    frame-coordinate Jacobian) or, with ``world``, of ``^0X_f e`` (``J``: the world Jacobian):
    ``e = log6(c2Mc1)`` moves with the frame's body twist ``J_f dq`` as
    ``de = Jlog6(c2Mc1) J_f dq`` (Pinocchio: ``Jlog6(c1Mc2.inverse()) dac_da``), and the world
    form adds the turning of the transform, ``S_j x (^0X_f e)`` per column (module docstring)."""
    R, p = relative_placement(B, Xf0, target)
    e, Jlog = log6(B, R, p), jlog6(B, R, p)
    if not world:
        return e, Jlog @ J, None
    e_w = xform_motion_inv(B, Xf0, e)
    de_w = xform_motion_inv(B, Xf0, Jlog @ xform_motion(B, Xf0, J)) - cross_motion(B, e_w, J)
    return e_w, de_w, None


def _to_world_axes(B: Backend, R, Omega, t, dim: int):
    """A (value, d/dq, d/dqd) triple of frame-axes 3-blocks in world axes: ``R x``,
    ``R dx/dq + omega_j x (R x)`` (column j), ``R dx/dqd``."""
    x, dq, dqd = t
    xs, dqs = _blocks(B, x, dim), _blocks(B, dq, dim)
    out_x = [R @ xb for xb in xs]
    out_dq = [R @ d - skew(B, xw) @ Omega for d, xw in zip(dqs, out_x)]
    out_dqd = None if dqd is None else B.vcat([R @ d for d in _blocks(B, dqd, dim)])
    return B.vcat(out_x), B.vcat(out_dq), out_dqd


def _force_terms(B: Backend, X0b, Xf0, Xf, ref: str, dim: int, lam, J, Omega):
    """The contact force as a body force (IDSVA's f_ext, body coordinates) and ``carried``
    (dim x nv) of the correction ``J^T carried = J^T d(lam_carried)/dq`` of ``dr1/dq``
    (``r1 = ... - J^T lam``) for a force that keeps its world axes (``"local_world_aligned"``:
    ``lam_carried`` turns, ``omega_j x lam`` per 3-block) or stays put (``"world"``:
    ``S_j x* lam``); None for ``"local"`` (a force in frame coordinates turns with the body,
    as IDSVA has it)."""
    lam6 = lam if dim == 6 else B.vcat([B.zeros(3), lam])
    if ref == "world":
        return xform_force(B, X0b, lam6), crfbar(B, lam6) @ J
    carried = None
    local = lam6
    if ref == "local_world_aligned":
        E = Xf0.E                                    # world -> frame rotation
        local = B.vcat([E @ _ang(B, lam6), E @ _lin(B, lam6)])
        carried = -B.vcat([skew(B, b) @ Omega for b in _blocks(B, lam, dim)])
    return (local if Xf is None else xform_force_T(B, Xf, local)), carried


# --- the KKT solve -------------------------------------------------------------------------------

def _kkt_partials(B: Backend, F: MassFactors, op: OperationalSpace, dr1, dr2):
    """``(dy, dlam)`` = ``(-M^-1 (dr1 - J^T dlam), G^-1 (J M^-1 dr1 - dr2))`` for the partials
    ``dr1`` (nv x m) and ``dr2`` (nc x m) (module docstring), through ``M = L^T D L``
    (``J M^-1 = W^T D^-1 L^-T``, ``M^-1 J^T = L^-1 D^-1 W``) and the factors of G."""
    nv, nc = dr1.shape[0], op.nc
    z = lt_solve(F, [B.rows(dr1, k, k + 1) for k in range(nv)])            # L^-T dr1
    rhs = -dr2
    for k, w in enumerate(op.W):
        if w is not None and z[k] is not None:
            rhs = rhs + F.Dinv[k] * (w.T @ z[k])                            # + W^T D^-1 z
    dlam = small_ldl_solve(op.L, op.Dinv, [B.rows(rhs, j, j + 1) for j in range(nc)])
    y = l_solve(F, op.spread(z, [-r for r in dlam]))                       # L^-1 D^-1 (z - W dlam)
    m = dr1.shape[1]
    return -B.vcat([B.zeros(1, m) if r is None else r for r in y]), B.vcat(dlam)


def _segments(B: Backend, model, x, kind: str = "v") -> list:
    return [B.rows(x, a, b) for a, b in (model.q_idx if kind == "q" else model.v_idx)]


def _prepare(model, contacts, what: str):
    resolved = resolve_contacts(model, contacts)
    for rc in resolved:
        check_support(model, rc.frame.body, what)
    return resolved


def _partials(B: Backend, model, qs, vs, us, resolved, lam):
    """:class:`_Rows` of every contact and the contact forces ``lam`` as IDSVA's ``f_ext``.
    With ``us`` (accelerations): ``r2`` of the constrained dynamics (contact acceleration and
    Baumgarte terms); without: ``r2 = J vs`` (impulses)."""
    rows, f_ext = [], [None] * model.N
    for rc in resolved:
        c = rc.contact
        kp, kd = c.baumgarte if us is not None else (0.0, 1.0)
        r = _contact_rows(B, model, qs, vs, us, rc, B.rows(lam, rc.row, rc.row + c.dim), kd, kp)
        b = rc.frame.body
        f_ext[b] = r.wrench if f_ext[b] is None else f_ext[b] + r.wrench
        rows.append(r)
    return rows, f_ext


def _add_extras(dtau_dq, rows):
    for r in rows:
        if r.carried is not None:
            dtau_dq = dtau_dq + r.J.T @ r.carried
    return dtau_dq


# --- public functions ----------------------------------------------------------------------------

@dispatch
def constraint_dynamics_derivatives(model: Any, q: Array, qd: Array, tau: Array,
                                    contacts: Contact | Sequence[Contact], damping: float = 0.0,
                                    *, backend: str | None = None
                                    ) -> tuple[Array, Array, Array, Array, Array, Array]:
    """Partial derivatives ``(dqdd_dq, dqdd_dqd, dqdd_dtau, dlam_dq, dlam_dqd, dlam_dtau)`` of
    ``qdd, lam = constraint_dynamics(model, q, qd, tau, contacts, damping)``: nv x nv for qdd,
    nc x nv for lam, in the inputs' backend (Pinocchio's ``computeConstraintDynamicsDerivatives``
    with lam's 6-D blocks in ``[angular; linear]`` order).

    Tangent-space derivatives in q; the Baumgarte ``kp`` term is differentiated with each
    contact's anchor held fixed (module docstring). Raises like
    :func:`~symdyn.contact.constraint_dynamics` (unknown or fixed frames, empty contact sets,
    mimic joints, bad damping, redundant contacts without damping) and ``ValueError`` for a
    planar joint supporting a contact."""
    what = "constraint_dynamics_derivatives"
    d = nonneg_number(damping, "damping")
    resolved = _prepare(model, contacts, what)
    B, (qs, vs, ts) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend)
    n = model.nv
    q_v, qd_v, tau_v = B.vcat(qs), B.vcat(vs), B.vcat(ts)

    # the dynamics and each contact's rows: contact code computes outside steps, so each is a
    # step of its own
    def dynamics(B, q, qd, tau):
        return solve_constraint_dynamics(B, model, _segments(B, model, q, "q"),
                                         _segments(B, model, qd), tau, resolved, d, what)

    qdd, lam = run_as_step(B, dynamics, q_v, qd_v, tau_v)
    parts, f_ext = [], [None] * model.N
    for rc in resolved:
        def rows(B, q, qd, qdd, lam_c, rc=rc):
            kp, kd = rc.contact.baumgarte
            r = _contact_rows(B, model, _segments(B, model, q, "q"), _segments(B, model, qd),
                              _segments(B, model, qdd), rc, lam_c, kd, kp)
            carried = B.zeros(rc.contact.dim, n) if r.carried is None else r.carried
            return r.J, r.dr_dq, r.dr_dqd, carried, r.wrench

        *part, wrench = run_as_step(B, rows, q_v, qd_v, qdd,
                                    B.rows(lam, rc.row, rc.row + rc.contact.dim))
        parts.append(part)
        b = rc.frame.body
        f_ext[b] = wrench if f_ext[b] is None else total(B, f_ext[b], wrench)
    J, dr2_dq, dr2_dqd, carried = (B.vcat([p[i] for p in parts]) for i in range(4))
    # -M^-1 dr1/dq (forces held in body coordinates), -M^-1 dr1/dqd and M^-1: FDSVA with the
    # contact forces as external forces (its qdd is the constrained one: M qdd + h = tau + J^T lam)
    same: Any = B                                    # the resolved backend, for the call
    Yq, Yqd, Minv = aba_derivatives(model, q_v, qd_v, tau_v, f_ext,
                                    method="auto" if B.numeric else "aza", backend=same)
    JMinv = product(B, J, Minv)                                  # J M^-1 (M^-1 J^T = JMinv^T)
    Ginv = run_as_step(B, _inverse_gram, product(B, JMinv, J.T), d)
    if any(r.contact.reference != "local" for r in resolved):    # the forces that do not turn
        Yq = total(B, Yq, -product(B, JMinv.T, carried))         # - M^-1 J^T carried
    dlam = product(B, Ginv, negated_sum(B, product(B, J, B.hcat([Yq, Yqd])),
                                        B.hcat([dr2_dq, dr2_dqd])))   # G^-1 (J M^-1 dr1 - dr2)
    dy = total(B, B.hcat([Yq, Yqd]), product(B, JMinv.T, dlam))       # -M^-1 (dr1 - J^T dlam)
    K = product(B, Ginv, JMinv)                                  # dr1/dtau = -I
    dy_dtau = total(B, Minv, -product(B, JMinv.T, K))
    return (B.cols(dy, 0, n), B.cols(dy, n, 2 * n), dy_dtau,
            B.cols(dlam, 0, n), B.cols(dlam, n, 2 * n), -K)


def _inverse_gram(B: Backend, G, damping: float):
    """``(G + damping I)^-1`` of the operational-space matrix ``G = J M^-1 J^T`` by its small
    ``L D L^T`` factors (:func:`.sparse.small_ldl`; singular G is caught where the dynamics
    are solved)."""
    nc = G.shape[0]
    rows = [[G[i, j] + (damping if i == j and damping else 0) for j in range(nc)]
            for i in range(nc)]
    L, Dinv = small_ldl(B, rows, "constraint_dynamics_derivatives", check=False)
    eye = B.eye(nc)
    return B.vcat(small_ldl_solve(L, Dinv, [B.rows(eye, i, i + 1) for i in range(nc)]))


@dispatch
def impulse_dynamics_derivatives(model: Any, q: Array, qd_minus: Array,
                                 contacts: Contact | Sequence[Contact], restitution: float = 0.0,
                                 damping: float = 0.0, *, backend: str | None = None
                                 ) -> tuple[Array, Array, Array, Array]:
    """Partial derivatives ``(dqdplus_dq, dqdplus_dqdminus, dimpulse_dq, dimpulse_dqdminus)`` of
    ``qd_plus, impulse = impulse_dynamics(model, q, qd_minus, contacts, restitution, damping)``
    (nv x nv for qd_plus, nc x nv for the impulse).

    Pinocchio's ``computeImpulseDynamicsDerivatives`` fills ``data.ddq_dq`` (= ``dqdplus_dq``),
    ``data.ddq_dv`` (= ``dqdplus_dqdminus - I``, the derivative of the velocity jump),
    ``data.dlambda_dq`` and ``data.dlambda_dv``. Here ``r1 = M (qd_plus - qd_minus) - J^T
    impulse`` (its q-partial: IDSVA at zero speed and gravity) and ``r2 = J (qd_plus +
    restitution qd_minus) + damping impulse`` (module docstring). Tangent-space derivatives in
    q. Raises like :func:`~symdyn.contact.impulse_dynamics`."""
    what = "impulse_dynamics_derivatives"
    r = nonneg_number(restitution, "restitution", upper=1.0)
    d = nonneg_number(damping, "damping")
    resolved = _prepare(model, contacts, what)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd_minus", qd_minus, "v"), backend=backend)
    same: Any = B                                    # the resolved backend, for the calls below
    F = factor_mass_matrix(B, model, qs)
    J = contact_terms(B, model, qs, None, resolved).J
    op = OperationalSpace(B, model, F, J, resolved, d, what)     # raises for redundant contacts
    qd_plus, impulse = impulse_dynamics(model, q, qd_minus, contacts, r, d, backend=same)
    v_minus = B.vcat(vs)
    seen = _segments(B, model, qd_plus + r * v_minus)       # r2 = J(q) (qd_plus + r qd_minus)
    rows, f_ext = _partials(B, model, qs, seen, None, resolved, impulse)
    zeros = B.zeros(model.nv)
    q_v = B.vcat(qs)
    jump_dq, _ = rnea_derivatives(model, q_v, zeros, qd_plus - v_minus, f_ext, backend=same)
    gravity_dq, _ = rnea_derivatives(model, q_v, zeros, zeros, backend=same)   # rnea's g(q)
    dr1 = B.hcat([_add_extras(jump_dq - gravity_dq, rows), B.zeros(model.nv, model.nv)])
    dr2 = B.hcat([B.vcat([x.dr_dq for x in rows]), (1 + r) * J])
    dy, dlam = _kkt_partials(B, F, op, dr1, dr2)
    n = model.nv
    return (B.cols(dy, 0, n), B.cols(dy, n, 2 * n) + B.eye(n),
            B.cols(dlam, 0, n), B.cols(dlam, n, 2 * n))
