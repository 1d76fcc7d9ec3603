"""Pinocchio interop (issue 13, section 5): ``from_pinocchio``, ``to_pinocchio`` and the q/v maps by
joint name (``pinocchio_maps``), checked on every example-robot-data robot against Pinocchio's own
URDF models (its sibling order, continuous joints as (cos, sin), free-flyer velocity [v; omega]).

Sweep result (fixed and floating base for every robot of ``symdyn.available_robots()``): every pair
loads in both and matches rnea and crba to 1e-10 relative; ``hector`` on a fixed base, a single
link, has nq = nv = 0 in both.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import symdyn as sd  # noqa: E402
from symdyn.interop import pinocchio as pb  # noqa: E402
from symdyn.joints import Floating, Helical, Prismatic, Revolute, Spherical  # noqa: E402
from symdyn.model import Body, Model, ModelError  # noqa: E402
from symdyn.io.robots import available_robots, robot_urdf  # noqa: E402
from symdyn.spatial import Transform  # noqa: E402

TOL = 1e-10
ROBOTS = available_robots()
PAIRS = [(name, fb) for name in ROBOTS for fb in (False, True)]
#: pairs that do not load in both, with the reason (the sweep checks that only these fail)
EXCEPTIONS: dict = {}


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size == 0 == b.size:   # a model with nv = 0 (hector on a fixed base)
        return 0.0 if a.shape == b.shape else math.inf
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def sym(M):
    """Pinocchio's crba fills the upper triangle only."""
    M = np.asarray(M, float)
    return np.triu(M) + np.triu(M, 1).T


_loaded: dict = {}


def load_pair(name: str, floating: bool):
    """(symdyn model from symdyn.load_robot without snapping, Pinocchio model from
    pinocchio.buildModelFromUrdf), cached for the module."""
    key = (name, floating)
    if key not in _loaded:
        path = str(robot_urdf(name))
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
        try:
            m = sd.load_robot(name, floating_base=floating, snap=0)  # the values Pinocchio reads
        except (sd.URDFError, ModelError) as exc:
            m = exc
        _loaded[key] = (m, pm)
    return _loaded[key]


def random_state(model, seed=0):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


def compare(model, pm, maps, seed=0):
    """Relative errors of rnea and crba of ``model`` against Pinocchio through ``maps``."""
    pd = pm.createData()
    q, v, a = random_state(model, seed)
    qp = maps.q_to_pin(q)
    e_rnea = rel(maps.v_to_pin(sd.rnea(model, q, v, a)),
                 pin.rnea(pm, pd, qp, maps.v_to_pin(v), maps.v_to_pin(a)))
    e_crba = rel(maps.matrix_to_pin(sd.crba(model, q)), sym(pin.crba(pm, pd, qp)))
    return e_rnea, e_crba


# --- 1. the maps on Pinocchio's own URDF models: every robot, fixed and floating ------------------

def pair_id(name, floating):
    return f"{name}-{'floating' if floating else 'fixed'}"


@pytest.mark.parametrize("name,floating", PAIRS, ids=[pair_id(*p) for p in PAIRS])
def test_maps_match_pinocchio_urdf_models(name, floating):
    m, pm = load_pair(name, floating)
    if (name, floating) in EXCEPTIONS:
        assert isinstance(m, Exception) and pm.njoints == 1, "now loads: update EXCEPTIONS"
        pytest.skip(EXCEPTIONS[(name, floating)])
    assert not isinstance(m, Exception), m
    maps = pb.pinocchio_maps(m, pm)
    for seed in (0, 1):
        e_rnea, e_crba = compare(m, pm, maps, seed)
        assert e_rnea < TOL and e_crba < TOL, (e_rnea, e_crba)
    # the module-level functions take the same maps with pin_model=
    q, v, _ = random_state(m, 2)
    assert np.array_equal(pb.q_to_pin(m, q, pin_model=pm), maps.q_to_pin(q))
    assert np.array_equal(pb.v_to_pin(m, v, pin_model=pm), maps.v_to_pin(v))
    # round trips (angles of (cos, sin) joints come back modulo 2 pi)
    qb = maps.q_from_pin(maps.q_to_pin(q))
    d = qb - q
    for i, cs in enumerate(maps.cos_sin):
        if cs:
            a = m.q_idx[i][0]
            d[a] = math.remainder(d[a], 2 * math.pi)
    assert np.abs(d).max(initial=0.0) < 1e-12
    assert np.array_equal(maps.v_from_pin(maps.v_to_pin(v)), v)
    A = np.arange(m.nv * m.nv, dtype=float).reshape(m.nv, m.nv)
    assert np.array_equal(maps.matrix_from_pin(maps.matrix_to_pin(A)), A)
    assert np.array_equal(pb.matrix_from_pin(m, maps.matrix_to_pin(A), pin_model=pm), A)


