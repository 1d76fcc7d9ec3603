"""Base parameters (symdyn.identification) on NumPy alone.

Checks: no SciPy import; ``rank`` equals ``numpy.linalg.matrix_rank`` of an independently sampled
stack of regressors with the same relative tolerance (on a fixed arm, a humanoid with columns
that are zero up to round-off, a fixed-base humanoid and a quadruped); no picked column is
round-off; ``Y @ pi == Y_base @ beta`` to 1e-9 at fresh states for any parameter vector; the
armature columns (closed form on a planar 2R arm); input validation. A slow test sweeps every
example-robot-data robot, fixed and floating.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import symdyn as sd
from symdyn.algorithms.regressors import joint_torque_regressor
from symdyn.identification import base_parameters
from symdyn.identification.parameters import inertial_parameters
from symdyn.models import planar_chain

TOL = 1e-8


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _stack(model, seed, armature=False):
    """A stack independent of base_parameters' own (other seed, uniform speeds)."""
    n = 10 * model.N + (model.nv if armature else 0)
    rng = np.random.default_rng(seed)
    return np.vstack([joint_torque_regressor(model, model.random_q(rng),
                                             rng.uniform(-2, 2, model.nv),
                                             rng.uniform(-2, 2, model.nv), armature=armature)
                      for _ in range(max(20, math.ceil(3 * n / model.nv)))])


def check_base_parameters(model, armature=False, seed=1234):
    """The properties every base-parameter set must have; returns the result."""
    bp = base_parameters(model, armature=True) if armature else base_parameters(model)
    n = 10 * model.N + (model.nv if armature else 0)
    assert bp.K.shape == (bp.rank, n) and len(bp.parameter_names) == n
    assert sorted([*bp.independent, *bp.dependent]) == list(range(n))
    assert np.array_equal(bp.K[:, bp.independent], np.eye(bp.rank))
    # the count is the numerical rank of the stack (own singular values, and a fresh stack)
    s = bp.singular_values
    assert bp.rank == int(np.sum(s > TOL * s[0]))
    W = _stack(model, seed, armature)
    s0 = float(np.linalg.norm(W, 2))
    assert bp.rank == np.linalg.matrix_rank(W, tol=TOL * s0)
    # no column that is round-off is picked, and the picked ones are independent
    assert np.linalg.norm(W[:, bp.independent], axis=0).min() > TOL * s0
    assert np.linalg.matrix_rank(W[:, bp.independent], tol=TOL * s0) == bp.rank
    # Y pi == Y_base beta at fresh states, for the model's parameters and for others
    pi = inertial_parameters(model, armature=armature)
    rng = np.random.default_rng(seed + 1)
    for k in range(3):
        p = pi if k == 0 else pi + rng.normal(size=n)
        Y = joint_torque_regressor(model, model.random_q(rng), rng.normal(size=model.nv),
                                   rng.normal(size=model.nv), armature=armature)
        assert rel(bp.regressor(Y) @ bp.values(p), Y @ p) < 1e-9
    return bp


def test_no_scipy(monkeypatch):
    """scipy is not a dependency: base_parameters works with every scipy import failing."""
    for mod in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.linalg", None)
    assert base_parameters(planar_chain(2)).rank == 6


# robot, floating base, rank (the stacked regressor's numerical rank at 1e-8)
ROBOTS = [("panda", False, 51),        # counted 52 with per-column normalisation
          ("icub", False, 212),        # counted 214, picked columns of norm 1e-50: 70 % off
          ("talos_full", False, 290),  # counted 293
          ("solo12", True, 94)]


@pytest.mark.parametrize("name, floating, rank", ROBOTS)
def test_rank_and_reconstruction_on_robots(name, floating, rank):
    model = sd.load_robot(name, floating_base=floating)
    bp = check_base_parameters(model)
    assert bp.rank == rank


