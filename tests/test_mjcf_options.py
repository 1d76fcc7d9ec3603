"""MJCF options that change the dynamics (issue 46): what ``load_mjcf`` honours and what it names
in an :class:`~symdyn.interop.mujoco.MJCFWarning`.

Honoured, checked against MuJoCo's ``mj_inverse`` / ``mj_fullM`` on the model as written (no flag
switched off by the test): ``<option gravity>``, ``<flag gravity="disable">``, joint armature,
damping and friction loss from default classes, ``<flag damper|frictionloss|constraint|spring>``,
and the compiler settings MuJoCo applies while compiling (``angle``, ``eulerseq``,
``inertiafromgeom``, ``boundmass``, ``boundinertia``, ``balanceinertia``, ``alignfree``).
Like with like: ``mj_inverse`` returns ``M qacc + bias - qfrc_passive - qfrc_constraint``, so
joint damping (passive, ``-b qvel``) and friction loss (a constraint, saturated at
``frictionloss`` once ``|B qvel|`` exceeds ``|qacc|``, with B ~ 100/s for the default
``solref``) appear in it; symdyn's side is ``rnea + friction_torque`` (damping * v + friction *
sign(v)), at speeds of at least 1 per dof.

Named in the warning (symdyn has no such force): fluid forces (``density``, ``viscosity``,
``wind``, ellipsoid ``fluidshape``), ``invdiscrete``, polynomial damping, the friction loss of
free joints' world-axis linear dofs. ``magnetic`` only feeds magnetometer sensors and wind
without density or viscosity does nothing, so neither is named; the tests check that too.
Skipped without ``mujoco``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import symdyn as sd  # noqa: E402
from symdyn.interop import mujoco as mb  # noqa: E402
from symdyn.model import mass_com_inertia  # noqa: E402
from symdyn.interop.pinocchio import supports_actuation  # noqa: E402
from test_mujoco import full_mass_matrix  # noqa: E402

TOL = 1e-10
actuation = pytest.mark.skipif(not supports_actuation(),
                               reason="the Model has no armature/damping/friction fields")

#: a tree of hinge, slide, ball and free joints; no contacts (contype 0), no joint ranges
BODY = """
    <body name="base" pos="0 0 0.3" childclass="{cls}">
      <inertial pos="0 0 0.05" mass="2.0" diaginertia="0.02 0.03 0.04"/>
      <joint name="yaw" type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.1 0.05 0.05"/>
      <body name="upper" pos="0 0.05 0.2" euler="10 20 30">
        <inertial pos="0.1 0.01 -0.02" quat="0.9 0.1 0.3 0.2" mass="1.5"
                  diaginertia="0.01 0.02 0.025"/>
        <joint name="shoulder" type="hinge" axis="0 1 0" pos="0 0 -0.05" ref="20"/>
        <body name="slider" pos="0.3 0 0">
          <inertial pos="0.02 0 0" mass="0.8" diaginertia="0.004 0.005 0.006"/>
          <joint name="slide" type="slide" axis="1 0.2 0"/>
          <body name="tip" pos="0.1 0 0">
            <inertial pos="0.01 0.02 0.03" mass="0.5" diaginertia="0.002 0.003 0.004"/>
            <joint name="ball" type="ball"/>
          </body>
        </body>
      </body>
    </body>
    <body name="puck" pos="1 0 0.5">
      <freejoint name="free"/>
      <inertial pos="0.01 0.02 -0.01" mass="1.2" diaginertia="0.01 0.012 0.015"/>
    </body>"""


def mjcf(option: str = "", flags: str = "", defaults: str = "", cls: str = "main",
         compiler: str = "", body: str = BODY) -> str:
    return (f'<mujoco model="opts"><compiler {compiler}/><option {option}><flag {flags}/></option>'
            f'<default><geom contype="0" conaffinity="0"/>{defaults}</default>'
            f'<worldbody>{body.format(cls=cls)}</worldbody></mujoco>')


def load(xml: str, record: bool = False):
    """(model, MjModel, maps[, warning texts]) of the MJCF string, compiled as written."""
    mj = mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = mb.from_mujoco(mj, source="<test>")
    texts = [str(w.message) for w in rec if issubclass(w.category, mb.MJCFWarning)]
    out = (model, mj, mb.mujoco_maps(model, mj))
    return (*out, texts) if record else out


def state(model, seed: int):
    """q, v (every component of magnitude 1 to 2: friction loss saturates) and qdd."""
    rng = np.random.default_rng(seed)
    v = rng.choice([-1.0, 1.0], model.nv) * rng.uniform(1.0, 2.0, model.nv)
    return model.random_q(rng), v, rng.normal(scale=0.5, size=model.nv)


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def inverse_errors(model, mj, maps, seeds=(0, 1, 2), passive: bool = True):
    """Largest relative differences of symdyn's rnea (+ friction_torque if ``passive``) from
    mj_inverse, and of crba from mj_fullM (armature in the model where it has the field, else
    taken off MuJoCo's side), in MuJoCo coordinates."""
    arm = 0.0 if supports_actuation() else maps.armature
    d = mujoco.MjData(mj)
    e_tau = e_M = 0.0
    for seed in seeds:
        q, v, a = state(model, seed)
        d.qpos[:], d.qvel[:] = maps.q_to_mj(q), maps.v_to_mj(v, q)
        d.qacc[:] = maps.a_to_mj(a, q, v)
        mujoco.mj_inverse(mj, d)
        tau = sd.rnea(model, q, v, a)
        if passive and supports_actuation():
            tau = tau + sd.friction_torque(model, v)
        e_tau = max(e_tau, rel(maps.f_to_mj(tau, q), d.qfrc_inverse - arm * d.qacc))
        mujoco.mj_forward(mj, d)
        M = full_mass_matrix(mj, d) - np.diag(np.broadcast_to(arm, (mj.nv,)))
        e_M = max(e_M, rel(maps.matrix_to_mj(sd.crba(model, q), q), M))
    return e_tau, e_M


def test_gravity_vector_is_read():
    model, mj, maps, texts = load(mjcf(option='gravity="1 -2 -5"'), record=True)
    assert np.array_equal(model.gravity, [1.0, -2.0, -5.0]) and not texts, texts
    assert max(inverse_errors(model, mj, maps)) < TOL


def test_gravity_flag_disable_gives_zero_gravity():
    """<flag gravity="disable"/> keeps opt.gravity but MuJoCo applies none: neither does symdyn."""
    model, mj, maps, texts = load(mjcf(option='gravity="1 -2 -5"', flags='gravity="disable"'),
                                  record=True)
    assert np.array_equal(np.asarray(mj.opt.gravity), [1.0, -2.0, -5.0])
    assert np.array_equal(model.gravity, np.zeros(3)) and not texts, texts
    assert max(inverse_errors(model, mj, maps)) < TOL
    assert np.allclose(sd.gravity_vector(model, model.random_q(0)), 0.0)


DEFAULTS = """
    <default class="arm"><joint armature="0.02" damping="0.3" frictionloss="0.05"/>
      <default class="heavy"><joint armature="0.2" damping="1.5"/></default>
    </default>"""
BODY_CLASSES = BODY.replace('name="upper" pos="0 0.05 0.2"',
                            'name="upper" pos="0 0.05 0.2" childclass="heavy"').replace(
    '<joint name="ball" type="ball"/>',
    '<joint name="ball" type="ball" class="arm" frictionloss="0.1"/>').replace(
    '<freejoint name="free"/>', '<joint name="free" type="free" damping="0.4"/>')


@actuation
def test_default_classes_set_armature_damping_and_friction():
    """Joint attributes from nested default classes (childclass, class=, an attribute written on
    the joint) reach model.armature / damping / friction per dof, and rnea + friction_torque
    equals mj_inverse with MuJoCo's damping (passive) and friction loss (constraint) on."""
    model, mj, maps, texts = load(mjcf(defaults=DEFAULTS, body=BODY_CLASSES, cls="arm"), record=True)
    assert not texts, texts
    want = {"yaw": (0.02, 0.3, 0.05), "shoulder": (0.2, 1.5, 0.05), "slide": (0.2, 1.5, 0.05),
            "ball": (0.02, 0.3, 0.1), "free": (0.0, 0.4, 0.0)}
    for name, (arm, damp, fric) in want.items():
        a, b = model.v_idx[model.joint_names.index(name)]
        assert np.allclose(model.armature[a:b], arm), name
        assert np.allclose(model.damping[a:b], damp), name
        assert np.allclose(model.friction[a:b], fric), name
    e_tau, e_M = inverse_errors(model, mj, maps)
    assert e_tau < TOL and e_M < TOL, (e_tau, e_M)
    # the comparison sees damping and friction: without them symdyn's side is off
    plain = model.replace(damping=0, friction=0)
    assert inverse_errors(plain, mj, maps)[0] > 1e-3


@actuation
@pytest.mark.parametrize("flag,zeroed", [("damper", "damping"), ("frictionloss", "friction"),
                                         ("constraint", "friction"), ("spring", None)])
def test_disable_flags_switch_off_what_mujoco_switches_off(flag, zeroed):
    """<flag damper|frictionloss|constraint="disable"/>: MuJoCo applies no damping / friction
    loss, and the model's damping / friction is 0; the other stays. <flag spring="disable"/>:
    joint stiffness is not reported (MuJoCo applies none)."""
    if not hasattr(mujoco.mjtDisableBit, f"mjDSBL_{flag.upper()}"):
        pytest.skip(f"this MuJoCo has no <flag {flag}>")
    body = BODY_CLASSES.replace('<joint name="yaw" type="hinge" axis="0 0 1"/>',
                                '<joint name="yaw" type="hinge" axis="0 0 1" stiffness="3"/>')
    model, mj, maps, texts = load(mjcf(defaults=DEFAULTS, body=body, cls="arm",
                                       flags=f'{flag}="disable"'),
                                  record=True)
    for field in ("damping", "friction"):
        values = np.asarray(getattr(model, field))
        assert (not np.any(values)) if field == zeroed else np.any(values), field
    text = " ".join(texts)
    assert ("joint stiffness" in text) == (flag != "spring"), text
    if flag == "spring":   # nothing else MuJoCo applies is missing: the dynamics agree
        e_tau, e_M = inverse_errors(model, mj, maps)
        assert e_tau < TOL and e_M < TOL, (e_tau, e_M)
    else:                  # the spring (reported) still acts in MuJoCo: compare without it
        mj.jnt_stiffness[:] = 0.0
        e_tau, e_M = inverse_errors(model, mj, maps)
        assert e_tau < TOL and e_M < TOL, (e_tau, e_M)


def test_compiler_angle_and_eulerseq_are_applied():
    """The same model written in degrees and in radians, with eulerseq="zyx" and the default
    "xyz": MuJoCo's compiler converts, the loader reads the compiled model, so the symdyn models
    agree with MuJoCo and with each other (hinge ref and range included; MuJoCo's limit
    constraint is switched off, the random q leave the range)."""
    body = ('<body name="a" pos="0 0 1" euler="{e}"><inertial pos="0.1 0 0" mass="1" '
            'diaginertia="0.01 0.02 0.03"/><joint name="h" axis="0 1 0" ref="{r}" range="{lo} {hi}"/>'
            '<body name="b" pos="0.3 0 0" euler="{e}"><inertial pos="0.1 0.02 0" mass="0.5" '
            'diaginertia="0.004 0.005 0.006"/><joint name="k" axis="1 0 0"/>'
            '<site name="s" pos="0.2 0 0" euler="{e}"/></body></body>')
    deg = dict(e="10 40 -70", r="25", lo="-30", hi="60")
    rad = {k: " ".join(repr(float(np.radians(float(x)))) for x in val.split())
           for k, val in deg.items()}
    models = {}
    for seq in ("xyz", "zyx"):
        for unit, vals in (("degree", deg), ("radian", rad)):
            xml = mjcf(compiler=f'angle="{unit}" eulerseq="{seq}"', flags='limit="disable"',
                       body=body.format(**vals))
            model, mj, maps = load(xml)
            assert max(inverse_errors(model, mj, maps, passive=False)) < TOL, (seq, unit)
            d = mujoco.MjData(mj)
            mujoco.mj_kinematics(mj, d)
            q = maps.q_from_mj(d.qpos)
            for b in ("a", "b"):
                i = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, b)
                R, p = sd.frame_placement(model, q, b)
                assert np.allclose(R, d.xmat[i].reshape(3, 3), atol=1e-12)
                assert np.allclose(p, d.xpos[i], atol=1e-12)
            if supports_actuation():
                assert np.allclose([model.limits.lower[0], model.limits.upper[0]],
                                   np.radians([-30, 60]))
            models[seq, unit] = model
        q = models[seq, "degree"].random_q(3)
        assert np.allclose(sd.crba(models[seq, "degree"], q), sd.crba(models[seq, "radian"], q),
                           atol=1e-12)
        R1 = sd.frame_placement(models[seq, "degree"], q, "s")[0]
        assert np.allclose(R1, sd.frame_placement(models[seq, "radian"], q, "s")[0], atol=1e-12)
    q = models["xyz", "degree"].random_q(4)   # the sequence matters: the test sees it
    assert not np.allclose(sd.frame_placement(models["xyz", "degree"], q, "s")[0],
                           sd.frame_placement(models["zyx", "degree"], q, "s")[0])


