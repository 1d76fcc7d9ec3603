"""Cluster-tree method (paper 001 Secs. VI-C2/3): Algorithm 1 over clusters equals the
spanning-tree route Cbar = G^T C* G + G^T M Gdot, its Christoffel symbols equal the spanning-tree
ones, on the worked mechanisms and on a floating-base mechanism with clusters hanging from
clusters; symbolic backends; bad input."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import symdyn as sd
from symdyn.constrained import (ClosureError, ClusterTree, LoopClosure, LoopModel,
                                SingularConfigurationError)
from symdyn.constrained.mechanisms import (branched_loops, five_bar_leg, four_bar, loop_chain,
                                          parallel_ankle)
from symdyn.constrained.numeric import complete_configuration


def close(a, b, tol, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float).reshape(np.shape(a))
    err, scale = np.abs(a - b).max(), 1 + np.abs(b).max()
    assert err <= tol * scale, f"{what}: max |diff| {err:.3e} (scale {scale:.3g})"


MECHANISMS = {
    "four_bar": four_bar,
    "five_bar_leg": five_bar_leg,
    "ankle_motors": parallel_ankle,
    "ankle_foot": lambda: parallel_ankle(independent="foot"),
    "branched0": lambda: branched_loops(0),
    "branched1": lambda: branched_loops(1),
    "loop_chain4": lambda: loop_chain(4, seed=3),
}


@pytest.fixture(scope="module", params=sorted(MECHANISMS))
def mechanism(request):
    loop = MECHANISMS[request.param]()
    return request.param, loop, ClusterTree(loop)


def test_cluster_structure():
    ct = ClusterTree(branched_loops(0))
    names = ct.tree.names
    got = [tuple(names[b] for b in cl.bodies) for cl in ct.clusters]
    assert got == [("base",), ("hip",), ("a1", "a2", "a3"), ("knee",), ("b1", "b2", "b3"),
                   ("c1", "c2"), ("tip",)]
    attach = [names[cl.attach] if cl.attach >= 0 else None for cl in ct.clusters]
    assert attach == [None, "base", "hip", "a1", "knee", "a3", "c2"]
    assert [cl.parent for cl in ct.clusters] == [-1, 0, 1, 2, 3, 2, 5]
    assert sorted(p for cl in ct.clusters for p in cl.y) == list(range(ct.ny))
    assert "7 clusters" in repr(ct)
    ct = ClusterTree(loop_chain(5))
    assert [cl.parent for cl in ct.clusters] == [-1, 0, 1, 2, 3] and ct.ny == 10
    assert [ct.tree.names[cl.attach] for cl in ct.clusters[1:]] == ["o0", "o1", "o2", "o3"]
    # the worked mechanisms hang from the world as one cluster
    for make in (four_bar, five_bar_leg, parallel_ankle):
        ct = ClusterTree(make())
        assert len(ct.clusters) == 1 and ct.clusters[0].attach == -1


def test_algorithm1_over_clusters_equals_spanning_tree(mechanism):
    name, loop, ct = mechanism
    rng = np.random.default_rng(3)
    q = loop.q_ref
    for factorization in ("christoffel", "simple"):
        y = rng.normal(size=loop.ny) * 3
        Mr, Mdr, Cr = loop.coriolis_matrix(q, y, factorization)
        M, Mdot, C = ct.coriolis_matrix(q, y, factorization)
        close(M, Mr, 1e-12, f"{name} Mbar")
        close(Mdot, Mdr, 1e-12, f"{name} Mbar_dot")
        close(C, Cr, 1e-12, f"{name} Cbar ({factorization})")
        close(Mdot, C + C.T, 1e-12, f"{name} skew symmetry ({factorization})")
    close(ct.mass_matrix(q), Mr, 1e-12, f"{name} mass_matrix")
    close(ct.G(q), loop.G(q), 1e-12, f"{name} G")
    close(ct.gravity(q), loop.dynamics(q, y).g, 1e-12, f"{name} gbar")


def test_cluster_christoffel_symbols(mechanism):
    name, loop, ct = mechanism
    q = loop.q_ref
    Gam = ct.christoffel(q)
    close(Gam, loop.christoffel(q), 1e-12, f"{name} Gamma")
    y = np.random.default_rng(5).normal(size=loop.ny)
    close(np.einsum("ijk,k->ij", Gam, y), ct.coriolis_matrix(q, y)[2], 1e-12, f"{name} sum Gamma y")


def test_G_is_block_diagonal_in_the_clusters():
    loop = branched_loops(1)
    ct = ClusterTree(loop)
    G = np.asarray(ct.G(loop.q_ref))
    for cl in ct.clusters:
        rows = list(cl.speeds)
        other = [j for j in range(ct.ny) if j not in cl.y]
        assert np.all(G[np.ix_(rows, other)] == 0)



def test_loop_closing_onto_a_moving_attachment():
    """Cluster {c1, c2} closes onto its attachment a3, which moves with the clusters above: its
    Gdot depends on its own speeds only, whether the twists are absolute (moving attachment) or
    relative to the attachment (the tensor form's per-speed rates)."""
    from symdyn.backends import get_backend

    loop = branched_loops(0)
    ct = ClusterTree(loop)
    B, names = get_backend("numpy"), ct.tree.names
    (K,) = [k for k, cl in enumerate(ct.clusters) if names[cl.attach] == "a3" and cl.closures]
    assert loop._frames[ct.clusters[K].closures[0]][0] == ct.clusters[K].attach
    P = ct._positions(B, ct._entry(loop.q_ref)[1])
    rng = np.random.default_rng(4)
    y = rng.normal(size=ct.ny)
    other = y + np.where(np.isin(np.arange(ct.ny), ct.clusters[K].y), 0.0, rng.normal(size=ct.ny))
    Gd = ct._rates(B, P, y).Gd[K]
    close(ct._rates(B, P, other).Gd[K], Gd, 1e-12, "Gdot_K with the attachment moving otherwise")
    yK = y[list(ct.clusters[K].y)]
    _, Jd, KdG = ct._local_rates(B, P, K, P.G[K] @ yK)
    close(ct._sdot(B, P, K, Jd, -np.linalg.solve(P.Kd[K][0], KdG))[0], Gd, 1e-12,
          "Gdot_K with the attachment at rest")

def test_other_configurations_and_speeds():
    loop = four_bar()
    ct = ClusterTree(loop)
    for theta in (0.0, 1.3, 2.7, -2.0):
        q = complete_configuration(loop, [theta])
        y = [1.7]
        for a, b in zip(ct.coriolis_matrix(q, y), loop.coriolis_matrix(q, y)):
            close(a, b, 1e-12, f"four-bar theta={theta}")


def test_symbolic_backends():
    loop = branched_loops(0)
    ct = ClusterTree(loop)
    q0, y0 = loop.q_ref, np.random.default_rng(2).normal(size=loop.ny)
    q, y = ca.SX.sym("q", loop.tree.nq), ca.SX.sym("y", loop.ny)
    M, Mdot, C = ct.coriolis_matrix(q, y)
    f = ca.Function("f", [q, y], [M, Mdot, C])
    for a, b in zip(f(q0, y0), ct.coriolis_matrix(q0, y0)):
        close(np.array(a), b, 1e-11, "CasADi")
    import sympy as sp

    loop = four_bar()
    ct = ClusterTree(loop)
    qs, ys = sp.symbols("q0:3", real=True), sp.symbols("y0", real=True)
    Ms, _, Cs = ct.coriolis_matrix(list(qs), [ys], backend="sympy")
    sub = dict(zip(qs, loop.q_ref)) | {ys: 0.8}
    Mr, _, Cr = loop.coriolis_matrix(loop.q_ref, [0.8])
    close(np.array(Ms.subs(sub), float), Mr, 1e-12, "SymPy Mbar")
    close(np.array(Cs.subs(sub), float), Cr, 1e-12, "SymPy Cbar")


def test_bad_input():
    loop = branched_loops(0)
    ct = ClusterTree(loop)
    q = loop.q_ref
    with pytest.raises(ClosureError, match="does not close"):
        ct.coriolis_matrix(sd.integrate(loop.tree, q, 0.05 * np.ones(loop.tree.nv)), np.ones(ct.ny))
    with pytest.raises(ValueError, match="y"):
        ct.coriolis_matrix(q, np.ones(ct.ny + 1))
    with pytest.raises(ValueError, match="factorization"):
        ct.coriolis_matrix(q, np.ones(ct.ny), "nope")
    with pytest.raises(TypeError, match="LoopModel"):
        ClusterTree(loop.tree)
    with pytest.raises(ValueError, match="positive integer"):
        loop_chain(0)
    # independent speeds that do not match the local loops: one cluster gets too many
    cl = ct.clusters[2]                    # {a1, a2, a3}: 5 speeds, 3 constraints -> 2 independent
    dep_a = [t for t in cl.speeds if t not in cl.independent]
    other = [t for t in loop.independent if t not in ct.clusters[4].speeds]
    moved = other + dep_a[:1] + [t for t in ct.clusters[4].speeds if t in loop.independent][1:]
    bad = LoopModel(loop.tree, loop.closures, moved)
    with pytest.raises(ClosureError, match=r"cluster \['a1', 'a2', 'a3'\].*needs 2 independent"):
        ClusterTree(bad)
    # a singular local loop: the four-bar with the rocker as input at the dead centre (crank and
    # coupler collinear: the coupler tip at distance crank + coupler = 0.8 from O)
    d, r1, r2 = 0.55, 0.8, 0.5
    a = (r1 ** 2 - r2 ** 2 + d ** 2) / (2 * d)
    tip = np.array([a, np.sqrt(r1 ** 2 - a ** 2)])
    qd = np.array([np.arctan2(tip[1], tip[0]), 0.0, np.arctan2(tip[1], tip[0] - d)])
    with pytest.raises(SingularConfigurationError, match="singular.*crank"):
        ClusterTree(four_bar(independent="rocker")).coriolis_matrix(qd, [1.0])
    ClusterTree(four_bar()).coriolis_matrix(qd, [1.0])  # the crank as input is regular there
