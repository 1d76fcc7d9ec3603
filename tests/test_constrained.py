"""Constrained mechanisms (paper 001 Secs. V-VI): maximal-coordinates route == Algorithm 1,
differentiation route == generalized Christoffel symbols, closed loops by the spanning-tree
method (exact Gdot, induced C* Christoffel-consistent, Lagrangian four-bar, energy), bad input."""
from __future__ import annotations

import math

import casadi as ca
import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.algorithms import body_jacobians, crba, rnea
from symdyn.algorithms.christoffel import christoffel
from symdyn.algorithms.common import entry, joint_kinematics
from symdyn.algorithms.coriolis import coriolis_matrix
from symdyn.autodiff import ad_jacobians
from symdyn.coordinates import change_coordinates
from symdyn.backends import get_backend
from symdyn.constrained import (ClosureError, LoopClosure, LoopModel, SingularConfigurationError,
                                body_twist_factorization, coriolis_maximal, jacobian_derivatives,
                                maximal_coordinates)
from symdyn.constrained.differentiation import (christoffel_by_differentiation,
                                                coriolis_by_differentiation, structure_constants)
from symdyn.constrained.mechanisms import bar_inertia, five_bar_leg, four_bar, parallel_ankle
from symdyn.constrained.numeric import (complete_configuration, energy, independent_coordinates,
                                        simulate, solve_configuration)
from symdyn.joints import Prismatic, Revolute, Spherical
from symdyn.model import Body, Model
from symdyn.models import random_rotation, random_tree
from symdyn.spatial import Transform, compose, crm, factorization_B, inverse

NP = get_backend("numpy")
ALL = ("revolute", "prismatic", "helical", "spherical", "planar")


def trees():
    return {
        "chain": random_tree(5, seed=1, parents=[-1, 0, 1, 2, 3]),
        "mixed": random_tree(7, seed=13, joint_kinds=ALL),                       # planar: Phiring
        "spherical": random_tree(6, seed=4, joint_kinds=("revolute", "spherical", "prismatic")),
        "floating": random_tree(6, seed=5, joint_kinds=("revolute", "spherical", "helical"),
                                floating_base=True),
    }


TREES = trees()


def state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(0, 10, model.nv)


def close(a, b, tol, what=""):
    a, b = np.asarray(a, float), np.asarray(b, float).reshape(np.shape(a))
    err, scale = np.abs(a - b).max(), 1 + np.abs(b).max()
    assert err <= tol * scale, f"{what}: max |diff| {err:.3e} (scale {scale:.3g})"


# --- 1. maximal-coordinates route -----------------------------------------------------------------

@pytest.mark.parametrize("name", list(TREES))
@pytest.mark.parametrize("form", ["body", "spatial"])
@pytest.mark.parametrize("factorization", ["christoffel", "simple"])
def test_maximal_route_equals_algorithm1(name, form, factorization):
    model = TREES[name]
    for seed in range(3):
        q, qd = state(model, seed)
        M, Mdot, C = coriolis_maximal(model, q, qd, factorization, form)
        Mr, Mdr, Cr = coriolis_matrix(model, q, qd, factorization)
        close(M, Mr, 1e-12, "M")
        close(Mdot, Mdr, 1e-12, "Mdot")
        close(C, Cr, 1e-12, "C")
        close(C @ qd, rnea(model, q, qd, np.zeros(model.nv)) - rnea(model, q, 0 * qd, 0 * qd),
              1e-12, "C qd")


@pytest.mark.parametrize("name", ["spherical", "floating"])
def test_induced_form_of_maximal_coordinates(name):
    """Paper 001 eq. (20): C = J^T C_max J + J^T M_max Jring with C_max skew (body twists)."""
    model = TREES[name]
    q, qd = state(model, 7)
    mc = maximal_coordinates(model, q, qd)
    assert mc.M.shape == (6 * model.N, 6 * model.N) and mc.J.shape == (6 * model.N, model.nv)
    assert np.abs(mc.C + mc.C.T).max() < 1e-12 * (1 + np.abs(mc.C).max())  # Mdot_max = 0
    M, _, C = coriolis_matrix(model, q, qd)
    close(mc.J.T @ mc.M @ mc.J, M, 1e-12, "M")
    close(mc.J.T @ mc.C @ mc.J + mc.J.T @ mc.M @ mc.Jring, C, 1e-12, "C")


