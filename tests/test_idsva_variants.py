"""IDSVA in body coordinates and paper 004 App. B's ancestor-loop form: equal to the ground-frame
IDSVA (paper 003 Alg. 1) and to CasADi AD, on NumPy and the symbolic backends."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn.reference as R
from symdyn.algorithms.idsva_body import rnea_derivatives_ancestor, rnea_derivatives_body
from symdyn.algorithms.rnea_derivatives import rnea_derivatives
from symdyn.models import (binary_tree, branched_tree, paper004_chain, random_state, random_tree,
                           serial_chain)

VARIANTS = (rnea_derivatives_body, rnea_derivatives_ancestor)
MODELS = {
    "random": lambda: random_tree(10, seed=7),
    "serial": lambda: serial_chain(6, seed=2),
    "paper004": lambda: paper004_chain(5),
    "binary": lambda: binary_tree(7, seed=1),
    "branched": lambda: branched_tree(11, 3, seed=0),
    "rph": lambda: random_tree(9, seed=5, joint_kinds=("revolute", "prismatic", "helical")),
    "spherical": lambda: random_tree(6, seed=1, joint_kinds=("revolute", "spherical", "prismatic")),
    "floating": lambda: random_tree(7, seed=3, joint_kinds=("revolute", "helical", "spherical"),
                                    floating_base=True),
}


from conftest import assert_close as close
from conftest import random_forces


def state(model, seed, fext=True):
    """Random q, qd, qdd (conftest.random_state) and, with fext, random body forces."""
    q, qd, qdd = random_state(model, seed)
    return q, qd, qdd, (random_forces(model, seed + 100, skip=()) if fext else None)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_variants_equal_ground_idsva(name):
    model = MODELS[name]()
    for seed, fext in ((0, False), (1, True)):
        q, qd, qdd, fx = state(model, seed, fext)
        ref = rnea_derivatives(model, q, qd, qdd, fx)
        for fn in VARIANTS:
            for X, Y in zip(fn(model, q, qd, qdd, fx), ref):
                close(X, Y)


@pytest.mark.parametrize("name", ["random", "floating"])
def test_variants_equal_casadi_ad(name):
    model = MODELS[name]()
    q, qd, qdd, fx = state(model, 3)
    ref = R.reference_rnea_derivatives(model, q, qd, qdd, fx, method="ad")
    for fn in VARIANTS:
        for X, Y in zip(fn(model, q, qd, qdd, fx), ref):
            close(X, Y)


def test_symbolic_backends_match_numpy():
    model = MODELS["floating"]()
    Q, V, U = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    q, qd, u, fx = state(model, 4)
    for fn in VARIANTS:
        f = ca.Function("d", [Q, V, U], list(fn(model, Q, V, U, fx)))
        for X, Y in zip(f(q, qd, u), fn(model, q, qd, u, fx)):
            close(np.array(X), Y)
    small = serial_chain(2)  # SymPy: axis-aligned (random geometry explodes)
    q, qd, u, _ = state(small, 5, False)
    syms = [sp.Matrix(sp.symbols(f"{p}0:{small.nv}")) for p in ("q", "v", "u")]
    flat, vals = [s for v in syms for s in v], [*q, *qd, *u]
    for fn in VARIANTS:
        for X, Y in zip(fn(small, *syms), fn(small, q, qd, u)):
            close(sp.lambdify(flat, X, "numpy")(*vals), Y)
    se = pytest.importorskip("symengine")
    small = random_tree(4, seed=4, joint_kinds=("revolute", "prismatic", "helical"))
    q, qd, u, _ = state(small, 5, False)
    sesyms = [se.DenseMatrix([[s] for s in se.symbols(f"{p}0:{small.nv}")])
              for p in ("q", "v", "u")]
    for fn in VARIANTS:
        ref = fn(small, q, qd, u)
        f = se.Lambdify([s for v in sesyms for s in v], list(fn(small, *sesyms)), cse=True)
        for X, Y in zip(f(np.concatenate([q, qd, u])), ref):
            close(X, Y)


def test_planar_joint_is_refused_by_name():
    model = random_tree(4, seed=0, joint_kinds=("planar", "revolute"))
    q, qd, u, _ = state(model, 0, False)
    for fn in VARIANTS:
        with pytest.raises(ValueError, match="Planar"):
            fn(model, q, qd, u)
