"""A placement target for 6-D contacts (the Baumgarte kp term of a frame contact): the logarithms
of SO(3) / SE(3) and their right Jacobians (symdyn.spatial.log3, jlog3, log6, jlog6) on every
backend, the Contact's target argument, the constrained dynamics against Pinocchio 4.1's
constraintDynamics (a RigidConstraintModel whose joint2_placement is the target), and the
analytical derivatives against CasADi AD of symdyn's own constraint_dynamics and against
Pinocchio's computeConstraintDynamicsDerivatives where that is exact.

Pinocchio orders twists and 6-D contact rows ``[linear; angular]``, symdyn ``[angular; linear]``
(``swap6``, ``P6``). Pinocchio 4.1's q derivatives of ``"local_world_aligned"`` 6-D contacts
with a target and kp > 0 are not exact (it applies Jlog6 to the world-axes Jacobian and leaves
out the turning of the error's axes; module docstring of symdyn.contact.derivatives): there the
check is CasADi AD only.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import symdyn as sd
from symdyn.backends import get_backend
from symdyn.contact import resolve_contacts
from symdyn.model import Frame
from symdyn.spatial import Transform, jlog3, jlog6, log3, log6

from test_contact_derivatives import NAMES, from_pin, worst
from test_contact_dynamics import TOL, random_state, rel, robot, swap6, twin

N = get_backend("numpy")
P6 = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])  # swaps 3-blocks

#: rotation angles of the checks: zero, tiny, the series/closed-form switches, up to pi
ANGLES = (0.0, 1e-9, 1e-4, 0.05, 0.3, 0.33, 1.0, 2.0, 2.83, 3.0, math.pi - 1e-3, math.pi - 1e-7,
          math.pi)


def hat6(xi):
    """The 4x4 matrix of a twist [w; u]."""
    w, u = xi[:3], xi[3:]
    return np.array([[0, -w[2], w[1], u[0]], [w[2], 0, -w[0], u[1]], [-w[1], w[0], 0, u[2]],
                     [0, 0, 0, 0]], float)


def expm(A):
    """Matrix exponential by scaling and squaring of a Taylor series (the test's own reference)."""
    s = max(0, int(math.ceil(math.log2(max(np.abs(A).sum(axis=1).max(), 1e-300)))) + 1)
    X = A / 2 ** s
    out, term = np.eye(len(A)), np.eye(len(A))
    for k in range(1, 25):
        term = term @ X / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def random_twists(seed, count=3):
    """Twists [theta n; u] at each angle of ANGLES (count random axes each)."""
    rng = np.random.default_rng(seed)
    out = []
    for th in ANGLES:
        for _ in range(count):
            n = rng.normal(size=3)
            out.append(np.concatenate([th * n / np.linalg.norm(n), rng.uniform(-1, 1, 3)]))
    return out


def placement(xi):
    M = expm(hat6(xi))
    return M[:3, :3], M[:3, 3]


# --- log3 / log6 and their Jacobians ---------------------------------------------------------------

def test_log_inverts_the_exponential_at_every_angle():
    """exp(log(M)) = M at every angle up to pi (where the logarithm is two-valued) and
    log(exp(xi)) = xi below pi."""
    for xi in random_twists(0):
        R, p = placement(xi)
        lg = log6(N, R, p)
        assert lg.shape == (6,) and np.allclose(log3(N, R), lg[:3], rtol=0, atol=0)
        back = expm(hat6(lg))
        assert np.abs(back[:3, :3] - R).max() < 3e-15 and np.abs(back[:3, 3] - p).max() < 3e-15
        theta = np.linalg.norm(xi[:3])
        if theta < math.pi - 1e-6:                   # unique there
            assert np.abs(lg - xi).max() < 1e-14 * max(1.0, 1 / (math.pi - theta)), theta
        assert abs(np.linalg.norm(lg[:3]) - theta) < 1e-14


def test_logs_and_jacobians_match_pinocchio():
    pin = pytest.importorskip("pinocchio")
    for xi in random_twists(1):
        R, p = placement(xi)
        M = pin.SE3(R, p)
        assert np.abs(log3(N, R) - pin.log3(R)).max() < 1e-13
        assert np.abs(jlog3(N, R) - pin.Jlog3(R)).max() < 1e-13
        assert np.abs(log6(N, R, p) - P6 @ pin.log6(M).vector).max() < 1e-13
        assert np.abs(jlog6(N, R, p) - P6 @ pin.Jlog6(M) @ P6).max() < 1e-13


def test_jacobians_are_the_derivatives_of_the_logarithms():
    """jlog6(M) = d log6(M exp(xi)) / d xi: central differences (NumPy) away from pi, and CasADi
    AD of the graph of log6 at every angle, theta = 0 included (a smooth graph there: no square
    root of sin^2, finite derivatives)."""
    ca = pytest.importorskip("casadi")
    C = get_backend("casadi")
    xi = ca.SX.sym("xi", 6)
    R0, p0 = ca.SX.sym("R0", 3, 3), ca.SX.sym("p0", 3)
    th2 = ca.dot(xi[:3], xi[:3])
    W = ca.skew(xi[:3])
    E = ca.SX.eye(3) + C.sin_over_x(th2) * W + C.one_minus_cos_over_x2(th2) * (W @ W)
    V = ca.SX.eye(3) + C.one_minus_cos_over_x2(th2) * W + C.x_minus_sin_over_x3(th2) * (W @ W)
    moved = (R0 @ E, p0 + R0 @ (V @ xi[3:]))                  # M exp(xi)
    f = ca.Function("f", [R0, p0, xi],
                    [ca.jacobian(log6(C, *moved), xi), ca.jacobian(log3(C, moved[0]), xi[:3]),
                     jlog6(C, R0, p0), jlog3(C, R0)])
    h = 1e-6
    for x in random_twists(2, count=2):
        R, p = placement(x)
        ad6, ad3, j6, j3 = (np.array(v) for v in f(R, p, np.zeros(6)))
        assert np.all(np.isfinite(ad6))
        assert np.abs(ad6 - jlog6(N, R, p)).max() < 1e-12 and np.abs(j6 - ad6).max() < 1e-12
        assert np.abs(ad3 - jlog3(N, R)).max() < 1e-12 and np.abs(j3 - ad3).max() < 1e-12
        if np.linalg.norm(x[:3]) < 3.0:
            fd = np.column_stack([
                (log6(N, *placement_of(R, p, h * e)) - log6(N, *placement_of(R, p, -h * e)))
                / (2 * h) for e in np.eye(6)])
            assert np.abs(fd - jlog6(N, R, p)).max() < 1e-8


def placement_of(R, p, xi):
    """(R, p) exp(xi)."""
    M = np.eye(4)
    M[:3, :3], M[:3, 3] = R, p
    M = M @ expm(hat6(xi))
    return M[:3, :3], M[:3, 3]


@pytest.mark.parametrize("backend", ["casadi", "sympy", "symengine", "jax"])
def test_every_backend_gives_numpys_logarithms(backend):
    if backend == "symengine":
        pytest.importorskip("symengine")
    if backend == "jax":
        jax = pytest.importorskip("jax")
        jax.config.update("jax_enable_x64", True)
    B = get_backend(backend)
    for k, xi in enumerate(random_twists(3, count=1)):
        if backend in ("sympy", "symengine") and k % 3:
            continue                                         # a few angles suffice there
        R, p = placement(xi)
        Rb, pb = B.const(R), B.const(p)
        for fn, args in ((log6, (R, p)), (jlog6, (R, p)), (jlog3, (R,))):
            got = np.asarray(B.to_numpy(fn(B, *((Rb, pb)[:len(args)]))), float)
            want = fn(N, *args)
            assert np.abs(got.reshape(want.shape) - want).max() < 1e-13, (backend, fn.__name__)


def test_jax_derivatives_are_finite_at_the_identity():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    J = get_backend("jax")

    def moved_log(xi):
        th2 = jnp.dot(xi[:3], xi[:3])
        W = J.skew(xi[:3])
        E = jnp.eye(3) + J.sin_over_x(th2) * W + J.one_minus_cos_over_x2(th2) * (W @ W)
        return log6(J, E, xi[3:])

    for jac in (jax.jacfwd, jax.jacrev):
        assert np.abs(np.asarray(jac(moved_log)(jnp.zeros(6))) - np.eye(6)).max() < 1e-15


# --- the Contact's target ------------------------------------------------------------------------

def test_target_forms_are_stored_as_one_hashable_pair():
    pin = pytest.importorskip("pinocchio")
    R, p = placement(np.array([0.3, -1.2, 0.4, 0.1, 0.2, -0.3]))
    H = np.eye(4)
    H[:3, :3], H[:3, 3] = R, p
    forms = [H, H.tolist(), (R, p), [R.tolist(), list(p)], (R, p.reshape(3, 1)), pin.SE3(R, p),
             Transform(R.T, p)]
    contacts = [sd.Contact("panda_hand_tcp", 6, "local", (1.0, 2.0), target=t) for t in forms]
    stored = contacts[0].target
    assert stored == (tuple(map(tuple, R.tolist())), tuple(p.tolist()))
    assert all(c.target == stored for c in contacts) and len(set(contacts)) == 1
    again = dataclasses.replace(contacts[0], reference="local_world_aligned")
    assert again.target == stored and again != contacts[0]
    assert sd.Contact("FL_FOOT", 3, target=[1, 2, 3]).target == (1.0, 2.0, 3.0)   # 3-D unchanged


def test_bad_targets_are_refused_clearly():
    R, p = placement(np.array([0.3, -1.2, 0.4, 0.1, 0.2, -0.3]))
    C = sd.Contact
    H = np.eye(4)
    H[:3, :3], H[:3, 3], H[3, 2] = R, p, 1.0                 # last row [0, 0, 1, 1]
    for t in ((2 * R, p), (np.diag([1.0, 1.0, -1.0]), p), (R + 1e-7, p),      # not rotations
              (R, [0.0, np.nan, 1.0]), np.full((4, 4), np.inf), H,            # not finite, H
              (R[:2], p), (R, [1.0, 2.0]), np.eye(3), 3.0):                   # shapes
        with pytest.raises(ValueError, match="target"):
            C("f", 6, target=t)
    for t in ("abc", (R.astype(complex), p), (R, ["x", 1, 2]), object(), (R > 0, p)):
        with pytest.raises(TypeError, match="target"):
            C("f", 6, target=t)
    with pytest.raises(TypeError, match="3 numbers"):
        C("f", 3, target=(R, p))                             # a 3-D contact takes a point
    assert C("f", 6, target=(R + 1e-11, p)).target is not None   # rounding is accepted


# --- values against Pinocchio ----------------------------------------------------------------------

SOLES = ("left_sole_link", "right_sole_link")
HANDS = {"panda": ("panda_hand_tcp",), "talos": SOLES}


def pin_contacts(P, contacts):
    """Pinocchio's RigidConstraintModels of 6-D contacts: joint2 the world, joint2_placement the
    target, Baumgarte gains Kp, Kd."""
    pin, pm, m = P.pin, P.pm, P.model
    ref = {"local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    models = []
    for rc in resolve_contacts(m, contacts):
        c, fr = rc.contact, rc.frame
        jid = pm.getJointId(m.joint_names[fr.body])
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, pm, jid,
                                      pin.SE3(np.array(fr.X.E, float).T, np.array(fr.X.r, float)),
                                      ref[c.reference])
        cm.joint2_placement = pin.SE3(np.array(c.target[0]), np.array(c.target[1]))
        gains = cm.m_baumgarte_parameters
        gains.Kp, gains.Kd = c.baumgarte                   # Pinocchio 4.1: one gain per kind
        cm.setBaumgarteCorrectorParameters(gains)
        models.append(cm)
    cms = P.pin.StdVec_RigidConstraintModel(models)
    cds = P.pin.StdVec_RigidConstraintData([cm.createData() for cm in models])
    pin.initConstraintDynamics(pm, P.pd, cms, cds)
    return cms, cds


def pin_solve(P, q, qd, tau, contacts, derivatives=False):
    pin, pb, m = P.pin, P.pb, P.model
    cms, cds = pin_contacts(P, contacts)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)
    a = pin.constraintDynamics(P.pm, P.pd, pb.q_to_pin(m, q), pb.v_to_pin(m, qd),
                               pb.v_to_pin(m, tau), cms, cds, settings)
    out = (pb.v_from_pin(m, a), swap6(P.pd.lambda_c, contacts),
           [P6 @ cd.contact_placement_error.vector for cd in cds])
    if derivatives:
        d = pin.computeConstraintDynamicsDerivatives(P.pm, P.pd, cms, cds, settings)
        return out, from_pin(P, d, contacts, (False,) * 3 + (True,) * 3)
    return out


