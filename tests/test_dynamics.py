"""RNEA, CRBA, ABA, body Jacobians: identities, independent Lagrangian checks and Pinocchio.

Every quantity is computed once per (backend, tree) through ``conftest.run`` (symbolic results
evaluated at the numeric state), then checked against NumPy and against the identities
aba(rnea(qdd)) = qdd, M = M^T > 0, rnea = M qdd + rnea(q, qd, 0), M = sum J^T I J (paper 002),
external forces = - sum J^T f, and the Euler-Lagrange equations of T - V (CasADi AD).
"""
from __future__ import annotations

import functools

import casadi as ca
import numpy as np
import pytest
from conftest import (ALL_KINDS, BACKENDS, MODEL_NAMES, MODELS, assert_close, has_quaternions,
                      model_for, random_forces, random_state, run)

import symdyn as sd
from symdyn.models import random_tree

SYMBOLIC = ("sympy", "casadi")


@functools.lru_cache(maxsize=None)
def results(backend: str, name: str) -> dict:
    """All quantities of tree ``name`` at one random state, computed with ``backend``."""
    m = model_for(backend, name)
    q, qd, qdd = random_state(m, seed=11)
    f = random_forces(m, seed=12)
    tau_np = sd.rnea(m, q, qd, qdd)
    tauf_np = sd.rnea(m, q, qd, qdd, f)
    # SymPy ABA with quaternions (3x3 / 6x6 articulated-inertia inverses) explodes symbolically
    # and crawls with Float-coefficient expressions: there it runs on SymPy numbers
    num = (0, 1, 2, 3) if backend == "sympy" and has_quaternions(m) else ()
    return {
        "model": m, "q": q, "qd": qd, "qdd": qdd, "f": f,
        "M": run(backend, sd.crba, m, q),
        "tau": run(backend, sd.rnea, m, q, qd, qdd),
        "nle": run(backend, sd.nonlinear_effects, m, q, qd),
        "g": run(backend, sd.gravity_vector, m, q),
        "J": run(backend, sd.body_jacobians, m, q),
        "aba": run(backend, sd.aba, m, q, qd, tau_np, numeric=num),
        "tau_f": run(backend, sd.rnea, m, q, qd, qdd, f),
        "aba_f": run(backend, sd.aba, m, q, qd, tauf_np, f, numeric=num),
    }


CASES = [(b, n) for b in BACKENDS for n in MODEL_NAMES]
ids = [f"{b}-{n}" for b, n in CASES]


@pytest.mark.parametrize("backend", SYMBOLIC)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_symbolic_equals_numpy(backend, name):
    r = results(backend, name)
    m, q, qd, qdd, f = r["model"], r["q"], r["qd"], r["qdd"], r["f"]
    assert_close(r["M"], sd.crba(m, q), what="crba")
    assert_close(r["tau"], sd.rnea(m, q, qd, qdd), what="rnea")
    assert_close(r["nle"], sd.nonlinear_effects(m, q, qd), what="nonlinear_effects")
    assert_close(r["g"], sd.gravity_vector(m, q), what="gravity_vector")
    assert_close(r["tau_f"], sd.rnea(m, q, qd, qdd, f), what="rnea f_ext")
    for Jb, Jn in zip(r["J"], sd.body_jacobians(m, q)):
        assert_close(Jb, Jn, what="body_jacobians")


@pytest.mark.parametrize("backend,name", CASES, ids=ids)
def test_aba_inverts_rnea(backend, name):
    r = results(backend, name)
    assert_close(r["aba"], r["qdd"], what="aba(q, qd, rnea(q, qd, qdd)) - qdd")
    assert_close(r["aba_f"], r["qdd"], what="with f_ext")


@pytest.mark.parametrize("backend,name", CASES, ids=ids)
def test_mass_matrix_symmetric_positive_definite(backend, name):
    M = results(backend, name)["M"]
    assert M.shape == (model_for(backend, name).nv,) * 2
    assert_close(M, M.T, tol=1e-13, what="M - M^T")
    assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize("backend,name", CASES, ids=ids)
