"""Rigid contact dynamics: constrained forward dynamics, impulses, the KKT inverse and the contact
inverse dynamics, over the backends through the tree's sparse ``L^T D L`` factors.

Conventions (Pinocchio 4.1's ``constraintDynamics`` / ``impulseDynamics``):

* ``lam`` is the contact force (impulse) that the environment applies to the robot, in the
  contacts' reference axes and row order (``[torque; force]`` for 6-D contacts, the force for
  3-D ones; for a ``"local_world_aligned"`` 6-D contact the torque is about the frame origin;
  for ``"world"`` about the world origin). The equations of motion are
  ``M qdd + h = tau + J^T lam`` (h: gravity and velocity-product terms, ``rnea(q, qd, 0)``),
  so ``lam`` is Pinocchio's ``data.lambda_c`` with the 3-row blocks of 6-D contacts swapped
  (Pinocchio: ``[force; torque]``).
* The KKT system ``[M J^T; J 0] [qdd; -lam] = [tau - h; -gamma]`` with
  ``gamma = drift + kd J qd + kp e`` (:mod:`.kinematics`).

Solution route (no dense solve of the (nv + nc) system; :mod:`.sparse`): ``M = L^T D L``,
``z = L^-T (tau - h)``, ``W = L^-T J^T``, the operational-space inverse
``G = J M^-1 J^T = W^T D^-1 W`` (nc x nc), ``lam = -(G + damping I)^-1 (W^T D^-1 z + gamma)``,
``qdd = L^-1 D^-1 (z + W lam)``.

``damping > 0`` gives the *regularized* (Tikhonov) solution: the contact acceleration becomes
``J qdd + gamma = -damping lam`` instead of 0, which is what one step of Pinocchio's proximal
algorithm from ``lam = 0`` returns (``ProximalSettings(accuracy, mu=damping, max_iter=1)``),
and the unique answer for redundant contacts. With ``damping = 0`` a rank-deficient J raises
``ValueError`` wherever values are known (NumPy, JAX outside a trace; the pivot test of
:func:`.sparse.small_ldl`); symbolic backends return the closed form, valid where J has full
rank.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..algorithms.common import entry
from ..algorithms.ltdl import inverse_from_factors, unit_lower_inverse
from ..algorithms.rnea import rnea
from ..types import Array, Backend
from .contact import Contact, ResolvedContact, nonneg_number, resolve_contacts
from .kinematics import contact_terms
from .sparse import (MassFactors, factor_mass_matrix, l_solve, lt_solve, small_ldl,
                     small_ldl_solve, weighted_gram)
from ..algorithms.dispatch import dispatch

__all__ = ["OperationalSpace", "constraint_dynamics", "contact_inverse_dynamics",
           "impulse_dynamics", "kkt_matrix_inverse"]


def _support(model, resolved: Sequence[ResolvedContact]) -> set:
    """The dofs that move some contact frame (rows of J^T that are not structurally zero)."""
    out: set = set()
    for rc in resolved:
        for j in model.ancestors[rc.frame.body]:
            out.update(range(*model.v_idx[j]))
    return out


class OperationalSpace:
    """The contact problem reduced to the contact rows at one state: ``W = L^-T J^T`` (a list of
    nv rows 1 x nc, None for structural zeros), ``G = J M^-1 J^T + damping I`` (``G``, nc x nc
    scalars) and its ``L D L^T`` factors (``L``, ``Dinv``; :func:`.sparse.small_ldl`, which
    raises for rank-deficient J when ``damping = 0``)."""

    def __init__(self, B: Backend, model, F: MassFactors, J, resolved, damping: float, what: str):
        self.nc = nc = sum(rc.contact.dim for rc in resolved)
        JT = J.T
        sup = _support(model, resolved)
        self.W = lt_solve(F, [B.rows(JT, k, k + 1) if k in sup else None
                              for k in range(model.nv)])
        G = weighted_gram(F, self.W, nc, B)
        self.G = [[G[i, j] + (damping if i == j and damping else 0) for j in range(nc)]
                  for i in range(nc)]
        self.L, self.Dinv = small_ldl(B, self.G, what, check=not damping)

    def project(self, F: MassFactors, z: list) -> list:
        """``W^T D^-1 z`` as nc scalars."""
        r = None
        for k, w in enumerate(self.W):
            if w is not None and z[k] is not None:
                t = (F.Dinv[k] * z[k]) * w
                r = t if r is None else r + t
        return [0 if r is None else r[0, j] for j in range(self.nc)]

    def spread(self, z: list, lam: list) -> list:
        """``z + W lam`` as nv entries (None for zeros)."""
        out = list(z)
        for k, w in enumerate(self.W):
            if w is None:
                continue
            t = w[0, 0] * lam[0]
            for j in range(1, self.nc):
                t = t + w[0, j] * lam[j]
            out[k] = t if out[k] is None else out[k] + t
        return out



def _vector(B: Backend, x: list):
    return B.vector([0 if e is None else e for e in x])


@dispatch
def constraint_dynamics(model: Any, q: Array, qd: Array, tau: Array,
                        contacts: Contact | Sequence[Contact], damping: float = 0.0, *,
                        backend: str | None = None) -> tuple[Array, Array]:
    """Forward dynamics with rigid contacts: ``(qdd, lam)`` with ``M qdd + h = tau + J^T lam`` and
    ``J qdd + gamma = -damping lam`` (0 for the default ``damping = 0``), where J is
    :func:`~symdyn.contact.contact_jacobian` and ``gamma`` the drift plus Baumgarte terms
    (:class:`~symdyn.contact.contact.Contact`). Module docstring: conventions (lam as Pinocchio's
    ``lambda_c`` with 6-D blocks in ``[angular; linear]`` order) and the sparse route.

    Raises ``ValueError`` for redundant contacts (rank-deficient J) with ``damping = 0`` wherever
    values are known (NumPy, JAX outside a trace); symbolic backends return the closed form
    (valid where J has full rank)."""
    d = nonneg_number(damping, "damping")
    resolved = resolve_contacts(model, contacts)
    B, (qs, vs, taus) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                              backend=backend)
    return solve_constraint_dynamics(B, model, qs, vs, B.vcat(taus), resolved, d,
                                     "constraint_dynamics")


def solve_constraint_dynamics(B: Backend, model, qs: list, vs: list, tau_v, resolved, d: float,
                              what: str):
    """:func:`constraint_dynamics` on checked inputs (joint segments of q and qd, the torque
    vector); errors name ``what``."""
    F = factor_mass_matrix(B, model, qs, vs)
    T = contact_terms(B, model, qs, vs, resolved)
    op = OperationalSpace(B, model, F, T.J, resolved, d, what)
    z = lt_solve(F, [tau_v[k] - F.h[k] for k in range(model.nv)])
    rhs = op.project(F, z)
    rhs = [rhs[j] + T.gamma[j] for j in range(op.nc)]
    lam = [-x for x in small_ldl_solve(op.L, op.Dinv, rhs)]
    qdd = l_solve(F, op.spread(z, lam))
    return _vector(B, qdd), B.vector(lam)


@dispatch
def impulse_dynamics(model: Any, q: Array, qd_minus: Array, contacts: Contact | Sequence[Contact],
                     restitution: float = 0.0, damping: float = 0.0, *,
                     backend: str | None = None) -> tuple[Array, Array]:
    """Impact with rigid contacts: ``(qd_plus, impulse)`` with
    ``M (qd_plus - qd_minus) = J^T impulse`` and ``J qd_plus = -restitution J qd_minus``
    (restitution in [0, 1]; with ``damping > 0``: ``J qd_plus + restitution J qd_minus =
    -damping impulse``). Pinocchio's ``impulseDynamics`` (its ``data.impulse_c`` with 6-D blocks
    in ``[angular; linear]`` order); gravity and velocity-product terms play no part."""
    r = nonneg_number(restitution, "restitution", upper=1.0)
    d = nonneg_number(damping, "damping")
    resolved = resolve_contacts(model, contacts)
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd_minus", qd_minus, "v"), backend=backend)
    F = factor_mass_matrix(B, model, qs)
    J = contact_terms(B, model, qs, None, resolved).J
    op = OperationalSpace(B, model, F, J, resolved, d, "impulse_dynamics")
    vel = J @ B.vcat(vs)
    impulse = small_ldl_solve(op.L, op.Dinv, [-(1 + r) * vel[j] for j in range(op.nc)])
    dv = l_solve(F, op.spread([None] * model.nv, impulse))
    qd_plus = B.vcat(vs) + _vector(B, dv)
    return qd_plus, B.vector(impulse)


@dispatch
def kkt_matrix_inverse(model: Any, q: Array, contacts: Contact | Sequence[Contact],
                       damping: float = 0.0, *, backend: str | None = None) -> Array:
    """The inverse of the KKT matrix ``[M J^T; J -damping I]`` ((nv + nc) square), Pinocchio's
    ``computeKKTContactDynamicMatrixInverse(model, data, q, J, damping)`` with J the contact
    Jacobian: ``[[M^-1 - Y Gh^-1 Y^T, Y Gh^-1], [Gh^-1 Y^T, -Gh^-1]]`` with ``Y = M^-1 J^T``
    and ``Gh = J M^-1 J^T + damping I``. Built from the sparse factors (``M^-1 = Z D^-1 Z^T``,
    ``Z = L^-1``; ``Y = L^-1 D^-1 W``)."""
    d = nonneg_number(damping, "damping")
    resolved = resolve_contacts(model, contacts)
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    F = factor_mass_matrix(B, model, qs)
    J = contact_terms(B, model, qs, None, resolved).J
    op = OperationalSpace(B, model, F, J, resolved, d, "kkt_matrix_inverse")
    nc = op.nc
    Minv = inverse_from_factors(unit_lower_inverse(F.H, F.anc), F.anc, F.Dinv)
    Y = l_solve(F, op.W)                                         # rows of M^-1 J^T
    I = B.eye(nc)
    Ginv = B.vcat(small_ldl_solve(op.L, op.Dinv, [B.rows(I, j, j + 1) for j in range(nc)]))
    Ym = B.vcat([B.zeros(1, nc) if y is None else y for y in Y])   # n x nc
    YG = Ym @ Ginv
    top_left = B.matrix(Minv) - YG @ Ym.T
    return B.block([[top_left, YG], [YG.T, -Ginv]])


def _cone_force(B: Backend, cx: Any, cy: Any, cz: Any, Rt: float, Rn: float, mu: float,
                solve_ncp: bool) -> list:
    """The converged force of one 3-row contact in its friction cone ``|lam_T| <= mu lam_z``:
    ``c = (cx, cy, cz)`` the contact's ``c_ref`` rows, ``Rt`` the tangential compliance (rows 0
    and 1), ``Rn`` the normal one (row 2). Branch-free over the backends (``where_positive``);
    ``u = |c_T|`` is guarded where it is 0 (``us`` is 1 there, so ``c_T / us`` stays finite, and
    ``sqrt`` is never taken at 0: the derivatives that CasADi and JAX form for the untaken branch
    stay finite too).

    Regimes (``gap > 0``: in contact; ``slip > 0``: the unconstrained ``-c / R`` lies outside the
    cone): separate ``lam = 0``; stick ``lam = -c / R``; slide ``lam_T = -mu lam_z c_T / |c_T|``
    with ``lam_z = (mu |c_T| - c_z) / (Rn + mu^2 Rt)`` (projection, ``solve_ncp=False``) or
    ``lam_z = -c_z / Rn`` (Coulomb's law, ``solve_ncp=True``)."""
    u2 = cx * cx + cy * cy
    us = B.sqrt(B.where_positive(u2, u2, 1))
    u = B.where_positive(u2, us, 0)
    if solve_ncp:
        gap, lz_slide = -cz, -cz / Rn
    else:
        gap = mu * u - cz
        lz_slide = gap / (Rn + mu * mu * Rt)
    slip = Rn * u + (mu * Rt) * cz
    k = -mu * lz_slide

    def pick(slide, stick):
        return B.where_positive(gap, B.where_positive(slip, slide, stick), 0)

    return [pick(k * (cx / us), -cx / Rt), pick(k * (cy / us), -cy / Rt), pick(lz_slide, -cz / Rn)]


def _friction(friction: Any, resolved: Sequence[ResolvedContact], R: list) -> list | None:
    """One friction coefficient per contact (None: no cone), checked against the contacts and the
    compliances."""
    if friction is None:
        return None
    n = len(resolved)
    if hasattr(friction, "__len__") and not isinstance(friction, str):
        mus = list(friction)
        if len(mus) != n:
            raise ValueError(f"friction must be one number or {n} numbers (one per contact), "
                             f"got {len(mus)}")
        mus = [nonneg_number(x, f"friction[{k}]") for k, x in enumerate(mus)]
    else:
        mus = [nonneg_number(friction, "friction")] * n
    for k, rc in enumerate(resolved):
        if rc.contact.dim != 3:
            raise ValueError(f"contacts[{k}] is a 6-D contact: the friction cone applies to 3-D "
                             "(point) contacts only; use friction=None or point contacts")
        r = rc.row
        if R[r] != R[r + 1]:
            raise ValueError(f"contacts[{k}]: friction needs equal tangential compliances, got "
                             f"compliance[{r}] = {R[r]!r} != compliance[{r + 1}] = {R[r + 1]!r}: "
                             "the closed form used here is the R-weighted projection on the "
                             "cone for isotropic tangential compliance only (Pinocchio's "
                             "weightedProject assumes R0 == R1 too)")
    return mus


@dispatch
def contact_inverse_dynamics(model: Any, q: Array, qd: Array, qdd: Array,
                             contacts: Contact | Sequence[Contact], dt: float,
                             compliance: float | Sequence[float],
                             constraint_correction: Array | None = None, *,
                             friction: float | Sequence[float] | None = None,
                             solve_ncp: bool = False,
                             backend: str | None = None) -> tuple[Array, Array]:
    """Inverse dynamics with compliant contacts, Pinocchio 4.1's ``contactInverseDynamics``:
    ``(tau, lam)`` with

    ``c_ref = (J (qd + dt qdd) + constraint_correction) / dt`` and ``tau = rnea(q, qd, qdd) -
    J^T lam``,

    J the contact Jacobian (:func:`~symdyn.contact.contact_jacobian`) and ``lam`` the force of the
    environment on the robot, as in :func:`constraint_dynamics`. ``compliance`` (R): one number or
    one per row (nc), each > 0; ``constraint_correction``: nc numbers (default zero).

    * ``friction=None`` (default): no cone, ``lam = -c_ref / R`` row by row.
    * ``friction``: one number >= 0 or one per contact; every contact must then be a 3-D (point)
      contact with equal tangential compliances (rows 0 and 1). Each contact's force is kept in
      its cone ``K = {|lam_T| <= mu lam_z}`` whose axis is the contact's third row: the z axis
      of the contact frame for ``"local"``, world z for ``"local_world_aligned"``, and ``lam_z
      >= 0`` pushes the robot along +z (z is the environment's normal, pointing toward the
      robot; a foot on flat ground in ``"local_world_aligned"`` has world z up). Per contact,
      with ``c = c_ref`` rows ``(c_T, c_z)``, ``Rt = R0 = R1``, ``Rn = R2``:

      - ``solve_ncp=False``: ``lam = argmin_{lam in K} 1/2 lam^T R lam + c^T lam``, the
        R-weighted projection of ``-c / R`` on K: 0 if ``c_z >= mu |c_T|`` (separate);
        ``-c / R`` if that lies in K, i.e. ``Rn |c_T| <= -mu Rt c_z`` (stick); otherwise on
        the boundary (slide), ``lam_z = (mu |c_T| - c_z) / (Rn + mu^2 Rt)``,
        ``lam_T = -mu lam_z c_T / |c_T|``.
      - ``solve_ncp=True`` (Coulomb's law with maximal dissipation, De Saxce's correction):
        0 if ``c_z >= 0`` (separate); ``-c / R`` if that lies in K (stick); otherwise
        ``lam_z = -c_z / Rn``, ``lam_T = -mu lam_z c_T / |c_T|`` (slide: the contact velocity
        ``sigma = c + R lam`` has ``sigma_z = 0`` and ``sigma_T`` along ``c_T``, opposing
        ``lam_T``).

      Every step is a ``where_positive`` (no Python branch on values), so the result is a
      Piecewise on SymPy / SymEngine, an ``if_else`` on CasADi and a ``where`` on JAX.

    Relation to Pinocchio 4.1. Its ``PointContactConstraintModel`` anchored at the contact's
    current placement has the opposite sign, ``J_pin = -J`` (the velocity of the environment
    point relative to the robot's, local axes), so without friction and with
    ``constraint_correction = -correction_pin`` its ``lambda = -lam`` and its torque is ``tau``.
    Its cone holds ``lambda`` (the force on the environment), so its normal points from the
    robot into the environment: the Pinocchio twin of a contact here is one whose placement is
    turned by pi about x (``D = diag(1, -1, -1)``), with ``correction_pin = -D correction``
    and ``lambda_pin = -D lam``. Pinocchio solves for the force by Gauss-Seidel sweeps of
    proximal steps, ``lam <- proj_(R + rho)(-(c + ds - rho lam) / (R + rho))`` (``rho`` its
    proximal ``mu``, ``ds = (0, 0, mu |sigma_T|)`` the De Saxce correction when
    ``solve_ncp``, ``proj_W`` the W-weighted projection on K, its ``weightedProject``, which
    assumes ``R0 == R1``). R is diagonal, so the contacts decouple and a fixed point of the
    sweep is a fixed point of each contact's step: for ``solve_ncp=False`` that is the
    minimiser of ``1/2 lam^T R lam + c^T lam`` over K (the proximal step's fixed points are
    the minimisers, whatever ``rho``), which the projection above gives in closed form; for
    ``solve_ncp=True`` the three cases above satisfy the fixed-point equation (stick: sigma = 0;
    separate: ``-(c + ds) R^-1`` lies in K's polar cone when ``c_z >= 0``; slide: ``R (y -
    lam) = -|sigma_T| (c_T / |c_T|, mu)`` is normal to K at lam, y the step's target) and the
    three cover every c. Where Pinocchio's iteration converges it therefore returns these
    forces (to its accuracy); here they are exact.

    Compiled (codegen group ``"contact"``, :func:`symdyn.compiled`): q, qd, qdd are the inputs;
    ``contacts``, ``dt``, ``compliance``, ``constraint_correction``, ``friction`` and
    ``solve_ncp`` are fixed at build time (one build per value).
    """
    h = nonneg_number(dt, "dt")
    if h == 0:
        raise ValueError("dt must be a time step > 0, got 0")
    resolved = resolve_contacts(model, contacts)
    nc = sum(rc.contact.dim for rc in resolved)
    comp = [compliance] * nc if isinstance(compliance, (int, float)) else list(compliance)
    if len(comp) != nc:
        raise ValueError(f"compliance must be one number or {nc} numbers (one per contact row), "
                         f"got {len(comp)}")
    R = [nonneg_number(c, f"compliance[{k}]") for k, c in enumerate(comp)]
    if any(c == 0 for c in R):
        raise ValueError("compliance must be > 0 on every row (lam = -c_ref / R)")
    if hasattr(solve_ncp, "__len__") or solve_ncp not in (True, False):
        raise TypeError(f"solve_ncp must be True or False, got {solve_ncp!r}")
    solve_ncp = bool(solve_ncp)
    mus = _friction(friction, resolved, R)
    B, (qs, vs, us) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend)
    J = contact_terms(B, model, qs, None, resolved).J
    c = J @ (B.vcat(vs) + h * B.vcat(us))
    if constraint_correction is not None:
        c = c + B.to_vector(constraint_correction, nc, "constraint_correction")
    if mus is None:
        lam = B.vector([-c[k] / (h * R[k]) for k in range(nc)])
    else:
        rows: list = []
        for rc, mu in zip(resolved, mus):
            r = rc.row
            rows += _cone_force(B, c[r] / h, c[r + 1] / h, c[r + 2] / h, R[r], R[r + 2], mu,
                                solve_ncp)
        lam = B.vector(rows)
    tau = rnea(model, B.vcat(qs), B.vcat(vs), B.vcat(us), backend=B)  # type: ignore[arg-type]
    return tau - J.T @ lam, lam
