"""Coriolis matrix (paper 000 Algorithm 1) and the O(N) products: identities, AD, Pinocchio, backends."""
from __future__ import annotations

import os

import casadi as ca
import numpy as np
import pytest
import sympy as sp

from symdyn.algorithms import crba, rnea
from symdyn.algorithms.coriolis import (FRAMES, coriolis_matrix, coriolis_product,
                                        coriolis_transpose_product)
from symdyn.autodiff import ad_jacobians
from symdyn.backends import get_backend
from symdyn.joints import Fixed, Floating, Helical, Planar, Prismatic, Revolute, Spherical
from symdyn.model import Body, Model
from symdyn.models import random_inertia, random_rotation, random_tree
from symdyn.spatial import Transform, inertia_rate, inertia_rate_rigid, mcI

ALL = ("revolute", "prismatic", "helical", "spherical", "planar")


def zero_gravity(model):
    return model.replace(gravity=np.zeros(3))


def make_model(name):
    if name == "chain":
        return zero_gravity(random_tree(6, seed=1, parents=[-1, 0, 1, 2, 3, 4]))
    if name == "tree_rph":
        return zero_gravity(random_tree(8, seed=2, joint_kinds=("revolute", "prismatic", "helical")))
    if name == "mixed":  # spherical, planar (Phiring != 0), helical, prismatic, depth 6
        return zero_gravity(random_tree(7, seed=13, joint_kinds=ALL))
    if name == "spherical":
        return zero_gravity(random_tree(7, seed=4, joint_kinds=("revolute", "spherical", "prismatic")))
    if name == "floating":
        return zero_gravity(random_tree(7, seed=5, joint_kinds=("revolute", "spherical", "helical"),
                                        floating_base=True))
    if name == "two_trees_fixed":
        return zero_gravity(two_trees_with_fixed_joint(seed=9))
    raise KeyError(name)


def two_trees_with_fixed_joint(seed=0):
    """Two trees on the world (each gets its own root frame in frame='root'), a fixed joint
    merged into its parent, unaligned axes and every 1-DoF/multi-DoF joint kind."""
    rng = np.random.default_rng(seed)
    axis = lambda: tuple(rng.normal(size=3))  # noqa: E731
    spec = [("a", None, Revolute(axis())), ("b", "a", Fixed()), ("c", "b", Helical(axis(), 0.2)),
            ("d", "c", Planar()), ("e", "d", Prismatic(axis())), ("f", None, Spherical()),
            ("g", "f", Revolute("x")), ("h", "f", Floating())]
    bodies = []
    for name, parent, joint in spec:
        m, c, Ic = random_inertia(rng)
        X = Transform(random_rotation(rng).T, rng.uniform(-1, 1, 3))
        bodies.append(Body(name, parent, joint, m, c, Ic, X))
    return Model(bodies, name="two_trees")


MODELS = ("chain", "tree_rph", "mixed", "spherical", "floating")
COORDINATE_MODELS = ("chain", "tree_rph")  # generalized coordinates only, single-DoF joints


def sample(model, rng):
    """Paper 000 Sec. 5: angles in [0, 2 pi], speeds in [0, 10] (unit quaternions for spherical)."""
    return model.random_q(rng), rng.uniform(0, 10, model.nv)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("factorization", ["christoffel", "simple"])
def test_C_qd_equals_rnea_and_admissible(name, factorization):
    model = make_model(name)
    rng = np.random.default_rng(0)
    zero = np.zeros(model.nv)
    for _ in range(5):
        q, qd = sample(model, rng)
        M, Mdot, C = coriolis_matrix(model, q, qd, factorization)
        tau = rnea(model, q, qd, zero)
        scale = 1 + np.abs(tau).max()
        assert np.abs(C @ qd - tau).max() < 1e-12 * scale
        assert np.abs(M - crba(model, q)).max() < 1e-12 * (1 + np.abs(M).max())
        assert np.abs(Mdot - C - C.T).max() < 1e-12 * scale


