"""Frames (symdyn.algorithms.frames) against Pinocchio and by identities, on every backend.

The reference is Pinocchio's own model of the same URDF file (``buildModelFromUrdf``): joints are
matched by URDF joint name, frames by link name (Pinocchio's BODY frames) and joint name (JOINT
frames), so that symdyn's URDF import, its fixed-link frames and the algorithms are all checked.
Pinocchio orders spatial vectors and Jacobian rows [linear; angular] and free-flyer speeds
[v; omega]; symdyn [angular; linear] and [omega; v].
"""
from __future__ import annotations

import functools

import casadi as ca
import numpy as np
import pytest
import sympy as sp

from conftest import run

pin = pytest.importorskip("pinocchio")

import symdyn as sd  # noqa: E402
from symdyn.algorithms.frames import (REFERENCES, frame_classical_acceleration,  # noqa: E402
                                      frame_jacobian, frame_jacobian_time_variation,
                                      frame_placement, frame_velocity, joint_frames,
                                      resolve_frame)
from symdyn.model import Frame  # noqa: E402
from symdyn.models import serial_chain  # noqa: E402
from symdyn.io.robots import ROBOTS, load_robot, robot_urdf  # noqa: E402

TOL = 1e-12
ROBOT_NAMES = ("ur5", "panda", "kinova", "solo12", "anymal", "go1", "talos")
PIN_REF = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def check(a, b, what, tol=TOL):
    """max |a - b| <= tol * max |b| (relative to the reference's largest entry; exact zeros for a
    zero reference)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    err, scale = float(np.abs(a - b).max()), float(np.abs(b).max())
    assert err <= tol * scale or err < 1e-15, f"{what}: max |diff| = {err:.3e}, scale {scale:.3g}"
    return err / scale if scale > 1e-9 else err  # (a reference that is zero up to rounding)


def swap(x):
    """[linear; angular] <-> [angular; linear] along the first axis."""
    x = np.asarray(x)
    return np.concatenate([x[3:], x[:3]])


class Pair:
    """A symdyn robot and Pinocchio's model of the same URDF, with index maps by joint name."""

    def __init__(self, name):
        self.model = m = load_robot(name, snap=0)  # the file's values, as Pinocchio reads them
        path = str(robot_urdf(name))
        self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) \
            if ROBOTS[name].floating_base else pin.buildModelFromUrdf(path)
        pm = self.pm
        assert pm.njoints - 1 == m.N
        self.jid = [pm.getJointId(n) for n in m.joint_names]
        self.P = np.empty(m.nv, dtype=int)  # v_pin = v[P]
        for i, jid in enumerate(self.jid):
            a, b = m.v_idx[i]
            idx = list(range(a, b))
            if m.joints[i].type == "floating":
                idx = idx[3:] + idx[:3]
            self.P[pm.idx_vs[jid]:pm.idx_vs[jid] + b - a] = idx

    def q_pin(self, q):
        out = np.zeros(self.pm.nq)
        for i, jid in enumerate(self.jid):
            a, b = self.model.q_idx[i]
            k = self.pm.idx_qs[jid]
            if self.pm.nqs[jid] == 2 and b - a == 1:  # continuous joint: (cos, sin)
                out[k:k + 2] = np.cos(q[a]), np.sin(q[a])
            else:
                out[k:k + b - a] = q[a:b]
        return out

    def v_pin(self, v):
        return np.asarray(v, float)[self.P]

    def cols_from_pin(self, A):
        """A Pinocchio matrix with columns over its speeds -> symdyn's speed order."""
        out = np.empty_like(A)
        out[:, self.P] = A
        return out

    def frames(self, seed=0):
        """Link names under test: up to five fixed links on moving bodies (end effectors, feet,
        sensors), one fixed to the world if any, three moving links (random)."""
        m, rng = self.model, np.random.default_rng(seed)
        fixed = [n for n, f in m.frames.items() if n not in m.names and f.body >= 0]
        world = [n for n, f in m.frames.items() if f.body < 0]
        pick = list(rng.choice(fixed, min(5, len(fixed)), replace=False)) + world[:1] \
            + list(rng.choice(m.names, 3, replace=False))
        return [str(n) for n in pick]


