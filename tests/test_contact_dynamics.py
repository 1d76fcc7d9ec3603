"""Contact dynamics (symdyn.contact): agreement with Pinocchio 4.1's constraintDynamics,
impulseDynamics and computeKKTContactDynamicMatrixInverse, the KKT identities on random trees,
the symbolic backends and bad input.

Pinocchio's twin is ``sd.to_pinocchio(model)``; a contact at a symdyn frame ``(body, X)`` is a
``RigidConstraintModel`` on the joint of ``body`` with ``joint1_placement = SE3(X.E^T, X.r)``,
fixed to the world (``joint2_id = 0``) at ``joint2_placement`` = the contact's placement at the
current q (zero position error) or, for a 3-D contact with a target, ``SE3(I, target)``.
Pinocchio's contact forces are ``[linear; angular]`` per 6-D contact, symdyn's ``[angular;
linear]``.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import symdyn as sd
from symdyn.contact import resolve_contacts
from symdyn.model import Frame
from symdyn.spatial import Transform

TOL = 1e-10
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
SOLES = ("left_sole_link", "right_sole_link")


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@functools.lru_cache(maxsize=None)
def robot(name):
    """The robot, its fingers locked when they carry mimic joints (panda); ``"NAME/fixed"``: a
    legged robot with its base fixed to the world."""
    name, _, fixed = name.partition("/")
    m = sd.load_robot(name, floating_base=False if fixed else None)
    if m.mimic:
        m = sd.reduced_model(m, [j for j in m.joint_names
                                 if j in m.mimic or j in {x.master for x in m.mimic.values()}])
    return m


#: Contact frames per robot: point contacts (3-D) at the feet of the quadrupeds, frame contacts
#: (6-D) at the soles of the humanoids (and, for talos and g1, at the left hand too).
POINTS = {"solo12": FEET, "anymal_c": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
          "go2": ("FL_foot", "FR_foot", "RL_foot", "RR_foot"),
          "b1": ("FL_foot", "FR_foot", "RL_foot", "RR_foot")}
FRAMES = {"panda": ("panda_hand_tcp",), "talos": SOLES + ("gripper_left_base_link",),
          "g1": ("left_ankle_roll_link", "right_ankle_roll_link", "left_rubber_hand")}


def robot_contacts(name, reference, gains=(0.0, 0.0), targets=False):
    C = sd.Contact
    name = name.partition("/")[0]
    if name in POINTS:
        return [C(f, 3, reference, gains, target=(0.1 * k, -0.2, -0.3) if targets else None)
                for k, f in enumerate(POINTS[name])]
    return [C(f, 6, reference, gains) for f in FRAMES[name]]


def swap6(x, contacts):
    """[linear; angular] <-> [angular; linear] in the 6-row blocks of a stacked contact vector."""
    x, r = np.array(x, float).copy(), 0
    for c in contacts:
        if c.dim == 6:
            x[r:r + 6] = np.concatenate([x[r + 3:r + 6], x[r:r + 3]])
        r += c.dim
    return x


class PinTwin:
    """Pinocchio's model of a symdyn model and its contact models."""

    def __init__(self, model):
        self.pin = pytest.importorskip("pinocchio")
        from symdyn.interop import pinocchio as pb

        self.pb, self.model = pb, model
        self.pm = pb.to_pinocchio(model)
        self.pd = self.pm.createData()

    def contacts(self, q, contacts):
        pin, pm, m = self.pin, self.pm, self.model
        pd = pm.createData()
        pin.forwardKinematics(pm, pd, self.pb.q_to_pin(m, q))
        ref = {"local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
        models = []
        for rc in resolve_contacts(m, contacts):
            c, fr = rc.contact, rc.frame
            jid = pm.getJointId(m.joint_names[fr.body])
            placement = pin.SE3(np.array(fr.X.E, float).T, np.array(fr.X.r, float))
            kind = pin.ContactType.CONTACT_3D if c.dim == 3 else pin.ContactType.CONTACT_6D
            cm = pin.RigidConstraintModel(kind, pm, jid, placement, ref[c.reference])
            cm.joint2_placement = pin.SE3(np.eye(3), np.array(c.target)) if c.target is not None \
                else pd.oMi[jid] * placement
            gains = cm.m_baumgarte_parameters
            gains.Kp, gains.Kd = c.baumgarte
            cm.setBaumgarteCorrectorParameters(gains)
            models.append(cm)
        cms = pin.StdVec_RigidConstraintModel(models)
        cds = pin.StdVec_RigidConstraintData([cm.createData() for cm in models])
        pin.initConstraintDynamics(pm, self.pd, cms, cds)
        return cms, cds

    def constraint_dynamics(self, q, qd, tau, contacts, damping=0.0):
        pin, pb, m = self.pin, self.pb, self.model
        cms, cds = self.contacts(q, contacts)
        settings = pin.ProximalSettings(1e-14, damping, 1)
        a = pin.constraintDynamics(self.pm, self.pd, pb.q_to_pin(m, q), pb.v_to_pin(m, qd),
                                   pb.v_to_pin(m, tau), cms, cds, settings)
        return pb.v_from_pin(m, a), swap6(self.pd.lambda_c, contacts)

    def impulse_dynamics(self, q, qd, contacts, restitution, damping=0.0):
        pin, pb, m = self.pin, self.pb, self.model
        cms, cds = self.contacts(q, contacts)
        v = pin.impulseDynamics(self.pm, self.pd, pb.q_to_pin(m, q), pb.v_to_pin(m, qd), cms, cds,
                                restitution, pin.ProximalSettings(1e-12, damping, 1))
        return pb.v_from_pin(m, v), swap6(self.pd.impulse_c, contacts)

    def kkt_inverse(self, q, contacts, damping):
        """Pinocchio's KKT inverse mapped to symdyn's speed order and [angular; linear] rows."""
        pb, m = self.pb, self.model
        J = sd.contact_jacobian(m, q, contacts)
        nc, n = J.shape[0], m.nv
        rows = swap6(np.arange(nc), contacts).astype(int)      # symdyn row -> Pinocchio row
        Jp = pb.matrix_to_pin(m, J, rows=None)[rows]
        K = self.pin.computeKKTContactDynamicMatrixInverse(self.pm, self.pd, pb.q_to_pin(m, q), Jp,
                                                          damping)
        idx = np.concatenate([np.argsort(pb.velocity_permutation(m)), n + np.argsort(rows)])
        return K[np.ix_(idx, idx)]


@functools.lru_cache(maxsize=None)
def twin(name):
    return PinTwin(robot(name))


def random_state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-20, 20, model.nv)