def test_sweep_count():
    """All pairs that load in both match (the per-pair test checks the numbers); the count is the
    figure reported in the issue (108 of 108 with example-robot-data 4.x)."""
    loaded = [p for p in PAIRS if not isinstance(load_pair(*p)[0], Exception)]
    failed = [p for p in PAIRS if isinstance(load_pair(*p)[0], Exception)]
    assert set(failed) <= set(EXCEPTIONS), failed
    matched = sum(1 for p in loaded
                  if max(compare(load_pair(*p)[0], load_pair(*p)[1],
                                 pb.pinocchio_maps(*load_pair(*p)))) < TOL)
    assert matched == len(loaded)
    if ROBOTS:
        assert matched >= len(PAIRS) - len(EXCEPTIONS)


def test_continuous_joints_are_cos_sin_and_free_flyer_is_permuted():
    m, pm = load_pair("double_pendulum_continuous", False)
    maps = pb.pinocchio_maps(m, pm)
    assert all(maps.cos_sin) and pm.nq == 2 * m.nq
    q = np.array([0.3, -2.0])
    assert np.allclose(maps.q_to_pin(q),
                       [math.cos(0.3), math.sin(0.3), math.cos(-2.0), math.sin(-2.0)])
    assert np.allclose(maps.q_from_pin(maps.q_to_pin(q)), q)
    m, pm = load_pair("solo12", True)
    maps = pb.pinocchio_maps(m, pm)
    v = np.arange(m.nv, dtype=float)
    vp = maps.v_to_pin(v)
    assert np.array_equal(vp[:6], [3, 4, 5, 0, 1, 2])   # [v; omega] in Pinocchio, [omega; v] here


def test_maps_refuse_models_with_other_joints():
    m, pm = load_pair("panda", False)
    other, _ = load_pair("ur5", False)
    with pytest.raises(pb.PinocchioConversionError, match="do not match by name.*panda_joint1"):
        pb.pinocchio_maps(other, pm)
    with pytest.raises(ValueError, match="q must have 9 entries"):
        pb.pinocchio_maps(m, pm).q_to_pin(np.zeros(3))


# --- 2. from_pinocchio ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,floating", [p for p in PAIRS if p not in EXCEPTIONS],
                         ids=[pair_id(*p) for p in PAIRS if p not in EXCEPTIONS])
def test_from_pinocchio_of_urdf_models(name, floating):
    """from_pinocchio(buildModelFromUrdf(path)) has load_urdf's joints, inertias and frames, and
    Pinocchio's dynamics; back through to_pinocchio it has the same crba and rnea."""
    mu, pm = load_pair(name, floating)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = pb.from_pinocchio(pm)
    for w in caught:   # frames whose name clashes (a fixed joint named like its link), actuation
        assert "frames left out because their name is already" in str(w.message) or (
            not pb.supports_actuation() and "has no actuation fields" in str(w.message)), w.message
    maps = pb.pinocchio_maps(m, pm)
    for seed in (0, 1):
        assert max(compare(m, pm, maps, seed)) < TOL
    # same joints, inertias and tree transforms as symdyn's own URDF loader, matched by joint name
    assert sorted(m.joint_names) == sorted(mu.joint_names) and m.nq == mu.nq and m.nv == mu.nv
    for i, jn in enumerate(m.joint_names):
        k = mu.joint_names.index(jn)
        j, ju = m.joints[i], mu.joints[k]
        assert type(j) is type(ju), jn
        if hasattr(j, "axis"):
            assert np.allclose(j.axis, ju.axis, atol=1e-12), jn
        assert np.allclose(np.asarray(m.I[i], float), np.asarray(mu.I[k], float), atol=1e-12), jn
        for a, b in zip(m.Xtree[i], mu.Xtree[k]):
            assert np.allclose(np.asarray(a, float), np.asarray(b, float), atol=1e-12), jn
    # every URDF link is a frame, on the body of the same joint, at the same placement
    for fname, fu in mu.frames.items():
        assert fname in m.frames, fname
        f = m.frames[fname]
        if fu.body < 0:
            assert f.body < 0, fname
        else:
            assert m.joint_names[f.body] == mu.joint_names[fu.body], fname
        assert np.allclose(np.asarray(f.X.E, float), np.asarray(fu.X.E, float), atol=1e-12), fname
        assert np.allclose(np.asarray(f.X.r, float), np.asarray(fu.X.r, float), atol=1e-12), fname
    # pin -> model -> pin: equal crba and rnea
    pm2 = pb.to_pinocchio(m)
    pd, pd2 = pm.createData(), pm2.createData()
    maps2 = pb.pinocchio_maps(m, pm2)
    q, v, a = random_state(m, 3)
    assert rel(maps2.matrix_from_pin(sym(pin.crba(pm2, pd2, maps2.q_to_pin(q)))),
               maps.matrix_from_pin(sym(pin.crba(pm, pd, maps.q_to_pin(q))))) < TOL
    def tau(mp, model, data):
        return mp.v_from_pin(pin.rnea(model, data, mp.q_to_pin(q), mp.v_to_pin(v), mp.v_to_pin(a)))

    assert rel(tau(maps2, pm2, pd2), tau(maps, pm, pd)) < TOL