@functools.lru_cache(maxsize=None)
def pair(name) -> Pair:
    return Pair(name)


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-2, 2, model.nv)


# --- against Pinocchio -----------------------------------------------------------------------------

def pinocchio_kinematics(P, seed: int):
    """A random state of the pair's model and Pinocchio's data with its frame kinematics
    (placements, Jacobians and their rates) computed at that state."""
    m, pm = P.model, P.pm
    pd = pm.createData()
    q, qd, qdd = state(m, seed)
    qp, vp, ap = P.q_pin(q), P.v_pin(qd), P.v_pin(qdd)
    pin.forwardKinematics(pm, pd, qp, vp, ap)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobians(pm, pd, qp)
    pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
    return m, pm, pd, (q, qd, qdd), (qp, vp, ap)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_frames_match_pinocchio(name):
    P = pair(name)
    m, pm, pd, (q, qd, qdd), (qp, vp, ap) = pinocchio_kinematics(P, 1)
    worst = {}
    for fname in P.frames():
        fid = pm.getFrameId(fname, pin.BODY)
        assert fid < pm.nframes, fname
        R, p = frame_placement(m, q, fname)
        worst["placement"] = max(worst.get("placement", 0),
                                 check(R, pd.oMf[fid].rotation, f"{name} {fname} R"),
                                 check(p, pd.oMf[fid].translation, f"{name} {fname} p"))
        for ref, rf in PIN_REF.items():
            what = f"{name} {fname} {ref}"
            v = frame_velocity(m, q, qd, fname, ref)
            J = frame_jacobian(m, q, fname, ref)
            dJ = frame_jacobian_time_variation(m, q, qd, fname, ref)
            acc = frame_classical_acceleration(m, q, qd, qdd, fname, ref)
            Jp = P.cols_from_pin(swap(pin.getFrameJacobian(pm, pd, fid, rf)))
            dJp = P.cols_from_pin(swap(pin.getFrameJacobianTimeVariation(pm, pd, fid, rf)))
            for key, a, b in (("velocity", v, swap(pin.getFrameVelocity(pm, pd, fid, rf).vector)),
                              ("jacobian", J, Jp), ("jacobian_rate", dJ, dJp),
                              ("classical_acc", acc,
                               swap(pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector))):
                if np.abs(b).max() == 0:      # a frame fixed to the world
                    assert np.abs(a).max() == 0, f"{what} {key}"
                    continue
                worst[key] = max(worst.get(key, 0), check(a, b, f"{what} {key}"))
    print(name, {k: f"{v:.1e}" for k, v in worst.items()})


@pytest.mark.parametrize("name", ["panda", "solo12"])
def test_joint_frames_match_pinocchio(name):
    """A joint name resolves to the successor frame (Pinocchio's data.oMi / JOINT frame); the
    predecessor side of joint_frames is oMi[parent] * jointPlacement."""
    P = pair(name)
    m, pm = P.model, P.pm
    pd = pm.createData()
    q, qd, _ = state(m, 2)
    pin.forwardKinematics(pm, pd, P.q_pin(q), P.v_pin(qd))
    pin.computeJointJacobians(pm, pd, P.q_pin(q))
    parent = joint_frames(m, "parent")
    for i, jname in enumerate(m.joint_names):
        jid = P.jid[i]
        R, p = frame_placement(m, q, jname)
        check(R, pd.oMi[jid].rotation, jname)
        check(p, pd.oMi[jid].translation, jname)
        pred = pd.oMi[pm.parents[jid]] * pm.jointPlacements[jid]
        R, p = frame_placement(m, q, parent[jname])
        check(R, pred.rotation, jname + " predecessor")
        check(p, pred.translation + 0.0, jname + " predecessor")
        Jp = P.cols_from_pin(swap(pin.getJointJacobian(pm, pd, jid, pin.LOCAL)))
        check(frame_jacobian(m, q, jname), Jp, jname + " jacobian")
        check(frame_jacobian(m, q, i), Jp, jname + " jacobian by body index")


# --- identities -----------------------------------------------------------------------------------

