"""URDF import: conventions (rpy, inertial frames, axes), fixed-joint merging, joint types, the
inertia policy, hardened parsing and malformed files; the example-robot-data locator."""
import math
import time
from pathlib import Path

import numpy as np
import pytest

import symdyn as sd
from symdyn.model import Body, Model
from symdyn.io.robots import ROBOTS, available_robots, load_robot, robot_urdf
from symdyn.spatial import Transform
from symdyn.io.urdf import URDFError, load_urdf, rpy_to_rot

DATA = Path(__file__).parent / "data"
BACKENDS = ["numpy", "sympy", "casadi"]


# --- helpers ----------------------------------------------------------------------------------------

def Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def Ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def R_rpy(r, p, y):
    """URDF convention, built from elementary rotations (independent of rpy_to_rot)."""
    return Rz(y) @ Ry(p) @ Rx(r)


def inertia(ixx, ixy, ixz, iyy, iyz, izz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def link(name, mass=1.0, xyz="0 0 0", rpy="0 0 0", I="1 0 0 1 0 1"):
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, ixy, ixz, iyy, iyz, izz = I.split()
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/>'
            '</inertial></link>')


def joint(name, kind, parent, child, xyz="0 0 0", rpy="0 0 0", axis=None):
    ax = "" if axis is None else f'<axis xyz="{axis}"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/>{ax}</joint>')


def robot(*elements, name="t"):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(elements) + "\n</robot>\n"


def call(backend, f, model, *vecs):
    """Run f(model, *vecs) with symbolic inputs of `backend` and evaluate at the numbers vecs."""
    if backend == "numpy":
        return np.asarray(f(model, *vecs), float)
    if backend == "sympy":
        import sympy as sp

        syms = [sp.Matrix(sp.symbols(f"x{k}_0:{len(v)}")) for k, v in enumerate(vecs)]
        out = f(model, *syms)
        subs = {s: float(x) for S, v in zip(syms, vecs) for s, x in zip(S, v)}
        return np.array(out.evalf(subs=subs), dtype=float).squeeze()
    import casadi as ca

    syms = [ca.SX.sym(f"x{k}", len(v)) for k, v in enumerate(vecs)]
    fn = ca.Function("f", syms, [f(model, *syms)])
    return np.array(fn(*vecs), dtype=float).squeeze()


# --- rpy and the 2-link arm ------------------------------------------------------------------------

def test_rpy_to_rot_is_rz_ry_rx():
    rng = np.random.default_rng(0)
    for r, p, y in rng.uniform(-math.pi, math.pi, (20, 3)):
        R = rpy_to_rot(r, p, y)
        assert np.allclose(R, R_rpy(r, p, y), atol=1e-15)
        assert np.allclose(R @ R.T, np.eye(3), atol=1e-15) and np.linalg.det(R) == pytest.approx(1)
    # roll of +90 deg turns the child y axis into the parent z axis
    assert np.allclose(rpy_to_rot(math.pi / 2, 0, 0) @ [0, 1, 0], [0, 0, 1], atol=1e-15)


def arm_dynamics(q, qd, qdd, g=(0.0, 0.0, -9.81)):
    """Closed-form M, tau of the planar 2R arm in tests/data/two_link_arm.urdf."""
    m1, m2, l1, c1, c2, I1, I2 = 2.0, 1.5, 0.6, 0.3, 0.25, 0.05, 0.03
    q1, q2 = q
    M11 = I1 + I2 + m1 * c1 ** 2 + m2 * (l1 ** 2 + c2 ** 2 + 2 * l1 * c2 * math.cos(q2))
    M12 = I2 + m2 * (c2 ** 2 + l1 * c2 * math.cos(q2))
    M = np.array([[M11, M12], [M12, I2 + m2 * c2 ** 2]])
    h = m2 * l1 * c2 * math.sin(q2)
    cor = np.array([-h * (2 * qd[0] * qd[1] + qd[1] ** 2), h * qd[0] ** 2])
    gy = -g[1]  # gravity along -y acts in the plane of motion; along z it does not
    grav = gy * np.array([m1 * c1 * math.cos(q1) + m2 * (l1 * math.cos(q1) + c2 * math.cos(q1 + q2)),
                          m2 * c2 * math.cos(q1 + q2)])
    return M, M @ qdd + cor + grav


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_link_arm_matches_closed_form(backend):
    model = load_urdf(DATA / "two_link_arm.urdf", gravity=(0, -9.81, 0))
    assert list(model.names) == ["link1", "link2"] and list(model.joint_names) == ["shoulder", "elbow"]
    assert model.name == "two_link_arm" and model.nq == model.nv == 2
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-3, 3, 2), rng.normal(size=2), rng.normal(size=2)
        M, tau = arm_dynamics(q, qd, qdd, g=(0, -9.81, 0))
        assert np.allclose(call(backend, sd.crba, model, q), M, rtol=1e-10, atol=1e-12)
        assert np.allclose(call(backend, sd.rnea, model, q, qd, qdd), tau, rtol=1e-10, atol=1e-12)