# --- against Pinocchio -------------------------------------------------------------------------

FAST = ("solo12", "panda")
PIN_CASES = [
    pytest.param(name, ref, gains, marks=[] if name in FAST else [pytest.mark.slow])
    for name in ("solo12", "panda", "talos", "anymal_c", "go2", "b1", "g1", "solo12/fixed",
                 "talos/fixed")
    for ref in ("local", "local_world_aligned") for gains in ((0.0, 0.0), (25.0, 4.0))]
SLOW_ROBOTS = [pytest.param(n, marks=pytest.mark.slow) for n in ("talos", "anymal_c", "g1")]


@pytest.mark.parametrize("name,reference,gains", PIN_CASES)
def test_constraint_dynamics_matches_pinocchio(name, reference, gains):
    m, P = robot(name), twin(name)
    contacts = robot_contacts(name, reference, gains, targets=gains[0] > 0)
    worst = 0.0
    for seed in range(3):
        q, qd, tau = random_state(m, seed)
        qdd, lam = sd.constraint_dynamics(m, q, qd, tau, contacts)
        qdd_p, lam_p = P.constraint_dynamics(q, qd, tau, contacts)
        worst = max(worst, rel(qdd, qdd_p), rel(lam, lam_p))
    assert worst < TOL, f"{name} {reference} {gains}: max relative difference {worst:.2e}"


