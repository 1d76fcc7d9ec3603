"""Friction cones in ``sd.contact_inverse_dynamics`` (``friction=``, ``solve_ncp=``): agreement
with Pinocchio 4.1's ``contactInverseDynamics`` in each regime (stick, slide, separate), the
same answer on SymPy / CasADi / JAX as on NumPy, the default without a cone, and bad input.

Pinocchio's twin of a point contact here is a ``PointContactConstraintModel`` anchored at the
contact's current placement and turned by pi about its x axis (``D = diag(1, -1, -1)``):
Pinocchio's cone holds the force on the environment, with its normal pointing into the
environment, symdyn's the force on the robot with the normal pointing out of it (the function's
docstring). Then ``correction_pin = -D correction``, ``lambda_pin = -D lam`` and the torques
agree. A ``"local_world_aligned"`` contact's twin has its placement's axes along the world's at q.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import symdyn as sd

sys.path.insert(0, os.path.dirname(__file__))
from test_contact_dynamics import FEET, TOL, random_state, rel, robot, twin, wall_arm  # noqa: E402

D = np.diag([1.0, -1.0, -1.0])
R_ROW = np.array([1e-2, 1e-2, 3e-2])       # tangential, tangential, normal compliance
DT = 1e-2

#: c_ref targets per contact (symdyn's axes) that put each contact in a known regime, for
#: friction 0.6 and R_ROW: stick, slide, separate, and one that slides without De Saxce's
#: correction but separates with it (0 < c_z < mu |c_T|).
TARGETS = np.array([[0.3, -0.2, -8.0], [4.0, -3.0, -2.0], [0.5, 1.0, 3.0], [5.0, 0.0, 1.0]])
EXPECT = {False: ["stick", "slide", "separate", "slide"],
          True: ["stick", "slide", "separate", "separate"]}


def contacts(reference="local"):
    return [sd.Contact(f, 3, reference) for f in FEET]


def correction_for(m, q, qd, qdd, cs, targets):
    """The correction that makes ``c_ref`` equal ``targets`` (one row of 3 per contact)."""
    J = sd.contact_jacobian(m, q, cs)
    return DT * np.ravel(targets) - J @ (qd + DT * qdd)


def c_ref(m, q, qd, qdd, cs, correction):
    return (sd.contact_jacobian(m, q, cs) @ (qd + DT * qdd) + correction) / DT


def regimes(lam, c, mus, R=R_ROW):
    """Each contact's regime read off the force: 0, -c/R, or on the cone's boundary."""
    out = []
    for k, mu in enumerate(mus):
        f, ck = lam[3 * k:3 * k + 3], c[3 * k:3 * k + 3]
        scale = np.abs(ck / R).max()
        if np.abs(f).max() <= 1e-12 * scale:
            out.append("separate")
        elif np.abs(f + ck / R).max() <= 1e-12 * scale:
            out.append("stick")
        else:
            assert f[2] > 0 and abs(np.hypot(f[0], f[1]) - mu * f[2]) <= 1e-12 * scale
            out.append("slide")
    return out


def pinocchio_cid(m, q, qd, qdd, cs, correction, mus, solve_ncp):
    """Pinocchio's contactInverseDynamics, converged tightly, mapped to symdyn's conventions."""
    pin = pytest.importorskip("pinocchio")
    P = twin("solo12")
    pb, pm = P.pb, P.pm
    qp = pb.q_to_pin(m, q)
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, qp)
    models = []
    for c, mu in zip(cs, mus):
        fr = m.frames[c.frame]
        jid = pm.getJointId(m.joint_names[fr.body])
        E = np.array(fr.X.E, float).T                       # frame axes in the joint's
        if c.reference == "local_world_aligned":
            E = pd.oMi[jid].rotation.T                      # world axes at q
        cm = pin.PointContactConstraintModel(pm, jid, pin.SE3(E @ D, np.array(fr.X.r, float)))
        cm.joint2_placement = pd.oMi[jid] * cm.joint1_placement
        cm.setFriction(mu)
        cm.setCompliance(R_ROW)
        models.append(cm)
    cms = pin.StdVec_PointContactConstraintModel(models)
    cds = pin.StdVec_PointContactConstraintData([cm.createData() for cm in models])
    pin.computeJointJacobians(pm, pd, qp)
    for cm, cd in zip(cms, cds):
        cm.calc(pm, pd, cd)
    Dn = np.kron(np.eye(len(cs)), D)
    settings = pin.ProximalSettings(1e-15, 1e-15, 1e-6, 10000)
    ok, tau, lam = pin.contactInverseDynamics(pm, pd, qp, pb.v_to_pin(m, qd), pb.v_to_pin(m, qdd),
                                              DT, cms, cds, -Dn @ correction, settings, None,
                                              solve_ncp)
    assert ok, "Pinocchio did not converge"
    return pb.v_from_pin(m, tau), -Dn @ lam


# --- against Pinocchio -------------------------------------------------------------------------

@pytest.mark.parametrize("solve_ncp", [False, True])
def test_each_regime_matches_pinocchio(solve_ncp):
    """Corrections chosen so that the four feet stick, slide, separate and (0 < c_z < mu |c_T|)
    slide without De Saxce's correction / separate with it; both references."""
    m = robot("solo12")
    worst = 0.0
    for seed, reference in enumerate(("local", "local_world_aligned")):
        cs = contacts(reference)
        q, qd, qdd = random_state(m, 20 + seed)
        corr = correction_for(m, q, qd, qdd, cs, TARGETS)
        tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, np.tile(R_ROW, 4), corr,
                                               friction=0.6, solve_ncp=solve_ncp)
        assert regimes(lam, c_ref(m, q, qd, qdd, cs, corr), [0.6] * 4) == EXPECT[solve_ncp]
        tau_p, lam_p = pinocchio_cid(m, q, qd, qdd, cs, corr, [0.6] * 4, solve_ncp)
        worst = max(worst, rel(lam, lam_p), rel(tau, tau_p))
    assert worst < TOL, f"max relative difference {worst:.2e}"