@pytest.mark.parametrize("compiler,reference,inertia", [
    ('inertiafromgeom="true"', "", "0.01 0.02 0.025"),
    ('inertiafromgeom="auto"', 'inertiafromgeom="true"', "0.01 0.02 0.025"),
    ('boundmass="3" boundinertia="0.5"', "", "0.01 0.02 0.025"),
    ('balanceinertia="true"', None, "0.01 0.02 0.05"),
    ('alignfree="true"', "", "0.01 0.02 0.025")])
def test_compiler_inertia_settings_are_applied(compiler, reference, inertia):
    """Body inertias as MuJoCo compiled them: from the geoms (inertiafromgeom="true", or "auto":
    only where a body has no <inertial>), bounded (boundmass, boundinertia), balanced (an
    <inertial> that violates A + B >= C, which MuJoCo refuses otherwise), and a free body whose
    frame the compiler aligns with its principal axes (alignfree): crba and rnea equal mj_fullM
    and mj_inverse, and the setting changes the model against ``reference`` (the test sees it)."""
    body = f"""
      <body name="a" pos="0 0 1">
        <joint name="h" axis="0 1 0"/>
        <inertial pos="0.1 0 0" mass="1" diaginertia="{inertia}"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.05" density="2000"/>
        <body name="b" pos="0.4 0 0">
          <joint name="k" axis="1 0 0"/>
          <geom type="box" size="0.1 0.05 0.02" pos="0.1 0 0" euler="0 0 30"/>
        </body>
      </body>
      <body name="f" pos="1 0 1">
        <freejoint name="free"/>
        <geom type="box" size="0.2 0.1 0.05" pos="0.05 0.02 0" euler="20 10 0"/>
      </body>"""
    model, mj, maps = load(mjcf(compiler=compiler, body=body))
    e_tau, e_M = inverse_errors(model, mj, maps, passive=False)
    assert e_tau < TOL and e_M < TOL, (e_tau, e_M)
    if reference is None:   # balanced: the three moments set to their mean
        m, c, Ic = mass_com_inertia(np.asarray(model.I[model.names.index("a")]))
        assert m == pytest.approx(1.0) and np.allclose(c, [0.1, 0, 0])
        assert np.allclose(Ic, np.mean([0.01, 0.02, 0.05]) * np.eye(3), atol=1e-12)
        return
    base, mj0, _ = load(mjcf(compiler=reference, body=body))
    q = model.random_q(5)
    assert not np.allclose(sd.crba(model, q), sd.crba(base, q)) or not np.allclose(
        np.asarray(mj.body_quat), np.asarray(mj0.body_quat)), compiler


