"""Generalized Christoffel symbols over a cluster tree in tensor form (paper 001 Sec. VI-C,
the cluster analogue of paper 000 Algorithm 2; derivation in ``docs/cluster_christoffel.rst``).

``Gamma[:, :, k] = dCbar/dy_k`` (Cbar is linear in the minimal speeds y). For a speed k of
cluster K, differentiating Algorithm 1 over the clusters needs only

(a) the twists ``dV/dy_k``: body beta of K moves with column k of S_K (rows of beta), every body
    of a cluster L below K moves rigidly with its attachment, ``X_{beta<-a} dv_a/dy_k``;
(b) ``dSdot_L/dy_k``: for L below K the cluster is rigid, G_L is constant and
    ``dSdot_L/dy_k = (dv_beta/dy_k) x S_L`` (the ``phi_k x`` terms of Alg. 2); for L = K the
    derivative of the local loop solution's rate, ``(dJdot_K/dy_k) G_K + J_K (dGdot_K/dy_k)`` with
    ``dGdot_K/dy_k = -K_d^-1 (dKdot/dy_k) G_K`` (one factorization of K_d for all speeds of K);
(c) ``dB^C_beta/dy_k = B(dv_beta/dy_k, I^C_beta)`` by linearity and covariance of eq. (10):
    for every body that moves (K's bodies and those below), one B from the composite inertia
    instead of accumulating body B's up the subtree; the ancestors of K carry the congruences
    of K's composites only.

Shared between all speeds: transforms, S_K, G_K, J_K, composite inertias I^C (configuration
sweep) and the force blocks ``I^C S`` moved to every ancestor (the Mbar sweep). Shared between
the speeds of one cluster: the K_d solve and the local Jacobian rates. Per speed: the velocity
part of Algorithm 1 lines 9-20 for the columns of K and its ancestors only, written straight
into the nonzero blocks of Gamma; the columns of clusters below K come from
``Gamma[i, j, k] = Gamma[i, k, j]`` (j, k in different clusters: their speed fields act on
disjoint coordinates and commute), so the units below K only move ``F3 = (B^C)^T S`` up and (b)
for them is never evaluated. Not done: Algorithm 2's D-operator rows for the deepest speed,
so the cost is still O(|subtree(K)| depth) blocks per speed (docs/cluster_christoffel.rst).

Generic over the backends (no NumPy/SymPy/CasADi imports).
"""
from __future__ import annotations

from ..spatial import (composite_B, composite_B_add, composite_B_congruence,
                       composite_B_products, xform_force_T, xform_motion)


def _own_rates(ct, B, P, K):
    """Per speed r of cluster K (its attachment at rest): body twists ``dv_beta/dy_r`` and
    ``dSdot_K/dy_r`` (rows of each body), with one solve with K_d for all speeds of K."""
    G, nK = P.G[K], len(ct.clusters[K].y)
    vs, Jds, KdGs = [], [], []
    for r in range(nK):
        e = B.vector([1 if t == r else 0 for t in range(nK)])
        v, Jd, KdG = ct._local_rates(B, P, K, e if G is None else G @ e)
        vs.append(v)
        Jds.append(Jd)
        KdGs.append(KdG)
    if G is None:
        return vs, Jds
    Dd = -B.solve(P.Kd[K][0], B.hcat(KdGs))               # dGdot_d/dy_r for all r, one solve
    return vs, [ct._sdot(B, P, K, Jds[r], B.cols(Dd, r * nK, (r + 1) * nK))[1]
                for r in range(nK)]