@pytest.mark.parametrize("name,floating", [("panda", False), ("solo12", True),
                                           ("double_pendulum_continuous", True), ("talos", True)])
def test_actuation_data_follows_the_joints(name, floating):
    """Limits, armature, damping and friction: Pinocchio's (by joint name) equal those of symdyn's
    URDF loader, and to_pinocchio writes them back; without the Model fields a warning says they
    are left out."""
    mu, pm = load_pair(name, floating)
    pm = pm.copy()
    pm.armature = np.linspace(0.01, 0.02, pm.nv)
    if not pb.supports_actuation():
        with pytest.warns(UserWarning, match="no actuation fields.*armature.*left out"):
            pb.from_pinocchio(pm)
        return
    m = pb.from_pinocchio(pm)
    maps = pb.pinocchio_maps(m, pm)
    assert np.array_equal(maps.v_to_pin(m.armature), pm.armature)
    assert np.array_equal(maps.v_to_pin(m.damping), pm.damping)
    assert np.array_equal(maps.v_to_pin(m.friction), pm.friction)
    for i, jn in enumerate(m.joint_names):      # limits as symdyn's URDF loader reads them
        k = mu.joint_names.index(jn)
        (a, b), (c, d) = m.q_idx[i], mu.q_idx[k]
        (va, vb), (vc, vd) = m.v_idx[i], mu.v_idx[k]
        assert np.array_equal(m.limits.lower[a:b], mu.limits.lower[c:d]), jn
        assert np.array_equal(m.limits.upper[a:b], mu.limits.upper[c:d]), jn
        assert np.array_equal(m.limits.velocity[va:vb], mu.limits.velocity[vc:vd]), jn
        assert np.array_equal(m.limits.effort[va:vb], mu.limits.effort[vc:vd]), jn
    # the armature is part of the dynamics on both sides
    assert max(compare(m, pm, maps)) < TOL
    pm2 = pb.to_pinocchio(m)
    maps2 = pb.pinocchio_maps(m, pm2)
    assert np.array_equal(maps2.v_from_pin(pm2.armature), m.armature)
    back = pb.from_pinocchio(pm2)               # model -> pin -> model keeps them, joint by joint
    for i, jn in enumerate(back.joint_names):
        k = m.joint_names.index(jn)
        for f, idx in (("lower", "q_idx"), ("upper", "q_idx"), ("velocity", "v_idx"),
                       ("effort", "v_idx")):
            (a, b), (c, d) = getattr(back, idx)[i], getattr(m, idx)[k]
            assert np.array_equal(getattr(back.limits, f)[a:b], getattr(m.limits, f)[c:d]), (jn, f)
        (a, b), (c, d) = back.v_idx[i], m.v_idx[k]
        assert np.array_equal(back.armature[a:b], m.armature[c:d]), jn