def test_root_inertia_dropped_with_fixed_base_and_gravity_option():
    model = load_urdf(DATA / "two_link_arm.urdf")  # gravity along -z: no torque on z axes
    q = np.array([0.3, -1.1])
    assert np.allclose(sd.gravity_vector(model, q), 0, atol=1e-14)
    M, _ = arm_dynamics(q, [0, 0], [0, 0])
    assert np.allclose(sd.crba(model, q), M, rtol=1e-12)  # base mass 5 kg plays no part
    assert model.frames["base"].body == -1


def test_string_bytes_and_path_inputs_agree():
    path = DATA / "two_link_arm.urdf"
    text = path.read_text()
    q = np.array([0.7, 0.2])
    ref = sd.crba(load_urdf(path), q)
    for src in (str(path), text, text.encode(), "\n  " + text):
        assert np.allclose(sd.crba(load_urdf(src), q), ref, rtol=0, atol=0)
    assert load_urdf(text, name="renamed").name == "renamed"


# --- conventions against a model built by hand -------------------------------------------------------

def _hand_built_rpy_tree():
    """tests/data/rpy_tree.urdf written directly with Body/Model and elementary rotations."""
    def body(name, parent, jnt, xyz, rpy, mass, cxyz, crpy, I):
        R = R_rpy(*crpy)
        X = None if xyz is None else Transform(R_rpy(*rpy).T, np.array(xyz, float))
        return Body(name, parent, jnt, mass, np.array(cxyz, float), R @ inertia(*I) @ R.T, X)

    a = (0.3, -0.5, 0.8)
    bodies = [
        body("a", None, sd.Revolute("x"), (0.1, 0.2, 0.3), (0.4, 0.5, -0.6), 1.2, (0.1, -0.05, 0.2),
             (0.3, -0.7, 1.1), (0.02, 0.001, -0.002, 0.03, 0.0015, 0.025)),
        body("b", "a", sd.Revolute("y"), (0, 0, 0.4), (-1.2, 0.3, 2.0), 0.8, (0, 0.02, 0.15),
             (-0.4, 0.2, 0.9), (0.012, -0.0005, 0.0007, 0.01, 0.0002, 0.006)),
        body("sensor", "b", sd.Fixed(), (0.05, 0, 0.1), (0, math.pi / 2, 0), 0.3, (0.01, 0.02, 0.03),
             (0.5, 0.5, 0.5), (0.001, 0, 0, 0.002, 0, 0.0025)),
        body("c", "sensor", sd.Prismatic(np.array(a) / np.linalg.norm(a)), (0.1, 0, 0), (0.2, 0.1, 0),
             0.5, (0.05, 0, 0), (0, 0.3, 0), (0.002, 0, 0, 0.003, 0, 0.004)),
        body("d", "a", sd.Revolute((0, -1, 0)), (0, 0.2, 0), (0, 0, 0), 0.7, (0, 0.1, -0.05),
             (1.0, 0, -0.5), (0.004, 0.0003, 0, 0.005, -0.0004, 0.003)),
    ]
    return Model(bodies, name="hand")


def test_rpy_tree_equals_hand_built_model():
    model = load_urdf(DATA / "rpy_tree.urdf")
    hand = _hand_built_rpy_tree()
    assert list(model.names) == ["a", "b", "c", "d"] == list(hand.names)
    assert [j.type for j in model.joints] == ["revolute", "revolute", "prismatic", "revolute"]
    assert model.joints[0].axis_spec == "x" and model.joints[1].axis_spec == "y"
    assert model.joints[3].axis_spec == (0.0, -1.0, 0.0)  # negative axis: a general unit vector
    assert np.allclose(model.joints[2].axis, np.array([0.3, -0.5, 0.8]) / math.sqrt(0.98))
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd, qdd = model.random_q(rng), rng.normal(size=4), rng.normal(size=4)
        assert np.allclose(sd.crba(model, q), sd.crba(hand, q), rtol=1e-12, atol=1e-14)
        assert np.allclose(sd.rnea(model, q, qd, qdd), sd.rnea(hand, q, qd, qdd), rtol=1e-12,
                           atol=1e-14)


