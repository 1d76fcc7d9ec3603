"""Algorithm 1 (paper 000) as one implementation: its Mdot against an independent derivative of
CRBA, and the three sweeps (body frame, root frame, clusters) through the same code."""
from __future__ import annotations

import numpy as np
import pytest

import symdyn.algorithms.coriolis as coriolis
from symdyn.algorithms.coriolis import FACTORIZATIONS, FRAMES, coriolis_matrix
from symdyn.algorithms.crba import crba
from symdyn.reference import reference_mass_matrix_rate

from conftest import MODEL_NAMES, MODELS, assert_close, random_state


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_mdot_equals_the_derivative_of_crba(name, frame, factorization):
    """Mdot of Algorithm 1 (formed as C + C^T by Prop. 1) equals d/dt crba(q(t)), taken by
    forward-mode AD along q (+) e qd: an independent check of lines 14 and 22, for every joint
    kind (planar: Phiring; spherical/floating: generalized speeds)."""
    model = MODELS[name]
    q, qd, _ = random_state(model, seed=7)
    M, Mdot, C = coriolis_matrix(model, q, qd, factorization, frame=frame)
    assert_close(M, crba(model, q), what="M")
    assert_close(Mdot, reference_mass_matrix_rate(model, q, qd), what="Mdot vs AD of CRBA")


def test_reference_mass_matrix_rate_is_not_c_plus_ct_by_construction():
    """The reference sees a wrong C: perturbing one block of C in Algorithm 1 breaks the check."""
    model = MODELS["serial"]
    q, qd, _ = random_state(model, seed=3)
    _, Mdot, C = coriolis_matrix(model, q, qd)
    R = reference_mass_matrix_rate(model, q, qd)
    C_bad = C.copy()
    C_bad[0, 1] += 1e-3
    assert np.abs(C_bad + C_bad.T - R).max() > 1e-4
    assert np.abs(Mdot - R).max() < 1e-10 * max(1.0, np.abs(R).max())


def test_reference_mass_matrix_rate_batches_and_checks_shapes():
    model = MODELS["floating"]
    rng = np.random.default_rng(0)
    Q = np.stack([model.random_q(rng) for _ in range(3)])
    QD = rng.uniform(-1, 1, (3, model.nv))
    R = reference_mass_matrix_rate(model, Q, QD)
    assert R.shape == (3, model.nv, model.nv)
    for k in range(3):
        assert_close(R[k], coriolis_matrix(model, Q[k], QD[k])[1], what=f"state {k}")
    with pytest.raises(ValueError, match="shapes"):
        reference_mass_matrix_rate(model, Q[0], QD[0][:-1])


def test_every_sweep_runs_the_one_algorithm1(monkeypatch):
    """Body frame, root frame and the cluster tree all call coriolis.algorithm1 (no copies)."""
    from symdyn.constrained import ClusterTree, complete_configuration, four_bar

    calls = []
    original = coriolis.algorithm1

    def counting(*args, **kw):
        calls.append(args[1])
        return original(*args, **kw)

    monkeypatch.setattr(coriolis, "algorithm1", counting)
    import symdyn.constrained.clusters as clusters
    monkeypatch.setattr(clusters, "algorithm1", counting)
    model = MODELS["branched"]
    q, qd, _ = random_state(model)
    coriolis_matrix(model, q, qd, frame="body")
    coriolis_matrix(model, q, qd, frame="root")
    loop = four_bar()
    ClusterTree(loop).coriolis_matrix(complete_configuration(loop, [0.7]), [2.0])
    assert len(calls) == 3
    assert [len(s.units) for s in calls[:2]] == [model.N, model.N]
    assert any(len(u) > 1 for u in calls[2].units)          # a cluster of several bodies


@pytest.mark.parametrize("make", ["four_bar", "branched_loops"])
def test_cluster_tree_includes_armature(make):
    """With rotor inertias on the tree joints, Algorithm 1 over clusters gives the spanning-tree
    route's Mbar = G^T (M + A) G and Cbar = G^T C G + G^T (M + A) Gdot (it used to leave A out)."""
    import symdyn.constrained as con
    from symdyn.constrained import ClusterTree, LoopModel

    base = getattr(con, make)()
    rng = np.random.default_rng(1)
    tree = base.tree.replace(armature=list(rng.uniform(0.05, 0.5, base.tree.nv)))
    loop = LoopModel(tree, base.closures, base.independent, q_ref=base.q_ref)
    q = loop.q_ref if make == "branched_loops" else con.complete_configuration(loop, [0.7])
    y = rng.uniform(-1, 1, loop.ny)
    Mbar, Mbar_dot, Cbar = loop.coriolis_matrix(q, y)
    Mc, Mdc, Cc = ClusterTree(loop).coriolis_matrix(q, y)
    assert_close(Mc, Mbar, what="Mbar")
    assert_close(Cc, Cbar, what="Cbar")
    assert_close(Mdc, Mbar_dot, what="Mbar_dot")
    Gamma = ClusterTree(loop).christoffel(q)
    assert_close(np.einsum("ijk,k->ij", Gamma, y), Cbar, what="sum_k Gamma_k y_k")
    M0 = ClusterTree(LoopModel(base.tree, base.closures, base.independent,
                               q_ref=base.q_ref)).mass_matrix(q)
    assert np.abs(Mc - M0).max() > 1e-3          # the armature is really there
