"""Centre of mass, centroidal momentum and energies (symdyn.algorithms.com, .energy) against
Pinocchio's models of the same URDF files and by identities (power balance, CoM Jacobian = rate of
the CoM, Ag qd = summed body momenta about the CoM), on every backend.

Pinocchio's ccrba / dccrba rows are [linear; angular], symdyn's [angular; linear].
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from conftest import run

pin = pytest.importorskip("pinocchio")

import symdyn as sd  # noqa: E402
from symdyn.algorithms.com import (center_of_mass, centroidal_momentum,  # noqa: E402
                                   centroidal_momentum_matrix,
                                   centroidal_momentum_matrix_time_variation, com_jacobian,
                                   total_mass)
from symdyn.algorithms.energy import kinetic_energy, mechanical_energy, potential_energy  # noqa: E402
from symdyn.algorithms.kinematics import forward_kinematics  # noqa: E402
from symdyn.models import branched_tree, planar_chain, serial_chain  # noqa: E402
from symdyn.io.robots import load_robot  # noqa: E402
from test_frames import ROBOT_NAMES, _rate_along, _symengine_run, check, pair, state, swap  # noqa: E402


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_com_and_centroidal_match_pinocchio(name):
    P = pair(name)
    m, pm = P.model, P.pm
    pd = pm.createData()
    q, qd, _ = state(m, 5)
    qp, vp = P.q_pin(q), P.v_pin(qd)
    worst = {}

    def rec(key, a, b):
        worst[key] = max(worst.get(key, 0.0), check(a, b, f"{name} {key}"))

    rec("mass", total_mass(m), pin.computeTotalMass(pm))
    c, cdot = center_of_mass(m, q, qd)
    pin.centerOfMass(pm, pd, qp, vp)
    rec("com", c, pd.com[0])
    rec("com", center_of_mass(m, q), pd.com[0])
    rec("com_velocity", cdot, pd.vcom[0])
    rec("com_jacobian", com_jacobian(m, q), P.cols_from_pin(pin.jacobianCenterOfMass(pm, pd, qp)))
    rec("Ag", centroidal_momentum_matrix(m, q), P.cols_from_pin(swap(pin.ccrba(pm, pd, qp, vp))))
    rec("hg", centroidal_momentum(m, q, qd), swap(pd.hg.vector))
    pin.computeCentroidalMapTimeVariation(pm, pd, qp, vp)
    rec("dAg", centroidal_momentum_matrix_time_variation(m, q, qd), P.cols_from_pin(swap(pd.dAg)))
    rec("kinetic", kinetic_energy(m, q, qd), pin.computeKineticEnergy(pm, pd, qp, vp))
    rec("potential", potential_energy(m, q), pin.computePotentialEnergy(pm, pd, qp))
    rec("mechanical", mechanical_energy(m, q, qd), pin.computeMechanicalEnergy(pm, pd, qp, vp))
    print(name, {k: f"{v:.1e}" for k, v in worst.items()})


@pytest.mark.parametrize("name", ["panda", "solo12", "talos"])
def test_identities(name):
    m = pair(name).model
    q, qd, qdd = state(m, 6)
    M = total_mass(m)
    # CoM Jacobian = rate of the CoM along q (+) t qd; = the CoM velocity
    Jc = com_jacobian(m, q)
    check(_rate_along(m, lambda x: center_of_mass(m, x), q, qd), Jc @ qd, "dc/dt vs Jc qd")
    check(center_of_mass(m, q, qd)[1], Jc @ qd, "cdot vs Jc qd")
    Ag = centroidal_momentum_matrix(m, q)
    check(Ag[3:], M * Jc, "Ag linear rows = m Jc")
    # Ag qd = the bodies' momenta moved to the CoM (world axes), computed here from scratch
    R, p, v = forward_kinematics(m, q, qd)
    c = center_of_mass(m, q)
    hG = np.zeros(6)
    for i in range(m.N):
        hb = np.asarray(m.I[i], float) @ v[i]                # [n; f] at the body origin, body axes
        n, f = R[i] @ hb[:3], R[i] @ hb[3:]
        hG += np.concatenate([n + np.cross(p[i] - c, f), f])
    check(Ag @ qd, hG, "Ag qd = sum of body momenta about the CoM")
    # dAg/dt against AD of Ag along q (+) t qd
    check(centroidal_momentum_matrix_time_variation(m, q, qd),
          _rate_along(m, lambda x: centroidal_momentum_matrix(m, x), q, qd), "dAg/dt vs AD")
    # energies: T = 1/2 qd^T M qd; power balance d/dt (T + V) = qd^T rnea(q, qd, qdd)
    T = kinetic_energy(m, q, qd)
    check(T, 0.5 * qd @ sd.crba(m, q) @ qd, "T = 1/2 qd^T M qd")
    dE = _rate_along(m, lambda x, y: kinetic_energy(m, x, y) + potential_energy(m, x), q, qd, qdd)
    check(dE, qd @ sd.rnea(m, q, qd, qdd), "d/dt (T + V) = qd^T tau")
    dV = _rate_along(m, lambda x: potential_energy(m, x), q, qd)
    check(dV, qd @ sd.gravity_vector(m, q), "dV/dt = qd^T g")
    check(potential_energy(m, q), -M * np.dot(np.asarray(m.gravity, float), center_of_mass(m, q)),
          "V = -m g . c")


CALLS = {
    "mass": (lambda mo: total_mass(mo), 0),
    "com": (lambda mo, q: center_of_mass(mo, q), 1),
    "com_vel": (lambda mo, q, v: center_of_mass(mo, q, v), 2),
    "com_jacobian": (lambda mo, q: com_jacobian(mo, q), 1),
    "Ag": (lambda mo, q: centroidal_momentum_matrix(mo, q), 1),
    "hg": (lambda mo, q, v: centroidal_momentum(mo, q, v), 2),
    "dAg": (lambda mo, q, v: centroidal_momentum_matrix_time_variation(mo, q, v), 2),
    "kinetic": (lambda mo, q, v: kinetic_energy(mo, q, v), 2),
    "potential": (lambda mo, q: potential_energy(mo, q), 1),
}


@pytest.mark.parametrize("backend", ["sympy", "symengine", "casadi"])
def test_symbolic_backends_match_numpy(backend):
    """SymPy on small trees (a spherical joint included), SymEngine and CasADi on the double
    pendulum URDF and solo12 (floating base), evaluated at numbers."""
    if backend == "sympy":
        models = [serial_chain(3), branched_tree(3, 2, joint=("floating", "spherical", "revolute"))]
    else:
        models = [load_robot("double_pendulum"), pair("solo12").model]
    for model in models:
        q, qd, _ = state(model, 7)
        for key, (fn, nargs) in CALLS.items():
            args = (q, qd)[:nargs]
            expect = fn(model, *args)
            if nargs == 0:
                got = total_mass(model, backend=backend)
                got = float(ca.evalf(got)) if backend == "casadi" else float(got)
            elif backend == "symengine":
                got = _symengine_run(fn, model, *args)
            else:
                got = run(backend, fn, model, *args)
            for g, e in zip(got if isinstance(expect, tuple) else [got],
                            expect if isinstance(expect, tuple) else [expect]):
                check(np.reshape(np.asarray(g, float), np.shape(e)), e,
                      f"{backend} {model.name} {key}", 1e-11)


def test_symbolic_model_parameters():
    """A planar arm with symbolic masses and lengths: total mass and V in closed form."""
    import sympy as sp

    arm = planar_chain(2, symbolic_params=True)
    M = total_mass(arm)
    assert sp.simplify(M - sum(s for s in arm.parameters() if s.name.startswith("m"))) == 0
    q = sp.Matrix(sp.symbols("q1 q2"))
    V = potential_energy(arm, q)
    vals = {s: 0.5 + 0.1 * k for k, s in enumerate(arm.parameters())}
    num = arm.subs(vals)
    check(float(V.subs(vals).subs({q[0]: 0.4, q[1]: -1.1})), potential_energy(num, [0.4, -1.1]),
          "symbolic V at numbers")


@pytest.mark.parametrize("tree_name", ["branched", "random", "floating"])
def test_random_trees_match_pinocchio_bridge(tree_name):
    """Helical, spherical and free-flyer joints through symdyn.interop.pinocchio.to_pinocchio."""
    from conftest import MODELS
    from symdyn.interop import pinocchio as pb

    m = MODELS[tree_name]
    pm = pb.to_pinocchio(m)
    pd = pm.createData()
    q, qd, _ = state(m, 10)
    qp, vp = pb.q_to_pin(m, q), pb.v_to_pin(m, qd)
    pin.centerOfMass(pm, pd, qp, vp)
    c, cdot = center_of_mass(m, q, qd)
    check(c, pd.com[0], "com")
    check(cdot, pd.vcom[0], "vcom")
    check(com_jacobian(m, q), pb.matrix_from_pin(m, pin.jacobianCenterOfMass(pm, pd, qp), rows=None), "Jc")
    check(centroidal_momentum_matrix(m, q),
          pb.matrix_from_pin(m, swap(pin.ccrba(pm, pd, qp, vp)), rows=None), "Ag")
    pin.computeCentroidalMapTimeVariation(pm, pd, qp, vp)
    check(centroidal_momentum_matrix_time_variation(m, q, qd),
          pb.matrix_from_pin(m, swap(pd.dAg), rows=None), "dAg")
    check(kinetic_energy(m, q, qd), pin.computeKineticEnergy(pm, pd, qp, vp), "T")
    check(potential_energy(m, q), pin.computePotentialEnergy(pm, pd, qp), "V")


def test_planar_joints_rates_by_ad():
    """Planar joints (S depends on q): dAg/dt, Jc and the power balance by AD."""
    from conftest import MODELS

    m = MODELS["mixed"]
    q, qd, qdd = state(m, 11)
    check(centroidal_momentum_matrix_time_variation(m, q, qd),
          _rate_along(m, lambda x: centroidal_momentum_matrix(m, x), q, qd), "dAg/dt")
    check(_rate_along(m, lambda x: center_of_mass(m, x), q, qd), com_jacobian(m, q) @ qd, "Jc")
    dE = _rate_along(m, lambda x, y: mechanical_energy(m, x, y), q, qd, qdd)
    check(dE, qd @ sd.rnea(m, q, qd, qdd), "power balance")
