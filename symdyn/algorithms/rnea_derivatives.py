"""First-order partial derivatives of inverse dynamics: IDSVA (paper 003, Algorithm 1, eqs. (25)-(32)).

Coordinates. The backward pass pairs every body with each body of its subtree (lines 17-20). In
ground coordinates those pairings are plain products of already-computed columns, whereas in body
coordinates every pair needs a transform along the path between the two bodies (paper 004, Sec. V-B,
measured the ground-frame version 1.3-1.9x faster). So this module follows the paper: the forward
pass composes the compact transforms ``X0[i] = Xup[i] X0[p]`` (ground -> body i, 3x3 blocks) and
expresses ``S``, ``v``, ``a``, ``I`` and ``B`` in the ground frame; the backward pass is then sums and
matrix products only. Ground-frame inertias come from each body's (m, c, Ic) (CoM moved to the
ground frame, Ic rotated), cheaper than a 6x6 congruence. ``B_i`` is covariant
(``B(Xv, X^-T I X^-1) = X^-T B(v, I) X^-1``), so ``2 B_i`` is formed directly from the ground-frame
``v_i`` and ``I_i`` (matrix-free, :func:`twice_B`).

Multi-DoF joints. Spherical and floating joints have ``S`` constant in body coordinates; their
q-derivatives are Lie derivatives along the joint's free modes (identity J1 with j = i), which is the
tangent-space convention ``q (+) delta`` of :meth:`Joint.integrate` and of Pinocchio. A planar joint
(``S`` depends on its own angle, nonzero ``Sring``) is exactly a chain of three one-DoF joints
(prismatic x, prismatic y in the predecessor frame, then revolute z) with massless bodies in between
and the same coordinates (x, y, theta); IDSVA is applied to that chain: each column gets its own
predecessor velocity/acceleration in lines 6-7, and within the joint the earlier column plays the
ancestor in lines 17-20. Other joints whose ``S`` varies in body coordinates are refused.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..spatial import (compose, cross_force, cross_motion, mcI, skew, xform_force_T,
                       xform_motion_inv)
from .common import entry, external_forces, joint_kinematics
from ..types import Array, ExternalForces

if TYPE_CHECKING:
    from ..model import Model

# joints whose columns are applied one after the other (product of exponentials in column order)
_SEQUENTIAL_COLUMNS = ("planar",)


def rnea_derivatives(model: Model, q: Array, qd: Array, qdd: Array, f_ext: ExternalForces = None, *,
                     backend: str | None = None) -> tuple[Array, Array]:
    """Partial derivatives ``(dtau_dq, dtau_dqd)`` of ``tau = rnea(model, q, qd, qdd, f_ext)``.

    Both are nv x nv (full matrices) in the inputs' backend. Derivatives with respect to q are taken
    in the tangent space: column k is ``d/de tau(q (+) e e_k)`` at e = 0 with ``(+)`` the joints'
    :meth:`integrate` (for quaternion joints a perturbation by the body angular velocity / body twist,
    for the others the ordinary partial derivative) - the convention of Pinocchio's
    ``computeRNEADerivatives``. ``f_ext[i]`` is an external force [n; f] on body i in body-i
    coordinates (it rotates with the body). Spatial vectors are [angular; linear]. The derivative with
    respect to qdd is ``crba(model, q)``.
    """
    B, (q, qd, qdd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qdd", qdd, "v"),
                            backend=backend, extra=(f_ext,))
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    return idsva(B, model, qd, qdd, f_ext, Xup, S)


def check_joints(model) -> None:
    """Refuse joints whose motion subspace varies in body coordinates, except the planar joint."""
    for i, j in enumerate(model.joints):
        if not j.S_constant and j.type not in _SEQUENTIAL_COLUMNS:
            raise ValueError(
                f"IDSVA: joint {j!r} of body {model.names[i]!r} has a motion subspace that varies in "
                "body coordinates; only the planar joint is supported among such joints")


def crfbar_mul(B, f, M):
    """(f xbar*) M for a force vector f and a 6xk matrix M of motion vectors, with 3x3 blocks."""
    n, g = skew(B, B.rows(f, 0, 3)), skew(B, B.rows(f, 3, 6))
    m0, m1 = B.rows(M, 0, 3), B.rows(M, 3, 6)
    return -B.vcat([n @ m0 + g @ m1, g @ m0])


def ground_inertia(B, X0, m, c, Ic):
    """X0^T I X0 for the rigid-body inertia (m, c, Ic) and X0 = (E, r) (ground -> body): mass m at
    c0 = r + E^T c with rotational inertia E^T Ic E (fewer operations than a 6x6 congruence)."""
    return mcI(B, m, X0.r + X0.E.T @ c, X0.E.T @ Ic @ X0.E)


def twice_B(B, v, I, h):
    """2 B(v, I) of eq. (28) for a symmetric inertia I and h = I v, without 6x6 products:
    (v x*) I - I (v x) = X + X^T with X = (v x*) I, plus (I v) xbar* = [[-n x, -f x], [-f x, 0]]."""
    X = cross_force(B, v, I)
    n, f = skew(B, B.rows(h, 0, 3)), skew(B, B.rows(h, 3, 6))
    return X + X.T - B.vcat([B.hcat([n, f]), B.hcat([f, B.zeros(3, 3)])])


def _per_body(N: int, k: int) -> tuple[list[Any], ...]:
    """``k`` lists of ``N`` Nones, filled body by body."""
    return tuple([None] * N for _ in range(k))


def idsva(B, model, qd, qdd, f_ext, Xup, S):
    """Algorithm 1 of paper 003 on per-body segments ``qd``, ``qdd``, forces ``f_ext`` (body
    coordinates, None entries allowed) and joint kinematics ``Xup``, ``S`` already in backend B."""
    check_joints(model)
    a_grav = model.constants(B).a_grav
    inertia = model.constants(B).inertia_params  # per body (m, c, Ic)
    N, parents, nv = model.N, model.parents, model.nv
    X0, S0, v, a = _per_body(N, 4)
    Sd, Psid, Psidd, IC, BC, fC = _per_body(N, 6)  # BC holds 2 B^C (line 9)
    zero = B.zeros(6)
    for i, p in enumerate(parents):                                       # line 1: v0 = 0, a0 = -ag
        X0[i] = Xup[i] if p < 0 else compose(B, Xup[i], X0[p])
        S0[i] = xform_motion_inv(B, X0[i], S[i])                          # S_i in ground coordinates
        vl, al = (zero, a_grav) if p < 0 else (v[p], a[p])
        nvi = model.joints[i].nv
        segs = [(c, c + 1) for c in range(nvi)] \
            if model.joints[i].type in _SEQUENTIAL_COLUMNS else [(0, nvi)]
        sd, psid, psidd = [], [], []
        for c0, c1 in segs:  # one segment, or one per column of a planar joint (virtual bodies)
            Sk = B.cols(S0[i], c0, c1)
            vJ = Sk @ B.rows(qd[i], c0, c1)
            Psid_k = cross_motion(B, vl, Sk)                              # line 6
            psid.append(Psid_k)
            psidd.append(cross_motion(B, al, Sk) + cross_motion(B, vl, Psid_k))   # line 7
            vl = vl + vJ                                                  # line 3
            al = al + Sk @ B.rows(qdd[i], c0, c1) + cross_motion(B, vl, vJ)       # line 4
            sd.append(cross_motion(B, vl, Sk))                           # line 5
        v[i], a[i] = vl, al
        Sd[i], Psid[i], Psidd[i] = (x[0] if len(x) == 1 else B.hcat(x) for x in (sd, psid, psidd))
        IC[i] = ground_inertia(B, X0[i], *inertia[i])                     # line 8
        h = IC[i] @ v[i]
        BC[i] = twice_B(B, v[i], IC[i], h)                                # line 9 (x 2), eq. (28)
        fC[i] = IC[i] @ a[i] + cross_force(B, v[i], h)                    # line 10
        if f_ext[i] is not None:
            fC[i] = fC[i] - xform_force_T(B, X0[i], f_ext[i])

    dtau_dq, dtau_dqd = B.zeros(nv, nv), B.zeros(nv, nv)
    t1, t2, t3, t4, cols = _per_body(N, 5)  # stacked over each body's subtree
    for i in reversed(range(N)):
        a0, a1 = model.v_idx[i]
        B2 = BC[i]  # 2 B^C_i
        SdPsid = Sd[i] + Psid[i]
        t1i = IC[i] @ S0[i]                                               # line 13
        t2i = B2 @ S0[i] + IC[i] @ SdPsid                                 # line 14
        t3i = B2 @ Psid[i] + IC[i] @ Psidd[i] + crfbar_mul(B, fC[i], S0[i])   # line 15
        t4i = B2.T @ S0[i]                                                # line 16
        kids = model.children[i]
        t1[i], t2[i], t3[i], t4[i] = (B.hcat([t] + [T[c] for c in kids]) if kids else t
                                      for t, T in ((t1i, t1), (t2i, t2), (t3i, t3), (t4i, t4)))
        cols[i] = list(range(a0, a1)) + [k for c in kids for k in cols[c]]
        St = S0[i].T
        Uq, Uqd = St @ t3[i], St @ t2[i]                                  # lines 17-18 (row i)
        Lq = t4[i].T @ Psid[i] + t1[i].T @ Psidd[i]                       # line 19 (column i)
        Lqd = t4[i].T @ S0[i] + t1[i].T @ SdPsid                          # line 20 (column i)
        for s0, s1, c0 in _runs(cols[i]):
            rs, cs = slice(c0, c0 + s1 - s0), slice(a0, a1)
            dtau_dq = B.assign(dtau_dq, rs, cs, B.rows(Lq, s0, s1))
            dtau_dqd = B.assign(dtau_dqd, rs, cs, B.rows(Lqd, s0, s1))
            if s1 > a1 - a0:  # strict descendants nu-bar(i)
                s0 = max(s0, a1 - a0)
                c0 = cols[i][s0]
                rs, cs = slice(a0, a1), slice(c0, c0 + s1 - s0)
                dtau_dq = B.assign(dtau_dq, rs, cs, B.cols(Uq, s0, s1))
                dtau_dqd = B.assign(dtau_dqd, rs, cs, B.cols(Uqd, s0, s1))
        if model.joints[i].type in _SEQUENTIAL_COLUMNS:  # earlier column = ancestor: upper part
            n = a1 - a0
            for r in range(n):
                for c in range(r + 1, n):
                    dtau_dq = B.assign(dtau_dq, a0 + r, a0 + c, Uq[r, c])
                    dtau_dqd = B.assign(dtau_dqd, a0 + r, a0 + c, Uqd[r, c])
        p = parents[i]
        if p >= 0:                                                        # lines 21-23
            IC[p] = IC[p] + IC[i]
            BC[p] = BC[p] + BC[i]
            fC[p] = fC[p] + fC[i]
    return dtau_dq, dtau_dqd


def _runs(cols):
    """Maximal runs of consecutive indices in ``cols``: (start, stop, first index) triples."""
    runs, s0 = [], 0
    for s in range(1, len(cols) + 1):
        if s == len(cols) or cols[s] != cols[s - 1] + 1:
            runs.append((s0, s, cols[s0]))
            s0 = s
    return runs
