"""Reduced models: ``sd.reduced_model(model, lock=...)`` (Pinocchio's buildReducedModel).

The reduced model's dynamics equal the full model's with the locked coordinates fixed: M of the
free joints is the submatrix of the full M, rnea of the free joints is the full rnea with zero
locked speeds and accelerations, aba solves the reduced system. Checked on builders (every
backend, floating base, spherical and planar joints, symbolic parameters), against
``pinocchio.buildReducedModel`` on the Panda (fingers locked) and Talos (joints locked at nonzero
values), and through ``load_robot(..., lock=)``, spec strings and ``symdyn demo --lock``.
"""
import importlib.util
import warnings

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.cli import main
from symdyn.io.specs import SpecError, from_spec, parse_lock
from symdyn.model import Mimic, ModelError
from symdyn.models import planar_chain, random_tree, serial_chain

HAVE_SYMENGINE = importlib.util.find_spec("symengine") is not None
BACKENDS = ["numpy", "sympy", "casadi"] + (["symengine"] if HAVE_SYMENGINE else [])


def num(x):
    if isinstance(x, ca.SX):
        return np.array(ca.DM(ca.evalf(x)), dtype=float).squeeze()
    if type(x).__module__.split(".")[0] in ("sympy", "symengine"):
        return np.array(x.tolist(), dtype=float).squeeze()
    return np.asarray(x, dtype=float).squeeze()


def inputs(backend, *vectors):
    if backend == "numpy":
        return vectors
    if backend == "casadi":
        return tuple(ca.SX(ca.DM(np.asarray(v, float))) for v in vectors)
    if backend == "sympy":
        return tuple(sp.Matrix([sp.Float(float(x)) for x in v]) for v in vectors)
    import symengine as se

    return tuple(se.Matrix([se.Float(float(x)) for x in v]) for v in vectors)


def full_state(full, reduced, q_r, values):
    """The full configuration: reduced coordinates for kept joints, lock values for locked ones,
    and (q, free v indices)."""
    q = np.zeros(full.nq)
    free_v = []
    for i, jn in enumerate(full.joint_names):
        a, b = full.q_idx[i]
        if jn in reduced.joint_names:
            k = reduced.joint_names.index(jn)
            c, d = reduced.q_idx[k]
            q[a:b] = q_r[c:d]
            free_v += list(range(*full.v_idx[i]))
        else:
            v = values.get(jn)
            q[a:b] = full.joints[i].neutral() if v is None else v
    return q, np.array(free_v)


def check_equal_dynamics(full, lock, seed=0, backend="numpy", tol=1e-11):
    red = sd.reduced_model(full, lock)
    values = lock if isinstance(lock, dict) else {n: None for n in lock}
    for jn, m in full.mimic.items():  # locked masters lock their mimic joints
        if m.master in values and jn not in values:
            v = values[m.master]
            values[jn] = m.multiplier * (0.0 if v is None else v) + m.offset
    rng = np.random.default_rng(seed)
    q_r = red.random_q(rng)
    q, free = full_state(full, red, q_r, values)
    qd, qdd = np.zeros(full.nv), np.zeros(full.nv)
    qd[free], qdd[free] = rng.normal(size=len(free)), rng.normal(size=len(free))
    M = sd.crba(full, q)
    Mr = num(sd.crba(red, *inputs(backend, q_r)))
    np.testing.assert_allclose(Mr, M[np.ix_(free, free)], atol=tol * max(1, np.abs(M).max()))
    tau = sd.rnea(full, q, qd, qdd)
    tau_r = num(sd.rnea(red, *inputs(backend, q_r, qd[free], qdd[free])))
    np.testing.assert_allclose(tau_r, tau[free], atol=tol * max(1, np.abs(tau).max()))
    qdd_r = num(sd.aba(red, *inputs(backend, q_r, qd[free], tau[free])))
    np.testing.assert_allclose(qdd_r, qdd[free], atol=1e3 * tol)
    return red, q, q_r