def test_rpy_tree_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    model = load_urdf(DATA / "rpy_tree.urdf")
    pm = pin.buildModelFromUrdf(str(DATA / "rpy_tree.urdf"))
    pd = pm.createData()
    assert [pm.names[j] for j in range(1, pm.njoints)] == list(model.joint_names)  # same depth-first order
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = model.random_q(rng)  # j_b is continuous: Pinocchio stores (cos, sin)
        qp = np.array([q[0], math.cos(q[1]), math.sin(q[1]), q[2], q[3]])
        assert np.allclose(sd.crba(model, q), pin.crba(pm, pd, qp), rtol=1e-12, atol=1e-15)
        assert np.allclose(sd.gravity_vector(model, q), pin.computeGeneralizedGravity(pm, pd, qp),
                           rtol=1e-12, atol=1e-14)


def test_inertial_rpy_rotates_the_inertia_tensor():
    # yaw 90 deg swaps the x and y principal axes; the CoM is the inertial origin
    xml = robot(link("w", None), link("l", 2.0, xyz="0.1 0.2 0.3", rpy="0 0 1.5707963267948966",
                                      I="1 0 0 2 0 3"),
                joint("j", "revolute", "w", "l", axis="0 0 1"))
    mass, com, Ic = load_urdf(xml).body_params[0]
    assert mass == 2.0 and np.allclose(com, [0.1, 0.2, 0.3])
    assert np.allclose(Ic, np.diag([2.0, 1.0, 3.0]), atol=1e-15)
    # general rpy: Ic = R I R^T (same principal moments)
    xml = robot(link("w", None), link("l", 1.0, rpy="0.3 -0.4 0.5", I="0.4 0.01 0.02 0.5 0.03 0.6"),
                joint("j", "revolute", "w", "l", axis="0 0 1"))
    Ic = load_urdf(xml).body_params[0][2]
    R, I0 = R_rpy(0.3, -0.4, 0.5), inertia(0.4, 0.01, 0.02, 0.5, 0.03, 0.6)
    assert np.allclose(Ic, R @ I0 @ R.T, atol=1e-15)
    assert np.allclose(np.linalg.eigvalsh(Ic), np.linalg.eigvalsh(I0))


def test_joint_origin_gives_xtree():
    xml = robot(link("w", None), link("l"),
                joint("j", "revolute", "w", "l", xyz="1 2 3", rpy="0.1 0.2 0.3", axis="0 0 1"))
    E, r = load_urdf(xml).Xtree[0]
    assert np.allclose(E, R_rpy(0.1, 0.2, 0.3).T, atol=1e-15) and np.allclose(r, [1, 2, 3])


# --- fixed joints, joint types -----------------------------------------------------------------------

def test_fixed_link_is_merged_like_a_hand_merged_inertia():
    """A tool on a fixed joint equals the same robot with the tool's mass merged by hand."""
    m1, c1, I1 = 1.5, np.array([0.2, 0.0, 0.05]), inertia(0.01, 0, 0, 0.02, 0, 0.025)
    mt, Rt, pt = 0.5, R_rpy(0, 0, math.pi / 2), np.array([0.4, 0.0, 0.1])
    ct_tool, It_tool = np.array([0.02, 0.0, 0.0]), inertia(0.001, 0, 0, 0.002, 0, 0.003)
    ct, It = pt + Rt @ ct_tool, Rt @ It_tool @ Rt.T  # tool CoM and inertia in link1 coordinates
    m = m1 + mt
    c = (m1 * c1 + mt * ct) / m

    def shift(I, mass, d):  # parallel axis: about the combined CoM
        return I + mass * (d @ d * np.eye(3) - np.outer(d, d))

    Ic = shift(I1, m1, c1 - c) + shift(It, mt, ct - c)
    fmt = " ".join
    base = [link("w", None), joint("j1", "revolute", "w", "link1", xyz="0 0 0.3", axis="0 1 0"),
            link("link2", 0.8, xyz="0.1 0 0", I="0.003 0 0 0.004 0 0.005"),
            joint("j2", "revolute", "link1", "link2", xyz="0.5 0 0", axis="0 0 1")]
    with_tool = robot(*base, link("link1", m1, xyz=fmt(map(str, c1)), I="0.01 0 0 0.02 0 0.025"),
                      link("tool", mt, xyz="0.02 0 0", I="0.001 0 0 0.002 0 0.003"),
                      joint("tool_joint", "fixed", "link1", "tool", xyz="0.4 0 0.1",
                            rpy="0 0 1.5707963267948966"))
    Istr = fmt(repr(float(v)) for v in (Ic[0, 0], Ic[0, 1], Ic[0, 2], Ic[1, 1], Ic[1, 2], Ic[2, 2]))
    merged = robot(*base, link("link1", m, xyz=fmt(repr(float(v)) for v in c), I=Istr))
    a, b = load_urdf(with_tool), load_urdf(merged)
    assert a.N == b.N == 2 and list(a.names) == ["link1", "link2"]
    assert a.frames["tool"].body == 0
    assert np.allclose(a.frames["tool"].X.E, Rt.T) and np.allclose(a.frames["tool"].X.r, pt)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd = rng.uniform(-3, 3, 2), rng.normal(size=2)
        assert np.allclose(sd.crba(a, q), sd.crba(b, q), rtol=1e-12)
        assert np.allclose(sd.rnea(a, q, qd, qd), sd.rnea(b, q, qd, qd), rtol=1e-12)


