"""Snapping rotation and joint-axis entries within a tolerance of 0, +-1 (symdyn.snapping): the
rule, the report, the loaders' ``snap=``, results against the unsnapped model and Pinocchio, and
smaller generated graphs."""
import logging
import math

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen.cache import model_fingerprint
from symdyn.codegen.functions import casadi_function, exact_rotations
from symdyn.io.urdf import load_urdf, rpy_to_rot
from symdyn.joints import Revolute
from symdyn.model import Body, Model
from symdyn.snapping import (MAX_SNAP, ROUNDING_SNAP, SNAP_TOLERANCE, check_snap_tolerance,
                             snap_rotation)
from symdyn.spatial import Transform
from symdyn.symbolic.structured import snap_rotations

from test_urdf import joint, link

HALF_PI = math.pi / 2


def chain(rotations, axes=None, frame_rotation=None):
    """A serial chain of revolute joints whose tree transforms have the given rotations (E, parent
    -> child coordinates); ``frame_rotation``: a fixed link 'tool' on the last body placed by it."""
    rng = np.random.default_rng(0)
    axes = axes or ["z"] * len(rotations)
    bodies = [Body(f"l{i}", None if i == 0 else f"l{i - 1}", Revolute(a), 1.0 + i,
                   rng.uniform(-0.1, 0.1, 3), np.diag([0.3, 0.2, 0.25]),
                   Transform(E, rng.uniform(-0.5, 0.5, 3)))
              for i, (E, a) in enumerate(zip(rotations, axes))]
    if frame_rotation is not None:
        from symdyn.joints import Fixed

        bodies.append(Body("tool", f"l{len(rotations) - 1}", Fixed(), 0.1, np.zeros(3),
                           np.diag([1e-3] * 3), Transform(frame_rotation, [0.0, 0.0, 0.1])))
    return Model(bodies, name="chain")


def rpy_E(r, p, y):
    return rpy_to_rot(r, p, y).T


# --- the rule -------------------------------------------------------------------------------------

def test_a_1e_12_perturbation_snaps_and_is_reported():
    E = rpy_E(HALF_PI + 1e-12, 0.0, 0.0)
    m = chain([np.eye(3), E])
    s = m.snapped(1e-9)
    S = np.asarray(s.Xtree[1].E)
    np.testing.assert_array_equal(S, [[1, 0, 0], [0, 0, 1], [0, -1, 0]])
    changed = np.abs(S - E)
    assert s.snap_report.largest == changed.max() and 0.9e-12 < changed.max() < 1.1e-12
    assert s.snap_report.entries == int(np.count_nonzero(changed))
    assert s.snap_report.tolerance == 1e-9
    assert s.snap_report.where.startswith("Xtree 'l1' E[")
    assert np.array_equal(np.asarray(s.Xtree[1].r), np.asarray(m.Xtree[1].r))
    assert m.snap_report is None and np.array_equal(np.asarray(m.Xtree[1].E), E)  # m unchanged


def test_a_1e_6_perturbation_does_not_snap():
    E = rpy_E(HALF_PI + 1e-6, 0.0, 0.0)
    s = chain([E]).snapped(1e-9)
    assert np.array_equal(np.asarray(s.Xtree[0].E), E)
    assert s.snap_report.entries == 0 and s.snap_report.largest == 0.0
    assert s.snap_report.where is None


def test_a_lone_near_one_entry_is_kept():
    """cos(1e-5) = 1 - 5e-11 is within 1e-9 of 1, but sin(1e-5) is not near 0: a deliberate
    small angle, left alone."""
    E = rpy_E(0.0, 0.0, 1e-5)
    S, n = snap_rotation(E, 1e-9)
    assert n == 0 and np.array_equal(S, E)


def test_snapped_rotations_are_reorthonormalised_within_the_tolerance():
    """A near-pi/2 roll composed with generic pitch and yaw: the entries next to the snapped
    zero carry the 1e-11 error too, so the matrix is made a rotation again, the zero kept exact."""
    E = rpy_E(HALF_PI + 1e-11, 0.7, 0.4)
    zero = np.abs(E) < 1e-9
    assert zero.sum() == 1
    assert np.abs(np.where(zero, 0.0, E) @ np.where(zero, 0.0, E).T - np.eye(3)).max() > 1e-12
    S, n = snap_rotation(E, 1e-9)
    assert n == 1 and np.all(S[zero] == 0.0)
    assert np.abs(S @ S.T - np.eye(3)).max() <= ROUNDING_SNAP
    assert np.linalg.det(S) > 0
    assert np.abs(S - E).max() < 1e-10   # of the order of the snapped value