# --- builders, every backend ---------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_serial_lock_middle_and_root(backend):
    full = serial_chain(6, seed=1).replace(armature=np.linspace(0.1, 0.6, 6))
    red, _, _ = check_equal_dynamics(full, {"link3_joint": 0.7, "link5_joint": -1.2}, backend=backend)
    assert red.joint_names == ("link1_joint", "link2_joint", "link4_joint", "link6_joint")
    assert red.nv == 4 and red.parents == (-1, 0, 1, 2)
    np.testing.assert_array_equal(red.armature, [0.1, 0.2, 0.4, 0.6])
    # locking the root joint: its body becomes a world frame and its children roots
    red2, _, _ = check_equal_dynamics(full, ["link1_joint"], backend=backend)
    assert red2.parents[0] == -1 and red2.frames["link1"].body == -1


@pytest.mark.parametrize("backend", BACKENDS)
def test_floating_tree_with_spherical_and_planar_joints(backend):
    full = random_tree(8, seed=5, joint_kinds=("revolute", "spherical", "planar", "prismatic"),
                       floating_base=True)
    rng = np.random.default_rng(3)
    kinds = {j.type: n for n, j in zip(full.joint_names, full.joints) if j.type != "floating"}
    lock = {}
    if "spherical" in kinds:
        quat = rng.normal(size=4)
        lock[kinds["spherical"]] = quat / np.linalg.norm(quat)
    if "planar" in kinds:
        lock[kinds["planar"]] = [0.3, -0.2, 1.1]
    rev = [n for n, j in zip(full.joint_names, full.joints) if j.type in ("revolute", "prismatic")]
    lock[rev[-1]] = 0.4
    assert len(lock) >= 2
    red, _, _ = check_equal_dynamics(full, lock, backend=backend, seed=1)
    assert red.is_floating and red.nv == full.nv - sum(
        full.joints[full.joint_names.index(n)].nv for n in lock)


def test_lock_defaults_to_neutral_and_chains_of_locked_bodies():
    full = random_tree(7, seed=2, joint_kinds=("revolute", "spherical"))
    # lock a whole branch (parent and child locked: compositions of locked transforms)
    sub = full.subtree[1]
    names = [full.joint_names[i] for i in sub]
    if len(names) == full.N:
        names = names[1:]
    check_equal_dynamics(full, names, seed=4)


def test_symbolic_model_reduces_exactly():
    arm = planar_chain(3, symbolic_params=True)
    red = sd.reduced_model(arm, {"link2_joint": sp.Rational(1, 3)})
    assert red.is_symbolic and red.nv == 2
    q1, q3 = sp.symbols("q1 q3")
    M = sd.crba(arm, sp.Matrix([q1, sp.Rational(1, 3), q3]))
    Mr = sd.crba(red, sp.Matrix([q1, q3]))
    for (i, j), (a, b) in {(0, 0): (0, 0), (0, 1): (0, 2), (1, 1): (2, 2)}.items():
        assert sp.simplify(Mr[i, j] - M[a, b]) == 0
    vals = {s: 0.5 + 0.1 * k for k, s in enumerate(arm.parameters())}
    np.testing.assert_allclose(sd.crba(red.subs(vals), [0.2, 0.4]),
                               sd.crba(arm.subs(vals), [0.2, 1 / 3, 0.4])[np.ix_([0, 2], [0, 2])],
                               atol=1e-13)


# --- what is kept --------------------------------------------------------------------------------

def test_frames_of_locked_links_are_kept():
    full = sd.load_robot("panda")
    lock = {"panda_joint7": 0.5, "panda_finger_joint1": 0.02}
    red = sd.reduced_model(full, lock)
    assert set(red.frames) == set(full.frames)
    assert red.frames["panda_link7"].body == red.joint_names.index("panda_joint6")
    q_r = red.random_q(0)
    q, _ = full_state(full, red, q_r, dict(lock, panda_finger_joint2=0.02))
    for f in ("panda_hand", "panda_leftfinger", "panda_rightfinger", "panda_link7", "panda_link3"):
        R1, p1 = sd.frame_placement(full, q, f)
        R2, p2 = sd.frame_placement(red, q_r, f)
        np.testing.assert_allclose(R2, R1, atol=1e-13)
        np.testing.assert_allclose(p2, p1, atol=1e-13)