def _rate_along(model, fn, q, qd, qdd=None):
    """d/dt fn(q(t)) at t = 0 for q(t) = q (+) t qd by CasADi forward AD (fn on the CasADi
    backend); with ``qdd``, d/dt fn(q(t), qd + t qdd)."""
    t = ca.SX.sym("t")
    qt = sd.integrate(model, q, ca.SX(ca.DM(qd)) * t)
    y = fn(qt) if qdd is None else fn(qt, ca.SX(ca.DM(qd)) + t * ca.SX(ca.DM(qdd)))
    f = ca.Function("d", [t], [ca.jacobian(ca.vec(y), t)])
    ref = fn(q) if qdd is None else fn(q, qd)
    return np.array(f(0.0), float).reshape(np.shape(ref), order="F")


@pytest.mark.parametrize("name", ["ur5", "solo12", "talos"])
def test_jacobian_rate_and_drift_identities(name):
    m = pair(name).model
    q, qd, qdd = state(m, 3)
    for fname in pair(name).frames(seed=1)[:4]:
        for ref in REFERENCES:
            what = f"{name} {fname} {ref}"
            J = frame_jacobian(m, q, fname, ref)
            check(frame_velocity(m, q, qd, fname, ref), J @ qd, what + " v = J qd")
            dJ = frame_jacobian_time_variation(m, q, qd, fname, ref)
            dJ_ad = _rate_along(m, lambda x: frame_jacobian(m, x, fname, ref), q, qd)
            check(dJ, dJ_ad, what + " dJ/dt vs AD")
            acc = frame_classical_acceleration(m, q, qd, qdd, fname, ref)
            v = J @ qd
            drift = dJ @ qd
            if ref != "local_world_aligned":  # the classical correction [0; omega x v]
                drift = drift + np.concatenate([np.zeros(3), np.cross(v[:3], v[3:])])
            check(acc, J @ qdd + drift, what + " classical acceleration = J qdd + drift")
            check(frame_classical_acceleration(m, q, qd, np.zeros(m.nv), fname, ref), drift,
                  what + " drift")
    # the frame origin's acceleration is the second derivative of its position
    fname = pair(name).frames(seed=1)[0]
    acc = frame_classical_acceleration(m, q, qd, np.zeros(m.nv), fname, "local_world_aligned")
    pdot = frame_velocity(m, q, qd, fname, "local_world_aligned")[3:]
    check(_rate_along(m, lambda x: frame_placement(m, x, fname)[1], q, qd), pdot, "pdot")
    check(_rate_along(m, lambda x, v: frame_velocity(m, x, v, fname, "local_world_aligned"), q, qd,
                      np.zeros(m.nv)), acc, "d/dt [omega; pdot] at qdd = 0")


# --- backends --------------------------------------------------------------------------------------

def _symengine_run(fn, model, *args):
    se = pytest.importorskip("symengine")
    syms, values = [], {}
    for k, a in enumerate(args):
        s = se.symbols(f"a{k}_0:{len(a)}")
        syms.append(se.DenseMatrix([[x] for x in s]))
        values.update(zip(s, np.asarray(a, float)))
    out = fn(model, *syms)
    B = sd.backends.get_backend("symengine")

    def ev(x):
        if isinstance(x, tuple):
            return tuple(ev(e) for e in x)
        if hasattr(x, "shape"):
            return B.to_numpy(x.subs(values))
        return float(x.subs(values))
    res = ev(out)
    ref = fn(model, *args)
    if isinstance(ref, tuple):
        return tuple(np.reshape(r, np.shape(f)) for r, f in zip(res, ref))
    return np.reshape(res, np.shape(ref))


def _frame_calls(fname, ref):
    return [
        ("placement", lambda mo, q: frame_placement(mo, q, fname), 1),
        ("velocity", lambda mo, q, v: frame_velocity(mo, q, v, fname, ref), 2),
        ("jacobian", lambda mo, q: frame_jacobian(mo, q, fname, ref), 1),
        ("jacobian_rate", lambda mo, q, v: frame_jacobian_time_variation(mo, q, v, fname, ref), 2),
        ("classical_acc", lambda mo, q, v, a: frame_classical_acceleration(mo, q, v, a, fname, ref), 3),
    ]