def test_rnea_splits_into_mass_matrix_and_nonlinear_effects(backend, name):
    r = results(backend, name)
    assert_close(r["M"] @ r["qdd"] + r["nle"], r["tau"], what="M qdd + rnea(q, qd, 0) - rnea")


@pytest.mark.parametrize("backend,name", CASES, ids=ids)
def test_mass_matrix_is_lagrangian_sum(backend, name):
    """M = sum_k J_k^T I_k J_k with body Jacobians (paper 002's Lagrangian construction)."""
    r = results(backend, name)
    m = r["model"]
    M = sum(J.T @ np.asarray(m.I[k], float) @ J for k, J in enumerate(r["J"]))
    assert_close(M, r["M"], what="sum J^T I J - crba")


@pytest.mark.parametrize("backend,name", CASES, ids=ids)
def test_external_forces_enter_through_body_jacobians(backend, name):
    """rnea(q, qd, qdd, f) = rnea(q, qd, qdd) - sum_k J_k^T f_k (f_k in body-k coordinates)."""
    r = results(backend, name)
    JTf = sum(J.T @ fk for J, fk in zip(r["J"], r["f"]) if fk is not None)
    assert_close(r["tau_f"], r["tau"] - JTf, what="rnea with f_ext")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_gravity_and_nonlinear_effects_consistent(name):
    m = MODELS[name]
    q, qd, qdd = random_state(m, seed=3)
    zero = np.zeros(m.nv)
    g = sd.gravity_vector(m, q)
    assert_close(g, sd.rnea(m, q, zero, zero), what="gravity_vector")
    nle = sd.nonlinear_effects(m, q, qd)
    assert_close(nle, sd.rnea(m, q, qd, zero), what="nonlinear_effects")
    # C(q, qd) qd is quadratic in qd
    assert_close(sd.nonlinear_effects(m, q, 2 * qd) - g, 4 * (nle - g), what="C qd quadratic")


@pytest.mark.parametrize("seed", range(12))
def test_identities_on_larger_random_trees(seed):
    """NumPy, 9-body random trees with every joint type (odd seeds: floating base)."""
    m = random_tree(9, seed=seed, joint_kinds=ALL_KINDS, floating_base=seed % 2 == 1)
    q, qd, qdd = random_state(m, seed)
    M, tau = sd.crba(m, q), sd.rnea(m, q, qd, qdd)
    assert_close(M, M.T, tol=1e-13)
    assert np.linalg.eigvalsh(M).min() > 0
    assert_close(sd.aba(m, q, qd, tau), qdd, tol=1e-9)
    assert_close(M @ qdd + sd.nonlinear_effects(m, q, qd), tau)
    J = sd.body_jacobians(m, q)
    assert_close(sum(Jk.T @ m.I[k] @ Jk for k, Jk in enumerate(J)), M)
    f = random_forces(m, seed)
    assert_close(sd.rnea(m, q, qd, qdd, f),
                 tau - sum(Jk.T @ fk for Jk, fk in zip(J, f) if fk is not None))


# --- Euler-Lagrange equations from CasADi AD of the energy (no quaternion joints) --------------

def _euler_lagrange(model, q, qd, qdd):
    """tau = d/dt dL/dqd - dL/dq with L = sum 1/2 v_k^T I_k v_k + sum m_k g . c_k (world CoMs),
    differentiated by CasADi; independent of the recursive algorithms' force/torque passes."""
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    R, p, v = sd.forward_kinematics(model, qs, vs, backend="casadi")
    g = ca.DM(np.asarray(model.gravity, float).reshape(3, 1))
    L = 0
    for k in range(model.N):
        I6 = np.asarray(model.I[k], float)
        h = np.array([I6[2, 4], I6[0, 5], I6[1, 3]]).reshape(3, 1)  # m c from the m S(c) block
        L += 0.5 * ca.dot(v[k], ca.DM(I6) @ v[k]) + ca.dot(g, I6[3, 3] * p[k] + R[k] @ h)
    dLdv = ca.gradient(L, vs)
    tau = ca.jacobian(dLdv, vs) @ ca.DM(qdd) + ca.jacobian(dLdv, qs) @ ca.DM(qd) \
        - ca.gradient(L, qs)
    return np.array(ca.Function("el", [qs, vs], [tau])(q, qd), float).reshape(-1)


