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
from .common import entry, external_forces, joint_kinematics, per_body
from .steps import step
from ..types import Array, Backend, ExternalForces
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

# joints whose columns are applied one after the other (product of exponentials in column order)
SEQUENTIAL_COLUMNS = ("planar",)


@dispatch
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
        if not j.S_constant and j.type not in SEQUENTIAL_COLUMNS:
            raise ValueError(
                f"IDSVA: joint {j!r} of body {model.names[i]!r} has a motion subspace that varies in "
                "body coordinates; only the planar joint is supported among such joints")


def crfbar_mul(B: Backend, f, M):
    """(f xbar*) M for a force vector f and a 6xk matrix M of motion vectors, with 3x3 blocks."""
    n, g = skew(B, B.rows(f, 0, 3)), skew(B, B.rows(f, 3, 6))
    m0, m1 = B.rows(M, 0, 3), B.rows(M, 3, 6)
    return -B.vcat([n @ m0 + g @ m1, g @ m0])


def ground_inertia(B: Backend, X0, m, c, Ic):
    """X0^T I X0 for the rigid-body inertia (m, c, Ic) and X0 = (E, r) (ground -> body): mass m at
    c0 = r + E^T c with rotational inertia E^T Ic E (fewer operations than a 6x6 congruence)."""
    return mcI(B, m, X0.r + X0.E.T @ c, X0.E.T @ Ic @ X0.E)


def twice_B(B: Backend, v, I, h):
    """2 B(v, I) of eq. (28) for a symmetric inertia I and h = I v, without 6x6 products:
    (v x*) I - I (v x) = X + X^T with X = (v x*) I, plus (I v) xbar* = [[-n x, -f x], [-f x, 0]]."""
    X = cross_force(B, v, I)
    n, f = skew(B, B.rows(h, 0, 3)), skew(B, B.rows(h, 3, 6))
    return X + X.T - B.vcat([B.hcat([n, f]), B.hcat([f, B.zeros(3, 3)])])


def idsva(B: Backend, model, qd, qdd, f_ext, Xup, S, *, ground: bool = False):
    """Algorithm 1 of paper 003 on per-body segments ``qd``, ``qdd``, forces ``f_ext`` (body
    coordinates, None entries allowed) and joint kinematics ``Xup``, ``S`` already in backend B.
    Returns ``(dtau_dq, dtau_dqd)``, with ``ground=True`` also the per-body ground transforms
    ``X0`` and motion subspaces ``S0`` of the forward pass.

    Lines 17-20 are products of body i's columns with the stacked blocks t1..t4 of its subtree
    nu(i). Numeric backends stack the whole subtree (a few large products, as in the paper);
    the others take one body j of nu(i) at a time (the same scalar operations), so that each
    block is one step (:mod:`.steps`)."""
    check_joints(model)
    consts = model.constants(B)
    inertia = consts.inertia_params  # per body (m, c, Ic)
    N, parents = model.N, model.parents
    X0, S0, v, a, Sd, Psid, Psidd, IC, BC, fC = per_body(N, 10)  # BC holds 2 B^C (line 9)
    for i, p in enumerate(parents):                                       # line 1: v0 = 0, a0 = -ag
        m, c, Ic = inertia[i]
        (X0[i], S0[i], v[i], a[i], Sd[i], Psid[i], Psidd[i], IC[i], BC[i],
         fC[i]) = idsva_forward(B, model.joints[i], Xup[i], None if p < 0 else X0[p], S[i],
                                None if p < 0 else v[p], consts.a_grav if p < 0 else a[p],
                                m, c, Ic, qd[i], qdd[i], f_ext[i])
    dtau_dq, dtau_dqd = idsva_backward_pass(B, model, S0, Sd, Psid, Psidd, IC, BC, fC)
    if ground:
        return dtau_dq, dtau_dqd, X0, S0
    return dtau_dq, dtau_dqd