def test_body_twist_factorization():
    """Eq. (19) (pseudo-inertia form) == eq. (18) = B_(10) + I (v x); skew; omega only."""
    rng = np.random.default_rng(3)
    I = TREES["floating"].constants(NP).I
    for Ik in I:
        v = rng.normal(size=6)
        Bb = body_twist_factorization(NP, v, Ik)
        close(Bb, factorization_B(NP, v, Ik) + Ik @ crm(NP, v), 1e-13, "(19) vs (18)")
        assert np.abs(Bb + Bb.T).max() < 1e-13
        w = v.copy()
        w[3:] = rng.normal(size=3)
        close(body_twist_factorization(NP, w, Ik), Bb, 1e-14, "independent of v_O")
        close(Bb @ v, -crm(NP, v).T @ (Ik @ v), 1e-13, "B v = v x* I v")
        Bs = body_twist_factorization(NP, v, Ik, "simple")
        close(Bs @ v, Bb @ v, 1e-13, "simple: same bias")
        assert np.abs(Bs - Bb).max() > 1e-3


@pytest.mark.parametrize("name", ["mixed", "floating"])
def test_jacobian_derivatives(name):
    """Jring = d/dt J_k(q (+) qd t) (AD, tangent space); Jdot = Jring + v x J; v = J qd."""
    model = TREES[name]
    q, qd = state(model, 2)
    d = jacobian_derivatives(model, q, qd)
    for k in range(model.N):
        close(d.J[k], body_jacobians(model, q)[k], 1e-14, "J")
        close(d.J[k] @ qd, d.v[k], 1e-13, "v = J qd")
        _, dJ = ad_jacobians(model, lambda m, q, backend=None: body_jacobians(m, q, backend=backend)[k],
                             [q], ["q"], wrt=[0], tangent=True)
        close(d.Jring[k], (dJ @ qd).reshape((6, model.nv), order="F"), 1e-11, "Jring")
        close(d.Jdot[k], d.Jring[k] + crm(NP, d.v[k]) @ d.J[k], 1e-13, "Jdot")


def test_maximal_route_symbolic_backends():
    model = TREES["floating"]
    q, qd = state(model, 4)
    ref = coriolis_maximal(model, q, qd)
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    f = ca.Function("f", [qs, vs], list(coriolis_maximal(model, qs, vs)))
    for a, b in zip(f(q, qd), ref):
        close(np.array(a), b, 1e-12, "casadi")
    small = random_tree(3, seed=1, parents=[-1, 0, 1], joint_kinds=("spherical", "revolute", "prismatic"))
    q, qd = state(small, 5)
    syms = sp.symbols(f"v0:{small.nv}")
    M, Mdot, C = coriolis_maximal(small, sp.Matrix(q.tolist()), sp.Matrix(syms))
    assert isinstance(C, sp.MatrixBase)
    vals = {s: float(x) for s, x in zip(syms, qd)}
    for a, b in zip((M, Mdot, C), coriolis_matrix(small, q, qd)):
        close(get_backend("sympy").evaluate(a, vals), b, 1e-11, "sympy")


def test_maximal_bad_input():
    model = TREES["chain"]
    q, qd = state(model, 0)
    with pytest.raises(ValueError, match="unknown form"):
        coriolis_maximal(model, q, qd, form="ground")
    with pytest.raises(ValueError, match="unknown factorization"):
        coriolis_maximal(model, q, qd, factorization="eq4")
    with pytest.raises(ValueError, match="shape"):
        coriolis_maximal(model, q[:-1], qd)


# --- 4. differentiation route ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mixed", "spherical", "floating"])
def test_differentiation_route_equals_generalized_christoffel(name):
    model = TREES[name]
    q, qd = state(model, 8)
    G = christoffel(model, q)
    close(christoffel_by_differentiation(model, q), G, 1e-12, "Gamma")
    close(coriolis_by_differentiation(model, q, qd), coriolis_matrix(model, q, qd)[2], 1e-12, "C*")