def test_a_zero_with_no_rotation_near_it_is_kept():
    """An entry of 1e-11 that is the product of two deliberate ~4e-6 rad offsets (angles written
    as 1.5708): a rotation with that entry exactly 0 is ~3e-6 away, so it stays."""
    E = rpy_E(0.0, 1.5708, 1.5708)   # 3.7e-6 from pi/2 each: an entry 3.7e-6^2 = 1.3e-11
    tiny = (np.abs(E) < 1e-9) & (E != 0)
    assert tiny.any()
    S, n = snap_rotation(E, 1e-9)
    assert n == 0 and np.array_equal(S, E)


def test_joint_axes_and_frames_snap():
    m = chain([np.eye(3), np.eye(3)], axes=[(1e-12, 0.0, 1.0), (0.0, 2e-12, -1.0)],
              frame_rotation=rpy_to_rot(0.0, HALF_PI - 2e-12, 0.0))
    s = m.snapped(1e-9)
    assert s.joints[0].axis_spec == "z" and s.joints[0].axis == (0.0, 0.0, 1.0)
    assert s.joints[1].axis == (0.0, 0.0, -1.0)
    F = np.asarray(s.frames["tool"].X.E)
    assert set(np.unique(F)) <= {-1.0, 0.0, 1.0}
    assert s.snap_report.entries == 2 + int(np.count_nonzero(F != np.asarray(m.frames["tool"].X.E)))


def test_axis_snapping_drops_the_joints_cached_constants():
    """A joint keeps numeric constants built from its axis; the snapped copy must not reuse them."""
    m = chain([np.eye(3), np.eye(3)], axes=[(1e-10, 0.0, 1.0), "y"])
    exact = chain([np.eye(3), np.eye(3)], axes=["z", "y"])
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
    before = sd.rnea(m, q, qd, qdd)   # fills the joints' numeric caches
    s = m.snapped(1e-9)
    assert np.array_equal(sd.rnea(s, q, qd, qdd), sd.rnea(exact, q, qd, qdd))
    assert not np.array_equal(before, sd.rnea(s, q, qd, qdd))


# --- options, report, loaders -----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-1e-9, float("nan"), float("inf"), 1e-2, 10 * MAX_SNAP])
def test_bad_tolerances_raise_value_error(bad):
    m = chain([np.eye(3)])
    for call in (lambda: m.snapped(bad), lambda: check_snap_tolerance(bad),
                 lambda: load_urdf(TWO_LINKS, snap=bad), lambda: snap_rotations(m, bad)):
        with pytest.raises(ValueError, match="snap must be a tolerance in"):
            call()


@pytest.mark.parametrize("bad", ["1e-9", True, [1e-9]])
def test_non_number_tolerances_raise_type_error(bad):
    with pytest.raises(TypeError, match="snap must be a tolerance"):
        chain([np.eye(3)]).snapped(bad)


TWO_LINKS = ('<robot name="r">' + link("base") + link("a") + link("b") + link("tool", None)
             + joint("j1", "revolute", "base", "a", rpy="1.57079632679 0 0", axis="0 0 1")
             + joint("j2", "revolute", "a", "b", xyz="0 0 0.3", rpy="0 -1.57079632679 0.3",
                     axis="0 1e-12 -1")
             + joint("tj", "fixed", "b", "tool", rpy="3.14159265359 0 0") + "</robot>")


def test_snap_off_keeps_the_files_values_bit_identical():
    for off in (0, 0.0, None):
        m = load_urdf(TWO_LINKS, snap=off)
        assert m.snap_report is None
        np.testing.assert_array_equal(m.Xtree[0].E, rpy_to_rot(1.57079632679, 0, 0).T)
        np.testing.assert_array_equal(m.Xtree[1].E, rpy_to_rot(0, -1.57079632679, 0.3).T)
        np.testing.assert_array_equal(m.frames["tool"].X.E, rpy_to_rot(3.14159265359, 0, 0).T)
        assert m.joints[1].axis[1] != 0.0
        assert m.snapped(off) is m


def test_loaders_take_the_option_and_snap_by_default():
    default = load_urdf(TWO_LINKS)
    assert default.snap_report.tolerance == SNAP_TOLERANCE == 1e-10
    assert 4e-12 < default.snap_report.largest < 1e-11
    for m in (default, load_urdf(TWO_LINKS, snap=1e-10)):
        for E in [X.E for X in m.Xtree] + [m.frames["tool"].X.E]:
            assert not np.any((np.abs(np.asarray(E)) < 1e-9) & (np.asarray(E) != 0))
        assert m.joints[1].axis == (0.0, 0.0, -1.0)
    assert load_urdf(TWO_LINKS, snap=1e-13).snap_report.entries == 0
    assert sd.load_robot("ur5").snap_report.largest > 0
    assert sd.load_robot("ur5", snap=0).snap_report is None
    assert sd.load_robot("ur5", snap=1e-13).snap_report.entries == 0


