"""MJCF through MuJoCo (issue 13, section 5): ``load_mjcf`` / ``from_mujoco`` and the maps of
``mujoco_maps``, checked against MuJoCo's ``mj_fullM`` and ``mj_inverse`` on the MJCF files of
tests/data (hinge arm; slide tree; floating humanoid with free, ball, hinge and slide joints) and on
the model that ships with the mujoco package (free joints, bodies with two joints, a ball joint,
tendons, actuators, an equality constraint), and against MuJoCo's body and site poses and body
velocities. Skipped without ``mujoco`` (the optional extra ``symdyn[mujoco]``).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import symdyn as sd  # noqa: E402
from symdyn.interop import mujoco as mb  # noqa: E402

DATA = Path(__file__).parent / "data"
TOL = 1e-10
FILES = sorted(DATA.glob("mj_*.xml"))
SHIPPED = Path(mujoco.__file__).parent / "testdata" / "model.xml"
SOURCES = [str(f) for f in FILES] + ([str(SHIPPED)] if SHIPPED.is_file() else [])


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def rigid_body_only(mj):
    """Switch off what is not rigid-body tree dynamics: constraints (contacts, limits, equality),
    springs, dampers, actuators, fluid forces, gravity compensation."""
    D = mujoco.mjtDisableBit
    mj.opt.disableflags |= int(D.mjDSBL_CONSTRAINT | D.mjDSBL_SPRING | D.mjDSBL_DAMPER
                               | D.mjDSBL_ACTUATION)
    mj.opt.density = 0.0
    mj.opt.viscosity = 0.0
    mj.opt.wind[:] = 0.0
    mj.body_gravcomp[:] = 0.0
    return mj


def full_mass_matrix(mj, d) -> np.ndarray:
    M = np.zeros((mj.nv, mj.nv))
    try:
        mujoco.mj_fullM(mj, d, M)            # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(mj, M, d.qM)         # MuJoCo 2.x / 3.x
    return M


def armature_in_model(model) -> bool:
    return bool(np.any(np.asarray(getattr(model, "armature", np.zeros(1)), float) != 0))


_cache: dict = {}


def load(src: str):
    if src not in _cache:
        mj = rigid_body_only(mujoco.MjModel.from_xml_path(src))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.MJCFWarning)
            model = mb.from_mujoco(mj, source=src)
        _cache[src] = (model, mj, mb.mujoco_maps(model, mj))
    return _cache[src]


@pytest.mark.parametrize("src", SOURCES, ids=[Path(s).stem for s in SOURCES])
def test_mass_matrix_and_inverse_dynamics_match_mujoco(src):
    """crba against mj_fullM and rnea against mj_inverse (MuJoCo coordinates through the maps);
    the armature, which the model carries only where the Model has the field, is taken off
    MuJoCo's side otherwise."""
    model, mj, maps = load(src)
    d = mujoco.MjData(mj)
    arm = 0.0 if armature_in_model(model) else maps.armature
    for seed in range(3):
        rng = np.random.default_rng(seed)
        q, v, a = model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        d.qpos[:], d.qvel[:] = maps.q_to_mj(q), maps.v_to_mj(v, q)
        d.qacc[:] = maps.a_to_mj(a, q, v)
        mujoco.mj_forward(mj, d)
        M = full_mass_matrix(mj, d) - np.diag(np.broadcast_to(arm, (mj.nv,)))
        assert rel(maps.matrix_to_mj(sd.crba(model, q), q), M) < TOL
        assert rel(sd.crba(model, q), maps.matrix_from_mj(M, d.qpos)) < TOL
        d.qacc[:] = maps.a_to_mj(a, q, v)
        mujoco.mj_inverse(mj, d)
        tau_mj = d.qfrc_inverse - arm * d.qacc
        assert rel(maps.f_to_mj(sd.rnea(model, q, v, a), q), tau_mj) < TOL
        assert rel(sd.rnea(model, q, v, a), maps.f_from_mj(tau_mj, d.qpos)) < TOL


@pytest.mark.parametrize("src", SOURCES, ids=[Path(s).stem for s in SOURCES])
def test_poses_and_velocities_match_mujoco(src):
    """Every MuJoCo body and named site is a frame of the model at MuJoCo's pose, and the body
    frames' velocities (mj_objectVelocity of mjOBJ_XBODY, local axes) equal symdyn's frame
    velocities: this pins down the free-joint ([v_world; omega_local]) and ball-joint
    (omega_local) velocity conventions."""
    model, mj, maps = load(src)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(7)
    q, v = model.random_q(rng), rng.normal(size=model.nv)
    d.qpos[:], d.qvel[:] = maps.q_to_mj(q), maps.v_to_mj(v, q)
    mujoco.mj_forward(mj, d)
    res = np.zeros(6)
    for b in range(1, mj.nbody):
        name = mb._body_name(mj, b)
        link = f"link:{name}"  # MuJoCo names bodies and joints apart ("wheel_1" is both here)
        R, p = sd.frame_placement(model, q, link)
        assert np.allclose(R, d.xmat[b].reshape(3, 3), atol=1e-12), name
        assert np.allclose(p, d.xpos[b], atol=1e-12), name
        mujoco.mj_objectVelocity(mj, d, mujoco.mjtObj.mjOBJ_XBODY, b, res, 1)  # body frame, local
        assert np.allclose(sd.frame_velocity(model, q, v, link, reference="local"), res,
                           atol=1e-10), name
    body_names = {mb._body_name(mj, b) for b in range(1, mj.nbody)}
    for s in range(mj.nsite):
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SITE, s)
        if not name:
            continue
        if name in body_names:   # MuJoCo names sites and bodies apart; symdyn renames the site
            name = f"site:{name}"
        R, p = sd.frame_placement(model, q, model.frames[name])  # (a joint may share the name)
        assert np.allclose(R, d.site_xmat[s].reshape(3, 3), atol=1e-12), name
        assert np.allclose(p, d.site_xpos[s], atol=1e-12), name