def test_fluid_forces_are_named_and_left_out():
    """density / viscosity (with wind and ellipsoid fluid geoms): one warning names the options
    and says what symdyn does; strict=True refuses; the model is that of MuJoCo without the
    medium (rnea equals mj_inverse after density = viscosity = 0)."""
    body = BODY.replace('<inertial pos="0.01 0.02 -0.01" mass="1.2"',
                        '<geom type="box" size="0.1 0.1 0.1" fluidshape="ellipsoid"/>'
                        '<inertial pos="0.01 0.02 -0.01" mass="1.2"')
    xml = mjcf(option='density="1.2" viscosity="0.1" wind="1 0 0.5"', body=body)
    model, mj, maps, texts = load(xml, record=True)
    text = " ".join(texts)
    for what in ("fluid forces", "density=1.2", "viscosity=0.1", 'wind="1 0 0.5"',
                 '1 geoms with fluidshape="ellipsoid"', "density = viscosity = 0"):
        assert what in text, (what, text)
    with pytest.raises(mb.MJCFError, match=r"fluid forces.*strict=True"):
        sd.load_mjcf(xml, strict=True)
    assert inverse_errors(model, mj, maps)[0] > 1e-4   # the medium acts in MuJoCo
    mj.opt.density = mj.opt.viscosity = 0.0
    e_tau, e_M = inverse_errors(model, mj, maps)
    assert e_tau < TOL and e_M < TOL, (e_tau, e_M)