@pytest.mark.parametrize("backend", ["sympy", "symengine", "casadi"])
def test_symbolic_backends_match_numpy(backend):
    """SymPy on a small chain (an end frame off the body origin), SymEngine and CasADi on the
    double pendulum URDF and solo12 (floating base, a foot frame), evaluated at numbers."""
    from symdyn.spatial import Transform

    chain = serial_chain(3)
    tip = Frame(2, Transform(np.array([[0.0, 1, 0], [0, 0, 1], [1, 0, 0]]), np.array([0.3, -0.1, 0.5])))
    cases = [(chain, tip)] if backend == "sympy" else \
        [(load_robot("double_pendulum"), "link2"), (pair("solo12").model, "FL_FOOT")]
    for model, fname in cases:
        q, qd, qdd = state(model, 4)
        for ref in REFERENCES:
            for key, fn, nargs in _frame_calls(fname, ref):
                args = (q, qd, qdd)[:nargs]
                expect = fn(model, *args)
                got = _symengine_run(fn, model, *args) if backend == "symengine" \
                    else run(backend, fn, model, *args)
                for g, e in zip(got if isinstance(expect, tuple) else [got],
                                expect if isinstance(expect, tuple) else [expect]):
                    check(np.reshape(g, np.shape(e)), e, f"{backend} {model.name} {key} {ref}", 1e-11)


def test_sympy_closed_form_planar_tip():
    """A 2-link planar arm with symbolic lengths and a tip frame l2 along the second link: the
    placement and the world-aligned Jacobian simplify to the textbook forms."""
    from symdyn.models import planar_chain
    from symdyn.spatial import Transform

    arm = planar_chain(2, symbolic_params=True)
    q1, q2 = sp.symbols("q1 q2")
    l1 = next(s for s in arm.parameters() if s.name == "l1")   # the model's (positive) symbol
    l2 = sp.Symbol("l2", positive=True)
    tip = Frame(1, Transform(sp.eye(3), sp.Matrix([l2, 0, 0])))
    R, p = frame_placement(arm, sp.Matrix([q1, q2]), tip)
    x = l1 * sp.cos(q1) + l2 * sp.cos(q1 + q2)
    y = l1 * sp.sin(q1) + l2 * sp.sin(q1 + q2)
    assert sp.simplify(p - sp.Matrix([x, y, 0])) == sp.zeros(3, 1)
    c, s_ = sp.cos(q1 + q2), sp.sin(q1 + q2)
    assert sp.simplify(R - sp.Matrix([[c, -s_, 0], [s_, c, 0], [0, 0, 1]])) == sp.zeros(3, 3)
    J = frame_jacobian(arm, sp.Matrix([q1, q2]), tip, "local_world_aligned")
    expect = sp.Matrix([[0, 0], [0, 0], [1, 1], [-y, -l2 * sp.sin(q1 + q2)],
                        [x, l2 * sp.cos(q1 + q2)], [0, 0]])
    assert sp.simplify(J - expect) == sp.zeros(6, 2)


# --- names and errors ------------------------------------------------------------------------------

def test_frame_names_and_errors():
    m = pair("ur5").model
    q = m.random_q(0)
    assert resolve_frame(m, "tool0") is m.frames["tool0"]
    assert resolve_frame(m, m.joint_names[2]).body == 2
    assert resolve_frame(m, 3).body == 3
    world = [n for n, f in m.frames.items() if f.body < 0][0]
    R, p = frame_placement(m, q, world)
    check(R, np.asarray(m.frames[world].X.E).T, "world frame")
    assert np.abs(frame_jacobian(m, q, world, "world")).max() == 0
    with pytest.raises(KeyError, match="no frame or joint named"):
        frame_jacobian(m, q, "no_such_link")
    with pytest.raises(ValueError, match="reference must be one of"):
        frame_jacobian(m, q, "tool0", reference="LOCAL")
    with pytest.raises(ValueError, match="out of range"):
        frame_jacobian(m, q, m.N)
    with pytest.raises(TypeError):
        frame_jacobian(m, q, 1.5)
    with pytest.raises(ValueError, match="side"):
        joint_frames(m, "middle")


