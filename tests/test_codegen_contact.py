"""Compiled kinematic derivatives, second-order derivatives and contact dynamics
(symdyn.codegen groups "derivatives" and "contact"): the recorded graph of each equals NumPy, the
contacts are a build-time option recorded in the manifest and the cache key, and the compiled
constraint dynamics equal sd.constraint_dynamics. Models are tiny so the file stays fast."""
from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import ALGORITHMS, available_algorithms, build, casadi_function
from symdyn.models import random_tree

from conftest import requires_cc

DERIVATIVES = available_algorithms("derivatives")
CONTACT = available_algorithms("contact")


def _model():
    # a free-flying base with two branches of three joints: a leg in point contact, an arm in
    # frame contact (9 independent rows for 12 speeds)
    return random_tree(7, seed=11, parents=[-1, 0, 1, 2, 0, 4, 5],
                       joint_kinds=("revolute", "prismatic"), floating_base=True,
                       name="contact-tree")


def _contacts(model, gains=(2.0, 3.0)):
    return [sd.Contact(model.names[6], 3, "local_world_aligned", baumgarte=gains),
            sd.Contact(model.names[3], 6, "local")]


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return {"q": model.random_q(rng), "qd": rng.uniform(-1, 1, model.nv),
            "qdd": rng.uniform(-1, 1, model.nv), "tau": rng.uniform(-1, 1, model.nv),
            "qd_minus": rng.uniform(-1, 1, model.nv),
            "f_ext": rng.uniform(-5, 5, 6 * model.N)}         # stacked body forces


def _options(model, alg):
    if alg == "contact_inverse_dynamics":
        return {"contacts": _contacts(model), "dt": 0.01, "compliance": 0.02,
                "constraint_correction": np.linspace(-0.1, 0.1, 9)}
    if alg in CONTACT:
        return {"contacts": _contacts(model)}
    if "frame" in ALGORITHMS[alg].input_names or alg.startswith("frame_"):
        return {"frame": model.names[-1], "reference": "local_world_aligned"}
    return {}


def test_groups():
    assert {"rnea_second_derivatives", "aba_second_derivatives", "frame_kinematic_hessian",
            "frame_velocity_derivatives", "generalized_gravity_derivatives"} <= set(DERIVATIVES)
    assert {"constraint_dynamics", "impulse_dynamics", "kkt_matrix_inverse",
            "constraint_dynamics_derivatives", "impulse_dynamics_derivatives",
            "contact_jacobian_time_variation", "contact_inverse_dynamics"} <= set(CONTACT)
    assert "frame_acceleration" in available_algorithms("frames")
    assert not set(DERIVATIVES + CONTACT) & set(available_algorithms())   # default list unchanged


@pytest.mark.parametrize("alg", [
    pytest.param(a, marks=pytest.mark.slow) if "second" in a else a     # recorded in seconds
    for a in DERIVATIVES + CONTACT])
def test_graph_equals_numpy(alg):
    model = _model()
    st = _state(model)
    spec = ALGORITHMS[alg]
    opts = _options(model, alg)
    f = casadi_function(model, alg, layout="numpy", **opts)
    got = f(*[st[n] for n in spec.input_names])
    got = got if isinstance(got, tuple) else (got,)
    want = spec.function(model, *[st[n] for n in spec.input_names], **opts)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want) == len(spec.outputs)
    for g, w in zip(got, want):
        w = np.asarray(w, dtype=float)
        g = np.asarray(g, dtype=float).reshape(w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(w).max()))


