"""Analytical derivatives of the contact dynamics (symdyn.contact.derivatives): agreement with
Pinocchio 4.1's computeConstraintDynamicsDerivatives / computeImpulseDynamicsDerivatives, with
CasADi AD of symdyn's own constraint_dynamics / impulse_dynamics on random trees, the anchor
convention of the Baumgarte kp term, and bad input.

Pinocchio's twin and its contact models come from tests/test_contact_dynamics.py (PinTwin):
Pinocchio's rows of 6-D contacts are ``[linear; angular]`` (swap6), its columns its own speed
order (``matrix_from_pin``), its impulse ``data.ddq_dv`` the derivative of the velocity jump
(``dqdplus_dqdminus - I``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symdyn as sd
from symdyn.model import Frame
from symdyn.spatial import Transform

from test_contact_dynamics import (FEET, PIN_CASES, TOL, random_state, rel, robot, robot_contacts,
                                   swap6, twin)

NAMES = ("dqdd_dq", "dqdd_dqd", "dqdd_dtau", "dlam_dq", "dlam_dqd", "dlam_dtau")
IMPULSE_NAMES = ("dqdplus_dq", "dqdplus_dqdminus", "dimpulse_dq", "dimpulse_dqdminus")


def from_pin(P, matrices, contacts, force_rows):
    """Pinocchio's matrices in symdyn's speed order; rows of contact quantities in symdyn's
    row order (``force_rows[k]``: matrix k has contact rows)."""
    rows = swap6(np.arange(sum(c.dim for c in contacts)), contacts).astype(int)
    out = []
    for A, is_force in zip(matrices, force_rows):
        A = P.pb.matrix_from_pin(P.model, np.array(A), rows=None if is_force else "v")
        out.append(A[rows] if is_force else A)
    return out


def pin_constraint_derivatives(P, q, qd, tau, contacts, damping=0.0):
    """Pinocchio's derivatives; damping > 0: one proximal step (test_contact_dynamics)."""
    pin, pb, m = P.pin, P.pb, P.model
    cms, cds = P.contacts(q, contacts)
    settings = pin.ProximalSettings(1e-14, damping, 1)
    pin.constraintDynamics(P.pm, P.pd, pb.q_to_pin(m, q), pb.v_to_pin(m, qd), pb.v_to_pin(m, tau),
                           cms, cds, settings)
    out = pin.computeConstraintDynamicsDerivatives(P.pm, P.pd, cms, cds, settings)
    return from_pin(P, out, contacts, (False,) * 3 + (True,) * 3)


def pin_impulse_derivatives(P, q, qd, contacts, restitution):
    pin, pb, m = P.pin, P.pb, P.model
    cms, cds = P.contacts(q, contacts)
    settings = pin.ProximalSettings(1e-12, 0.0, 1)
    pin.impulseDynamics(P.pm, P.pd, pb.q_to_pin(m, q), pb.v_to_pin(m, qd), cms, cds, restitution,
                        settings)
    pin.computeImpulseDynamicsDerivatives(P.pm, P.pd, cms, cds, restitution, settings)
    d = P.pd
    out = from_pin(P, [d.ddq_dq, d.ddq_dv, d.dlambda_dq, d.dlambda_dv], contacts,
                   (False, False, True, True))
    out[1] = out[1] + np.eye(m.nv)                   # Pinocchio: the jump's derivative
    return out


def worst(got, expect, names, floors=None):
    """The largest relative difference, each matrix against its largest entry or its floor in
    ``floors`` (by name): with as many contact rows as speeds dqdd_dtau = M^-1 - Y G^-1 Y^T
    is zero in exact arithmetic, rounding noise of the size of M^-1 on both sides."""
    floors = floors or {}
    errs = {}
    for n, g, e in zip(names, got, expect):
        g, e = np.asarray(g, float), np.asarray(e, float)
        assert g.shape == e.shape, (n, g.shape, e.shape)
        scale = max(float(np.abs(e).max()), floors.get(n, 0.0), 1e-300)
        errs[n] = float(np.abs(g - e).max() / scale)
    return max(errs.values()), errs


# --- against Pinocchio -------------------------------------------------------------------------



