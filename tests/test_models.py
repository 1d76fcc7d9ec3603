"""Builders: sizes, depths, topologies, symbolic planar parameters, physical consistency, and
from_spec for every spec form."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from conftest import assert_close, random_state

import symdyn as sd
from symdyn.model import ModelError, check_inertia
from symdyn.io.specs import SpecError, from_spec
from symdyn.models import (biped, binary_tree, branched_parents, branched_tree, paper004_chain,
                           planar_chain, quadruped, random_tree, serial_chain)


@pytest.mark.parametrize("n", [1, 2, 7, 20])
def test_serial_chain(n):
    m = serial_chain(n)
    assert (m.N, m.nq, m.nv, m.d) == (n, n, n, n)
    assert list(m.parents) == [-1] + list(range(n - 1))
    assert [j.axis_spec for j in m.joints] == [("z", "y", "x")[i % 3] for i in range(n)]


def test_serial_chain_seed_and_joint_kinds():
    a, b = serial_chain(5, seed=3), serial_chain(5, seed=3)
    q = np.linspace(0.1, 0.5, 5)
    assert_close(sd.crba(a, q), sd.crba(b, q), tol=0)  # reproducible
    assert not np.allclose(sd.crba(a, q), sd.crba(serial_chain(5, seed=4), q))
    m = serial_chain(6, joint=("revolute", "prismatic", "spherical"), seed=1)
    assert [j.type for j in m.joints] == ["revolute", "prismatic", "spherical"] * 2
    assert m.nv == 2 * (1 + 1 + 3) and m.nq == 2 * (1 + 1 + 4)
    with pytest.raises(ValueError, match="unknown joint kind 'hinge'"):
        serial_chain(3, joint="hinge")
    with pytest.raises(ValueError, match="n must be >= 1"):
        serial_chain(0)


@pytest.mark.parametrize("n,bf", [(15, 2), (20, 2), (20, 5), (31, 2), (7, 3)])
def test_branched_tree_topology(n, bf):
    m = branched_tree(n, bf)
    assert list(m.parents) == [-1] + [(i - 1) // bf for i in range(1, n)]
    assert list(m.parents) == branched_parents(n, bf)
    assert all(len(c) <= bf for c in m.children)
    # a complete bf-ary tree: depth = number of levels
    levels = 1 + math.floor(math.log(n * (bf - 1) + 1, bf) - 1e-12)
    assert m.d == levels
    if bf == 2:
        assert m.d == math.floor(math.log2(n)) + 1


def test_binary_tree_is_branching_factor_two():
    assert binary_tree(15).parents == branched_tree(15, 2).parents
    assert binary_tree(15).d == 4
    assert branched_tree(5, 1).d == 5  # bf 1: a chain


@pytest.mark.parametrize("builder,nlegs", [(biped, 2), (quadruped, 4)])
@pytest.mark.parametrize("n", [4, 12, 13, 20])
def test_legged_dof_counts(builder, nlegs, n):
    fixed, floating = builder(n), builder(n, floating=True)
    assert (fixed.nq, fixed.nv, fixed.N) == (n, n, n)
    assert (floating.nq, floating.nv, floating.N) == (n + 7, n + 6, n + 1)
    assert floating.is_floating and floating.joints[0].type == "floating"
    roots = [i for i, p in enumerate(fixed.parents) if p < 0]
    assert len(roots) == nlegs  # welded torso: every leg hangs from the world
    legs = [len(floating.subtree[c]) for c in floating.children[0]]
    assert len(legs) == nlegs and sum(legs) == n and max(legs) - min(legs) <= 1
    assert fixed.d == math.ceil(n / nlegs) and floating.d == math.ceil(n / nlegs) + 1


def test_quadruped_is_shallower_than_biped():
    assert quadruped(20).d < biped(20).d


def test_legged_needs_one_dof_per_leg():
    with pytest.raises(ValueError, match=">= 4"):
        quadruped(3)


def test_legged_seed_randomizes_inertias():
    q = np.full(8, 0.3)
    assert not np.allclose(sd.crba(biped(8, seed=1), q), sd.crba(biped(8), q))


def test_planar_chain_symbolic_parameters_match_numbers():
    n = 3
    ms = planar_chain(n, symbolic_params=True)
    assert ms.is_symbolic
    names = {s.name for s in ms.parameters()}
    assert {f"m{i}" for i in range(1, n + 1)} <= names and {f"I{i}" for i in range(1, n + 1)} <= names
    assert {f"lc{i}" for i in range(1, n + 1)} <= names and {"l1", "l2"} <= names
    assert all(s.is_positive for s in ms.parameters())
    values = {"m": 2.0, "l": 0.7, "lc": 0.3, "I": 0.05}
    subs = {s: values[s.name.rstrip("0123456789")] for s in ms.parameters()}
    mn = planar_chain(n, mass=2.0, length=0.7, com=0.3, inertia=0.05)
    msub = ms.subs(subs)
    for seed in range(3):
        q, qd, qdd = random_state(mn, seed)
        assert_close(sd.crba(msub, q), sd.crba(mn, q))
        assert_close(sd.rnea(msub, q, qd, qdd), sd.rnea(mn, q, qd, qdd))
        # the symbolic M itself, evaluated at the parameters and q
        qs = sp.symbols(f"q0:{n}")
        M = sd.crba(ms, sp.Matrix(qs))
        vals = {**{s: float(v) for s, v in subs.items()}, **dict(zip(qs, q))}
        from symdyn.backends import get_backend

        assert_close(get_backend("sympy").evaluate(M, vals), sd.crba(mn, q))


def test_planar_chain_two_link_closed_form():
    """The textbook two-link arm: M11 = I1 + I2 + m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos q2)."""
    m = planar_chain(2, symbolic_params=True)
    q = sp.symbols("q1 q2")
    M = sd.crba(m, sp.Matrix(q))
    m1, m2, l1, lc1, lc2, I1, I2 = sp.symbols("m1 m2 l1 lc1 lc2 I1 I2", positive=True)
    expected = I1 + I2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * sp.cos(q[1]))
    assert sp.simplify(M[0, 0] - expected) == 0
    assert sp.simplify(M[1, 1] - (I2 + m2 * lc2**2)) == 0


def test_planar_chain_moves_in_its_plane():
    m = planar_chain(4)
    assert [j.axis_spec for j in m.joints] == ["z"] * 4
    for mass, com, Ic in m.body_params:
        check_inertia(mass, Ic, "planar link")
        assert np.isclose(Ic[2, 2], Ic[0, 0] + Ic[1, 1])  # a plate in the plane of motion
    q = np.zeros(4)
    g = sd.gravity_vector(m, q)  # links along x, gravity along -y: every joint carries load
    assert np.all(g > 0)


def test_paper004_chain():
    m = paper004_chain(5)
    assert (m.N, m.nv, m.d) == (5, 5, 5)
    for mass, com, Ic in m.body_params:
        assert mass == 1.0
        assert_close(com, [0.5, 0.0, 0.0])
        assert_close(Ic, np.diag([0.0, 0.0, 1.0]))
    # link i+1's joint is 1 m along link i's x axis
    assert all(np.allclose(X.r, [1.0, 0.0, 0.0]) for X in m.Xtree[1:])
    # M[n-1, n-1] = Izz + m (l/2)^2 = 1.25 for the last link
    assert np.isclose(sd.crba(m, np.zeros(5))[-1, -1], 1.25)


@pytest.mark.parametrize("builder", [lambda: serial_chain(6, seed=2),
                                     lambda: branched_tree(9, 3, seed=5),
                                     lambda: biped(6, seed=3),
                                     lambda: random_tree(6, seed=9)])
def test_random_inertias_are_physical(builder):
    m = builder()
    for i, p in enumerate(m.body_params):
        if p is not None:
            check_inertia(p[0], p[2], f"body {i}")
        assert np.linalg.eigvalsh(np.asarray(m.I[i])).min() > 0


SPECS = {
    "serial:20": (20, 20, 20), "binary:15": (15, 15, 4), "branched:20:5": (20, 20, 3),
    "biped:20": (20, 20, 10), "quadruped:20": (20, 20, 5), "quadruped:12:floating": (13, 18, 4),
    "planar:10": (10, 10, 10), "paper004:50": (50, 50, 50), "random:12": (12, 12, None),
    "serial:4:joint=revolute+spherical:seed=2": (4, 8, 4), "random:5:seed=3:floating": (5, 10, None),
    "biped:6:floating:seed=1": (7, 12, 4), "branched:7:2:seed=4": (7, 7, 3),
}


@pytest.mark.parametrize("spec", list(SPECS))
def test_from_spec(spec):
    N, nv, d = SPECS[spec]
    m = from_spec(spec)
    assert (m.N, m.nv) == (N, nv)
    if d is not None:
        assert m.d == d


def test_from_spec_symbolic_planar():
    m = from_spec("planar:3:symbolic")
    assert m.is_symbolic and m.nv == 3


def test_from_spec_matches_builders():
    q = np.linspace(0.2, 1.0, 6)
    assert_close(sd.crba(from_spec("branched:6:3"), q), sd.crba(branched_tree(6, 3), q), tol=0)
    assert_close(sd.crba(from_spec("random:6:seed=7"), q), sd.crba(random_tree(6, seed=7), q), tol=0)


@pytest.mark.parametrize("spec,msg", [
    ("foo:3", "unknown model spec 'foo:3'; expected one of serial:"),
    ("panda", r"unknown model spec 'panda' \(the built-in robot: robot:panda\)"),
    ("serial", "expected serial:N"),
    ("serial:x", "N must be a positive integer, got 'x'"),
    ("serial:0", "N must be a positive integer, got 0"),
    ("serial:3:wobbly", "unknown option 'wobbly'"),
    ("serial:3:joint=hinge", "unknown joint kind 'hinge'"),
    ("serial:3:seed=abc", "seed must be an integer"),
    ("branched:20", "expected branched:N:BF"),
    ("quadruped:3", ">= 4"),
    ("planar:3:floating", "unknown option 'floating'"),
    ("robot:", "expected robot:NAME"),
    ("", "non-empty string"),
])
def test_from_spec_errors(spec, msg):
    with pytest.raises(ValueError, match=msg):
        from_spec(spec)


def test_spec_error_is_a_value_error():
    assert issubclass(SpecError, ValueError) and issubclass(ModelError, ValueError)


URDF = """<?xml version="1.0"?>
<robot name="two_link">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


def test_from_spec_urdf_path(tmp_path):
    pytest.importorskip("symdyn.io.urdf")
    path = tmp_path / "two_link.urdf"
    path.write_text(URDF)
    m = from_spec(str(path))
    assert m.nv == 2
    # the same two-link arm from the planar builder (plate inertia differs only off the z axis)
    q = np.array([0.3, -0.8])
    M = sd.crba(m, q)
    assert np.isclose(M[1, 1], 0.1 + 0.25)
    fm = from_spec(f"{path}:floating")
    assert fm.nv == 8


def test_from_spec_robot():
    robots = pytest.importorskip("symdyn.io.robots")
    assert hasattr(robots, "load_robot")
    m = from_spec("robot:panda")
    assert m.nv >= 7
    with pytest.raises(ValueError, match="nosuchrobot"):
        from_spec("robot:nosuchrobot")
