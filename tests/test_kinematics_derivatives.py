"""Frame accelerations and kinematic derivatives (symdyn.algorithms.kinematics_derivatives)
against Pinocchio 4.1, against CasADi AD of symdyn's own frame functions, and on every backend.

Pinocchio orders rows [linear; angular] (``order="linear_first"`` here) and free-flyer speeds
[v; omega] (``matrix_from_pin``). Its ``getFrame*Derivatives`` write into ``data``: each call
gets a fresh ``data`` after ``computeForwardKinematicsDerivatives``.

Pinocchio 4.1 and the exact derivative differ on bodies below a non-root multi-DoF (spherical)
joint for the WORLD / LOCAL_WORLD_ALIGNED ``da_dq`` and the LOCAL kinematic Hessian (Pinocchio's
own finite differences disagree with them there; symdyn returns the exact derivative, checked by
AD). The Pinocchio comparisons therefore use robots and random trees whose multi-DoF joint is
the root free-flyer only; spherical trees are checked against AD.
"""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.algorithms.frames import REFERENCES, frame_jacobian, frame_velocity
from symdyn.algorithms.kinematics_derivatives import (frame_acceleration,
                                                      frame_acceleration_derivatives,
                                                      frame_kinematic_hessian,
                                                      frame_velocity_derivatives)
from symdyn.autodiff import ad_jacobians
from symdyn.model import Frame
from symdyn.models import random_rotation, random_tree, serial_chain
from symdyn.spatial import Transform

TOL = 1e-10


