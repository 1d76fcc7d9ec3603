"""Derivatives of inverse and forward dynamics: IDSVA (paper 003 Alg. 1) and eq. (5) with DMM / AZA,
against CasADi AD, finite differences, Pinocchio and the Coriolis/Christoffel identities, on all
backends."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
import symdyn.reference as D
from symdyn.algorithms.aba import aba
from symdyn.algorithms.aba_derivatives import AUTO_CROSSOVER, aba_derivatives
from symdyn.algorithms.crba import crba
from symdyn.algorithms.rnea import rnea
from symdyn.algorithms.rnea_derivatives import rnea_derivatives
from symdyn.autodiff import ad_jacobians
from symdyn.joints import Helical, Prismatic, Revolute
from symdyn.model import Body, Model
from symdyn.models import random_tree
from symdyn.spatial import Transform

TREES = {
    "serial": dict(n=7, parents=[-1, 0, 1, 2, 3, 4, 5]),
    "branched_rph": dict(n=9, joint_kinds=("revolute", "prismatic", "helical")),
    "spherical": dict(n=6, joint_kinds=("revolute", "spherical", "prismatic")),
    "floating": dict(n=7, joint_kinds=("revolute", "helical", "spherical"), floating_base=True),
    "planar": dict(n=6, joint_kinds=("planar", "revolute", "prismatic", "helical")),
}
PIN_TREES = ("serial", "branched_rph", "spherical", "floating")  # Pinocchio has no such planar joint
ROBOTS = ("ur5", "panda", "solo12", "talos")


def make(name, seed=0):
    return random_tree(seed=seed, **TREES[name])


def zero_gravity(model):
    return model.replace(gravity=np.zeros(3))


def state(model, seed, f_ext=True):
    rng = np.random.default_rng(seed)
    q, qd, u = model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    fx = [rng.normal(size=6) for _ in range(model.N)] if f_ext else None
    if fx is not None:
        fx[rng.integers(model.N)] = None  # None entries mean no force
    return q, qd, u, fx


def close(a, b, tol):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    err = np.abs(a - b).max()
    assert err <= tol * max(1.0, np.abs(b).max()), f"max error {err:.3g}"


def ad_rnea(model, q, qd, qdd, fx):
    fn = lambda m, q_, qd_, qdd_, backend=None: rnea(m, q_, qd_, qdd_, fx, backend=backend)  # noqa: E731
    return ad_jacobians(model, fn, [q, qd, qdd], ["q", "v", "v"], [0, 1])[1:]


def ad_aba(model, q, qd, tau, fx):
    fn = lambda m, q_, qd_, tau_, backend=None: aba(m, q_, qd_, tau_, fx, backend=backend)  # noqa: E731
    return ad_jacobians(model, fn, [q, qd, tau], ["q", "v", "v"], [0, 1, 2])[1:]


# --- IDSVA against AD ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TREES))
@pytest.mark.parametrize("with_fext", [False, True])
def test_idsva_equals_casadi_ad(name, with_fext):
    for seed in range(3):
        model = make(name, seed)
        q, qd, qdd, fx = state(model, seed + 10, with_fext)
        dq, dqd = rnea_derivatives(model, q, qd, qdd, fx)
        Aq, Aqd = ad_rnea(model, q, qd, qdd, fx)
        close(dq, Aq, 1e-10)
        close(dqd, Aqd, 1e-10)


def test_massless_body():
    """URDF-style massless link (mass 0, rotational inertia as given) between two bodies."""
    from symdyn.joints import Spherical

    bodies = [Body("a", None, Revolute("z"), 1.0, (0.1, 0.2, 0.0), np.diag([0.1, 0.2, 0.25])),
              Body("b", "a", Revolute("x"), 0.0, (0.0, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]),
                   Transform(np.eye(3), (1.0, 0.0, 0.0))),
              Body("c", "b", Spherical(), 2.0, (0.3, 0.0, 0.1), np.diag([0.1, 0.2, 0.25]),
                   Transform(np.eye(3), (0.0, 1.0, 0.0)))]
    model = Model(bodies, check_inertias=False, allow_massless=True)
    q, qd, qdd, fx = state(model, 2)
    for X, R in zip(rnea_derivatives(model, q, qd, qdd, fx), ad_rnea(model, q, qd, qdd, fx)):
        close(X, R, 1e-10)


def test_idsva_structure_and_zero_state():
    """dtau/dq at rest with no gravity vanishes; dtau/dqd vanishes at qd = 0 (C(q, 0) = 0)."""
    model = zero_gravity(make("floating", 1))
    q, _, qdd, _ = state(model, 3, False)
    z = np.zeros(model.nv)
    dq, dqd = rnea_derivatives(model, q, z, z)
    assert np.abs(dq).max() < 1e-13 and np.abs(dqd).max() < 1e-13
    dq, dqd = rnea_derivatives(model, q, z, qdd)
    assert np.abs(dqd).max() < 1e-13 and np.abs(dq).max() > 1e-3


# --- forward dynamics: DMM == AZA == AD ------------------------------------------------------------

@pytest.mark.parametrize("name", list(TREES))
def test_aba_derivatives_dmm_aza_ad(name):
    for seed in range(2):
        model = make(name, seed)
        q, qd, tau, fx = state(model, seed + 20)
        Aq, Aqd, At = ad_aba(model, q, qd, tau, fx)
        results = {m: aba_derivatives(model, q, qd, tau, fx, method=m)
                   for m in ("dmm", "aza", "ltdl", "auto")}
        for res in results.values():
            close(res[0], Aq, 1e-10)
            close(res[1], Aqd, 1e-10)
            close(res[2], At, 1e-12)
        close(results["dmm"][2], np.linalg.inv(crba(model, q)), 1e-12)
        close(results["ltdl"][2], np.linalg.inv(crba(model, q)), 1e-12)
        close(results["dmm"][0], results["aza"][0], 1e-12)
        close(results["dmm"][0], results["ltdl"][0], 1e-12)


def test_eq5_relation():
    """dqdd/dq = -M^-1 dtau/dq at qdd = aba(...) (eq. (5)), dqdd/dtau = M^-1."""
    model = make("floating", 2)
    q, qd, tau, fx = state(model, 5)
    qdd = aba(model, q, qd, tau, fx)
    dq, dqd = rnea_derivatives(model, q, qd, qdd, fx)
    M = crba(model, q)
    Fq, Fqd, Minv = aba_derivatives(model, q, qd, tau, fx)
    close(M @ Fq, -dq, 1e-10)
    close(M @ Fqd, -dqd, 1e-10)
    close(M @ Minv, np.eye(model.nv), 1e-10)


def test_auto_switches_at_crossover(monkeypatch):
    model = make("serial")
    q, qd, tau, _ = state(model, 1, False)
    monkeypatch.setitem(AUTO_CROSSOVER, "numeric", model.nv)
    auto = aba_derivatives(model, q, qd, tau, method="auto")
    aza_ = aba_derivatives(model, q, qd, tau, method="aza")
    assert all(np.array_equal(a, b) for a, b in zip(auto, aza_))
    monkeypatch.setitem(AUTO_CROSSOVER, "numeric", model.nv + 1)
    auto = aba_derivatives(model, q, qd, tau, method="auto")
    dmm = aba_derivatives(model, q, qd, tau, method="dmm")
    assert all(np.array_equal(a, b) for a, b in zip(auto, dmm))


# --- Pinocchio ------------------------------------------------------------------------------------

def pin_fext(pin, model, fx):
    from symdyn.interop.pinocchio import pinocchio_order

    out = pin.StdVec_Force()
    out.append(pin.Force.Zero())
    for i in pinocchio_order(model):  # joint i+1 in depth-first order, local = body frame
        f = np.zeros(6) if fx is None or fx[i] is None else fx[i]
        out.append(pin.Force(f[3:], f[:3]))  # Pinocchio: [linear; angular]
    return out


def check_pinocchio(model, seed, with_fext=True):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import matrix_from_pin, q_to_pin, to_pinocchio, v_to_pin

    pm = to_pinocchio(model)
    pd = pm.createData()
    q, qd, u, fx = state(model, seed, with_fext)
    args = (q_to_pin(model, q), v_to_pin(model, qd), v_to_pin(model, u), pin_fext(pin, model, fx))
    Pq, Pqd, _ = pin.computeRNEADerivatives(pm, pd, *args)
    dq, dqd = rnea_derivatives(model, q, qd, u, fx)
    close(dq, matrix_from_pin(model, Pq), 1e-9)
    close(dqd, matrix_from_pin(model, Pqd), 1e-9)
    Fq, Fqd, Minv = pin.computeABADerivatives(pm, pd, *args)
    Minv = np.triu(Minv) + np.triu(Minv, 1).T  # Pinocchio fills the upper triangle
    for method in ("dmm", "aza", "ltdl"):
        Aq, Aqd, AMinv = aba_derivatives(model, q, qd, u, fx, method=method)
        close(Aq, matrix_from_pin(model, Fq), 1e-9)
        close(Aqd, matrix_from_pin(model, Fqd), 1e-9)
        close(AMinv, matrix_from_pin(model, Minv), 1e-9)


@pytest.mark.parametrize("name", PIN_TREES)
def test_pinocchio_random_trees(name):
    for seed in range(2):
        check_pinocchio(make(name, seed), seed + 30)


@pytest.mark.parametrize("robot", ROBOTS)
def test_pinocchio_robots(robot):
    from symdyn.io.robots import load_robot

    model = load_robot(robot)
    check_pinocchio(model, 7)
    check_pinocchio(model, 8, with_fext=False)


# --- Coriolis and Christoffel identities -----------------------------------------------------------

@pytest.mark.parametrize("name", ["serial", "branched_rph"])
def test_dtau_dqd_is_twice_christoffel_consistent_C(name):
    """Paper 000 Remark 3: with generalized coordinates, dtau/dqd = 2 C* (qdd = 0, no gravity)."""
    from symdyn.algorithms.coriolis import coriolis_matrix

    model = zero_gravity(make(name, 4))
    q, qd, _, _ = state(model, 4, False)
    _, dqd = rnea_derivatives(model, q, qd, np.zeros(model.nv))
    close(dqd, 2 * coriolis_matrix(model, q, qd)[2], 1e-11)


@pytest.mark.parametrize("name", ["spherical", "floating", "planar"])
def test_dtau_dqd_from_christoffel_symbols(name):
    """With generalized speeds the symbols need not be symmetric in (j, k), and
    dtau_i/dqd_j = sum_k (Gamma[i,j,k] + Gamma[i,k,j]) qd_k (= 2 C* only when symmetric)."""
    from symdyn.algorithms.christoffel import christoffel

    model = zero_gravity(make(name, 5))
    q, qd, _, _ = state(model, 5, False)
    _, dqd = rnea_derivatives(model, q, qd, np.zeros(model.nv))
    G = christoffel(model, q)
    close(dqd, np.einsum("ijk,k->ij", G, qd) + np.einsum("ikj,k->ij", G, qd), 1e-11)


# --- symbolic backends ---------------------------------------------------------------------------

def small_model(joints):
    bodies = [Body(f"b{i}", None if i == 0 else f"b{i - 1}", j, 1.0 + i, (0.5, 0.25 * i, 0.0),
                   np.diag([0.3, 0.4, 0.5]), Transform(np.eye(3), (0.0 if i == 0 else 1.0, 0.0, 0.0)))
              for i, j in enumerate(joints)]
    return Model(bodies, gravity=(0.0, 0.0, -9.81), name="small")


def sympy_state(n, nq):
    return [sp.Matrix(sp.symbols(f"{s}0:{k}")) for s, k in (("q", nq), ("qd", n), ("u", n))]


def test_sympy_idsva_matches_numpy():
    model = small_model([Revolute("z"), Prismatic("x"), Revolute("y")])
    syms = sympy_state(model.nv, model.nq)
    dq, dqd = rnea_derivatives(model, *syms)
    for seed in range(2):
        q, qd, qdd, _ = state(model, seed, False)
        sub = dict(zip([s for v in syms for s in v], [*q, *qd, *qdd]))
        ref = rnea_derivatives(model, q, qd, qdd)
        for X, R in zip((dq, dqd), ref):
            close(np.array(X.subs(sub).evalf(), float), R, 1e-12)


def test_sympy_aba_derivatives_match_numpy():
    model = small_model([Revolute("z"), Helical("y", 0.1)])
    syms = sympy_state(model.nv, model.nq)
    out = aba_derivatives(model, *syms, method="aza")
    q, qd, tau, _ = state(model, 3, False)
    sub = dict(zip([s for v in syms for s in v], [*q, *qd, *tau]))
    for X, R in zip(out, aba_derivatives(model, q, qd, tau, method="dmm")):
        close(np.array(X.subs(sub).evalf(), float), R, 1e-11)


def test_sympy_closed_form_planar_2r_arm():
    """Symbolic parameters: the planar 2R arm's textbook dtau/dqd = 2 C with
    C = h [[-qd1, -(qd0 + qd1)], [qd0, 0]], h = m2 l1 lc2 sin(q1)."""
    from symdyn.models import planar_chain

    model = planar_chain(2, symbolic_params=True)
    par = {s.name: s for s in model.parameters()}
    q, qd, qdd = (sp.Matrix(sp.symbols(f"{p}0:2")) for p in ("q", "qd", "qdd"))
    _, dqd = rnea_derivatives(model, q, qd, qdd)
    h = par["m2"] * par["l1"] * par["lc2"] * sp.sin(q[1])
    C = h * sp.Matrix([[-qd[1], -(qd[0] + qd[1])], [qd[0], 0]])
    assert sp.simplify(dqd - 2 * C) == sp.zeros(2, 2)


def test_symengine_idsva_matches_numpy():
    se = pytest.importorskip("symengine")
    model = make("planar", 1)
    syms = [se.DenseMatrix([[s] for s in se.symbols(f"{p}0:{k}")])
            for p, k in (("q", model.nq), ("v", model.nv), ("a", model.nv))]
    dq, dqd = rnea_derivatives(model, *syms)
    q, qd, qdd, _ = state(model, 2, False)
    f = se.Lambdify([s for v in syms for s in v], [dq, dqd], cse=True)  # no CSE: exponential trees
    for X, R in zip(f(np.concatenate([q, qd, qdd])), rnea_derivatives(model, q, qd, qdd)):
        close(X, R, 1e-11)


@pytest.mark.parametrize("name", ["floating", "planar"])
def test_casadi_graphs_match_numpy(name):
    model = make(name, 3)
    Q, V, U = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    q, qd, u, fx = state(model, 4)
    f = ca.Function("idsva", [Q, V, U], list(rnea_derivatives(model, Q, V, U, fx)))
    for X, R in zip(f(q, qd, u), rnea_derivatives(model, q, qd, u, fx)):
        close(np.array(X), R, 1e-11)
    for method in ("dmm", "aza", "ltdl"):
        g = ca.Function("fd", [Q, V, U], list(aba_derivatives(model, Q, V, U, fx, method=method)))
        for X, R in zip(g(q, qd, u), aba_derivatives(model, q, qd, u, fx)):
            close(np.array(X), R, 1e-10)


def test_backend_argument_with_numbers():
    model = make("spherical", 2)
    q, qd, qdd, fx = state(model, 6)
    ref = rnea_derivatives(model, q, qd, qdd, fx)
    out = rnea_derivatives(model, q, qd, qdd, fx, backend="casadi")
    assert isinstance(out[0], ca.SX)
    for X, R in zip(out, ref):
        close(np.array(ca.DM(ca.evalf(X))), R, 1e-12)


# --- reference routes (symdyn.reference) -----------------------------------------------------------

@pytest.mark.parametrize("name", ["floating", "planar"])
def test_reference_routes(name):
    model = make(name, 6)
    q, qd, u, fx = state(model, 7)
    ref = rnea_derivatives(model, q, qd, u, fx)  # idsva
    for X, R in zip(D.reference_rnea_derivatives(model, q, qd, u, fx, method="ad"), ref):
        close(X, R, 1e-10)
    for X, R in zip(D.reference_rnea_derivatives(model, q, qd, u, fx, method="fd"), ref):
        close(X, R, 1e-6)
    ref = aba_derivatives(model, q, qd, u, fx, method="dmm")
    for method, tol in (("ad", 1e-10), ("fd", 1e-6)):
        for X, R in zip(D.reference_aba_derivatives(model, q, qd, u, fx, method=method), ref):
            close(X, R, tol)
    for method in ("aza", "auto"):
        for X, R in zip(aba_derivatives(model, q, qd, u, fx, method=method), ref):
            close(X, R, 1e-12)


# --- bad input -------------------------------------------------------------------------------------

def test_bad_inputs():
    model = make("floating", 0)
    q, qd, u, fx = state(model, 0)
    nv = model.nv
    with pytest.raises(ValueError, match="q must have shape"):
        rnea_derivatives(model, q[:-1], qd, u)
    with pytest.raises(ValueError, match="qd must have shape"):
        rnea_derivatives(model, q, np.zeros(nv + 1), u)
    with pytest.raises(ValueError, match="qdd must have shape"):
        rnea_derivatives(model, q, qd, np.zeros((2, nv)))
    with pytest.raises(ValueError, match="tau must have shape"):
        aba_derivatives(model, q, qd, u[:3])
    with pytest.raises(ValueError, match="NaN"):
        rnea_derivatives(model, q, qd, np.full(nv, np.nan))
    with pytest.raises(ValueError, match="unit quaternion"):
        rnea_derivatives(model, 2 * q, qd, u)
    with pytest.raises(ValueError, match="f_ext"):
        rnea_derivatives(model, q, qd, u, fx[:-1])
    with pytest.raises(ValueError, match="f_ext"):
        aba_derivatives(model, q, qd, u, [np.zeros(5)] * model.N)
    with pytest.raises(ValueError, match="unknown method 'lu'"):
        aba_derivatives(model, q, qd, u, method="lu")
    with pytest.raises(ValueError, match="unknown reference method 'cs'"):
        D.reference_rnea_derivatives(model, q, qd, u, method="cs")
    with pytest.raises(ValueError, match="unknown reference method 'idsva'.*analytical"):
        D.reference_aba_derivatives(model, q, qd, u, method="idsva")
    with pytest.raises(TypeError, match="method"):   # the analytical ones have no AD/FD route
        sd.rnea_derivatives(model, q, qd, u, method="fd")
    with pytest.raises(ValueError, match="unknown method 'fd'"):
        sd.aba_derivatives(model, q, qd, u, method="fd")
    with pytest.raises(ValueError, match="step h"):
        D.reference_rnea_derivatives(model, q, qd, u, method="fd", h=0.0)
    with pytest.raises(TypeError, match="numeric inputs"):
        D.reference_rnea_derivatives(model, ca.SX.sym("q", model.nq), qd, u, method="fd")
    with pytest.raises(TypeError, match="symdyn Model"):
        rnea_derivatives("model", q, qd, u)


def test_unsupported_joint_is_refused():
    class Twisted(Revolute):
        """A revolute joint that claims a configuration-dependent motion subspace."""
        S_constant = False
        type = "twisted"

    model = small_model([Revolute("z"), Twisted("x")])
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="motion subspace that varies"):
        rnea_derivatives(model, z, z, z)
    with pytest.raises(ValueError, match="motion subspace that varies"):
        aba_derivatives(model, z, z, z)


# --- eq. (5) through the LTDL factors (method="ltdl") ----------------------------------------------

def forest(floating_roots=True):
    """Two trees (parents -1 twice), each with a floating root unless ``floating_roots`` is
    False, and a spherical joint: the ltdl route's root-column shortcuts on more than one root."""
    from symdyn.joints import make_joint

    kinds = ["floating", "revolute", "floating", "spherical", "helical"] if floating_roots \
        else ["revolute", "revolute", "spherical", "prismatic", "revolute"]
    joints = [Helical("y", 0.2) if k == "helical" else make_joint(k, axis="x") for k in kinds]
    parents = [None, "b0", None, "b2", "b3"]
    rng = np.random.default_rng(4)
    bodies = [Body(f"b{i}", parents[i], j, 1.0 + i, tuple(rng.uniform(-0.3, 0.3, 3)),
                   np.diag(rng.uniform(0.2, 0.6, 3)),
                   Transform(np.eye(3), (0.0 if parents[i] is None else 1.0, 0.2, 0.1)))
              for i, j in enumerate(joints)]
    return Model(bodies, gravity=(0.0, 0.0, -9.81), name="forest")


