"""The chain-rule baselines of papers 003/004 (Table II of paper 004): RNEA_CR, ABA_CR and FD_CR.

These are the methods IDSVA/FDSVA are compared against: the partials of inverse/forward dynamics
obtained by differentiating every step of RNEA (resp. ABA) by hand, in body coordinates
(paper 004 Sec. VI: "RNEACR in body-coordinates [6]"). They are forward-mode: each body quantity
``x`` carries its derivative ``dx``, a 6 x m matrix whose m = 2 nv columns are the directions
``(q_1..q_nv, qd_1..qd_nv)`` (q in the tangent space ``q (+) delta``, Pinocchio's convention, as
:func:`~symdyn.algorithms.rnea_derivatives.rnea_derivatives`). The only q-dependence of a body
step is the joint transform of its own joint; for a joint whose motion subspace S is constant in
body coordinates (revolute, prismatic, helical, spherical, floating) the identity

    d(Xup_i)/dq_k = -(S_k x) Xup_i,        d(Xup_i^T)/dq_k = Xup_i^T (S_k x*)        (k in joint i)

gives every own-coordinate term: ``d(X m)/dq_k = (X m) x S_k`` for a motion vector m and
``d(X^T f)/dq_k = X^T (S_k x* f)`` for a force f. The derivative matrices are full width (2 nv
columns, zeros beyond the ancestors) so the cost is O(N nv) = O(N^2) on chains, as the papers
state for RNEA_CR; on a CasADi SX or SymPy graph products with exact zeros vanish, so the graph
holds only the O(N d) nonzero work.

* :func:`rnea_derivatives_cr` (RNEA_CR): RNEA's v, a, f recursions and their partials.
* :func:`aba_derivatives_cr` (ABA_CR): the three ABA passes differentiated, including the
  articulated inertias IA (whose q-partials are 6x6 matrices, one per descendant coordinate),
  U, D^-1, u, pA and a. ``Minv = dqdd/dtau`` comes from the ABA-Zero-Algorithm.
* :func:`fd_derivatives_cr` (FD_CR, paper 004 Table II: "RNEACR, IPR (using DMM), and M^-1"):
  qdd from ABA, RNEA_CR at qdd, then eq. (5) ``dqdd/du = -M^-1 dtau/du`` by direct matrix
  multiplication with ``M^-1`` from AZA on the identity.

Planar joints (S varies with the joint's own angle) are refused, naming the joint.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import congruence, cross_force, cross_motion, xform_force_T, xform_motion
from .aba import aba_pass
from .aba_derivatives import aza
from .common import entry, external_forces, joint_kinematics, per_body
from .rnea_derivatives import crfbar_mul
from ..types import Array, Backend, ExternalForces

if TYPE_CHECKING:
    from ..model import Model


def check_constant_S(model, what: str) -> None:
    """Refuse joints whose motion subspace varies in body coordinates (the planar joint)."""
    for i, j in enumerate(model.joints):
        if not j.S_constant:
            raise ValueError(
                f"{what}: joint {j!r} of body {model.names[i]!r} has a motion subspace that varies "
                "in body coordinates; only joints with a constant S (revolute, prismatic, helical, "
                "spherical, floating) are supported")


def _place(B: Backend, blk, c0, m):
    """The 6 x m matrix with ``blk`` (6 x k) in columns c0..c0+k and zeros elsewhere."""
    k = blk.shape[1]
    parts = ([B.zeros(blk.shape[0], c0)] if c0 else []) + [blk] \
        + ([B.zeros(blk.shape[0], m - c0 - k)] if m - c0 - k else [])
    return parts[0] if len(parts) == 1 else B.hcat(parts)


def _split(B: Backend, D, nv):
    return B.cols(D, 0, nv), B.cols(D, nv, 2 * nv)


def rnea_derivatives_cr(model: Model, q: Array, qd: Array, qdd: Array,
                        f_ext: ExternalForces = None, *,
                        backend: str | None = None) -> tuple[Array, Array]:
    """RNEA_CR: ``(dtau_dq, dtau_dqd)`` of ``rnea(model, q, qd, qdd, f_ext)`` by the chain rule
    through every step of RNEA (body coordinates, forward mode). Same conventions and results as
    :func:`~symdyn.algorithms.rnea_derivatives.rnea_derivatives` (IDSVA)."""
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "RNEA_CR")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    return _rnea_cr(B, model, qd, qdd, f_ext, Xup, S)


def _rnea_cr(B: Backend, model, qd, qdd, f_ext, Xup, S):
    consts = model.constants(B)
    I, a_grav = consts.I, consts.a_grav
    N, parents, nv = model.N, model.parents, model.nv
    m = 2 * nv
    v, a, f, dv, da, df = per_body(N, 6)
    for i, p in enumerate(parents):
        a0, _ = model.v_idx[i]
        vJ = S[i] @ qd[i]
        own_qd = _place(B, S[i], nv + a0, m)                                # dvJ/dqd
        if p < 0:
            v[i] = vJ
            dv[i] = own_qd
            ap = xform_motion(B, Xup[i], a_grav)
            da_p = _place(B, cross_motion(B, ap, S[i]), a0, m)             # d(X ag)/dq_i
        else:
            vp = xform_motion(B, Xup[i], v[p])
            v[i] = vp + vJ
            dv[i] = xform_motion(B, Xup[i], dv[p]) + _place(B, cross_motion(B, vp, S[i]), a0, m) \
                + own_qd
            ap = xform_motion(B, Xup[i], a[p])
            da_p = xform_motion(B, Xup[i], da[p]) + _place(B, cross_motion(B, ap, S[i]), a0, m)
        a[i] = ap + S[i] @ qdd[i] + cross_motion(B, v[i], vJ)
        # d(v x vJ) = dv x vJ + v x dvJ = -(vJ x) dv + [v x S in the qd_i columns]
        da[i] = da_p - cross_motion(B, vJ, dv[i]) \
            + _place(B, cross_motion(B, v[i], S[i]), nv + a0, m)
        h = I[i] @ v[i]
        f[i] = I[i] @ a[i] + cross_force(B, v[i], h)
        df[i] = I[i] @ da[i] + cross_force(B, v[i], I[i] @ dv[i]) + crfbar_mul(B, h, dv[i])
        if f_ext[i] is not None:
            f[i] = f[i] - f_ext[i]
    rows = [None] * N
    for i in reversed(range(N)):
        p = parents[i]
        rows[i] = S[i].T @ df[i]                                            # dtau_i = S^T df_i
        if p >= 0:
            a0, _ = model.v_idx[i]
            f[p] = f[p] + xform_force_T(B, Xup[i], f[i])
            df[p] = df[p] + xform_force_T(B, Xup[i], df[i]) \
                + _place(B, xform_force_T(B, Xup[i], crfbar_mul(B, f[i], S[i])), a0, m)
    return _split(B, B.vcat(rows), nv)


def aba_derivatives_cr(model: Model, q: Array, qd: Array, tau: Array,
                       f_ext: ExternalForces = None, *,
                       backend: str | None = None) -> tuple[Array, Array, Array]:
    """ABA_CR: ``(dqdd_dq, dqdd_dqd, Minv)`` of ``aba(model, q, qd, tau, f_ext)`` by the chain rule
    through the three ABA passes (body coordinates, forward mode). Same conventions and results as
    :func:`~symdyn.algorithms.aba_derivatives.aba_derivatives`; ``Minv`` from AZA."""
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "ABA_CR")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    consts = model.constants(B)
    I, a_grav = consts.I, consts.a_grav
    armature = getattr(consts, "armature", ()) or (None,) * model.N
    N, parents, nv = model.N, model.parents, model.nv
    m = 2 * nv
    v, c, IA, pA, dv, dc, dpA = per_body(N, 7)
    # q-direction k -> 6x6 (only descendants' coordinates)
    dIA: list[dict[int, Any]] = [dict() for _ in range(N)]
    for i, p in enumerate(parents):                                         # pass 1
        a0, _ = model.v_idx[i]
        vJ = S[i] @ qd[i]
        own_qd = _place(B, S[i], nv + a0, m)
        if p < 0:
            v[i], dv[i] = vJ, own_qd
        else:
            vp = xform_motion(B, Xup[i], v[p])
            v[i] = vp + vJ
            dv[i] = xform_motion(B, Xup[i], dv[p]) + _place(B, cross_motion(B, vp, S[i]), a0, m) \
                + own_qd
        c[i] = cross_motion(B, v[i], vJ)
        dc[i] = -cross_motion(B, vJ, dv[i]) + _place(B, cross_motion(B, v[i], S[i]), nv + a0, m)
        IA[i] = I[i]
        h = I[i] @ v[i]
        pA[i] = cross_force(B, v[i], h)
        dpA[i] = cross_force(B, v[i], I[i] @ dv[i]) + crfbar_mul(B, h, dv[i])
        if f_ext[i] is not None:
            pA[i] = pA[i] - f_ext[i]
    U, Dinv, u, dU, dDinv, du = per_body(N, 6)
    for i in reversed(range(N)):                                            # pass 2
        p = parents[i]
        Si = S[i]
        U[i] = IA[i] @ Si
        D = Si.T @ U[i]
        Dinv[i] = B.inv(D if armature[i] is None else D + armature[i])
        u[i] = tau[i] - Si.T @ pA[i]
        du[i] = -(Si.T @ dpA[i])
        dU[i] = {k: dI @ Si for k, dI in dIA[i].items()}
        dDinv[i] = {k: -(Dinv[i] @ (Si.T @ dUk) @ Dinv[i]) for k, dUk in dU[i].items()}
        if p < 0:
            continue
        a0, _ = model.v_idx[i]
        UD = U[i] @ Dinv[i]
        Ia = IA[i] - UD @ U[i].T
        Du = Dinv[i] @ u[i]
        pa = pA[i] + Ia @ c[i] + U[i] @ Du
        dpa = dpA[i] + Ia @ dc[i] + UD @ du[i]
        extra = {}
        for k, dI in dIA[i].items():
            dUk, dDk = dU[i][k], dDinv[i][k]
            dIa = dI - dUk @ UD.T - U[i] @ dDk @ U[i].T - UD @ dUk.T
            extra[k] = dIa @ c[i] + dUk @ Du + U[i] @ (dDk @ u[i])
            dIap = congruence(B, Xup[i], dIa)
            dIA[p][k] = dIap if k not in dIA[p] else dIA[p][k] + dIap
        IA[p] = IA[p] + congruence(B, Xup[i], Ia)
        for c0 in range(Si.shape[1]):                                       # own joint: X(q_k)
            A = cross_force(B, B.vector([Si[r, c0] for r in range(6)]), Ia)   # (S_k x*) Ia
            blk = congruence(B, Xup[i], A + A.T)
            k = a0 + c0
            dIA[p][k] = blk if k not in dIA[p] else dIA[p][k] + blk
        if extra:
            dpa = dpa + B.hcat([extra[k] if k in extra else B.zeros(6, 1) for k in range(nv)]
                               + [B.zeros(6, nv)])
        pA[p] = pA[p] + xform_force_T(B, Xup[i], pa)
        dpA[p] = dpA[p] + xform_force_T(B, Xup[i], dpa) \
            + _place(B, xform_force_T(B, Xup[i], crfbar_mul(B, pa, Si)), a0, m)
    a, da, rows = per_body(N, 3)
    for i, p in enumerate(parents):                                         # pass 3
        a0, _ = model.v_idx[i]
        ap = xform_motion(B, Xup[i], a_grav if p < 0 else a[p])
        dap = _place(B, cross_motion(B, ap, S[i]), a0, m)
        if p >= 0:
            dap = dap + xform_motion(B, Xup[i], da[p])
        a1 = ap + c[i]
        da1 = dap + dc[i]
        w = u[i] - U[i].T @ a1
        qdd = Dinv[i] @ w
        dqdd = Dinv[i] @ (du[i] - U[i].T @ da1)
        if dU[i]:
            extra = {k: dDinv[i][k] @ w - Dinv[i] @ (dU[i][k].T @ a1) for k in dU[i]}
            z = B.zeros(S[i].shape[1], 1)
            dqdd = dqdd + B.hcat([extra[k] if k in extra else z for k in range(nv)]
                                 + [B.zeros(S[i].shape[1], nv)])
        a[i] = a1 + S[i] @ qdd
        da[i] = da1 + S[i] @ dqdd
        rows[i] = dqdd
    dq, dqd = _split(B, B.vcat(rows), nv)
    Minv = aza(B, model, Xup, S, U, Dinv, B.eye(nv))
    return dq, dqd, Minv


def fd_derivatives_cr(model: Model, q: Array, qd: Array, tau: Array,
                      f_ext: ExternalForces = None, *,
                      backend: str | None = None) -> tuple[Array, Array, Array]:
    """FD_CR (paper 004 Table II): ``(dqdd_dq, dqdd_dqd, Minv)`` from RNEA_CR at ``qdd = aba(...)``
    and eq. (5) by direct matrix multiplication, ``dqdd/du = -M^-1 dtau/du``, with ``M^-1`` from
    the ABA-Zero-Algorithm on the identity."""
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_constant_S(model, "FD_CR")
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    qdd, U, Dinv = aba_pass(B, model, q, qd, tau, f_ext, Xup, S)
    dtau_dq, dtau_dqd = _rnea_cr(B, model, qd, qdd, f_ext, Xup, S)
    Minv = aza(B, model, Xup, S, U, Dinv, B.eye(model.nv))
    return -(Minv @ dtau_dq), -(Minv @ dtau_dqd), Minv
