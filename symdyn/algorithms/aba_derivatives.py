"""Partial derivatives of forward dynamics via eq. (5) of paper 003 (FDSVA):

    dqdd/du = -M^-1 dtau/du (u = q, qd) at qdd = aba(q, qd, tau),   dqdd/dtau = M^-1,

with dtau/du from IDSVA (:mod:`.rnea_derivatives`). Three routes to M^-1 and its products:

``"dmm"``: one ABA pass (Featherstone Table 7.1) gives qdd and keeps the kinematics and
articulated-body quantities ``U = IA S`` and ``Dinv``; the ABA-Zero-Algorithm (AZA, paper 003
Sec. IV-E, eq. (34)): ``M^-1 b = ABA(q, 0, b, 0)`` then applies M^-1 to any set of columns b
reusing them (with qd = 0 and no gravity the bias terms vanish, so only the tau-dependent
recursions remain). All columns go through each body step together (6 x m blocks): the same
arithmetic as m column-by-column passes. M^-1 itself is AZA applied to the identity (paper 004,
Sec. V-A); the product with dtau/du is direct matrix multiplication (O(n^3)).

``"aza"`` (:func:`fdsva_ground`): the same eq. (5) and eq. (34) with every quantity in ground
coordinates (ABA included, on IDSVA's velocity part), AZA on one chunk of columns per body, and
IDSVA's pair products (Alg. 1 lines 17-20) folded into AZA's backward recursion instead of formed
(O(N) subtree responses, O(sum depth) backward and O(N n) forward AZA steps). Made of per-body
steps only (:mod:`.steps`), so every backend can run it step by step; about half the graph of
an ABA pass followed by AZA on the 3n columns (CasADi SX, serial_chain(20, seed=1): 85.7k vs
170k instructions).

``"ltdl"`` (:func:`eq5_ltdl`): no ABA pass; M and the bias forces from IDSVA's ground-frame
quantities, the sparse factorization ``M = L^T D L`` (Featherstone Sec. 6.5, no fill-in on a
tree, :mod:`.ltdl`), qdd and M^-1 from its factors and the products through them, so that the
work follows the tree's depth (on a floating-base robot every dof has the base's 6 as ancestors,
not all n); on a free-floating root the q and linear-velocity columns need no product at all.
The smallest graphs for branched trees and robots (g1: 107k SX instructions against DMM's 185k).

``"auto"`` picks AZA from ``AUTO_CROSSOVER[kind]`` degrees of freedom on, else DMM, kind
``"numeric"`` (values: NumPy) or ``"graph"`` (expression graphs: SymPy, SymEngine, CasADi) after
the backend's capability ``B.numeric`` (measured, see below). Generated code chooses for itself
(the smallest graph of "ltdl" and "aza"). ``"dmm"`` and ``"ltdl"`` compute outside steps.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spatial import crm, xform_force_T, xform_motion
from .aba import aba_pass
from .common import entry, external_forces, joint_kinematics, per_body
from .ltdl import (ancestor_lists, dof_parents, ground_dynamics, inverse_from_factors, ltdl,
                   ltdl_solve, minv_apply, unit_lower_inverse, z_matrix)
from .rnea_derivatives import (SEQUENTIAL_COLUMNS, check_joints, forward_accelerations,
                               forward_kinematics, idsva, idsva_backward)
from .steps import step
from ..types import Array, Backend, ExternalForces
from .dispatch import dispatch

if TYPE_CHECKING:
    from ..model import Model

METHODS = ("auto", "dmm", "aza", "ltdl")

# nv from which "auto" uses AZA instead of DMM, per backend (None: always DMM), as measured by
#     python experiments/derivatives_numpy.py          -> reports/derivatives_numpy.md
# NumPy: no crossover up to n = 400: DMM is one BLAS product while AZA loops in Python over bodies
# on 6 x 3n blocks. CasADi SX: AZA has fewer operations and evaluates faster from n = 20 on;
# SymPy/SymEngine expression sizes follow the same operation count.
# "numeric" (B.numeric: NumPy): run time is BLAS vs Python loops; "graph" (SymPy, SymEngine, CasADi):
# the cost is the operation count of the graph.
AUTO_CROSSOVER: dict[str, int | None] = {"numeric": None, "graph": 20}


@dispatch
def aba_derivatives(model: Model, q: Array, qd: Array, tau: Array, f_ext: ExternalForces = None,
                    method: str = "auto", *,
                    backend: str | None = None) -> tuple[Array, Array, Array]:
    """``(dqdd_dq, dqdd_dqd, Minv)``: partial derivatives of ``qdd = aba(model, q, qd, tau, f_ext)``.

    ``Minv = M(q)^-1 = dqdd/dtau``. q-derivatives are in the tangent space (``q (+) delta`` through the
    joints' :meth:`integrate`, Pinocchio's convention), as in :func:`rnea_derivatives`. ``f_ext[i]``
    is an external force [n; f] on body i in body coordinates. ``method`` is ``"dmm"``, ``"aza"``,
    ``"ltdl"`` or ``"auto"`` (see the module docstring).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    B, (q, qd, tau) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"),
                            backend=backend, extra=(f_ext,))
    check_joints(model)
    n = model.nv
    if n == 0:                                  # no moving joint: three 0 x 0 matrices
        return B.zeros(0, 0), B.zeros(0, 0), B.zeros(0, 0)
    f_ext = external_forces(B, model, f_ext)
    Xup, S = joint_kinematics(B, model, q)
    if method == "auto":
        cross = AUTO_CROSSOVER["numeric" if B.numeric else "graph"]
        method = "aza" if cross is not None and n >= cross else "dmm"
    if method == "ltdl":
        return eq5_ltdl(B, model, qd, tau, f_ext, Xup, S)
    if method == "aza":
        return fdsva_ground(B, model, qd, tau, f_ext, Xup, S)
    qdd, U, Dinv = aba_pass(B, model, q, qd, tau, f_ext, Xup, S)
    dtau_dq, dtau_dqd = idsva(B, model, qd, qdd, f_ext, Xup, S)          # eq. (5) at qdd
    Minv = aza(B, model, Xup, S, U, Dinv, B.eye(n))                       # "dmm"
    return -(Minv @ dtau_dq), -(Minv @ dtau_dqd), Minv