def test_chain_of_fixed_links_to_world_and_between_bodies():
    xml = robot(link("world", None), link("stand", 3.0), link("flange", None), link("l1"),
                link("l2"),
                joint("s", "fixed", "world", "stand", xyz="0 0 1"),
                joint("f", "fixed", "stand", "flange", rpy="0 0 0.5"),
                joint("j1", "revolute", "flange", "l1", xyz="0.1 0 0", axis="0 0 1"),
                joint("j2", "continuous", "l1", "l2", xyz="0.5 0 0", axis="1 0 0"))
    m = load_urdf(xml)
    assert list(m.names) == ["l1", "l2"] and list(m.parents) == [-1, 0]
    E, r = m.Xtree[0]  # world -> stand -> flange -> l1 composes into one tree transform
    assert np.allclose(E, Rz(0.5).T) and np.allclose(r, [0, 0, 1] + Rz(0.5) @ [0.1, 0, 0])
    R, p, _ = sd.forward_kinematics(m, np.zeros(2))
    assert np.allclose(p[1], [0, 0, 1] + Rz(0.5) @ [0.6, 0, 0])


def test_continuous_equals_revolute():
    xml = (DATA / "two_link_arm.urdf").read_text()
    cont = xml.replace('type="revolute"', 'type="continuous"')
    a, b = load_urdf(xml), load_urdf(cont)
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    assert np.array_equal(sd.rnea(a, q, qd, qdd), sd.rnea(b, q, qd, qdd))
    assert np.array_equal(sd.aba(a, q, qd, qdd), sd.aba(b, q, qd, qdd))


@pytest.mark.parametrize("axis, sign", [("0 0 1", 1.0), ("0 0 -1", -1.0), ("0 0 3", 1.0)])
def test_prismatic_slider(axis, sign):
    """A slider of mass m along +-z: M = m, gravity force +-m g; axes are normalized."""
    xml = robot(link("w", None), link("s", 2.5, xyz="0.1 0.2 0"),
                joint("j", "prismatic", "w", "s", axis=axis))
    m = load_urdf(xml)
    assert m.joints[0].type == "prismatic"
    assert m.joints[0].axis_spec == ("z" if sign > 0 else (0.0, 0.0, -1.0))
    q = np.array([0.3])
    assert np.allclose(sd.crba(m, q), [[2.5]])
    assert np.allclose(sd.gravity_vector(m, q), [sign * 2.5 * 9.81])
    R, p, _ = sd.forward_kinematics(m, q)
    assert np.allclose(p[0], [0, 0, sign * 0.3])


def test_default_axis_is_x():
    m = load_urdf(robot(link("w", None), link("l"), joint("j", "revolute", "w", "l")))
    assert m.joints[0].axis_spec == "x"


def test_floating_base_root_counts_and_is_named_root_joint():
    m = load_urdf(DATA / "two_link_arm.urdf", floating_base=True)
    assert list(m.names) == ["base", "link1", "link2"] and m.joint_names[0] == "root_joint"
    assert m.joints[0].type == "floating" and m.nq == 9 and m.nv == 8 and m.is_floating
    q = m.random_q(np.random.default_rng(6))
    M = sd.crba(m, q)
    assert np.allclose(M[3:6, 3:6], (5.0 + 2.0 + 1.5) * np.eye(3))  # total mass, root link included
    # a single floating link: M is its spatial inertia
    one = load_urdf(robot(link("b", 2.0, xyz="0.1 -0.2 0.3", I="0.1 0.01 0 0.2 0 0.3")),
                    floating_base=True)
    Mb = sd.crba(one, one.random_q(np.random.default_rng(7)))
    assert np.allclose(Mb, one.I[0]) and np.allclose(Mb[3:, :3], 2.0 * np.array(
        [[0, 0.3, 0.2], [-0.3, 0, 0.1], [-0.2, -0.1, 0]]))