def targeted(model, q, frames, reference, gains, seed, size=0.3):
    """6-D contacts at ``frames`` with targets near their placements at q (a random rotation of
    about ``size`` rad and offset of about ``size / 3``)."""
    rng = np.random.default_rng(seed)
    out = []
    for f in frames:
        R, p = sd.frame_placement(model, q, f)
        Rt, dp = placement(np.concatenate([rng.uniform(-size, size, 3),
                                           rng.uniform(-size, size, 3) / 3]))
        out.append(sd.Contact(f, 6, reference, gains, target=(R @ Rt, p + dp)))
    return out


@pytest.mark.parametrize("name", ["panda", "talos"])
@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_constraint_dynamics_matches_pinocchio(name, reference):
    """qdd and lam equal Pinocchio's, the position errors (``-log6(c1Mc2)``, frame coordinates)
    its ``contact_placement_error``, and the target changes the answer."""
    m, P = robot(name), twin(name)
    worst_seen = 0.0
    for seed in range(2):
        q, qd, tau = random_state(m, seed)
        contacts = targeted(m, q, HANDS[name], reference, (25.0, 4.0), seed)
        qdd, lam = sd.constraint_dynamics(m, q, qd, tau, contacts)
        qdd_p, lam_p, errors = pin_solve(P, q, qd, tau, contacts)
        worst_seen = max(worst_seen, rel(qdd, qdd_p), rel(lam, lam_p))
        for c, e in zip(contacts, errors):
            R, p = sd.frame_placement(m, q, c.frame)
            R2, p2 = np.array(c.target[0]), np.array(c.target[1])
            assert rel(log6(N, R2.T @ R, R2.T @ (p - p2)), e) < 1e-13
        anchored = [dataclasses.replace(c, target=None) for c in contacts]
        assert rel(sd.constraint_dynamics(m, q, qd, tau, anchored)[1], lam) > 1e-3
    assert worst_seen < TOL, f"{name} {reference}: {worst_seen:.2e}"