@pytest.mark.parametrize("name", MODELS)
def test_Mdot_is_directional_derivative_of_crba(name):
    """Mdot = d/dt M(q (+) qd t) at t = 0 (tangent space for quaternion joints), by CasADi AD."""
    model = make_model(name)
    rng = np.random.default_rng(1)
    nv = model.nv
    for _ in range(3):
        q, qd = sample(model, rng)
        _, J = ad_jacobians(model, crba, [q], ["q"], wrt=[0], tangent=True)
        Mdot_ad = (J @ qd).reshape((nv, nv), order="F")
        Mdot = coriolis_matrix(model, q, qd)[1]
        assert np.abs(Mdot - Mdot_ad).max() < 1e-10 * (1 + np.abs(Mdot).max())


@pytest.mark.parametrize("name", MODELS)
def test_simple_factorization_is_admissible_but_not_christoffel(name):
    model = make_model(name)
    rng = np.random.default_rng(2)
    q, qd = sample(model, rng)
    _, Mdot, Cs = coriolis_matrix(model, q, qd, "simple")
    _, _, Cx = coriolis_matrix(model, q, qd, "christoffel")
    assert np.abs(Cs @ qd - Cx @ qd).max() < 1e-11 * (1 + np.abs(Cx @ qd).max())  # both valid
    assert np.abs(Mdot - Cs - Cs.T).max() < 1e-11 * (1 + np.abs(Mdot).max())       # admissible
    assert np.abs(Cs - Cx).max() > 1e-3 * np.abs(Cx).max()                          # yet different


@pytest.mark.parametrize("name", COORDINATE_MODELS + ("mixed",))
def test_dtau_dqd_is_twice_Cstar(name):
    """Paper 000 Remark 3 (generalized coordinates: revolute/prismatic/helical/planar)."""
    model = make_model(name)
    if name == "mixed":  # drop spherical joints: Remark 3 needs symmetric symbols
        model = zero_gravity(random_tree(6, seed=16, joint_kinds=("revolute", "planar", "helical")))
        assert any(j.type == "planar" for j in model.joints)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = sample(model, rng)
        qdd = rng.normal(size=model.nv)
        _, dtau = ad_jacobians(model, rnea, [q, qd, qdd], ["q", "v", "v"], wrt=[1])
        C = coriolis_matrix(model, q, qd)[2]
        assert np.abs(dtau - 2 * C).max() < 1e-10 * (1 + np.abs(C).max())


@pytest.mark.parametrize("name", ["spherical", "floating"])
def test_dtau_dqd_with_generalized_speeds(name):
    """With non-symmetric generalized symbols Remark 3 becomes dtau/dnu = C* + sum_j Gamma[:, j, :] nu_j,
    which differs from 2 C* (a check that the generalization is needed)."""
    from symdyn.algorithms.christoffel import christoffel

    model = make_model(name)
    rng = np.random.default_rng(4)
    q, qd = sample(model, rng)
    _, dtau = ad_jacobians(model, rnea, [q, qd, np.zeros(model.nv)], ["q", "v", "v"], wrt=[1])
    C = coriolis_matrix(model, q, qd)[2]
    G = christoffel(model, q)
    expected = C + np.einsum("ijk,j->ik", G, qd)
    assert np.abs(dtau - expected).max() < 1e-10 * (1 + np.abs(C).max())
    assert np.abs(dtau - 2 * C).max() > 1e-3


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("factorization", ["christoffel", "simple"])
def test_products_without_forming_C(name, factorization):
    model = make_model(name)
    rng = np.random.default_rng(5)
    q, qd = sample(model, rng)
    qd_r = rng.normal(size=model.nv) * 5
    C = coriolis_matrix(model, q, qd, factorization)[2]
    scale = 1 + np.abs(C).max() * 10
    assert np.abs(coriolis_product(model, q, qd, qd_r, factorization) - C @ qd_r).max() < 1e-12 * scale
    assert np.abs(coriolis_transpose_product(model, q, qd) - C.T @ qd).max() < 1e-12 * scale
    tau = rnea(model, q, qd, np.zeros(model.nv))
    assert np.abs(coriolis_product(model, q, qd, qd, factorization) - tau).max() < 1e-12 * scale


# --- frame="root": Algorithm 1 in each tree's root-body coordinates (footnote 2) ------------------