def check(a, b, what, tol=TOL):
    """max |a - b| <= tol * max |b| (or below 1e-13 in absolute terms for a reference that is
    zero up to rounding); returns the relative error."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    err, scale = float(np.abs(a - b).max()), float(np.abs(b).max())
    assert err <= tol * scale or err < 1e-13, f"{what}: max |diff| = {err:.3e}, scale {scale:.3g}"
    return err / scale if scale > 1e-9 else 0.0


def state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-2, 2, model.nv)


# --- against Pinocchio ---------------------------------------------------------------------------

class PinTwin:
    """A symdyn model, ``to_pinocchio`` of it and the maps between them."""

    def __init__(self, model):
        from symdyn.interop.pinocchio import to_pinocchio, velocity_permutation

        self.pin = pytest.importorskip("pinocchio")
        self.model, self.pm = model, to_pinocchio(model)
        self.P = velocity_permutation(model)                 # v_pin = v[P]

    def cols(self, A):
        """Pinocchio's 6 x nv (columns over its speeds) in symdyn's column order."""
        out = np.empty_like(np.asarray(A, float))
        out[:, self.P] = A
        return out

    def hessian(self, H):
        """Pinocchio's getFrameKinematicHessian (its binding reads the column-major tensor in C
        order) as symdyn's H[:, i, j] = dJ[:, i]/dq_j over symdyn's speeds."""
        nv = self.model.nv
        Hp = np.asarray(H).reshape(-1).reshape((6, nv, nv), order="F")
        out = np.empty_like(Hp)
        out[:, self.P[:, None], self.P[None, :]] = Hp
        return out

    def data(self, q, qd, qdd, hessians=False):
        from symdyn.interop.pinocchio import q_to_pin, v_to_pin

        pin, pm = self.pin, self.pm
        pd = pm.createData()
        qp = q_to_pin(self.model, q)
        pin.computeForwardKinematicsDerivatives(pm, pd, qp, v_to_pin(self.model, qd),
                                                v_to_pin(self.model, qdd))
        if hessians:
            pin.computeJointJacobians(pm, pd, qp)
            pin.computeJointKinematicHessians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        return pd

    def frames(self, count, seed=0):
        """``count`` (Pinocchio frame id, symdyn frame name) pairs on moving bodies, chosen at
        random, plus the deepest one (long supports). Names are qualified ("link:" for BODY,
        "joint:" for JOINT and FIXED_JOINT frames): links and joints may share a name."""
        pin = self.pin
        kinds = {pin.FrameType.BODY: "link:", pin.FrameType.JOINT: "joint:",
                 pin.FrameType.FIXED_JOINT: "joint:"}
        ids = [k for k, f in enumerate(self.pm.frames) if f.parentJoint > 0 and f.type in kinds]
        rng = np.random.default_rng(seed)
        pick = [int(k) for k in rng.choice(ids, min(count, len(ids)), replace=False)]
        pick.append(max(ids, key=lambda k: self.pm.frames[k].parentJoint))
        return [(k, kinds[self.pm.frames[k].type] + self.pm.frames[k].name) for k in pick]


#: Where Pinocchio 4.1 is not the exact derivative below a non-root spherical joint (module
#: docstring): (reference, quantity) pairs left out of the comparison on spherical trees.
PIN_INEXACT_BELOW_SPHERICAL = {("world", "da_dq"), ("local_world_aligned", "da_dq"),
                               ("local", "hessian")}


def compare_with_pinocchio(model, seed, count=6, skip=frozenset()):
    """Every function of the module against Pinocchio at one random state, except the
    (reference, quantity) pairs in ``skip``; returns the largest relative error per quantity."""
    T = PinTwin(model)
    pin, pm = T.pin, T.pm
    refs = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    q, qd, qdd = state(model, seed)
    worst: dict[str, float] = {}

    def rec(key, a, b, what, ref=None):
        if (ref, key) not in skip:
            worst[key] = max(worst.get(key, 0.0), check(a, b, what))

    for fid, fname in T.frames(count, seed):
        for ref, rf in refs.items():
            what = f"{model.name} {fname} {ref}"
            rec("acceleration", frame_acceleration(model, q, qd, qdd, fname, ref,
                                                   order="linear_first"),
                pin.getFrameAcceleration(pm, T.data(q, qd, qdd), fid, rf).vector, what)
            mine = frame_velocity_derivatives(model, q, qd, fname, ref, order="linear_first")
            ref_ = pin.getFrameVelocityDerivatives(pm, T.data(q, qd, qdd), fid, rf)
            for key, a, b in zip(("dv_dq", "dv_dqd"), mine, ref_):
                rec(key, a, T.cols(b), f"{what} {key}")
            mine = frame_acceleration_derivatives(model, q, qd, qdd, fname, ref,
                                                  order="linear_first")
            ref_ = pin.getFrameAccelerationDerivatives(pm, T.data(q, qd, qdd), fid, rf)
            for key, a, b in zip(("dv_dq", "da_dq", "da_dqd", "da_dqdd"), mine, ref_):
                rec(key, a, T.cols(b), f"{what} {key} (acceleration derivatives)", ref)
            H = frame_kinematic_hessian(model, q, fname, ref, order="linear_first")
            Hp = pin.getFrameKinematicHessian(pm, T.data(q, qd, qdd, hessians=True), fid, rf)
            rec("hessian", H, T.hessian(Hp), f"{what} hessian", ref)
    return worst


@pytest.mark.parametrize("robot", ["panda", "solo12"])
def test_robots_match_pinocchio(robot):
    worst = compare_with_pinocchio(sd.load_robot(robot), seed=3)
    assert set(worst) == {"acceleration", "dv_dq", "dv_dqd", "da_dq", "da_dqd", "da_dqdd",
                          "hessian"}


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["talos", "anymal_c"])
def test_big_robots_match_pinocchio(robot):
    compare_with_pinocchio(sd.load_robot(robot), seed=4, count=8)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_trees_match_pinocchio(seed):
    """Revolute, prismatic and helical joints below a free-flyer (Pinocchio's twin of symdyn's
    unaligned axes and pitches), two seeds."""
    model = random_tree(8, seed=seed, joint_kinds=("revolute", "prismatic", "helical"),
                        floating_base=True)
    compare_with_pinocchio(model, seed=seed + 10, count=5)


def test_spherical_trees_match_pinocchio_where_it_is_exact():
    """Spherical joints below the free-flyer: everything but PIN_INEXACT_BELOW_SPHERICAL agrees
    with Pinocchio (those are checked against AD in test_derivatives_equal_casadi_ad)."""
    for seed in (3, 4):
        worst = compare_with_pinocchio(spherical_tree(seed), seed, count=6,
                                       skip=PIN_INEXACT_BELOW_SPHERICAL)
        assert {"dv_dq", "dv_dqd", "da_dq", "da_dqd", "da_dqdd", "hessian"} <= set(worst)


# --- against CasADi AD of symdyn's own frame functions -----------------------------------------------

def spherical_tree(seed=3):
    return random_tree(7, seed=seed, joint_kinds=("revolute", "helical", "spherical", "prismatic"),
                       floating_base=True)


def lwa_shift(p, M):
    """[m_ang; m_lin - p x m_ang] column by column (world vectors moved to the point p)."""
    M = np.asarray(M, float)
    return np.vstack([M[:3], M[3:] - np.cross(p, M[:3].T).T])


@pytest.mark.parametrize("seed", [3, 5])
def test_derivatives_equal_casadi_ad(seed):
    """Exact tangent-space derivatives (spherical joints below the free-flyer included): LOCAL
    and WORLD equal AD of frame_velocity / frame_acceleration; LOCAL_WORLD_ALIGNED's qd, qdd
    columns too, and its q columns are the WORLD ones moved to the frame origin; the Hessian is
    AD of frame_jacobian in all three references."""
    model = spherical_tree(seed)
    q, qd, qdd = state(model, seed)
    nv = model.nv
    offset = Frame(model.N // 2, Transform(random_rotation(np.random.default_rng(seed)).T,
                                           np.array([0.1, 0.4, -0.3])), "offset")
    for body in (model.N - 1, offset):
        p = sd.frame_placement(model, q, body)[1]
        world = frame_acceleration_derivatives(model, q, qd, qdd, body, "world")
        for ref in REFERENCES:
            what = f"body {body} {ref}"

            def vel(m, q_, v_, backend=None):
                return frame_velocity(m, q_, v_, body, ref, backend=backend)

            def acc(m, q_, v_, a_, backend=None):
                return frame_acceleration(m, q_, v_, a_, body, ref, backend=backend)

            def jac(m, q_, backend=None):
                return frame_jacobian(m, q_, body, ref, backend=backend)

            _, Vq, Vv = ad_jacobians(model, vel, [q, qd], ["q", "v"], [0, 1])
            _, Aq, Av, Aa = ad_jacobians(model, acc, [q, qd, qdd], ["q", "v", "v"], [0, 1, 2])
            _, Jq = ad_jacobians(model, jac, [q], ["q"], [0])
            dv_dq, dv_dqd = frame_velocity_derivatives(model, q, qd, body, ref)
            d4 = frame_acceleration_derivatives(model, q, qd, qdd, body, ref)
            check(dv_dqd, Vv, f"{what} dv_dqd")
            check(d4[2], Av, f"{what} da_dqd")
            check(d4[3], Aa, f"{what} da_dqdd")
            check(d4[0], dv_dq, f"{what} dv_dq of both functions")
            if ref == "local_world_aligned":   # Pinocchio's convention (module docstring)
                check(dv_dq, lwa_shift(p, world[0]), f"{what} dv_dq")
                check(d4[1], lwa_shift(p, world[1]), f"{what} da_dq")
                assert np.abs(dv_dq - Vq).max() > 1e-3   # not the total derivative
            else:
                check(dv_dq, Vq, f"{what} dv_dq")
                check(d4[1], Aq, f"{what} da_dq")
            H = frame_kinematic_hessian(model, q, body, ref)
            Had = Jq.reshape(nv, 6, nv).transpose(1, 0, 2)     # vec(J) is column-major
            check(H, Had, f"{what} hessian")


def test_frame_acceleration_is_the_rate_of_the_world_velocity():
    """d/dt of the WORLD velocity along (qd, qdd) is the WORLD spatial acceleration (AD), and
    the LOCAL / LWA ones are the WORLD one carried into frame coordinates / rotated; the
    classical acceleration adds [0; omega x v] to the spatial one."""
    model = spherical_tree(4)
    q, qd, qdd = state(model, 4)
    offset = Frame(model.N - 2, Transform(random_rotation(np.random.default_rng(0)).T,
                                          np.array([0.3, -0.2, 0.5])), "offset")
    for frame in (model.N - 1, offset):
        _, Vq, Vv = ad_jacobians(model, lambda m, q_, v_, backend=None: frame_velocity(
            m, q_, v_, frame, "world", backend=backend), [q, qd], ["q", "v"], [0, 1])
        a_world = frame_acceleration(model, q, qd, qdd, frame, "world")
        check(a_world, Vq @ qd + Vv @ qdd, "world acceleration = d/dt world velocity")
        R, p = sd.frame_placement(model, q, frame)
        a_local = frame_acceleration(model, q, qd, qdd, frame, "local")
        check(a_local, np.concatenate([R.T @ a_world[:3],
                                       R.T @ (a_world[3:] + np.cross(a_world[:3], p))]),
              "local = ^fX_0 world")
        check(frame_acceleration(model, q, qd, qdd, frame, "local_world_aligned"),
              np.concatenate([R @ a_local[:3], R @ a_local[3:]]), "lwa = R local")
        v = frame_velocity(model, q, qd, frame, "local")
        check(sd.frame_classical_acceleration(model, q, qd, qdd, frame, "local"),
              a_local + np.concatenate([np.zeros(3), np.cross(v[:3], v[3:])]), "classical")


# --- backends ------------------------------------------------------------------------------------

def _all_outputs(model, q, qd, qdd, frame, ref, backend=None):
    out = [frame_acceleration(model, q, qd, qdd, frame, ref, backend=backend)]
    out += list(frame_velocity_derivatives(model, q, qd, frame, ref, backend=backend))
    out += list(frame_acceleration_derivatives(model, q, qd, qdd, frame, ref, backend=backend))
    return out


@pytest.mark.parametrize("ref", REFERENCES)
def test_casadi_graphs_equal_numpy(ref):
    model = spherical_tree(6)
    q, qd, qdd = state(model, 6)
    frame = model.N - 1
    syms = [ca.SX.sym(n, k) for n, k in (("q", model.nq), ("qd", model.nv), ("qdd", model.nv))]
    outs = _all_outputs(model, *syms, frame, ref)
    H = frame_kinematic_hessian(model, syms[0], frame, ref)
    f = ca.Function("f", syms, outs + [ca.hcat(H.pages)])
    got = [np.array(x) for x in f(q, qd, qdd)]
    want = _all_outputs(model, q, qd, qdd, frame, ref)
    for k, (a, b) in enumerate(zip(got, want)):
        check(a.reshape(b.shape), b, f"casadi output {k}")
    Hn = frame_kinematic_hessian(model, q, frame, ref)
    check(got[-1], np.hstack([Hn[:, :, j] for j in range(model.nv)]), "casadi hessian")


def sympy_values(expr, vals):
    """The numbers of a SymPy matrix at the symbol values ``vals``."""
    return np.array(sp.Matrix(expr).xreplace({k: sp.Float(v) for k, v in vals.items()}), float)


def test_sympy_two_link_arm():
    """Symbolic q, qd, qdd on a 2-link chain (one revolute, one prismatic joint), then numbers:
    equal to NumPy."""
    model = serial_chain(2, joint=("revolute", "prismatic"))
    q, qd, qdd = (sp.Matrix(sp.symbols(f"{n}0:2", real=True)) for n in ("q", "qd", "qdd"))
    vals = {s: v for s, v in zip(list(q) + list(qd) + list(qdd),
                                 [0.3, -0.2, 0.7, -1.1, 0.4, 0.9])}
    num = [np.array([vals[s] for s in x], float) for x in (q, qd, qdd)]
    for ref in REFERENCES:
        sym = _all_outputs(model, q, qd, qdd, 1, ref)
        want = _all_outputs(model, *num, 1, ref)
        for k, (a, b) in enumerate(zip(sym, want)):
            check(sympy_values(a, vals).reshape(b.shape), b,
                  f"sympy {ref} output {k}")
        H = frame_kinematic_hessian(model, q, 1, ref)
        Hn = frame_kinematic_hessian(model, num[0], 1, ref)
        for j in range(model.nv):
            check(sympy_values(H[:, :, j], vals), Hn[:, :, j], f"sympy H {j}")


# --- structure and bad input ----------------------------------------------------------------------

def test_order_and_fixed_frames():
    """order="linear_first" swaps the row blocks only; a frame on the world gives zeros; the
    qdd derivative is the frame Jacobian."""
    model = sd.load_robot("panda")
    q, qd, qdd = state(model, 2)
    a = frame_acceleration_derivatives(model, q, qd, qdd, "panda_hand", "local")
    b = frame_acceleration_derivatives(model, q, qd, qdd, "panda_hand", "local",
                                       order="linear_first")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, np.vstack([y[3:], y[:3]]))
    check(a[3], frame_jacobian(model, q, "panda_hand", "local"), "da_dqdd = J")
    world = [n for n, f in model.frames.items() if f.body < 0]
    assert world, "panda has a link fixed to the world"
    for x in frame_velocity_derivatives(model, q, qd, world[0], "world"):
        assert x.shape == (6, model.nv) and not x.any()
    H = frame_kinematic_hessian(model, q, world[0])
    assert H.shape == (6, model.nv, model.nv) and not H.any()


def test_bad_input():
    model = sd.load_robot("panda")
    q, qd, qdd = state(model, 0)
    with pytest.raises(KeyError, match="no frame or joint named 'nope'"):
        frame_velocity_derivatives(model, q, qd, "nope")
    with pytest.raises(ValueError, match="reference must be one of"):
        frame_acceleration_derivatives(model, q, qd, qdd, "panda_hand", "LOCAL")
    with pytest.raises(ValueError, match="order must be one of"):
        frame_acceleration(model, q, qd, qdd, "panda_hand", order="pinocchio")
    with pytest.raises(ValueError, match=r"qd must have shape \(9,\)"):
        frame_velocity_derivatives(model, q, qd[:3], "panda_hand")
    bad = qdd.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="qdd contains NaN"):
        frame_acceleration_derivatives(model, q, qd, bad, "panda_hand")
    with pytest.raises(ValueError, match="q contains NaN"):
        frame_kinematic_hessian(model, np.full(model.nq, np.nan), "panda_hand")
    with pytest.raises(TypeError, match="qdd is required"):
        frame_acceleration(model, q, qd, None, "panda_hand")
    planar = serial_chain(3, joint=("planar", "revolute", "revolute"), seed=0)
    qp, vp, ap = state(planar, 0)
    frame_acceleration(planar, qp, vp, ap, 2)                    # supported
    for fn, args in ((frame_velocity_derivatives, (qp, vp)),
                     (frame_acceleration_derivatives, (qp, vp, ap)),
                     (frame_kinematic_hessian, (qp,))):
        with pytest.raises(ValueError, match="planar"):
            fn(planar, *args, 2)


# --- gravity, static torque and centroidal dynamics derivatives -----------------------------------

def random_forces(model, seed):
    rng = np.random.default_rng(seed)
    fx = [rng.normal(size=6) for _ in range(model.N)]
    fx[rng.integers(model.N)] = None                       # None: no force on that body
    return fx


def pin_forces(pin, model, fx):
    """symdyn's per-body [n; f] (body coordinates) as Pinocchio's fext (per joint, local frame,
    [f; n]) for the model of to_pinocchio."""
    from symdyn.interop.pinocchio import pinocchio_order

    out = pin.StdVec_Force()
    out.append(pin.Force.Zero())
    for i in pinocchio_order(model):
        f = np.zeros(6) if fx[i] is None else np.asarray(fx[i], float)
        out.append(pin.Force(f[3:], f[:3]))
    return out


def compare_statics_centroidal_with_pinocchio(model, seed):
    """generalized_gravity / static_torque / centroidal_dynamics derivatives against Pinocchio at
    one random state; returns the largest relative error per quantity."""
    from symdyn.interop.pinocchio import matrix_from_pin, q_to_pin, v_to_pin

    T = PinTwin(model)
    pin, pm = T.pin, T.pm
    q, qd, qdd = state(model, seed)
    fx = random_forces(model, seed)
    qp = q_to_pin(model, q)
    worst = {"gravity": check(sd.generalized_gravity_derivatives(model, q),
                              matrix_from_pin(model, pin.computeGeneralizedGravityDerivatives(
                                  pm, pm.createData(), qp)), f"{model.name} dg/dq"),
             "static": check(sd.static_torque_derivatives(model, q, fx),
                             matrix_from_pin(model, pin.computeStaticTorqueDerivatives(
                                 pm, pm.createData(), qp, pin_forces(pin, model, fx))),
                             f"{model.name} dtau_s/dq")}
    ref = pin.computeCentroidalDynamicsDerivatives(pm, pm.createData(), qp, v_to_pin(model, qd),
                                                   v_to_pin(model, qdd))
    mine = sd.centroidal_dynamics_derivatives(model, q, qd, qdd, order="linear_first")
    for key, a, b in zip(("dh_dq", "dhdot_dq", "dhdot_dqd", "dhdot_dqdd"), mine, ref):
        worst[key] = check(a, T.cols(b), f"{model.name} {key}")
    return worst


@pytest.mark.parametrize("robot", ["panda", "solo12"])
def test_statics_and_centroidal_match_pinocchio(robot):
    compare_statics_centroidal_with_pinocchio(sd.load_robot(robot), seed=5)


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["talos", "anymal_c"])
def test_big_robots_statics_and_centroidal_match_pinocchio(robot):
    compare_statics_centroidal_with_pinocchio(sd.load_robot(robot), seed=6)


def test_statics_and_centroidal_on_spherical_trees_match_pinocchio():
    for seed in (3, 4):
        compare_statics_centroidal_with_pinocchio(spherical_tree(seed), seed)


def test_statics_and_centroidal_equal_casadi_ad():
    """dg/dq, dtau_s/dq: AD of gravity_vector / rnea(q, 0, 0, f_ext); the centroidal
    derivatives: AD of centroidal_momentum and of hdot = Ag qdd + dAg/dt qd."""
    model = spherical_tree(7)
    q, qd, qdd = state(model, 7)
    fx = random_forces(model, 7)
    _, Gq = ad_jacobians(model, lambda m, q_, backend=None: sd.gravity_vector(
        m, q_, backend=backend), [q], ["q"], [0])
    check(sd.generalized_gravity_derivatives(model, q), Gq, "dg/dq")
    zero = np.zeros(model.nv)
    _, Sq = ad_jacobians(model, lambda m, q_, backend=None: sd.rnea(
        m, q_, zero, zero, fx, backend=backend), [q], ["q"], [0])
    check(sd.static_torque_derivatives(model, q, fx), Sq, "dtau_s/dq")

    def hdot(m, q_, v_, a_, backend=None):
        return sd.centroidal_momentum_matrix(m, q_, backend=backend) @ a_ \
            + sd.centroidal_momentum_matrix_time_variation(m, q_, v_, backend=backend) @ v_

    _, Hq = ad_jacobians(model, lambda m, q_, v_, backend=None: sd.centroidal_momentum(
        m, q_, v_, backend=backend), [q, qd], ["q", "v"], [0])
    _, Fq, Fv, Fa = ad_jacobians(model, hdot, [q, qd, qdd], ["q", "v", "v"], [0, 1, 2])
    for key, a, b in zip(("dh_dq", "dhdot_dq", "dhdot_dqd", "dhdot_dqdd"),
                         sd.centroidal_dynamics_derivatives(model, q, qd, qdd), (Hq, Fq, Fv, Fa)):
        check(a, b, key)
    check(Fa, sd.centroidal_momentum_matrix(model, q), "dhdot_dqdd = Ag")


def test_statics_and_centroidal_on_graph_backends():
    """CasADi SX graphs and SymPy expressions (2-link chain) equal NumPy."""
    model = spherical_tree(8)
    q, qd, qdd = state(model, 8)
    fx = random_forces(model, 8)
    syms = [ca.SX.sym(n, k) for n, k in (("q", model.nq), ("qd", model.nv), ("qdd", model.nv))]
    outs = [sd.generalized_gravity_derivatives(model, syms[0]),
            sd.static_torque_derivatives(model, syms[0], fx),
            *sd.centroidal_dynamics_derivatives(model, *syms)]
    got = ca.Function("f", syms, outs)(q, qd, qdd)
    want = [sd.generalized_gravity_derivatives(model, q), sd.static_torque_derivatives(model, q, fx),
            *sd.centroidal_dynamics_derivatives(model, q, qd, qdd)]
    for k, (a, b) in enumerate(zip(got, want)):
        check(np.array(a), b, f"casadi output {k}")
    small = serial_chain(2, joint=("revolute", "prismatic"))
    qs, vs, us = (sp.Matrix(sp.symbols(f"{n}0:2", real=True)) for n in ("q", "qd", "qdd"))
    vals = dict(zip(list(qs) + list(vs) + list(us), [0.4, 0.3, -0.6, 1.2, 0.5, -0.8]))
    num = [np.array([vals[s] for s in x], float) for x in (qs, vs, us)]
    fs = random_forces(small, 2)
    pairs = [(sd.generalized_gravity_derivatives(small, qs),
              sd.generalized_gravity_derivatives(small, num[0])),
             (sd.static_torque_derivatives(small, qs, fs),
              sd.static_torque_derivatives(small, num[0], fs))]
    pairs += list(zip(sd.centroidal_dynamics_derivatives(small, qs, vs, us),
                      sd.centroidal_dynamics_derivatives(small, *num)))
    for k, (a, b) in enumerate(pairs):
        check(sympy_values(a, vals), b, f"sympy output {k}")


def test_stacked_external_forces_equal_the_list():
    """f_ext stacked into one 6 N vector (what compiled functions take: body i's [n; f] at rows
    6 i .. 6 i + 5) gives the list form's results: a NumPy vector, a CasADi column, and through
    rnea and aba too."""
    model = spherical_tree(8)
    q, qd, qdd = state(model, 3)
    fx = random_forces(model, 3)
    stacked = np.concatenate([np.zeros(6) if f is None else f for f in fx])
    check(sd.static_torque_derivatives(model, q, stacked),
          sd.static_torque_derivatives(model, q, fx), "numpy stacked")
    check(sd.rnea(model, q, qd, qdd, stacked), sd.rnea(model, q, qd, qdd, fx), "rnea stacked")
    check(sd.aba(model, q, qd, qdd, stacked.reshape(-1, 1)), sd.aba(model, q, qd, qdd, fx),
          "aba stacked column")
    sym_q, sym_f = ca.SX.sym("q", model.nq), ca.SX.sym("f", 6 * model.N)
    f = ca.Function("f", [sym_q, sym_f], [sd.static_torque_derivatives(model, sym_q, sym_f)])
    check(np.array(f(q, stacked)), sd.static_torque_derivatives(model, q, fx), "casadi stacked")
    with pytest.raises(ValueError, match=r"one stacked vector of %d" % (6 * model.N)):
        sd.static_torque_derivatives(model, q, stacked[:-1])
    with pytest.raises(ValueError, match="contains NaN"):
        sd.static_torque_derivatives(model, q, np.full(6 * model.N, np.nan))


def test_statics_and_centroidal_bad_input():
    model = sd.load_robot("solo12")
    q, qd, qdd = state(model, 0)
    with pytest.raises(TypeError, match="f_ext is required"):
        sd.static_torque_derivatives(model, q, None)
    with pytest.raises(ValueError, match="f_ext must hold one 6-vector"):
        sd.static_torque_derivatives(model, q, [np.zeros(6)] * 3)
    with pytest.raises(ValueError, match="q contains NaN"):
        sd.generalized_gravity_derivatives(model, np.full(model.nq, np.nan))
    with pytest.raises(ValueError, match=r"qd must have shape \(18,\)"):
        sd.centroidal_dynamics_derivatives(model, q, qd[:5], qdd)
    with pytest.raises(ValueError, match="order must be one of"):
        sd.centroidal_dynamics_derivatives(model, q, qd, qdd, order="pinocchio")
    with pytest.raises(TypeError, match="expected a symdyn Model"):
        sd.generalized_gravity_derivatives("solo12", q)
    planar = serial_chain(3, joint=("planar", "revolute", "revolute"), seed=0)
    with pytest.raises(ValueError, match="planar"):
        sd.centroidal_dynamics_derivatives(planar, *state(planar, 0))


def test_model_without_moving_bodies():
    """nv = 0: frames hang on the world (empty 6 x 0 derivatives); the centroidal derivatives
    are refused (no centre of mass), the gravity derivative is 0 x 0."""
    model = sd.load_urdf("""<robot name="fixed_only">
      <link name="base"><inertial><mass value="2"/>
        <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="tool"/>
      <joint name="base_to_tool" type="fixed"><parent link="base"/><child link="tool"/>
        <origin xyz="0 0 0.5"/></joint></robot>""")
    q, e = model.neutral(), np.zeros(0)
    for x in frame_acceleration_derivatives(model, q, e, e, "tool", "world"):
        assert np.shape(x) == (6, 0)
    assert np.shape(sd.generalized_gravity_derivatives(model, q)) == (0, 0)
    with pytest.raises(ValueError, match="no moving body"):
        sd.centroidal_dynamics_derivatives(model, q, e, e)


@pytest.mark.slow
def test_jax_backend_equals_numpy():
    """Eager JAX (float64) gives NumPy's numbers for every function of the two modules (op by
    op: about 20 s, hence slow)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    model = spherical_tree(9)
    q, qd, qdd = state(model, 9)
    fx = random_forces(model, 9)
    frame = model.N - 1
    calls = [(frame_acceleration, (q, qd, qdd, frame, "local")),
             (frame_velocity_derivatives, (q, qd, frame, "world")),
             (frame_acceleration_derivatives, (q, qd, qdd, frame, "local_world_aligned")),
             (frame_kinematic_hessian, (q, frame, "local")),
             (sd.generalized_gravity_derivatives, (q,)),
             (sd.static_torque_derivatives, (q, fx)),
             (sd.centroidal_dynamics_derivatives, (q, qd, qdd))]
    for fn, args in calls:
        want = fn(model, *args)
        got = fn(model, *[jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in args],
                 backend="jax")
        for a, b in zip(*((x,) if not isinstance(x, tuple) else x for x in (got, want))):
            check(np.asarray(a), b, f"jax {fn.__name__}")
