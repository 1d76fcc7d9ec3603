"""Spatial algebra over the backends: cross products, compact transforms vs their 6x6 forms,
spatial inertia, the body-level factorizations (9) and (10) of paper 000, quaternions, and the
joints' calc/Sring/integrate against finite differences and exponential maps."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import BACKENDS, assert_close, evaluate

from symdyn import spatial as sp6
from symdyn.backends import get_backend
from symdyn.joints import Floating, Helical, Planar, Prismatic, Revolute, Spherical
from symdyn.models import random_inertia, random_rotation

NP = get_backend("numpy")
RNG = np.random.default_rng(42)
V, W, F = RNG.normal(size=6), RNG.normal(size=6), RNG.normal(size=6)
MAT = RNG.normal(size=(6, 3))
E1, R1 = random_rotation(RNG), RNG.normal(size=3)
E2, R2 = random_rotation(RNG), RNG.normal(size=3)
MASS, COM, IC = random_inertia(RNG)



def expm(A, terms: int = 40):
    """Matrix exponential by scaling and squaring of a Taylor series (test reference, no SciPy)."""
    A = np.asarray(A, float)
    k = max(0, int(np.ceil(np.log2(max(np.abs(A).sum(axis=1).max(), 1e-300)))) + 1)
    X = A / 2.0 ** k
    out, term = np.eye(len(A)), np.eye(len(A))
    for n in range(1, terms):
        term = term @ X / n
        out = out + term
    for _ in range(k):
        out = out @ out
    return out

def S3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def crm_dense(v):
    return np.block([[S3(v[:3]), np.zeros((3, 3))], [S3(v[3:]), S3(v[:3])]])


def X_dense(E, r):
    return np.block([[E, np.zeros((3, 3))], [-E @ S3(r), E]])


@pytest.fixture(params=BACKENDS)
def B(request):
    return get_backend(request.param)


def c(B, x):
    return B.const(np.asarray(x, float))


def ev(x):
    out = evaluate(x)
    return out.reshape(-1) if out.ndim == 2 and out.shape[1] == 1 else out


def test_cross_products(B):
    v, f = c(B, V), c(B, F)
    assert_close(ev(sp6.crm(B, v)), crm_dense(V))
    assert_close(ev(sp6.crf(B, v)), -crm_dense(V).T, what="crf = -crm^T")
    assert_close(ev(sp6.crfbar(B, f) @ v), ev(sp6.crf(B, v) @ f), what="crfbar(f) v = crf(v) f")
    assert_close(ev(sp6.cross_motion(B, v, c(B, W))), crm_dense(V) @ W)
    assert_close(ev(sp6.cross_force(B, v, f)), -crm_dense(V).T @ F)
    assert_close(ev(sp6.cross_motion(B, v, c(B, MAT))), crm_dense(V) @ MAT, what="6xk")
    assert_close(ev(sp6.cross_force(B, v, c(B, MAT))), -crm_dense(V).T @ MAT, what="6xk")
    # v x v = 0 and the force/motion pairing: (v x m) . f = -m . (v x* f)
    assert_close(ev(sp6.cross_motion(B, v, v)), np.zeros(6))
    assert np.isclose((crm_dense(V) @ W) @ F, -W @ (-crm_dense(V).T @ F))


def test_compact_transforms_equal_their_6x6_forms(B):
    X1 = sp6.Transform(c(B, E1), c(B, R1))
    X2 = sp6.Transform(c(B, E2), c(B, R2))
    D1, D2 = X_dense(E1, R1), X_dense(E2, R2)
    assert_close(ev(sp6.to_matrix(B, X1)), D1)
    m, f = c(B, W), c(B, F)
    assert_close(ev(sp6.xform_motion(B, X1, m)), D1 @ W, what="X m")
    assert_close(ev(sp6.xform_motion(B, X1, c(B, MAT))), D1 @ MAT, what="X M (6xk)")
    assert_close(ev(sp6.xform_force_T(B, X1, f)), D1.T @ F, what="X^T f")
    assert_close(ev(sp6.xform_motion_inv(B, X1, m)), np.linalg.solve(D1, W), what="X^-1 m")
    assert_close(ev(sp6.xform_force(B, X1, f)), np.linalg.inv(D1).T @ F, what="X^-T f")
    assert_close(ev(sp6.to_matrix(B, sp6.compose(B, X2, X1))), D2 @ D1, what="compose")
    assert_close(ev(sp6.to_matrix(B, sp6.inverse(B, X1))), np.linalg.inv(D1), what="inverse")
    A = RNG.normal(size=(6, 6))
    assert_close(ev(sp6.congruence(B, X1, c(B, A))), D1.T @ A @ D1, what="X^T A X")
    assert_close(ev(sp6.congruence_inv(B, X1, c(B, A))), np.linalg.inv(D1).T @ A @ np.linalg.inv(D1),
                 what="X^-T A X^-1")


def test_transform_convention():
    """X = (E, r): E rotates A- into B-coordinates and r is B's origin in A-coordinates, so a
    pure force through B's origin has moment r x f about A's origin."""
    X = sp6.Transform(E1, R1)
    f_B = np.concatenate([np.zeros(3), RNG.normal(size=3)])  # pure force through B's origin
    f_A = sp6.xform_force_T(NP, X, f_B)
    assert_close(f_A[:3], np.cross(R1, f_A[3:]), what="moment about A's origin = r x f")
    assert_close(f_A[3:], E1.T @ f_B[3:])


def test_spatial_inertia(B):
    I6 = ev(sp6.mcI(B, MASS, c(B, COM), c(B, IC)))
    assert_close(I6, I6.T)
    assert np.linalg.eigvalsh(I6).min() > 0
    # I at the body origin = X^T diag(Ic, m 1) X with X from the body frame to a CoM frame
    Xc = sp6.Transform(np.eye(3), COM)
    Icom = np.block([[IC, np.zeros((3, 3))], [np.zeros((3, 3)), MASS * np.eye(3)]])
    assert_close(I6, X_dense(Xc.E, Xc.r).T @ Icom @ X_dense(Xc.E, Xc.r), what="mcI")
    # kinetic energy of a pure rotation about the CoM
    w = RNG.normal(size=3)
    v = np.concatenate([w, -np.cross(w, COM)])  # body origin's velocity w x (0 - c)
    assert np.isclose(v @ I6 @ v, w @ IC @ w)


@pytest.mark.parametrize("kind", ["christoffel", "simple"])
def test_body_factorizations_are_admissible(B, kind):
    """Paper 000 eqs. (9)/(10): B(v, I) v = v x* I v and B + B^T = Idot = v x* I - I v x."""
    I6 = sp6.mcI(NP, MASS, COM, IC)
    Bv = ev(sp6.factorization_B(B, c(B, V), c(B, I6), kind=kind))
    assert_close(Bv @ V, -crm_dense(V).T @ I6 @ V, what="B v = v x* I v")
    Idot = -crm_dense(V).T @ I6 - I6 @ crm_dense(V)
    assert_close(Bv + Bv.T, Idot, what="B + B^T = Idot")
    with pytest.raises(ValueError, match="unknown factorization"):
        sp6.factorization_B(B, c(B, V), c(B, I6), kind="other")


def test_christoffel_factorization_is_linear_in_v():
    I6 = sp6.mcI(NP, MASS, COM, IC)
    a, b = 0.7, -1.3
    lhs = sp6.factorization_B(NP, a * V + b * W, I6)
    assert_close(lhs, a * sp6.factorization_B(NP, V, I6) + b * sp6.factorization_B(NP, W, I6))


# --- rotations and quaternions -----------------------------------------------------------------

def rodrigues(axis, th):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.eye(3) + np.sin(th) * S3(a) + (1 - np.cos(th)) * S3(a) @ S3(a)


def test_quaternion_and_rotation_consistency(B):
    axis = RNG.normal(size=3)
    axis /= np.linalg.norm(axis)
    th = 1.234
    xyz, w = np.sin(th / 2) * axis, np.cos(th / 2)
    R = ev(sp6.quat_to_rot(B, *[c(B, x) if B.name == "numpy" else float(x) for x in (*xyz, w)]))
    assert_close(R, rodrigues(axis, th), what="quat (x, y, z, w) -> R")
    assert_close(R @ R.T, np.eye(3))
    assert np.isclose(np.linalg.det(R), 1.0)
    R_neg = sp6.quat_to_rot(NP, *(-xyz), -w)
    assert_close(R_neg, R, what="q and -q")
    for ax in ("x", "y", "z"):
        e = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}[ax]
        E_fast = ev(sp6.rot_axis(B, ax, B.cos(th), B.sin(th)))
        E_gen = ev(sp6.rot_axis(B, tuple(map(float, e)), B.cos(th), B.sin(th)))
        assert_close(E_fast, rodrigues(e, th).T, what=f"E = R^T about {ax}")
        assert_close(E_gen, E_fast)
    assert_close(ev(sp6.rot_axis(B, tuple(axis), np.cos(th), np.sin(th))), rodrigues(axis, th).T)


def test_quaternion_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    x, y, z, w = RNG.normal(size=4) / 2
    n = np.sqrt(x * x + y * y + z * z + w * w)
    R = sp6.quat_to_rot(NP, x / n, y / n, z / n, w / n)
    Rp = pin.Quaternion(w / n, x / n, y / n, z / n).toRotationMatrix()  # pin's ctor is (w, x, y, z)
    assert_close(R, Rp)


# --- joints --------------------------------------------------------------------------------------

JOINTS = {
    "revolute_z": Revolute("z"), "revolute_axis": Revolute((0.3, -0.5, 0.8)),
    "prismatic_y": Prismatic("y"), "prismatic_axis": Prismatic((1.0, 2.0, -0.5)),
    "helical_x": Helical("x", pitch=0.2), "helical_axis": Helical((0.2, 0.1, -1.0), pitch=-0.15),
    "spherical": Spherical(), "floating": Floating(), "planar": Planar(),
}


def _XJ(joint, q):
    X, S = joint.calc(NP, np.asarray(q, float))
    return X_dense(X.E, X.r), np.asarray(S, float)


@pytest.mark.parametrize("name", list(JOINTS))
def test_joint_motion_subspace_matches_transform_derivative(name):
    """d/dt XJ(q(t)) = -(S v x) XJ with q(t) = q (+) v t: S is the joint's velocity map."""
    joint = JOINTS[name]
    rng = np.random.default_rng(1)
    q = np.asarray(joint.random_q(rng), float)
    v = rng.normal(size=joint.nv)
    h = 1e-6
    Xp, _ = _XJ(joint, joint.integrate(NP, q, v, h))
    Xm, _ = _XJ(joint, joint.integrate(NP, q, v, -h))
    X0, S = _XJ(joint, q)
    Xdot = (Xp - Xm) / (2 * h)
    assert_close(-Xdot @ np.linalg.inv(X0), crm_dense(S @ v), tol=1e-7, what=name)
    if joint.type in ("revolute", "prismatic", "helical"):
        assert_close(joint.integrate(NP, q, v, 0.5), q + 0.5 * v)