def test_name_clash_is_reported_not_silent():
    _, pm = load_pair("z1", False)
    # z1's fixed joint 'gripperStator' and its child link 'gripperStator': a fixed joint and its
    # link, one frame, no clash (as load_urdf reads it)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = pb.from_pinocchio(pm)
    assert not [w for w in caught if "frames left out" in str(w.message)]
    assert m.fixed_joints["gripperStator"] == "gripperStator"
    # an OP frame named like a link is left out, with a warning naming it
    pm.addFrame(pin.Frame("gripperStator", pm.getJointId("joint6"), 0,
                          pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), pin.FrameType.OP_FRAME),
                False)
    with pytest.warns(UserWarning, match="'gripperStator' \\(OP_FRAME on joint 'joint6'\\)"):
        m = pb.from_pinocchio(pm)
    assert "gripperStator" in m.frames        # the link keeps the name
    assert np.array_equal(m.frames["gripperStator"].X.r, pm.frames[pm.getFrameId(
        "gripperStator", pin.FrameType.BODY)].placement.translation)


def every_joint_pin_model():
    """A hand-built Pinocchio model with every supported joint type, a composite joint and
    OP frames."""
    pm = pin.Model()
    pm.name = "every_joint"
    pm.gravity = pin.Motion(np.array([0.1, -0.2, -9.8]), np.zeros(3))
    rng = np.random.default_rng(5)

    def placement():
        return pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3))

    def inertia():  # physical: principal moments a+b, b+c, a+c
        a, b, c = rng.uniform(0.01, 0.1, 3)
        R = pin.exp3(rng.normal(size=3))
        return pin.Inertia(float(rng.uniform(0.5, 2)), rng.normal(size=3) * 0.1,
                           R @ np.diag([a + b, b + c, a + c]) @ R.T)

    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    comp = pin.JointModelComposite()
    comp.addJoint(pin.JointModelRY(), placement())
    comp.addJoint(pin.JointModelPZ(), placement())
    specs = [(0, pin.JointModelFreeFlyer(), "free"), (1, pin.JointModelRX(), "rx"),
             (2, pin.JointModelRevoluteUnaligned(axis), "runaligned"),
             (2, pin.JointModelRUBZ(), "rubz"), (4, pin.JointModelPY(), "py"),
             (1, pin.JointModelPrismaticUnaligned(axis), "punaligned"),
             (6, pin.JointModelHX(0.3), "hx"),
             (7, pin.JointModelHelicalUnaligned(axis, -0.2), "hun"),
             (1, pin.JointModelSpherical(), "ball"), (9, comp, "comp")]
    for parent, jm, name in specs:
        jid = pm.addJoint(parent, jm, placement(), name)
        pm.appendBodyToJoint(jid, inertia(), pin.SE3.Identity())
        fid = pm.addJointFrame(jid, 0)
        pm.addBodyFrame(f"{name}_link", jid, pin.SE3.Identity(), fid)
    pm.addFrame(pin.Frame("tool", 8, placement(), pin.FrameType.OP_FRAME))
    pm.addFrame(pin.Frame("world_marker", 0, placement(), pin.FrameType.OP_FRAME))
    return pm


def test_from_pinocchio_every_joint_type_and_round_trip():
    pm = every_joint_pin_model()
    m = pb.from_pinocchio(pm)
    kinds = [type(j) for j in m.joints]
    assert kinds == [Floating, Revolute, Revolute, Revolute, Prismatic, Prismatic, Helical, Helical,
                     Spherical, Revolute, Prismatic]
    assert m.joint_names[-2:] == ("comp/0", "comp/1")       # the composite joint as a chain
    assert m.names[-2:] == ("comp_link/0", "comp_link")
    assert m.joints[6].pitch == pytest.approx(0.3) and m.joints[7].pitch == pytest.approx(-0.2)
    maps = pb.pinocchio_maps(m, pm)
    assert maps.cos_sin == [False, False, False, True] + [False] * 7
    for seed in range(3):
        assert max(compare(m, pm, maps, seed)) < TOL
    # frames: OP frames on a body and on the world, placements as Pinocchio's
    pd = pm.createData()
    q, _, _ = random_state(m, 4)
    pin.framesForwardKinematics(pm, pd, maps.q_to_pin(q))
    for fname in ("tool", "world_marker", "hx_link"):
        R, p = sd.frame_placement(m, q, fname)
        fid = pm.getFrameId(fname)
        assert np.allclose(R, pd.oMf[fid].rotation, atol=1e-12)
        assert np.allclose(p, pd.oMf[fid].translation, atol=1e-12)
    # model -> pin -> model: equal constants
    back = pb.from_pinocchio(pb.to_pinocchio(m))
    assert_same_model(back, m)