@pytest.mark.parametrize("name", ["solo12", "panda", *SLOW_ROBOTS])
def test_impulse_and_kkt_inverse_match_pinocchio(name):
    m, P = robot(name), twin(name)
    for seed, reference in enumerate(("local", "local_world_aligned")):
        contacts = robot_contacts(name, reference)
        q, qd, _ = random_state(m, 10 + seed)
        for damping in (0.0, 1e-3):   # damping: Pinocchio's one solve with mu = damping
            qd_plus, impulse = sd.impulse_dynamics(m, q, qd, contacts, 0.4, damping)
            v_p, imp_p = P.impulse_dynamics(q, qd, contacts, 0.4, damping)
            assert rel(qd_plus, v_p) < TOL and rel(impulse, imp_p) < TOL
        for damping in (0.0, 1e-3):
            K = sd.kkt_matrix_inverse(m, q, contacts, damping)
            assert rel(K, P.kkt_inverse(q, contacts, damping)) < TOL


def test_contact_inverse_dynamics_matches_pinocchio_inside_the_cones():
    """Pinocchio's point contacts anchored at the current placement: J_pin = -J (local), so
    correction_pin = -correction and lambda_pin = -lam; friction large enough that the forces
    stay inside the cones, solve_ncp=False."""
    pin = pytest.importorskip("pinocchio")
    m, P = robot("solo12"), twin("solo12")
    pb, pm = P.pb, P.pm
    q, qd, qdd = random_state(m, 4)
    qp = pb.q_to_pin(m, q)
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, qp)
    models = []
    for f in FEET:
        fr = m.frames[f]
        jid = pm.getJointId(m.joint_names[fr.body])
        placement = pin.SE3(np.array(fr.X.E, float).T, np.array(fr.X.r, float))
        cm = pin.PointContactConstraintModel(pm, jid, placement)
        cm.joint2_placement = pd.oMi[jid] * placement
        cm.setFriction(1e8)
        cm.setCompliance(np.array([1e-2, 2e-2, 3e-2]))
        models.append(cm)
    cms = pin.StdVec_PointContactConstraintModel(models)
    cds = pin.StdVec_PointContactConstraintData([cm.createData() for cm in models])
    pin.computeJointJacobians(pm, pd, qp)
    for cm, cd in zip(cms, cds):
        cm.calc(pm, pd, cd)
    correction_pin = np.tile([0.1, -0.2, -5.0], 4)   # pushes into the ground: lambda_n > 0
    dt = 1e-2
    ok, tau_p, lam_p = pin.contactInverseDynamics(
        pm, pd, qp, pb.v_to_pin(m, qd), pb.v_to_pin(m, qdd), dt, cms, cds, correction_pin,
        pin.ProximalSettings(1e-14, 1e-14, 1e-9, 50), None, False)
    assert ok and np.all(lam_p[2::3] > 0)
    tau, lam = sd.contact_inverse_dynamics(m, q, qd, qdd, [sd.Contact(f, 3) for f in FEET], dt,
                                           np.tile([1e-2, 2e-2, 3e-2], 4), -correction_pin)
    assert rel(lam, -lam_p) < TOL and rel(tau, pb.v_from_pin(m, tau_p)) < TOL
    J = sd.contact_jacobian(m, q, [sd.Contact(f, 3) for f in FEET])
    assert rel(tau, sd.rnea(m, q, qd, qdd) - J.T @ lam) < 1e-13