def aza(B: Backend, model, Xup, S, U, Dinv, b):
    """ABA-Zero-Algorithm, eq. (34): ``M^-1 b = ABA(q, 0, b, 0)`` for an nv x m matrix ``b``, reusing
    the kinematics ``Xup``, ``S`` and the articulated-body ``U``, ``Dinv`` of one ABA pass."""
    N, parents = model.N, model.parents
    pA, u = [None] * N, [None] * N
    for i in reversed(range(N)):
        p = parents[i]
        bi = B.rows(b, *model.v_idx[i])
        u[i] = bi if pA[i] is None else bi - S[i].T @ pA[i]               # u = tau - S^T pA
        if p >= 0:
            pa = U[i] @ (Dinv[i] @ u[i])                                   # Ia c = 0 (qd = 0)
            if pA[i] is not None:
                pa = pa + pA[i]
            pa = xform_force_T(B, Xup[i], pa)
            pA[p] = pa if pA[p] is None else pA[p] + pa
    a, qdd = [None] * N, [None] * N
    for i, p in enumerate(parents):
        if p < 0:                                                          # a_0 = 0 (no gravity)
            qdd[i] = Dinv[i] @ u[i]
            a[i] = S[i] @ qdd[i]
        else:
            ai = xform_motion(B, Xup[i], a[p])
            qdd[i] = Dinv[i] @ (u[i] - U[i].T @ ai)
            a[i] = ai + S[i] @ qdd[i]
    return B.vcat(qdd)