# --- random trees: every joint kind (helical, spherical, planar) ---------------------------------

def random_frames(model, seed=0, count=4):
    """Frames with random placements on random bodies (and one on the world)."""
    from symdyn.spatial import Transform

    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        A = rng.normal(size=(3, 3))
        Q, _ = np.linalg.qr(A)
        Q *= np.sign(np.linalg.det(Q))
        body = -1 if k == count - 1 else int(rng.integers(model.N))
        out.append(Frame(body, Transform(Q, rng.uniform(-1, 1, 3))))
    return out


@pytest.mark.parametrize("tree_name", ["serial", "branched", "random", "floating"])
def test_random_trees_match_pinocchio_bridge(tree_name):
    """Random trees with revolute, prismatic, helical, spherical and free-flyer joints through
    symdyn.interop.pinocchio.to_pinocchio, with random frames added as Pinocchio OP_FRAMEs."""
    from conftest import MODELS
    from symdyn.interop import pinocchio as pb

    m = MODELS[tree_name]
    pm = pb.to_pinocchio(m)
    order = pb.pinocchio_order(m)
    frames = random_frames(m, seed=3)
    fids = [pm.addFrame(pin.Frame(f"f{k}", 0 if f.body < 0 else 1 + order.index(f.body),
                                  pin.SE3(np.asarray(f.X.E).T, np.asarray(f.X.r)),
                                  pin.FrameType.OP_FRAME)) for k, f in enumerate(frames)]
    pd = pm.createData()
    q, qd, qdd = state(m, 8)
    qp, vp, ap = pb.q_to_pin(m, q), pb.v_to_pin(m, qd), pb.v_to_pin(m, qdd)
    pin.forwardKinematics(pm, pd, qp, vp, ap)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobians(pm, pd, qp)
    pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
    for fr, fid in zip(frames, fids):
        R, p = frame_placement(m, q, fr)
        check(R, pd.oMf[fid].rotation, "R")
        check(p, pd.oMf[fid].translation, "p")
        for ref, rf in PIN_REF.items():
            pairs = [
                (frame_velocity(m, q, qd, fr, ref), swap(pin.getFrameVelocity(pm, pd, fid, rf).vector)),
                (frame_jacobian(m, q, fr, ref),
                 pb.matrix_from_pin(m, swap(pin.getFrameJacobian(pm, pd, fid, rf)), rows=None)),
                (frame_jacobian_time_variation(m, q, qd, fr, ref),
                 pb.matrix_from_pin(m, swap(pin.getFrameJacobianTimeVariation(pm, pd, fid, rf)),
                                    rows=None)),
                (frame_classical_acceleration(m, q, qd, qdd, fr, ref),
                 swap(pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector))]
            for a, b in pairs:
                if fr.body < 0:
                    assert np.abs(a).max() == 0
                else:
                    check(a, b, f"{tree_name} body {fr.body} {ref}")


def test_planar_joints_rates_by_ad():
    """Planar joints (S depends on q): dJ/dt and the drift against AD."""
    from conftest import MODELS

    m = MODELS["mixed"]
    assert any(j.type == "planar" for j in m.joints)
    q, qd, qdd = state(m, 9)
    for fr in random_frames(m, seed=4)[:3]:
        for ref in REFERENCES:
            J = frame_jacobian(m, q, fr, ref)
            dJ = frame_jacobian_time_variation(m, q, qd, fr, ref)
            check(dJ, _rate_along(m, lambda x: frame_jacobian(m, x, fr, ref), q, qd), f"dJ {ref}")
            check(_rate_along(m, lambda x, v: frame_velocity(m, x, v, fr, ref), q, qd, qdd),
                  J @ qdd + dJ @ qd, f"d/dt v {ref}")


# --- hand-made frames are validated ---------------------------------------------------------------