@pytest.mark.parametrize("name", list(JOINTS))
def test_joint_sring_is_apparent_derivative_of_S(name):
    joint = JOINTS[name]
    rng = np.random.default_rng(2)
    q = np.asarray(joint.random_q(rng), float)
    qd = rng.normal(size=joint.nv)
    h = 1e-6
    dS = (_XJ(joint, joint.integrate(NP, q, qd, h))[1]
          - _XJ(joint, joint.integrate(NP, q, qd, -h))[1]) / (2 * h)
    Sr = joint.Sring(NP, q, qd)
    if Sr is None:
        assert_close(dS, np.zeros_like(dS), tol=1e-8, what="S constant")
    else:
        assert name == "planar"
        assert_close(Sr, dS, tol=1e-7, what="Sring")


@pytest.mark.parametrize("backend", BACKENDS)
def test_spherical_integrate_is_exponential_map(backend):
    B = get_backend(backend)
    joint = Spherical()
    q = np.asarray(joint.random_q(RNG), float)
    w = RNG.normal(size=3)
    q1 = ev(joint.integrate(B, c(B, q), c(B, w), 0.7))
    R0, R1 = sp6.quat_to_rot(NP, *q), sp6.quat_to_rot(NP, *q1)
    assert_close(R1, R0 @ expm(S3(0.7 * w)), what="R(q (+) w dt) = R(q) exp(S(w) dt)")
    assert np.isclose(np.linalg.norm(q1), 1.0, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_floating_integrate_is_se3_exponential(backend):
    B = get_backend(backend)
    joint = Floating()
    q = np.asarray(joint.random_q(RNG), float)
    v = RNG.normal(size=6)  # [omega; v] in body coordinates
    q1 = ev(joint.integrate(B, c(B, q), c(B, v), 1.0))

    def T(qq):
        out = np.eye(4)
        out[:3, :3], out[:3, 3] = sp6.quat_to_rot(NP, *qq[3:]), qq[:3]
        return out

    twist = np.zeros((4, 4))
    twist[:3, :3], twist[:3, 3] = S3(v[:3]), v[3:]
    assert_close(T(q1), T(q) @ expm(twist), what="T(q (+) v) = T(q) exp(v^)")
    assert np.isclose(np.linalg.norm(q1[3:]), 1.0, atol=1e-14)


def test_integrate_small_and_zero_velocity():
    for joint in (Spherical(), Floating()):
        q = np.asarray(joint.random_q(RNG), float)
        assert_close(joint.integrate(NP, q, np.zeros(joint.nv)), q, tol=1e-15)
        v = 1e-10 * RNG.normal(size=joint.nv)
        assert np.all(np.isfinite(joint.integrate(NP, q, v)))


def test_unit_norm_preserved_over_many_steps():
    joint = Spherical()
    q = np.asarray(joint.random_q(RNG), float)
    for _ in range(1000):
        q = joint.integrate(NP, q, RNG.normal(size=3), 0.05)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-12


def test_integrate_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    for joint, jm in ((Spherical(), pin.JointModelSpherical()),
                      (Floating(), pin.JointModelFreeFlyer())):
        pm = pin.Model()
        pm.addJoint(0, jm, pin.SE3.Identity(), "j")
        q = np.asarray(joint.random_q(RNG), float)
        v = RNG.normal(size=joint.nv)
        vp = np.concatenate([v[3:], v[:3]]) if joint.nv == 6 else v  # pin: [linear; angular]
        qp = pin.integrate(pm, q, vp)
        q1 = joint.integrate(NP, q, v)
        if np.dot(q1[-4:], qp[-4:]) < 0:
            qp[-4:] *= -1
        assert_close(q1, qp, tol=1e-12, what=joint.type)
