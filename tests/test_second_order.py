"""Second-order derivatives of inverse dynamics (SO-IDSVA, symdyn.rnea_second_derivatives) against
CasADi AD of symdyn's own rnea and crba, the Christoffel symbols and the first-order IDSVA, on the
NumPy, CasADi and SymPy backends."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.algorithms.configuration import integrate
from symdyn.joints import Revolute
from symdyn.model import Body, Model
from symdyn.models import random_tree, serial_chain
from symdyn.spatial import Transform

TREES = {   # (random_tree arguments), N up to 12
    "chain12": dict(n=12, parents=list(range(-1, 11))),
    "tree10_rph": dict(n=10, joint_kinds=("revolute", "prismatic", "helical")),
    "chain8_helical": dict(n=8, parents=list(range(-1, 7)), joint_kinds=("helical", "revolute")),
    "tree7_spherical": dict(n=7, joint_kinds=("revolute", "spherical", "prismatic")),
    "floating6": dict(n=6, joint_kinds=("revolute", "helical", "spherical"), floating_base=True),
    "forest6": dict(n=6, parents=[-1, 0, -1, 2, 1, -1], joint_kinds=("spherical", "revolute")),
}
ONE_DOF = ("chain12", "tree10_rph", "chain8_helical")
NAMES = ("d2tau_dq2", "d2tau_dqd2", "d2tau_dq_dqd", "dM_dq")


def make(name, seed=0):
    return random_tree(seed=seed, **TREES[name])


def state(model, seed, f_ext=False):
    rng = np.random.default_rng(seed)
    q, qd, qdd = model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    fx = None
    if f_ext:
        fx = [rng.normal(size=6) for _ in range(model.N)]
        fx[rng.integers(model.N)] = None
    return q, qd, qdd, fx


def as_array(T):
    """ndarray (nv, nv, nv) of a NumPy result or of a numeric Tensor3."""
    return np.asarray(T, dtype=float)


def close(a, b, tol=1e-9, what=""):
    a, b = as_array(a), as_array(b)
    assert a.shape == b.shape, what
    err = np.abs(a - b).max()
    assert err <= tol * max(1.0, np.abs(b).max()), f"{what}: max error {err:.3g}"


def ad_second(model, q, qd, qdd, fx=None):
    """CasADi AD of rnea and crba traced on the casadi backend, differentiated twice: the four
    tensors in the convention of rnea_second_derivatives (q-derivatives along q (+) e_k (+) e_j,
    column j innermost)."""
    nv = model.nv
    q0 = ca.SX.sym("q", model.nq)
    ej, ek = ca.SX.sym("ej", nv), ca.SX.sym("ek", nv)
    v, a = ca.SX.sym("v", nv), ca.SX.sym("a", nv)
    q1 = integrate(model, q0, ek, backend="casadi")
    tau = sd.rnea(model, integrate(model, q1, ej, backend="casadi"), v, a, fx, backend="casadi")
    dtau_dq = ca.vec(ca.jacobian(tau, ej))
    M = ca.vec(sd.crba(model, q1, backend="casadi"))
    outs = [ca.jacobian(dtau_dq, ek), ca.jacobian(ca.vec(ca.jacobian(tau, v)), v),
            ca.jacobian(dtau_dq, v), ca.jacobian(M, ek)]
    f = ca.Function("ad2", [q0, ej, ek, v, a], outs)
    z = np.zeros(nv)
    # rows i + nv j, columns k -> [i, j, k]
    return tuple(np.array(H, float).reshape(nv, nv, nv, order="F") for H in f(q, z, z, qd, qdd))


def ad_fd_second(model, q, qd, tau, fx=None):
    """The same for qdd = aba(...): d2qdd_dq2, d2qdd_dqd2, d2qdd_dq_dqd and d(dqdd/dtau)/dq."""
    nv = model.nv
    q0 = ca.SX.sym("q", model.nq)
    ej, ek = ca.SX.sym("ej", nv), ca.SX.sym("ek", nv)
    v, u = ca.SX.sym("v", nv), ca.SX.sym("u", nv)
    q1 = integrate(model, q0, ek, backend="casadi")
    qdd = sd.aba(model, integrate(model, q1, ej, backend="casadi"), v, u, fx, backend="casadi")
    dqdd_dq = ca.vec(ca.jacobian(qdd, ej))
    outs = [ca.jacobian(dqdd_dq, ek), ca.jacobian(ca.vec(ca.jacobian(qdd, v)), v),
            ca.jacobian(dqdd_dq, v), ca.jacobian(ca.vec(ca.jacobian(qdd, u)), ek)]
    f = ca.Function("ad2fd", [q0, ej, ek, v, u], outs)
    z = np.zeros(nv)
    return tuple(np.array(H, float).reshape(nv, nv, nv, order="F") for H in f(q, z, z, qd, tau))


def ad_pairs(model, fn, q, qd, x, fx=None):
    """CasADi AD of ``fn`` (sd.rnea with x = qdd, or sd.aba with x = tau) twice, for models whose
    ad_second graphs are too large to build (they grow about as N^4.6): one forward-over-reverse
    sweep per (output i, direction k) pair, the row i of the first-order Jacobians (reverse mode,
    along q (+) e_j, qd and x) differentiated along q (+) e_k or qd_k (forward mode), evaluated
    for the nv^2 pairs by ``Function.map``. The four tensors ``[i, j, k]`` as ad_second /
    ad_fd_second give them."""
    nv = model.nv
    q0 = ca.SX.sym("q", model.nq)
    ej, ek, v, u, w, e = (ca.SX.sym(n, nv) for n in ("ej", "ek", "v", "u", "w", "e"))
    y = fn(model, integrate(model, integrate(model, q0, ek, backend="casadi"), ej,
                            backend="casadi"), v, u, fx, backend="casadi")
    g = ca.gradient(ca.dot(w, y), ca.vertcat(ej, v, u))
    gq, gv, gu = g[:nv], g[nv:2 * nv], g[2 * nv:]
    along_q = ca.jtimes(ca.vertcat(gq, gu), ek, e)
    along_v = ca.jtimes(ca.vertcat(gq, gv), v, e)
    outs = ca.substitute([along_q[:nv], along_v[nv:], along_v[:nv], along_q[nv:]], [ej, ek],
                         [ca.DM.zeros(nv), ca.DM.zeros(nv)])
    pair = ca.Function("pair", [q0, v, u, w, e], outs)
    pairs = pair.map("pairs", "serial", nv * nv, [0, 1, 2], [])
    W = np.kron(np.ones((1, nv)), np.eye(nv))              # column i + nv k: e_i, e_k
    E = np.kron(np.eye(nv), np.ones((1, nv)))
    return tuple(np.array(o, float).reshape(nv, nv, nv, order="F").transpose(1, 0, 2)
                 for o in pairs(q, qd, x, W, E))


# --- against CasADi AD ----------------------------------------------------------------------------

def test_pairwise_ad_equals_the_graph_ad():
    """ad_pairs (the reference for the large models below) gives ad_second's and ad_fd_second's
    tensors."""
    model = make("floating6")
    q, qd, qdd, fx = state(model, 2, True)
    for X, R in zip(ad_pairs(model, sd.rnea, q, qd, qdd, fx), ad_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-12)
    for X, R in zip(ad_pairs(model, sd.aba, q, qd, qdd, fx), ad_fd_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-12)


@pytest.mark.parametrize("name, with_fext", [
    ("chain12", True), ("tree10_rph", False), ("tree10_rph", True), ("chain8_helical", False),
    ("tree7_spherical", False), ("tree7_spherical", True), ("floating6", False),
    ("floating6", True), ("forest6", True)])
def test_equals_casadi_ad(name, with_fext):
    seed = int(with_fext)
    model = make(name, seed)
    q, qd, qdd, fx = state(model, seed + 10, with_fext)
    ours = sd.rnea_second_derivatives(model, q, qd, qdd, fx)
    assert all(isinstance(T, np.ndarray) and T.shape == (model.nv,) * 3 for T in ours)
    for n, X, R in zip(NAMES, ours, ad_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-9, f"{name} seed {seed} {n}")


def test_gravity_and_armature_do_not_break_agreement():
    model = make("tree10_rph", 3).replace(armature=np.linspace(0.1, 1.0, 10),
                                          gravity=np.array([0.3, -2.0, -9.81]))
    q, qd, qdd, fx = state(model, 4, True)
    for X, R in zip(sd.rnea_second_derivatives(model, q, qd, qdd, fx),
                    ad_second(model, q, qd, qdd, fx)):
        close(X, R)


def test_casadi_backend_graph_equals_numpy():
    model = random_tree(3, seed=1, joint_kinds=("spherical", "helical"), floating_base=True)
    q, qd, qdd, fx = state(model, 2, True)
    qs, vs, acc = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    graphs = sd.rnea_second_derivatives(model, qs, vs, acc, fx)
    assert all(isinstance(T, sd.backends.Tensor3) for T in graphs)
    f = ca.Function("so", [qs, vs, acc], [ca.horzcat(*T.pages) for T in graphs])
    nv = model.nv
    for X, R in zip(f(q, qd, qdd), sd.rnea_second_derivatives(model, q, qd, qdd, fx)):
        close(np.array(X, float).reshape(nv, nv, nv, order="F"), R, 1e-12)
    # numbers given to the casadi backend: a Tensor3 of constant SX pages
    num = sd.rnea_second_derivatives(model, q, qd, qdd, fx, backend="casadi")
    close(ca.DM(ca.horzcat(*num[0].pages)).full().reshape(nv, nv, nv, order="F"),
          f(q, qd, qdd)[0].full().reshape(nv, nv, nv, order="F"), 1e-12)


@pytest.mark.parametrize("which", ["rnea", "aba"])
def test_symengine_backend_equals_numpy(which):
    pytest.importorskip("symengine")
    fn = getattr(sd, f"{which}_second_derivatives")
    model = random_tree(3, seed=1, joint_kinds=("revolute", "spherical"))
    q, qd, u, fx = state(model, 0, True)
    T = fn(model, q, qd, u, fx, backend="symengine")
    assert all(isinstance(X, sd.backends.Tensor3) for X in T)
    for X, R in zip(T, fn(model, q, qd, u, fx)):
        close(X, R, 1e-12)


@pytest.mark.slow
def test_jax_backend_under_jit_equals_numpy():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    model = serial_chain(2, joint=("spherical", "revolute"), seed=1)  # compile time grows fast
    q, qd, u, fx = state(model, 0, True)
    for fn in (sd.rnea_second_derivatives, sd.aba_second_derivatives):
        T = jax.jit(lambda a, b, c: fn(model, a, b, c, fx, backend="jax"))(q, qd, u)
        for X, R in zip(T, fn(model, q, qd, u, fx)):
            close(np.asarray(X), R, 1e-12)


@pytest.mark.slow          # an XLA compile per route and algorithm
@pytest.mark.parametrize("route", ["graph", "program"])
def test_jax_compile_equals_numpy(route):
    """symdyn.jax.compile of both second-order algorithms (a floating tree with a spherical
    joint), by the lowered graph and by the recorded program, batched."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from symdyn import jax as sjax

    model = random_tree(3, seed=1, joint_kinds=("revolute", "spherical"), floating_base=True)
    rng = np.random.default_rng(5)
    Q = np.stack([model.random_q(rng) for _ in range(3)])
    V, U = rng.normal(size=(2, 3, model.nv))
    for name in ("rnea_second_derivatives", "aba_second_derivatives"):
        out = sjax.compile(model, name, route=route)(Q, V, U)
        for b in range(3):
            for X, R in zip(out, getattr(sd, name)(model, Q[b], V[b], U[b])):
                close(np.asarray(X[b]), R, 1e-12, f"{name} {route} state {b}")


