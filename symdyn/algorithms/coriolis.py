"""Coriolis matrix (paper 000 Algorithm 1) and O(N) Coriolis products without forming C.

Conventions: spatial vectors are [angular; linear]; everything is computed in body coordinates
with compact transforms (``Xup[i]`` maps parent to body-i coordinates); paper body i is our i-1.
Velocities are the model's generalized speeds ``qd`` (length nv): joint rates for 1-DoF and planar
joints, body angular velocity for spherical joints, body twist [omega; v_O] for floating joints.

With factorization (10) ("christoffel") Algorithm 1 returns the Christoffel-consistent C* for any
open chain with these joints (paper 000 Prop. 2, generalized by paper 001 Sec. VI-B): C* is the
factorization of the Riemannian (Levi-Civita) connection in the model's speeds, linear in qd, with
C*(q, qd) = sum_k Gamma[:, :, k] qd[k] for the generalized Christoffel symbols Gamma of
:func:`symdyn.algorithms.christoffel.christoffel`.
"""
from __future__ import annotations

from ..spatial import (congruence, crf, crfbar, cross_force, cross_motion, factorization_B,
                       inertia_congruence_sym, inertia_rate_rigid, xform_force_T, xform_motion)
from .common import entry, joint_kinematics
from .root_frame import root_inertias, root_kinematics

FACTORIZATIONS = ("christoffel", "simple")
FRAMES = ("body", "root")


def check_factorization(factorization: str) -> None:
    """Raise ValueError unless ``factorization`` names a body-level factorization."""
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"unknown factorization {factorization!r}; choose 'christoffel' "
                         f"(paper 000 eq. (10), gives C*) or 'simple' (eq. (9), (v x*) I)")


def joint_velocities(B, model, q, qd, Xup, S):
    """Body velocities v_i (5) and Phidot_i = (v_i x) Phi_i + Phiring_i (Alg. 1 lines 3-4)."""
    v, Sdot = [None] * model.N, [None] * model.N
    for i, p in enumerate(model.parents):
        vJ = S[i] @ qd[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ          # line 3
        Sdot[i] = cross_motion(B, v[i], S[i])                                 # line 4
        Sring = model.joints[i].Sring(B, q[i], qd[i])
        if Sring is not None:
            Sdot[i] = Sdot[i] + Sring
    return v, Sdot


def blocks_to_matrix(B, model, blocks):
    """nv x nv matrix from {(i, j): block}, writing only the given blocks into zeros (O(#blocks),
    unlike a dense block grid: O(Nd) for Algorithm 1's related pairs)."""
    out = B.zeros(model.nv, model.nv)
    for (i, j), blk in blocks.items():
        (a, b), (c, d) = model.v_idx[i], model.v_idx[j]
        out[a:b, c:d] = blk
    return out


def coriolis_matrix(model, q, qd, factorization: str = "christoffel", *, frame: str = "body",
                    backend: str | None = None):
    """Mass matrix, its time derivative and a Coriolis matrix: paper 000 Algorithm 1, O(Nd).

    Returns ``(M, Mdot, C)``, each nv x nv in the inputs' backend, with ``C(q, qd) qd`` the
    Coriolis/centripetal torques (``rnea(q, qd, 0)`` without gravity) and ``Mdot = C + C^T``.
    ``factorization="christoffel"`` (eq. (10)) gives the Christoffel-consistent C*;
    ``"simple"`` (eq. (9), B = (v x*) I) is admissible but in general not Christoffel-consistent.
    Joints whose motion subspace depends on q (planar) enter through Phidot = v x Phi + Phiring.

    ``frame="body"`` runs Algorithm 1 as printed (body coordinates, three force blocks moved up
    per ancestor; lines 14 and 22 as Mdot = C + C^T, Prop. 1); ``frame="root"`` computes the same matrices with every quantity in the
    coordinates of its tree's root body (:func:`coriolis_matrix_root`, paper 000 footnote 2).
    """
    check_factorization(factorization)
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; choose 'body' (Algorithm 1 as printed) or "
                         "'root' (common root-body coordinates, footnote 2)")
    if frame == "root":
        return coriolis_matrix_root(model, q, qd, factorization, backend=backend)
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    _, I, _ = model.constants(B)
    Xup, S = joint_kinematics(B, model, q)
    N, parents = model.N, model.parents
    v, Sdot = joint_velocities(B, model, q, qd, Xup, S)                       # lines 1-4
    IC = list(I)                                                              # line 5
    # line 6. Eq. (10) is B = 1/2 (Idot + (I v) xbar*) with Idot = (v x*) I - I (v x); both parts
    # sum over a subtree in compact form (Idot^C: 10 numbers, h^C = sum I v: a force), so
    # B^C = 1/2 (Idot^C + (h^C) xbar*) is carried as (IdC, hC) instead of a general 6x6.
    compact = factorization == "christoffel"
    if compact:
        IdC = [inertia_rate_rigid(B, v[i], I[i]) for i in range(N)]
        hC = [I[i] @ v[i] for i in range(N)]
    else:
        BC = [factorization_B(B, v[i], I[i], factorization) for i in range(N)]
    M, Mdot, C = {}, {}, {}
    for j in reversed(range(N)):                                              # line 8
        nj = S[j].shape[1]
        F2 = IC[j] @ S[j]                                                     # line 10
        if compact:  # B^C Phi = 1/2 (Idot^C Phi + Phi x* h^C), (B^C)^T Phi = 1/2 (.. - ..)
            IdS, Sxh = IdC[j] @ S[j], crfbar(B, hC[j]) @ S[j]
            F1 = IC[j] @ Sdot[j] + (IdS + Sxh) / 2                            # line 9
            F3 = (IdS - Sxh) / 2                                              # line 11
        else:
            F1 = IC[j] @ Sdot[j] + BC[j] @ S[j]                               # line 9
            F3 = BC[j].T @ S[j]                                               # line 11
        C[j, j] = S[j].T @ F1                                                 # line 12
        M[j, j] = S[j].T @ F2                                                 # line 13
        Mdot[j, j] = C[j, j] + C[j, j].T                       # line 14 (= C + C^T, Prop. 1)
        F, i = B.hcat([F1, F2, F3]), j                                        # line 15
        while parents[i] >= 0:                                                # line 16
            F = xform_force_T(B, Xup[i], F)                                   # line 17
            i = parents[i]                                                    # line 18
            F1, F2, F3 = B.cols(F, 0, nj), B.cols(F, nj, 2 * nj), B.cols(F, 2 * nj, 3 * nj)
            C[i, j] = S[i].T @ F1                                             # line 19
            C[j, i] = (Sdot[i].T @ F2 + S[i].T @ F3).T                        # line 20
            M[i, j] = S[i].T @ F2                                             # line 21
            M[j, i] = M[i, j].T
            Mdot[i, j] = C[i, j] + C[j, i].T                   # line 22 (= C + C^T, Prop. 1)
            Mdot[j, i] = Mdot[i, j].T
        p = parents[j]
        if p >= 0:
            IC[p] = IC[p] + inertia_congruence_sym(B, Xup[j], IC[j])          # line 24
            if compact:                                                       # line 25
                IdC[p] = IdC[p] + inertia_congruence_sym(B, Xup[j], IdC[j])
                hC[p] = hC[p] + xform_force_T(B, Xup[j], hC[j])
            else:
                BC[p] = BC[p] + congruence(B, Xup[j], BC[j])
    return (blocks_to_matrix(B, model, M), blocks_to_matrix(B, model, Mdot),
            blocks_to_matrix(B, model, C))