def test_planar_2r_with_armature():
    """Planar 2R (l1 = 0.7) in a vertical plane with the armature as parameters: joint 1's
    armature only adds to ZZ1 + m2 l1^2 (the same column), joint 2's is a parameter of its own:
    rank 6 + 1."""
    model = planar_chain(2, length=0.7).replace(gravity=(0.0, -9.81, 0.0), armature=[0.3, 0.2])
    bp = check_base_parameters(model, armature=True)
    assert bp.rank == 7
    assert bp.parameter_names[20:] == [f"{j}.armature" for j in model.joint_names]
    idx = {n: k for k, n in enumerate(bp.parameter_names)}
    e = np.eye(22)
    a1, a2 = (idx[f"{j}.armature"] for j in model.joint_names)
    combos = [e[idx["link1.I_zz"]] + 0.49 * e[idx["link2.m"]] + e[a1], e[a2],
              e[idx["link2.I_zz"]], e[idx["link2.mc_x"]], e[idx["link2.mc_y"]],
              e[idx["link1.mc_x"]] + 0.7 * e[idx["link2.m"]], e[idx["link1.mc_y"]]]
    r = np.linalg.matrix_rank
    assert r(bp.K) == r(np.array(combos)) == r(np.vstack([bp.K, combos])) == 7


def test_armature_columns_on_a_robot():
    """panda with armature as parameters: the stack [Y, diag(qdd)] decides the count."""
    model = sd.load_robot("panda").replace(armature=0.1)
    bp = check_base_parameters(model, armature=True)
    assert bp.rank > base_parameters(model).rank
    assert bp.parameter_names[-1] == "panda_finger_joint2.armature"


@pytest.mark.parametrize("kw, err, msg", [
    ({"tol": 0.0}, ValueError, "tol"), ({"tol": -1e-8}, ValueError, "tol"),
    ({"tol": 1.0}, ValueError, "tol"), ({"tol": float("nan")}, ValueError, "tol"),
    ({"tol": float("inf")}, ValueError, "tol"), ({"tol": "1e-8"}, TypeError, "tol"),
    ({"tol": True}, TypeError, "tol"), ({"n_samples": 0}, ValueError, "n_samples"),
    ({"n_samples": -2}, ValueError, "n_samples"), ({"n_samples": 2.5}, TypeError, "n_samples"),
    ({"n_samples": True}, TypeError, "n_samples"), ({"n_samples": "4"}, TypeError, "n_samples"),
    ({"armature": 1}, TypeError, "armature"), ({"regressor": 3}, TypeError, "regressor"),
])
def test_option_validation(kw, err, msg):
    with pytest.raises(err, match=msg):
        base_parameters(planar_chain(2), **kw)


def test_model_and_regressor_validation():
    with pytest.raises(TypeError, match="Model"):
        base_parameters("panda")
    model = planar_chain(2)
    with pytest.raises(ValueError, match="shape"):
        base_parameters(model, regressor=lambda m, q, qd, qdd: np.zeros((2, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        base_parameters(model, regressor=lambda m, q, qd, qdd: np.full((2, 20), np.nan))
    bp = base_parameters(model, n_samples=np.int64(5))
    assert bp.rank == 6
    with pytest.raises(ValueError, match="20 entries"):
        bp.values(np.zeros(22))
    with pytest.raises(ValueError, match="20 columns"):
        bp.regressor(np.zeros((2, 22)))


def test_model_without_speeds():
    model = planar_chain(2)
    model = sd.reduced_model(model, lock=list(model.joint_names))
    assert model.nv == 0
    with pytest.raises(ValueError, match="no moving joint"):
        base_parameters(model)


def test_zero_regressor_has_rank_zero():
    bp = base_parameters(planar_chain(2), regressor=lambda m, q, qd, qdd: np.zeros((2, 20)))
    assert bp.rank == 0 and bp.K.shape == (0, 20) and len(bp.dependent) == 20


@pytest.mark.slow
def test_every_example_robot_data_robot():
    """Every robot of symdyn.io.robots, fixed and floating (several minutes)."""
    failures, count = [], 0
    for name in sd.io.robots.available_robots():
        for floating in (False, True):
            try:
                model = sd.load_robot(name, floating_base=floating)
            except ValueError:          # hector with a fixed base has no moving body
                continue
            if model.nv == 0:
                continue
            count += 1
            try:
                check_base_parameters(model)
            except AssertionError as exc:
                failures.append(f"{name} ({'floating' if floating else 'fixed'}): {exc}")
    assert count > 90 and not failures, failures