def test_structure_constants_are_the_joint_brackets():
    """Nonzero only within spherical (so(3)) and floating (se(3)) joints: c[:, k, j] = e_k x e_j;
    without the correction, 1/2 dtau/dnu is not C*."""
    model = TREES["floating"]
    q, qd = state(model, 9)
    c = structure_constants(model, q)
    expect = np.zeros_like(c)
    for i, j in enumerate(model.joints):
        a, b = model.v_idx[i]
        if j.type in ("spherical", "floating"):
            n = b - a
            E = np.eye(6)[:, :n]
            for k in range(n):
                for s in range(n):
                    expect[a:b, a + k, a + s] = (crm(NP, E[:, k]) @ E[:, s])[:n]
    close(c, expect, 1e-14, "structure constants")
    assert np.count_nonzero(expect) > 0
    _, D = ad_jacobians(model, rnea, [q, qd, np.zeros(model.nv)], ["q", "v", "v"], wrt=[1])
    C = coriolis_matrix(model, q, qd)[2]
    assert np.abs(D / 2 - C).max() > 1e-2 * np.abs(C).max()
    planar = random_tree(5, seed=16, joint_kinds=("revolute", "planar", "helical"))
    assert any(j.type == "planar" for j in planar.joints)  # coordinate fields: brackets vanish
    assert np.abs(structure_constants(planar, planar.random_q(0))).max() < 1e-15


def test_differentiation_route_symbolic_q():
    model = TREES["spherical"]
    q, qd = state(model, 10)
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    C = coriolis_by_differentiation(model, qs, vs)
    assert isinstance(C, ca.SX)
    close(np.array(ca.Function("f", [qs, vs], [C])(q, qd)), coriolis_matrix(model, q, qd)[2],
          1e-12, "SX")
    with pytest.raises(ValueError, match="unit"):
        coriolis_by_differentiation(model, q * 2, qd)
    with pytest.raises(TypeError, match="numbers"):
        christoffel_by_differentiation(model, qs)


# --- 2. closed loops ------------------------------------------------------------------------------

def world_transforms(model, q):
    _, (qs,) = entry(model, ("q", q, "q"))
    Xup, _ = joint_kinematics(NP, model, qs)
    X0 = []
    for k, p in enumerate(model.parents):
        X0.append(Xup[k] if p < 0 else compose(NP, Xup[k], X0[p]))
    return X0


def spatial_loop(seed=0, kind="revolute", floating=False):
    """A random spatial tree with two branches closed by one closure joint between b3 and b6;
    the closure frames coincide at a random q_ref (so the loop closes there)."""
    rng = np.random.default_rng(seed)
    parents = [-1, 0, 1, 2, 0 if floating else -1, 4, 5]
    kinds = ["floating" if floating else "revolute", "spherical", "revolute", "revolute",
             "revolute", "revolute", "prismatic"]
    base = random_tree(7, seed=seed, parents=parents)
    bodies = []
    for i, p in enumerate(parents):
        ax = tuple(rng.normal(size=3))
        j = {"revolute": Revolute(ax), "spherical": Spherical(), "prismatic": Prismatic(ax),
             "floating": __import__("symdyn").joints.Floating()}[kinds[i]]
        m, c, Ic = base.body_params[i]
        bodies.append(Body(f"b{i}", None if p < 0 else f"b{p}", j, m, c, Ic,
                           Transform(base.Xtree[i].E, base.Xtree[i].r)))
    tree = Model(bodies, name=f"spatial_loop{seed}")
    q0 = tree.random_q(rng)
    X0 = world_transforms(tree, q0)
    Xp = Transform(random_rotation(rng).T, rng.uniform(-0.5, 0.5, 3))
    Xs = compose(NP, compose(NP, Xp, X0[3]), inverse(NP, X0[6]))
    # spherical closure: the ball b1 cannot be dependent (rotations about the axis through the
    # closure point leave it in place: K_d singular), so its speeds are independent there
    indep = {"spherical": ["b0", "b1", "b4", "b6"], "fixed": ["b0", "b4", "b5"]}.get(
        kind, ["b0", "b4", "b5", "b6"])
    return LoopModel(tree, [LoopClosure("b3", "b6", Xp, Xs, kind=kind, name="c")], indep, q_ref=q0)


def ankle(independent="motors"):
    """The parallel ankle at a generic pose (motor angles 0.3, -0.2)."""
    loop = parallel_ankle(independent=independent)
    loop.q_ref = complete_configuration(parallel_ankle(), [0.3, -0.2])
    return loop


LOOPS = {"four_bar": four_bar(), "five_bar": five_bar_leg(), "ankle": ankle(),
         "spatial": spatial_loop(0), "spherical_closure": spatial_loop(1, "spherical"),
         "fixed_closure": spatial_loop(3, "fixed"), "floating": spatial_loop(2, floating=True)}