def fdsva_ground(B: Backend, model, qd, tau, f_ext, Xup, S):
    """Eq. (5) in ground coordinates, made of per-body steps (``method="aza"``): ``(dqdd_dq,
    dqdd_dqd, Minv)``.

    IDSVA's forward pass (paper 003 Alg. 1) is split at qdd: its velocity part (ground frames
    ``X0``, ``S0``, v, I, ...) first; on it the ABA runs in ground coordinates (Featherstone
    Table 7.1 with every quantity in the ground frame: articulated inertias add without
    transforms, ``IA_p += IA - U Dinv U^T``); its last pass gives qdd and with it IDSVA's
    acceleration part; IDSVA's backward pass and AZA then give the products of dtau/du with
    M^-1 (:func:`eq5_aza`).
    """
    consts = model.constants(B)
    N, parents = model.N, model.parents
    X0, S0, v, Sd, Psid, I, BC, cb, pA, V, u, a, Psidd, fC = per_body(N, 14)
    for i, p in enumerate(parents):                                       # IDSVA lines 2-10
        m, c, Ic = consts.inertia_params[i]
        X0[i], S0[i], v[i], Sd[i], Psid[i], I[i], BC[i], cb[i], pA[i] = fdsva_kinematics(
            B, model.joints[i], Xup[i], None if p < 0 else X0[p], S[i],
            None if p < 0 else v[p], m, c, Ic, qd[i], f_ext[i])
    IA, PA = list(I), list(pA)                                            # articulated
    for i in reversed(range(N)):                                          # ABA pass 2
        p = parents[i]
        V[i], u[i], IA_p, pA_p = aba_ground_articulated(
            B, S0[i], IA[i], PA[i], cb[i], tau[i], consts.armature[i],
            None if p < 0 else IA[p], None if p < 0 else PA[p])
        if p >= 0:
            IA[p], PA[p] = IA_p, pA_p
    for i, p in enumerate(parents):                                       # ABA pass 3, IDSVA 4-10
        a[i], Psidd[i], fC[i] = aba_ground_acceleration(
            B, model.joints[i], V[i], u[i], consts.a_grav if p < 0 else a[p], cb[i],
            None if p < 0 else v[p], qd[i], I[i], pA[i])
    return eq5_aza(B, model, qd, Xup, V, S0, Sd, Psid, Psidd, I, BC, fC)


@step
def fdsva_kinematics(B: Backend, joint, Xup, X0_p, S, v_p, m, c, Ic, qd, f_ext):
    """IDSVA's lines 2-10 for body i without qdd (:func:`~.rnea_derivatives.forward_kinematics`):
    X0, S0, v, Sdot, Psidot, I, 2 B, the velocity-product acceleration and the bias force."""
    X0, S0, v, Sd, Psid, I, BC, _, cb, pA = forward_kinematics(B, joint, Xup, X0_p, S, v_p,
                                                               m, c, Ic, qd, f_ext)
    return X0, S0, v, Sd, Psid, I, BC, cb, pA


@step
def aba_ground_articulated(B: Backend, S0, IA, pA, c, tau, armature, IA_p, pA_p):
    """ABA pass 2 for one body in ground coordinates: ``V = [S0; U; U Dinv; Dinv]`` (U = IA S0,
    Dinv = (S0^T U + armature)^-1; one block, the layout the AZA steps read), u = tau - S0^T pA,
    and the parent's articulated inertia and bias force with this body's added (no transform:
    one frame; None at a root)."""
    U = IA @ S0
    D = S0.T @ U
    Dinv = B.inv(D if armature is None else D + armature)                  # + rotor inertia
    UD = U @ Dinv
    V = B.vcat([S0, U, UD, Dinv])
    u = tau - S0.T @ pA
    if IA_p is None:
        return V, u, None, None
    P = UD @ U.T                                                           # symmetric
    Ia = B.matrix([[IA[min(r, k), max(r, k)] - P[min(r, k), max(r, k)] for k in range(6)]
                   for r in range(6)])
    pa = pA + Ia @ c + UD @ u
    return V, u, IA_p + Ia, pA_p + pa