@pytest.mark.parametrize("name,reference,gains", PIN_CASES)
def test_constraint_dynamics_derivatives_match_pinocchio(name, reference, gains):
    """Point contacts at the feet (with targets when kp > 0), 6-D contacts at the hand / soles
    (anchored at their placement: kp acts through the anchor, module docstring)."""
    m, P = robot(name), twin(name)
    contacts = robot_contacts(name, reference, gains, targets=gains[0] > 0)
    q, qd, tau = random_state(m, 1)
    got = sd.constraint_dynamics_derivatives(m, q, qd, tau, contacts)
    floors = {"dqdd_dtau": float(np.abs(np.linalg.inv(sd.crba(m, q))).max())}
    err, errs = worst(got, pin_constraint_derivatives(P, q, qd, tau, contacts), NAMES, floors)
    assert err < TOL, f"{name} {reference} {gains}: {errs}"


@pytest.mark.parametrize("name", ["solo12", "panda"])
def test_regularized_derivatives_match_pinocchio_for_local_contacts(name):
    """damping > 0 (Pinocchio: one proximal step). Only "local" contacts: for
    "local_world_aligned" ones Pinocchio 4.1's q columns are exact only while the contact rows
    vanish (damping = 0; module docstring of symdyn.contact.derivatives); symdyn's are exact
    there too (checked against CasADi AD below)."""
    m, P = robot(name), twin(name)
    contacts = robot_contacts(name, "local", (0.0, 3.0))
    q, qd, tau = random_state(m, 2)
    got = sd.constraint_dynamics_derivatives(m, q, qd, tau, contacts, damping=1e-2)
    expect = pin_constraint_derivatives(P, q, qd, tau, contacts, damping=1e-2)
    err, errs = worst(got, expect, NAMES)
    assert err < TOL, f"{name}: {errs}"


@pytest.mark.parametrize("name", ["solo12", "panda",
                                  *(pytest.param(n, marks=pytest.mark.slow)
                                    for n in ("talos", "anymal_c", "g1"))])
def test_impulse_dynamics_derivatives_match_pinocchio(name):
    m, P = robot(name), twin(name)
    for seed, reference in enumerate(("local", "local_world_aligned")):
        contacts = robot_contacts(name, reference)
        q, qd, _ = random_state(m, 20 + seed)
        got = sd.impulse_dynamics_derivatives(m, q, qd, contacts, restitution=0.4)
        err, errs = worst(got, pin_impulse_derivatives(P, q, qd, contacts, 0.4), IMPULSE_NAMES)
        assert err < TOL, f"{name} {reference}: {errs}"


# --- against CasADi AD of symdyn's own dynamics ------------------------------------------------

#: contact kinds per random tree: every (dim, reference) pair appears
KINDS = [((3, "local"), (6, "local_world_aligned")), ((6, "world"), (3, "local")),
         ((6, "local"), (3, "local_world_aligned")), ((3, "local_world_aligned"), (6, "local"))]


def tree_with_contacts(seed, kinds):
    """A random 6-body tree (revolute, prismatic and spherical joints; a free-flyer on odd
    seeds), a random state and contacts of the given kinds on distinct random bodies at random
    placements with random gains (3-D contacts with a random target; kp = 0 for 6-D ones,
    whose anchor follows q in constraint_dynamics), such that J has well-conditioned full row
    rank (the next tree of the sequence when the bodies of this one cannot carry them)."""
    rng = np.random.default_rng(seed)
    for tree_seed in range(seed, seed + 1000, 100):
        m = sd.models.random_tree(6, seed=tree_seed, floating_base=bool(seed % 2),
                                  joint_kinds=("revolute", "prismatic", "spherical"))
        q, qd, tau = random_state(m, seed)
        for _ in range(50):
            bodies = rng.choice(m.N, size=len(kinds), replace=False)
            out = []
            for b, (dim, ref) in zip(bodies, kinds):
                fr = Frame(int(b), Transform(sd.models.random_rotation(rng),
                                             rng.uniform(-0.3, 0.3, 3)))
                kp, kd = rng.uniform(1, 5, 2)
                out.append(sd.Contact(fr, dim, ref, (kp if dim == 3 else 0.0, kd),
                                      target=tuple(rng.uniform(-1, 1, 3)) if dim == 3 else None))
            s = np.linalg.svd(sd.contact_jacobian(m, q, out), compute_uv=False)
            if len(s) == sum(c.dim for c in out) and s[-1] > 0.02 * s[0]:
                return m, (q, qd, tau), out
    raise AssertionError(f"no random tree carries the contacts {kinds}")