def idsva_backward_pass(B: Backend, model, S0, Sd, Psid, Psidd, IC, BC, fC):
    """Lines 11-23 of Algorithm 1 from the per-body ground-frame quantities of the forward pass
    (``IC``, ``BC``, ``fC``: each body's own I, 2 B and f; the lists are accumulated in place):
    ``(dtau_dq, dtau_dqd)``."""
    N, parents, nv = model.N, model.parents, model.nv
    t: list[Any] = [None] * N
    dtau_dq, dtau_dqd = B.zeros(nv, nv), B.zeros(nv, nv)
    for i in reversed(range(N)):
        a0, a1 = model.v_idx[i]
        p = parents[i]
        t[i], parent = idsva_backward(B, IC[i], BC[i], fC[i], S0[i], Sd[i], Psid[i], Psidd[i],
                                      None if p < 0 else (IC[p], BC[p], fC[p]))  # 13-16, 21-23
        if p >= 0:
            IC[p], BC[p], fC[p] = parent
        groups = [model.subtree[i]] if B.numeric else [(j,) for j in model.subtree[i]]
        for g in groups:                                                  # nu(i), i first
            tg = t[g[0]] if len(g) == 1 else [B.hcat([t[j][k] for j in g]) for k in range(4)]
            Uq, Uqd, Lq, Lqd = idsva_block(B, S0[i], Sd[i], Psid[i], Psidd[i], *tg)
            cols = [k for j in g for k in range(*model.v_idx[j])]
            own = a1 - a0 if g[0] == i else 0                             # i's own columns
            for s0, s1, c0 in _runs(cols):
                rs, cs = slice(c0, c0 + s1 - s0), slice(a0, a1)
                dtau_dq = B.assign(dtau_dq, rs, cs, B.rows(Lq, s0, s1))   # line 19
                dtau_dqd = B.assign(dtau_dqd, rs, cs, B.rows(Lqd, s0, s1))  # line 20
                u0 = max(s0, own)
                if s1 > u0:                                               # nu-bar(i)
                    rs, cs = slice(a0, a1), slice(cols[u0], cols[u0] + s1 - u0)
                    dtau_dq = B.assign(dtau_dq, rs, cs, B.cols(Uq, u0, s1))    # line 17
                    dtau_dqd = B.assign(dtau_dqd, rs, cs, B.cols(Uqd, u0, s1))  # line 18
            if own and model.joints[i].type in SEQUENTIAL_COLUMNS:  # earlier column = ancestor
                for r in range(own):
                    for c in range(r + 1, own):
                        dtau_dq = B.assign(dtau_dq, a0 + r, a0 + c, Uq[r, c])
                        dtau_dqd = B.assign(dtau_dqd, a0 + r, a0 + c, Uqd[r, c])
    return dtau_dq, dtau_dqd


def _segments(joint):
    """Column ranges of a joint applied one after the other: one, or one per column of a
    planar joint (virtual bodies, see the module docstring)."""
    nvi = joint.nv
    return [(c0, c0 + 1) for c0 in range(nvi)] if joint.type in SEQUENTIAL_COLUMNS \
        else [(0, nvi)]


def forward_kinematics(B: Backend, joint, Xup, X0_p, S, v_p, m, c, Ic, qd, f_ext):
    """The velocity part of lines 2-10 for body i (ground coordinates, ``X0_p``/``v_p`` None at
    the root): X0, S0, v, Sdot, Psidot, I, 2 B, h = I v, and for forward dynamics the
    velocity-product acceleration ``cb`` (a = a_p + S0 qdd + cb) and bias force
    ``pA = v x* h - X0^T f_ext``."""
    X0 = Xup if X0_p is None else compose(B, Xup, X0_p)
    S0 = xform_motion_inv(B, X0, S)                                       # S_i in ground coordinates
    vl = B.zeros(6) if v_p is None else v_p
    sd, psid, cb = [], [], None
    for c0, c1 in _segments(joint):
        Sk = B.cols(S0, c0, c1)
        vJ = Sk @ B.rows(qd, c0, c1)
        psid.append(cross_motion(B, vl, Sk))                              # line 6
        vl = vl + vJ                                                      # line 3
        ck = cross_motion(B, vl, vJ)                                      # line 4 (qdd part aside)
        cb = ck if cb is None else cb + ck
        sd.append(cross_motion(B, vl, Sk))                                # line 5
    Sd, Psid = (x[0] if len(x) == 1 else B.hcat(x) for x in (sd, psid))
    I = ground_inertia(B, X0, m, c, Ic)                                   # line 8
    h = I @ vl
    BC = twice_B(B, vl, I, h)                                             # line 9 (x 2), eq. (28)
    pA = cross_force(B, vl, h)
    if f_ext is not None:
        pA = pA - xform_force_T(B, X0, f_ext)
    return X0, S0, vl, Sd, Psid, I, BC, h, cb, pA