@pytest.mark.parametrize("floating_roots", [True, False])
@pytest.mark.parametrize("armature", [False, True])
def test_ltdl_forest_and_armature(floating_roots, armature):
    """Against AD: two trees, their floating roots (where the root columns need no product) and
    armature (also on a floating root, where they do)."""
    model = forest(floating_roots)
    if armature:
        arm = np.zeros(model.nv)
        arm[[0, 2, model.nv // 2, model.nv - 1]] = (0.3, 0.1, 0.2, 0.05)
        model = model.replace(armature=arm)
    q, qd, tau, fx = state(model, 9)
    Aq, Aqd, At = ad_aba(model, q, qd, tau, fx)
    Fq, Fqd, Minv = aba_derivatives(model, q, qd, tau, fx, method="ltdl")
    close(Fq, Aq, 1e-10)
    close(Fqd, Aqd, 1e-10)
    close(Minv, At, 1e-12)
    close(Minv, np.linalg.inv(crba(model, q)), 1e-12)


def test_ltdl_root_columns_are_exact_blocks():
    """On a floating root (no armature) dqdd/dq and dqdd/dqd need no product on the root's q and
    linear-velocity columns: only the root's own rows are nonzero there (gravity seen by the root,
    Galilean invariance), and the graph holds no expression for the other rows."""
    model = make("floating", 1)
    q, qd, tau, fx = state(model, 3)
    Fq, Fqd, _ = aba_derivatives(model, q, qd, tau, fx, method="ltdl")
    Aq, Aqd, _ = ad_aba(model, q, qd, tau, fx)
    close(Fq[:, :6], Aq[:, :6], 1e-10)
    close(Fqd[:, 3:6], Aqd[:, 3:6], 1e-10)
    assert np.all(Fq[6:, :6] == 0) and np.all(Fqd[6:, 3:6] == 0) and np.all(Fq[:, 3:6] == 0)
    Q, V, U = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    Gq, Gqd, _ = aba_derivatives(model, Q, V, U, fx, method="ltdl")
    assert Gq[6:, :6].nnz() == 0 and Gqd[6:, 3:6].nnz() == 0


def test_sympy_ltdl_matches_numpy():
    model = small_model([Revolute("z"), Helical("y", 0.1), Prismatic("x")])
    syms = sympy_state(model.nv, model.nq)
    out = aba_derivatives(model, *syms, method="ltdl")
    q, qd, tau, _ = state(model, 3, False)
    sub = dict(zip([s for v in syms for s in v], [*q, *qd, *tau]))
    for X, R in zip(out, aba_derivatives(model, q, qd, tau, method="dmm")):
        close(np.array(X.subs(sub).evalf(), float), R, 1e-11)


def _matrix_cases():
    import test_matrix

    return test_matrix.CASES


@pytest.mark.parametrize("backend,kind", _matrix_cases())
def test_ltdl_on_every_backend_and_tree(backend, kind):
    """test_matrix's backends x tree kinds (serial, branched, prismatic, helical, spherical,
    floating, planar): Minv = inv(crba) and dqdd/du = -Minv dtau/du with the AD references."""
    import test_matrix as tm
    from matrix_support import call

    ref = tm.reference(tm.geometry(backend), kind)
    m, q, qd, tau = ref["model"], ref["q"], ref["qd"], ref["tau"]
    numeric = (0, 1, 2) if backend == "sympy" and kind in tm.SYMPY_NUMERIC_Q else ()
    val, pt = call(backend, sd.aba_derivatives, m, (q, qd, tau), ("q", "v", "v"), numeric=numeric,
                   method="ltdl")
    dq, dqd, Minv = (np.asarray(x, float) for x in pt.many(val))
    M = sd.crba(m, q)
    close(Minv @ M, np.eye(m.nv), tm.TOL)
    close(dq, -Minv @ ref["dtau_dq"], tm.AD_TOL)
    close(dqd, -Minv @ ref["dtau_dqd"], tm.AD_TOL)


@pytest.mark.parametrize("name", ["floating", "planar"])
def test_jax_ltdl_matches_numpy(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    model = make(name, 2)
    q, qd, tau, fx = state(model, 6)
    f = jax.jit(lambda *x: aba_derivatives(model, *x, fx, method="ltdl", backend="jax"))
    for X, R in zip(f(q, qd, tau), aba_derivatives(model, q, qd, tau, fx, method="dmm")):
        close(np.asarray(X), R, 1e-10)


def test_codegen_auto_keeps_the_smallest_graph():
    """codegen's method="auto" traces the eq. (5) routes and keeps the smallest graph (AZA's
    weighted by AZA_MAX_RATIO); on a branched floating-base tree that is the ltdl route."""
    from symdyn.codegen.functions import casadi_function

    model = make("floating", 0)
    info: dict = {}
    f = casadi_function(model, "aba_derivatives", info=info)
    assert info["method"] == "ltdl"
    sizes = {m: casadi_function(model, "aba_derivatives", method=m).n_instructions()
             for m in ("dmm", "aza", "ltdl")}
    assert f.n_instructions() == sizes["ltdl"] == min(sizes.values())