def test_fluid_forces_off_with_springs_and_dampers_are_not_named():
    """MuJoCo >= 3.3.6 drops every passive force (fluid, gravcomp) when both <flag spring> and
    <flag damper> are off (older versions: <flag passive>): nothing to report then."""
    D = mujoco.mjtDisableBit
    flags = 'passive="disable"' if hasattr(D, "mjDSBL_PASSIVE") else \
        'spring="disable" damper="disable"'
    body = BODY.replace('pos="0 0 0.3" childclass', 'pos="0 0 0.3" gravcomp="0.5" childclass')
    model, mj, maps, texts = load(mjcf(option='density="1.2" viscosity="0.1"', flags=flags,
                                       body=body), record=True)
    assert not texts, texts
    assert max(inverse_errors(model, mj, maps)) < TOL


def test_magnetic_and_wind_alone_change_nothing_and_are_not_named():
    """magnetic feeds magnetometer sensors only and wind acts through density / viscosity: with
    both of those 0, mj_inverse is unchanged and nothing is reported."""
    model, mj, maps, texts = load(mjcf(option='magnetic="3 -2 1" wind="4 5 6"'), record=True)
    assert not texts, texts
    assert max(inverse_errors(model, mj, maps)) < TOL


def test_gravity_compensation_is_named_only_while_gravity_acts():
    body = BODY.replace('pos="0 0 0.3" childclass', 'pos="0 0 0.3" gravcomp="1" childclass')
    _, _, _, texts = load(mjcf(body=body), record=True)
    assert "gravity compensation" in " ".join(texts)
    model, mj, maps, texts = load(mjcf(body=body, flags='gravity="disable"'), record=True)
    assert not texts, texts
    assert max(inverse_errors(model, mj, maps)) < TOL