def forward_accelerations(B: Backend, joint, S0, v_p, a_p, qd, qdd):
    """The acceleration part of lines 2-7 for body i: its acceleration a (line 4) and Psiddot
    (line 7), column segment by column segment."""
    vl = B.zeros(6) if v_p is None else v_p
    al, psidd = a_p, []
    for c0, c1 in _segments(joint):
        Sk = B.cols(S0, c0, c1)
        vJ = Sk @ B.rows(qd, c0, c1)
        Psid_k = cross_motion(B, vl, Sk)                                  # line 6
        psidd.append(cross_motion(B, al, Sk) + cross_motion(B, vl, Psid_k))   # line 7
        vl = vl + vJ                                                      # line 3
        al = al + Sk @ B.rows(qdd, c0, c1) + cross_motion(B, vl, vJ)      # line 4
    return al, (psidd[0] if len(psidd) == 1 else B.hcat(psidd))


@step
def idsva_forward(B: Backend, joint, Xup, X0_p, S, v_p, a_p, m, c, Ic, qd, qdd, f_ext):
    """Lines 2-10 for body i, in ground coordinates (``X0_p``/``v_p`` None at the root, ``a_p``
    the parent's acceleration or a_grav): X0, S0, v, a, Sdot, Psidot, Psiddot, I, 2 B, f."""
    X0, S0, vl, Sd, Psid, I, BC, h, _, _ = forward_kinematics(B, joint, Xup, X0_p, S, v_p,
                                                              m, c, Ic, qd, None)
    al, Psidd = forward_accelerations(B, joint, S0, v_p, a_p, qd, qdd)
    f = I @ al + cross_force(B, vl, h)                                    # line 10
    if f_ext is not None:
        f = f - xform_force_T(B, X0, f_ext)
    return X0, S0, vl, al, Sd, Psid, Psidd, I, BC, f


@step
def idsva_backward(B: Backend, IC, BC, fC, S0, Sd, Psid, Psidd, parent):
    """Lines 13-16 for body i: its blocks (t1, t2, t3, t4) of the subtree stacks; and lines
    21-23: ``parent`` = the composite (I, 2 B, f) of i's parent so far (None at a root) with
    i's added (None at a root)."""
    t1 = IC @ S0                                                          # line 13
    t2 = BC @ S0 + IC @ (Sd + Psid)                                       # line 14
    t3 = BC @ Psid + IC @ Psidd + crfbar_mul(B, fC, S0)                   # line 15
    t4 = BC.T @ S0                                                        # line 16
    if parent is None:
        return (t1, t2, t3, t4), None
    IC_p, BC_p, fC_p = parent
    return (t1, t2, t3, t4), (IC_p + IC, BC_p + BC, fC_p + fC)          # lines 21-23


@step
def idsva_block(B: Backend, S0, Sd, Psid, Psidd, t1, t2, t3, t4):
    """Lines 17-20 for the bodies j of nu(i) stacked in t1..t4: S_i^T t3, S_i^T t2 (row i) and
    t4^T Psidot_i + t1^T Psiddot_i, t4^T S_i + t1^T (Sdot_i + Psidot_i) (column i)."""
    St = S0.T
    return (St @ t3, St @ t2, t4.T @ Psid + t1.T @ Psidd,
            t4.T @ S0 + t1.T @ (Sd + Psid))


def _runs(cols):
    """Maximal runs of consecutive indices in ``cols``: (start, stop, first index) triples."""
    runs, s0 = [], 0
    for s in range(1, len(cols) + 1):
        if s == len(cols) or cols[s] != cols[s - 1] + 1:
            runs.append((s0, s, cols[s0]))
            s0 = s
    return runs