@pytest.mark.parametrize("name", ["solo12", pytest.param("talos", marks=pytest.mark.slow)])
def test_damping_is_one_proximal_step_of_pinocchio(name):
    """damping > 0: the regularized solution, Pinocchio's ProximalSettings(acc, mu, max_iter=1)."""
    m, P = robot(name), twin(name)
    contacts = robot_contacts(name, "local")
    q, qd, tau = random_state(m, 3)
    qdd, lam = sd.constraint_dynamics(m, q, qd, tau, contacts, damping=1e-2)
    qdd_p, lam_p = P.constraint_dynamics(q, qd, tau, contacts, damping=1e-2)
    assert rel(qdd, qdd_p) < TOL and rel(lam, lam_p) < TOL
    exact, _ = sd.constraint_dynamics(m, q, qd, tau, contacts)
    assert rel(qdd, exact) > 1e-6          # the regularization changes the answer


def test_contact_jacobian_matches_frame_jacobian():
    m = robot("solo12")
    q = m.random_q(1)
    contacts = [sd.Contact(FEET[0], 3, "local"), sd.Contact(FEET[1], 6, "local_world_aligned"),
                sd.Contact("base_link", 6, "world")]
    J = sd.contact_jacobian(m, q, contacts)
    expect = np.vstack([sd.frame_jacobian(m, q, FEET[0], "local")[3:],
                        sd.frame_jacobian(m, q, FEET[1], "local_world_aligned"),
                        sd.frame_jacobian(m, q, "base_link", "world")])
    assert J.shape == (15, m.nv) and rel(J, expect) < 1e-14
    body = m.names.index("FL_LOWER_LEG")       # a body index, a joint name: the body frame
    J_body = sd.contact_jacobian(m, q, [sd.Contact(body, 6), sd.Contact("FL_KFE", 6)])
    assert rel(J_body[:6], sd.frame_jacobian(m, q, "FL_LOWER_LEG")) < 1e-14
    assert rel(J_body[6:], J_body[:6]) < 1e-14


# --- identities on random trees ------------------------------------------------------------------

def random_contacts(model, q, rng, count):
    """Contacts on distinct random bodies with random placements, dims and references, drawn
    again until their Jacobian at q has full row rank (well conditioned)."""
    while True:
        contacts = _draw_contacts(model, rng, count)
        s = np.linalg.svd(sd.contact_jacobian(model, q, contacts), compute_uv=False)
        if s[-1] > 1e-3 * s[0]:
            return contacts


def _draw_contacts(model, rng, count):
    bodies = rng.choice(model.N, size=count, replace=False)
    out = []
    for b in bodies:
        E = sd.models.random_rotation(rng)
        fr = Frame(int(b), Transform(E, rng.uniform(-0.3, 0.3, 3)))
        dim = int(rng.choice([3, 6]))
        refs = ["local", "local_world_aligned"] + (["world"] if dim == 6 else [])
        out.append(sd.Contact(fr, dim, str(rng.choice(refs)),
                              tuple(rng.uniform(0, 5, 2)), target=tuple(rng.uniform(-1, 1, 3))
                              if dim == 3 else None))
    return out


def rate_identity(model, q, qd, c):
    """The drift from the Jacobian's time variation, reference by reference (module docstring of
    symdyn.contact.kinematics)."""
    dJ = sd.frame_jacobian_time_variation(model, q, qd, c.frame, c.reference) @ qd
    v = sd.frame_velocity(model, q, qd, c.frame, c.reference)
    w, lin = v[:3], v[3:]
    if c.dim == 3:
        return dJ[3:] + (np.cross(w, lin) if c.reference == "local" else 0)
    if c.reference == "local_world_aligned":
        return dJ - np.concatenate([np.zeros(3), np.cross(w, lin)])
    return dJ


