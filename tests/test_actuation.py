"""Actuation data on the Model: limits, armature, damping/friction (friction_torque), mimic joints.

Armature is part of the model and every algorithm includes it (crba, rnea, aba, coriolis_matrix's
M, aba_derivatives' Minv); it is checked by identities on every backend and against Pinocchio's
``model.armature``. Mimic joints are loaded as independent joints with the relation recorded in
``model.mimic``; the coupled dynamics (``mimic_crba``/``mimic_rnea``/``mimic_aba``) is checked
against Pinocchio 4's ``buildModelFromUrdf(..., mimic=True)``.
"""
import importlib.util
import math

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.backends import get_backend
from symdyn.model import Limits, Mimic, ModelError
from symdyn.models import random_tree, serial_chain
from symdyn.reduce import expand_mimic, mimic_independent, mimic_matrix, reduce_mimic
from symdyn.io.urdf import URDFError, load_urdf

HAVE_SYMENGINE = importlib.util.find_spec("symengine") is not None
BACKENDS = ["numpy", "sympy", "casadi"] + (["symengine"] if HAVE_SYMENGINE else [])


def num(x):
    if isinstance(x, (ca.SX, ca.DM)):
        return np.array(ca.DM(ca.evalf(x)) if isinstance(x, ca.SX) else x, dtype=float).squeeze()
    if type(x).__module__.split(".")[0] in ("sympy", "symengine"):
        return np.array(np.array(x.tolist(), dtype=float)).squeeze()
    return np.asarray(x, dtype=float).squeeze()


def inputs(backend, *vectors):
    """The numeric vectors as constants of the backend (so that its code path runs)."""
    if backend == "numpy":
        return vectors
    if backend == "casadi":
        return tuple(ca.SX(ca.DM(np.asarray(v, float))) for v in vectors)
    if backend == "sympy":
        return tuple(sp.Matrix([sp.Float(float(x)) for x in v]) for v in vectors)
    import symengine as se

    return tuple(se.Matrix([se.Float(float(x)) for x in v]) for v in vectors)


URDF = """
<robot name="act">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link>
  <link name="b"><inertial><mass value="2"/><origin xyz="0 0.1 0"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>
  <link name="c"><inertial><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="d"><inertial><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="e"><inertial><mass value="0.3"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="2.0" velocity="3" effort="40"/>
    <dynamics damping="0.7" friction="0.2"/></joint>
  <joint name="j2" type="continuous"><parent link="a"/><child link="b"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10"/><dynamics friction="0.5"/></joint>
  <joint name="j3" type="prismatic"><parent link="b"/><child link="c"/>
    <origin xyz="0 0.2 0"/><axis xyz="1 0 0"/><limit upper="0.04" velocity="0.2"/></joint>
  <joint name="j4" type="prismatic"><parent link="b"/><child link="d"/>
    <origin xyz="0 -0.2 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.04"/>
    <mimic joint="j3" multiplier="-2" offset="0.01"/></joint>
  <joint name="j5" type="revolute"><parent link="d"/><child link="e"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><mimic joint="j4" multiplier="3"/></joint>
</robot>
"""


# --- URDF actuation data -------------------------------------------------------------------------

def test_urdf_limits_dynamics_and_defaults():
    m = load_urdf(URDF)
    assert m.joint_names == ("j1", "j2", "j3", "j4", "j5")
    lim = m.limits
    assert isinstance(lim, Limits)
    inf = math.inf
    # j2 continuous; j3 gives no lower: the URDF default 0; j5 has no <limit>: unlimited
    np.testing.assert_array_equal(lim.lower, [-1.5, -inf, 0.0, 0.0, -inf])
    np.testing.assert_array_equal(lim.upper, [2.0, inf, 0.04, 0.04, inf])
    np.testing.assert_array_equal(lim.velocity, [3, inf, 0.2, inf, inf])
    np.testing.assert_array_equal(lim.effort, [40, 10, inf, inf, inf])
    np.testing.assert_array_equal(m.damping, [0.7, 0, 0, 0, 0])
    np.testing.assert_array_equal(m.friction, [0.2, 0.5, 0, 0, 0])
    np.testing.assert_array_equal(m.armature, np.zeros(5))
    for arr in (*lim, m.damping, m.friction, m.armature):
        assert not arr.flags.writeable


