"""Tensor form of the generalized Christoffel symbols over a cluster tree
(symdyn.constrained.cluster_christoffel; derivation in docs/cluster_christoffel.rst): equal to the
page-by-page route (ClusterTree.christoffel(method="pages")) and to the spanning-tree route
(LoopModel.christoffel) on the worked mechanisms, on NumPy, CasADi and SymPy."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import symdyn as sd
from symdyn.constrained import ClusterTree
from symdyn.constrained.cluster_christoffel import christoffel_tensor
from symdyn.constrained import ClosureError
from symdyn.constrained.mechanisms import (branched_loops, five_bar_leg, four_bar, loop_chain,
                                          parallel_ankle, sized_loop_chain)
from symdyn.constrained.numeric import complete_configuration, solve_configuration


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
    "branched2": lambda: branched_loops(2),
    "loop_chain2": lambda: loop_chain(2, seed=1),
    "loop_chain5": lambda: loop_chain(5, seed=3),
    "sized_loop_chain1x7": lambda: sized_loop_chain(1, 7, seed=1),
    "sized_loop_chain3x5": lambda: sized_loop_chain(3, 5, seed=4),
}


@pytest.fixture(scope="module", params=sorted(MECHANISMS))
def mechanism(request):
    loop = MECHANISMS[request.param]()
    return request.param, loop, ClusterTree(loop)


def test_tensor_equals_pages_and_spanning_tree(mechanism):
    name, loop, ct = mechanism
    q = loop.q_ref
    Gt = ct.christoffel(q, method="tensor")
    assert isinstance(Gt, np.ndarray) and Gt.shape == (ct.ny,) * 3
    close(Gt, christoffel_tensor(ct, q), 0, f"{name} method='tensor'")
    close(Gt, ct.christoffel(q, method="pages"), 1e-12, f"{name} tensor vs pages")
    close(Gt, loop.christoffel(q), 1e-12, f"{name} tensor vs spanning tree")
    y = np.random.default_rng(7).normal(size=ct.ny)
    M, Mdot, C = ct.coriolis_matrix(q, y)
    close(np.einsum("ijk,k->ij", Gt, y), C, 1e-12, f"{name} sum Gamma y = Cbar")
    # Mbar_dot = Cbar + Cbar^T for every direction: Gamma[i,j,k] + Gamma[j,i,k] = dMbar_ij/dy_k
    close(np.einsum("ijk,k->ij", Gt + Gt.transpose(1, 0, 2), y), Mdot, 1e-12, f"{name} Mbar_dot")


def test_speeds_of_different_clusters_commute():
    """j, k in different clusters: the speed fields act on different coordinates, so
    Gamma[i, j, k] = Gamma[i, k, j] (within one cluster with spherical joints it need not)."""
    loop = branched_loops(0)
    ct = ClusterTree(loop)
    G = ct.christoffel(loop.q_ref, method="tensor")
    of = {p: K for K, cl in enumerate(ct.clusters) for p in cl.y}
    for j in range(ct.ny):
        for k in range(ct.ny):
            if of[j] != of[k]:
                close(G[:, j, k], G[:, k, j], 1e-12, f"Gamma[:, {j}, {k}]")


def test_other_configurations():
    loop = four_bar()
    ct = ClusterTree(loop)
    for theta in (0.0, 1.3, 2.7, -2.0):
        q = complete_configuration(loop, [theta])
        close(ct.christoffel(q, method="tensor"), loop.christoffel(q), 1e-12, f"theta={theta}")


@pytest.mark.parametrize("make", [lambda: branched_loops(1), lambda: loop_chain(3, seed=2),
                                  parallel_ankle, lambda: sized_loop_chain(2, 4, seed=2)])
def test_casadi(make):
    loop = make()
    ct = ClusterTree(loop)
    q = ca.SX.sym("q", loop.tree.nq)
    out = {}
    for method in ("tensor", "pages"):
        G = ct.christoffel(q, method=method)
        f = ca.Function("f", [q], [ca.horzcat(*[G[:, :, k] for k in range(ct.ny)])])
        out[method] = np.array(f(loop.q_ref))
    ref = loop.christoffel(loop.q_ref)
    ref = np.hstack([ref[:, :, k] for k in range(ct.ny)])
    close(out["tensor"], ref, 1e-10, "CasADi tensor vs spanning tree")
    close(out["tensor"], out["pages"], 1e-10, "CasADi tensor vs pages")


def random_closed_configuration(loop, rng, scale=0.1, tries=20):
    """Newton from a random tangent perturbation of q_ref (a new draw when it cannot close)."""
    for _ in range(tries):
        q0 = sd.integrate(loop.tree, loop.q_ref, scale * rng.normal(size=loop.tree.nv))
        try:
            return solve_configuration(loop, q0)
        except ClosureError:
            continue
    raise AssertionError(f"{loop.name}: no closed configuration near q_ref in {tries} draws")


@pytest.mark.parametrize("n, size, seed", [(1, 3, 0), (1, 4, 1), (1, 8, 2), (2, 6, 3), (3, 4, 5)])
def test_sized_loop_chain_tensor_pages_spanning(n, size, seed):
    """Longer local loops: tensor form = page route = spanning tree at random closed
    configurations (q_ref is one; three more by Newton from perturbations of it)."""
    loop = sized_loop_chain(n, size, seed=seed)
    ct = ClusterTree(loop)
    assert [len(cl.bodies) for cl in ct.clusters] == [size] * n
    assert (loop.tree.nv, ct.ny) == (n * (size + 2), n * (size - 1))
    rng = np.random.default_rng(seed)
    qs = [loop.q_ref] + [random_closed_configuration(loop, rng) for _ in range(3)]
    for k, q in enumerate(qs):
        close(loop.constraint_residual(q), np.zeros(3 * n), 1e-10, f"closure at q #{k}")
        Gt = ct.christoffel(q, method="tensor")
        close(Gt, ct.christoffel(q, method="pages"), 1e-12, f"{loop.name} q #{k}: tensor vs pages")
        close(Gt, loop.christoffel(q), 1e-12, f"{loop.name} q #{k}: tensor vs spanning tree")
    assert np.abs(qs[1] - qs[0]).max() > 1e-3     # really another configuration


def test_sized_loop_chain_structure():
    """loop_size = 3 has loop_chain's topology; bad sizes are refused."""
    a, b = sized_loop_chain(4, 3, seed=0), loop_chain(4, seed=0)
    assert a.tree.parents == b.tree.parents
    assert [j.type for j in a.tree.joints] == [j.type for j in b.tree.joints]
    assert len(a.closures) == len(b.closures) == 4
    big = sized_loop_chain(2, 9)
    assert big.tree.N == 18 and len(big.closures) == 2
    for bad in ((0, 4), (2, 2), (2, 4.0), (True, 4)):
        with pytest.raises(ValueError):
            sized_loop_chain(*bad)


def test_sympy_four_bar():
    import sympy as sp

    loop = four_bar()
    ct = ClusterTree(loop)
    qs = sp.symbols("q0:3", real=True)
    G = ct.christoffel(list(qs), backend="sympy", method="tensor")
    sub = dict(zip(qs, loop.q_ref))
    got = np.array([[[float(G[i, j, k].subs(sub)) for k in range(ct.ny)] for j in range(ct.ny)]
                    for i in range(ct.ny)])
    close(got, loop.christoffel(loop.q_ref), 1e-10, "SymPy four-bar")


def test_bad_method():
    loop = four_bar()
    with pytest.raises(ValueError, match="method"):
        ClusterTree(loop).christoffel(loop.q_ref, method="nope")
