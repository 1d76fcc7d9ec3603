"""Armature in the energies, the regressors and the inertial parameters (issue 46).

``model.armature`` is part of M (crba, rnea, aba). Checks: the kinetic and mechanical energies
include it (one MuJoCo hinge, Pinocchio's computeKineticEnergy / computeMechanicalEnergy on a fixed
arm and a floating quadruped, the power balance d/dt (T + V) = qd . rnea, SymPy / CasADi and
compiled); the regressors keep the rigid-body part by default and with ``armature=True`` append the
armature columns, so that ``Y @ [pi; armature]`` is rnea / the Slotine-Li torque / T of the model
itself (NumPy, SymPy, CasADi, compiled); ``inertial_parameters`` / ``with_inertial_parameters`` /
``parameter_names`` with ``armature=True``; the functions the armature does not enter (centroidal
momentum, as Pinocchio; the Coriolis products, as C does not depend on a constant armature).
"""
from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.algorithms.coriolis import coriolis_product, coriolis_transpose_product
from symdyn.algorithms.regressors import (joint_torque_regressor, kinetic_energy_regressor,
                                          potential_energy_regressor, slotine_li_regressor)
from symdyn.identification.parameters import inertial_parameters, parameter_names, with_inertial_parameters
from symdyn.models import planar_chain

from conftest import MODELS, SYMPY_MODELS, assert_close, requires_cc, run


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def armed(model, seed=0):
    """``model`` with a random armature in [0.1, 1] on every speed."""
    return model.replace(armature=np.random.default_rng(seed).uniform(0.1, 1.0, model.nv))


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    return (model.random_q(rng), *(rng.uniform(-2, 2, model.nv) for _ in range(4)))


# --- energies -------------------------------------------------------------------------------------