def test_load_mjcf_takes_the_option():
    pytest.importorskip("mujoco")
    xml = """<mujoco><worldbody><body name="a" euler="90.0000000001 0 0">
      <joint name="j" type="hinge" axis="0 0 1"/><geom type="sphere" size="0.1" mass="1"/>
      </body></worldbody></mujoco>"""
    exact = sd.load_mjcf(xml, snap=0)
    E = np.asarray(exact.Xtree[0].E)
    assert np.any((np.abs(E) < 1e-9) & (E != 0))   # MuJoCo's quaternion leaves such entries
    m = sd.load_mjcf(xml)
    assert m.snap_report.tolerance == SNAP_TOLERANCE and m.snap_report.entries > 0
    assert set(np.unique(np.asarray(m.Xtree[0].E))) <= {-1.0, 0.0, 1.0}


def test_report_in_summary_and_log(caplog):
    with caplog.at_level(logging.INFO, logger="symdyn.snapping"):
        m = load_urdf(TWO_LINKS, name="two")
    assert str(m.snap_report) in m.summary()
    assert "largest change" in str(m.snap_report)
    assert any("model 'two'" in r.getMessage() and "largest change" in r.getMessage()
               for r in caplog.records)
    assert "snap" not in load_urdf(TWO_LINKS, snap=0).summary()


def test_symbolic_models_are_returned_unchanged():
    sp = pytest.importorskip("sympy")
    L = sp.Symbol("L", positive=True)
    m = Model([Body("a", None, Revolute("z"), 1.0, (L, 0, 0), np.eye(3),
                    Transform(rpy_E(HALF_PI + 1e-12, 0, 0), (0, 0, 0)))], check_inertias=False)
    assert m.is_symbolic and m.snapped(1e-9) is m


def test_fingerprint_follows_the_snapped_constants():
    m = load_urdf(TWO_LINKS, snap=0)
    assert model_fingerprint(m.snapped(1e-9)) != model_fingerprint(m)
    assert model_fingerprint(m.snapped(1e-13)) == model_fingerprint(m)


def test_codegen_and_closed_forms_use_the_same_snapping():
    e = exact_rotations(chain([rpy_E(HALF_PI, 0.0, 0.0)]))   # cos(pi/2) = 6.1e-17
    assert e.snap_report.tolerance == ROUNDING_SNAP and e.snap_report.entries == 2
    m = load_urdf(TWO_LINKS, snap=0)
    assert exact_rotations(m) is m          # 4.9e-12 is not rounding noise
    s, t = snap_rotations(m, 1e-9), m.snapped(1e-9)
    assert s.snap_report == t.snap_report
    for a, b in zip(s.Xtree, t.Xtree):
        assert np.array_equal(np.asarray(a.E), np.asarray(b.E))


# --- real robots ----------------------------------------------------------------------------------

def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_results_stay_within_1e_11_of_the_unsnapped_model_on_kinova():
    if "kinova" not in sd.available_robots():
        pytest.skip("example-robot-data is not installed")
    exact = sd.load_robot("kinova", snap=0)
    m = sd.load_robot("kinova")
    assert 1e-12 < m.snap_report.largest <= SNAP_TOLERANCE
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, qd, qdd = m.random_q(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        assert rel(sd.rnea(m, q, qd, qdd), sd.rnea(exact, q, qd, qdd)) < 1e-11
        assert rel(sd.crba(m, q), sd.crba(exact, q)) < 1e-11
        assert rel(sd.aba(m, q, qd, qdd), sd.aba(exact, q, qd, qdd)) < 1e-11
        assert rel(sd.coriolis_matrix(m, q, qd)[2], sd.coriolis_matrix(exact, q, qd)[2]) < 1e-11


@pytest.mark.parametrize("name", ["ur5", "kinova", "anymal_c", "baxter"])
def test_snapped_robots_against_pinocchio(name):
    pytest.importorskip("pinocchio")
    from test_pinocchio_robots import Pair, pin

    pair = Pair(name, None)
    m, pm, pd, P = pair.model, pair.pm, pair.pd, pair.P
    assert m.snap_report.entries > 0
    for q, qd, qdd, _ in pair.states(2, seed=4):
        qp = pair.q_pin(q)
        assert rel(sd.rnea(m, q, qd, qdd)[P], pin.rnea(pm, pd, qp, qd[P], qdd[P])) < 1e-10
        assert rel(sd.crba(m, q)[np.ix_(P, P)], pin.crba(pm, pd, qp)) < 1e-10


def test_snapping_shrinks_the_generated_graph():
    if "kinova" not in sd.available_robots():
        pytest.skip("example-robot-data is not installed")
    exact, m = sd.load_robot("kinova", snap=0), sd.load_robot("kinova")
    sizes = [casadi_function(x, "crba").n_instructions() for x in (exact, m)]
    assert sizes[1] < 0.7 * sizes[0]    # 824 -> 464 SX instructions