@pytest.mark.parametrize("seed", range(4))
def test_kkt_identities_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    m = sd.models.random_tree(9, seed=seed, floating_base=bool(seed % 2),
                              joint_kinds=("revolute", "prismatic", "spherical"))
    q, qd, tau = random_state(m, seed)
    contacts = random_contacts(m, q, rng, 2)
    qdd, lam = sd.constraint_dynamics(m, q, qd, tau, contacts)
    M, h = sd.crba(m, q), sd.nonlinear_effects(m, q, qd)
    J = sd.contact_jacobian(m, q, contacts)
    drift = sd.contact_acceleration_drift(m, q, qd, contacts)
    vc = J @ qd
    gains_p = np.concatenate([[c.baumgarte[0]] * c.dim for c in contacts])
    gains_d = np.concatenate([[c.baumgarte[1]] * c.dim for c in contacts])
    err = []
    for c in contacts:
        if c.target is None:
            err.append(np.zeros(c.dim))
            continue
        R, p = sd.frame_placement(m, q, c.frame)
        e = p - np.array(c.target)
        err.append(R.T @ e if c.reference == "local" else e)
    gamma = drift + gains_d * vc + gains_p * np.concatenate(err)
    scale = np.abs(tau).max() + np.abs(h).max()
    assert np.abs(M @ qdd + h - tau - J.T @ lam).max() < 1e-10 * scale
    assert np.abs(J @ qdd + gamma).max() < 1e-10 * (np.abs(gamma).max() + 1)
    expect = np.concatenate([rate_identity(m, q, qd, c) for c in contacts])
    assert rel(drift, expect) < 1e-12
    assert rel(sd.contact_velocity(m, q, qd, contacts), vc) < 1e-14
    # impulses: M dv = J^T impulse, J qd_plus = -r J qd_minus
    qd_plus, imp = sd.impulse_dynamics(m, q, qd, contacts, restitution=0.5)
    assert np.abs(M @ (qd_plus - qd) - J.T @ imp).max() < 1e-10 * np.abs(J.T @ imp).max()
    assert np.abs(J @ qd_plus + 0.5 * vc).max() < 1e-10 * np.abs(vc).max()
    # the KKT inverse inverts [M J^T; J -damping I]
    nc = J.shape[0]
    K = np.block([[M, J.T], [J, -0.1 * np.eye(nc)]])
    assert np.abs(sd.kkt_matrix_inverse(m, q, contacts, 0.1) @ K - np.eye(m.nv + nc)).max() < 1e-9


@pytest.mark.parametrize("seed", range(2))
def test_jacobian_time_variation_is_the_derivative_along_the_motion(seed):
    """dJ/dt from central differences of J along q(t) = integrate(q, qd t) (constant speeds)."""
    rng = np.random.default_rng(20 + seed)
    m = sd.models.random_tree(7, seed=seed, floating_base=True, joint_kinds=("revolute", "spherical"))
    q, qd, _ = random_state(m, seed)
    contacts = _draw_contacts(m, rng, 3)
    eps = 1e-5
    Jp, Jm = (sd.contact_jacobian(m, sd.integrate(m, q, qd, s * eps), contacts) for s in (1, -1))
    dJ = sd.contact_jacobian_time_variation(m, q, qd, contacts)
    assert np.abs(dJ - (Jp - Jm) / (2 * eps)).max() < 1e-7 * max(np.abs(dJ).max(), 1)


def test_world_and_world_aligned_6d_contacts_are_one_constraint():
    """A 6-D contact in 'world' and in 'local_world_aligned' constrain the same motion: same qdd,
    forces related by the transport of a wrench from the frame origin to the world origin."""
    m = robot("solo12")
    q, qd, tau = random_state(m, 5)
    a_w, lam_w = sd.constraint_dynamics(m, q, qd, tau, [sd.Contact(FEET[0], 6, "world")])
    a_l, lam_l = sd.constraint_dynamics(m, q, qd, tau, [sd.Contact(FEET[0], 6, "local_world_aligned")])
    _, p = sd.frame_placement(m, q, FEET[0])
    assert rel(a_w, a_l) < 1e-12
    # torque about the world origin n_O = n_p + p x f
    assert rel(lam_w, np.concatenate([lam_l[:3] + np.cross(p, lam_l[3:]), lam_l[3:]])) < 1e-12


# --- symbolic backends ---------------------------------------------------------------------------

