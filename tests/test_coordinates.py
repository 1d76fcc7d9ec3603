"""Change of coordinates (paper 000 eqs. (23)-(27)) and the CoM coordinates of Remark 6."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

from symdyn.algorithms import crba, forward_kinematics, gravity_vector, rnea
from symdyn.algorithms.coriolis import coriolis_matrix
from symdyn.coordinates import change_coordinates, com_coordinates
from symdyn.models import random_tree


def chain3():
    return random_tree(3, seed=11, parents=[-1, 0, 1], joint_kinds=("revolute", "prismatic", "helical"))


def phi(qb):
    """A nonlinear change of coordinates q = phi(qbar) (a local diffeomorphism near the samples)."""
    return ca.vertcat(qb[0] + 0.3 * ca.sin(qb[1]), qb[1] + 0.2 * qb[0] * qb[2], qb[2] + 0.25 * ca.cos(qb[0]))


def reference_in_new_coordinates(model):
    """CasADi functions of (qbar, qbar_d): q, qd, A, Adot, Mbar, d/dt Mbar and Cbar* by eq. (4) in qbar."""
    n = model.nv
    qb, vb = ca.SX.sym("qb", n), ca.SX.sym("vb", n)
    q = phi(qb)
    A = ca.jacobian(q, qb)
    Adot = ca.reshape(ca.jtimes(ca.vec(A), qb, vb), n, n)
    Mb = A.T @ crba(model, q) @ A
    dM = ca.jacobian(ca.vec(Mb), qb)                      # row i + n j, column k: dMbar_ij / dqbar_k
    Cb = ca.SX(n, n)
    for i in range(n):
        for j in range(n):
            for k in range(n):
                g = (dM[i + n * j, k] + dM[i + n * k, j] - dM[j + n * k, i]) / 2   # eq. (4)
                Cb[i, j] += g * vb[k]
    Mbdot = ca.reshape(ca.jtimes(ca.vec(Mb), qb, vb), n, n)
    return ca.Function("ref", [qb, vb], [q, A @ vb, A, Adot, Mb, Mbdot, Cb])


def test_theorem1_christoffel_consistent_maps_to_christoffel_consistent():
    model = chain3()
    ref = reference_in_new_coordinates(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        qb, vb = rng.uniform(0, 2 * np.pi, 3), rng.uniform(0, 10, 3)
        q, qd, A, Adot, Mb_ref, Mbdot_ref, Cb_ref = [np.array(x) for x in ref(qb, vb)]
        q, qd = q.ravel(), qd.ravel()
        qbdd = rng.normal(size=3)
        qdd = A @ qbdd + Adot @ vb
        M, Mdot, C = coriolis_matrix(model, q, qd)
        g = gravity_vector(model, q)
        tau = rnea(model, q, qd, qdd)
        Mb, Cb, gb, taub = change_coordinates(M, C, g, tau, A, Adot)
        s = 1 + np.abs(Cb_ref).max()
        assert np.abs(Mb - Mb_ref).max() < 1e-10 * s
        assert np.abs(Cb - Cb_ref).max() < 1e-10 * s                         # (27)
        assert np.abs(Mb @ qbdd + Cb @ vb + gb - taub).max() < 1e-10 * (1 + np.abs(taub).max())
        # Prop. 3: the simple factorization stays admissible but is not the Christoffel one
        _, _, Cs = coriolis_matrix(model, q, qd, "simple")
        _, Cbs, _, _ = change_coordinates(M, Cs, None, None, A, Adot)
        assert np.abs(Mbdot_ref - Cbs - Cbs.T).max() < 1e-10 * s
        assert np.abs(Mbdot_ref - Cb - Cb.T).max() < 1e-10 * s
        assert np.abs(Cbs - Cb_ref).max() > 1e-3 * s


@pytest.mark.parametrize("backend", ["sympy", "casadi"])
def test_change_coordinates_backends(backend):
    rng = np.random.default_rng(1)
    n = 4
    M, C, A, Adot = (rng.normal(size=(n, n)) for _ in range(4))
    g, tau = rng.normal(size=n), rng.normal(size=n)
    ref = change_coordinates(M, C, g, tau, A, Adot)
    if backend == "sympy":
        conv = [sp.Matrix(x) for x in (M, C, A, Adot)]
        out = change_coordinates(conv[0], conv[1], sp.Matrix(g), sp.Matrix(tau), conv[2], conv[3])
        assert all(isinstance(o, sp.MatrixBase) for o in out)
    else:
        conv = [ca.SX(ca.DM(x)) for x in (M, C, A, Adot)]
        out = change_coordinates(conv[0], conv[1], ca.SX(ca.DM(g)), tau, conv[2], conv[3])
        assert all(isinstance(o, ca.SX) for o in out)
    for a, b in zip(out, ref):
        a = np.array(sp.Matrix(a).evalf() if backend == "sympy" else ca.evalf(a), dtype=float)
        assert np.abs(a.reshape(b.shape) - b).max() < 1e-12


def test_change_coordinates_bad_input():
    M = np.eye(3)
    with pytest.raises(ValueError, match="square"):
        change_coordinates(M, M, None, None, np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="M is 3x3"):
        change_coordinates(M, M, None, None, np.eye(4), np.eye(4))
    with pytest.raises(ValueError, match="Adot"):
        change_coordinates(M, M, None, None, np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="g"):
        change_coordinates(M, M, np.ones(2), None, np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        change_coordinates(M, M, None, None, np.full((3, 3), np.nan), np.eye(3))


# --- Remark 6 ---------------------------------------------------------------------------------------------

def floating_model():
    return random_tree(6, seed=21, joint_kinds=("revolute", "spherical", "prismatic"), floating_base=True)


def com_velocity(model, q, nu):
    """pdot_CoM = sum_i m_i R_i (v_i + w_i x c_i) / m from forward kinematics (independent of M)."""
    R, _, v = forward_kinematics(model, q, nu)
    total, mass = np.zeros(3), 0.0
    for i, (m, c, _) in enumerate(model.body_params):
        w, vo = v[i][:3], v[i][3:]
        total += m * (R[i] @ (vo + np.cross(w, c)))
        mass += m
    return total / mass, mass


def test_remark6_com_coordinates():
    model = floating_model()
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = model.random_q(rng)
        nu = rng.uniform(0, 10, model.nv)
        out = com_coordinates(model, q, nu)
        M, Mdot, C = coriolis_matrix(model, q, nu)
        pdot, mass = com_velocity(model, q, nu)
        s = 1 + np.abs(C).max()
        assert np.abs(out.nu[:3] - pdot).max() < 1e-10 * (1 + np.abs(pdot).max())
        assert np.abs(out.A @ out.nu - nu).max() < 1e-10 * (1 + np.abs(nu).max())
        assert abs(out.mass - mass) < 1e-12 * mass
        assert np.abs(out.M[:3, :3] - mass * np.eye(3)).max() < 1e-10 * mass      # (32)
        assert np.abs(out.M[:3, 3:]).max() < 1e-10 * (1 + np.abs(M).max())
        assert np.abs(out.C[:3, :]).max() < 1e-10 * s                               # zero blocks
        assert np.abs(out.C[:, :3]).max() < 1e-10 * s
        assert np.abs(out.C[3:, 3:]).max() > 1e-3
        Mbar_dot = out.Adot.T @ M @ out.A + out.A.T @ Mdot @ out.A + out.A.T @ M @ out.Adot
        assert np.abs(Mbar_dot - out.C - out.C.T).max() < 1e-10 * s                # admissible
        assert np.abs(out.A.T @ (C @ nu) + out.A.T @ M @ out.Adot @ out.nu - out.C @ out.nu
                      ).max() < 1e-9 * s
        # the simple factorization, transformed the same way, does not have the zero blocks
        Cs = coriolis_matrix(model, q, nu, "simple")[2]
        _, Cbs, _, _ = change_coordinates(M, Cs, None, None, out.A, out.Adot)
        assert np.abs(Cbs[:, :3]).max() + np.abs(Cbs[:3, :]).max() > 1e-3


def test_remark6_casadi_matches_numpy_and_single_body():
    model = floating_model()
    rng = np.random.default_rng(3)
    q, nu = model.random_q(rng), rng.uniform(0, 10, model.nv)
    ref = com_coordinates(model, q, nu)
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    out = com_coordinates(model, qs, vs)
    f = ca.Function("f", [qs, vs], [out.A, out.Adot, out.M, out.C, out.nu])
    for a, b in zip(f(q, nu), ref[:5]):
        assert np.abs(np.array(a).reshape(np.shape(b)) - b).max() < 1e-10 * (1 + np.abs(b).max())
    single = random_tree(1, seed=4, floating_base=True)
    q1, nu1 = single.random_q(rng), rng.normal(size=6)
    o = com_coordinates(single, q1, nu1)
    assert np.abs(o.C[:3]).max() + np.abs(o.C[:, :3]).max() < 1e-12 * (1 + np.abs(o.C).max())
    assert np.abs(o.M[:3, 3:]).max() < 1e-12


def test_com_coordinates_needs_floating_base():
    model = chain3()
    with pytest.raises(ValueError, match="floating base"):
        com_coordinates(model, np.zeros(model.nq), np.zeros(model.nv))