def assert_same_model(a: Model, b: Model, tol: float = 1e-12) -> None:
    assert a.names == b.names and a.parents == b.parents and a.joint_names == b.joint_names
    for ja, jb in zip(a.joints, b.joints):
        assert type(ja) is type(jb)
        if hasattr(ja, "axis"):
            assert np.allclose(ja.axis, jb.axis, atol=tol)
        assert getattr(ja, "pitch", 0) == pytest.approx(getattr(jb, "pitch", 0), abs=tol)
    assert np.allclose(np.asarray(a.gravity, float), np.asarray(b.gravity, float), atol=tol)
    for Xa, Xb, Ia, Ib in zip(a.Xtree, b.Xtree, a.I, b.I):
        assert np.allclose(np.asarray(Xa.E, float), np.asarray(Xb.E, float), atol=tol)
        assert np.allclose(np.asarray(Xa.r, float), np.asarray(Xb.r, float), atol=tol)
        assert np.allclose(np.asarray(Ia, float), np.asarray(Ib, float), atol=tol)
    assert set(a.frames) == set(b.frames)
    for n, fa in a.frames.items():
        fb = b.frames[n]
        assert fa.body == fb.body, n
        assert np.allclose(np.asarray(fa.X.E, float), np.asarray(fb.X.E, float), atol=tol), n
        assert np.allclose(np.asarray(fa.X.r, float), np.asarray(fb.X.r, float), atol=tol), n


@pytest.mark.parametrize("tree_name", ["serial", "branched", "random", "floating"])
def test_model_to_pinocchio_and_back(tree_name):
    from conftest import MODELS

    m = MODELS[tree_name]
    pm = pb.to_pinocchio(m)
    assert [f.name for f in pm.frames if f.type == pin.FrameType.BODY] == \
        [m.names[i] for i in pb.pinocchio_order(m)] + [n for n in m.frames if n not in m.names]
    back = pb.from_pinocchio(pm)
    order = pb.pinocchio_order(m)
    assert back.names == tuple(m.names[i] for i in order)
    assert_same_model(back, _reordered(m, order))
    maps = pb.pinocchio_maps(m, pm)
    assert max(compare(m, pm, maps)) < TOL
    # the default (to_pinocchio) maps of the module-level functions agree with the name maps
    q, v, _ = random_state(m, 1)
    assert np.array_equal(pb.q_to_pin(m, q), maps.q_to_pin(q))
    assert np.array_equal(pb.v_to_pin(m, v), maps.v_to_pin(v))
    assert np.array_equal(pb.q_from_pin(m, pb.q_to_pin(m, q)), q)


def test_model_with_fixed_links_round_trips_its_frames():
    """Fixed links (merged bodies) and a frame on the world survive model -> pin -> model."""
    I3 = np.diag([0.1, 0.2, 0.25])
    X = Transform(np.array([[0.0, 1, 0], [-1, 0, 0], [0, 0, 1]]), np.array([0.1, 0.2, 0.3]))
    bodies = [Body("base_marker", None, sd.joints.Fixed(), 0.0, (0, 0, 0), np.zeros((3, 3)), X),
              Body("a", None, Revolute("z"), 1.0, (0.1, 0, 0), I3, X, joint_name="ja"),
              Body("tool", "a", sd.joints.Fixed(), 0.5, (0, 0.1, 0), I3, X),
              Body("b", "tool", Helical((0, 0.6, 0.8), pitch=0.05), 2.0, (0, 0, 0.2), I3, X,
                   joint_name="jb")]
    m = Model(bodies, check_inertias="semidefinite", allow_massless=True)
    back = pb.from_pinocchio(pb.to_pinocchio(m))
    assert set(back.frames) == {"base_marker", "a", "tool", "b"}
    assert back.frames["base_marker"].body == -1
    assert_same_model(back, m)