def test_floating_and_planar_joints_inside_urdf():
    xml = robot(link("world", None), link("body", 2.0), link("arm", 0.5, xyz="0.2 0 0"),
                joint("free", "floating", "world", "body", xyz="0 0 1"),
                joint("j", "revolute", "body", "arm", axis="0 0 1"))
    m = load_urdf(xml)
    assert [j.type for j in m.joints] == ["floating", "revolute"] and m.joint_names[0] == "free"
    assert np.allclose(m.Xtree[0].r, [0, 0, 1])
    q = m.random_q(np.random.default_rng(8))
    assert np.allclose(sd.crba(m, q)[3:6, 3:6], 2.5 * np.eye(3))
    planar = robot(link("w", None), link("p", 1.0), joint("pl", "planar", "w", "p", axis="0 0 1"))
    assert load_urdf(planar).joints[0].type == "planar"
    with pytest.raises(URDFError, match=r"joint 'pl'.*planar joint with axis .*must be '0 0 1'"):
        load_urdf(planar.replace('xyz="0 0 1"', 'xyz="1 0 0"'))


# --- massless links and the inertia policy ------------------------------------------------------------

def test_massless_frames_and_intermediate_links():
    """Massless links on fixed joints are frames; a massless link between two joints is accepted."""
    xml = robot(link("w", None), link("u", None), link("l", 1.0, xyz="0 0 -0.5", I="0.1 0 0 0.1 0 0.02"),
                link("tip", None), link("tip2", 0.0, I="1e-6 0 0 1e-6 0 1e-6"),
                joint("jx", "revolute", "w", "u", axis="1 0 0"),
                joint("jy", "revolute", "u", "l", axis="0 1 0"),
                joint("t", "fixed", "l", "tip", xyz="0 0 -1"),
                joint("t2", "fixed", "tip", "tip2"))
    m = load_urdf(xml)
    assert list(m.names) == ["u", "l"] and not np.any(m.I[0])
    assert m.frames["tip"].body == 1 and np.allclose(m.frames["tip"].X.r, [0, 0, -1])
    q = np.array([0.4, -0.3])
    assert np.all(np.linalg.eigvalsh(sd.crba(m, q)) > 0)
    assert np.allclose(sd.aba(m, q, [0.1, 0.2], sd.rnea(m, q, [0.1, 0.2], [1.0, -2.0])), [1, -2])


def test_massless_moving_leaf_is_rejected_unless_unchecked():
    xml = robot(link("w", None), link("l"), link("finger", None),
                joint("j", "revolute", "w", "l", axis="0 0 1"),
                joint("jf", "revolute", "l", "finger", axis="0 1 0"))
    with pytest.raises(URDFError, match=r"link 'finger'.*joint 'jf' moves only massless links.*"
                                        r"check_inertias=False"):
        load_urdf(xml)
    assert load_urdf(xml, check_inertias=False).N == 2


def test_point_mass_body_is_accepted_and_non_physical_inertia_rejected():
    pm = robot(link("w", None), link("l", 1.0, xyz="1 0 0", I="0 0 0 0 0 0"),
               joint("j", "revolute", "w", "l", axis="0 0 1"))
    assert np.allclose(sd.crba(load_urdf(pm), [0.0]), [[1.0]])  # m l^2
    bad = pm.replace('ixx="0"', 'ixx="5"')  # principal moments (0, 0, 5): no rigid body
    with pytest.raises(URDFError, match=r"link 'l'.*triangle inequality.*check_inertias=False"):
        load_urdf(bad)
    assert load_urdf(bad, check_inertias=False).N == 1
    neg = pm.replace('izz="0"', 'izz="-1"')
    with pytest.raises(URDFError, match=r"link 'l'.*negative principal moment"):
        load_urdf(neg)


def test_fixed_base_without_moving_joints_has_nv_0():
    """As Pinocchio builds it (tests/test_fixed_only_models.py compares): no moving body, the
    links are frames on the world."""
    xml = robot(link("a"), link("b"), joint("f", "fixed", "a", "b", xyz="0 0 0.5"))
    m = load_urdf(xml)
    assert (m.N, m.nq, m.nv) == (0, 0, 0) and sd.crba(m, []).shape == (0, 0)
    assert np.allclose(sd.frame_placement(m, [], "b")[1], [0, 0, 0.5])
    assert load_urdf(xml, floating_base=True).N == 1


# --- hardened parsing and malformed files ---------------------------------------------------------------