def test_actuation_and_mimic_kept_or_coupled():
    full = sd.load_robot("panda", armature=0.1)
    red = sd.reduced_model(full, ["panda_joint2"])
    assert red.mimic == full.mimic
    keep = [i for i, n in enumerate(full.joint_names) if n != "panda_joint2"]
    for a, b in zip(red.limits, full.limits):
        np.testing.assert_array_equal(a, b[keep])
    np.testing.assert_array_equal(red.damping, full.damping[keep])
    np.testing.assert_array_equal(red.armature, full.armature[keep])
    # locking a master locks its mimic joints at multiplier * value + offset
    m = serial_chain(4, seed=0).replace(mimic={"link4_joint": Mimic("link2_joint", -2.0, 0.1)})
    r = sd.reduced_model(m, {"link2_joint": 0.3})
    assert r.joint_names == ("link1_joint", "link3_joint") and r.mimic == {}
    check_equal_dynamics(m, {"link2_joint": 0.3, "link4_joint": -0.5})
    q_r = r.random_q(1)
    q = np.array([q_r[0], 0.3, q_r[1], -0.5])
    np.testing.assert_allclose(sd.crba(r, q_r), sd.crba(m, q)[np.ix_([0, 2], [0, 2])], atol=1e-12)
    # a locked mimic joint leaves model.mimic; the master stays free
    r2 = sd.reduced_model(m, ["link4_joint"])
    assert r2.mimic == {} and "link2_joint" in r2.joint_names


def test_model_is_unchanged_and_empty_lock_is_identity():
    m = serial_chain(3)
    assert sd.reduced_model(m, []) is m and sd.reduced_model(m, {}) is m
    r = sd.reduced_model(m, "link2_joint")                  # one name
    assert r.nv == 2 and m.nv == 3 and r.name == m.name
    assert sd.reduced_model(m, ["link2_joint"], name="x").name == "x"


@pytest.mark.parametrize("lock, msg", [
    (["nope"], r"cannot lock 'nope': not a joint of model 'serial3' \(joints: link1_joint"),
    ({"link1_joint": [1.0, 2.0]}, r"lock value of joint 'link1_joint' \(Revolute\('z'\)\) must have 1 entry"),
    ({"link1_joint": np.nan}, "contains NaN or inf"),
    ({"link1_joint": "a"}, "must be numbers"),
    (42, "lock must be joint names or a dict"),
])
def test_lock_errors(lock, msg):
    with pytest.raises(ModelError, match=msg):
        sd.reduced_model(serial_chain(3), lock)


