"""Each validation error with its message: topology, inertias, constants, joints, and the inputs
of the algorithms (shapes, NaN, quaternions, external forces)."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp
from conftest import BACKENDS

import symdyn as sd
from symdyn.joints import Fixed, Floating, Revolute, Spherical, make_joint
from symdyn.model import Body, Model, ModelError
from symdyn.models import random_tree
from symdyn.spatial import Transform

EYE = np.eye(3)


def body(name, parent, joint=None, **kw):
    return Body(name, parent, joint or Revolute("z"), **kw)


# --- topology -----------------------------------------------------------------------------------

def test_cycle_is_rejected():
    bodies = [body("root", None), body("a", "b"), body("b", "a")]
    with pytest.raises(ModelError, match=r"\['a', 'b'\] are not connected to the world.*cycle"):
        Model(bodies)


def test_tree_without_root_is_rejected():
    with pytest.raises(ModelError, match="no body is attached to the world"):
        Model([body("a", "b"), body("b", "a")])


def test_own_parent_is_rejected():
    with pytest.raises(ModelError, match="'a' is its own parent"):
        Model([body("root", None), body("a", "a")])


def test_dangling_parent_is_rejected():
    with pytest.raises(ModelError, match="'a' has parent 'ghost'.*dangling parent"):
        Model([body("root", None), body("a", "ghost")])


def test_duplicate_names_are_rejected():
    with pytest.raises(ModelError, match="duplicate body name 'a'"):
        Model([body("a", None), body("a", None)])


def test_empty_model_is_rejected_and_all_fixed_model_has_nv_0():
    with pytest.raises(ModelError, match="at least one body"):
        Model([])
    m = Model([body("base", None, Fixed())])    # a fixed base alone: a frame on the world
    assert (m.N, m.nq, m.nv, m.d) == (0, 0, 0, 0) and m.frames["base"].body == -1


def test_bodies_out_of_order_are_sorted_parents_first():
    m = Model([body("c", "b"), body("b", "a"), body("a", None)])
    assert list(m.names) == ["a", "b", "c"] and list(m.parents) == [-1, 0, 1]


@pytest.mark.parametrize("parents,msg", [
    ([-1, 5], r"parent index 5 of body 1 is out of range \[-1, 1\]"),
    ([-1, -2], r"parent index -2 of body 1 is out of range"),
    ([-1, 1], "body 1 has parent 1: parents must come before children"),
    ([-1, 2, 0], "body 1 has parent 2: parents must come before children"),
    ([-1, 0.5], "parent index 0.5 of body 1"),
])
def test_bad_parent_arrays(parents, msg):
    n = len(parents)
    with pytest.raises(ModelError, match=msg):
        Model.from_parent_array(parents, [Revolute("z")] * n, [Transform(EYE, np.zeros(3))] * n,
                                [(1.0, np.zeros(3), EYE)] * n)


def test_parent_array_length_mismatch():
    with pytest.raises(ModelError, match="joints has 1 entries but parents has 2"):
        Model.from_parent_array([-1, 0], [Revolute("z")], [Transform(EYE, np.zeros(3))] * 2,
                                [(1.0, np.zeros(3), EYE)] * 2)


# --- inertias and constants ---------------------------------------------------------------------

@pytest.mark.parametrize("mass", [0.0, -1.0])
def test_non_positive_mass(mass):
    with pytest.raises(ModelError, match="'a': mass must be positive"):
        Model([body("a", None, mass=mass)])
    with pytest.raises(ModelError, match="mass must be positive"):  # even without the inertia check
        Model([body("a", None, mass=mass)], check_inertias=False)


@pytest.mark.parametrize("Ic,msg", [
    (np.diag([1.0, 1.0, 3.0]), "violate the triangle inequality"),
    (np.array([[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]]), "rotational inertia is not symmetric"),
    (np.diag([1.0, 1.0, -0.5]), "not positive definite"),
    (np.zeros((3, 3)), "not positive definite"),
])
def test_non_physical_inertia(Ic, msg):
    with pytest.raises(ModelError, match=msg):
        Model([body("a", None, inertia=Ic)])
    Model([body("a", None, inertia=(Ic + Ic.T) / 2)], check_inertias=False)  # explicit opt-out


def test_symbolic_parameters_skip_the_inertia_check():
    a = sp.Symbol("a", positive=True)
    m = Model([body("a", None, mass=sp.Symbol("m"), inertia=sp.diag(a, 1, 3))])
    assert m.is_symbolic and {s.name for s in m.parameters()} == {"a", "m"}


@pytest.mark.parametrize("field,value,msg", [
    ("com", (0.0, np.nan, 0.0), "'a' com contains NaN or inf"),
    ("inertia", np.diag([1.0, np.inf, 1.0]), "'a' inertia contains NaN or inf"),
    ("mass", np.nan, "'a' mass is NaN or inf"),
    ("mass", np.inf, "'a' mass is NaN or inf"),
    ("X_tree", Transform(EYE, np.array([0.0, np.inf, 0.0])), "X_tree translation contains NaN"),
    ("X_tree", Transform(np.full((3, 3), np.nan), np.zeros(3)), "X_tree rotation contains NaN"),
    ("com", (0.0, 1.0), r"'a' com must have shape \(3,\)"),
    ("mass", "heavy", "'a' mass must be a number"),
])
def test_non_finite_or_malformed_constants(field, value, msg):
    with pytest.raises(ModelError, match=msg):
        Model([body("a", None, **{field: value})])


def test_non_finite_gravity():
    with pytest.raises(ModelError, match="gravity contains NaN or inf"):
        Model([body("a", None)], gravity=(0.0, 0.0, np.nan))


# --- joints ---------------------------------------------------------------------------------------

def test_unknown_joint_type():
    with pytest.raises(ValueError, match="unknown joint type 'hinge'; known: .*revolute"):
        make_joint("hinge")
    assert isinstance(make_joint("continuous", axis="x"), Revolute)


@pytest.mark.parametrize("axis,msg", [
    ("w", "unknown joint axis 'w'"),
    ((0.0, 0.0, 0.0), "joint axis must be nonzero"),
    ((1.0, 0.0), "joint axis must be 3 finite numbers"),
    ((1.0, np.nan, 0.0), "joint axis must be 3 finite numbers"),
    (("a", "b", "c"), "joint axis must be 'x', 'y', 'z' or 3 numbers"),
])
def test_bad_joint_axis(axis, msg):
    with pytest.raises(ValueError, match=msg):
        Revolute(axis)


def test_axis_is_normalized_and_recognized():
    assert Revolute((0.0, 0.0, 2.0)).axis_spec == "z"
    assert np.isclose(np.linalg.norm(Revolute((1.0, 2.0, 2.0)).axis), 1.0)


def test_joint_must_be_a_joint():
    with pytest.raises(ModelError, match="'a': joint must be a symdyn Joint, got str"):
        Model([body("a", None, joint="revolute")])


# --- algorithm inputs -----------------------------------------------------------------------------

MODEL = random_tree(3, seed=1, joint_kinds=("revolute",))
FLOATING = Model([Body("base", None, Floating()), Body("ball", "base", Spherical())])


def _vec(backend, values):
    if backend == "sympy":
        return sp.Matrix(values)
    if backend == "casadi":
        return ca.SX(ca.DM(values))
    return np.asarray(values, float)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wrong_lengths(backend):
    good, short = _vec(backend, [0.1, 0.2, 0.3]), _vec(backend, [0.1, 0.2])
    with pytest.raises(ValueError, match="q must have"):
        sd.crba(MODEL, short)
    with pytest.raises(ValueError, match="qd must have"):
        sd.rnea(MODEL, good, short, good)
    with pytest.raises(ValueError, match="qdd must have"):
        sd.rnea(MODEL, good, good, _vec(backend, [0.0] * 4))
    with pytest.raises(ValueError, match="tau must have"):
        sd.aba(MODEL, good, good, short)


def test_wrong_shapes():
    with pytest.raises(ValueError, match=r"q must have shape \(3,\), got \(3, 2\)"):
        sd.crba(MODEL, np.zeros((3, 2)))        # (B, 3) would be a batch of B states
    with pytest.raises(ValueError, match="q must have"):
        sd.crba(MODEL, ca.SX.sym("q", 3, 2))
    with pytest.raises(TypeError, match="q must be a vector of 3 numbers"):
        sd.crba(MODEL, ["a", "b", "c"])
    with pytest.raises(TypeError, match="q is required"):
        sd.crba(MODEL, None)
    with pytest.raises(TypeError, match="expected a symdyn Model"):
        sd.crba("robot", [0.0, 0.0, 0.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_in_q(backend):
    bad = [0.1, float("nan"), 0.3] if backend != "sympy" else sp.Matrix([0.1, sp.nan, 0.3])
    with pytest.raises(ValueError, match="q contains NaN or inf"):
        sd.crba(MODEL, bad if backend != "numpy" else np.asarray(bad), backend=backend)
    with pytest.raises(ValueError, match="qd contains NaN or inf"):
        sd.rnea(MODEL, [0.0] * 3, [0.0, np.inf, 0.0], [0.0] * 3, backend=backend)


def test_non_unit_quaternion():
    q = FLOATING.neutral()
    q[6] = 2.0  # floating base quaternion w
    with pytest.raises(ValueError, match=r"q\[3:7\] \(joint of body 'base'\) must be a unit "
                                         r"quaternion \(x, y, z, w\); its norm is 2"):
        sd.crba(FLOATING, q)
    q = FLOATING.neutral()
    q[7:11] = [0.0, 0.0, 0.0, 0.5]
    with pytest.raises(ValueError, match=r"q\[7:11\] \(joint of body 'ball'\)"):
        sd.rnea(FLOATING, q, np.zeros(9), np.zeros(9))


@pytest.mark.parametrize("backend", BACKENDS)
def test_external_forces_of_wrong_length(backend):
    z = [0.0] * 3
    with pytest.raises(ValueError, match="f_ext must hold one 6-vector .* 3 entries, got 2"):
        sd.rnea(MODEL, z, z, z, [np.zeros(6)] * 2, backend=backend)
    with pytest.raises(ValueError, match=r"f_ext\[1\] must have"):
        sd.rnea(MODEL, z, z, z, [None, np.zeros(5), None], backend=backend)
    with pytest.raises(ValueError, match="f_ext must hold"):
        sd.aba(MODEL, z, z, z, [np.zeros(6)] * 4, backend=backend)