@pytest.mark.parametrize("solve_ncp", [False, True])
def test_random_states_and_per_contact_friction_match_pinocchio(solve_ncp):
    """Random states and corrections, one friction per contact (0 included); every regime seen."""
    m = robot("solo12")
    cs = contacts()
    mus = [0.6, 0.2, 1.5, 0.0]
    rng = np.random.default_rng(5)
    seen, worst = set(), 0.0
    for seed in range(6):
        q, qd, qdd = random_state(m, 30 + seed)
        qd, qdd = 0.1 * qd, 0.1 * qdd
        corr = rng.uniform(-0.05, 0.05, 12) + np.tile([0.0, 0.0, -0.03], 4)
        tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, np.tile(R_ROW, 4), corr,
                                               friction=mus, solve_ncp=solve_ncp)
        seen.update(regimes(lam, c_ref(m, q, qd, qdd, cs, corr), mus))
        tau_p, lam_p = pinocchio_cid(m, q, qd, qdd, cs, corr, mus, solve_ncp)
        worst = max(worst, rel(lam, lam_p), rel(tau, tau_p))
    assert seen == {"stick", "slide", "separate"}
    assert worst < TOL, f"max relative difference {worst:.2e}"


def test_the_cone_holds_the_force_on_the_robot():
    """Standing (feet pressed down along world z): lam_z >= 0 pushes the robot up; the torques
    are rnea - J^T lam; a huge friction leaves the forces of the default (no cone)."""
    m = robot("solo12")
    cs = contacts("local_world_aligned")
    q, qd, qdd = random_state(m, 3)
    corr = correction_for(m, q, qd, qdd, cs, np.tile([0.1, -0.2, -5.0], (4, 1)))
    R = np.tile(R_ROW, 4)
    tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, R, corr, friction=0.8)
    assert np.all(lam[2::3] > 0)
    J = sd.contact_jacobian(m, q, cs)
    assert rel(tau, sd.rnea(m, q, qd, qdd) - J.T @ lam) < 1e-13
    free = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, R, corr)
    for ncp in (False, True):
        wide = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, R, corr, friction=1e8,
                                           solve_ncp=ncp)
        assert rel(wide[0], free[0]) < 1e-14 and rel(wide[1], free[1]) < 1e-14