@step
def aba_ground_acceleration(B: Backend, joint, V, u, a_p, c, v_p, qd, I, pA):
    """ABA pass 3 for one body in ground coordinates, then IDSVA's acceleration part: qdd =
    Dinv u - (U Dinv)^T (a_p + c), a = a_p + c + S0 qdd, Psiddot (line 7) and f = I a + pA
    (line 10)."""
    S0, UD, Dinv = B.rows(V, 0, 6), B.rows(V, 12, 18), B.rows(V, 18, V.shape[0])
    ac = a_p + c
    qdd = Dinv @ u - UD.T @ ac
    a = ac + S0 @ qdd
    _, Psidd = forward_accelerations(B, joint, S0, v_p, a_p, qd, qdd)
    return a, Psidd, I @ a + pA


def eq5_aza(B: Backend, model, qd, Xup, V, S0, Sd, Psid, Psidd, IC, BC, fC):
    """``M^-1 [1, -dtau_dq, -dtau_dqd]`` (eq. (5)) by AZA, eq. (34), in ground coordinates (no
    transforms; ``V`` per body from :func:`aba_ground_articulated`), column chunk by column
    chunk, on IDSVA's blocks (paper 003 Alg. 1) without forming dtau/du.

    Chunk k holds body k's columns of the three. Column j of body k of dtau/du is (Alg. 1 lines
    17-20) ``S_i^T f`` on the ancestors i of k, with ``f = t3_k`` (dq) or ``t2_k`` (dqd), and
    ``T_i z`` on k's subtree i, with ``T_i = [t4_i^T t1_i^T]`` and ``z = [Psid_k; Psidd_k]`` or
    ``[S_k; Sd_k + Psid_k]``. Both are folded into AZA's backward recursion: a force ``S^T f``
    on every ancestor is the bias force ``-f`` entering at k's parent; the subtree's part is
    linear in z, ``pA_k = P_k z``, with the 6 x 12 responses ``P`` of every body computed once
    (:func:`aza_subtree`, O(N) instead of one pass per column). So IDSVA's pair products (lines
    17-20) are never formed; a chunk's backward pass visits k's ancestors, its forward pass
    every body (on k's subtree ``w = W_i z``). On a free-floating root the q columns and the
    linear-velocity columns of dqd come in closed form, as in :func:`eq5_ltdl`.
    """
    n, N, idx, parents = model.nv, model.N, model.v_idx, model.parents
    free = _free_roots(B, model)
    IC, BC, fC = list(IC), list(BC), list(fC)
    t, W, Q, P = per_body(N, 4)
    for i in reversed(range(N)):                                          # lines 11-16, 21-23
        p = parents[i]
        t[i], parent = idsva_backward(B, IC[i], BC[i], fC[i], S0[i], Sd[i], Psid[i], Psidd[i],
                                      None if p < 0 else (IC[p], BC[p], fC[p]))
        W[i], Q[i], P_p = aza_subtree(B, V[i], t[i][0], t[i][3], P[i],
                                      None if p < 0 else P[p], p >= 0)
        if p >= 0:
            P[p] = P_p
            IC[p], BC[p], fC[p] = parent
    C = len(idx)
    w: list[list] = [[None] * N for _ in range(C)]
    pA: list[list] = [[None] * N for _ in range(C)]
    Z: list = [None] * C
    splits: list = [None] * C
    for k, p in enumerate(parents):                                       # chunk k at body k
        seq = model.joints[k].type in SEQUENTIAL_COLUMNS
        w[k][k], Z[k], pa = aza_start(B, V[k], W[k], Q[k], S0[k], Sd[k], Psid[k], Psidd[k],
                                      t[k], k in free, seq, p >= 0)
        if p >= 0:
            pA[k][p] = pa
        m = idx[k][1] - idx[k][0]
        widths = (m, 3) if k in free else (m, m, m)
        ends = [sum(widths[:j + 1]) for j in range(len(widths))]
        splits[k] = tuple(zip([0] + ends[:-1], ends))
    for i in reversed(range(N)):                                          # k's ancestors
        p = parents[i]
        for k in range(C):
            if pA[k][i] is not None:
                w[k][i], pa = aza_backward(B, V[i], None, pA[k][i],
                                           None if p < 0 else pA[k][p], p >= 0)
                if p >= 0:
                    pA[k][p] = pa
    R: list[list] = [[None] * N for _ in range(C)]
    a: list[list] = [[None] * N for _ in range(C)]
    leaf = [not kids for kids in model.children]
    below = [set(model.subtree[k][1:]) for k in range(C)]
    for i, p in enumerate(parents):                                       # a_0 = 0 (no gravity)
        for k in range(C):
            a_p = a[k][p] if p >= 0 else None
            if i in below[k]:           # k's subtree: dtau's columns (M^-1's are symmetric)
                m, width = splits[k][0][1], splits[k][-1][1]
                if p == k:
                    a_p = B.cols(a[k][k], m, width)
                R[k][i], a[k][i] = aza_forward_subtree(
                    B, V[i], W[i], Z[k], a_p, tuple((s0 - m, s1 - m) for s0, s1 in splits[k][1:]),
                    not leaf[i])
                R[k][i] = (None,) + R[k][i]
            elif a_p is not None or w[k][i] is not None:
                R[k][i], a[k][i] = aza_forward(B, V[i], w[k][i], a_p, splits[k], not leaf[i])
    a_grav = model.constants(B).a_grav

    def column(k, part, width):
        return B.vcat([B.zeros(r1 - r0, width) if R[k][i] is None else
                       R[i][k][0].T if part == 0 and i in below[k] else R[k][i][part]
                       for i, (r0, r1) in enumerate(idx)])

    Minv, dq, dqd = [], [], []
    for k, (c0, c1) in enumerate(idx):
        Minv.append(column(k, 0, c1 - c0))
        if k in free:
            Fq, Fv = free_root_columns(B, Xup[k], a_grav, qd[k])
            dq.append(_rows_at(B, n, c0, Fq))
            dqd += [column(k, 1, 3), _rows_at(B, n, c0, Fv)]
        else:
            dq.append(column(k, 1, c1 - c0))
            dqd.append(column(k, 2, c1 - c0))
    return B.hcat(dq), B.hcat(dqd), B.hcat(Minv)