@pytest.mark.parametrize("tree", [
    dict(n=4, parents=[-1, 0, 1, 2], joint_kinds=("helical", "revolute")),
    pytest.param(dict(n=5, joint_kinds=("revolute", "prismatic", "helical")),
                 marks=pytest.mark.slow)])
def test_equals_jax_forward_over_forward_ad(tree):
    """jax.jacfwd(jax.jacfwd(.)) of the JAX backend's rnea, crba and aba (generalized
    coordinates: tangent and coordinate derivatives coincide); small trees, since XLA compiles
    the nested forward passes slowly."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    model = random_tree(seed=2, **tree)
    q, qd, qdd, _ = state(model, 3)
    tau = sd.rnea(model, q, qd, qdd)

    def rnea(a, b, c):
        return sd.rnea(model, a, b, c, backend="jax")

    def aba(a, b, c):
        return sd.aba(model, a, b, c, backend="jax")

    jf, jr = jax.jacfwd, lambda f: jax.jit(f)
    want_id = (jr(jf(jf(rnea, 0), 0))(q, qd, qdd), jr(jf(jf(rnea, 1), 1))(q, qd, qdd),
               jr(jf(jf(rnea, 0), 1))(q, qd, qdd),
               jr(jf(lambda a: sd.crba(model, a, backend="jax")))(q))
    want_fd = (jr(jf(jf(aba, 0), 0))(q, qd, tau), jr(jf(jf(aba, 1), 1))(q, qd, tau),
               jr(jf(jf(aba, 0), 1))(q, qd, tau), jr(jf(jf(aba, 2), 0))(q, qd, tau))
    for got, want in ((sd.rnea_second_derivatives(model, q, qd, qdd), want_id),
                      (sd.aba_second_derivatives(model, q, qd, tau), want_fd)):
        for g, w, what in zip(got, want, NAMES, strict=True):
            close(g, np.asarray(w), 1e-9, what)


def two_link_arm():
    bodies = [Body("l1", None, Revolute("z"), 1.3, [0.5, 0.1, 0.0], np.diag([0.02, 0.1, 0.1]),
                   Transform(np.eye(3), np.zeros(3))),
              Body("l2", "l1", Revolute("y"), 0.7, [0.4, 0.0, 0.05], np.diag([0.01, 0.05, 0.06]),
                   Transform(np.eye(3), np.array([1.0, 0.0, 0.0])))]
    return Model(bodies, name="arm2")


def test_sympy_two_link_arm_equals_differentiated_rnea():
    model = two_link_arm()
    q, qd, qdd = (sp.Matrix(sp.symbols(f"{s}1:3", real=True)) for s in ("q", "v", "a"))
    T = sd.rnea_second_derivatives(model, q, qd, qdd)
    assert all(isinstance(X, sd.backends.Tensor3) for X in T)
    tau = sd.rnea(model, q, qd, qdd)
    M = sd.crba(model, q)
    ref = [[[tau[i].diff(q[j], q[k]) for k in range(2)] for j in range(2)] for i in range(2)], \
        [[[tau[i].diff(qd[j], qd[k]) for k in range(2)] for j in range(2)] for i in range(2)], \
        [[[tau[i].diff(q[j], qd[k]) for k in range(2)] for j in range(2)] for i in range(2)], \
        [[[M[i, j].diff(q[k]) for k in range(2)] for j in range(2)] for i in range(2)]
    point = dict(zip(list(q) + list(qd) + list(qdd),
                     map(sp.Float, [0.3, -1.1, 0.7, 2.0, -0.4, 1.5])))

    def at(e):
        return float(sp.sympify(e).xreplace(point))
    for n, X, R in zip(NAMES, T, ref):
        got = [[[at(X[i, j, k]) for k in range(2)] for j in range(2)] for i in range(2)]
        close(got, [[[at(e) for e in row] for row in blk] for blk in R], 1e-10, n)


@pytest.mark.parametrize("name", ["tree10_rph", "tree7_spherical", "floating4"])
def test_aba_second_derivatives_equal_casadi_ad(name):
    model = make(name, 2) if name in TREES else \
        random_tree(4, seed=2, joint_kinds=("helical", "spherical"), floating_base=True)
    model = model.replace(armature=np.full(model.nv, 0.2))
    q, qd, tau, fx = state(model, 3, True)
    ours = sd.aba_second_derivatives(model, q, qd, tau, fx)
    for n, X, R in zip(("d2qdd_dq2", "d2qdd_dqd2", "d2qdd_dq_dqd", "dMinv_dq"), ours,
                       ad_fd_second(model, q, qd, tau, fx)):
        close(X, R, 1e-9, f"{name} {n}")


def test_aba_second_derivatives_casadi_graph():
    model = random_tree(4, seed=6, joint_kinds=("revolute", "spherical"))
    q, qd, tau, fx = state(model, 1, True)
    qs, vs, us = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    graphs = sd.aba_second_derivatives(model, qs, vs, us, fx)
    f = ca.Function("fd2", [qs, vs, us], [ca.horzcat(*T.pages) for T in graphs])
    nv = model.nv
    for X, R in zip(f(q, qd, tau), ad_fd_second(model, q, qd, tau, fx)):
        close(np.array(X, float).reshape(nv, nv, nv, order="F"), R, 1e-9)


# --- identities -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TREES))
def test_dqd2_is_the_symmetrized_christoffel_symbols(name):
    """tau is quadratic in qd with C[i, j] = sum_k Gamma[i, j, k] qd[k] and C qd = tau's qd part,
    so d2tau_i/dqd_j dqd_k = Gamma[i, j, k] + Gamma[i, k, j]."""
    model = make(name, 5)
    q, qd, qdd, _ = state(model, 6)
    G = sd.christoffel(model, q)
    close(sd.rnea_second_derivatives(model, q, qd, qdd)[1], G + G.transpose(0, 2, 1), 1e-10)


@pytest.mark.parametrize("name", ONE_DOF)
def test_dq2_symmetric_for_generalized_coordinates(name):
    model = make(name, 7)
    q, qd, qdd, fx = state(model, 8, True)
    dq2 = sd.rnea_second_derivatives(model, q, qd, qdd, fx)[0]
    close(dq2, dq2.transpose(0, 2, 1), 1e-11)


def motion_cross(x, y):
    """x x y for 6-D motion vectors [angular; linear]."""
    return np.concatenate([np.cross(x[:3], y[:3]), np.cross(x[:3], y[3:]) + np.cross(x[3:], y[:3])])


@pytest.mark.parametrize("model", [serial_chain(4, joint=("revolute", "spherical"), seed=3),
                                   make("floating6", 1)], ids=["spherical", "floating"])
def test_dq2_within_a_quaternion_joint_is_off_symmetric_by_the_lie_bracket(model):
    """q (+) e_k (+) e_j = q exp(e_k) exp(e_j): within one spherical or floating joint
    d2tau_dq2[:, j, k] - d2tau_dq2[:, k, j] = dtau_dq along the bracket e_k x e_j of the modes."""
    q, qd, qdd, fx = state(model, 1, True)
    dq2 = sd.rnea_second_derivatives(model, q, qd, qdd, fx)[0]
    dq, _ = sd.rnea_derivatives(model, q, qd, qdd, fx)
    quat = [(i, j) for i, j in enumerate(model.joints) if j.type in ("spherical", "floating")]
    assert quat
    for i, joint in quat:
        a, b = model.v_idx[i]
        modes = np.eye(6)[:, :3] if joint.type == "spherical" else np.eye(6)
        for j in range(b - a):
            for k in range(b - a):
                bracket = np.linalg.lstsq(modes, motion_cross(modes[:, k], modes[:, j]),
                                          rcond=None)[0]
                close(dq2[:, a + j, a + k] - dq2[:, a + k, a + j], dq[:, a:b] @ bracket, 1e-10)
        blk = dq2[:, a:b, a:b]
        assert np.abs(blk - blk.transpose(0, 2, 1)).max() > 1e-6   # not symmetric there


@pytest.mark.parametrize("name", ONE_DOF)
def test_dM_dq_gives_the_christoffel_symbols_eq4(name):
    model = make(name, 9)
    q, qd, qdd, _ = state(model, 2)
    dM = sd.rnea_second_derivatives(model, q, qd, qdd)[3]
    G = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
    close(G, sd.christoffel(model, q), 1e-10)
    close(dM, dM.transpose(1, 0, 2), 1e-12)        # M symmetric


@pytest.mark.parametrize("name", list(TREES))
def test_consistent_with_first_order_idsva(name):
    """tau is linear in qd's products: dtau_dqd = sum_k d2tau_dqd2[:, :, k] qd_k, and the
    qd-quadratic part of dtau_dq is half of sum_k d2tau_dq_dqd[:, :, k] qd_k; the qdd-linear part
    of dtau_dq is sum_k dM_dq[:, k, :] qdd_k (a contraction over the middle index)."""
    model = make(name, 11)
    q, qd, qdd, fx = state(model, 12, True)
    dq2, dqd2, x, dM = sd.rnea_second_derivatives(model, q, qd, qdd, fx)
    dq, dqd = sd.rnea_derivatives(model, q, qd, qdd, fx)
    close(dqd, dqd2 @ qd, 1e-10)
    z = np.zeros(model.nv)
    dq0, _ = sd.rnea_derivatives(model, q, z, qdd, fx)
    close(dq - dq0, 0.5 * (x @ qd), 1e-10)
    dqg, _ = sd.rnea_derivatives(model, q, qd, z, fx)
    close(dq - dqg, np.einsum("ikj,k->ij", dM, qdd), 1e-10)


# --- bad input ------------------------------------------------------------------------------------

def test_bad_inputs():
    model = make("floating6", 0)
    q, qd, qdd, fx = state(model, 0, True)
    nv = model.nv
    f = sd.rnea_second_derivatives
    with pytest.raises(ValueError, match="q must have shape"):
        f(model, q[:-1], qd, qdd)
    with pytest.raises(ValueError, match="qd must have shape"):
        f(model, q, np.zeros(nv + 1), qdd)
    with pytest.raises(ValueError, match="qdd must have shape"):
        f(model, q, qd, np.zeros((2, nv)))
    with pytest.raises(ValueError, match="NaN"):
        f(model, q, np.full(nv, np.nan), qdd)
    with pytest.raises(TypeError, match="complex"):
        f(model, q, qd, qdd.astype(complex))
    with pytest.raises(ValueError, match="unit quaternion"):
        f(model, 2 * q, qd, qdd)
    with pytest.raises(ValueError, match="f_ext"):
        f(model, q, qd, qdd, fx[:-1])
    with pytest.raises(ValueError, match="f_ext"):
        f(model, q, qd, qdd, [np.zeros(5)] * model.N)
    with pytest.raises(TypeError, match="symdyn Model"):
        f("model", q, qd, qdd)


def test_bad_inputs_forward_dynamics():
    model = make("tree7_spherical", 0)
    q, qd, tau, fx = state(model, 0, True)
    f = sd.aba_second_derivatives
    with pytest.raises(ValueError, match="tau must have shape"):
        f(model, q, qd, tau[:-1])
    with pytest.raises(ValueError, match="NaN"):
        f(model, q, qd, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="f_ext"):
        f(model, q, qd, tau, fx[:-1])


def test_planar_joint_is_refused():
    model = serial_chain(3, joint=("revolute", "planar"))
    z = np.zeros(model.nv)
    for f in (sd.rnea_second_derivatives, sd.aba_second_derivatives):
        with pytest.raises(ValueError, match="motion subspace that varies"):
            f(model, np.zeros(model.nq), z, z)


# --- slow: larger N and robots --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("kw", [dict(n=25, parents=list(range(-1, 24))),
                                dict(n=30, joint_kinds=("revolute", "prismatic", "helical")),
                                dict(n=16, joint_kinds=("revolute", "spherical"),
                                     floating_base=True)])
def test_large_models_equal_casadi_ad(kw):
    model = random_tree(seed=4, **kw)
    q, qd, qdd, fx = state(model, 5, True)
    for n, X, R in zip(NAMES, sd.rnea_second_derivatives(model, q, qd, qdd, fx),
                       ad_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-9, n)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [dict(n=40, parents=list(range(-1, 39)), joint_kinds=(
                                    "revolute", "prismatic", "helical", "spherical")),
                                dict(n=40, joint_kinds=("revolute", "spherical"),
                                     floating_base=True)])
def test_forty_bodies_equal_casadi_ad(kw):
    """N = 40 (a chain and a floating tree, every joint kind of SO-IDSVA), ID and FD, against the
    pairwise AD: ID to 1e-9; FD to 1e-7, the rounding of a 40-body chain (nv = 62, cond(M) about
    6e4): there AD through ABA and AD through RNEA and M^-1 differ by 3e-8 in d2qdd_dq2
    themselves, and these derivatives lie 3e-9 from the latter."""
    model = random_tree(seed=6, **kw)
    q, qd, x, fx = state(model, 7, True)
    for fn, mine, tol in ((sd.rnea, sd.rnea_second_derivatives, 1e-9),
                          (sd.aba, sd.aba_second_derivatives, 1e-7)):
        for n, X, R in zip(NAMES, mine(model, q, qd, x, fx), ad_pairs(model, fn, q, qd, x, fx)):
            close(X, R, tol, f"{fn.__name__} {n}")


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["talos", "g1"])
def test_humanoid_forward_dynamics_equal_casadi_ad(robot):
    """The humanoids' FD second derivatives (ad_fd_second's graph is too large there) against
    the pairwise AD."""
    pytest.importorskip("pinocchio")
    model = sd.load_robot(robot)
    q, qd, tau, fx = state(model, 3, True)
    for n, X, R in zip(NAMES, sd.aba_second_derivatives(model, q, qd, tau, fx),
                       ad_pairs(model, sd.aba, q, qd, tau, fx)):
        close(X, R, 1e-9, f"{robot} FD {n}")


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["ur5", "panda", "solo12", "talos", "g1"])
def test_robots_equal_casadi_ad(robot):
    pytest.importorskip("pinocchio")
    model = sd.load_robot(robot)
    q, qd, qdd, fx = state(model, 3, True)
    for n, X, R in zip(NAMES, sd.rnea_second_derivatives(model, q, qd, qdd, fx),
                       ad_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-9, f"{robot} {n}")
    if model.nv > 20:        # the humanoids' FD: test_humanoid_forward_dynamics_equal_casadi_ad
        return
    for n, X, R in zip(NAMES, sd.aba_second_derivatives(model, q, qd, qdd, fx),
                       ad_fd_second(model, q, qd, qdd, fx)):
        close(X, R, 1e-9, f"{robot} FD {n}")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["rnea", "aba"])
def test_recorded_step_program_equals_numpy(which):
    """Every computation runs inside steps, so the recursive form records them; its program
    evaluates to the same tensors."""
    from symdyn.codegen import recursive
    from symdyn.codegen.recursive.program import evaluate

    fn = getattr(sd, f"{which}_second_derivatives")
    model = random_tree(5, seed=1, joint_kinds=("revolute", "spherical"), floating_base=True)
    q, qd, u, _ = state(model, 0)
    prog = recursive.record(model, fn, [model.nq, model.nv, model.nv], name=f"so_{which}",
                            cse=True, fuse=1)
    for X, R in zip(evaluate(prog, q, qd, u), fn(model, q, qd, u)):
        close(X, R, 1e-12)