def test_casadi_matches_numpy():
    ca = pytest.importorskip("casadi")
    m = robot("solo12")
    contacts = [sd.Contact(FEET[0], 3, "local", (10.0, 2.0), target=(0.2, 0.1, -0.3)),
                sd.Contact(FEET[3], 6, "local_world_aligned", (0.0, 3.0))]
    x, v, u = ca.SX.sym("q", m.nq), ca.SX.sym("v", m.nv), ca.SX.sym("u", m.nv)
    f = ca.Function("cd", [x, v, u], [*sd.constraint_dynamics(m, x, v, u, contacts),
                                      *sd.impulse_dynamics(m, x, v, contacts, 0.2),
                                      sd.kkt_matrix_inverse(m, x, contacts, 1e-3)])
    q, qd, tau = random_state(m, 7)
    got = [np.array(r, float) for r in f(q, qd, tau)]
    expect = [*sd.constraint_dynamics(m, q, qd, tau, contacts),
              *sd.impulse_dynamics(m, q, qd, contacts, 0.2),
              sd.kkt_matrix_inverse(m, q, contacts, 1e-3)]
    for g, e in zip(got, expect):
        assert rel(g.reshape(e.shape), e) < 1e-12


@pytest.mark.slow   # JAX compiles
def test_jax_matches_numpy_and_refuses_redundant_contacts():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    arm, tip = wall_arm()
    x, v, u = np.array([0.1, 0.4, -0.7]), np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -3.0])
    f = jax.jit(lambda q, qd, tau: sd.constraint_dynamics(arm, q, qd, tau, [tip], backend="jax"))
    for got, expect in zip(f(jnp.array(x), jnp.array(v), jnp.array(u)),
                           sd.constraint_dynamics(arm, x, v, u, [tip])):
        assert rel(np.asarray(got), expect) < 1e-12
    with pytest.raises(ValueError, match="singular"):   # eager arrays: values are known
        sd.constraint_dynamics(arm, jnp.array(x), jnp.array(v), jnp.array(u), [tip, tip],
                               backend="jax")


def wall_arm():
    """A 2-link planar arm (revolute z joints, gravity -y) on a vertical slider (prismatic z),
    its tip held at a wall point by a 3-D contact: three rows for three speeds."""
    from symdyn.joints import Prismatic, Revolute
    from symdyn.model import Body, Model

    E = np.eye(3)

    def along_x(x):
        return np.array([x, 0.0, 0.0])

    def plate(inertia):
        return np.diag([inertia / 2, inertia / 2, inertia])

    bodies = [Body("slider", None, Prismatic("z"), 2.0, along_x(0), plate(0.1), Transform(E, along_x(0))),
              Body("link1", "slider", Revolute("z"), 1.0, along_x(0.5), plate(1 / 12), Transform(E, along_x(0))),
              Body("link2", "link1", Revolute("z"), 1.0, along_x(0.5), plate(1 / 12), Transform(E, along_x(1.0)))]
    arm = Model(bodies, gravity=[0.0, -10.0, 0.0], name="wall_arm")
    return arm, sd.Contact(Frame(2, Transform(E, along_x(1.0))), 3, "local_world_aligned")