def coriolis_matrix_root(model, q, qd, factorization: str = "christoffel", *,
                         backend: str | None = None):
    """Algorithm 1 with every quantity in its tree's root-body coordinates (footnote 2).

    Same results and conventions as :func:`coriolis_matrix`. Composite terms (15)-(16) become
    plain sums over subtrees, and for each related pair (i, j) eqs. (19)-(21) are products of
    the root-coordinate Phi_i, Phidot_i with F1..F3 of body j: no transform in the O(Nd) loop.
    The price is O(N) work up front: each body's pose, Phi, inertia and inertia rate in root
    coordinates (:mod:`symdyn.algorithms.root_frame`). For the Christoffel factorization
    B^C = 1/2 (Idot^C + (h^C) xbar*) is carried as (Idot^C, h^C) (see :func:`coriolis_matrix`),
    so with (f xbar*)^T = -(f xbar*): B^C Phi = 1/2 (Idot^C Phi + Phi x* h^C) and
    (B^C)^T Phi = 1/2 (Idot^C Phi - Phi x* h^C).

    Measured (CasADi SX instructions incl. output writes, body vs root; serial:20 13.5k vs 17.4k,
    binary:20 6.1k vs 10.4k, talos 25.5k vs 28.3k, panda 3.7k vs 4.5k): the pair loop halves, but
    the per-body work (poses, Phi and inertias moved to root coordinates, where they lose the
    sparsity of body coordinates: unit-axis Phi, constant inertias) costs more than it saves at
    these depths, and the compiled code is slower. Code generation therefore uses
    ``frame="body"``; this variant is the footnote-2 formulation and an independent check.
    """
    check_factorization(factorization)
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    X0, S, v, Sdot = root_kinematics(B, model, q, qd)                         # lines 1-4
    N, parents = model.N, model.parents
    IC = root_inertias(B, model, X0)                                          # line 5
    compact = factorization == "christoffel"
    if compact:                                                               # line 6
        IdC = [inertia_rate_rigid(B, v[i], IC[i]) for i in range(N)]
        hC = [IC[i] @ v[i] for i in range(N)]
    else:
        BC = [crf(B, v[i]) @ IC[i] for i in range(N)]
    M, Mdot, C = {}, {}, {}
    for j in reversed(range(N)):                                              # line 8
        F2 = IC[j] @ S[j]                                                     # line 10
        if compact:
            IdS, Sxh = IdC[j] @ S[j], crfbar(B, hC[j]) @ S[j]                 # Phi x* h^C
            F1 = IC[j] @ Sdot[j] + (IdS + Sxh) / 2                            # line 9
            F3 = (IdS - Sxh) / 2                                              # line 11
        else:
            F1 = IC[j] @ Sdot[j] + BC[j] @ S[j]
            F3 = BC[j].T @ S[j]
        i = j
        while i >= 0:                                                         # lines 16-18
            C[i, j] = S[i].T @ F1                                             # lines 12, 19
            M[i, j] = S[i].T @ F2                                             # lines 13, 21
            if i != j:
                C[j, i] = (Sdot[i].T @ F2 + S[i].T @ F3).T                    # line 20
                M[j, i] = M[i, j].T
            Mdot[i, j] = C[i, j] + C[j, i].T                                  # lines 14, 22
            Mdot[j, i] = Mdot[i, j].T
            i = parents[i]
        p = parents[j]
        if p >= 0:                                                            # lines 24-25
            IC[p] = IC[p] + IC[j]
            if compact:
                IdC[p], hC[p] = IdC[p] + IdC[j], hC[p] + hC[j]
            else:
                BC[p] = BC[p] + BC[j]
    return (blocks_to_matrix(B, model, M), blocks_to_matrix(B, model, Mdot),
            blocks_to_matrix(B, model, C))


