"""Models with no moving joint (issue 46): an MJCF whose bodies are all welded to the world (as
dm_control's lqr.xml before its generator adds joints), an MJCF of assets only (MuJoCo's
testdata/msh.xml), a URDF of fixed joints and a Model of fixed bodies load with nq = nv = 0, as
Pinocchio's URDF parser builds them; the algorithms give empty results and the frames their
placements (checked against MuJoCo's and Pinocchio's kinematics).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import symdyn as sd
from symdyn.joints import Fixed
from symdyn.model import Body, Model
from symdyn.spatial import Transform

STATIC_MJCF = """<mujoco model="static_scene">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <light name="light" pos="0 0 6"/>
    <camera name="fixed" pos="0 -6 2" zaxis="0 -1 0.3"/>
    <geom name="floor" type="plane" size="3 3 0.2"/>
    <site name="origin_mark" pos="0.1 0.2 0"/>
    <body name="post" pos="0 0 0.5" euler="0 20 40">
      <geom type="capsule" size="0.05 0.3" mass="2"/>
      <site name="top" pos="0 0 0.3" euler="10 0 0"/>
      <body name="arm" pos="0.2 0 0.3" quat="0.9 0.1 0.3 0.2">
        <geom type="box" size="0.1 0.05 0.02"/>
        <site name="tip" pos="0.1 0.02 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

FIXED_URDF = """<robot name="fixed_only">
  <link name="base"><inertial><mass value="2"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0 0 0.2"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"/>
  <joint name="base_to_arm" type="fixed"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.5" rpy="0.1 0.2 0.3"/></joint>
  <joint name="arm_to_tool" type="fixed"><parent link="arm"/><child link="tool"/>
    <origin xyz="0.1 0 0.3" rpy="0 -0.4 1.0"/></joint>
</robot>"""


def assert_empty_dynamics(model):
    """nq = nv = 0, and crba 0 x 0, rnea / aba / gravity empty, on numpy and CasADi."""
    assert (model.N, model.nq, model.nv) == (0, 0, 0)
    q = model.neutral()
    assert q.shape == (0,) and model.random_q(0).shape == (0,)
    e = np.zeros(0)
    assert np.shape(sd.crba(model, q)) == (0, 0)
    assert np.shape(sd.rnea(model, q, e, e)) == (0,)
    assert np.shape(sd.aba(model, q, e, e)) == (0,)
    assert np.shape(sd.gravity_vector(model, q)) == (0,)
    assert sd.crba(model, q, backend="casadi").shape == (0, 0)
    assert sd.rnea(model, q, e, e, backend="casadi").shape[0] == 0


def test_mjcf_with_every_body_welded_loads_with_nv_0():
    mujoco = pytest.importorskip("mujoco")
    from symdyn import mujoco_bridge as mb

    with warnings.catch_warnings():
        warnings.simplefilter("error")             # nothing is left out
        model = mb.load_mjcf(STATIC_MJCF)
    mj = mujoco.MjModel.from_xml_string(STATIC_MJCF)
    assert (mj.nq, mj.nv) == (0, 0)
    assert_empty_dynamics(model)
    assert np.allclose(model.gravity, [0, 0, -9.81])
    d = mujoco.MjData(mj)
    mujoco.mj_kinematics(mj, d)
    q = model.neutral()
    for b in range(mj.nbody):                      # the world body included
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, b)
        R, p = sd.frame_placement(model, q, name)
        assert np.allclose(R, d.xmat[b].reshape(3, 3), atol=1e-12), name
        assert np.allclose(p, d.xpos[b], atol=1e-12), name
    for s in range(mj.nsite):
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SITE, s)
        R, p = sd.frame_placement(model, q, name)
        assert np.allclose(R, d.site_xmat[s].reshape(3, 3), atol=1e-12), name
        assert np.allclose(p, d.site_xpos[s], atol=1e-12), name
    assert np.allclose(sd.frame_placement(model, q, "tip")[1], d.site_xpos[2])
    assert not np.allclose(d.site_xpos[2], 0.0)     # a real placement, not the world origin
    maps = mb.mujoco_maps(model, mj)                # the maps are the empty maps
    assert maps.q_to_mj(q).shape == (0,) and maps.velocity_matrix(d.qpos).shape == (0, 0)
    mujoco.mj_inverse(mj, d)
    assert maps.f_to_mj(sd.rnea(model, q, q, q), q).shape == d.qfrc_inverse.shape == (0,)