def _free_roots(B: Backend, model) -> set[int]:
    """Roots with a floating joint and no armature (the closed-form columns of eq. (5))."""
    arm = model.constants(B).armature
    return {i for i, p in enumerate(model.parents)
            if p < 0 and model.joints[i].type == "floating" and arm[i] is None}


def _sub(x, y):
    """x - y with None for zero."""
    return x if y is None else -y if x is None else x - y


def _add(x, y):
    return x if y is None else y if x is None else x + y


@step
def aza_subtree(B: Backend, V, t1, t4, P, P_p, has_parent):
    """The AZA backward response of body i's subtree to IDSVA's subtree rows ``T z`` (``T_j =
    [t4_j^T t1_j^T]``, z any 12-vector): ``pA_i = P_i z`` from the children (P None at a leaf),
    ``w_i = W z`` with ``W = Dinv (T_i - S^T P_i)``, the contribution ``Q z`` to the parent with
    ``Q = P_i + U W``, and the parent's ``P_p + Q``."""
    S0, U, Dinv = B.rows(V, 0, 6), B.rows(V, 6, 12), B.rows(V, 18, V.shape[0])
    T = B.hcat([t4.T, t1.T])
    Wi = Dinv @ _sub(T, None if P is None else S0.T @ P)
    Qi = _add(P, U @ Wi)
    return Wi, Qi, (_add(P_p, Qi) if has_parent else None)


