"""The chain-rule baselines of papers 003/004 (RNEA_CR, ABA_CR, FD_CR): equal to IDSVA / FDSVA and
to CasADi AD on random trees, serial chains and branched trees, multi-DoF joints and floating bases
included, on NumPy and on the symbolic backends evaluated at numbers."""
from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn.reference as R
from symdyn.algorithms.aba_derivatives import aba_derivatives
from symdyn.algorithms.chain_rule import (aba_derivatives_cr, fd_derivatives_cr,
                                          rnea_derivatives_cr)
from symdyn.algorithms.rnea_derivatives import rnea_derivatives
from symdyn.models import branched_tree, random_state, random_tree, serial_chain

MODELS = {
    "random": lambda: random_tree(8, seed=2),
    "serial": lambda: serial_chain(6, seed=1),
    "branched": lambda: branched_tree(9, 3, seed=2),
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
def test_rnea_cr_equals_idsva_and_ad(name):
    model = MODELS[name]()
    for seed, fext in ((0, False), (1, True)):
        q, qd, qdd, fx = state(model, seed, fext)
        cr = rnea_derivatives_cr(model, q, qd, qdd, fx)
        for X, Y, Z in zip(cr, rnea_derivatives(model, q, qd, qdd, fx),
                           R.reference_rnea_derivatives(model, q, qd, qdd, fx, method="ad")):
            close(X, Y)
            close(X, Z)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_aba_cr_and_fd_cr_equal_fdsva_and_ad(name):
    model = MODELS[name]()
    q, qd, tau, fx = state(model, 2)
    ref = R.reference_aba_derivatives(model, q, qd, tau, fx, method="ad")
    svA = aba_derivatives(model, q, qd, tau, fx)
    for fn in (aba_derivatives_cr, fd_derivatives_cr):
        for X, Y, Z in zip(fn(model, q, qd, tau, fx), svA, ref):
            close(X, Y)
            close(X, Z)


def test_casadi_graphs_match_numpy():
    model = MODELS["floating"]()
    Q, V, U = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("u", model.nv)
    q, qd, u, fx = state(model, 4)
    for fn in (rnea_derivatives_cr, aba_derivatives_cr, fd_derivatives_cr):
        f = ca.Function("d", [Q, V, U], list(fn(model, Q, V, U, fx)))
        for X, Y in zip(f(q, qd, u), fn(model, q, qd, u, fx)):
            close(np.array(X), Y)


def test_sympy_and_symengine_match_numpy():
    model = serial_chain(2)  # SymPy: axis-aligned (random geometry explodes)
    q, qd, u, _ = state(model, 5, False)
    syms = [sp.Matrix(sp.symbols(f"{p}0:{model.nv}")) for p in ("q", "v", "u")]
    flat, vals = [s for v in syms for s in v], [*q, *qd, *u]
    for fn in (rnea_derivatives_cr, aba_derivatives_cr):
        for X, Y in zip(fn(model, *syms), fn(model, q, qd, u)):
            close(sp.lambdify(flat, X, "numpy")(*vals), Y)
    se = pytest.importorskip("symengine")
    model = random_tree(3, seed=4, joint_kinds=("revolute", "prismatic", "helical"))
    q, qd, u, _ = state(model, 5, False)
    syms = [se.DenseMatrix([[s] for s in se.symbols(f"{p}0:{model.nv}")]) for p in ("q", "v", "u")]
    f = se.Lambdify([s for v in syms for s in v], list(rnea_derivatives_cr(model, *syms)), cse=True)
    for X, Y in zip(f(np.concatenate([q, qd, u])), rnea_derivatives_cr(model, q, qd, u)):
        close(X, Y)


def test_planar_joint_is_refused_by_name():
    model = random_tree(4, seed=0, joint_kinds=("planar", "revolute"))
    q, qd, u, _ = state(model, 0, False)
    for fn in (rnea_derivatives_cr, aba_derivatives_cr, fd_derivatives_cr):
        with pytest.raises(ValueError, match="Planar|planar"):
            fn(model, q, qd, u)