@pytest.mark.parametrize("src", SOURCES, ids=[Path(s).stem for s in SOURCES])
def test_maps_round_trip(src):
    model, mj, maps = load(src)
    rng = np.random.default_rng(3)
    q, v, a = model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    qpos = maps.q_to_mj(q)
    assert np.allclose(maps.q_from_mj(qpos), q, atol=1e-14)
    qvel = maps.v_to_mj(v, q)
    assert np.allclose(maps.v_from_mj(qvel, qpos), v, atol=1e-14)
    assert np.allclose(maps.a_from_mj(maps.a_to_mj(a, q, v), qpos, qvel), a, atol=1e-14)
    T = maps.velocity_matrix(qpos)
    assert np.allclose(T @ T.T, np.eye(model.nv), atol=1e-14)     # orthogonal


def test_joint_conventions():
    """hinge/slide coordinates equal qpos (MuJoCo moves by qpos - ref; the tree transform holds
    -ref); quaternions (w, x, y, z) -> (x, y, z, w); the free joint's linear velocity is in world
    axes, its angular velocity in body axes."""
    model, mj, maps = load(str(DATA / "mj_arm.xml"))
    j = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, "shoulder")
    qpos = np.asarray(mj.qpos0, float).copy()
    assert qpos[mj.jnt_qposadr[j]] == pytest.approx(np.radians(0.3))   # ref="0.3" (degrees)
    assert np.array_equal(maps.q_from_mj(qpos), qpos)
    d = mujoco.MjData(mj)                         # at qpos0 = ref: the pose written in the XML
    mujoco.mj_kinematics(mj, d)
    for b in range(1, mj.nbody):
        R, p = sd.frame_placement(model, qpos, mb._body_name(mj, b))
        assert np.allclose(R, d.xmat[b].reshape(3, 3), atol=1e-12)
        assert np.allclose(p, d.xpos[b], atol=1e-12)
    model, mj, maps = load(str(DATA / "mj_humanoid.xml"))
    assert [type(jt).__name__ for jt in model.joints] == [
        "Floating", "Spherical", "Revolute", "Spherical", "Revolute", "Spherical", "Prismatic",
        "Revolute", "Floating"]
    q = model.neutral()
    q[3:7] = [0.1, 0.2, 0.3, np.sqrt(1 - 0.14)]                 # torso quaternion (x, y, z, w)
    qpos = maps.q_to_mj(q)
    assert np.allclose(qpos[3:7], [np.sqrt(1 - 0.14), 0.1, 0.2, 0.3])
    v = np.zeros(model.nv)
    v[3:6] = [1.0, 0.0, 0.0]                                     # body-frame linear velocity
    R = sd.frame_placement(model, q, "torso")[0]
    assert np.allclose(maps.v_to_mj(v, q)[:3], R @ [1.0, 0.0, 0.0])   # world frame in MuJoCo
    v[:] = 0
    v[0:3] = [0.0, 0.0, 2.0]                                     # body angular velocity
    assert np.allclose(maps.v_to_mj(v, q)[3:6], [0.0, 0.0, 2.0])


def test_bodies_with_several_joints_become_chains():
    model = sd.load_mjcf(DATA / "mj_slides.xml")
    assert model.joint_names == ("rail", "lift_z", "lift_turn", "arm_slide", "stage_x", "stage_y")
    assert model.names[1:3] == ("lift/lift_z", "lift/lift_turn")
    assert "lift" in model.frames and "mast" in model.frames      # body frame and welded body
    assert float(np.asarray(model.I[1])[3, 3]) == 0.0               # intermediate body: massless


def test_shipped_model_warns_about_what_it_leaves_out():
    if not SHIPPED.is_file():
        pytest.skip("the mujoco package ships no testdata/model.xml")
    with pytest.warns(mb.MJCFWarning) as rec:
        sd.load_mjcf(SHIPPED)
    text = " ".join(str(w.message) for w in rec)
    assert str(SHIPPED) in text
    for what in ("equality constraints", "tendons (spatial, fixed)", "actuators", "joint stiffness",
                 "gravity compensation", "'head' -> 'site:head'"):
        assert what in text, what
    with pytest.raises(mb.MJCFError, match="left out of the symdyn model.*strict=True"):
        sd.load_mjcf(SHIPPED, strict=True)