MALFORMED = [
    ("missing_mass.urdf", r"link 'b' \(line \d+\): <inertial> has no <mass value=\.\.\.> \(missing mass\)"),
    ("unknown_joint_type.urdf", r"joint 'ball' \(line \d+\): unknown joint type 'spherical'"),
    ("dangling_parent.urdf", r"joint 'j' \(line \d+\): parent link 'ghost' does not exist \(dangling parent\)"),
    ("cycle.urdf", r"no root link: .* cycle"),
    ("two_parents.urdf", r"joint 'bc'.*link 'c' already has parent joint 'ac': a link with two parent joints"),
    ("two_roots.urdf", r"more than one root link \['a', 'c'\]"),
    ("non_numeric_xyz.urdf", r"joint 'j' \(line \d+\): <origin xyz='0.1 zero 0.3'>: expected 3 numbers"),
    ("billion_laughs.urdf", r"DOCTYPE declarations are not allowed"),
    ("external_entity.urdf", r"DOCTYPE declarations are not allowed"),
]


@pytest.mark.parametrize("fname, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_give_specific_errors(fname, message):
    t0 = time.perf_counter()
    with pytest.raises(URDFError, match=message) as info:
        load_urdf(DATA / "malformed" / fname)
    assert isinstance(info.value, ValueError) and fname in str(info.value)
    assert time.perf_counter() - t0 < 1.0  # no entity expansion took place
    assert "root:" not in str(info.value)  # nothing of /etc/passwd leaked


def test_entities_refused_in_strings_too():
    xml = (DATA / "malformed" / "billion_laughs.urdf").read_text()
    with pytest.raises(URDFError, match="DOCTYPE"):
        load_urdf(xml)
    # a parameter-entity payload and an entity-free DOCTYPE are refused as well
    pe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><robot/>'
    for x in (pe, '<!DOCTYPE robot><robot name="r"><link name="a"/></robot>'):
        with pytest.raises(URDFError, match="DOCTYPE"):
            load_urdf(x)
    with pytest.raises(URDFError, match="malformed XML.*undefined entity"):
        load_urdf('<robot name="&x;"><link name="a"/></robot>')


BASE = [link("a"), link("b")]
J = '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>{}</joint>'


@pytest.mark.parametrize("xml, message", [
    (robot(*BASE, J.format('<origin xyz="1 2"/>')), r"<origin xyz='1 2'>: expected 3 numbers, got 2"),
    (robot(*BASE, J.format('<origin rpy="0 nan 0"/>')), r"joint 'j'.*<origin rpy='0 nan 0'>: NaN or inf"),
    (robot(*BASE, J.format('<axis xyz="0 0 0"/>')), r"joint 'j'.*the joint axis must be nonzero"),
    (robot(*BASE, J.format('<axis xyz="0 0 z"/>')), r"joint 'j'.*<axis xyz='0 0 z'>: expected 3"),
    (robot(link("a"), link("b", mass="-1"), J.format("")), r"link 'b'.*mass must be >= 0"),
    (robot(link("a"), link("b", mass="heavy"), J.format("")), r"link 'b'.*<mass value='heavy'>"),
    (robot(link("a"), '<link name="b"><inertial><mass value="1"/></inertial></link>', J.format("")),
     r"link 'b'.*<inertial> has no <inertia> element"),
    (robot(link("a"), '<link name="b"><inertial><mass value="1"/><inertia ixx="1"/></inertial></link>',
           J.format("")), r"link 'b'.*<inertia> has no 'ixy' attribute"),
    (robot(*BASE, '<joint name="j"><parent link="a"/><child link="b"/></joint>'), r"joint 'j'.*no 'type'"),
    (robot(*BASE, '<joint name="j" type="fixed"><parent link="a"/></joint>'), r"joint 'j'.*no <child>"),
    (robot(*BASE, '<joint name="j" type="fixed"><parent link="a"/><child link="zz"/></joint>'),
     r"joint 'j'.*child link 'zz' does not exist"),
    (robot(*BASE, '<joint name="j" type="fixed"><parent link="b"/><child link="b"/></joint>'),
     r"link 'b' is its own parent"),
    (robot(link("r"), link("a"), link("b"), joint("ab", "fixed", "a", "b"), joint("ba", "fixed", "b", "a"),
           joint("ra", "fixed", "r", "a")),
     r"link 'a' already has parent joint"),
    (robot(link("r"), link("a"), link("b"), joint("ab", "fixed", "a", "b"), joint("ba", "fixed", "b", "a")),
     r"links \['a', 'b'\] are not reachable from the root link 'r': their joints form a cycle"),
    (robot(link("a"), link("a")), r"link 'a' \(line 4\): duplicate link name"),
    (robot(*BASE, link("c"), joint("j", "fixed", "a", "b"), joint("j", "fixed", "a", "c")),
     r"joint 'j'.*duplicate joint name"),
    (robot(), r"no <link> elements"),
    ('<model name="x"/>', r"<model>.*the root element must be <robot>"),
    ('<robot name="x"><link name="a"></robot>', r"malformed XML: mismatched tag"),
])
def test_malformed_strings(xml, message):
    with pytest.raises(URDFError, match=message):
        load_urdf(xml)


def test_bad_arguments():
    with pytest.raises(FileNotFoundError, match="no_such.urdf"):
        load_urdf(DATA / "no_such.urdf")
    with pytest.raises(TypeError, match="path or an XML string"):
        load_urdf(3.0)
    for empty in ("", "  \n", b""):                 # not the current directory's "file"
        with pytest.raises(URDFError, match="the source is empty"):
            load_urdf(empty)


# --- example-robot-data --------------------------------------------------------------------------------

def test_robot_registry_and_defaults():
    names = available_robots()
    assert {"ur5", "panda", "talos", "solo12", "anymal", "go2"} <= set(names)
    assert robot_urdf("ur5").name == "ur5_robot.urdf" and robot_urdf("ur5").is_file()
    ur5, talos = load_robot("ur5"), load_robot("talos")
    assert not ur5.is_floating and ur5.nv == 6 and ur5.name == "ur5"
    assert talos.is_floating and talos.nq == talos.nv + 1
    assert load_robot("solo12", floating_base=False).nv == 12
    assert all(ROBOTS[n].floating_base for n in ("talos", "solo12", "anymal", "go2", "g1"))
    assert not any(ROBOTS[n].floating_base for n in ("ur5", "panda", "kinova", "double_pendulum"))


def test_unknown_robot_lists_available_names():
    with pytest.raises(ValueError, match=r"unknown robot 'r2d2'; available: .*ur5.*panda"):
        robot_urdf("r2d2")


def test_robots_dir_override(tmp_path, monkeypatch):
    src = robot_urdf("double_pendulum")
    dst = tmp_path / ROBOTS["double_pendulum"].path
    dst.parent.mkdir(parents=True)
    dst.write_bytes(src.read_bytes())
    monkeypatch.setenv("SYMDYN_ROBOTS_DIR", str(tmp_path))
    assert robot_urdf("double_pendulum") == dst
    assert available_robots() == ["double_pendulum"]
    with pytest.raises(FileNotFoundError, match="robot 'ur5'.*missing.*available: double_pendulum"):
        robot_urdf("ur5")
    monkeypatch.setenv("SYMDYN_ROBOTS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="SYMDYN_ROBOTS_DIR=.*nowhere.*not a directory"):
        robot_urdf("ur5")


# --- limits: the URDF specification's defaults ------------------------------------------------------

def _limited(kind, limit):
    j = joint("j", kind, "base", "a", axis="0 0 1").replace("</joint>", f"{limit}</joint>")
    return robot(link("base"), link("a"), j)


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_missing_lower_upper_are_zero_as_the_specification_says(kind):
    """URDF: <limit lower upper> default to 0 (Pinocchio reads the same); a joint without a
    <limit> element, which the specification requires, loads unlimited; a missing velocity or
    effort (required too) is +inf (unknown)."""
    pin = pytest.importorskip("pinocchio")
    xml = _limited(kind, '<limit effort="3" velocity="2"/>')
    m = load_urdf(xml)
    assert m.limits.lower.tolist() == [0.0] and m.limits.upper.tolist() == [0.0]
    pm = pin.buildModelFromXML(xml)
    assert pm.lowerPositionLimit.tolist() == [0.0] and pm.upperPositionLimit.tolist() == [0.0]
    assert m.limits.velocity.tolist() == [2.0] and m.limits.effort.tolist() == [3.0]
    m = load_urdf(_limited(kind, '<limit upper="0.5" effort="3" velocity="2"/>'))
    assert m.limits.lower.tolist() == [0.0] and m.limits.upper.tolist() == [0.5]
    m = load_urdf(_limited(kind, '<limit lower="-0.5" effort="3" velocity="2"/>'))
    assert m.limits.lower.tolist() == [-0.5] and m.limits.upper.tolist() == [0.0]
    with pytest.raises(URDFError, match="lower > upper"):            # lower 0.5 > the default 0
        load_urdf(_limited(kind, '<limit lower="0.5" effort="3" velocity="2"/>'))
    m = load_urdf(_limited(kind, ""))                                 # deviation: no <limit>
    assert m.limits.lower.tolist() == [-math.inf] and m.limits.upper.tolist() == [math.inf]
    m = load_urdf(_limited(kind, '<limit lower="-1" upper="1"/>'))    # deviation: no velocity/effort
    assert m.limits.velocity.tolist() == [math.inf] and m.limits.effort.tolist() == [math.inf]


def test_continuous_joints_stay_unlimited():
    m = load_urdf(_limited("continuous", '<limit effort="3" velocity="2"/>'))
    assert m.limits.lower.tolist() == [-math.inf] and m.limits.upper.tolist() == [math.inf]
    assert m.limits.velocity.tolist() == [2.0]


def test_centauro_wheels_limits_equal_pinocchio():
    """centauro's wheel joints give velocity and effort but no lower/upper: [0, 0] in both."""
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import pinocchio_maps

    m = load_urdf(robot_urdf("centauro"))
    pm = pin.buildModelFromUrdf(str(robot_urdf("centauro")))
    maps = pinocchio_maps(m, pm)
    for i, jn in enumerate(m.joint_names):
        if m.joints[i].type != "revolute" or pm.nqs[pm.getJointId(jn)] != 1:
            continue
        a = m.q_idx[i][0]
        k = pm.idx_qs[pm.getJointId(jn)]
        assert (m.limits.lower[a], m.limits.upper[a]) == (pm.lowerPositionLimit[k],
                                                          pm.upperPositionLimit[k]), jn
    assert maps is not None and m.limits.upper[m.q_idx[m.joint_names.index("j_wheel_1")][0]] == 0.0


# --- frames of fixed joints ------------------------------------------------------------------------

def test_fixed_joints_are_frames_and_fixed_root_has_no_root_joint():
    xml = robot(link("world", None), link("base"), link("a"), link("tool", None),
                joint("weld", "fixed", "world", "base", xyz="0 0 1"),
                joint("j1", "revolute", "base", "a", axis="0 0 1"),
                joint("tool_joint", "fixed", "a", "tool", xyz="0.5 0 0"))
    m = load_urdf(xml)
    assert dict(m.fixed_joints) == {"weld": "base", "tool_joint": "tool"}
    assert "root_joint" not in m.fixed_joints and "root_joint" not in m.joint_names
    q = np.array([0.3])
    for a, b in zip(sd.frame_placement(m, q, "tool_joint"), sd.frame_placement(m, q, "tool")):
        np.testing.assert_array_equal(a, b)
    f = load_urdf(xml, floating_base=True)
    assert f.joint_names[0] == "root_joint" and "root_joint" not in f.fixed_joints


# --- mimic tags naming a missing joint ---------------------------------------------------------------

def test_mimic_of_a_missing_joint_error_says_how_to_load_it():
    xml = robot(link("base"), link("a"), link("b"),
                joint("j1", "revolute", "base", "a", axis="0 0 1"),
                joint("j2", "revolute", "a", "b", axis="0 0 1").replace(
                    "</joint>", '<mimic joint="nope" multiplier="2"/></joint>'))
    with pytest.raises(URDFError, match=r"joint 'j2' \(line \d+\): <mimic joint='nope'>: no such "
                                        r"joint; pass mimic='ignore' to load this joint as an "
                                        r"independent joint"):
        load_urdf(xml)
    with pytest.warns(UserWarning, match=r"mimic='ignore': <mimic> tags naming a joint that does "
                                         r"not exist were ignored; .*'j2' \(mimics 'nope', line \d+\)"):
        m = load_urdf(xml, mimic="ignore")
    assert m.joint_names == ("j1", "j2") and m.mimic == {}
    # valid relations are still recorded with mimic="ignore"
    ok = xml.replace('joint="nope"', 'joint="j1"')
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_urdf(ok, mimic="ignore").mimic == load_urdf(ok).mimic != {}


def test_alex_psyonic_hands_loads_with_mimic_ignore_like_pinocchio():
    pin = pytest.importorskip("pinocchio")
    path = sd.io.robots.robots_dir() / "alex_description" / "urdf" / "alex_psyonic_hands.urdf"
    if not path.is_file():
        pytest.skip("alex_psyonic_hands.urdf is not in the installed example-robot-data")
    with pytest.raises(URDFError, match="mimic='ignore'"):
        load_urdf(path)
    with pytest.warns(UserWarning, match="'Left_index_q2' \\(mimics 'index_q1'"):
        m = load_urdf(path, mimic="ignore")
    pm = pin.buildModelFromUrdf(str(path))
    assert m.nv == pm.nv and set(m.joint_names) == set(pm.names[1:])
    from symdyn.interop.pinocchio import pinocchio_maps

    maps = pinocchio_maps(m, pm)
    q = m.random_q(0)
    Mp = pin.crba(pm, pm.createData(), maps.q_to_pin(q))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    np.testing.assert_allclose(maps.matrix_to_pin(sd.crba(m, q)), Mp, atol=1e-12 * np.abs(Mp).max())