@pytest.mark.parametrize("E, r, msg", [
    (2 * np.eye(3), np.zeros(3), r"frame 'tip': X.E is not a rotation matrix: max \|E E\^T - I\| = 3"),
    (np.diag([1.0, 1.0, -1.0]), np.zeros(3), r"frame 'tip': X.E is a reflection \(det\(E\) = -1\)"),
    (np.eye(3) + 1e-4, np.zeros(3), "X.E is not a rotation matrix"),
    (np.full((3, 3), np.nan), np.zeros(3), "frame 'tip': X.E contains NaN or inf"),
    (np.eye(3), [0.0, np.inf, 0.0], "frame 'tip': X.r contains NaN or inf"),
    (np.eye(3), [0.0, 1e200, 0.0], "X.r has an entry above symdyn.model.MAX_MAGNITUDE"),
    (np.eye(2), np.zeros(3), r"X.E must have shape \(3, 3\), got \(2, 2\)"),
    (np.eye(3), np.zeros(4), r"X.r must have shape \(3,\)"),
    (np.eye(3), ["a", 0, 0], "X.r must be numbers"),
    (sp.eye(3) * 2, sp.zeros(3, 1), "X.E is not a rotation matrix"),        # numeric SymPy: checked
    (sp.eye(3), sp.Matrix([sp.nan, 0, 0]), "X.r contains NaN or inf"),
])
def test_hand_made_frame_is_validated(E, r, msg):
    from symdyn.spatial import Transform

    with pytest.raises(ValueError, match=msg):
        Frame(1, Transform(E, r), "tip")


def test_hand_made_frame_other_checks():
    from symdyn.model import UnsupportedParameterError
    from symdyn.spatial import Transform

    I3 = np.eye(3)
    with pytest.raises(ValueError, match=r"Frame\(body=True\): body must be a body index"):
        Frame(True, Transform(I3, np.zeros(3)))
    with pytest.raises(ValueError, match="body must be a body index >= 0 or -1"):
        Frame(-2, Transform(I3, np.zeros(3)))
    with pytest.raises(ValueError, match=r"Frame\(body=0\): X must be a Transform\(E, r\)"):
        Frame(0, I3)
    with pytest.raises(UnsupportedParameterError, match="CasADi SX"):
        Frame(0, Transform(ca.SX.eye(3), np.zeros(3)))
    # accepted: rotations to ROTATION_TOL, column vectors, symbolic placements (as a model's Xtree)
    c, s_ = np.cos(0.3), np.sin(0.3)
    Frame(0, Transform(np.array([[c, -s_, 0], [s_, c, 0], [0, 0, 1]]) + 1e-9, np.zeros((3, 1))))
    a, l = sp.symbols("a l")
    Rz = sp.Matrix([[sp.cos(a), -sp.sin(a), 0], [sp.sin(a), sp.cos(a), 0], [0, 0, 1]])
    Frame(0, Transform(Rz, sp.Matrix([l, 0, 0])))
    # equality: body and exact placement entries, whatever the containers; not the name
    assert Frame(0, Transform(I3, np.zeros(3)), "a") == Frame(0, Transform(I3.copy(), [0, 0, 0]), "b")
    assert Frame(0, Transform(I3, np.zeros(3))) != Frame(0, Transform(I3, [0, 0, 1e-12]))
    assert Frame(0, Transform(I3, np.zeros(3))) != Frame(1, Transform(I3, np.zeros(3)))
    assert Frame(0, Transform(sp.eye(3), sp.zeros(3, 1))) == Frame(0, Transform(I3, np.zeros(3)))
    assert Frame(-1, Transform(((1, 0, 0), (0, 1, 0), (0, 0, 1)), (0, 0, 0))).name is None