@pytest.mark.parametrize("name", MODELS + ("two_trees_fixed",))
@pytest.mark.parametrize("factorization", ["christoffel", "simple"])
def test_root_frame_equals_body_frame(name, factorization):
    model = make_model(name)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd = sample(model, rng)
        ref = coriolis_matrix(model, q, qd, factorization)
        got = coriolis_matrix(model, q, qd, factorization, frame="root")
        for a, b, what in zip(got, ref, ("M", "Mdot", "C")):
            assert np.abs(a - b).max() < 1e-11 * (1 + np.abs(b).max()), (name, what)


def test_root_frame_symbolic_backends_match_numpy():
    """CasADi on the two-tree model with every joint kind; SymPy on a 3-body model."""
    model = make_model("two_trees_fixed")
    rng = np.random.default_rng(12)
    q, qd = sample(model, rng)
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    for fac in ("christoffel", "simple"):
        f = ca.Function("f", [qs, vs], list(coriolis_matrix(model, qs, vs, fac, frame="root")))
        for a, b in zip(f(q, qd), coriolis_matrix(model, q, qd, fac)):
            assert np.abs(np.array(a) - b).max() < 1e-11 * (1 + np.abs(b).max())
    small = zero_gravity(random_tree(3, seed=1, parents=[-1, 0, 0],
                                     joint_kinds=("spherical", "revolute", "planar")))
    q, qd = sample(small, rng)
    qs = sp.Matrix(sp.symbols(f"q0:{small.nq}"))
    vs = sp.Matrix(sp.symbols(f"v0:{small.nv}"))
    got = coriolis_matrix(small, qs, vs, frame="root")
    for a, b in zip(got, coriolis_matrix(small, q, qd)):
        val = _lambdify(a, list(qs) + list(vs), list(q) + list(qd))
        assert np.abs(val - b).max() < 1e-11 * (1 + np.abs(b).max())


def test_inertia_rate_rigid_equals_inertia_rate():
    B = get_backend("numpy")
    rng = np.random.default_rng(13)
    for _ in range(5):
        m, c, Ic = random_inertia(rng)
        I, v = mcI(B, m, rng.normal(size=3) + c, Ic), rng.normal(size=6)
        assert np.abs(inertia_rate_rigid(B, v, I) - inertia_rate(B, v, I)).max() < 1e-12 * (
            1 + np.abs(I).max() * np.abs(v).max())


# --- symbolic backends --------------------------------------------------------------------------------

def test_casadi_backend_matches_numpy():
    model = make_model("mixed")
    rng = np.random.default_rng(6)
    q, qd = sample(model, rng)
    qr = rng.normal(size=model.nv)
    qs, vs, rs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("r", model.nv)
    for fac in ("christoffel", "simple"):
        M, Mdot, C = coriolis_matrix(model, qs, vs, fac)
        assert isinstance(C, ca.SX) and C.shape == (model.nv, model.nv)
        f = ca.Function("f", [qs, vs, rs], [M, Mdot, C, coriolis_product(model, qs, vs, rs, fac),
                                             coriolis_transpose_product(model, qs, vs)])
        out = [np.array(o) for o in f(q, qd, qr)]
        ref = coriolis_matrix(model, q, qd, fac)
        for a, b in zip(out[:3], ref):
            assert np.abs(a - b).max() < 1e-11 * (1 + np.abs(b).max())
        assert np.abs(out[3].ravel() - ref[2] @ qr).max() < 1e-10
        assert np.abs(out[4].ravel() - ref[2].T @ qd).max() < 1e-10


def _lambdify(exprs, syms, vals):
    """Evaluate SymPy expressions at numbers (xreplace: fast on large expression DAGs)."""
    sub = {s: sp.Float(float(v)) for s, v in zip(syms, vals)}
    return np.array(sp.Matrix(exprs).xreplace(sub).evalf(), dtype=float)