def test_sympy_closed_form_of_an_arm_against_a_wall():
    """The closed form in q, qd, tau: exact where the answer is simple (the slider is held, the
    wall takes the vertical push), printable in LaTeX as common subexpressions, equal to the
    numeric answer, and with the arm fully constrained (three rows, three speeds) the
    accelerations do not depend on the torques."""
    sp = pytest.importorskip("sympy")
    arm, tip = wall_arm()
    q, qd, tau = (sp.Matrix(sp.symbols(names)) for names in ("z q1 q2", "zd qd1 qd2", "f tau1 tau2"))
    qdd, lam = sd.constraint_dynamics(arm, q, qd, tau, [tip])
    assert qdd.shape == (3, 1) and lam.shape == (3, 1)
    assert sp.simplify(qdd[0]) == 0
    assert sp.simplify(lam[2] + tau[0]) == 0
    steps, (qdd_c, lam_c) = sp.cse([qdd, lam])
    lines = [f"{sp.latex(x)} = {sp.latex(e)}" for x, e in steps] + [sp.latex(qdd_c), sp.latex(lam_c)]
    assert all(len(line) < 2000 for line in lines) and r"\tau_{1}" in "".join(lines)
    rng = np.random.default_rng(0)
    x, v, u = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-5, 5, 3)

    def at(u):
        sub = dict(zip([*q, *qd, *tau], [*x, *v, *u]))
        return [np.array([float(e.xreplace(sub)) for e in r]) for r in (qdd, lam)]

    a_s, l_s = at(u)
    a_n, l_n = sd.constraint_dynamics(arm, x, v, u, [tip])
    assert rel(a_s, a_n) < 1e-12 and rel(l_s, l_n) < 1e-12
    a_2, l_2 = at(2 * u)
    assert rel(a_2, a_s) < 1e-12 and rel(l_2, l_s) > 1e-3


def test_sympy_impulse_kkt_and_inverse_dynamics_match_numpy():
    sp = pytest.importorskip("sympy")
    arm, tip = wall_arm()
    q, qd, qdd = (sp.Matrix(sp.symbols(n)) for n in ("z q1 q2", "zd qd1 qd2", "zdd qdd1 qdd2"))
    x, v, a = np.array([0.1, 0.4, -0.7]), np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -3.0])
    sub = dict(zip([*q, *qd, *qdd], [*x, *v, *a]))

    def value(M):
        return np.array(M.xreplace(sub).evalf(), float).reshape(np.shape(M) if M.shape[1] > 1
                                                                 else (M.shape[0],))

    cases = [(lambda q, qd, qdd: sd.impulse_dynamics(arm, q, qd, [tip], 0.5)[0]),
             (lambda q, qd, qdd: sd.kkt_matrix_inverse(arm, q, [tip], 0.1)),
             (lambda q, qd, qdd: sd.contact_inverse_dynamics(arm, q, qd, qdd, [tip], 0.01, 0.02)[0]),
             (lambda q, qd, qdd: sd.contact_jacobian_time_variation(arm, q, qd, [tip]))]
    for fn in cases:
        assert rel(value(fn(q, qd, qdd)), fn(x, v, a)) < 1e-12


# --- bad input ---------------------------------------------------------------------------------

def test_contact_rejects_bad_descriptions():
    for dim in (4, 3.0, True):
        with pytest.raises(ValueError, match="dim must be 3"):
            sd.Contact("x", dim=dim)
    assert sd.Contact("x", dim=np.int64(6)).dim == 6 and type(sd.Contact("x", dim=np.int64(6)).dim) is int
    with pytest.raises(ValueError, match="reference must be one of"):
        sd.Contact("x", reference="body")
    with pytest.raises(ValueError, match="kp must be finite"):
        sd.Contact("x", baumgarte=(float("nan"), 1.0))
    with pytest.raises(ValueError, match="kd must be finite and >= 0"):
        sd.Contact("x", baumgarte=(1.0, -1.0))
    with pytest.raises(TypeError, match="pair"):
        sd.Contact("x", baumgarte=3.0)
    with pytest.raises(ValueError, match="3-D Contact cannot use reference 'world'"):
        sd.Contact("x", 3, "world")
    with pytest.raises(ValueError, match="6-D Contact takes no target of 3 numbers .*placement"):
        sd.Contact("x", 6, target=(0, 0, 0))
    with pytest.raises(ValueError, match="3 finite numbers"):
        sd.Contact("x", 3, target=(0, 0))