@requires_cc
def test_compiled_constraint_dynamics(tmp_path):
    model = _model()
    st = _state(model, seed=3)
    soft, stiff = _contacts(model, (2.0, 3.0)), _contacts(model, (20.0, 3.0))
    lib = build(model, {"constraint_dynamics:soft": {"contacts": soft},
                        "constraint_dynamics:stiff": {"contacts": stiff}},
                opt="-O1", cache_dir=tmp_path, progress=False)
    for key, contacts in (("soft", soft), ("stiff", stiff)):
        qdd, lam = lib[f"constraint_dynamics:{key}"](st["q"], st["qd"], st["tau"])
        want = sd.constraint_dynamics(model, st["q"], st["qd"], st["tau"], contacts)
        np.testing.assert_allclose(qdd, want[0], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(lam, want[1], rtol=1e-10, atol=1e-10)
    recorded = [f["options"]["contacts"] for f in lib.manifest["functions"]]
    assert recorded[0][0]["baumgarte"] == [2.0, 3.0] and recorded[1][0]["baumgarte"] == [20.0, 3.0]
    assert recorded[0][1] == {"type": "Contact", "frame": model.names[3], "dim": 6,
                              "reference": "local", "baumgarte": [0.0, 0.0], "target": None}


@requires_cc
def test_recursive_constraint_dynamics_derivatives(tmp_path):
    """The recorded form of constraint_dynamics_derivatives (the contact rows one step, FDSVA's
    steps, the KKT products native product loops) equals NumPy in every contact reference,
    with Baumgarte gains and with damping; its batch too."""
    from symdyn.codegen.recursive import record

    model = _model()
    st = _state(model, seed=5)
    args = [st["q"], st["qd"], st["tau"]]
    cases = {"lwa": (_contacts(model), 0.0),
             "world": ([sd.Contact(model.names[3], 6, "world", baumgarte=(4.0, 1.0)),
                        sd.Contact(model.names[6], 3, "local")], 0.0),
             "damped": (_contacts(model) + [sd.Contact(model.names[6], 3, "local")], 0.1)}
    prog = record(model, sd.constraint_dynamics_derivatives, [model.nq, model.nv, model.nv],
                  name="cdd", contacts=cases["lwa"][0])
    assert sum(1 for k in prog.used if prog.kernels[k].native) >= 3     # J M^-1, G, products
    specs = {f"constraint_dynamics_derivatives:{key}": {"contacts": c, "damping": d}
             for key, (c, d) in cases.items()}
    lib = build(model, specs, form="recursive", opt="-O1", cache_dir=tmp_path, progress=False)
    rng = np.random.default_rng(2)
    Q = np.array([model.random_q(rng) for _ in range(9)])
    V, T = rng.uniform(-1, 1, (2, 9, model.nv))
    for key, (contacts, damping) in cases.items():
        f = lib[f"constraint_dynamics_derivatives:{key}"]
        assert f.meta["form"] == "recursive"
        want = sd.constraint_dynamics_derivatives(model, *args, contacts, damping)
        for g, w in zip(f(*args), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * np.abs(w).max())
        batch = f.batch(Q, V, T)
        for b in (0, 8):
            want = sd.constraint_dynamics_derivatives(model, Q[b], V[b], T[b], contacts, damping)
            for g, w in zip(batch, want):
                np.testing.assert_allclose(g[b], w, rtol=1e-10, atol=1e-10 * np.abs(w).max())


# --- contact_inverse_dynamics with friction cones: each regime in the compiled forms -------------

R_ROW = [1e-2, 1e-2, 3e-2]
#: c_ref per point contact (friction 0.5 and 0.3, R_ROW): stick, slide, separate, and slide
#: without De Saxce's correction / separate with it
STICK, SLIDE, SEPARATE, EITHER = (0.3, -0.2, -8.0), (4.0, -3.0, -2.0), (0.5, 1.0, 3.0), \
    (5.0, 0.0, 1.0)


def _friction_options(model):
    points = [sd.Contact(model.names[6], 3, "local_world_aligned"),
              sd.Contact(model.names[3], 3, "local")]
    base = {"contacts": points, "dt": 0.01, "compliance": R_ROW * 2, "friction": [0.5, 0.3]}
    return [base, {**base, "solve_ncp": True,
                   "constraint_correction": np.array([0.0, 0.0, -0.05, 0.02, 0.01, -0.01])}]


def _regime_states(model, options):
    """States (q, qd, qdd) whose c_ref puts the contacts in each regime (qd solved from the
    targets), and one at rest (c_T = 0 exactly where the correction has no tangential part)."""
    st = _state(model, seed=4)
    q, qdd, dt = st["q"], st["qdd"], options["dt"]
    J = sd.contact_jacobian(model, q, options["contacts"])
    corr = options.get("constraint_correction", np.zeros(6))
    out = []
    for targets in ((STICK, SLIDE), (SEPARATE, EITHER), (SLIDE, STICK)):
        qd = np.linalg.lstsq(J, dt * np.ravel(targets) - corr, rcond=None)[0] - dt * qdd
        out.append((q, qd, qdd))
    return out + [(q, np.zeros(model.nv), np.zeros(model.nv))]


def _check_friction(evaluate, model):
    for options in _friction_options(model):
        f = evaluate(options)
        for q, qd, qdd in _regime_states(model, options):
            want = sd.contact_inverse_dynamics(model, q, qd, qdd, **options)
            for g, w in zip(f(q, qd, qdd), want):
                g = np.asarray(g, dtype=float).reshape(w.shape)
                np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * np.abs(w).max())


