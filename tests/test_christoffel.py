"""Christoffel symbols (paper 000 Algorithm 2, generalized) and the eq. (4) baseline."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

from symdyn.algorithms.christoffel import (christoffel, christoffel_from_mass_matrix,
                                           christoffel_nonzero)
from symdyn.algorithms.coriolis import coriolis_matrix
from symdyn.backends import get_backend
from symdyn.joints import Helical, Prismatic, Revolute
from symdyn.model import Body, Model
from symdyn.models import random_tree
from symdyn.spatial import Transform

ALL = ("revolute", "prismatic", "helical", "spherical", "planar")


def make_model(name):
    if name == "chain":
        return random_tree(6, seed=1, parents=[-1, 0, 1, 2, 3, 4])
    if name == "tree_rph":
        return random_tree(8, seed=2, joint_kinds=("revolute", "prismatic", "helical"))
    if name == "planar":  # generalized coordinates with Phiring != 0
        return random_tree(6, seed=16, joint_kinds=("revolute", "planar", "helical"))
    if name == "mixed":  # spherical, planar, helical, prismatic, depth 6
        return random_tree(7, seed=13, joint_kinds=ALL)
    if name == "spherical":
        return random_tree(7, seed=4, joint_kinds=("revolute", "spherical", "prismatic"))
    if name == "floating":
        return random_tree(7, seed=5, joint_kinds=("revolute", "spherical", "helical"),
                           floating_base=True)
    raise KeyError(name)


MODELS = ("chain", "tree_rph", "planar", "mixed", "spherical", "floating")
COORDINATES = ("chain", "tree_rph", "planar")     # qd = dq/dt: eq. (4) applies
SPEEDS = ("mixed", "spherical", "floating")       # quaternion joints with body-velocity speeds


def sample(model, rng):
    return model.random_q(rng), rng.uniform(0, 10, model.nv)


def dense_from_nonzero(entries, nv):
    G = np.zeros((nv, nv, nv))
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                G[i, j, k] = entries.get((i, j, k), entries.get((i, k, j), 0.0))
    return G


@pytest.mark.parametrize("name", MODELS)
def test_gamma_pages_are_Cstar_of_unit_speeds(name):
    """Gamma[:, :, k] = C*(q, e_k) and C* = sum_k Gamma[:, :, k] qd_k."""
    model = make_model(name)
    rng = np.random.default_rng(0)
    E = np.eye(model.nv)
    for _ in range(3):
        q, qd = sample(model, rng)
        G = christoffel(model, q)
        assert G.shape == (model.nv,) * 3
        for k in range(model.nv):
            Ck = coriolis_matrix(model, q, E[k])[2]
            assert np.abs(G[:, :, k] - Ck).max() < 1e-12 * (1 + np.abs(Ck).max())
        C = coriolis_matrix(model, q, qd)[2]
        assert np.abs(C - G @ qd).max() < 1e-12 * (1 + np.abs(C).max())


@pytest.mark.parametrize("name", COORDINATES)
def test_symmetric_for_generalized_coordinates(name):
    model = make_model(name)
    G = christoffel(model, model.random_q(np.random.default_rng(1)))
    assert np.abs(G - G.transpose(0, 2, 1)).max() < 1e-12 * (1 + np.abs(G).max())


@pytest.mark.parametrize("name", SPEEDS)
def test_non_symmetric_only_within_non_commuting_joints(name):
    """Asymmetry Gamma[i, j, k] != Gamma[i, k, j] occurs, and only for j, k of one spherical/floating joint."""
    model = make_model(name)
    G = christoffel(model, model.random_q(np.random.default_rng(2)))
    A = np.abs(G - G.transpose(0, 2, 1))
    joint_of = np.concatenate([[i] * model.joints[i].nv for i in range(model.N)])
    same = joint_of[:, None] == joint_of[None, :]
    quat = np.array([model.joints[joint_of[k]].type in ("spherical", "floating")
                     for k in range(model.nv)])
    allowed = same & quat[:, None] & quat[None, :]
    assert A.max() > 1e-3
    assert A[:, ~allowed].max() < 1e-12 * (1 + np.abs(G).max())


@pytest.mark.parametrize("name", COORDINATES)
def test_equals_eq4_numerically(name):
    """Algorithm 2 equals eq. (4) with dM/dq from CasADi AD at numbers."""
    model = make_model(name)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = model.random_q(rng)
        G = christoffel(model, q)
        G4 = christoffel_from_mass_matrix(model, q)
        assert np.abs(G - G4).max() < 1e-11 * (1 + np.abs(G).max())


def test_eq4_refuses_quaternion_joints():
    model = make_model("floating")
    with pytest.raises(ValueError, match="quaternion"):
        christoffel_from_mass_matrix(model, model.random_q(np.random.default_rng(0)))


def test_eq4_symbolic_needs_symbols():
    model = make_model("chain")
    with pytest.raises(ValueError, match="distinct symbols"):
        christoffel_from_mass_matrix(model, [0.1] * model.nq, backend="sympy")
    x = ca.SX.sym("x")
    with pytest.raises(ValueError, match="distinct symbols"):
        christoffel_from_mass_matrix(model, ca.vertcat(*([x] * model.nq)))


def _two_link_symbolic():
    m1, m2, l1, c1, c2, I1, I2 = sp.symbols("m1 m2 l1 c1 c2 I1 I2", positive=True)
    bodies = [Body("a", None, Revolute("z"), m1, (c1, 0, 0), sp.diag(I1, I1, I1)),
              Body("b", "a", Revolute("z"), m2, (c2, 0, 0), sp.diag(I2, I2, I2),
                   Transform(sp.eye(3), (l1, 0, 0)))]
    return Model(bodies, gravity=(0, 0, 0), name="rr_symbolic")


def _rph_exact():
    Rx = sp.Matrix([[1, 0, 0], [0, 0, 1], [0, -1, 0]])
    h = sp.Rational
    bodies = [Body("a", None, Revolute("z"), 2, (h(1, 2), 0, h(1, 5)), sp.diag(1, 2, 2)),
              Body("b", "a", Prismatic("y"), 1, (0, h(1, 3), 0), sp.eye(3), Transform(Rx, (1, 0, 0))),
              Body("c", "b", Helical("x", pitch=0.5), 3, (h(1, 4), 0, 0), sp.diag(1, 2, 2),
                   Transform(Rx.T, (0, 1, h(1, 2))))]
    return Model(bodies, gravity=(0, 0, 0), name="rph_exact")


@pytest.mark.parametrize("build", [_two_link_symbolic, _rph_exact])
def test_equals_eq4_symbolically(build):
    """Exact equality after simplification (SymPy), paper 000 eq. (4) vs Algorithm 2."""
    model = build()
    q = sp.Matrix(sp.symbols(f"q1:{model.nq + 1}"))
    G = christoffel(model, q, backend="sympy")
    G4 = christoffel_from_mass_matrix(model, q, backend="sympy")
    assert G.shape == (model.nv,) * 3 and isinstance(G[:, :, 0], sp.MatrixBase)  # Tensor3 of pages
    n = model.nv
    nonzero = 0
    for i in range(n):
        for j in range(n):
            for k in range(n):
                assert sp.simplify(sp.sympify(G[i, j, k]) - sp.sympify(G4[i, j, k])) == 0
                nonzero += sp.sympify(G4[i, j, k]) != 0
    assert nonzero > 0


def _eval_sympy(expr, syms, vals):
    sub = {s: sp.Float(float(v)) for s, v in zip(syms, vals)}
    return float(sp.sympify(expr).xreplace(sub).evalf())


def test_sympy_generalized_symbols_match_numpy():
    """Spherical joint in SymPy: Gamma entries evaluated at numbers equal NumPy's."""
    model = random_tree(2, seed=3, parents=[-1, 0], joint_kinds=("spherical", "revolute"))
    assert model.joints[0].type == "spherical" or model.joints[1].type == "spherical"
    q = model.random_q(np.random.default_rng(4))
    qs = sp.Matrix(sp.symbols(f"q0:{model.nq}"))
    G = christoffel(model, qs)
    ref = christoffel(model, q)
    n = model.nv
    got = np.array([[[_eval_sympy(G[i, j, k], qs, q) for k in range(n)] for j in range(n)]
                    for i in range(n)])
    assert np.abs(got - ref).max() < 1e-11 * (1 + np.abs(ref).max())


