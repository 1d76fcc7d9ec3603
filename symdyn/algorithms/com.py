"""Centre of mass and centroidal momentum.

Conventions (symdyn vs Pinocchio)
---------------------------------
* Positions and velocities of the centre of mass are in world coordinates (Pinocchio's
  ``data.com[0]``, ``data.vcom[0]``); the mass is that of the moving bodies (a fixed base's root
  link hangs on the world and is not counted, as in :func:`symdyn.interop.pinocchio.to_pinocchio`).
* The centroidal momentum ``h_G = Ag qd`` is the momentum of the whole system about the centre of
  mass G in world-aligned axes, ordered ``[angular; linear]`` = ``[k_G; m cdot]`` as every spatial
  force in symdyn. Pinocchio's ``ccrba`` / ``computeCentroidalMap`` return the rows ``[linear;
  angular]`` (swap the two 3-row blocks) and free-flyer columns ``[v; omega]``
  (:func:`symdyn.interop.pinocchio.matrix_from_pin`).
* Jacobians run over the model's speeds (body velocities for floating and spherical joints).

How it is computed: with ``^0X_j S_j`` the world-coordinate motion subspace of joint j and
``I0C_j`` the composite inertia of the subtree of j in world coordinates, the momentum about the
world origin is ``A0 qd`` with columns ``A0_j = I0C_j ^0X_j S_j``; ``Ag = [[1, -S(c)], [0, 1]] A0``
moves it to the centre of mass c, and ``com_jacobian = (bottom rows of A0) / m``. The time variation
``dAg/dt`` differentiates both factors: ``d/dt I0C_j = sum_i (v0_i x*) I0_i - I0_i (v0_i x)`` over
the subtree, ``d/dt ^0X_j S_j = v0_j x ^0X_j S_j``, and the shift adds ``-S(cdot)`` times the
linear rows.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backends import resolve_backend
from ..spatial import cross_motion, inertia_congruence_sym, inertia_rate_rigid, skew, \
    xform_motion_inv
from ..types import Array, Backend
from .common import entry
from .frames import path_kinematics
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["center_of_mass", "centroidal_momentum", "centroidal_momentum_matrix",
           "centroidal_momentum_matrix_time_variation", "com_jacobian", "total_mass"]


def _mass(B: Backend, model):
    I = model.constants(B).I
    m = B.dot(B.zeros(1), B.zeros(1))           # a model without moving bodies has no mass
    for Ii in I:
        m = m + Ii[3, 3]
    return m


def _require_bodies(model, what: str) -> None:
    """The centre of mass of no moving body is 0/0: refuse it rather than return nan."""
    if model.N == 0:
        raise ValueError(f"{what}: model {model.name!r} has no moving body (nv = 0), so its centre "
                         f"of mass is undefined")


@dispatch
def total_mass(model: Model, *, backend: str | None = None) -> Any:
    """Total mass of the moving bodies (a scalar of the backend: float for NumPy, an expression
    for a model with SymPy parameters). Pinocchio: ``computeTotalMass`` / ``data.mass[0]``."""
    B = resolve_backend(backend=backend, model=model)
    return _mass(B, model)


def _first_moments(B: Backend, model, K):
    """Per body: (mass, m * CoM position in world coordinates)."""
    params = model.constants(B).inertia_params
    out = []
    for i in range(model.N):
        m, c, _ = params[i]
        X = K.X0[i]
        out.append((m, m * (X.r + X.E.T @ c)))
    return out


@dispatch
def center_of_mass(model: Model, q: Array, qd: Array | None = None, *,
                   backend: str | None = None) -> Array | tuple[Array, Array]:
    """Centre of mass ``c`` (3, world coordinates), or ``(c, cdot)`` when ``qd`` is given
    (Pinocchio's ``centerOfMass(model, data, q[, v])``: ``data.com[0]``, ``data.vcom[0]``)."""
    _require_bodies(model, "center_of_mass")
    args = [("q", q, "q")] + ([("qd", qd, "v")] if qd is not None else [])
    B, segs = entry(model, *args, backend=backend)
    K = path_kinematics(B, model, segs[0], segs[1] if qd is not None else None)
    consts = model.constants(B)
    M = _mass(B, model)
    h = None
    hd = None
    for i, (m, mc) in enumerate(_first_moments(B, model, K)):
        h = mc if h is None else h + mc
        if qd is not None:
            # linear momentum of body i in world axes: E^T (I_i v_i)_lin = m * velocity of its CoM
            li = K.X0[i].E.T @ B.rows(consts.I[i] @ K.v[i], 3, 6)
            hd = li if hd is None else hd + li
    if qd is None:
        return h / M
    return h / M, hd / M


def _momentum_columns(B: Backend, model, K, rate: bool):
    """Columns A0_j (and their rates) of the momentum map about the world origin, world axes."""
    consts = model.constants(B)
    I0 = [inertia_congruence_sym(B, K.X0[i], consts.I[i]) for i in range(model.N)]
    IC = list(I0)
    ICd: list[Any] = []   # filled (and used) only when rate
    v0: list[Any] = []
    if rate:
        v0 = [xform_motion_inv(B, K.X0[i], K.v[i]) for i in range(model.N)]
        ICd = [inertia_rate_rigid(B, v0[i], I0[i]) for i in range(model.N)]
    for i in reversed(range(model.N)):
        p = model.parents[i]
        if p >= 0:
            IC[p] = IC[p] + IC[i]
            if rate:
                ICd[p] = ICd[p] + ICd[i]
    A, dA = [], []
    for j in range(model.N):
        S0 = xform_motion_inv(B, K.X0[j], K.S[j])
        A.append(IC[j] @ S0)
        if rate:
            dS0 = cross_motion(B, v0[j], S0)
            if K.Sring[j] is not None:
                dS0 = dS0 + xform_motion_inv(B, K.X0[j], K.Sring[j])
            dA.append(ICd[j] @ S0 + IC[j] @ dS0)
    # the total composite's first moment: h = m c (IC of the roots)
    roots = [j for j in range(model.N) if model.parents[j] < 0]
    Itot = IC[roots[0]]
    for r in roots[1:]:
        Itot = Itot + IC[r]
    h = B.vector([Itot[2, 4], Itot[0, 5], Itot[1, 3]])
    return B.hcat(A), (B.hcat(dA) if rate else None), h


@dispatch
def com_jacobian(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """CoM Jacobian ``Jc`` (3 x nv) with ``cdot = Jc qd`` (Pinocchio's ``jacobianCenterOfMass``,
    whose free-flyer columns are ``[v; omega]``): column block j is
    ``(m_j v_j - h_j x omega_j) / m`` for the world-coordinate subspace ``[omega_j; v_j]`` of joint
    j, ``m_j`` and ``h_j`` the mass and first moment (world) of its subtree."""
    _require_bodies(model, "com_jacobian")
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    K = path_kinematics(B, model, qs)
    M = _mass(B, model)
    mom = _first_moments(B, model, K)
    ms = [m for m, _ in mom]
    hs = [h for _, h in mom]
    for i in reversed(range(model.N)):
        p = model.parents[i]
        if p >= 0:
            ms[p] = ms[p] + ms[i]
            hs[p] = hs[p] + hs[i]
    cols = []
    for j in range(model.N):
        S0 = xform_motion_inv(B, K.X0[j], K.S[j])
        cols.append(ms[j] * B.rows(S0, 3, 6) - skew(B, hs[j]) @ B.rows(S0, 0, 3))
    return B.hcat(cols) / M


@dispatch
def centroidal_momentum_matrix(model: Model, q: Array, *, backend: str | None = None) -> Array:
    """Centroidal momentum matrix ``Ag`` (6 x nv): ``h_G = Ag qd`` is the momentum about the
    centre of mass in world-aligned axes, rows ``[angular; linear]`` (Pinocchio's ``ccrba``
    returns ``[linear; angular]``); ``Ag[3:] = m * com_jacobian``."""
    B, (qs,) = entry(model, ("q", q, "q"), backend=backend)
    return _centroidal_map(B, model, qs)


def _centroidal_map(B: Backend, model, qs):
    _require_bodies(model, "the centroidal momentum")
    K = path_kinematics(B, model, qs)
    A0, _, h = _momentum_columns(B, model, K, rate=False)
    c = h / _mass(B, model)
    lin = B.rows(A0, 3, 6)
    return B.vcat([B.rows(A0, 0, 3) - skew(B, c) @ lin, lin])


@dispatch
def centroidal_momentum(model: Model, q: Array, qd: Array, *,
                        backend: str | None = None) -> Array:
    """``h_G = Ag(q) qd`` (6, ``[angular; linear]``): the momentum about the centre of mass in
    world-aligned axes (Pinocchio's ``computeCentroidalMomentum``: ``data.hg``, ordered
    ``[linear; angular]``)."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    return _centroidal_map(B, model, qs) @ B.vcat(vs)


@dispatch
def centroidal_momentum_matrix_time_variation(model: Model, q: Array, qd: Array, *,
                                              backend: str | None = None) -> Array:
    """``dAg/dt`` (6 x nv, rows ``[angular; linear]``): the time derivative of
    :func:`centroidal_momentum_matrix` while ``q`` moves with speeds ``qd`` (Pinocchio's
    ``dccrba`` / ``computeCentroidalMapTimeVariation``, ``data.dAg``, rows ``[linear; angular]``).
    With it, ``d/dt h_G = Ag qdd + dAg/dt qd`` (the rate of the centroidal momentum: the net
    external wrench about the CoM)."""
    B, (qs, vs) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    K = path_kinematics(B, model, qs, vs)
    A0, dA0, h = _momentum_columns(B, model, K, rate=True)
    M = _mass(B, model)
    c = h / M
    lin, dlin = B.rows(A0, 3, 6), B.rows(dA0, 3, 6)
    cdot = lin @ B.vcat(vs) / M
    return B.vcat([B.rows(dA0, 0, 3) - skew(B, c) @ dlin - skew(B, cdot) @ lin, dlin])