def christoffel_tensor(ct, q, *, backend: str | None = None):
    """Generalized Christoffel symbols of a :class:`~.clusters.ClusterTree` in the minimal
    speeds, ``Gamma[:, :, k] = Cbar(q, e_k)``, by the tensor form over the clusters (module
    docstring). Storage as :func:`symdyn.algorithms.christoffel.christoffel`."""
    B, qs, _ = ct._entry(q, backend=backend)
    P = ct._positions(B, qs)
    IC = ct._composite_inertias(B, P)
    cls, cof = ct.clusters, ct.cluster_of
    n = ct.ny
    Gam = B.tensor3(n, n, n)
    below = ct._subtrees()
    # configuration-only: F2 = I^C S_J of every unit, moved to each attachment body above it
    F2up: list[dict] = [dict() for _ in cls]
    for J, cl in enumerate(cls):
        i, F = cl.attach, None
        for b in cl.bodies:
            Fb = xform_force_T(B, P.Xa[b], IC[b] @ P.SK[b]) if i >= 0 else None
            F = Fb if F is None else F + Fb
        while i >= 0:
            F2up[J][i] = F
            nxt = cls[cof[i]].attach
            if nxt >= 0:
                F = xform_force_T(B, P.Xa[i], F)
            i = nxt

    def put(Gam, L, J, k, blk, fill):
        """Gamma[y_L, y_J, k] = blk; ``fill``: J is another cluster than k's, so also
        Gamma[y_L, k, y_J] (speed fields of different clusters commute)."""
        for r, a in enumerate(cls[L].y):
            for s, c in enumerate(cls[J].y):
                Gam = B.set3(Gam, a, c, k, blk[r, s])
                if fill:
                    Gam = B.set3(Gam, a, k, c, blk[r, s])
        return Gam

    for K, clK in enumerate(cls):
        ups, L = [], clK.parent
        while L >= 0:
            ups.append(L)
            L = cls[L].parent
        dv, dSd = _own_rates(ct, B, P, K)
        moving = sorted(below[K])
        strict = below[K] - {K}
        for r, k in enumerate(clK.y):
            v, Sd, BC = {}, {}, {}
            for J in moving:                                           # (a), (b), (c)
                for b in cls[J].bodies:
                    if J == K:
                        v[b], Sd[b] = dv[r][b], dSd[r][b]
                    else:   # (R3) enters only columns of clusters below K: filled by symmetry
                        v[b] = xform_motion(B, P.Xa[b], v[cls[J].attach])
                    BC[b] = composite_B(B, v[b], IC[b])
            a, src = clK.attach, clK.bodies                            # B^C of the ancestors
            while a >= 0:
                ups_b = [composite_B_congruence(B, P.Xa[b], BC[b]) for b in src]
                acc = ups_b[0]
                for up in ups_b[1:]:
                    acc = composite_B_add(B, acc, up)
                BC[a], src, a = acc, (a,), cls[cof[a]].attach
            # Algorithm 1 lines 9-20 (velocity part) over the moving subtree and the ancestors;
            # only the columns of K and its ancestors, the others by Gamma_ijk = Gamma_ikj
            for J in list(reversed(moving)) + ups:
                clJ = cls[J]
                nJ = len(clJ.y)
                sub = J in strict
                i, F, CJJ = clJ.attach, None, None
                for b in clJ.bodies:
                    if b not in BC:                                    # at rest, nothing below
                        continue
                    BS, BtS = composite_B_products(B, BC[b], P.SK[b])
                    if sub:                                            # only F3 is needed
                        Fb = xform_force_T(B, P.Xa[b], BtS)
                        F = Fb if F is None else F + Fb
                        continue
                    F1 = BS if b not in Sd else IC[b] @ Sd[b] + BS
                    c = P.SK[b].T @ F1
                    CJJ = c if CJJ is None else CJJ + c
                    if i >= 0:
                        Fb = xform_force_T(B, P.Xa[b], B.hcat([F1, BtS]))
                        F = Fb if F is None else F + Fb
                if sub:
                    while i >= 0:
                        L = cof[i]
                        if L not in strict:                            # L = K or an ancestor
                            CJL = P.SK[i].T @ F
                            if L == K:
                                CJL = CJL + Sd[i].T @ F2up[J][i]
                            Gam = put(Gam, J, L, k, CJL.T, L != K)
                        nxt = cls[L].attach
                        if nxt >= 0:
                            F = xform_force_T(B, P.Xa[i], F)
                        i = nxt
                    continue
                if CJJ is None:
                    continue
                Gam = put(Gam, J, J, k, CJJ, J != K)
                while i >= 0:
                    L = cof[i]
                    F1, F3 = B.cols(F, 0, nJ), B.cols(F, nJ, 2 * nJ)
                    Gam = put(Gam, L, J, k, P.SK[i].T @ F1, J != K)
                    CJL = P.SK[i].T @ F3                               # L above K: at rest
                    Gam = put(Gam, J, L, k, CJL.T, True)
                    nxt = cls[L].attach
                    if nxt >= 0:
                        F = xform_force_T(B, P.Xa[i], F)
                    i = nxt
    return Gam