def test_locking_every_joint_gives_a_model_with_nv_0():
    """Every joint locked (Pinocchio's buildReducedModel allows it): nq = nv = 0, every body a
    frame on the world where the full model puts it, the locked joints fixed joints, and the
    dynamics empty on every backend."""
    full = random_tree(5, seed=3, joint_kinds=("revolute", "prismatic", "spherical"))
    rng = np.random.default_rng(1)
    q = full.random_q(rng)
    lock = {}
    for i, jn in enumerate(full.joint_names):
        a, b = full.q_idx[i]
        lock[jn] = q[a:b].tolist() if b - a > 1 else float(q[a])
    red = sd.reduced_model(full, lock)
    assert (red.N, red.nq, red.nv) == (0, 0, 0) and red.joint_names == ()
    assert set(red.fixed_joints) == set(full.joint_names)
    assert all(fr.body == -1 for fr in red.frames.values())
    assert red.limits.lower.shape == (0,) and red.armature.shape == (0,)
    for name in [*full.names, *full.joint_names]:
        for a, b in zip(sd.frame_placement(red, [], name), sd.frame_placement(full, q, name)):
            np.testing.assert_allclose(a, b, atol=1e-13, err_msg=name)
    for backend in BACKENDS:
        e = inputs(backend, np.zeros(0))[0]
        assert tuple(sd.crba(red, e).shape) == (0, 0), backend
        assert tuple(sd.rnea(red, e, e, e).shape)[0] == 0, backend
        R, p = sd.frame_placement(red, e, full.names[-1])
        np.testing.assert_allclose(num(p), sd.frame_placement(full, q, full.names[-1])[1],
                                   atol=1e-12)
    # step by step: locking the last moving joint of a reduced model
    one = sd.reduced_model(full, full.joint_names[1:])
    assert one.nv == full.joints[0].nv and sd.reduced_model(one, full.joint_names[0]).nv == 0
    # the symbolic path: a model of symbols locked entirely keeps its frames exact
    arm = planar_chain(2, symbolic_params=True)
    at = [sp.Rational(1, 3), sp.Rational(-1, 2)]
    sym = sd.reduced_model(arm, dict(zip(arm.joint_names, at)))
    assert sym.nv == 0 and sym.is_symbolic
    for a, b in zip(sd.frame_placement(sym, sp.Matrix([]), arm.names[-1]),
                    sd.frame_placement(arm, sp.Matrix(at), arm.names[-1])):
        assert sp.simplify(sp.Matrix(a) - sp.Matrix(b)) == sp.zeros(*sp.Matrix(a).shape)


