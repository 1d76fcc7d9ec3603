"""Models with no moving joint (issue 46): an MJCF whose bodies are all welded to the world (as
dm_control's lqr.xml before its generator adds joints), an MJCF of assets only (MuJoCo's
testdata/msh.xml), a URDF of fixed joints and a Model of fixed bodies load with nq = nv = 0, as
Pinocchio's URDF parser builds them; the algorithms give empty results and the frames their
placements (checked against MuJoCo's and Pinocchio's kinematics).
"""
from __future__ import annotations

import importlib.util
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
    from symdyn.interop import mujoco as mb

    with warnings.catch_warnings():
        warnings.simplefilter("error")             # nothing is left out
        model = sd.load_mjcf(STATIC_MJCF)
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
    from symdyn.interop import mujoco as mb

    msh = Path(mujoco.__file__).parent / "testdata" / "msh.xml"
    sources = ["<mujoco/>"] + ([msh] if msh.is_file() else [])
    for src in sources:
        model = sd.load_mjcf(src)
        assert_empty_dynamics(model)
        assert list(model.frames) == ["world"]
        R, p = sd.frame_placement(model, model.neutral(), "world")
        assert np.array_equal(R, np.eye(3)) and np.array_equal(p, np.zeros(3))


def test_mjcf_world_frame_in_a_model_with_joints():
    pytest.importorskip("mujoco")
    from symdyn.interop import mujoco as mb

    model = sd.load_mjcf(STATIC_MJCF.replace('<geom type="box" size="0.1 0.05 0.02"/>',
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


# --- every backend ---------------------------------------------------------------------------------

HAVE = {b: importlib.util.find_spec(b) is not None for b in ("symengine", "jax")}
BACKENDS = [pytest.param(b, marks=pytest.mark.skipif(not HAVE.get(b, True), reason=f"{b} not installed"))
            for b in ("numpy", "casadi", "sympy", "symengine", "jax")]


def _empty_input(backend):
    """Each library's own empty vector (SymPy's and SymEngine's are 0 x 0 matrices)."""
    if backend == "numpy":
        return np.zeros(0)
    if backend == "casadi":
        import casadi as ca
        return ca.SX.sym("q", 0)
    if backend == "sympy":
        import sympy as sp
        return sp.Matrix([])
    if backend == "symengine":
        import symengine as se
        return se.DenseMatrix([])
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    return jnp.zeros(0)


def _fixed_bodies_model():
    Rz = np.array([[0.0, 1, 0], [-1, 0, 0], [0, 0, 1]])        # symdyn E: parent -> child coords
    return Model([Body("base", None, Fixed(), 1.0, np.zeros(3), 0.1 * np.eye(3),
                       Transform(np.eye(3), np.array([0.0, 0.0, 1.0]))),
                  Body("cam", "base", Fixed(), 0.1, np.zeros(3), 1e-3 * np.eye(3),
                       Transform(Rz, np.array([0.0, 0.5, 0.0])), joint_name="cam_mount")],
                 name="fixed_bodies")


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_empty_results(backend):
    """crba is 0 x 0, rnea/aba/gravity empty vectors of the backend's kind, the derivatives
    0 x 0, Gamma 0 x 0 x 0, the frame Jacobians 6 x 0, and the frames their placements, with the
    library's own empty vector as q, qd, qdd (SymPy's Matrix([]) is 0 x 0) and with []."""
    model = _fixed_bodies_model()
    e = _empty_input(backend)
    vec = (0,) if backend in ("numpy", "jax") else (0, 1)
    B = sd.get_backend(backend)

    def shape(x):
        return tuple(x.shape)

    for q in (e, []):
        kw = {"backend": backend}
        assert shape(sd.crba(model, q, **kw)) == (0, 0)
        for f in (sd.rnea(model, q, q, q, **kw), sd.aba(model, q, q, q, **kw),
                  sd.gravity_vector(model, q, **kw), sd.nonlinear_effects(model, q, q, **kw),
                  sd.coriolis_product(model, q, q, q, **kw)):
            assert shape(f) == vec and isinstance(f, B.ndarray if backend != "numpy" else np.ndarray)
        assert [shape(x) for x in sd.coriolis_matrix(model, q, q, **kw)] == [(0, 0)] * 3
        assert shape(sd.christoffel(model, q, **kw)) == (0, 0, 0)
        assert [shape(x) for x in sd.rnea_derivatives(model, q, q, q, **kw)] == [(0, 0)] * 2
        for method in ("auto", "dmm", "aza", "ltdl"):
            got = sd.aba_derivatives(model, q, q, q, method=method, **kw)
            assert [shape(x) for x in got] == [(0, 0)] * 3, method
        assert shape(sd.frame_jacobian(model, q, "cam", **kw)) == (6, 0)
        assert shape(sd.frame_jacobian_time_variation(model, q, q, "cam", **kw)) == (6, 0)
        assert np.array_equal(B.to_numpy(sd.frame_velocity(model, q, q, "cam", **kw)).reshape(-1),
                              np.zeros(6))
        for frame in ("cam", "cam_mount", "base"):
            R, p = sd.frame_placement(model, q, frame, **kw)
            R0, p0 = sd.frame_placement(model, np.zeros(0), frame)
            assert np.allclose(B.to_numpy(R), R0, atol=1e-15), frame
            assert np.allclose(B.to_numpy(p).reshape(3), p0, atol=1e-15), frame
    R, p = sd.frame_placement(model, [], "cam")
    assert np.allclose(p, [0.0, 0.5, 1.0]) and not np.allclose(R, np.eye(3))


@pytest.mark.parametrize("backend", [p for p in BACKENDS if p.values[0] in ("sympy", "symengine")])
def test_symbolic_backends_take_the_empty_matrix_for_nv_0_only(backend):
    B = sd.get_backend(backend)
    e = _empty_input(backend)
    assert tuple(B.to_vector(e, 0, "q").shape) == (0, 1)
    assert tuple(B.to_vector([], 0, "q").shape) == (0, 1)
    with pytest.raises(ValueError, match=r"q must have 2 entries, got shape \(0, 0\)"):
        B.to_vector(e, 2, "q")
    with pytest.raises(ValueError, match=r"q must have 0 entries, got shape \(0, 3\)"):
        B.to_vector(np.zeros((0, 3)), 0, "q")
    # empty constructors keep their shape (the libraries' own give 0 x 0 whatever the shape)
    assert tuple(B.vector([]).shape) == tuple(B.const(np.zeros(0)).shape) == (0, 1)
    assert tuple(B.const(np.zeros((0, 3))).shape) == (0, 3)
    assert tuple(B.const(np.zeros((6, 0))).shape) == (6, 0)
    assert tuple(B.vcat([]).shape) == (0, 1) and tuple(B.block([]).shape) == (0, 0)
    # empty selections of rows and columns (SymEngine's DenseMatrix raises IndexError on them)
    M = B.const(np.arange(9.0).reshape(3, 3))
    assert tuple(B.cols(M, 1, 1).shape) == (3, 0) and tuple(B.rows(M, 2, 2).shape) == (0, 3)
    assert tuple(B.cols(B.zeros(0, 3), 0, 2).shape) == (0, 2)
    assert tuple(B.rows(B.zeros(3, 0), 1, 3).shape) == (2, 0)
    assert B.to_numpy(B.cols(M, 1, 3)).tolist() == [[1, 2], [4, 5], [7, 8]]


def test_jax_traces_models_with_nv_0():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    model = _fixed_bodies_model()
    e = jnp.zeros(0)
    assert jax.jit(lambda q: sd.crba(model, q))(e).shape == (0, 0)
    assert jax.jit(lambda q, v: sd.rnea(model, q, v, v))(e, e).shape == (0,)
    assert jax.vmap(lambda q: sd.aba(model, q, q, q))(jnp.zeros((4, 0))).shape == (4, 0)
    p = jax.jit(lambda q: sd.frame_placement(model, q, "cam")[1])(e)
    assert np.allclose(p, [0.0, 0.5, 1.0])


# --- fixed joints as Pinocchio FIXED_JOINT frames, both ways ------------------------------------------

def _frames_by_name(pin, pm):
    """{(name, type name): (parent joint name, parent frame name)} of a Pinocchio model."""
    kinds = {pin.FrameType.BODY: "BODY", pin.FrameType.JOINT: "JOINT",
             pin.FrameType.FIXED_JOINT: "FIXED_JOINT", pin.FrameType.OP_FRAME: "OP_FRAME"}
    return {(f.name, kinds[f.type]): (pm.names[f.parentJoint], pm.frames[f.parentFrame].name)
            for f in pm.frames}


def test_ur5_fixed_joints_are_pinocchio_fixed_joint_frames_both_ways():
    """to_pinocchio(load_robot("ur5")) has the frames of pinocchio.buildModelFromUrdf (same names,
    types and placements; each fixed joint's child link hangs from its FIXED_JOINT frame), and
    from_pinocchio of either gives load_robot's frames and fixed joints back."""
    pin = pytest.importorskip("pinocchio")
    from symdyn.interop import pinocchio as pb

    model = sd.load_robot("ur5")
    assert "ee_fixed_joint" in model.fixed_joints
    ref = pin.buildModelFromUrdf(str(sd.robot_urdf("ur5")))
    pm = sd.to_pinocchio(model)
    mine, theirs = _frames_by_name(pin, pm), _frames_by_name(pin, ref)
    assert set(mine) == set(theirs)
    for jn, link in model.fixed_joints.items():
        assert (jn, "FIXED_JOINT") in mine
        assert mine[(link, "BODY")] == (mine[(jn, "FIXED_JOINT")][0], jn) == \
            (theirs[(link, "BODY")][0], theirs[(link, "BODY")][1])
    q = model.random_q(4)
    data = {}
    for m in (pm, ref):
        d = m.createData()
        pin.framesForwardKinematics(m, d, pb.q_to_pin(model, q, pin_model=m))
        data[id(m)] = {(f.name, f.type): d.oMf[k] for k, f in enumerate(m.frames)}
    for key, M in data[id(ref)].items():
        M2 = data[id(pm)][key]
        assert np.allclose(M2.rotation, M.rotation, atol=1e-12), key
        assert np.allclose(M2.translation, M.translation, atol=1e-12), key
    # back: Pinocchio's FIXED_JOINT frames are fixed joints again, from either model
    for back in (sd.from_pinocchio(pm), sd.from_pinocchio(ref)):
        assert dict(back.fixed_joints) == dict(model.fixed_joints)
        assert set(back.frames) == set(model.frames)
        qb = pb.q_from_pin(back, pb.q_to_pin(model, q, pin_model=ref), pin_model=ref)
        for name in [*model.fixed_joints, *model.frames]:
            for a, b in zip(sd.frame_placement(back, qb, name), sd.frame_placement(model, q, name)):
                assert np.allclose(a, b, atol=1e-12), name
    assert set(_frames_by_name(pin, sd.to_pinocchio(sd.from_pinocchio(ref)))) == set(theirs)


def test_fixed_only_and_fully_locked_models_export_their_fixed_joints():
    pin = pytest.importorskip("pinocchio")
    model = sd.load_urdf(FIXED_URDF)
    pm = sd.to_pinocchio(model)
    ref = pin.buildModelFromXML(FIXED_URDF)
    assert set(_frames_by_name(pin, pm)) == set(_frames_by_name(pin, ref))
    assert dict(sd.from_pinocchio(pm).fixed_joints) == dict(model.fixed_joints) == \
        {"base_to_arm": "arm", "arm_to_tool": "tool"}
    ur5 = sd.load_robot("ur5")
    locked = sd.reduced_model(ur5, ur5.joint_names)          # every joint locked: nv = 0, all fixed joints
    pml = sd.to_pinocchio(locked)
    assert pml.nv == 0
    fixed = {f.name for f in pml.frames if f.type == pin.FrameType.FIXED_JOINT}
    assert fixed == {"universe", *ur5.fixed_joints, *ur5.joint_names}


@pytest.mark.parametrize("backend", ["numpy", "sympy", "casadi"])
def test_energy_and_mass_of_no_moving_body(backend):
    """Bodies welded to the world neither move nor count (as Pinocchio's total mass, which sums
    the joints' subtrees): T = V = 0 and mass 0 as numbers, not None or a TypeError; the centre of
    mass, 0/0, is refused with an error that says why instead of a nan."""
    model = sd.load_urdf(FIXED_URDF)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromXML(FIXED_URDF)
    assert float(sd.total_mass(model, backend=backend)) == pin.computeTotalMass(pm) == 0.0
    q, e = model.neutral(), np.zeros(0)
    for value in (sd.kinetic_energy(model, q, e, backend=backend),
                  sd.potential_energy(model, q, backend=backend),
                  sd.mechanical_energy(model, q, e, backend=backend)):
        assert value is not None and float(value) == 0.0
    for fn, args in ((sd.center_of_mass, (q,)), (sd.com_jacobian, (q,)),
                     (sd.centroidal_momentum_matrix, (q,)), (sd.centroidal_momentum, (q, e))):
        with pytest.raises(ValueError, match="no moving body"):
            fn(model, *args, backend=backend)