def test_sympy_backend_matches_numpy():
    """Small model (spherical + revolute + prismatic, nv = 5) with SymPy symbols for q and qd."""
    model = zero_gravity(random_tree(3, seed=1, parents=[-1, 0, 1],
                                     joint_kinds=("spherical", "revolute", "prismatic")))
    rng = np.random.default_rng(7)
    q, qd = sample(model, rng)
    qr = rng.normal(size=model.nv)
    qs = sp.Matrix(sp.symbols(f"q0:{model.nq}"))
    vs = sp.Matrix(sp.symbols(f"v0:{model.nv}"))
    rs = sp.Matrix(sp.symbols(f"r0:{model.nv}"))
    syms = list(qs) + list(vs) + list(rs)
    vals = list(q) + list(qd) + list(qr)
    M, Mdot, C = coriolis_matrix(model, qs, vs)
    assert isinstance(C, sp.MatrixBase)
    ref = coriolis_matrix(model, q, qd)
    for a, b in zip((M, Mdot, C), ref):
        assert np.abs(_lambdify(a, syms, vals) - b).max() < 1e-11 * (1 + np.abs(b).max())
    P = _lambdify(coriolis_product(model, qs, vs, rs), syms, vals).ravel()
    T = _lambdify(coriolis_transpose_product(model, qs, vs), syms, vals).ravel()
    assert np.abs(P - ref[2] @ qr).max() < 1e-10
    assert np.abs(T - ref[2].T @ qd).max() < 1e-10


# --- Pinocchio ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("name", ["chain", "tree_rph", "spherical", "floating"])
def test_pinocchio_coriolis_matrix_random_trees(name, frame):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop import pinocchio as pb

    model = make_model(name)
    pm = pb.to_pinocchio(model)
    pd = pm.createData()
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, qd = sample(model, rng)
        C = coriolis_matrix(model, q, qd, frame=frame)[2]
        Cp = pb.matrix_from_pin(model, pin.computeCoriolisMatrix(pm, pd, pb.q_to_pin(model, q),
                                                                 pb.v_to_pin(model, qd)))
        assert np.abs(C - Cp).max() < 1e-11 * (1 + np.abs(C).max())


_ROBOTS = os.path.join(os.path.dirname(np.__file__), "..", "cmeel.prefix", "share",
                       "example-robot-data", "robots")


def model_from_pinocchio(pin, pm):
    """A symdyn Model equal to a Pinocchio model with RX/RY/RZ/revolute-unaligned/prismatic/free joints
    (bodies in Pinocchio's joint order; free-flyer speeds become [omega; v])."""
    bodies = []
    for jid in range(1, pm.njoints):
        jm = pm.joints[jid]
        kind = jm.shortname()
        axes = {"X": "x", "Y": "y", "Z": "z"}
        if kind.startswith("JointModelR") and kind[-1] in axes and len(kind) == 12:
            joint = Revolute(axes[kind[-1]])
        elif kind.startswith("JointModelP") and kind[-1] in axes and len(kind) == 12:
            joint = Prismatic(axes[kind[-1]])
        elif kind == "JointModelRevoluteUnaligned":
            joint = Revolute(tuple(jm.extract().axis))
        elif kind == "JointModelFreeFlyer":
            joint = Floating()
        else:
            raise ValueError(kind)
        X = pm.jointPlacements[jid]
        inertia = pm.inertias[jid]
        parent = pm.parents[jid]
        bodies.append(Body(pm.names[jid], None if parent == 0 else pm.names[parent], joint,
                           float(inertia.mass), np.array(inertia.lever),
                           np.array(inertia.inertia), Transform(X.rotation.T, X.translation.copy())))
    return Model(bodies, gravity=(0, 0, 0), name=pm.name, check_inertias=False)


@pytest.mark.parametrize("urdf,floating", [("ur_description/urdf/ur5_robot.urdf", False),
                                           ("solo_description/robots/solo12.urdf", True),
                                           ("anymal_b_simple_description/robots/anymal.urdf", True)])