def test_tangential_velocity_zero_is_finite():
    """c_T = 0 exactly (at rest, correction along the normal): no 0/0 on any branch."""
    m = robot("solo12")
    cs = contacts()
    q = random_state(m, 1)[0]
    z = np.zeros(m.nv)
    for cz in (-0.02, 0.0, 0.02):
        corr = np.tile([0.0, 0.0, cz], 4)
        for ncp in (False, True):
            with np.errstate(all="raise"):
                _, lam = sd.contact_inverse_dynamics(m, q, z, z, cs, DT, 1e-2, corr, friction=0.5,
                                                     solve_ncp=ncp)
            expect = np.tile([0.0, 0.0, max(-cz / DT / 1e-2, 0.0)], 4)
            assert np.allclose(lam, expect, rtol=1e-14, atol=1e-14)


# --- the other backends ------------------------------------------------------------------------

ARM_STATE = (np.array([0.1, 0.4, -0.7]), np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -3.0]))


def arm_corrections():
    """Corrections that put the wall arm's tip in each regime (friction 0.6, compliance R_ROW),
    and one at c_T = 0 exactly (at rest)."""
    arm, tip = wall_arm()
    x, v, a = ARM_STATE
    out = [(x, v, a, correction_for(arm, x, v, a, [tip], t)) for t in TARGETS]
    z = np.zeros(3)
    return out + [(x, z, z, np.array([0.0, 0.0, -0.02]))]


@pytest.mark.parametrize("lib", ["sympy", "symengine"])
def test_sympy_and_symengine_match_numpy(lib):
    """Symbols for q, qd, qdd and the correction: one closed form (Piecewise) per solve_ncp,
    evaluated in every regime."""
    S = pytest.importorskip(lib)
    arm, tip = wall_arm()
    syms = [S.Matrix(S.symbols(n)) for n in ("z q1 q2", "zd qd1 qd2", "zdd qdd1 qdd2", "e0 e1 e2")]
    for ncp in (False, True):
        tau_s, lam_s = sd.contact_inverse_dynamics(arm, *syms[:3], [tip], DT, R_ROW, syms[3],
                                                   friction=0.6, solve_ncp=ncp)
        for vals in arm_corrections():
            sub = {s: float(x) for Y, X in zip(syms, vals) for s, x in zip(Y, X)}
            tau, lam = sd.contact_inverse_dynamics(arm, *vals[:3], [tip], DT, R_ROW, vals[3],
                                                   friction=0.6, solve_ncp=ncp)
            got = [np.array([float(e.subs(sub)) for e in M], float) for M in (tau_s, lam_s)]
            assert rel(got[1], lam) < 1e-12 and rel(got[0], tau) < 1e-12


def test_casadi_matches_numpy():
    ca = pytest.importorskip("casadi")
    m = robot("solo12")
    cs = contacts("local_world_aligned")
    x, v, u, e = (ca.SX.sym(n, k) for n, k in (("q", m.nq), ("v", m.nv), ("u", m.nv), ("e", 12)))
    mus = [0.6, 0.6, 0.6, 0.3]
    for ncp in (False, True):
        f = ca.Function("cid", [x, v, u, e],
                        list(sd.contact_inverse_dynamics(m, x, v, u, cs, DT, np.tile(R_ROW, 4), e,
                                                         friction=mus, solve_ncp=ncp)))
        q, qd, qdd = random_state(m, 22)
        z = np.zeros(m.nv)
        for qd, qdd, corr in ((qd, qdd, correction_for(m, q, qd, qdd, cs, TARGETS)),
                              (z, z, np.tile([0.0, 0.0, -0.02], 4))):     # c_T = 0 exactly
            tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, np.tile(R_ROW, 4), corr,
                                                   friction=mus, solve_ncp=ncp)
            got = [np.array(r, float).ravel() for r in f(q, qd, qdd, corr)]
            assert np.all(np.isfinite(got[1]))
            assert rel(got[1], lam) < 1e-12 and rel(got[0], tau) < 1e-12