def test_one_hinge_against_mujoco():
    """One hinge with armature 0.5 at qd = 2: T = T_body + 1/2 0.5 2^2 (MuJoCo 1.069)."""
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><option><flag energy="enable"/></option><worldbody>
      <body name="link"><joint name="hinge" type="hinge" axis="0 1 0" armature="0.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" mass="1"/></body>
    </worldbody></mujoco>"""
    mj = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(mj)
    data.qvel[:] = 2.0
    mujoco.mj_forward(mj, data)
    model = sd.from_mujoco(mj)
    q, qd = np.zeros(1), np.array([2.0])
    T = sd.kinetic_energy(model, q, qd)
    assert abs(T - data.energy[1]) < 1e-12 * data.energy[1]
    assert abs(T - sd.kinetic_energy(model.replace(armature=0), q, qd) - 1.0) < 1e-14


@pytest.mark.parametrize("name", ["panda", "solo12"])
def test_energies_against_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import q_to_pin, to_pinocchio, v_to_pin

    model = armed(sd.load_robot(name))
    pm = to_pinocchio(model)
    assert np.array_equal(np.sort(pm.armature), np.sort(model.armature))   # carried over
    pd = pm.createData()
    for seed in range(2):
        q, qd, qdd, _, _ = state(model, seed)
        qp, vp = q_to_pin(model, q), v_to_pin(model, qd)
        T = sd.kinetic_energy(model, q, qd)
        assert rel(T, pin.computeKineticEnergy(pm, pd, qp, vp)) < 1e-12
        assert rel(T, 0.5 * qd @ sd.crba(model, q) @ qd) < 1e-12
        assert rel(sd.mechanical_energy(model, q, qd),
                   pin.computeMechanicalEnergy(pm, pd, qp, vp)) < 1e-12
        # the bodies' part alone
        T0 = sd.kinetic_energy(model.replace(armature=0), q, qd)
        assert rel(T - T0, 0.5 * model.armature @ qd ** 2) < 1e-12


@pytest.mark.parametrize("name", ["floating", "mixed"])
def test_power_balance_with_armature(name):
    """d/dt (T + V) = qd . rnea(q, qd, qdd) along q(t), armature included on both sides."""
    model = armed(MODELS[name], 3)
    q, qd, qdd, _, _ = state(model, 4)
    h = 1e-6

    def energy(t):
        return sd.mechanical_energy(model, sd.integrate(model, q, qd * t + qdd * t * t / 2, 1.0),
                                    qd + qdd * t)

    # along the path q(t) = q (+) (qd t + qdd t^2 / 2) the speeds are qd + qdd t only to first order
    # for non-Euclidean joints; both sides then agree to O(h^2)
    rate = (energy(h) - energy(-h)) / (2 * h)
    power = qd @ sd.rnea(model, q, qd, qdd)
    assert abs(rate - power) < 1e-6 * max(1.0, abs(power))


@pytest.mark.parametrize("backend", ["sympy", "casadi"])
def test_energies_on_symbolic_backends(backend):
    model = armed((SYMPY_MODELS if backend == "sympy" else MODELS)["floating"], 5)
    q, qd, _, _, _ = state(model, 6)
    numeric = (0,) if backend == "sympy" else ()
    for fn in (sd.kinetic_energy, sd.mechanical_energy):
        got = run(backend, fn, model, q, qd, numeric=numeric)
        assert_close(np.reshape(got, ()), fn(model, q, qd), 1e-10)
    assert rel(sd.kinetic_energy(model, q, qd), 0.5 * qd @ sd.crba(model, q) @ qd) < 1e-12


# --- regressors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [*MODELS, "panda", "solo12"])
def test_regressor_identities_with_armature(name):
    model = armed(sd.load_robot(name) if name in ("panda", "solo12") else MODELS[name], 7)
    rigid = model.replace(armature=0)
    pi, p = inertial_parameters(model), inertial_parameters(model, armature=True)
    n = 10 * model.N
    assert np.array_equal(p, np.concatenate([pi, model.armature]))
    for seed in range(2):
        q, qd, qdd, qr, qrr = state(model, seed)
        tau = sd.rnea(model, q, qd, qdd)
        # default: the rigid-body part, i.e. rnea of the model without armature
        Y = joint_torque_regressor(model, q, qd, qdd)
        assert Y.shape == (model.nv, n)
        assert rel(Y @ pi, sd.rnea(rigid, q, qd, qdd)) < 1e-12
        assert rel(Y @ pi + model.armature * qdd, tau) < 1e-12
        # armature=True: [Y, diag(qdd)] @ [pi; armature] == rnea of the model itself
        Ya = joint_torque_regressor(model, q, qd, qdd, armature=True)
        assert Ya.shape == (model.nv, n + model.nv)
        assert np.array_equal(Ya[:, :n], Y) and np.array_equal(Ya[:, n:], np.diag(qdd))
        assert rel(Ya @ p, tau) < 1e-12
        # Slotine-Li: M qr_dd + C* qr_d + g with M = crba(model) (armature included)
        for fac in ("christoffel", "simple"):
            ref = (sd.crba(model, q) @ qrr + coriolis_product(model, q, qd, qr, fac)
                   + sd.gravity_vector(model, q))
            Ys = slotine_li_regressor(model, q, qd, qr, qrr, fac)
            assert rel(Ys @ pi, ref - model.armature * qrr) < 1e-12
            Ysa = slotine_li_regressor(model, q, qd, qr, qrr, fac, armature=True)
            assert np.array_equal(Ysa[:, n:], np.diag(qrr))
            assert rel(Ysa @ p, ref) < 1e-12
        assert rel(slotine_li_regressor(model, q, qd, qd, qdd, armature=True), Ya) < 1e-13
        # kinetic energy: T = Y pi + 1/2 sum armature qd^2
        YT = kinetic_energy_regressor(model, q, qd, armature=True)
        assert YT.shape == (1, n + model.nv)
        assert rel(YT @ p, [sd.kinetic_energy(model, q, qd)]) < 1e-12
        assert rel(kinetic_energy_regressor(model, q, qd) @ pi,
                   [sd.kinetic_energy(rigid, q, qd)]) < 1e-12


def _three(model, q, qd, qdd, qr, qrr):
    return [joint_torque_regressor(model, q, qd, qdd, armature=True),
            slotine_li_regressor(model, q, qd, qr, qrr, armature=True),
            kinetic_energy_regressor(model, q, qd, armature=True)]


@pytest.mark.parametrize("backend", ["sympy", "casadi"])
def test_regressors_with_armature_on_symbolic_backends(backend):
    """SymPy on a small tree (its regressors take seconds), CasADi on a floating base."""
    model = armed(SYMPY_MODELS["random"] if backend == "sympy" else MODELS["floating"], 8)
    args = state(model, 9)
    numeric = (0,) if backend == "sympy" else ()
    got = run(backend, _three, model, *args, numeric=numeric)
    p = inertial_parameters(model, armature=True)
    q, qd, qdd, qr, qrr = args
    for g, r in zip(got, _three(model, *args)):
        assert_close(np.reshape(g, r.shape), r, 1e-10)
    assert rel(np.reshape(got[0], (model.nv, -1)) @ p, sd.rnea(model, q, qd, qdd)) < 1e-10


def test_armature_flag_validation():
    model = MODELS["serial"]
    q, qd, qdd, qr, qrr = state(model)
    for bad in (1, "yes", None, model.armature):
        with pytest.raises(TypeError, match="armature"):
            joint_torque_regressor(model, q, qd, qdd, armature=bad)
        with pytest.raises(TypeError, match="armature"):
            slotine_li_regressor(model, q, qd, qr, qrr, armature=bad)
        with pytest.raises(TypeError, match="armature"):
            kinetic_energy_regressor(model, q, qd, armature=bad)
        with pytest.raises(TypeError, match="armature"):
            inertial_parameters(model, armature=bad)
    assert joint_torque_regressor(model, q, qd, qdd, armature=np.bool_(True)).shape == (3, 33)


# --- inertial parameters --------------------------------------------------------------------------

def test_inertial_parameters_round_trip_with_armature():
    model = armed(MODELS["floating"], 10)
    p = inertial_parameters(model, armature=True)
    assert p.shape == (10 * model.N + model.nv,)
    p2 = p.copy()
    p2[10 * model.N:] *= 2.0
    new = with_inertial_parameters(model, p2, armature=True)
    assert np.array_equal(new.armature, 2 * model.armature)
    assert rel(inertial_parameters(new), inertial_parameters(model)) < 1e-14
    # by default the armature is kept
    assert np.array_equal(with_inertial_parameters(model, 2 * p[:10 * model.N]).armature,
                          model.armature)
    names = parameter_names(model, armature=True)
    assert len(names) == p.size and names[:10 * model.N] == parameter_names(model)
    floating = model.joint_names[0]
    assert names[10 * model.N:10 * model.N + 6] == [f"{floating}.armature[{k}]" for k in range(6)]
    with pytest.raises(ValueError, match="armature values"):
        with_inertial_parameters(model, p[:-1], armature=True)
    with pytest.raises(ValueError, match="10 N"):
        with_inertial_parameters(model, p)
    bad = p.copy()
    bad[-1] = -1.0
    with pytest.raises(ValueError, match="armature must be >= 0"):
        with_inertial_parameters(model, bad, armature=True)
    with pytest.raises(TypeError, match="armature"):
        with_inertial_parameters(model, p, armature="yes")


# --- compiled -------------------------------------------------------------------------------------

@requires_cc
def test_compiled_energy_and_regressor_with_armature(tmp_path):
    from symdyn.codegen import build
    from symdyn.models import random_tree

    model = armed(random_tree(3, seed=7, joint_kinds=("revolute", "spherical"),
                              floating_base=True, name="armed"), 11)
    lib = build(model, {"kinetic_energy": {}, "mechanical_energy": {},
                        "joint_torque_regressor": {"armature": True}},
                opt="-O1", cache_dir=tmp_path, progress=False)
    p = inertial_parameters(model, armature=True)
    for seed in range(2):
        q, qd, qdd, _, _ = state(model, seed)
        assert rel(lib.kinetic_energy(q, qd), 0.5 * qd @ sd.crba(model, q) @ qd) < 1e-12
        assert rel(lib.mechanical_energy(q, qd), sd.mechanical_energy(model, q, qd)) < 1e-12
        Y = lib.joint_torque_regressor(q, qd, qdd)
        assert Y.shape == (model.nv, 10 * model.N + model.nv)
        assert rel(Y @ p, sd.rnea(model, q, qd, qdd)) < 1e-12


# --- functions the armature does not enter --------------------------------------------------------

def test_functions_without_armature_terms():
    """The centroidal momentum is the bodies' (Pinocchio's computeCentroidalMap ignores the
    armature too); C, hence C qd_r and C^T qd, does not depend on a constant armature; the
    potential energy and its regressor do not either."""
    model = armed(MODELS["floating"], 12)
    rigid = model.replace(armature=0)
    q, qd, _, qr, _ = state(model, 13)
    for fn, args in ((sd.centroidal_momentum_matrix, (q,)), (sd.centroidal_momentum, (q, qd)),
                     (sd.centroidal_momentum_matrix_time_variation, (q, qd)),
                     (coriolis_product, (q, qd, qr)), (coriolis_transpose_product, (q, qd)),
                     (sd.potential_energy, (q,)), (potential_energy_regressor, (q,))):
        assert np.array_equal(np.asarray(fn(model, *args)), np.asarray(fn(rigid, *args)))
    _, _, C = sd.coriolis_matrix(model, q, qd)
    assert rel(coriolis_product(model, q, qd, qr), C @ qr) < 1e-12
    assert rel(coriolis_transpose_product(model, q, qd), C.T @ qd) < 1e-12


def test_centroidal_map_matches_pinocchio_with_armature():
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import matrix_from_pin, q_to_pin, to_pinocchio

    model = armed(sd.load_robot("solo12"), 14)
    pm = to_pinocchio(model)
    pd = pm.createData()
    q = model.random_q(np.random.default_rng(15))
    A = np.asarray(pin.computeCentroidalMap(pm, pd, q_to_pin(model, q)))
    Ag_pin = matrix_from_pin(model, np.vstack([A[3:], A[:3]]), rows=None, cols="v")  # [ang; lin]
    assert rel(sd.centroidal_momentum_matrix(model, q), Ag_pin) < 1e-12


def test_planar_hinge_energy_closed_form():
    """A single link (planar_chain(1)): T = 1/2 (I_zz,O + armature) qd^2."""
    model = planar_chain(1).replace(armature=0.5)
    izz = inertial_parameters(model)[9]
    T = sd.kinetic_energy(model, np.zeros(1), np.array([2.0]))
    assert rel(T, 0.5 * (izz + 0.5) * 4) < 1e-14


def test_model_methods_pass_the_armature_flag():
    """Model.inertial_parameters / Model.with_inertial_parameters take armature= like the
    functions of symdyn.identification.parameters."""
    model = sd.models.serial_chain(3, seed=2).replace(armature=[0.1, 0.2, 0.3])
    pi = sd.inertial_parameters(model, armature=True)
    np.testing.assert_array_equal(pi, inertial_parameters(model, armature=True))
    assert pi.shape == (33,)
    changed = sd.with_inertial_parameters(model, np.r_[pi[:30], [0.5, 0.6, 0.7]], armature=True)
    np.testing.assert_array_equal(changed.armature, [0.5, 0.6, 0.7])
    assert sd.inertial_parameters(model).shape == (30,)