def test_clean_model_loads_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = sd.load_mjcf(DATA / "mj_slides.xml")
    assert model.name == "mj_slides" and np.allclose(model.gravity, [0, 0, -9.81])


def test_errors_name_the_file_element_and_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="MJCF file not found"):
        sd.load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(mb.MJCFError, match="the source is empty"):          # not the directory "."
        sd.load_mjcf(" ")
    bad = tmp_path / "bad_joint.xml"
    bad.write_text('<mujoco><worldbody><body name="b"><joint name="j" type="screw"/>'
                   '<geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(mb.MJCFError, match=r"bad_joint\.xml: MuJoCo could not compile it: .*screw"):
        sd.load_mjcf(bad)
    nested = tmp_path / "nested_free.xml"
    nested.write_text('<mujoco><worldbody><body name="a"><joint name="h"/><geom size="0.1"/>'
                      '<body name="b"><freejoint name="f"/><geom size="0.1"/></body></body>'
                      '</worldbody></mujoco>')
    # MuJoCo refuses a free joint below the top level; if a version accepts it, symdyn refuses it
    with pytest.raises(mb.MJCFError, match=r"nested_free\.xml: .*(free|body 'b')"):
        sd.load_mjcf(nested)
    with pytest.raises(mb.MJCFError, match="<MJCF string>: MuJoCo could not compile it"):
        sd.load_mjcf("<mujoco><worldbody><body></mujoco>")


def test_maps_refuse_another_model():
    model, _, _ = load(str(DATA / "mj_arm.xml"))
    _, mj, _ = load(str(DATA / "mj_slides.xml"))
    with pytest.raises(mb.MJCFError, match="sizes differ|is not a joint"):
        mb.mujoco_maps(model, mj)


def test_actuation_data_is_copied_or_reported():
    """Armature, damping, joint range (in qpos units) and a symmetric actuator-force range reach the
    Model where it has these fields; otherwise the warning names them."""
    from symdyn.interop.pinocchio import supports_actuation

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", mb.MJCFWarning)
        model = sd.load_mjcf(DATA / "mj_arm.xml")
    text = " ".join(str(w.message) for w in rec)
    if not supports_actuation():
        for what in ("dof_armature on 5", "joint damping on 5", "joint ranges of 1"):
            assert what in text, what
        return
    assert not rec, text
    assert np.allclose(model.armature, 0.01) and np.allclose(model.damping, 0.5)
    i = model.joint_names.index("shoulder")
    a = model.q_idx[i][0]
    assert model.limits.lower[a] == pytest.approx(np.radians(-90))
    assert model.limits.upper[a] == pytest.approx(np.radians(60))
    assert model.limits.effort[model.v_idx[model.joint_names.index("elbow")][0]] == 20.0
    assert np.isinf(model.limits.lower[model.q_idx[0][0]])       # 'yaw' has no range


def test_top_level_exports():
    from symdyn.io.mjcf import load_mjcf

    assert sd.load_mjcf is load_mjcf and sd.io.load_mjcf is load_mjcf
    assert sd.from_mujoco is mb.from_mujoco and sd.interop.from_mujoco is mb.from_mujoco
    assert {"load_mjcf", "from_mujoco"} <= set(sd.__all__)


@pytest.mark.parametrize("stem", ["mj_arm", "mj_slides"])
def test_same_dynamics_as_pinocchio_mjcf_parser(stem):
    """The same MJCF through MuJoCo (load_mjcf) and through Pinocchio's parser (from_pinocchio of
    pinocchio.buildModelFromMJCF): equal mass matrices and gravity torques at the same q (q = qpos
    in both). Pinocchio's parser keeps its default gravity instead of <option gravity>, so the
    gravity is taken from the MuJoCo model; it also merges a body's joints into a composite joint
    (a chain here) and, on mj_humanoid, leaves out the second free-floating body."""
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop.pinocchio import from_pinocchio

    path = str(DATA / f"{stem}.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = sd.load_mjcf(path)
        b = from_pinocchio(pin.buildModelFromMJCF(path)).replace(gravity=a.gravity)
    assert (a.nq, a.nv) == (b.nq, b.nv)
    for seed in range(3):
        q = a.random_q(seed)
        assert rel(sd.crba(b, q), sd.crba(a, q)) < TOL
        assert rel(sd.gravity_vector(b, q), sd.gravity_vector(a, q)) < TOL


def test_asymmetric_actuator_force_range_is_reported(tmp_path):
    f = tmp_path / "asym.xml"
    f.write_text('<mujoco><worldbody><body name="b"><joint name="j" axis="0 0 1" '
                 'actuatorfrclimited="true" actuatorfrcrange="-1 2"/><geom size="0.1"/></body>'
                 '</worldbody></mujoco>')
    with pytest.warns(mb.MJCFWarning, match=r"asym\.xml.*actuator-force ranges of joints \['j'\]"):
        model = sd.load_mjcf(f)
    assert np.all(np.isinf(np.asarray(getattr(model, "limits", (0, 0, 0, [np.inf]))[3])))