def test_invdiscrete_is_named():
    if not hasattr(mujoco.mjtEnableBit, "mjENBL_INVDISCRETE"):
        pytest.skip("this MuJoCo has no <flag invdiscrete>")
    _, _, _, texts = load(mjcf(option='integrator="implicitfast"', flags='invdiscrete="enable"',
                               defaults=DEFAULTS, cls="arm"), record=True)
    assert any('invdiscrete="enable"' in t and "continuous-time" in t for t in texts), texts


@actuation
def test_polynomial_damping_is_named():
    if not hasattr(mujoco.MjModel.from_xml_string("<mujoco/>"), "dof_dampingpoly"):
        pytest.skip("this MuJoCo has no polynomial damping")
    body = BODY.replace('<joint name="yaw" type="hinge" axis="0 0 1"/>',
                        '<joint name="yaw" type="hinge" axis="0 0 1" damping="0.5 0.2 0.1"/>')
    model, _, _, texts = load(mjcf(body=body), record=True)
    assert any("polynomial joint damping on 1 dofs" in t for t in texts), texts
    assert model.damping[model.v_idx[0][0]] == 0.5
    _, _, _, texts = load(mjcf(body=body, flags='damper="disable"'), record=True)
    assert not texts, texts


@actuation
def test_free_joint_linear_friction_loss_is_named():
    """MuJoCo's friction loss on a free joint's linear dofs bounds world-axis components, symdyn's
    body-axis ones: named; its angular dofs (body axes in both) and damping (isotropic) agree."""
    body = BODY.replace('<freejoint name="free"/>',
                        '<joint name="free" type="free" frictionloss="0.2" damping="0.3"/>')
    model, mj, maps, texts = load(mjcf(body=body), record=True)
    assert any("friction loss of the linear dofs of free joints ['free']" in t
               for t in texts), texts
    _, _, _, texts = load(mjcf(body=body, flags='frictionloss="disable"'), record=True)
    assert not texts, texts
    j = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, "free")
    mj.dof_frictionloss[mj.jnt_dofadr[j]:mj.jnt_dofadr[j] + 3] = 0.0   # keep the angular part
    a = model.v_idx[model.joint_names.index("free")][0]
    friction = np.array(model.friction)
    friction[a + 3:a + 6] = 0.0
    e_tau, e_M = inverse_errors(model.replace(friction=friction), mj, maps)
    assert e_tau < TOL and e_M < TOL, (e_tau, e_M)


def test_disabled_actuators_and_equality_are_not_named():
    extra = ('<actuator><motor joint="yaw" gear="2"/></actuator>'
             '<equality><joint joint1="yaw" joint2="shoulder"/></equality>')
    xml = mjcf().replace("</mujoco>", extra + "</mujoco>")
    _, _, _, texts = load(xml, record=True)
    text = " ".join(texts)
    assert "1 actuators" in text and "1 equality constraints" in text, text
    _, _, _, texts = load(mjcf(flags='actuation="disable" equality="disable"').replace(
        "</mujoco>", extra + "</mujoco>"), record=True)
    assert not texts, texts
    _, _, _, texts = load(mjcf(flags='constraint="disable"').replace(
        "</mujoco>", extra + "</mujoco>"), record=True)
    assert texts and "equality" not in " ".join(texts), texts