def tangent_jacobian(loop, fn, q):
    """d vec(fn(q (+) dv)) / d dv at dv = 0 (CasADi AD through the generic loop code)."""
    tree = loop.tree
    dv = ca.SX.sym("dv", tree.nv)
    out = ca.vec(fn(sd.integrate(tree, q, dv, backend="casadi")))
    return np.array(ca.Function("j", [dv], [ca.jacobian(out, dv)])(np.zeros(tree.nv)))


@pytest.mark.parametrize("name", list(LOOPS))
def test_loop_kinematics_exact(name):
    """K G = 0; Kdot and Gdot equal the AD directional derivatives of K(q), G(q) along qd."""
    loop = LOOPS[name]
    q = loop.q_ref
    y = np.random.default_rng(1).normal(size=loop.ny)
    G = loop.G(q)
    qd = G @ y
    K = loop.constraint_jacobian(q)
    assert np.abs(K @ G).max() < 1e-12
    close(G[loop.independent], np.eye(loop.ny), 0, "G rows of y")
    m, nv = loop.m, loop.tree.nv
    dK = tangent_jacobian(loop, loop.constraint_jacobian, q) @ qd
    close(loop.constraint_jacobian_derivative(q, qd), dK.reshape((m, nv), order="F"), 1e-11, "Kdot")
    dG = tangent_jacobian(loop, loop.G, q) @ qd
    close(loop.Gdot(q, qd), dG.reshape((nv, loop.ny), order="F"), 1e-11, "Gdot")
    # the residual's derivative is K on the constraint manifold
    dr = tangent_jacobian(loop, loop.constraint_residual, q)
    close(dr, K, 1e-12, "dr/dq = K")


@pytest.mark.parametrize("name", list(LOOPS))
def test_loop_dynamics_skew_and_kkt(name):
    """Mbar_dot (AD along qd = G y) = Cbar + Cbar^T; ydot equals the Lagrange-multiplier (KKT)
    solution of the tree with the constraints K qdd + Kdot qd = 0."""
    loop = LOOPS[name]
    tree = loop.tree
    q = loop.q_ref
    rng = np.random.default_rng(2)
    y, tau = rng.normal(size=loop.ny) * 2, rng.normal(size=tree.nv)
    d = loop.dynamics(q, y)
    ny = loop.ny
    dM = tangent_jacobian(loop, lambda qq: loop.G(qq).T @ crba(tree, qq) @ loop.G(qq), q) @ d.qd
    close(d.Mdot, dM.reshape((ny, ny), order="F"), 1e-11, "Mbar_dot formula vs AD")
    close(d.Mdot, d.C + d.C.T, 1e-12, "skew")
    K = loop.constraint_jacobian(q)
    Kd = loop.constraint_jacobian_derivative(q, d.qd)
    M = crba(tree, q)
    h = rnea(tree, q, d.qd, np.zeros(tree.nv))
    A = np.block([[M, -K.T], [K, np.zeros((loop.m, loop.m))]])
    qdd = np.linalg.solve(A, np.concatenate([tau - h, -Kd @ d.qd]))[:tree.nv]
    ydot = loop.forward_dynamics(q, y, tau)
    close(d.G @ ydot + d.Gdot @ y, qdd, 1e-11, "KKT")
    close(loop.inverse_dynamics(q, y, ydot), d.G.T @ tau, 1e-11, "inverse dynamics")


@pytest.mark.parametrize("name", ["five_bar", "spatial"])
def test_induced_Cbar_is_christoffel_consistent(name):
    """Thm. V.1 / Prop. V.3: Cbar(q, e_k) = Gamma_bar[:, :, k] of eq. (4) in the minimal
    coordinates (independent 1-DoF joint angles), dMbar along the manifold by AD."""
    loop = LOOPS[name]
    tree, q, ny = loop.tree, loop.q_ref, loop.ny
    G = loop.G(q)
    jac = tangent_jacobian(loop, lambda qq: loop.G(qq).T @ crba(tree, qq) @ loop.G(qq), q)
    dM = [(jac @ G[:, k]).reshape((ny, ny), order="F") for k in range(ny)]
    Gam = loop.christoffel(q)
    for k in range(ny):
        Gk = np.array([[0.5 * (dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) for j in range(ny)]
                       for i in range(ny)])
        close(Gam[:, :, k], Gk, 1e-11, f"page {k}")
    y = np.linspace(-1, 2, ny)
    close(loop.dynamics(q, y).C, np.einsum("ijk,k->ij", Gam, y), 1e-12, "C = Gamma y")
    # from the tree's eq. (9) C: admissible; unique in dimension <= 2 (paper 001 Cor. IV.1),
    # but not Christoffel-consistent in dimension >= 3
    Cs = loop.dynamics(q, np.ones(ny), "simple").C
    Cx = loop.dynamics(q, np.ones(ny)).C
    if ny <= 2:
        close(Cs, Cx, 1e-12, "unique admissible factorization")
    else:
        assert np.abs(Cs - Cx).max() > 1e-3 * np.abs(Cx).max()