def test_graph_of_friction_cones_equals_numpy():
    model = _model()
    _check_friction(lambda o: casadi_function(model, "contact_inverse_dynamics", layout="numpy",
                                              **o), model)


@requires_cc
def test_compiled_contact_inverse_dynamics_and_jacobian_time_variation(tmp_path):
    """sd.* on a compiled model (no NumPy fallback any more): the friction cones (both
    solve_ncp, a correction as a build-time option) and dJ/dt, built together in one library;
    the calls find the prepared functions (no further build)."""
    from symdyn.compiled import _freeze

    model = _model()
    fast = sd.compiled(model, opt="-O1", cache_dir=tmp_path, progress=False)
    contacts = _contacts(model)
    fast.prepare(*[("contact_inverse_dynamics", o) for o in _friction_options(model)],
                 ("contact_jacobian_time_variation", {"contacts": contacts}))
    _check_friction(lambda o: (lambda q, qd, qdd: sd.contact_inverse_dynamics(fast, q, qd, qdd,
                                                                              **o)), model)
    st = _state(model, seed=6)
    np.testing.assert_allclose(sd.contact_jacobian_time_variation(fast, st["q"], st["qd"],
                                                                  contacts),
                               sd.contact_jacobian_time_variation(model, st["q"], st["qd"],
                                                                  contacts),
                               rtol=1e-10, atol=1e-10)
    assert len(fast.functions) == 3
    c = _friction_options(model)[1]["constraint_correction"]      # every digit keys a build
    assert _freeze(c) == _freeze(c.copy()) and _freeze(c) != _freeze(c + 1e-15)


def test_contacts_are_required():
    with pytest.raises((TypeError, ValueError), match="contacts"):
        casadi_function(_model(), "constraint_dynamics")


def test_jax_compile_of_constraint_dynamics():
    """symdyn.jax.compile lowers the same recorded program (graph route) for contacts."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import symdyn.jax as sjax

    model = _model()
    st = _state(model, seed=5)
    contacts = _contacts(model)
    f = sjax.compile(model, "constraint_dynamics", contacts=contacts)
    assert f.route == "graph"
    qdd, lam = f.single(st["q"], st["qd"], st["tau"])
    want = sd.constraint_dynamics(model, st["q"], st["qd"], st["tau"], contacts)
    np.testing.assert_allclose(np.asarray(qdd), want[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(lam), want[1], rtol=1e-10, atol=1e-10)
    # the friction cones' branches (where_positive) through the same route
    _check_friction(lambda o: sjax.compile(model, "contact_inverse_dynamics", **o).single, model)


@pytest.mark.slow                               # XLA compiles the dynamics step: ~40 s
def test_jax_program_route_of_constraint_dynamics_derivatives():
    """The derivatives' recorded form (the dynamics and each contact's rows one step each,
    products of gathered blocks) lowered by symdyn.jax's program route."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import symdyn.jax as sjax

    model = _model()
    st = _state(model, seed=5)
    contacts = _contacts(model)
    f = sjax.compile(model, "constraint_dynamics_derivatives", contacts=contacts, route="program")
    assert f.route == "program"
    want = sd.constraint_dynamics_derivatives(model, st["q"], st["qd"], st["tau"], contacts)
    for g, w in zip(f.single(st["q"], st["qd"], st["tau"]), want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-10 * np.abs(w).max())