# --- joint frames as Pinocchio's ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ur5", "talos"])
def test_fixed_joint_frames_match_pinocchio(name):
    """Every Pinocchio frame (BODY: a link, JOINT: a moving joint, FIXED_JOINT: a fixed joint) is a
    symdyn frame of that name, at the same placement; the Jacobians of the fixed-joint frames
    equal Pinocchio's with order="linear_first" and Pinocchio's column order."""
    from symdyn.interop.pinocchio import matrix_to_pin

    P = pair(name)
    m, pm = P.model, P.pm
    pd = pm.createData()
    q, qd, _ = state(m, 6)
    qp = P.q_pin(q)
    pin.framesForwardKinematics(pm, pd, qp)
    pin.computeJointJacobians(pm, pd, qp)
    FT = pin.FrameType
    fixed = {f.name for f in pm.frames if f.type == FT.FIXED_JOINT and f.name != "universe"}
    assert fixed and fixed == set(m.fixed_joints)
    if name == "ur5":
        assert m.fixed_joints["ee_fixed_joint"] == "ee_link"
    for fid, f in enumerate(pm.frames):
        if f.name == "universe" or f.type not in (FT.BODY, FT.JOINT, FT.FIXED_JOINT):
            continue
        R, p = frame_placement(m, q, f.name)
        check(R, pd.oMf[fid].rotation, f"{name} {f.name} R")
        check(p, pd.oMf[fid].translation, f"{name} {f.name} p")
        if f.type == FT.FIXED_JOINT and f.parentJoint > 0:
            for ref, rf in PIN_REF.items():
                J = frame_jacobian(m, q, f.name, ref, order="linear_first")
                check(matrix_to_pin(m, J, rows=None, pin_model=pm),
                      pin.getFrameJacobian(pm, pd, fid, rf), f"{name} {f.name} {ref} J")
    assert set(joint_frames(m)) == set(m.joint_names) | fixed


def test_fixed_joint_names_in_hand_built_models():
    from symdyn.joints import Fixed, Revolute
    from symdyn.model import Body, Model, ModelError
    from symdyn.spatial import Transform

    I3 = np.eye(3)
    X = Transform(I3, np.array([0.0, 0.0, 0.5]))
    bodies = [Body("a", None, Revolute("z"), joint_name="j1"),
              Body("tool", "a", Fixed(), 0.0, X_tree=X, joint_name="weld"),
              Body("marker", "a", Fixed(), 0.0, X_tree=X)]           # no joint name: no joint frame
    m = Model(bodies, allow_massless=True, check_inertias="semidefinite")
    assert dict(m.fixed_joints) == {"weld": "tool"}
    assert resolve_frame(m, "weld") == m.frames["tool"]
    assert resolve_frame(m, "weld").name == "weld" and m.frames["tool"].name == "tool"
    with pytest.raises(TypeError, match="read-only"):
        m.fixed_joints["x"] = "a"
    assert m.replace(name="b").fixed_joints == m.fixed_joints
    with pytest.raises(ModelError, match=r"duplicate joint names \['j1'\]"):
        Model([*bodies[:2], Body("m2", "a", Fixed(), 0.0, joint_name="j1")], allow_massless=True,
              check_inertias="semidefinite")
    with pytest.raises(ModelError, match=r"duplicate joint names \['weld'\]"):
        Model([*bodies[:2], Body("m2", "a", Fixed(), 0.0, joint_name="weld")], allow_massless=True,
              check_inertias="semidefinite")
    with pytest.raises(ModelError, match=r"duplicate joint names \['weld'\]"):
        m.replace(joint_names=["weld"])


# --- a name shared by a link and a joint ---------------------------------------------------------

@pytest.mark.parametrize("robot, name, body_of_joint", [("anymal_c", "LF_HAA", "LF_HIP"),
                                                        ("so100", "gripper", "jaw")])
def test_name_shared_by_link_and_joint_must_be_qualified(robot, name, body_of_joint):
    m = load_robot(robot)
    assert name in m.frames and name in m.joint_names
    q = m.random_q(0)
    with pytest.raises(ValueError, match=rf"frame name '{name}' is ambiguous in model '{robot}': "
                                         rf"it is the link '{name}' .* and the moving joint "
                                         rf"'{name}' .*; write 'link:{name}' or 'joint:{name}'"):
        frame_placement(m, q, name)
    with pytest.raises(ValueError, match="ambiguous"):
        frame_jacobian(m, q, name)
    assert resolve_frame(m, f"link:{name}") is m.frames[name]
    joint = resolve_frame(m, f"joint:{name}")
    assert joint.body == m.names.index(body_of_joint) == m.joint_names.index(name)
    assert resolve_frame(m, m.frames[name]) is m.frames[name]          # a Frame object
    # against Pinocchio's BODY and JOINT frames of that name
    path = str(robot_urdf(robot))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if ROBOTS[robot].floating_base \
        else pin.buildModelFromUrdf(path)
    from symdyn.interop.pinocchio import q_to_pin

    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, q_to_pin(m, q, pin_model=pm))
    for kind, ft in (("link", pin.BODY), ("joint", pin.JOINT)):
        R, p = frame_placement(m, q, f"{kind}:{name}")
        oMf = pd.oMf[pm.getFrameId(name, ft)]
        check(R, oMf.rotation, kind)
        check(p, oMf.translation, kind)
    with pytest.raises(KeyError, match="has no joint named 'nope'"):
        resolve_frame(m, "joint:nope")
    with pytest.raises(KeyError, match="has no frame or joint named 'hinge:x'"):
        resolve_frame(m, "hinge:x")