def test_pinocchio_coriolis_matrix_real_robots(urdf, floating):
    pin = pytest.importorskip("pinocchio")
    path = os.path.join(_ROBOTS, urdf)
    if not os.path.exists(path):
        pytest.skip(f"{urdf} not installed")
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromUrdf(path)
    pd = pm.createData()
    model = model_from_pinocchio(pin, pm)
    P = np.arange(model.nv)  # symdyn -> Pinocchio velocity order (free flyer [v; w])
    if floating:
        P[:6] = [3, 4, 5, 0, 1, 2]
    rng = np.random.default_rng(9)
    for _ in range(3):
        q = rng.uniform(0, 2 * np.pi, pm.nq)
        if floating:
            q[:7] = np.concatenate([rng.uniform(-1, 1, 3), _unit_quat(rng)])
        qd = rng.uniform(0, 10, model.nv)
        M, _, C = coriolis_matrix(model, q, qd)
        Cp = pin.computeCoriolisMatrix(pm, pd, q, qd[P])
        assert np.abs(C[np.ix_(P, P)] - Cp).max() < 1e-10 * (1 + np.abs(C).max())
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert np.abs(M[np.ix_(P, P)] - Mp).max() < 1e-10 * (1 + np.abs(M).max())


def _unit_quat(rng):
    u = rng.normal(size=4)
    return u / np.linalg.norm(u)


# --- bad input ------------------------------------------------------------------------------------------

def test_bad_inputs():
    model = make_model("chain")
    q, qd = np.zeros(model.nq), np.ones(model.nv)
    with pytest.raises(ValueError, match="qd"):
        coriolis_matrix(model, q, np.ones(model.nv + 1))
    with pytest.raises(ValueError, match="q"):
        coriolis_matrix(model, np.zeros(model.nq - 1), qd)
    with pytest.raises(ValueError, match="unknown factorization"):
        coriolis_matrix(model, q, qd, "christofel")
    with pytest.raises(ValueError, match="NaN"):
        coriolis_matrix(model, q, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="qd_r"):
        coriolis_product(model, q, qd, np.ones(2))
    with pytest.raises(ValueError, match="unknown factorization"):
        coriolis_product(model, q, qd, qd, factorization="nope")
    with pytest.raises(ValueError, match="unknown frame"):
        coriolis_matrix(model, q, qd, frame="world")
    with pytest.raises(TypeError):
        coriolis_matrix("not a model", q, qd)


def test_symbolic_parameters_model():
    """A model with SymPy masses/lengths runs through Algorithm 1 and substitutes to the numbers."""
    m1, m2, l1 = sp.symbols("m1 m2 l1", positive=True)
    bodies = [Body("a", None, Revolute("z"), m1, (l1 / 2, 0, 0), sp.diag(1, 2, 2)),
              Body("b", "a", Prismatic("x"), m2, (0, 0, 0), sp.eye(3),
                   Transform(sp.eye(3), (l1, 0, 0)))]
    model = Model(bodies, gravity=(0, 0, 0), name="sym2")
    q1, q2, v1, v2 = sp.symbols("q1 q2 v1 v2")
    M, Mdot, C = coriolis_matrix(model, [q1, q2], [v1, v2])
    assert sp.simplify(Mdot - C - C.T) == sp.zeros(2, 2)
    vals = {m1: 1.5, m2: 0.7, l1: 0.9}
    num = model.subs(vals)
    qn, vn = [0.3, 0.2], [1.0, -2.0]
    ref = coriolis_matrix(num, qn, vn)[2]
    got = np.array(C.subs(vals).subs({q1: qn[0], q2: qn[1], v1: vn[0], v2: vn[1]}), dtype=float)
    assert np.abs(got - ref).max() < 1e-12


def test_inertia_congruence_sym_equals_inertia_congruence():
    from symdyn.spatial import inertia_congruence, inertia_congruence_sym

    B, Bc = get_backend("numpy"), get_backend("casadi")
    rng = np.random.default_rng(14)
    for _ in range(5):
        m, c, Ic = random_inertia(rng)
        X = Transform(random_rotation(rng), rng.normal(size=3))
        I = mcI(B, m, c, Ic)
        ref = inertia_congruence(B, X, I)
        assert np.array_equal(inertia_congruence_sym(B, X, I), ref)   # numeric: the 3x3 form
        Xc = Transform(ca.SX(X.E), ca.SX(X.r.reshape(3, 1)))
        got = np.array(ca.evalf(inertia_congruence_sym(Bc, Xc, ca.SX(I))), dtype=float)
        assert np.abs(got - ref).max() < 1e-13 * (1 + np.abs(ref).max())
        assert np.array_equal(got, got.T)                              # one value per pair
