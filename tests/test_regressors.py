"""Regressors and inertial parameters (issue 13, section 3).

Checks: the 10-parameter order against Pinocchio's ``toDynamicParameters``; every regressor
against the algorithms it linearizes (rnea; crba + coriolis_product + gravity_vector for
Slotine-Li with C*; 1/2 qd^T M qd; -sum m g . c with its gradient equal to g(q)) on random trees of
every joint type (floating base included) and on example-robot-data arms; the joint torque and
energy regressors against Pinocchio; SymPy / SymEngine / CasADi evaluated at numbers against NumPy;
closed forms of a planar 2R arm; base parameters.
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.algorithms.coriolis import coriolis_product
from symdyn.algorithms.regressors import (body_regressor, joint_torque_regressor,
                                          kinetic_energy_regressor, potential_energy_regressor,
                                          slotine_li_regressor)
from symdyn.identification import base_parameters
from symdyn.identification.parameters import (inertia_from_parameters, inertial_parameters, parameters_from_inertia,
                             with_inertial_parameters)
from symdyn.model import ModelError
from symdyn.models import planar_chain, serial_chain

from conftest import MODELS, SYMPY_MODELS, assert_close, evaluate, run

NUMERIC = dict(MODELS, planar2=planar_chain(2), serial6=serial_chain(6, seed=7))


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = model.random_q(rng)
    return (q, *(rng.uniform(-3, 3, model.nv) for _ in range(4)))


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


# --- inertial parameters --------------------------------------------------------------------------

def test_parameter_order_is_pinocchios():
    pin = pytest.importorskip("pinocchio")
    for k in range(5):
        Ipin = pin.Inertia.Random()
        p = parameters_from_inertia(Ipin.mass, Ipin.lever, Ipin.inertia)
        assert rel(p, Ipin.toDynamicParameters()) < 1e-14
        m, c, Ic = inertia_from_parameters(p)
        assert abs(m - Ipin.mass) < 1e-14 and rel(c, Ipin.lever) < 1e-13 and rel(Ic, Ipin.inertia) < 1e-12


@pytest.mark.parametrize("name", ["serial", "floating", "ur5", "panda", "solo12", "talos"])
def test_inertial_parameters_match_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import pinocchio_order, to_pinocchio

    model = sd.load_robot(name) if name in ("ur5", "panda", "solo12", "talos") else MODELS[name]
    pm = to_pinocchio(model)
    pi = inertial_parameters(model)
    assert pi.shape == (10 * model.N,)
    for k, i in enumerate(pinocchio_order(model)):
        assert rel(pi[10 * i:10 * i + 10], pm.inertias[k + 1].toDynamicParameters()) < 1e-12


@pytest.mark.parametrize("name", ["mixed", "floating"])
def test_with_inertial_parameters_round_trip_and_validation(name):
    model = MODELS[name]
    pi = inertial_parameters(model)
    m2 = with_inertial_parameters(model, pi)
    assert rel(inertial_parameters(m2), pi) < 1e-14
    q, qd, qdd, _, _ = state(model)
    assert_close(sd.rnea(m2, q, qd, qdd), sd.rnea(model, q, qd, qdd), 1e-12)
    # a different, physical parameter vector changes the dynamics as Y predicts
    pi3 = inertial_parameters(model.replace(inertias=[(2.0, np.array([0.1, -0.2, 0.3]),
                                                        np.diag([0.3, 0.4, 0.5]))] * model.N))
    m3 = with_inertial_parameters(model, pi3)
    assert_close(sd.rnea(m3, q, qd, qdd), joint_torque_regressor(model, q, qd, qdd) @ pi3, 1e-12)
    bad = pi.copy()
    bad[0] = -1.0                                            # negative mass
    with pytest.raises(ModelError, match=model.names[0]):
        with_inertial_parameters(model, bad)
    bad = pi.copy()
    bad[4] = -5.0                                            # I_xx about the origin < 0: no body
    with pytest.raises(ModelError):
        with_inertial_parameters(model, bad)
    with pytest.raises(ValueError, match="10 N"):
        with_inertial_parameters(model, pi[:-1])
    with pytest.raises(ModelError, match="CasADi"):
        with_inertial_parameters(model, ca.SX.sym("p", pi.size))


def test_with_symbolic_inertial_parameters():
    model = planar_chain(2)
    syms = sp.symbols("p0:20")
    ms = with_inertial_parameters(model, syms)
    assert ms.is_symbolic and set(ms.parameters()) <= set(syms)
    assert list(inertial_parameters(ms)) == list(syms)
    q, qd, qdd, _, _ = state(model, 3)
    tau = sd.rnea(ms, q, qd, qdd)                             # linear in the symbols
    pi = inertial_parameters(model)
    val = np.array(tau.subs(dict(zip(syms, pi))), float).ravel()
    assert_close(val, sd.rnea(model, q, qd, qdd), 1e-10)
    Y = joint_torque_regressor(model, q, qd, qdd)
    assert_close(np.array(tau.jacobian(syms), float), Y, 1e-10)
    sym = planar_chain(2, symbolic_params=True)               # symbolic model: exact round trip
    pi_s = inertial_parameters(sym)
    assert pi_s[1] == sp.Symbol("lc1", positive=True) * sp.Symbol("m1", positive=True)
    assert inertial_parameters(with_inertial_parameters(sym, pi_s)) == pi_s


# --- regressors against the algorithms (NumPy) ------------------------------------------------------

@pytest.mark.parametrize("name", list(NUMERIC) + ["ur5", "panda", "solo12"])
def test_regressors_match_algorithms(name):
    model = sd.load_robot(name) if name in ("ur5", "panda", "solo12") else NUMERIC[name]
    pi = inertial_parameters(model)
    for seed in range(2):
        q, qd, qdd, qr, qrr = state(model, seed)
        Y = joint_torque_regressor(model, q, qd, qdd)
        assert Y.shape == (model.nv, 10 * model.N)
        assert rel(Y @ pi, sd.rnea(model, q, qd, qdd)) < 1e-12
        Ys = slotine_li_regressor(model, q, qd, qr, qrr)
        ref = sd.crba(model, q) @ qrr + coriolis_product(model, q, qd, qr) + sd.gravity_vector(model, q)
        assert rel(Ys @ pi, ref) < 1e-12
        _, _, C = sd.coriolis_matrix(model, q, qd)
        assert rel(Ys @ pi, sd.crba(model, q) @ qrr + C @ qr + sd.gravity_vector(model, q)) < 1e-12
        assert rel(slotine_li_regressor(model, q, qd, qd, qdd), Y) < 1e-13   # qr = qd: RNEA's
        Y9 = slotine_li_regressor(model, q, qd, qr, qrr, "simple")          # eq. (9) instead
        ref9 = ref - coriolis_product(model, q, qd, qr) + coriolis_product(model, q, qd, qr, "simple")
        assert rel(Y9 @ pi, ref9) < 1e-12
        assert rel(slotine_li_regressor(model, q, qd, qd, qdd, "simple"), Y) < 1e-13
        T = kinetic_energy_regressor(model, q, qd)
        assert T.shape == (1, 10 * model.N)
        assert rel(T @ pi, [0.5 * qd @ sd.crba(model, q) @ qd]) < 1e-12


def _potential_energy(model, q):
    R, p, _ = sd.forward_kinematics(model, q)
    g = np.asarray(model.gravity, float)
    V = 0.0
    for i, I6 in enumerate(model.I):
        I6 = np.asarray(I6, float)
        m, h = I6[3, 3], np.array([I6[2, 4], I6[0, 5], I6[1, 3]])
        V -= g @ (m * np.asarray(p[i]).ravel() + np.asarray(R[i]) @ h)
    return V


@pytest.mark.parametrize("name", ["mixed", "floating", "serial6"])
def test_potential_energy_regressor(name):
    """V = Y pi = -sum m g . c, and its derivative along q (+) eps v is g(q) . v."""
    model = NUMERIC[name]
    pi = inertial_parameters(model)
    q, v, _, _, _ = state(model, 1)
    YV = potential_energy_regressor(model, q)
    assert YV.shape == (1, 10 * model.N)
    assert rel(YV @ pi, [_potential_energy(model, q)]) < 1e-12
    eps = 1e-6
    Vp = potential_energy_regressor(model, sd.integrate(model, q, v, eps)) @ pi
    Vm = potential_energy_regressor(model, sd.integrate(model, q, v, -eps)) @ pi
    assert abs((Vp - Vm)[0] / (2 * eps) - sd.gravity_vector(model, q) @ v) < 1e-6 * max(1, abs(Vp[0]))


# --- against Pinocchio ------------------------------------------------------------------------------

ROBOTS = ("ur5", "panda", "solo12", "talos")    # arms, a quadruped and a humanoid (floating)


@pytest.mark.parametrize("name", ["serial", "branched", "random", "floating", *ROBOTS])
def test_regressors_match_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import (matrix_from_pin, pinocchio_order, q_to_pin, to_pinocchio,
                                         v_to_pin)

    model = sd.load_robot(name) if name in ROBOTS else MODELS[name]
    pm = to_pinocchio(model)
    pd = pm.createData()
    cols = np.array([10 * i + k for i in pinocchio_order(model) for k in range(10)])

    def ours(A_pin, rows):                 # pin's columns (bodies in pin's order) -> ours
        out = np.empty_like(A_pin)
        out[:, cols] = A_pin
        return matrix_from_pin(model, out, rows="v", cols="x") if rows == "v" else out

    for seed in range(2):
        q, qd, qdd, _, _ = state(model, seed)
        qp, vp, ap = q_to_pin(model, q), v_to_pin(model, qd), v_to_pin(model, qdd)
        Ypin = pin.computeJointTorqueRegressor(pm, pd, qp, vp, ap)
        assert rel(joint_torque_regressor(model, q, qd, qdd), ours(Ypin, "v")) < 1e-12
        Tpin = pin.computeKineticEnergyRegressor(pm, pd, qp, vp).reshape(1, -1)
        assert rel(kinetic_energy_regressor(model, q, qd), ours(Tpin, None)) < 1e-12
        Vpin = pin.computePotentialEnergyRegressor(pm, pd, qp).reshape(1, -1)
        assert rel(potential_energy_regressor(model, q), ours(Vpin, None)) < 1e-12


def test_body_regressor_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    B = sd.get_backend("numpy")
    rng = np.random.default_rng(2)
    swap = np.r_[3:6, 0:3]                                    # [linear; angular] <-> [angular; linear]
    for _ in range(3):
        v, a = rng.normal(size=6), rng.normal(size=6)
        Ypin = pin.bodyRegressor(pin.Motion(v[swap]), pin.Motion(a[swap]))
        assert rel(body_regressor(B, v, a), Ypin[swap]) < 1e-13


# --- backends ---------------------------------------------------------------------------------------

def _four(model, q, qd, qdd, qr, qrr):
    return [joint_torque_regressor(model, q, qd, qdd), slotine_li_regressor(model, q, qd, qr, qrr),
            kinetic_energy_regressor(model, q, qd), potential_energy_regressor(model, q)]


@pytest.mark.parametrize("backend", ["sympy", "casadi"])
@pytest.mark.parametrize("name", ["mixed", "floating"])
def test_symbolic_backends_match_numpy(backend, name):
    model = (SYMPY_MODELS if backend == "sympy" else MODELS)[name]
    args = state(model, 4)
    ref = _four(model, *args)
    numeric = (0,) if backend == "sympy" else ()             # SymPy: numeric q keeps it small
    got = run(backend, _four, model, *args, numeric=numeric)
    for g, r in zip(got, ref):
        assert_close(g, r, 1e-10)


def test_symengine_matches_numpy():
    se = pytest.importorskip("symengine")
    model = SYMPY_MODELS["mixed"]
    syms = [se.DenseMatrix([[s] for s in se.symbols(f"{p}0:{k}")])
            for p, k in (("q", model.nq), ("v", model.nv), ("a", model.nv), ("r", model.nv),
                         ("s", model.nv))]
    q, qd, qdd, qr, qrr = state(model, 5)
    flat = [s for v in syms for s in v]
    vals = np.concatenate([q, qd, qdd, qr, qrr])
    for out, ref in zip(_four(model, *syms), _four(model, q, qd, qdd, qr, qrr)):
        f = se.Lambdify(flat, out, cse=True)
        assert_close(np.asarray(f(vals), float).reshape(ref.shape), ref, 1e-10)


def test_casadi_function_and_backend_argument():
    model = MODELS["floating"]
    q, qd, qdd, qr, qrr = state(model, 6)
    Q, V, U = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    f = ca.Function("Y", [Q, V, U], [joint_torque_regressor(model, Q, V, U)])
    assert_close(np.array(f(q, qd, qdd)), joint_torque_regressor(model, q, qd, qdd), 1e-12)
    Y = slotine_li_regressor(model, q, qd, qr, qrr, backend="casadi")
    assert isinstance(Y, ca.SX)
    assert_close(evaluate(Y), slotine_li_regressor(model, q, qd, qr, qrr), 1e-12)


# --- closed forms -----------------------------------------------------------------------------------

def test_closed_form_planar_2r():
    """SymPy regressor of planar_chain(2, symbolic_params=True): entries depend on q, qd, qdd and
    the lengths only (no mass, CoM or inertia symbol), and Y pi simplifies to the symbolic rnea."""
    model = planar_chain(2, symbolic_params=True)
    q, qd, qdd = (sp.Matrix(sp.symbols(f"{s}1:3")) for s in ("q", "qd", "qdd"))
    Y = joint_torque_regressor(model, q, qd, qdd)
    assert Y.shape == (2, 20)
    inertial = {s for s in model.parameters() if s.name[0] in "mI" or s.name.startswith("lc")}
    assert inertial and not (Y.free_symbols & inertial)
    assert Y.free_symbols <= set(q) | set(qd) | set(qdd) | {sp.Symbol("l1", positive=True)}
    pi = inertial_parameters(model)
    tau = sd.rnea(model, q, qd, qdd)
    assert sp.simplify(Y @ pi - tau) == sp.zeros(2, 1)
    Ys = slotine_li_regressor(model, q, qd, qd, qdd)
    assert sp.simplify(Ys - Y) == sp.zeros(2, 20)
    qr, qrr = sp.Matrix(sp.symbols("r1:3")), sp.Matrix(sp.symbols("s1:3"))
    Ysl = slotine_li_regressor(model, q, qd, qr, qrr)
    M, _, C = sd.coriolis_matrix(model, q, qd)
    G = sd.gravity_vector(model, q)
    assert not (Ysl.free_symbols & inertial)
    assert sp.simplify(Ysl @ pi - (M @ qrr + C @ qr + G)) == sp.zeros(2, 1)
    # a textbook entry: link2.mc_x in tau_2 is l1 (sin q2 qd1^2 + cos q2 qdd1) + g cos(q1 + q2)
    l1 = sp.Symbol("l1", positive=True)
    entry = l1 * (sp.sin(q[1]) * qd[0] ** 2 + sp.cos(q[1]) * qdd[0]) + sp.Float(9.81) * sp.cos(q[0] + q[1])
    assert sp.simplify(Y[1, 11] - entry) == 0


# --- base parameters --------------------------------------------------------------------------------

def _row_space_equal(A, B_):
    r = np.linalg.matrix_rank
    return r(A) == r(B_) == r(np.vstack([A, B_]))


@pytest.mark.parametrize("gravity, rank", [((0.0, -9.81, 0.0), 6), ((0.0, 0.0, 0.0), 4),
                                           ((0.0, 0.0, -9.81), 4)])
def test_base_parameters_planar_2r(gravity, rank):
    """Planar 2R (revolute z, link length l1 = 0.7): only m, mc_x, mc_y, I_zz of each link act in the
    plane. With gravity in the plane the 6 base parameters are ZZ1 + m2 l1^2, MX1 + m2 l1, MY1, ZZ2,
    MX2, MY2; without gravity in the plane (zero or along z) MX1 + m2 l1 and MY1 drop out: 4."""
    model = planar_chain(2, length=0.7).replace(gravity=gravity)
    bp = base_parameters(model)
    assert bp.rank == rank
    l1, idx = 0.7, {n: k for k, n in enumerate(bp.parameter_names)}
    e = np.eye(20)
    combos = [e[idx["link1.I_zz"]] + l1 ** 2 * e[idx["link2.m"]], e[idx["link2.I_zz"]],
              e[idx["link2.mc_x"]], e[idx["link2.mc_y"]]]
    if rank == 6:
        combos += [e[idx["link1.mc_x"]] + l1 * e[idx["link2.m"]], e[idx["link1.mc_y"]]]
    assert _row_space_equal(bp.K, np.array(combos))
    assert np.allclose(bp.K[:, bp.independent], np.eye(rank))


@pytest.mark.parametrize("name", ["serial6", "floating", "ur5"])
def test_base_parameters_reproduce_regressor(name):
    model = sd.load_robot(name) if name == "ur5" else NUMERIC[name]
    bp = base_parameters(model, seed=1)
    assert 0 < bp.rank < 10 * model.N and len(bp.independent) + len(bp.dependent) == 10 * model.N
    pi = inertial_parameters(model)
    rng = np.random.default_rng(11)
    W = np.vstack([joint_torque_regressor(model, *state(model, 100 + k)[:3]) for k in range(40)])
    assert np.linalg.matrix_rank(bp.regressor(W)) == bp.rank == np.linalg.matrix_rank(W)
    for _ in range(3):
        pi_r = pi + rng.normal(size=pi.size)                  # any parameter vector, not only physical
        q, qd, qdd, _, _ = state(model, int(rng.integers(1000)))
        Y = joint_torque_regressor(model, q, qd, qdd)
        assert rel(bp.regressor(Y) @ bp.values(pi_r), Y @ pi_r) < 1e-9
    assert len(bp.expressions()) == bp.rank


def test_public_api():
    """Model methods delegate to symdyn.identification.parameters; the regressors are exported at the top level."""
    model = MODELS["branched"]
    pi = sd.inertial_parameters(model)
    assert rel(pi, inertial_parameters(model)) == 0
    assert rel(sd.inertial_parameters(sd.with_inertial_parameters(model, 2 * pi)), 2 * pi) < 1e-14
    q, qd, qdd, _, _ = state(model, 9)
    assert rel(sd.joint_torque_regressor(model, q, qd, qdd) @ pi, sd.rnea(model, q, qd, qdd)) < 1e-12
    for name in ("joint_torque_regressor", "slotine_li_regressor", "kinetic_energy_regressor",
                 "potential_energy_regressor", "inertial_parameters", "with_inertial_parameters",
                 "base_parameters", "BaseParameters"):
        assert name in sd.__all__ and hasattr(sd, name)
    assert sd.base_parameters(planar_chain(2)).rank == 6