def _B_times(B, v, I, w, factorization):
    """B(v, I) w without forming B: eq. (10) 1/2 [v x* I w + w x* I v - I (v x w)], or eq. (9)."""
    if factorization == "simple":
        return cross_force(B, v, I @ w)
    return (cross_force(B, v, I @ w) + cross_force(B, w, I @ v) - I @ cross_motion(B, v, w)) / 2


def coriolis_product(model, q, qd, qd_r, factorization: str = "christoffel", *,
                     backend: str | None = None):
    """``C(q, qd) qd_r`` in O(N) without forming C (Niemeyer-Slotine modified RNEA).

    ``qd_r`` is any vector of speeds (e.g. the reference velocity of Slotine-Li control); with the
    default factorization C is the Christoffel-consistent C* of :func:`coriolis_matrix`, and
    ``coriolis_product(q, qd, qd)`` equals ``rnea(q, qd, 0)`` without gravity. Derivation: eq. (14)
    with qdd -> 0 and the velocity factor qd_j -> qd_r,j, i.e. a_r,i = X a_r,p(i) + Phidot_i qd_r,i
    and f_i = I_i a_r,i + B(v_i, I_i) v_r,i with v_r the velocities of qd_r.
    """
    check_factorization(factorization)
    B, (q, qd, qr) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("qd_r", qd_r, "v"),
                           backend=backend)
    _, I, _ = model.constants(B)
    Xup, S = joint_kinematics(B, model, q)
    N, parents = model.N, model.parents
    v, vr, ar, f = [None] * N, [None] * N, [None] * N, [None] * N
    for i, p in enumerate(parents):
        vJ, vrJ = S[i] @ qd[i], S[i] @ qr[i]
        v[i] = vJ if p < 0 else xform_motion(B, Xup[i], v[p]) + vJ            # (5)
        vr[i] = vrJ if p < 0 else xform_motion(B, Xup[i], vr[p]) + vrJ
        ar[i] = cross_motion(B, v[i], vrJ)                                    # Phidot_i qd_r,i
        Sring = model.joints[i].Sring(B, q[i], qd[i])
        if Sring is not None:
            ar[i] = ar[i] + Sring @ qr[i]
        if p >= 0:
            ar[i] = ar[i] + xform_motion(B, Xup[i], ar[p])                    # (12), qdd = 0
        f[i] = I[i] @ ar[i] + _B_times(B, v[i], I[i], vr[i], factorization)
    tau = [None] * N
    for i in reversed(range(N)):
        tau[i] = S[i].T @ f[i]                                                # (13)
        if parents[i] >= 0:
            f[parents[i]] = f[parents[i]] + xform_force_T(B, Xup[i], f[i])
    return B.vcat(tau)


def coriolis_transpose_product(model, q, qd, *, backend: str | None = None):
    """``C(q, qd)^T qd`` in O(N) without forming C (the term of generalized-momentum observers).

    It is the same for every admissible factorization (C^T qd = Mdot qd - C qd), C* included.
    From eq. (30), C^T qd = sum_k J_k^T B_k^T v_k + Jdot_k^T I_k v_k and B(v, I)^T v = 0 for an
    admissible B, so [C^T qd]_j = Phidot_j^T h^C_j with h^C_j = sum_{k in subtree(j)} I_k v_k.
    """
    B, (q, qd) = entry(model, ("q", q, "q"), ("qd", qd, "v"), backend=backend)
    _, I, _ = model.constants(B)
    Xup, S = joint_kinematics(B, model, q)
    v, Sdot = joint_velocities(B, model, q, qd, Xup, S)
    h = [I[i] @ v[i] for i in range(model.N)]
    out = [None] * model.N
    for j in reversed(range(model.N)):
        out[j] = Sdot[j].T @ h[j]
        p = model.parents[j]
        if p >= 0:
            h[p] = h[p] + xform_force_T(B, Xup[j], h[j])
    return B.vcat(out)
