"""Cluster-tree method for local kinematic loops (paper 001 Secs. VI-C2/3).

The bodies of each local loop are grouped into a *cluster*; the clusters form a tree, and a
cluster moves like one multi-body "joint": with its minimal speeds ``y_K``,

    V_K = X_K v_a + S_K(q_K) y_K,     S_K = J_K G_K,

where ``V_K`` stacks the twists of the cluster's bodies (each in its own body coordinates,
[angular; linear]), ``a`` is the one body the cluster hangs from (its *attachment*, a body of the
parent cluster, or the world), ``X_K`` stacks the transforms ``a -> beta`` for the cluster's bodies
beta, ``J_K`` stacks the body Jacobians of the cluster's spanning-tree joints (relative to ``a``)
and ``qd_K = G_K y_K`` is the cluster's local loop solution (``K_K G_K = 0``). Loops are local when
every closure of a cluster ties two of its bodies or one of its bodies and the attachment (true
by construction, :class:`ClusterTree`): then ``G_K`` depends on the cluster's own coordinates
only, and G of the whole mechanism is block diagonal in the clusters.

Algorithm 1 over clusters. With the body twists as maximal speeds, ``M_max`` and the
Christoffel-consistent ``C_max`` (eq. (10) per body) are block diagonal, and ``V = J y`` with
J's cluster blocks ``X_{K<-L} S_L`` (paper 001's cluster velocity relations). The derivation of
paper 000 Algorithm 1 then carries over with per-cluster quantities (paper 001 eqs. (22), (23)):
``S_K`` for Phi, its coordinate-free rate ``Sdot_K = Jdot_K G_K + J_K Gdot_K`` for Phidot (stacked
blocks ``X_{beta<-c} Phidot_c`` of the spanning-tree joints c inside the cluster), and the
composite inertia / B^C of the cluster's subtree. Because each child cluster hangs from ONE body,
the composites are block diagonal: body beta of cluster K carries I^C_beta (its own inertia plus
the subtrees of the clusters hanging from it), so the sweep is the body algorithm with (i) sums
over the cluster's bodies where a joint has one body, and (ii) force blocks that move from a
cluster straight to its attachment body (``sum_beta X_{beta<-a}^T F_beta``) and from there up
through the attachments. The result is the induced Christoffel-consistent
``Cbar = G^T C* G + G^T M Gdot`` (paper 001 eq. (17)) without forming the spanning tree's C*,
in O(N_c d_c) cluster blocks.

Generalized Christoffel symbols: ``Gamma[:, :, k] = Cbar(q, e_k)`` (Cbar is linear in y), with the
configuration-dependent part of the sweep (transforms, S_K, G_K, composite inertias) computed
once; for a speed of cluster K only K's subtree moves, so each page sweeps that subtree and K's
ancestors (``method="pages"``). ``method="tensor"``
(:mod:`symdyn.constrained.cluster_christoffel`) shares work between the speeds of one cluster and
differentiates the sweep instead (identities re-derived in the docs, since paper 001's (24)-(28)
were lost in the text extraction); it is not yet the O(N d^2) per-path form of paper 000's
Algorithm 2.

Generic over the backends (no NumPy/SymPy/CasADi imports); NumPy inputs are checked for closure
(ClosureError) and singular local loop Jacobians (SingularConfigurationError).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ..algorithms.coriolis import (Sweep, algorithm1, check_factorization, composite_inertias,
                                   mass_matrix_rate)
from ..algorithms.common import joint_kinematics
from ..algorithms.rnea import gravity_vector
from ..spatial import compose, cross_motion, xform_motion
from .errors import ClosureError
from .loops import LoopModel, speed_rows


@dataclass(frozen=True)
class Cluster:
    """One cluster of a :class:`ClusterTree`.

    ``bodies``: tree body indices (tree order); ``attach``: the body it hangs from (-1: world);
    ``parent``: the parent cluster (-1: none); ``closures``: indices into ``loop.closures``;
    ``speeds``: tree speed indices of its joints (tree order); ``independent``: its independent
    tree speeds (in ``loop.independent`` order); ``y``: their positions in the minimal speeds y.
    """

    bodies: tuple
    attach: int
    parent: int
    closures: tuple
    speeds: tuple
    independent: tuple
    y: tuple


class _Positions(NamedTuple):
    """Configuration-dependent part: transforms, spanning-tree Jacobians, local loop solutions."""

    q: list        # per-joint coordinate segments
    Xup: list
    S: list
    Xa: list       # Xa[b]: attachment of b's cluster -> b
    J: list        # J[b]: {c: X_{b<-c} Phi_c} over the joints c of b's cluster on b's path
    G: list        # G_K (cluster speeds x |y_K|), None for a loop-free cluster
    SK: list       # SK[b]: body b's rows of its cluster's S_K = J_K G_K (6 x |y_K|)
    Kd: list       # (K_d, dependent speeds) of the cluster's local loops, None if loop-free


class _Rates(NamedTuple):
    v: list        # body twists
    SdK: list      # SdK[b]: body b's rows of Sdot_K (6 x |y_K|)
    Gd: list       # Gdot_K per cluster (None: loop-free or at rest)


class ClusterTree:
    """The cluster-tree view of a :class:`~.loops.LoopModel`.

    Clusters are formed from the closures: the bodies on each loop (the paths from both closure
    bodies up to, not including, their common ancestor) are merged when they share bodies. Such a
    union is a connected set of bodies with one top body, so it hangs from exactly one outside
    body (the top body's parent), and every closure in it ties two of its bodies or one of them
    and that attachment: every LoopModel has a cluster tree (in the worst case one cluster).
    Bodies on no loop are clusters of their own. Each cluster must contain as many independent
    speeds as its speeds minus its constraints (else :class:`~.loops.ClosureError` names it).

    Results are in the LoopModel's minimal speeds ``y`` (``loop.independent`` order), equal to the
    spanning-tree route (:meth:`LoopModel.coriolis_matrix`) by construction of the theory.
    """

    def __init__(self, loop: LoopModel):
        if not isinstance(loop, LoopModel):
            raise TypeError(f"ClusterTree needs a LoopModel, got {type(loop).__name__}")
        self.loop, self.tree = loop, loop.tree
        self.clusters = self._form_clusters()
        self.cluster_of = [0] * self.tree.N
        for k, cl in enumerate(self.clusters):
            for b in cl.bodies:
                self.cluster_of[b] = k
        self.ny = loop.ny

    # -- cluster formation ------------------------------------------------------------------
    def _path(self, b, stop):
        """Bodies from b up to, not including, ``stop`` (an ancestor of b, or -1)."""
        out, parents = [], self.tree.parents
        while b != stop:
            out.append(b)
            b = parents[b]
        return out

    def _lca(self, bodies):
        parents = self.tree.parents

        def chain(b):
            out = [b]
            while b >= 0:
                b = parents[b]
                out.append(b)
            return out
        common = set(chain(bodies[0]))
        for b in bodies[1:]:
            common &= set(chain(b))
        return max(common)  # ancestors have smaller indices; -1 (world) is common to all

    def _form_clusters(self):
        tree, loop = self.tree, self.loop
        group = list(range(tree.N))             # union-find over bodies

        def find(b):
            while group[b] != b:
                group[b] = group[group[b]]
                b = group[b]
            return b

        def union(members):
            roots = [find(b) for b in members]
            for r in roots[1:]:
                group[r] = roots[0]

        in_loop = [False] * tree.N
        loops = []                              # per closure: the bodies on its loop
        for (pred, succ, _, _) in loop._frames:
            top = self._lca([pred, succ]) if pred >= 0 else -1
            members = self._path(succ, top) + (self._path(pred, top) if pred >= 0 else [])
            union(members)
            for b in members:
                in_loop[b] = True
            loops.append(members)
        members = {}
        for b in range(tree.N):
            members.setdefault(find(b) if in_loop[b] else ("single", b), []).append(b)
        order = sorted(members.values(), key=min)
        pos_y = {t: n for n, t in enumerate(loop.independent)}
        cluster_of = {b: k for k, bodies in enumerate(order) for b in bodies}
        out = []
        for k, bodies in enumerate(order):
            bset = set(bodies)
            attach = next((tree.parents[b] for b in bodies if tree.parents[b] not in bset), -1)
            closures = tuple(c for c, members in enumerate(loops) if members[0] in bset)
            speeds = tuple(t for b in bodies for t in range(*tree.v_idx[b]))
            # loop-free clusters keep their speeds' order (y_K = qd_K); others loop.independent's
            indep = tuple(t for t in (loop.independent if closures else speeds)
                          if t in set(speeds) and t in pos_y)
            m = sum(len(loop._rows[c]) for c in closures)
            if len(indep) != len(speeds) - m:
                names = [tree.names[b] for b in bodies]
                raise ClosureError(
                    f"cluster {names} has {len(speeds)} speeds and {m} closure constraints, so it "
                    f"needs {len(speeds) - m} independent speeds, but {len(indep)} of the "
                    f"independent speeds {loop.independent} are in it; choose independent speeds "
                    "per local loop")
            parent = -1 if attach < 0 else cluster_of[attach]
            out.append(Cluster(tuple(bodies), attach, parent, closures, speeds, indep,
                               tuple(pos_y[t] for t in indep)))
        return out

    def __repr__(self) -> str:
        names = self.tree.names
        parts = ["{" + ", ".join(names[b] for b in cl.bodies) + "}" for cl in self.clusters]
        return f"<ClusterTree of {self.loop.name!r}: {len(self.clusters)} clusters {' '.join(parts)}>"

    # -- kinematics ---------------------------------------------------------------------------
    def _entry(self, q, y=None, backend=None):
        B, (qs,) = self.loop._entry(q, backend=backend, extra=() if y is None else (y,))
        yv = None if y is None else B.to_vector(y, self.ny, "y")
        return B, qs, yv

    def _dense(self, B, cl, blocks):
        """6 x |speeds| from per-joint blocks {c: 6 x n_c} of the cluster's joints."""
        return B.hcat([blocks[c] if c in blocks else B.zeros(6, self.tree.joints[c].nv)
                       for c in cl.bodies])

    def _positions(self, B, qs) -> _Positions:
        tree = self.tree
        Xup, S = joint_kinematics(B, tree, qs)
        N = tree.N
        Xa, J = [None] * N, [None] * N
        G: list[Any] = [None] * len(self.clusters)
        Kds: list[Any] = [None] * len(self.clusters)
        residual = {}
        for k, cl in enumerate(self.clusters):
            for b in cl.bodies:
                p = tree.parents[b]
                inside = p != cl.attach
                Xa[b] = compose(B, Xup[b], Xa[p]) if inside else Xup[b]
                J[b] = {c: xform_motion(B, Xup[b], blk) for c, blk in J[p].items()} if inside else {}
                J[b][b] = S[b]
            if not cl.closures:
                continue
            K = []
            for c in cl.closures:
                res, Kc, _ = self._closure_term(B, cl, c, Xa, J)
                residual[c] = res
                K.append(Kc)
            K = B.vcat(K)
            col = {t: n for n, t in enumerate(cl.speeds)}
            dep = [t for t in cl.speeds if t not in set(cl.independent)]
            Ki = B.hcat([B.cols(K, col[t], col[t] + 1) for t in cl.independent])
            Kd = B.hcat([B.cols(K, col[t], col[t] + 1) for t in dep])
            if B.numeric:  # before solving: a clear error, not a LinAlgError
                self._check(B, cl, residual, Kd, dep)
            G[k] = speed_rows(B, cl.speeds, cl.independent, dep, -B.solve(Kd, Ki), unit=True)
            Kds[k] = (Kd, dep)
        SK = [None] * N
        for k, cl in enumerate(self.clusters):
            for b in cl.bodies:                                                    # S_K = J_K G_K
                SK[b] = S[b] if G[k] is None else self._dense(B, cl, J[b]) @ G[k]
        return _Positions(qs, Xup, S, Xa, J, G, SK, Kds)

    def _check(self, B, cl, residual, Kd, dep):
        """NumPy: cluster cl's loops close at q, and its K_d is regular."""
        from .numeric import check_closed, check_regular

        loop = self.loop
        r = [e if c in cl.closures else 0.0
             for c in range(len(loop.closures)) for e in residual.get(c, [0.0] * len(loop._rows[c]))]
        check_closed(loop, B.vector(r), "q")
        check_regular(loop, Kd, dependent=dep, independent=list(cl.independent))

    def _closure_term(self, B, cl, c, Xa, J, Jd=None, v=None):
        """:meth:`LoopModel.closure_term` of closure c of cluster cl, relative to the cluster's
        attachment: ``Xa``/``J``/``Jd`` per body as in :class:`_Positions` (``Jd``: Jacobian
        rates, None for no Kdot), ``v`` the body twists by body index (the attachment's if it
        moves; a body not in ``v`` is at rest)."""
        pred, succ, _, _ = self.loop._frames[c]
        own = pred >= 0 and pred != cl.attach
        dense = lambda blocks: self._dense(B, cl, blocks)  # noqa: E731
        return self.loop.closure_term(
            B, c, Xa[pred] if own else None, Xa[succ], dense(J[succ]),
            dense(J[pred]) if own else None, None if Jd is None else dense(Jd[succ]),
            dense(Jd[pred]) if own and Jd is not None else None, (v or {}).get(pred))

    def _local_rates(self, B, P: _Positions, k: int, qdK, v_attach=None):
        """Cluster k at its tree speeds ``qdK`` with its attachment moving at ``v_attach`` (None:
        at rest): the body twists ``{b: v_b}`` and ``Sdot_K`` per body, ``{b: 6 x |y_K|}``,
        ``(Jdot_K G_K)`` (None for a loop-free cluster) and ``Kdot_K G_K``; Gdot_K follows from
        ``K_d Gdot_d = -Kdot G`` (:meth:`_sdot`). With v_attach None the twists are relative to
        the attachment (Kdot and Gdot do not depend on it)."""
        tree, cl = self.tree, self.clusters[k]
        v = {} if v_attach is None else {cl.attach: v_attach}
        Phid, off = {}, 0
        for b in cl.bodies:
            nb = tree.joints[b].nv
            qdb = B.rows(qdK, off, off + nb)
            off += nb
            p = tree.parents[b]
            vJ = P.S[b] @ qdb
            v[b] = xform_motion(B, P.Xup[b], v[p]) + vJ if p in v else vJ         # (5)
            Phid[b] = cross_motion(B, v[b], P.S[b])                            # Phidot_b
            Sring = tree.joints[b].Sring(B, P.q[b], qdb)
            if Sring is not None:
                Phid[b] = Phid[b] + Sring
        if P.G[k] is None:  # one body, no loop: S_K = Phi, Sdot_K = Phidot
            return v, {b: Phid[b] for b in cl.bodies}, None
        Jd: dict[int, Any] = {}
        for b in cl.bodies:
            p = tree.parents[b]
            Jd[b] = ({c: xform_motion(B, P.Xup[b], blk) for c, blk in Jd[p].items()}
                     if p != cl.attach else {})
            Jd[b][b] = Phid[b]
        Kdot = B.vcat([self._closure_term(B, cl, c, P.Xa, P.J, Jd, v)[2] for c in cl.closures])
        return v, Jd, Kdot @ P.G[k]

    def _sdot(self, B, P: _Positions, k: int, Jd, Dd):
        """``(Gdot_K, {b: body b's rows of Sdot_K = Jdot_K G_K + J_K Gdot_K})`` from the Jacobian
        rates ``Jd`` and the dependent rows ``Dd`` of Gdot_K."""
        cl, (_, dep) = self.clusters[k], P.Kd[k]
        Gd = speed_rows(B, cl.speeds, cl.independent, dep, Dd, unit=False)
        return Gd, {b: self._dense(B, cl, Jd[b]) @ P.G[k] + self._dense(B, cl, P.J[b]) @ Gd
                    for b in cl.bodies}

    def _rates(self, B, P: _Positions, yv, moving=None) -> _Rates:
        """Body twists and Sdot_K at speeds y. ``moving``: the clusters whose speeds may be
        nonzero and everything below them (the rest is at rest: v = 0, Sdot_K = 0)."""
        N = self.tree.N
        v, SdK = [None] * N, [None] * N
        Gdot: list = [None] * len(self.clusters)
        for k, cl in enumerate(self.clusters):
            if moving is not None and k not in moving:
                for b in cl.bodies:
                    v[b], SdK[b] = B.vector([0] * 6), B.zeros(6, len(cl.y))
                continue
            yK = B.vcat([B.rows(yv, t, t + 1) for t in cl.y])
            qdK = yK if P.G[k] is None else P.G[k] @ yK
            a = cl.attach
            moves = a >= 0 and (moving is None or self.cluster_of[a] in moving)
            vK, Jd, KdG = self._local_rates(B, P, k, qdK, v[a] if moves else None)
            for b in cl.bodies:
                v[b] = vK[b]
            if KdG is None:
                for b in cl.bodies:
                    SdK[b] = Jd[b]
                continue
            Kd, _ = P.Kd[k]
            Gdot[k], Sd = self._sdot(B, P, k, Jd, -B.solve(Kd, KdG))
            for b in cl.bodies:
                SdK[b] = Sd[b]
        return _Rates(v, SdK, Gdot)

    # -- Algorithm 1 over clusters --------------------------------------------------------------
    def _sweep(self, P: _Positions) -> Sweep:
        """The clusters as Algorithm 1's units: force blocks of body b move to its cluster's
        attachment with Xa[b] (line 17), composites with Xa[b]^T (.) Xa[b] (lines 24-25)."""
        return Sweep([cl.bodies for cl in self.clusters], [cl.attach for cl in self.clusters],
                     self.cluster_of, P.Xa)

    def _composite_inertias(self, B, P: _Positions):
        """I^C_b per body: I_b plus the subtrees of the clusters hanging from b (line 24)."""
        return composite_inertias(B, self._sweep(P), self.tree.constants(B).I)

    def _algorithm1(self, B, P: _Positions, R: _Rates, factorization: str,
                    need=("M", "Mdot", "C"), IC=None, clusters=None):
        """Algorithm 1 (:func:`symdyn.algorithms.coriolis.algorithm1`) over the clusters, with
        S_K and Sdot_K for Phi and Phidot; ``IC``: precomputed composite inertias, ``clusters``:
        sweep only these (closed under attachments, the others at rest)."""
        M, C = algorithm1(B, self._sweep(P), P.SK, R.SdK, R.v, self.tree.constants(B).I,
                          factorization, IC=IC, units=clusters)
        self._add_armature(B, P, R, M, C, clusters)
        blocks = {"M": M, "C": C, "Mdot": mass_matrix_rate(C) if "Mdot" in need else None}
        return tuple(self._assemble(B, blocks[n]) for n in need)

    def _add_armature(self, B, P: _Positions, R: _Rates, M, C, clusters=None):
        """The joints' armature A (rotor inertia on the tree speeds, diagonal) in the induced
        terms: Mbar_KK += G_K^T A_K G_K and Cbar_KK += G_K^T A_K Gdot_K (so that Cbar keeps
        Cbar = G^T C G + G^T (M + A) Gdot and Mbar_dot = Cbar + Cbar^T)."""
        armature = self.tree.constants(B).armature
        for K in (range(len(self.clusters)) if clusters is None else clusters):
            cl, off = self.clusters[K], 0
            for b in cl.bodies:
                n, A = self.tree.joints[b].nv, armature[b]
                if A is not None:
                    if P.G[K] is None:
                        M[K, K] = M[K, K] + A
                    else:
                        Gb = B.rows(P.G[K], off, off + n)
                        M[K, K] = M[K, K] + Gb.T @ A @ Gb
                        if R.Gd[K] is not None:
                            C[K, K] = C[K, K] + Gb.T @ A @ B.rows(R.Gd[K], off, off + n)
                off += n

    def _assemble(self, B, blocks):
        out = B.zeros(self.ny, self.ny)
        for (K, L), blk in blocks.items():
            for r, i in enumerate(self.clusters[K].y):
                for s, j in enumerate(self.clusters[L].y):
                    out = B.assign(out, i, j, blk[r, s])
        return out

    # -- public API ---------------------------------------------------------------------------
    def coriolis_matrix(self, q, y, factorization: str = "christoffel", *,
                        backend: str | None = None):
        """``(Mbar, Mbar_dot, Cbar)`` in the minimal speeds y by Algorithm 1 over the clusters.

        ``q`` is a closed spanning-tree configuration, ``y`` the minimal speeds in
        ``loop.independent`` order. With ``factorization="christoffel"`` Cbar is the
        Christoffel-consistent induced factorization ``G^T C* G + G^T M Gdot`` (paper 001 (17));
        ``Mbar_dot = Cbar + Cbar^T`` and ``Cbar y`` are the constrained Coriolis/centripetal forces.
        """
        check_factorization(factorization)
        B, qs, yv = self._entry(q, y, backend)
        P = self._positions(B, qs)
        return self._algorithm1(B, P, self._rates(B, P, yv), factorization)

    def mass_matrix(self, q, *, backend: str | None = None):
        """``Mbar = G^T M G`` by the cluster sweep (Algorithm 1's M at y = 0)."""
        B, qs, _ = self._entry(q, backend=backend)
        P = self._positions(B, qs)
        zero = B.vector([0] * self.ny)
        return self._algorithm1(B, P, self._rates(B, P, zero), "christoffel", need=("M",))[0]

    def christoffel(self, q, *, backend: str | None = None, method: str = "pages"):
        """Generalized Christoffel symbols in the minimal speeds, ``Gamma[:, :, k] = Cbar(q, e_k)``.

        ``method="tensor"``: the tensor form over the clusters (Algorithm 2's sharing,
        :func:`symdyn.constrained.cluster_christoffel.christoffel_tensor`); ``"pages"``: as below.

        One configuration sweep (transforms, S_K, G_K, composite inertias); then for a speed k of
        cluster K only the clusters below K move and only those and K's ancestors have nonzero
        blocks of Cbar(q, e_k), so the velocity part of Algorithm 1 runs over that set: the
        cluster analogue of paper 000 Algorithm 2's cost (sum over K of ``|subtree(K)| + depth(K)``
        cluster blocks per speed). Storage as :func:`symdyn.algorithms.christoffel.christoffel`
        (NumPy (ny, ny, ny); SymPy, SymEngine, CasADi a :class:`~symdyn.backends.Tensor3`)."""
        if method == "tensor":
            from .cluster_christoffel import christoffel_tensor
            return christoffel_tensor(self, q, backend=backend)
        if method != "pages":
            raise ValueError(f"unknown method {method!r}; choose 'tensor' or 'pages'")
        B, qs, _ = self._entry(q, backend=backend)
        P = self._positions(B, qs)
        IC = self._composite_inertias(B, P)
        n = self.ny
        Gam = B.tensor3(n, n, n)
        below = self._subtrees()
        for K, cl in enumerate(self.clusters):
            up, L = set(), cl.parent
            while L >= 0:
                up.add(L)
                L = self.clusters[L].parent
            for k in cl.y:
                e = B.vector([1 if t == k else 0 for t in range(n)])
                R = self._rates(B, P, e, moving=below[K])
                (Ck,) = self._algorithm1(B, P, R, "christoffel", need=("C",), IC=IC,
                                         clusters=below[K] | up)
                for i in range(n):
                    for j in range(n):
                        Gam = B.set3(Gam, i, j, k, Ck[i, j])
        return Gam

    def _subtrees(self):
        """below[K]: cluster K and all clusters below it."""
        below = [{K} for K in range(len(self.clusters))]
        for K in reversed(range(len(self.clusters))):
            if self.clusters[K].parent >= 0:
                below[self.clusters[K].parent] |= below[K]
        return below

    def G(self, q, *, backend: str | None = None):
        """``G(q)`` (tree speeds x ny) assembled from the clusters' local loop solutions; block
        diagonal in the clusters (identity blocks for loop-free ones)."""
        B, qs, _ = self._entry(q, backend=backend)
        P = self._positions(B, qs)
        out = B.zeros(self.tree.nv, self.ny)
        for k, cl in enumerate(self.clusters):
            for r, t in enumerate(cl.speeds):
                for s, j in enumerate(cl.y):
                    out = B.assign(out, t, j, (1 if t == cl.independent[s] else 0)
                                   if P.G[k] is None else P.G[k][r, s])
        return out

    def gravity(self, q, *, backend: str | None = None):
        """``gbar = G^T g`` (generalized gravity in the minimal speeds)."""
        B, qs, _ = self._entry(q, backend=backend)
        return self.G(q, backend=B.name).T @ gravity_vector(self.tree, B.vcat(qs), backend=B.name)