def test_ankle_change_of_minimal_speeds():
    """Paper 000 Thm. 1 between two choices of minimal speeds of the ankle: with foot rates
    y_f = A y_m (A = G_motors[foot rows], Adot = Gdot_motors[foot rows]) the motor-speed Mbar, Cbar
    are A^T Mbar_f A and A^T Cbar_f A + A^T Mbar_f Adot."""
    motors, foot = LOOPS["ankle"], ankle("foot")
    q = motors.q_ref
    y_m = np.array([1.3, -0.7])
    dm = motors.dynamics(q, y_m)
    feet = foot.independent
    A, Adot = dm.G[feet], dm.Gdot[feet]
    df = foot.dynamics(q, A @ y_m)
    Mbar, Cbar, gbar, _ = change_coordinates(df.M, df.C, df.g, None, A, Adot)
    close(dm.M, Mbar, 1e-12, "Mbar")
    close(dm.C, Cbar, 1e-12, "Cbar")
    close(dm.g, gbar, 1e-12, "gbar")
    close(dm.qd, df.qd, 1e-12, "same tree speeds")


def test_solve_configuration_and_newton():
    loop = LOOPS["spatial"]
    q = loop.q_ref
    theta = independent_coordinates(loop, q) + 0.15
    q2 = complete_configuration(loop, theta)
    assert np.abs(loop.constraint_residual(q2)).max() < 1e-12
    close(independent_coordinates(loop, q2), theta, 1e-15, "independent coordinates kept")
    dv = np.zeros(loop.tree.nv)
    dv[loop.dependent] = 0.05
    q3 = solve_configuration(loop, sd.integrate(loop.tree, q, dv))
    assert np.abs(loop.constraint_residual(q3)).max() < 1e-12


@pytest.mark.parametrize("name", ["four_bar", "spatial", "floating"])
def test_loop_symbolic_backends(name):
    loop = LOOPS[name]
    q, nq = loop.q_ref, loop.tree.nq
    y = np.linspace(0.5, 1.5, loop.ny)
    ref = loop.dynamics(q, y)
    qs, ys = ca.SX.sym("q", nq), ca.SX.sym("y", loop.ny)
    d = loop.dynamics(qs, ys)
    f = ca.Function("f", [qs, ys], [d.M, d.Mdot, d.C, d.g, d.G, d.Gdot])
    for a, b in zip(f(q, y), (ref.M, ref.Mdot, ref.C, ref.g, ref.G, ref.Gdot)):
        close(np.array(a), b, 1e-11, "casadi")
    if name == "four_bar":
        syms = sp.symbols("q0:3") + sp.symbols("y0:1")
        d = loop.dynamics(sp.Matrix(syms[:3]), sp.Matrix(syms[3:]))
        vals = dict(zip(syms, list(q) + list(y)))
        for a, b in zip((d.M, d.C, d.g), (ref.M, ref.C, ref.g)):
            close(get_backend("sympy").evaluate(a, vals), b, 1e-12, "sympy")


# --- four-bar: independent Lagrangian derivation, central differences, energy -----------------------