def test_mjcf_of_assets_only_loads_with_the_world_frame():
    """MuJoCo's testdata/msh.xml (a mesh asset, no body) and an empty <mujoco/>."""
    mujoco = pytest.importorskip("mujoco")
    from symdyn import mujoco_bridge as mb

    msh = Path(mujoco.__file__).parent / "testdata" / "msh.xml"
    sources = ["<mujoco/>"] + ([msh] if msh.is_file() else [])
    for src in sources:
        model = mb.load_mjcf(src)
        assert_empty_dynamics(model)
        assert list(model.frames) == ["world"]
        R, p = sd.frame_placement(model, model.neutral(), "world")
        assert np.array_equal(R, np.eye(3)) and np.array_equal(p, np.zeros(3))


def test_mjcf_world_frame_in_a_model_with_joints():
    pytest.importorskip("mujoco")
    from symdyn import mujoco_bridge as mb

    model = mb.load_mjcf(STATIC_MJCF.replace('<geom type="box" size="0.1 0.05 0.02"/>',
                                             '<joint name="h"/><geom type="box" '
                                             'size="0.1 0.05 0.02"/>'))
    assert model.nv == 1 and "world" in model.frames
    R, p = sd.frame_placement(model, model.random_q(1), "world")
    assert np.array_equal(R, np.eye(3)) and np.array_equal(p, np.zeros(3))


def test_urdf_with_only_fixed_joints_matches_pinocchio(tmp_path):
    """Pinocchio's buildModelFromXML / buildModelFromUrdf give nq = nv = 0 (only the universe
    joint); symdyn's model is empty too, every link sits where Pinocchio's frame does, and
    from_pinocchio / to_pinocchio convert the empty models. With a floating base both have
    nv = 6."""
    pin = pytest.importorskip("pinocchio")
    model = sd.load_urdf(FIXED_URDF)
    path = tmp_path / "fixed_only.urdf"
    path.write_text(FIXED_URDF)
    for pm in (pin.buildModelFromXML(FIXED_URDF), pin.buildModelFromUrdf(str(path))):
        assert (pm.nq, pm.nv) == (model.nq, model.nv) == (0, 0)
    assert_empty_dynamics(model)
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, np.zeros(0))
    q = model.neutral()
    for link in ("base", "arm", "tool"):
        R, p = sd.frame_placement(model, q, link)
        f = pm.getFrameId(link)
        assert np.allclose(R, pd.oMf[f].rotation, atol=1e-12), link
        assert np.allclose(p, pd.oMf[f].translation, atol=1e-12), link
    assert not np.allclose(sd.frame_placement(model, q, "tool")[0], np.eye(3))
    back = sd.from_pinocchio(pm)                 # Pinocchio's empty model converts both ways
    assert (back.nq, back.nv) == (0, 0) and sd.to_pinocchio(model).nv == 0
    for link in ("base", "arm", "tool"):
        for a, b in zip(sd.frame_placement(back, q, link), sd.frame_placement(model, q, link)):
            assert np.allclose(a, b, atol=1e-12), link
    floating = sd.load_urdf(FIXED_URDF, floating_base=True)
    pmf = pin.buildModelFromXML(FIXED_URDF, pin.JointModelFreeFlyer())
    assert (floating.nq, floating.nv) == (pmf.nq, pmf.nv) == (7, 6)


def test_model_of_fixed_bodies_is_empty():
    X = Transform(np.eye(3), np.array([0.0, 0.0, 1.0]))
    model = Model([Body("base", None, Fixed(), 1.0, np.zeros(3), 0.1 * np.eye(3), X),
                   Body("cam", "base", Fixed(), 0.1, np.zeros(3), 1e-3 * np.eye(3),
                        Transform(np.eye(3), np.array([0.0, 0.5, 0.0])))])
    assert_empty_dynamics(model)
    assert model.d == 0 and not model.is_floating
    R, p = sd.frame_placement(model, [], "cam")
    assert np.array_equal(R, np.eye(3)) and np.allclose(p, [0.0, 0.5, 1.0])
    assert "nv=0" in repr(model)