@step
def aza_start(B: Backend, V, W, Q, S0, Sd, Psid, Psidd, t, free, seq, has_parent):
    """Chunk k at body k: ``w_k`` of ``b = [1, -dtau_dq, -dtau_dqd]`` (k's columns) from k's
    subtree response (``W``, ``Q``: :func:`aza_subtree`) and ``z``; the 12-row ``Z = [z_q z_v]``
    the subtree's forward steps use; and (with a parent) ``pA`` at the parent, where the
    ancestors' rows ``S^T t3_k``, ``S^T t2_k`` enter as the bias force ``-f``. ``free``: a
    free-floating root (identity and the 3 angular dqd columns only); ``seq``: a planar joint,
    whose earlier columns are ancestors of its later ones (the strict upper triangle of its own
    block is ``S^T t3``, ``S^T t2`` instead of ``T z``)."""
    U, Dinv = B.rows(V, 6, 12), B.rows(V, 18, V.shape[0])
    t1, t2, t3, t4 = t
    zq, zv = B.vcat([Psid, Psidd]), B.vcat([S0, Sd + Psid])
    fs = [t3, t2]
    if free:
        zq, zv, fs = None, B.cols(zv, 0, 3), [B.cols(t2, 0, 3)]
    Z = zv if zq is None else B.hcat([zq, zv])
    F = fs[0] if len(fs) == 1 else B.hcat(fs)
    Cw, Cp = W @ Z, Q @ Z                                                 # subtree rows: T z
    if seq:                                                               # own earlier columns
        m = S0.shape[1]
        Tz = B.hcat([t4.T, t1.T]) @ Z
        Cs = [S0.T @ f - B.cols(Tz, j * m, j * m + m) for j, f in enumerate(fs)]
        Cs = B.hcat([B.matrix([[Ck[r, c] if r < c else 0 for c in range(m)]
                               for r in range(m)]) for Ck in Cs])
        Cw, Cp = Cw + Dinv @ Cs, Cp + U @ (Dinv @ Cs)
    w = B.hcat([Dinv, -Cw])
    pA = B.hcat([U @ Dinv, F - Cp]) if has_parent else None
    return w, Z, pA


@step
def aza_backward(B: Backend, V, b, pA, pA_p, has_parent):
    """Eq. (34) backward for one body on one chunk: ``w = Dinv (b - S0^T pA)`` and (with a
    parent) the parent's ``pA_p + pA + U w`` (``V``: see :func:`aba_ground_articulated`; b, pA,
    pA_p None: zero)."""
    S0, U, Dinv = B.rows(V, 0, 6), B.rows(V, 6, 12), B.rows(V, 18, V.shape[0])
    w = Dinv @ _sub(b, None if pA is None else S0.T @ pA)
    return w, (_add(pA_p, _add(pA, U @ w)) if has_parent else None)


@step
def aza_forward(B: Backend, V, w, a_p, splits, need_a):
    """Eq. (34) forward for one body on one chunk: ``qdd = w - UD^T a_p``, returned as the
    column blocks ``splits``, and (``need_a``: it has children) ``a = a_p + S0 qdd`` (``V``:
    see :func:`aba_ground_articulated`; w, a_p None: zero)."""
    S0, UD = B.rows(V, 0, 6), B.rows(V, 12, 18)
    x = _sub(w, None if a_p is None else UD.T @ a_p)
    return tuple(B.cols(x, s0, s1) for s0, s1 in splits), (_add(a_p, S0 @ x) if need_a else None)


@step
def aza_forward_subtree(B: Backend, V, W, Z, a_p, splits, need_a):
    """:func:`aza_forward` on a body i of chunk k's subtree for dtau's columns only, where
    ``w_i = -W_i Z_k`` (:func:`aza_subtree`, :func:`aza_start`; M^-1's rows there are the
    transposes of rows k of the chunks of k's subtree)."""
    S0, UD = B.rows(V, 0, 6), B.rows(V, 12, 18)
    x = -(W @ Z) - UD.T @ a_p
    return tuple(B.cols(x, s0, s1) for s0, s1 in splits), (a_p + S0 @ x if need_a else None)


@step
def free_root_columns(B: Backend, Xup, a_grav, qd):
    """A free-floating root's rows of dqdd/dq_r, ``-crm(X_r a_grav)``, and of its linear-velocity
    columns of dqdd/dqd, ``-crm(v_r)[:, 3:6]`` (all other rows are zero; see :func:`eq5_ltdl`)."""
    return -crm(B, xform_motion(B, Xup, a_grav)), -B.cols(crm(B, qd), 3, 6)