@pytest.mark.parametrize("name, lock", [
    ("ur5", {"shoulder_pan_joint": 0.3, "shoulder_lift_joint": -0.7, "elbow_joint": 1.2,
             "wrist_1_joint": -0.4, "wrist_2_joint": 1.1, "wrist_3_joint": 0.5}),
    ("panda", {**{f"panda_joint{k}": v for k, v in
                  zip(range(1, 8), (0.2, -0.5, 0.3, -2.0, 0.4, 1.5, -0.6))},
               "panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}),
])
def test_locking_every_joint_matches_pinocchio(name, lock):
    """nv = 0 like buildReducedModel, and every Pinocchio frame (BODY, JOINT, FIXED_JOINT) at the
    same placement, the locked joints FIXED_JOINT frames."""
    pin, red, pm, (P, q_pin) = pin_reduced_pair(name, lock)
    assert (red.nq, red.nv) == (pm.nq, pm.nv) == (0, 0) and len(P) == 0
    q = red.neutral()
    check_frames_against_pinocchio(pin, red, pm, pm.createData(), q, q_pin(q))
    assert set(lock) <= set(red.fixed_joints)
    assert sd.crba(red, q).shape == (0, 0) and sd.aba(red, q, q, q).shape == (0,)


def test_lock_quaternion_must_be_unit():
    m = random_tree(4, seed=0, joint_kinds=("spherical",))
    with pytest.raises(ModelError, match="quaternion .* must have norm 1"):
        sd.reduced_model(m, {m.joint_names[1]: [0, 0, 0, 2.0]})


# --- Pinocchio's buildReducedModel ---------------------------------------------------------------

def pin_reduced_pair(name, lock):
    pin = pytest.importorskip("pinocchio")
    from test_actuation import pin_maps

    full = sd.load_robot(name, snap=0)  # the file's values, as Pinocchio reads them
    fb = sd.io.robots.ROBOTS[name].floating_base
    path = str(sd.robot_urdf(name))
    pf = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(path)
    _, q_pin_full = pin_maps(full, pf)
    q_lock = full.neutral()
    for jn, v in lock.items():
        a, b = full.q_idx[full.joint_names.index(jn)]
        q_lock[a:b] = v
    pm = pin.buildReducedModel(pf, [pf.getJointId(jn) for jn in lock], q_pin_full(q_lock))
    red = sd.load_robot(name, lock=lock, snap=0)
    return pin, red, pm, pin_maps(red, pm)


@pytest.mark.parametrize("name, lock", [
    ("panda", {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}),
    ("panda", {"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.03, "panda_joint4": -1.2}),
    ("talos", {"arm_left_4_joint": -0.3, "leg_right_3_joint": -0.4, "torso_1_joint": 0.2,
               "head_2_joint": 0.1, "arm_right_7_joint": -0.25}),
])
def test_against_pinocchio_build_reduced_model(name, lock):
    pin, red, pm, (P, q_pin) = pin_reduced_pair(name, lock)
    assert red.nv == pm.nv
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(2):
        q, v, a = red.random_q(rng), rng.normal(size=red.nv), rng.normal(size=red.nv)
        qp = q_pin(q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert np.abs(sd.crba(red, q)[np.ix_(P, P)] - Mp).max() <= 1e-12 * np.abs(Mp).max()
        tp = pin.rnea(pm, pd, qp, v[P], a[P])
        assert np.abs(sd.rnea(red, q, v, a)[P] - tp).max() <= 1e-12 * np.abs(tp).max()
        ap = pin.aba(pm, pd, qp, v[P], a[P])
        assert np.abs(sd.aba(red, q, v, a)[P] - ap).max() <= 1e-12 * np.abs(ap).max()
        check_frames_against_pinocchio(pin, red, pm, pd, q, qp)


def check_frames_against_pinocchio(pin, model, pm, pd, q, qp):
    """Every Pinocchio frame (but ``universe``) is a symdyn frame of the same name and kind at the
    same placement: BODY frames are links, JOINT frames moving joints, FIXED_JOINT frames fixed or
    locked joints (``model.fixed_joints``)."""
    FT = pin.FrameType
    pin.framesForwardKinematics(pm, pd, qp)
    kinds = {FT.BODY: "link", FT.JOINT: "joint", FT.FIXED_JOINT: "joint"}
    names: dict = {FT.BODY: set(), FT.JOINT: set(), FT.FIXED_JOINT: set()}
    for fid, f in enumerate(pm.frames):
        if f.name == "universe" or f.type not in kinds:
            continue
        names[f.type].add(f.name)
        R, p = sd.frame_placement(model, q, f"{kinds[f.type]}:{f.name}")
        scale = max(1.0, float(np.abs(pd.oMf[fid].translation).max()))
        assert np.abs(R - pd.oMf[fid].rotation).max() <= 1e-12, f.name
        assert np.abs(p - pd.oMf[fid].translation).max() <= 1e-12 * scale, f.name
    assert names[FT.BODY] == set(model.frames)
    assert names[FT.JOINT] == set(model.joint_names)
    assert names[FT.FIXED_JOINT] == set(model.fixed_joints)


# --- load_robot, specs, CLI ----------------------------------------------------------------------

FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]


def test_panda_arm_without_fingers_is_one_call():
    arm = sd.load_robot("panda", lock=FINGERS)
    assert arm.nv == 7 and arm.mimic == {} and "panda_hand" in arm.frames
    spec = from_spec("robot:panda:lock=" + ",".join(FINGERS))
    q = arm.random_q(0)
    np.testing.assert_array_equal(sd.crba(spec, q), sd.crba(arm, q))
    # locking finger 1 alone locks its mimic finger 2 too
    assert sd.load_robot("panda", lock=["panda_finger_joint1"]).nv == 7


def test_spec_lock_syntax_and_errors():
    assert parse_lock("a,b=0.5, c = -1") == {"a": None, "b": 0.5, "c": -1.0}
    m = from_spec("serial:4:seed=2:lock=link2_joint=0.5")
    assert m.joint_names == ("link1_joint", "link3_joint", "link4_joint")
    assert from_spec("serial:4", lock="link4_joint").nv == 3
    for bad, msg in (("a,,b", "empty joint name"), ("a=x", "must be a number"), ("a,a", "locked twice"),
                     ("a=nan", "must be finite"), ("", "expected NAME")):
        with pytest.raises(SpecError, match=msg):
            parse_lock(bad)
    with pytest.raises(SpecError, match="locked both in the spec and by"):
        from_spec("serial:3:lock=link1_joint", lock="link1_joint")
    with pytest.raises(ModelError, match="cannot lock 'x'"):
        from_spec("serial:3:lock=x")


def test_cli_lock_option(capsys):
    rc = main(["demo", "--model", "robot:panda", "--lock", ",".join(FINGERS), "--repeat", "1",
               "--backends", "numpy"])
    out = capsys.readouterr().out
    assert rc == 0 and "nq=7, nv=7" in out
    rc = main(["demo", "--model", "serial:3", "--lock", "nope", "--backends", "numpy"])
    err = capsys.readouterr().err
    assert rc == 2 and "symdyn demo: error: cannot lock 'nope'" in err


# --- locked joints as frames, lock values outside the limits ---------------------------------------

def test_locked_joints_become_frames():
    full = sd.load_robot("ur5")
    lock = {"shoulder_lift_joint": -0.7, "wrist_2_joint": 1.1}
    red = sd.reduced_model(full, lock)
    assert set(red.fixed_joints) == set(full.fixed_joints) | set(lock)
    assert red.fixed_joints["shoulder_lift_joint"] == "upper_arm_link"
    assert "shoulder_lift_joint" not in full.fixed_joints  # the full model is unchanged
    q_r = red.random_q(3)
    q, _ = full_state(full, red, q_r, lock)
    for jn in lock:  # the joint's (child side) frame, where the joint name pointed before locking
        for a, b in zip(sd.frame_placement(red, q_r, jn), sd.frame_placement(full, q, jn)):
            np.testing.assert_allclose(a, b, atol=1e-13)
    assert sd.joint_frames(red)["wrist_2_joint"] == red.frames["wrist_2_link"]
    assert "wrist_2_joint" not in sd.joint_frames(red, "parent")


@pytest.mark.parametrize("name, lock", [
    ("ur5", {"shoulder_lift_joint": -0.7, "wrist_2_joint": 1.1}),
    ("solo12", {"FL_KFE": -1.0, "HR_HFE": 0.4}),
])
def test_locked_joint_frames_match_pinocchio(name, lock):
    pin, red, pm, (P, q_pin) = pin_reduced_pair(name, lock)
    q = red.random_q(5)
    check_frames_against_pinocchio(pin, red, pm, pm.createData(), q, q_pin(q))


def test_lock_outside_limits_warns():
    panda = sd.load_robot("panda")
    lo, up = panda.limits.lower[3], panda.limits.upper[3]   # panda_joint4: [-3.0718, -0.0698]
    with pytest.warns(UserWarning, match=rf"locking outside the joint limits: joint 'panda_joint4' = "
                                         rf"0.5 is outside its limits \[{lo:g}, {up:g}\]") as rec:
        red = sd.reduced_model(panda, {"panda_joint4": 0.5})
    assert red.nv == panda.nv - 1 and len(rec) == 1
    assert rec[0].filename == __file__                    # points at the caller
    # a mimic joint locked through its master is named with the relation
    with pytest.warns(UserWarning, match=r"'panda_finger_joint1' = 0.05 is outside its limits "
                                         r"\[0, 0.04\]; joint 'panda_finger_joint2' = 0.05 \(from "
                                         r"its mimic relation to 'panda_finger_joint1'\)"):
        sd.reduced_model(panda, {"panda_finger_joint1": 0.05})
    # the neutral value, when outside, is named as such
    with pytest.warns(UserWarning, match=r"'panda_joint4' = 0 \(its neutral value\) is outside"):
        sd.reduced_model(panda, ["panda_joint4"])
    with pytest.warns(UserWarning, match="outside the joint limits"):
        sd.load_robot("panda", lock={"panda_joint1": 3.5})
    with warnings.catch_warnings():                       # inside the limits: no warning
        warnings.simplefilter("error")
        sd.reduced_model(panda, {"panda_joint4": -1.0, "panda_finger_joint1": 0.04})
        sd.reduced_model(serial_chain(3), {"link1_joint": 100.0})   # no limits