@pytest.mark.parametrize("name", ["mixed", "floating", "tree_rph"])
def test_casadi_matches_numpy(name):
    model = make_model(name)
    q = model.random_q(np.random.default_rng(5))
    qs = ca.SX.sym("q", model.nq)
    G = christoffel(model, qs)
    CB = get_backend("casadi")
    assert G.shape == (model.nv,) * 3 and CB.page(G, 0).shape == (model.nv, model.nv)
    pages = ca.Function("g", [qs], CB.pages(G))(q)
    pages = pages if isinstance(pages, (list, tuple)) else [pages]
    got = np.stack([np.array(p) for p in pages], axis=2)
    ref = christoffel(model, q)
    assert np.abs(got - ref).max() < 1e-11 * (1 + np.abs(ref).max())
    if name in COORDINATES:
        G4 = ca.Function("g4", [qs], CB.pages(christoffel_from_mass_matrix(model, qs)))(q)
        got4 = np.stack([np.array(p) for p in G4], axis=2)
        assert np.abs(got4 - ref).max() < 1e-11 * (1 + np.abs(ref).max())


@pytest.mark.parametrize("name", MODELS)
def test_nonzero_form(name):
    model = make_model(name)
    q = model.random_q(np.random.default_rng(6))
    G = christoffel(model, q)
    entries = christoffel_nonzero(model, q)
    assert np.abs(dense_from_nonzero(entries, model.nv) - G).max() < 1e-13 * (1 + np.abs(G).max())
    assert len(entries) < model.nv ** 3
    joint_of = [i for i in range(model.N) for _ in range(model.joints[i].nv)]
    for (i, j, k) in entries:  # only mutually related speeds
        bodies = sorted({joint_of[i], joint_of[j], joint_of[k]})
        deepest = bodies[-1]
        assert all(b in model.ancestors[deepest] for b in bodies)
    if name in COORDINATES:  # symmetric: one key per unordered (j, k)
        assert all(j <= k for (_, j, k) in entries)