def _reordered(m: Model, order: list[int]) -> Model:
    """``m`` with its bodies renumbered in ``order`` (same bodies, joints and frames)."""
    bodies = []
    for i in order:
        p = m.parents[i]
        mass, com, Ic = sd.model.mass_com_inertia(np.asarray(m.I[i], float))
        bodies.append(Body(m.names[i], None if p < 0 else m.names[p], m.joints[i], mass, com, Ic,
                           m.Xtree[i], joint_name=m.joint_names[i]))
    for n, f in m.frames.items():
        if n not in m.names:
            bodies.append(Body(n, None if f.body < 0 else m.names[f.body], sd.joints.Fixed(), 0.0,
                               (0, 0, 0), np.zeros((3, 3)), f.X))
    return Model(bodies, gravity=m.gravity, name=m.name, check_inertias=False, allow_massless=True)


# --- 3. refusals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("make,short", [
    (lambda: pin.JointModelPlanar(), "JointModelPlanar"),
    (lambda: pin.JointModelSphericalZYX(), "JointModelSphericalZYX"),
    (lambda: pin.JointModelTranslation(), "JointModelTranslation"),
    (lambda: pin.JointModelUniversal(np.array([1.0, 0, 0]), np.array([0, 1.0, 0])),
     "JointModelUniversal"),
])
def test_unsupported_pinocchio_joints_are_refused_by_name(make, short):
    pm = pin.Model()
    jid = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "fine")
    pm.appendBodyToJoint(jid, pin.Inertia(1.0, np.zeros(3), np.eye(3)), pin.SE3.Identity())
    jid = pm.addJoint(jid, make(), pin.SE3.Identity(), "odd_joint")
    pm.appendBodyToJoint(jid, pin.Inertia(1.0, np.zeros(3), np.eye(3)), pin.SE3.Identity())
    with pytest.raises(pb.PinocchioConversionError, match=f"'odd_joint' \\({short}\\)"):
        pb.from_pinocchio(pm)


def test_planar_symdyn_joint_is_refused_by_to_pinocchio():
    m = Model([Body("p", None, sd.joints.Planar(), joint_name="slider_plane")])
    with pytest.raises(pb.PinocchioConversionError, match="'slider_plane'.*'planar'"):
        pb.to_pinocchio(m)


# --- 4. MJCF through Pinocchio's parser -----------------------------------------------------------

def test_mjcf_through_pinocchio_parser():
    """pinocchio.buildModelFromMJCF makes composite joints of bodies with several joints; they
    become chains, and the dynamics match Pinocchio's (armature included where the Model has
    the field)."""
    from pathlib import Path

    data = Path(__file__).parent / "data"
    for f in ("mj_slides.xml", "mj_arm.xml"):
        pm = pin.buildModelFromMJCF(str(data / f))
        if not pb.supports_actuation():      # the armature would be left out (with a warning)
            pm.armature = np.zeros(pm.nv)
        m = pb.from_pinocchio(pm)
        maps = pb.pinocchio_maps(m, pm)
        assert any("/" in jn for jn in m.joint_names)     # a composite joint became a chain
        assert max(compare(m, pm, maps)) < TOL


def test_top_level_exports():
    assert sd.from_pinocchio is pb.from_pinocchio and sd.to_pinocchio is pb.to_pinocchio
    assert {"from_pinocchio", "to_pinocchio"} <= set(sd.__all__)


def test_pinocchio_mimic_joints_are_refused_with_the_alternative():
    try:
        pm = pin.buildModelFromUrdf(str(robot_urdf("panda")), mimic=True)
    except TypeError:
        pytest.skip("this Pinocchio has no mimic=True")
    if not any(j.shortname() == "JointModelMimic" for j in pm.joints):
        pytest.skip("this Pinocchio builds no mimic joints")
    with pytest.raises(pb.PinocchioConversionError,
                       match=r"'panda_finger_joint2' \(JointModelMimic\).*mimic=False"):
        pb.from_pinocchio(pm)


def test_non_physical_inertia_is_named_with_the_way_out():
    pm = pin.Model()
    jid = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "j1")
    bad = pin.Inertia.Zero()
    bad.mass = 1.0
    bad.inertia = np.diag([1.0, 0.1, 0.1])        # violates the triangle inequality
    pm.appendBodyToJoint(jid, bad, pin.SE3.Identity())
    with pytest.raises(pb.PinocchioConversionError,
                       match=r"body 'j1'.*triangle.*check_inertias=False"):
        pb.from_pinocchio(pm)
    m = pb.from_pinocchio(pm, check_inertias=False)
    assert np.allclose(np.asarray(m.I[0])[:3, :3], np.diag([1.0, 0.1, 0.1]))