def four_bar_lagrangian(ground=0.55, crank=0.2, coupler=0.6, rocker=0.5, masses=(1.0, 2.0, 1.5),
                        com_offsets=((0.0, 0.0), (0.0, 0.05), (0.0, -0.03)), g=9.81):
    """M(theta), dM/dtheta and dV/dtheta of the four-bar from link geometry (paper 002 route):
    absolute angles th (crank), al (coupler), be (rocker) tied by the loop equation, dependent
    rates by implicit differentiation. Returns a function of (th, al, be)."""
    th, al, be = sp.symbols("th al be")

    def rot(a, v):
        return sp.Matrix([sp.cos(a) * v[0] - sp.sin(a) * v[1], sp.sin(a) * v[0] + sp.cos(a) * v[1]])

    def e(a):
        return sp.Matrix([sp.cos(a), sp.sin(a)])

    l = (crank, coupler, rocker)
    c = [sp.Matrix([sp.nsimplify(l[k] / 2 + com_offsets[k][0]), sp.nsimplify(com_offsets[k][1])])
         for k in range(3)]
    r = [rot(th, c[0]), crank * e(th) + rot(al, c[1]), sp.Matrix([ground, 0]) + rot(be, c[2])]
    f = crank * e(th) + coupler * e(al) - sp.Matrix([ground, 0]) - rocker * e(be)   # loop closure
    dep = sp.Matrix([al, be])
    rates = -f.jacobian(dep).LUsolve(f.diff(th))                                     # d(al, be)/dth
    rates = sp.Matrix([sp.simplify(x) for x in rates])

    def total(expr):  # d/dth along the loop
        return expr.diff(th) + expr.diff(al) * rates[0] + expr.diff(be) * rates[1]

    w = [sp.Integer(1), rates[0], rates[1]]                                          # dangle/dth
    Izz = [float(bar_inertia(masses[k], l[k])[2, 2]) for k in range(3)]
    M = sum(masses[k] * (total(r[k]).T @ total(r[k]))[0, 0] + Izz[k] * w[k] ** 2 for k in range(3))
    V = sum(masses[k] * g * r[k][1] for k in range(3))
    return sp.lambdify((th, al, be), [M, total(M), total(V)], "math")


def test_four_bar_matches_independent_lagrangian():
    loop = four_bar()
    lag = four_bar_lagrangian()
    q = loop.q_ref
    for n, theta in enumerate(np.linspace(0.3, 0.3 + 2 * math.pi, 43)[1:]):  # continuation
        q = complete_configuration(loop, [theta], guess=q)
        if n % 6:
            continue
        thd = 1.7
        d = loop.dynamics(q, [thd])
        M, dM, dV = lag(q[0], q[0] + q[1], q[2])
        close(d.M, M, 1e-12, "Mbar")
        close(d.C * thd, 0.5 * dM * thd ** 2, 1e-12, "Cbar y = 1/2 M' thd^2")
        close(d.g, dV, 1e-12, "gbar")
        thdd = 0.3
        close(loop.inverse_dynamics(q, [thd], [thdd]), M * thdd + 0.5 * dM * thd ** 2 + dV, 1e-12,
              "EOM")


def test_four_bar_Mbar_dot_central_differences():
    """Along a consistent trajectory (Newton-closed poses at theta +- h): Mbar_dot = 2 Cbar."""
    loop = four_bar()
    h = 1e-5
    for theta in (0.3, 2.0, 4.5):
        q = complete_configuration(loop, [theta])
        Mp = loop.dynamics(complete_configuration(loop, [theta + h], guess=q), [0.0]).M
        Mm = loop.dynamics(complete_configuration(loop, [theta - h], guess=q), [0.0]).M
        y = 2.3
        Mdot_fd = (Mp - Mm) / (2 * h) * y
        d = loop.dynamics(q, [y])
        close(Mdot_fd, d.C + d.C.T, 1e-8, "central differences")


def test_four_bar_energy_conserved():
    """Unactuated four-bar under gravity, RK4 (dt = 4 ms, 1 s): energy drift ~ integrator error."""
    loop = four_bar()
    traj = simulate(loop, loop.q_ref, [4.0], t_final=1.0, dt=4e-3)
    E = np.array([energy(loop, q, y) for q, y in zip(traj.q[::25], traj.y[::25])])
    assert np.abs(E - E[0]).max() < 1e-6 * abs(E[0]) + 1e-9, np.abs(E - E[0]).max()
    assert np.ptp(traj.q[:, 0]) > 1.0  # it actually moved
    assert max(np.abs(loop.constraint_residual(q)).max() for q in traj.q) < 1e-12