def ad_functions(model, contacts, damping, restitution):
    """CasADi functions of (dq, qd, tau): AD of constraint_dynamics / impulse_dynamics at
    q (+) dq (tangent derivatives at dq = 0) next to the analytical derivatives traced on SX."""
    ca = pytest.importorskip("casadi")
    q0 = ca.SX.sym("q0", model.nq)
    dq, v, u = (ca.SX.sym(s, model.nv) for s in ("dq", "v", "u"))
    q = sd.integrate(model, q0, dq)
    qdd, lam = sd.constraint_dynamics(model, q, v, u, contacts, damping)
    vp, imp = sd.impulse_dynamics(model, q, v, contacts, restitution, damping)
    ad = [ca.jacobian(y, x) for y in (qdd, lam) for x in (dq, v, u)]
    ad += [ca.jacobian(y, x) for y in (vp, imp) for x in (dq, v)]
    ours = [*sd.constraint_dynamics_derivatives(model, q0, v, u, contacts, damping),
            *sd.impulse_dynamics_derivatives(model, q0, v, contacts, restitution, damping)]
    return (ca.Function("ad", [q0, dq, v, u], ad),
            ca.Function("ours", [q0, v, u], ours))


@pytest.mark.parametrize("seed", range(len(KINDS)))
def test_derivatives_match_casadi_ad_on_random_trees(seed):
    """Random trees with revolute, prismatic and spherical joints (free-flyer on odd seeds),
    every contact kind, Baumgarte gains, damping 0 and > 0: the analytical derivatives (NumPy,
    and traced on CasADi SX) equal CasADi's AD of symdyn's own dynamics."""
    m, (q, qd, tau), contacts = tree_with_contacts(seed, KINDS[seed])
    names = NAMES + IMPULSE_NAMES
    damping = 0.05 * (seed % 2)                       # regularized on odd seeds
    ad, ours = ad_functions(m, contacts, damping, restitution=0.5)
    expect = [np.array(x) for x in ad(q, np.zeros(m.nv), qd, tau)]
    traced = [np.array(x) for x in ours(q, qd, tau)]
    got = [*sd.constraint_dynamics_derivatives(m, q, qd, tau, contacts, damping),
           *sd.impulse_dynamics_derivatives(m, q, qd, contacts, 0.5, damping)]
    err, errs = worst(got, expect, names)
    assert err < 1e-10, f"seed {seed} damping {damping}: {errs}"
    err, errs = worst(traced, got, names)
    assert err < 1e-12, f"casadi vs numpy, seed {seed} damping {damping}: {errs}"


def test_shapes_and_the_blocks_given_by_the_kkt_inverse():
    """With K^-1 = kkt_matrix_inverse = [[A, Y G^-1], [G^-1 Y^T, -G^-1]] (Y = M^-1 J^T):
    dqdd_dtau = A, dlam_dtau = -G^-1 Y^T; for impulses dimpulse_dqdminus = -(1 + e) G^-1 J and
    dqdplus_dqdminus = I - (1 + e) Y G^-1 J."""
    m = robot("solo12")
    contacts = robot_contacts("solo12", "local_world_aligned")
    q, qd, tau = random_state(m, 5)
    d = sd.constraint_dynamics_derivatives(m, q, qd, tau, contacts)
    nv, nc = m.nv, 12
    assert [x.shape for x in d] == [(nv, nv)] * 3 + [(nc, nv)] * 3
    K = sd.kkt_matrix_inverse(m, q, contacts)
    assert rel(d[2], K[:nv, :nv]) < 1e-12 and rel(d[5], -K[nv:, :nv]) < 1e-12
    imp = sd.impulse_dynamics_derivatives(m, q, qd, contacts, restitution=0.3)
    assert [x.shape for x in imp] == [(nv, nv)] * 2 + [(nc, nv)] * 2
    J = sd.contact_jacobian(m, q, contacts)
    assert rel(imp[3], 1.3 * K[nv:, nv:] @ J) < 1e-12
    assert rel(imp[1], np.eye(nv) - 1.3 * K[:nv, nv:] @ J) < 1e-12