def test_target_at_the_placement_is_the_anchored_contact_and_world_is_local_moved():
    """A target at the contact's placement at q gives the anchored contact's values and
    derivatives (error zero, de/dq = J); a "world" contact gives the "local" one's qdd and its
    force moved by the frame's force transform."""
    m = robot("panda")
    q, qd, tau = random_state(m, 4)
    R, p = sd.frame_placement(m, q, HANDS["panda"][0])
    for ref in ("local", "local_world_aligned", "world"):
        free = sd.Contact(HANDS["panda"][0], 6, ref, (30.0, 2.0))
        pinned = dataclasses.replace(free, target=(R, p))
        for f in (sd.constraint_dynamics, sd.constraint_dynamics_derivatives):
            a, b = f(m, q, qd, tau, [free]), f(m, q, qd, tau, [pinned])
            assert max(rel(x, y) for x, y in zip(a, b)) < 1e-12, (ref, f.__name__)
    local, world = targeted(m, q, HANDS["panda"], "local", (30.0, 2.0), 5), \
        targeted(m, q, HANDS["panda"], "world", (30.0, 2.0), 5)
    qdd_l, lam_l = sd.constraint_dynamics(m, q, qd, tau, local)
    qdd_w, lam_w = sd.constraint_dynamics(m, q, qd, tau, world)
    X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ N.skew(p), R.T]])     # world -> frame
    assert rel(qdd_w, qdd_l) < 1e-12 and rel(X.T @ lam_l, lam_w) < 1e-12