def test_five_bar_leg_energy_and_closure():
    loop = five_bar_leg()
    traj = simulate(loop, loop.q_ref, [1.0, -2.0], t_final=0.4, dt=4e-3)
    E = np.array([energy(loop, q, y) for q, y in zip(traj.q[::20], traj.y[::20])])
    assert np.abs(E - E[0]).max() < 1e-6 * (1 + abs(E[0]))


# --- bad input ------------------------------------------------------------------------------------

def test_configuration_that_does_not_close():
    loop = four_bar()
    q = loop.q_ref.copy()
    q[2] += 0.1  # rocker moved: the pin is torn apart
    for call in (lambda: loop.G(q), lambda: loop.dynamics(q, [1.0]),
                 lambda: loop.forward_dynamics(q, [1.0])):
        with pytest.raises(ClosureError, match="does not close.*coupler-rocker pin"):
            call()
    with pytest.raises(ClosureError, match="q_ref"):
        LoopModel(loop.tree, loop.closures, ["crank"], q_ref=q)
    # links that cannot reach: Newton reports it
    far = LoopModel(loop.tree, [LoopClosure("coupler", "rocker", Transform(np.eye(3), [0.6, 0, 0]),
                                            Transform(np.eye(3), [3.0, 0, 0]), kind="planar")],
                    ["crank"])
    with pytest.raises(ClosureError, match="cannot be satisfied"):
        solve_configuration(far, loop.q_ref)


def test_singular_G():
    """Four-bar with the rocker as input at the dead centre (crank and coupler collinear)."""
    loop = four_bar(independent="rocker")
    # coupler tip on the rocker circle at distance crank + coupler = 0.8 from O
    d, r1, r2 = 0.55, 0.8, 0.5
    a = (r1 ** 2 - r2 ** 2 + d ** 2) / (2 * d)
    Bp = np.array([a, math.sqrt(r1 ** 2 - a ** 2)])
    th = math.atan2(Bp[1], Bp[0])
    q = np.array([th, 0.0, math.atan2(Bp[1], Bp[0] - d)])
    assert np.abs(loop.constraint_residual(q)).max() < 1e-12
    with pytest.raises(SingularConfigurationError, match="singular.*crank"):
        loop.G(q)
    with pytest.raises(SingularConfigurationError):
        loop.dynamics(q, [1.0])
    four_bar().G(q)  # the crank as input is regular there


def test_loop_model_validation():
    tree = four_bar().tree
    pin = LoopClosure("coupler", "rocker", Transform(np.eye(3), [0.6, 0, 0]),
                      Transform(np.eye(3), [0.5, 0, 0]), kind="planar")
    with pytest.raises(ClosureError, match="redundant"):
        LoopModel(tree, [LoopClosure("coupler", "rocker", kind="revolute")], ["crank"])
    with pytest.raises(ClosureError, match="unknown body 'tibia'"):
        LoopModel(tree, [LoopClosure("coupler", "tibia", kind="planar")], ["crank"])
    with pytest.raises(ClosureError, match="same body"):
        LoopModel(tree, [LoopClosure("rocker", "rocker", kind="planar")], ["crank"])
    with pytest.raises(ClosureError, match="unknown kind"):
        LoopModel(tree, [LoopClosure("coupler", "rocker", kind="hinge")], ["crank"])
    with pytest.raises(ClosureError, match="axis"):
        LoopModel(tree, [LoopClosure("coupler", "rocker", kind="planar", axis="w")], ["crank"])
    with pytest.raises(ClosureError, match="duplicates"):
        LoopModel(tree, [pin], [0, 0])
    with pytest.raises(ClosureError, match="out of range"):
        LoopModel(tree, [pin], [7])
    with pytest.raises(ClosureError, match="at least one"):
        LoopModel(tree, [], ["crank"])
    with pytest.raises(ClosureError, match="Transform"):
        LoopModel(tree, [LoopClosure("coupler", "rocker", X_pred=np.eye(4), kind="planar")], ["crank"])
    with pytest.raises(TypeError, match="Model"):
        LoopModel("four_bar", [pin], ["crank"])
    loop = LoopModel(tree, [pin], ["crank"])
    with pytest.raises(ValueError, match="y must have"):
        loop.dynamics(four_bar().q_ref, [1.0, 2.0])
    with pytest.raises(ValueError, match="no q_ref"):
        complete_configuration(loop, [0.3])
    with pytest.raises(ValueError, match="1-DoF"):
        independent_coordinates(LOOPS["floating"], LOOPS["floating"].q_ref)