def test_contact_functions_reject_bad_contact_sets():
    m = robot("solo12")
    q, qd, tau = random_state(m, 0)
    with pytest.raises(ValueError, match="no frame or joint named 'nose'"):
        sd.constraint_dynamics(m, q, qd, tau, [sd.Contact("nose")])
    with pytest.raises(ValueError, match="fixed to the world"):
        sd.contact_jacobian(m, q, [sd.Contact(Frame(-1, Transform(np.eye(3), np.zeros(3))))])
    with pytest.raises(ValueError, match="contacts is empty"):
        sd.constraint_dynamics(m, q, qd, tau, [])
    with pytest.raises(TypeError, match=r"contacts\[1\] must be a symdyn Contact"):
        sd.constraint_dynamics(m, q, qd, tau, [sd.Contact(FEET[0]), "FR_FOOT"])
    with pytest.raises(ValueError, match="damping must be finite"):
        sd.constraint_dynamics(m, q, qd, tau, [sd.Contact(FEET[0])], damping=float("nan"))
    with pytest.raises(ValueError, match="dt must be a time step > 0"):
        sd.contact_inverse_dynamics(m, q, qd, tau, [sd.Contact(FEET[0])], 0.0, 1e-2)
    with pytest.raises(ValueError, match="compliance must be one number or 3 numbers"):
        sd.contact_inverse_dynamics(m, q, qd, tau, [sd.Contact(FEET[0])], 1e-2, [1e-2] * 2)
    with pytest.raises(ValueError, match="compliance must be > 0"):
        sd.contact_inverse_dynamics(m, q, qd, tau, [sd.Contact(FEET[0])], 1e-2, 0.0)
    with pytest.raises(ValueError, match=r"restitution must be in \[0, 1\]"):
        sd.impulse_dynamics(m, q, qd, [sd.Contact(FEET[0])], restitution=1.5)
    bad = tau.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match=r"tau contains NaN or inf at index \[4\]"):
        sd.constraint_dynamics(m, q, qd, bad, [sd.Contact(FEET[0])])
    from symdyn.backends import get_backend
    from symdyn.contact.sparse import small_ldl
    with pytest.raises(ValueError, match="test: J M.*non-finite entries"):
        small_ldl(get_backend("numpy"), [[1.0, 0.0], [0.0, np.inf]], "test")
    panda = sd.load_robot("panda")
    with pytest.raises(ValueError, match="mimic joints.*panda_finger_joint2"):
        sd.contact_jacobian(panda, panda.random_q(0), [sd.Contact("panda_hand_tcp", 6)])


def test_fixed_frames_are_refused():
    """A link attached to the world of a fixed-base robot: nothing moves it."""
    m = robot("panda")
    world_links = [n for n, f in m.frames.items() if f.body < 0]
    assert world_links
    with pytest.raises(ValueError, match="fixed to the world"):
        sd.contact_jacobian(m, m.random_q(0), [sd.Contact(world_links[0])])


def test_redundant_contacts_raise_and_damping_regularizes():
    m = robot("solo12")
    q, qd, tau = random_state(m, 2)
    twice = [sd.Contact(FEET[0], 3), sd.Contact(FEET[0], 3, "local_world_aligned"), sd.Contact(FEET[2])]
    for call in (lambda: sd.constraint_dynamics(m, q, qd, tau, twice),
                 lambda: sd.impulse_dynamics(m, q, qd, twice),
                 lambda: sd.kkt_matrix_inverse(m, q, twice)):
        with pytest.raises(ValueError, match="singular.*redundant.*damping > 0"):
            call()
    qdd, lam = sd.constraint_dynamics(m, q, qd, tau, twice, damping=1e-6)
    assert np.all(np.isfinite(qdd)) and np.all(np.isfinite(lam))
    tiny, _ = sd.constraint_dynamics(m, q, qd, tau, twice, damping=1e-13)   # any damping > 0
    assert np.all(np.isfinite(tiny))
    # the motion is the one of the non-redundant set (up to the regularization)
    qdd1, _ = sd.constraint_dynamics(m, q, qd, tau, [twice[0], twice[2]])
    assert rel(qdd, qdd1) < 1e-4