# --- derivatives -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["panda", "talos"])
def test_derivatives_match_pinocchio_where_it_is_exact(name):
    """"local" contacts with kp and kd, "local_world_aligned" ones with kd only."""
    m, P = robot(name), twin(name)
    q, qd, tau = random_state(m, 7)
    floors = {"dqdd_dtau": float(np.abs(np.linalg.inv(sd.crba(m, q))).max())}
    for ref, gains in (("local", (25.0, 4.0)), ("local", (25.0, 0.0)),
                       ("local_world_aligned", (0.0, 4.0))):
        contacts = targeted(m, q, HANDS[name], ref, gains, 8)
        got = sd.constraint_dynamics_derivatives(m, q, qd, tau, contacts)
        _, expect = pin_solve(P, q, qd, tau, contacts, derivatives=True)
        err, errs = worst(got, expect, NAMES, floors)
        assert err < TOL, f"{name} {ref} {gains}: {errs}"


def ad_check(model, state, contacts, damping):
    """The analytical derivatives (NumPy, and traced on CasADi SX) against CasADi AD of
    constraint_dynamics at q (+) dq (tangent derivatives at dq = 0), the targets fixed."""
    ca = pytest.importorskip("casadi")
    q, qd, tau = state
    q0 = ca.SX.sym("q0", model.nq)
    dq, v, u = (ca.SX.sym(s, model.nv) for s in ("dq", "v", "u"))
    qdd, lam = sd.constraint_dynamics(model, sd.integrate(model, q0, dq), v, u, contacts, damping)
    ad = ca.Function("ad", [q0, dq, v, u], [ca.jacobian(y, x) for y in (qdd, lam)
                                            for x in (dq, v, u)])
    ours = ca.Function("ours", [q0, v, u],
                       list(sd.constraint_dynamics_derivatives(model, q0, v, u, contacts, damping)))
    expect = [np.array(x) for x in ad(q, np.zeros(model.nv), qd, tau)]
    got = sd.constraint_dynamics_derivatives(model, q, qd, tau, contacts, damping)
    err, errs = worst(got, expect, NAMES)
    assert err < 1e-10, errs
    err, errs = worst([np.array(x) for x in ours(q, qd, tau)], got, NAMES)
    # graph backends take FDSVA's ground route (AZA), NumPy the dense one: rounding apart
    assert err < 1e-10, f"casadi vs numpy: {errs}"