def eq5_ltdl(B: Backend, model, qd, tau, f_ext, Xup, S):
    """Eq. (5) through the sparse LTDL factors of M (:mod:`.ltdl`), without an ABA pass.

    M and the bias forces h from IDSVA's ground-frame quantities, ``M = L^T D L`` (Table 6.3),
    ``qdd = M^-1 (tau - h)`` by two sparse triangular solves, ``M^-1 = Z D^-1 Z^T`` with
    ``Z = L^-1``, IDSVA at qdd, then ``dqdd/du = -M^-1 dtau/du`` column by column through the
    factors: column c of dtau/du is nonzero only on the ancestors and descendants of dof c, and
    ``L^-T`` keeps it there, so only ``Z`` fills it in.

    A free-floating root r (no armature) needs no product on some columns: tau depends on q_r only
    through the apparent gravity ``w = X_r a_grav`` of the root (f_ext acts in body coordinates),
    which enters like the root acceleration, so ``dtau/dq_r = M[:, r] crm(w)`` and
    ``dqdd/dq_r = -M^-1 M[:, r] crm(w) = -[crm(w); 0]``; and a uniform translation of the whole
    system (Galilean invariance) adds ``-omega_r x delta`` to the root's spatial acceleration and
    changes nothing else: on the root's linear-velocity columns ``dqdd/dqd = -[crm(v_r)[:, 3:6]; 0]``.
    """
    n = model.nv
    lam = dof_parents(model)
    anc = ancestor_lists(lam)
    H, h = ground_dynamics(B, model, qd, f_ext, Xup, S)
    Dinv = ltdl(H, lam)                                                   # M = L^T D L
    tau_v = B.vcat(tau)
    qdd_v = B.vector(ltdl_solve(H, anc, Dinv, [tau_v[k] - h[k] for k in range(n)]))
    qdd = [B.rows(qdd_v, a, b) for a, b in model.v_idx]
    Z = unit_lower_inverse(H, anc)                                        # Z = L^-1
    Minv = B.matrix(inverse_from_factors(Z, anc, Dinv))
    dtau_dq, dtau_dqd = idsva(B, model, qd, qdd, f_ext, Xup, S)           # eq. (5) at qdd
    neg_Dinv, Zm = [-d for d in Dinv], z_matrix(B, Z)

    def minus_minv(X, c0, c1):                                            # -M^-1 X[:, c0:c1]
        return minv_apply(B, H, anc, Zm, neg_Dinv, B.cols(X, c0, c1))

    a_grav, arm = model.constants(B).a_grav, model.constants(B).armature
    dq_cols, dqd_cols, c = [], [], 0                                      # column blocks, in order
    for i, p in enumerate(model.parents):
        if p >= 0 or model.joints[i].type != "floating" or arm[i] is not None:
            continue                                                      # not a free root
        a0, a1 = model.v_idx[i]
        if c < a0:
            dq_cols.append(minus_minv(dtau_dq, c, a0))
            dqd_cols.append(minus_minv(dtau_dqd, c, a0))
        dq_cols.append(_rows_at(B, n, a0, -crm(B, xform_motion(B, Xup[i], a_grav))))
        dqd_cols.append(minus_minv(dtau_dqd, a0, a0 + 3))                 # angular columns
        dqd_cols.append(_rows_at(B, n, a0, -B.cols(crm(B, qd[i]), 3, 6)))  # linear (v_r = qd_r)
        c = a1
    if c < n:
        dq_cols.append(minus_minv(dtau_dq, c, n))
        dqd_cols.append(minus_minv(dtau_dqd, c, n))
    return B.hcat(dq_cols), B.hcat(dqd_cols), Minv


def _rows_at(B: Backend, n, a0, X):
    """The n-row matrix holding X in rows a0.. and zeros elsewhere."""
    a1 = a0 + X.shape[0]
    parts = ([B.zeros(a0, X.shape[1])] if a0 else []) + [X] + \
        ([B.zeros(n - a1, X.shape[1])] if a1 < n else [])
    return B.vcat(parts)