# --- the anchor of the Baumgarte kp term -------------------------------------------------------

def test_kp_acts_through_the_anchor_held_fixed():
    """A point contact without target is anchored at its placement at q: its derivatives equal
    those of the same contact with the target at that placement (whose position error is zero
    at q but not nearby), and kp changes them."""
    m = robot("solo12")
    q, qd, tau = random_state(m, 6)
    _, p = sd.frame_placement(m, q, FEET[1])
    for ref in ("local", "local_world_aligned"):
        free = [sd.Contact(f, 3, ref, (30.0, 2.0)) for f in FEET]
        pinned = [dataclasses.replace(free[1], target=tuple(p)) if k == 1 else c
                  for k, c in enumerate(free)]
        no_kp = [dataclasses.replace(c, baumgarte=(0.0, 2.0)) for c in free]
        a = sd.constraint_dynamics_derivatives(m, q, qd, tau, free)
        b = sd.constraint_dynamics_derivatives(m, q, qd, tau, pinned)
        c = sd.constraint_dynamics_derivatives(m, q, qd, tau, no_kp)
        assert max(rel(x, y) for x, y in zip(a, b)) < 1e-12
        assert rel(a[0], c[0]) > 1e-3 and rel(a[1], c[1]) < 1e-12


# --- bad input -----------------------------------------------------------------------------------

def test_bad_input_is_refused_clearly():
    m = robot("solo12")
    q, qd, tau = random_state(m, 0)
    cdd, idd = sd.constraint_dynamics_derivatives, sd.impulse_dynamics_derivatives
    with pytest.raises(ValueError, match="no frame or joint named 'nose'"):
        cdd(m, q, qd, tau, [sd.Contact("nose")])
    with pytest.raises(ValueError, match="fixed to the world"):
        idd(m, q, qd, [sd.Contact(Frame(-1, Transform(np.eye(3), np.zeros(3))))])
    with pytest.raises(ValueError, match="contacts is empty"):
        cdd(m, q, qd, tau, [])
    with pytest.raises(TypeError, match=r"contacts\[1\] must be a symdyn Contact"):
        cdd(m, q, qd, tau, [sd.Contact(FEET[0]), "FR_FOOT"])
    with pytest.raises(ValueError, match="damping must be finite"):
        cdd(m, q, qd, tau, [sd.Contact(FEET[0])], damping=float("nan"))
    with pytest.raises(ValueError, match=r"restitution must be in \[0, 1\]"):
        idd(m, q, qd, [sd.Contact(FEET[0])], restitution=-0.1)
    with pytest.raises(ValueError, match="tau"):
        cdd(m, q, qd, tau[:-1], [sd.Contact(FEET[0])])
    twice = [sd.Contact(FEET[0]), sd.Contact(FEET[0], 3, "local_world_aligned")]
    for call in (lambda: cdd(m, q, qd, tau, twice), lambda: idd(m, q, qd, twice)):
        with pytest.raises(ValueError, match=r"derivatives: J M\^-1 J\^T is singular.*damping > 0"):
            call()
    d = cdd(m, q, qd, tau, twice, damping=1e-6)
    assert all(np.all(np.isfinite(x)) for x in d)
    panda = sd.load_robot("panda")
    with pytest.raises(ValueError, match="mimic joints"):
        cdd(panda, panda.random_q(0), np.zeros(panda.nv), np.zeros(panda.nv),
            [sd.Contact("panda_hand_tcp", 6)])


def test_planar_joint_under_a_contact_is_refused():
    arm = sd.models.random_tree(3, seed=0, joint_kinds=("planar",))
    q, qd, tau = random_state(arm, 0)
    with pytest.raises(ValueError, match="constraint_dynamics_derivatives: joint .*planar"):
        sd.constraint_dynamics_derivatives(arm, q, qd, tau, [sd.Contact(2, 3)])