def test_jax_matches_numpy_with_finite_derivatives():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    arm, tip = wall_arm()
    for ncp in (False, True):
        def f(q, qd, qdd, e, ncp=ncp):
            return sd.contact_inverse_dynamics(arm, q, qd, qdd, [tip], DT, R_ROW, e, friction=0.6,
                                               solve_ncp=ncp, backend="jax")
        fj, dfj = jax.jit(f), jax.jit(jax.jacobian(lambda *a: f(*a)[1], argnums=(1, 3)))
        for vals in arm_corrections():
            expect = sd.contact_inverse_dynamics(arm, *vals[:3], [tip], DT, R_ROW, vals[3],
                                                 friction=0.6, solve_ncp=ncp)
            got = fj(*map(jnp.asarray, vals))
            assert rel(np.asarray(got[1]), expect[1]) < 1e-12
            assert rel(np.asarray(got[0]), expect[0]) < 1e-12
            assert all(np.all(np.isfinite(np.asarray(d))) for d in dfj(*map(jnp.asarray, vals)))


# --- the default and bad input -----------------------------------------------------------------

def test_default_is_without_cone():
    """friction=None: lam = -c_ref / R row by row, whatever the regime would be."""
    m = robot("solo12")
    cs = contacts()
    q, qd, qdd = random_state(m, 20)
    corr = correction_for(m, q, qd, qdd, cs, TARGETS)
    R = np.tile(R_ROW, 4)
    tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, R, corr)
    assert rel(lam, -TARGETS.ravel() / R) < 1e-12
    assert tau.shape == (m.nv,) and lam.shape == (12,)


def test_bad_friction_input():
    m = robot("solo12")
    q, qd, qdd = random_state(m, 0)
    cs = contacts()

    def call(cs=cs, compliance=1e-2, **kw):
        return sd.contact_inverse_dynamics(m, q, qd, qdd, cs, DT, compliance, **kw)

    with pytest.raises(ValueError, match="friction must be finite and >= 0"):
        call(friction=-0.1)
    with pytest.raises(ValueError, match="friction must be finite and >= 0"):
        call(friction=float("nan"))
    with pytest.raises(ValueError, match=r"friction\[2\] must be finite and >= 0"):
        call(friction=[0.5, 0.5, float("nan"), 0.5])
    with pytest.raises(ValueError, match="friction must be one number or 4 numbers"):
        call(friction=[0.5, 0.5])
    with pytest.raises(TypeError, match="friction must be a number"):
        call(friction="high")
    with pytest.raises(ValueError, match=r"contacts\[1\] is a 6-D contact.*3-D \(point\) contacts"):
        call(cs=[cs[0], sd.Contact(FEET[1], 6)], friction=0.5)
    with pytest.raises(ValueError, match=r"contacts\[1\]: friction needs equal tangential "
                                         r"compliances.*compliance\[3\]"):
        call(compliance=[1e-2] * 3 + [1e-2, 2e-2, 1e-2] + [1e-2] * 6, friction=0.5)
    with pytest.raises(TypeError, match="solve_ncp must be True or False"):
        call(friction=0.5, solve_ncp="yes")
    # without friction a 6-D contact and unequal compliances are fine, as before
    call(cs=[cs[0], sd.Contact(FEET[1], 6)], compliance=np.arange(1, 10) * 1e-2)