def test_floating_base_is_unlimited_and_armature_argument_forms():
    m = load_urdf(URDF, floating_base=True, armature={"j1": 0.5, "j3": 0.1})
    assert m.nq == 12 and m.nv == 11
    assert np.all(np.isinf(m.limits.lower[:7])) and np.all(np.isinf(m.limits.effort[:6]))
    np.testing.assert_array_equal(m.armature, [0] * 6 + [0.5, 0, 0.1, 0, 0])
    assert np.all(load_urdf(URDF, armature=0.25).armature == 0.25)
    np.testing.assert_array_equal(load_urdf(URDF, armature=[1, 2, 3, 4, 5]).armature, [1, 2, 3, 4, 5])


@pytest.mark.parametrize("kw, msg", [
    (dict(armature={"nope": 1.0}), "armature: 'nope' is not a joint"),
    (dict(armature=[1, 2]), "armature must have 5 entries"),
    (dict(armature=-1.0), "armature must be >= 0"),
    (dict(mimic="couple"), "mimic must be one of"),
    (dict(lock=["nope"]), "cannot lock 'nope'"),
])
def test_urdf_argument_errors(kw, msg):
    with pytest.raises((URDFError, ValueError), match=msg):
        load_urdf(URDF, **kw)


@pytest.mark.parametrize("old, new, msg", [
    ('velocity="3"', 'velocity="-3"', r"joint 'j1' \(line \d+\): <limit velocity='-3'>: must be >= 0"),
    ('lower="-1.5" upper="2.0"', 'lower="2.5" upper="2.0"', r"joint 'j1'.*lower > upper"),
    ('damping="0.7"', 'damping="abc"', r"joint 'j1'.*<dynamics damping='abc'>: expected 1 numbers"),
    ('friction="0.2"', 'friction="-0.2"', r"joint 'j1'.*must be >= 0"),
    ('<mimic joint="j3"', '<mimic joint="jx"', r"joint 'j4' \(line \d+\): <mimic joint='jx'>: no such"),
    ('<mimic joint="j4"', '<mimic joint="j5"', "mimic joints form a cycle"),
])
def test_urdf_actuation_errors_name_element_and_line(old, new, msg):
    assert old in URDF
    with pytest.raises(URDFError, match=msg):
        load_urdf(URDF.replace(old, new, 1))


def test_mimic_recorded_with_chains_resolved_and_error_mode():
    m = load_urdf(URDF)
    assert m.mimic == {"j4": Mimic("j3", -2.0, 0.01), "j5": Mimic("j3", -6.0, 0.03)}
    with pytest.raises(TypeError, match="read-only"):
        m.mimic["j1"] = Mimic("j2")
    with pytest.raises(URDFError, match=r"joint 'j4' \(line \d+\): <mimic joint='j3'>: mimic joints "
                                        r"are refused \(mimic='error'\)"):
        load_urdf(URDF, mimic="error")


def test_panda_limits_and_dynamics_equal_pinocchio():
    pin = pytest.importorskip("pinocchio")
    m = sd.load_robot("panda")
    pm = pin.buildModelFromUrdf(str(sd.robot_urdf("panda")))
    for i, jn in enumerate(m.joint_names):
        jid = pm.getJointId(jn)
        (a, _), k = m.q_idx[i], pm.idx_qs[jid]
        assert m.limits.lower[a] == pm.lowerPositionLimit[k]
        assert m.limits.upper[a] == pm.upperPositionLimit[k]
        kv = pm.idx_vs[jid]
        assert m.limits.velocity[a] == pm.velocityLimit[kv]
        assert m.limits.effort[a] == pm.effortLimit[kv]
        assert m.damping[a] == pm.damping[kv] and m.friction[a] == pm.friction[kv]
    assert m.damping[0] == 0.003 and m.mimic == {"panda_finger_joint2": Mimic("panda_finger_joint1")}


# --- replace / subs --------------------------------------------------------------------------------