def test_nonzero_form_casadi_and_sympy_values():
    model = make_model("chain")
    q = model.random_q(np.random.default_rng(7))
    ref = christoffel_nonzero(model, q)
    qs = ca.SX.sym("q", model.nq)
    e = christoffel_nonzero(model, qs)
    assert set(e) == set(ref)
    keys = sorted(e)
    vals = np.array(ca.Function("e", [qs], [ca.vertcat(*[e[k] for k in keys])])(q)).ravel()
    assert np.abs(vals - np.array([ref[k] for k in keys])).max() < 1e-11


@pytest.mark.parametrize("name", ["spherical", "floating", "tree_rph"])
def test_pinocchio_Cstar_of_unit_speeds(name):
    """Gamma[:, :, k] equals Pinocchio's computeCoriolisMatrix(q, e_k) after velocity conversion."""
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop import pinocchio as pb

    model = make_model(name)
    pm = pb.to_pinocchio(model)
    pd = pm.createData()
    q = model.random_q(np.random.default_rng(8))
    G = christoffel(model, q)
    qp = pb.q_to_pin(model, q)
    E = np.eye(model.nv)
    for k in range(model.nv):
        Ck = pb.matrix_from_pin(model, pin.computeCoriolisMatrix(pm, pd, qp, pb.v_to_pin(model, E[k])))
        assert np.abs(G[:, :, k] - Ck).max() < 1e-11 * (1 + np.abs(Ck).max())


def test_bad_input():
    model = make_model("chain")
    with pytest.raises(ValueError, match="q"):
        christoffel(model, np.zeros(model.nq + 2))
    with pytest.raises(ValueError, match="NaN"):
        christoffel(model, np.full(model.nq, np.nan))