def random_tree_contacts(seed, reference):
    """A random 6-body tree (free-flyer on odd seeds) with a 6-D contact of ``reference`` at a
    random body and placement, its target a random placement near it, and a 3-D contact with a
    target on another body, J of well-conditioned full row rank."""
    rng = np.random.default_rng(seed)
    for tree_seed in range(seed, seed + 1000, 100):
        m = sd.models.random_tree(6, seed=tree_seed, floating_base=bool(seed % 2),
                                  joint_kinds=("revolute", "prismatic", "spherical"))
        state = random_state(m, seed)
        for _ in range(50):
            b6, b3 = (int(b) for b in rng.choice(m.N, size=2, replace=False))
            f6 = Frame(b6, Transform(sd.models.random_rotation(rng), rng.uniform(-0.3, 0.3, 3)))
            R, p = sd.frame_placement(m, state[0], f6)
            Rt, dp = placement(rng.uniform(-0.6, 0.6, 6))
            contacts = [sd.Contact(f6, 6, reference, tuple(rng.uniform(1, 5, 2)),
                                   target=(R @ Rt, p + dp)),
                        sd.Contact(b3, 3, "local", tuple(rng.uniform(1, 5, 2)),
                                   target=tuple(rng.uniform(-1, 1, 3)))]
            s = np.linalg.svd(sd.contact_jacobian(m, state[0], contacts), compute_uv=False)
            if len(s) == 9 and s[-1] > 0.02 * s[0]:
                return m, state, contacts
    raise AssertionError(f"no random tree carries the contacts (seed {seed})")


@pytest.mark.parametrize("seed,reference", [(0, "local"), (1, "local_world_aligned"),
                                            (3, "world"), (4, "local_world_aligned")])
def test_derivatives_match_casadi_ad_on_random_trees(seed, reference):
    """Every reference, revolute / prismatic / spherical joints, a free-flyer on odd seeds,
    damping 0 and > 0."""
    m, state, contacts = random_tree_contacts(seed, reference)
    for damping in (0.0, 0.05):
        ad_check(m, state, contacts, damping)


@pytest.mark.parametrize("reference", ["local_world_aligned", "world"])
def test_derivatives_match_casadi_ad_on_panda(reference):
    """Where Pinocchio 4.1 is not exact ("local_world_aligned" with kp and a target; "world",
    which it refuses), and at the target itself (zero error: AD through log6 at the identity)."""
    m = robot("panda")
    q, qd, tau = random_state(m, 9)
    ad_check(m, (q, qd, tau), targeted(m, q, HANDS["panda"], reference, (25.0, 4.0), 10), 0.0)
    at = [sd.Contact(HANDS["panda"][0], 6, reference, (25.0, 4.0),
                     target=sd.frame_placement(m, q, HANDS["panda"][0]))]
    ad_check(m, (q, qd, tau), at, 0.0)