def test_link_and_joint_that_are_one_frame_need_no_prefix():
    m = load_robot("z1")          # fixed joint 'gripperStator' whose child link is 'gripperStator'
    assert m.fixed_joints["gripperStator"] == "gripperStator"
    assert resolve_frame(m, "gripperStator") is m.frames["gripperStator"]
    assert resolve_frame(m, "joint:gripperStator") == m.frames["gripperStator"]
    # a moving joint named after the body it moves is that body's frame
    chain = serial_chain(2).replace(joint_names=["link1", "j2"])
    assert resolve_frame(chain, "link1").body == 0


# --- row order ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ur5", "solo12"])
def test_order_linear_first_is_pinocchios(name):
    """order="linear_first" gives Pinocchio's rows; with Pinocchio's column order
    (matrix_to_pin) the Jacobian and its rate equal getFrameJacobian(TimeVariation) entry by entry,
    the velocity and classical acceleration getFrame*(...).vector."""
    from symdyn.interop.pinocchio import matrix_to_pin

    P = pair(name)
    m, pm, pd, (q, qd, qdd), (qp, vp, ap) = pinocchio_kinematics(P, 7)
    for fname in P.frames(seed=2)[:3]:
        fid = pm.getFrameId(fname, pin.BODY)
        for ref, rf in PIN_REF.items():
            J = frame_jacobian(m, q, fname, ref, order="linear_first")
            Jp = pin.getFrameJacobian(pm, pd, fid, rf)
            check(matrix_to_pin(m, J, rows=None, pin_model=pm), Jp, f"{fname} {ref} J")
            if np.abs(Jp[:3]).max() > 1e-6 and np.abs(Jp[3:]).max() > 1e-6:  # the default differs
                assert np.abs(matrix_to_pin(m, frame_jacobian(m, q, fname, ref), rows=None,
                                            pin_model=pm) - Jp).max() > 1e-6
            dJ = frame_jacobian_time_variation(m, q, qd, fname, ref, order="linear_first")
            check(matrix_to_pin(m, dJ, rows=None, pin_model=pm),
                  pin.getFrameJacobianTimeVariation(pm, pd, fid, rf), f"{fname} {ref} dJ")
            check(frame_velocity(m, q, qd, fname, ref, order="linear_first"),
                  pin.getFrameVelocity(pm, pd, fid, rf).vector, f"{fname} {ref} v")
            check(frame_classical_acceleration(m, q, qd, qdd, fname, ref, order="linear_first"),
                  pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector, f"{fname} {ref} a")
            check(swap(J), frame_jacobian(m, q, fname, ref), "the default is the swap")
    with pytest.raises(ValueError, match="order must be one of 'angular_first', 'linear_first'"):
        frame_jacobian(m, q, fname, order="pinocchio")
    for fn in (frame_jacobian, frame_velocity, frame_jacobian_time_variation,
               frame_classical_acceleration):
        assert "the reverse of Pinocchio's" in fn.__doc__ and 'order="linear_first"' in fn.__doc__


def test_order_on_symbolic_backends():
    m = serial_chain(3)
    q, qd, _ = state(m, 1)
    expect = swap(frame_jacobian(m, q, 2, "world"))
    got = run("casadi", lambda mo, x: frame_jacobian(mo, x, 2, "world", order="linear_first"), m, q)
    check(np.reshape(got, expect.shape), expect, "casadi linear_first")