EL_NAMES = [n for n in MODEL_NAMES if not has_quaternions(MODELS[n])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", EL_NAMES)
def test_rnea_equals_euler_lagrange(backend, name):
    r = results(backend, name)
    m = r["model"]
    assert all(j.type != "spherical" for j in m.joints)
    assert_close(r["tau"], _euler_lagrange(m, r["q"], r["qd"], r["qdd"]), tol=1e-9,
                 what="rnea - Euler-Lagrange")


@pytest.mark.parametrize("backend", ("numpy", "casadi"))
def test_planar_joints_sring_against_euler_lagrange(backend):
    """Planar joints (S depends on q, Sring != 0) at the root and deep in a tree (SymPy: the
    'mixed' tree's planar joint is compared with NumPy above)."""
    tree = random_tree(4, seed=8, parents=[-1, 0, 1, 1], joint_kinds=("planar", "helical"))
    assert sum(j.type == "planar" for j in tree.joints) >= 2
    q, qd, qdd = random_state(tree, seed=9)
    tau = run(backend, sd.rnea, tree, q, qd, qdd)
    assert_close(tau, _euler_lagrange(tree, q, qd, qdd), tol=1e-9)


# --- Pinocchio -----------------------------------------------------------------------------------

pin = pytest.importorskip("pinocchio")
from symdyn.interop import pinocchio as pb  # noqa: E402


def _pin_trees():
    kinds = ("revolute", "prismatic", "helical", "spherical")
    trees = {n: MODELS[n] for n in MODEL_NAMES
             if all(j.type != "planar" for j in MODELS[n].joints)}
    for s in range(3):
        trees[f"random{s}"] = random_tree(7, seed=100 + s, joint_kinds=kinds, floating_base=s > 0)
    return trees


PIN_TREES = _pin_trees()


@pytest.mark.parametrize("name", list(PIN_TREES))
def test_agrees_with_pinocchio(name):
    m = PIN_TREES[name]
    pm = pb.to_pinocchio(m)
    data = pm.createData()
    q, qd, qdd = random_state(m, seed=21)
    f = random_forces(m, seed=22)
    qp, vp, ap = pb.q_to_pin(m, q), pb.v_to_pin(m, qd), pb.v_to_pin(m, qdd)
    scale = 1e-9
    tau = sd.rnea(m, q, qd, qdd)
    assert_close(tau, pb.v_from_pin(m, pin.rnea(pm, data, qp, vp, ap)), scale, "rnea")
    Mp = pin.crba(pm, data, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert_close(sd.crba(m, q), pb.matrix_from_pin(m, Mp), scale, "crba")
    assert_close(sd.aba(m, q, qd, tau), pb.v_from_pin(m, pin.aba(pm, data, qp, vp, pb.v_to_pin(m, tau))),
                 scale, "aba")
    assert_close(sd.nonlinear_effects(m, q, qd),
                 pb.v_from_pin(m, pin.nonLinearEffects(pm, data, qp, vp)), scale, "nle")
    assert_close(sd.gravity_vector(m, q),
                 pb.v_from_pin(m, pin.computeGeneralizedGravity(pm, data, qp)), scale, "gravity")
    # external forces: one per Pinocchio joint, local frame, [linear; angular]
    fext = pin.StdVec_Force()
    fext.append(pin.Force.Zero())
    for i in pb.pinocchio_order(m):
        fext.append(pin.Force.Zero() if f[i] is None else pin.Force(f[i][3:], f[i][:3]))
    tau_f = sd.rnea(m, q, qd, qdd, f)
    assert_close(tau_f, pb.v_from_pin(m, pin.rnea(pm, data, qp, vp, ap, fext)), scale, "rnea f_ext")
    assert_close(sd.aba(m, q, qd, tau_f, f),
                 pb.v_from_pin(m, pin.aba(pm, data, qp, vp, pb.v_to_pin(m, tau_f), fext)),
                 scale, "aba f_ext")