def test_replace_forms_keep_and_reset():
    m = serial_chain(3, seed=1)
    assert m.limits.lower.shape == (3,) and np.all(np.isinf(m.limits.upper))
    a = m.replace(armature=0.2, damping={"link2_joint": 0.5}, friction=[0.1, 0.2, 0.3],
                  limits={"effort": [1, 2, 3]})
    np.testing.assert_array_equal(a.armature, [0.2] * 3)
    np.testing.assert_array_equal(a.damping, [0, 0.5, 0])
    np.testing.assert_array_equal(a.limits.effort, [1, 2, 3])
    b = a.replace(name="other", armature={"link3_joint": 1.0},
                  limits={"link1_joint": (-1.0, 1.0, 2.0, 5.0)})
    np.testing.assert_array_equal(b.armature, [0.2, 0.2, 1.0])      # unnamed joints keep theirs
    np.testing.assert_array_equal(b.damping, a.damping)             # untouched fields kept
    assert b.limits.lower[0] == -1 and b.limits.effort.tolist() == [5, 2, 3]
    # a joint whose sizes change gets defaults, the others keep their data
    c = a.replace(joints=[m.joints[0], sd.Spherical(), m.joints[2]])
    np.testing.assert_array_equal(c.armature, [0.2, 0, 0, 0, 0.2])
    np.testing.assert_array_equal(c.limits.effort, [1, np.inf, np.inf, np.inf, 3])
    assert c.limits.lower.shape == (6,)
    # values given with new joints are in the new layout; dicts complete the remapped data
    J = [m.joints[0], sd.Spherical(), m.joints[2]]
    np.testing.assert_array_equal(a.replace(joints=J, armature=[1, 2, 3, 4, 5]).armature, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(a.replace(joints=J, armature={"link2_joint": [1, 2, 3]}).armature,
                                  [0.2, 1, 2, 3, 0.2])
    lim = a.replace(joints=J, limits={"link2_joint": (-1, 1, [4, 5, 6], 7)}).limits
    np.testing.assert_array_equal(lim.lower, [-np.inf, -1, -1, -1, -1, -np.inf])
    np.testing.assert_array_equal(lim.effort, [1, 7, 7, 7, 3])
    # renaming joints renames the mimic relations
    d = m.replace(mimic={"link3_joint": ("link2_joint", 2.0, 0.0)})
    e = d.replace(joint_names=["a", "b", "c"])
    assert e.mimic == {"c": Mimic("b", 2.0, 0.0)}


@pytest.mark.parametrize("kw, msg", [
    (dict(armature=[1.0, np.nan, 0]), "armature contains NaN"),
    (dict(damping={"x": 1}), "damping: 'x' is not a joint"),
    (dict(limits={"lower": [0, 0, 0], "upper": [1, -1, 1]}), "limits of joint 'link2_joint': lower 0.0 > upper -1.0"),
    (dict(limits={"velocity": [-1, 0, 0]}), "limits.velocity must be >= 0"),
    (dict(limits=(1, 2)), "limits must be a symdyn.model.Limits"),
    (dict(mimic={"link1_joint": "nope"}), "its master 'nope' is not a joint"),
    (dict(mimic={"link1_joint": "link1_joint"}), "mimics itself"),
    (dict(mimic={"link2_joint": "link1_joint", "link3_joint": "link2_joint"}), "is itself a mimic joint"),
])
def test_replace_errors(kw, msg):
    with pytest.raises(ModelError, match=msg):
        serial_chain(3).replace(**kw)


def test_mimic_needs_one_coordinate_joints():
    m = random_tree(4, seed=0, joint_kinds=("spherical", "revolute"))
    sph = next(n for n, j in zip(m.joint_names, m.joints) if j.nv == 3)
    rev = next(n for n, j in zip(m.joint_names, m.joints) if j.nv == 1)
    with pytest.raises(ModelError, match="must have one coordinate"):
        m.replace(mimic={rev: (sph, 1.0, 0.0)})


def test_subs_keeps_actuation():
    from symdyn.models import planar_chain

    arm = planar_chain(2, symbolic_params=True).replace(armature=[0.1, 0.2], friction=0.3)
    vals = {s: 1.0 + 0.1 * k for k, s in enumerate(arm.parameters())}
    n = arm.subs(vals)
    np.testing.assert_array_equal(n.armature, [0.1, 0.2])
    np.testing.assert_array_equal(n.friction, [0.3, 0.3])


# --- armature in the algorithms ------------------------------------------------------------------

ARM_MODELS = {
    "serial": lambda: serial_chain(5, seed=2),
    "floating_spherical": lambda: random_tree(6, seed=3, joint_kinds=("revolute", "spherical"),
                                              floating_base=True),
    "planar": lambda: serial_chain(3, joint=("planar", "revolute"), seed=4),
}


@pytest.fixture(params=list(ARM_MODELS))
def armed(request):
    m0 = ARM_MODELS[request.param]()
    rng = np.random.default_rng(7)
    return m0, m0.replace(armature=rng.uniform(0.1, 1.0, m0.nv))


@pytest.mark.parametrize("backend", BACKENDS)
def test_armature_in_crba_rnea_aba_on_every_backend(armed, backend):
    m0, m = armed
    rng = np.random.default_rng(1)
    q, qd, qdd = m.random_q(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    M0 = sd.crba(m0, q)
    M = num(sd.crba(m, *inputs(backend, q)))
    np.testing.assert_allclose(M, M0 + np.diag(m.armature), atol=1e-12)
    tau = num(sd.rnea(m, *inputs(backend, q, qd, qdd)))
    np.testing.assert_allclose(tau, sd.rnea(m0, q, qd, qdd) + m.armature * qdd, atol=1e-11)
    np.testing.assert_allclose(tau, M @ qdd + sd.nonlinear_effects(m0, q, qd), atol=1e-11)
    qdd2 = num(sd.aba(m, *inputs(backend, q, qd, tau)))
    np.testing.assert_allclose(qdd2, qdd, atol=1e-10)                 # aba(rnea(qdd)) == qdd
    Mc, Mdot, C = (num(x) for x in sd.coriolis_matrix(m, *inputs(backend, q, qd)))
    np.testing.assert_allclose(Mc, M, atol=1e-12)
    np.testing.assert_allclose(C, sd.coriolis_matrix(m0, q, qd)[2], atol=1e-12)  # C unchanged
    np.testing.assert_allclose(Mdot, C + C.T, atol=1e-11)


def test_armature_in_aba_derivatives_and_switch_off(armed):
    m0, m = armed
    rng = np.random.default_rng(2)
    q, qd, tau = m.random_q(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    for method in ("dmm", "aza"):
        dq, dv, Minv = sd.aba_derivatives(m, q, qd, tau, method=method)
        np.testing.assert_allclose(Minv, np.linalg.inv(sd.crba(m, q)), atol=1e-10)
        qdd = sd.aba(m, q, qd, tau)
        dtq, dtv = sd.rnea_derivatives(m, q, qd, qdd)                # armature * qdd: no q, qd terms
        np.testing.assert_allclose(dv, -Minv @ dtv, atol=1e-9)
        np.testing.assert_allclose(dq, -Minv @ dtq, atol=1e-9)
    # against central differences of aba in the tangent space (q (+) e)
    h, fd = 1e-6, np.zeros((m.nv, m.nv))
    for k in range(m.nv):
        e = np.zeros(m.nv)
        e[k] = h
        fd[:, k] = (sd.aba(m, sd.integrate(m, q, e), qd, tau) - sd.aba(m, sd.integrate(m, q, -e), qd, tau)) / (2 * h)
    np.testing.assert_allclose(sd.aba_derivatives(m, q, qd, tau)[0], fd, atol=1e-6)
    off = m.replace(armature=0)
    q = m.random_q(3)
    np.testing.assert_array_equal(sd.crba(off, q), sd.crba(m0, q))
    # no armature: nothing is added to the graphs (identical CasADi expressions)
    qs = ca.SX.sym("q", m.nq)
    assert str(sd.crba(off, qs)) == str(sd.crba(m0, qs))


def test_armature_against_pinocchio():
    pin = pytest.importorskip("pinocchio")
    for name, fb in (("panda", False), ("talos", True), ("solo12", True)):
        m = sd.load_robot(name)
        rng = np.random.default_rng(0)
        m = m.replace(armature=rng.uniform(0.01, 1.0, m.nv))
        path = str(sd.robot_urdf(name))
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(path)
        P, q_pin = pin_maps(m, pm)
        pm.armature = m.armature[P]
        pd = pm.createData()
        q, v, a = m.random_q(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        qp = q_pin(q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = sd.crba(m, q)[np.ix_(P, P)]
        assert np.abs(M - Mp).max() <= 1e-12 * np.abs(Mp).max()
        tp = pin.rnea(pm, pd, qp, v[P], a[P])
        assert np.abs(sd.rnea(m, q, v, a)[P] - tp).max() <= 1e-12 * np.abs(tp).max()
        ap = pin.aba(pm, pd, qp, v[P], a[P])
        assert np.abs(sd.aba(m, q, v, a)[P] - ap).max() <= 1e-12 * max(np.abs(ap).max(), 1)


def pin_maps(m, pm, joint_names=None):
    """(P, q_pin): v_pin = v[P] and q -> Pinocchio q, matching joints by name (continuous joints
    stored as (cos, sin) by Pinocchio, free-flyer speeds [v; omega])."""
    names = list(m.joint_names) if joint_names is None else joint_names
    idx = {jn: i for i, jn in enumerate(m.joint_names)}
    P = np.empty(pm.nv, dtype=int)
    for jn in names:
        i, jid = idx[jn], pm.getJointId(jn)
        a, b = m.v_idx[i]
        cols = list(range(a, b))
        if m.joints[i].type == "floating":
            cols = cols[3:] + cols[:3]
        P[pm.idx_vs[jid]:pm.idx_vs[jid] + b - a] = cols

    def q_pin(q):
        out = np.zeros(pm.nq)
        for jn in names:
            i, jid = idx[jn], pm.getJointId(jn)
            a, b = m.q_idx[i]
            k = pm.idx_qs[jid]
            if pm.nqs[jid] == 2 and b - a == 1:
                out[k:k + 2] = np.cos(q[a]), np.sin(q[a])
            else:
                out[k:k + b - a] = q[a:b]
        return out

    return P, q_pin


# --- friction ------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_friction_torque_every_backend(backend):
    m = load_urdf(URDF)                      # damping [0.7, 0, ...], friction [0.2, 0.5, 0, ...]
    qd = np.array([1.5, -2.0, 0.3, 0.0, -1.0])
    want = np.array([0.7 * 1.5 + 0.2, -0.5, 0, 0, 0])
    np.testing.assert_allclose(num(sd.friction_torque(m, *inputs(backend, qd))), want, atol=1e-15)
    assert num(sd.friction_torque(m, *inputs(backend, np.zeros(5)))).tolist() == [0.0] * 5
    eps = 0.1
    sm = num(sd.friction_torque(m, *inputs(backend, qd), smooth=eps))
    np.testing.assert_allclose(sm[:2], [0.7 * 1.5 + 0.2 * 1.5 / math.hypot(1.5, eps),
                                        -0.5 * 2.0 / math.hypot(2.0, eps)], rtol=1e-14)
    assert abs(sm[1] - want[1]) < 0.5 * eps ** 2 / 4 * 1.01


def test_friction_torque_smooth_is_differentiable_at_zero():
    m = load_urdf(URDF)
    v = ca.SX.sym("v", 5)
    J = ca.Function("J", [v], [ca.jacobian(sd.friction_torque(m, v, smooth=0.01), v)])
    d = np.array(J(np.zeros(5)))
    np.testing.assert_allclose(np.diag(d)[:2], [0.7 + 0.2 / 0.01, 0.5 / 0.01], rtol=1e-12)
    with pytest.raises(ValueError, match="smooth must be None or a positive number"):
        sd.friction_torque(m, np.zeros(5), smooth=0)
    with pytest.raises(ValueError, match="qd"):
        sd.friction_torque(m, np.zeros(4))


# --- mimic joints --------------------------------------------------------------------------------

def test_mimic_matrix_and_expand_on_backends():
    m = load_urdf(URDF)
    assert mimic_independent(m) == ["j1", "j2", "j3"]
    G = mimic_matrix(m)
    np.testing.assert_array_equal(G, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -2], [0, 0, -6]])
    qr, vr, ar = np.array([0.3, -0.2, 0.02]), np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, -1])
    q, qd, qdd = expand_mimic(m, qr, vr, ar)
    np.testing.assert_allclose(q, [0.3, -0.2, 0.02, -0.04 + 0.01, -0.12 + 0.03])
    np.testing.assert_allclose(qd, G @ vr)
    np.testing.assert_allclose(qdd, G @ ar)
    for got, ref in zip(reduce_mimic(m, q, qd, qdd), (qr, vr, ar)):     # and back
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(reduce_mimic(m, q), qr)
    with pytest.raises(ValueError, match=r"qd must have shape \(5,\)"):
        reduce_mimic(m, q, vr)
    for backend in BACKENDS[1:]:
        np.testing.assert_allclose(num(expand_mimic(m, *inputs(backend, qr))), q, atol=1e-15)
        np.testing.assert_allclose(num(reduce_mimic(m, *inputs(backend, q))), qr, atol=1e-15)
        Mr = num(sd.mimic_crba(m, *inputs(backend, qr)))
        np.testing.assert_allclose(Mr, G.T @ sd.crba(m, q) @ G, atol=1e-12)


def test_mimic_dynamics_identities():
    m = load_urdf(URDF, armature=0.05)
    G = mimic_matrix(m)
    rng = np.random.default_rng(4)
    qr, vr, ar = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    q, qd, qdd = expand_mimic(m, qr, vr, ar)
    taur = sd.mimic_rnea(m, qr, vr, ar)
    np.testing.assert_allclose(taur, G.T @ sd.rnea(m, q, qd, qdd), atol=1e-12)
    np.testing.assert_allclose(sd.mimic_aba(m, qr, vr, taur), ar, atol=1e-10)
    Mr = sd.mimic_crba(m, qr)
    np.testing.assert_allclose(Mr, Mr.T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(Mr) > 0)


@pytest.mark.parametrize("name", ["panda", "baxter", "pr2"])
def test_mimic_against_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    m = sd.load_robot(name, snap=0)  # the file's values, as Pinocchio reads them
    assert m.mimic, f"{name} has mimic joints"
    path = str(sd.robot_urdf(name))
    pm = pin.buildModelFromUrdf(path, mimic=True)
    ind = mimic_independent(m)                  # the coupled coordinates, in model order
    qi = [k for jn in ind for k in range(*m.q_idx[m.joint_names.index(jn)])]
    vi = [k for jn in ind for k in range(*m.v_idx[m.joint_names.index(jn)])]
    P_full, qpin_full = pin_maps(m, pm, ind)
    vpos = {k: n for n, k in enumerate(vi)}
    P = np.array([vpos[k] for k in P_full])

    def q_pin(qr):
        q = np.zeros(m.nq)
        q[qi] = qr
        return qpin_full(q)

    rng = np.random.default_rng(5)
    qr = m.random_q(rng)[qi]
    vr, ar = rng.normal(size=len(vi)), rng.normal(size=len(vi))
    pd = pm.createData()
    Mp = pin.crba(pm, pd, q_pin(qr))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    Mr = sd.mimic_crba(m, qr)[np.ix_(P, P)]
    assert np.abs(Mr - Mp).max() <= 1e-12 * np.abs(Mp).max()
    tp = pin.rnea(pm, pd, q_pin(qr), vr[P], ar[P])
    assert np.abs(sd.mimic_rnea(m, qr, vr, ar)[P] - tp).max() <= 1e-12 * np.abs(tp).max()
    hp = pin.nle(pm, pd, q_pin(qr), vr[P])
    ap = np.linalg.solve(Mp, ar[P] - hp)
    assert np.abs(sd.mimic_aba(m, qr, vr, ar)[P] - ap).max() <= 1e-10 * max(np.abs(ap).max(), 1)


def test_example_robot_data_mimic_joints_are_recorded():
    """No silent drops: every non-fixed <mimic> of the registered robots is in model.mimic."""
    import re

    found = 0
    for name in sd.available_robots():
        text = sd.robot_urdf(name).read_text()
        joints = re.findall(r'<joint[^>]*name="([^"]+)"[^>]*type="(\w+)"[^>]*>(.*?)</joint>', text, re.S)
        mimics = {n for n, kind, body in joints if "<mimic" in body and kind != "fixed"}
        if not mimics:
            continue
        m = sd.load_robot(name)
        assert set(m.mimic) == mimics, name
        found += 1
    assert found >= 4
