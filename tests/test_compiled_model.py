"""``sd.compiled(model)``: the ``sd.*`` functions on a compiled model against the same calls on
the plain model (results, errors), the dispatch protocol, and the leading batch axis on NumPy,
compiled and JAX inputs."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
import sympy as sp
from conftest import requires_cc

import symdyn as sd
from symdyn.algorithms.dispatch import Evaluator, dispatch
from symdyn.compiled import NUMPY_FALLBACK
from symdyn.models import branched_tree, serial_chain

TOL = 1e-12
SERIAL = serial_chain(3, seed=1)
FLOATING = branched_tree(3, 2, seed=4, joint=("floating", "revolute", "revolute"))


def close(a, b, tol=TOL):
    """Equal to ``tol`` relative to the larger entry, structure included (tuples)."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, tol)
        return
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.max(np.abs(a - b), initial=0.0) <= tol * max(1.0, np.max(np.abs(b), initial=0.0))


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-5, 5, model.nv)


def states(model, n, seed=1):
    rng = np.random.default_rng(seed)
    return (np.array([model.random_q(rng) for _ in range(n)]), rng.uniform(-2, 2, (n, model.nv)),
            rng.uniform(-5, 5, (n, model.nv)))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("symdyn-compiled-model-cache")


@pytest.fixture(scope="module")
def fast(cache_dir):
    """The floating-base tree, its functions built together once (one library)."""
    f = sd.compiled(FLOATING, opt="-O0", cache_dir=cache_dir, progress=False)
    return f.prepare("rnea", "crba", "aba", "coriolis_matrix", "christoffel", "kinetic_energy",
                     ("frame_jacobian", {"frame": 2}),
                     ("frame_jacobian", {"frame": 2, "reference": "world"}),
                     ("constraint_dynamics", {"contacts": (sd.Contact(2),)}))


# --- the dispatch decorator (no compiler needed) ------------------------------------------------

def test_decorated_functions_keep_signatures_and_docs():
    for name in ("rnea", "crba", "frame_jacobian", "constraint_dynamics", "total_mass"):
        f = getattr(sd, name)
        assert f.__wrapped__.__doc__ == f.__doc__ and f.__name__ == name
        assert inspect.signature(f) == inspect.signature(f.__wrapped__)


def test_every_public_numeric_function_dispatches():
    """Every function of algorithms/ and contact/ exported by symdyn carries the decorator."""
    for name in sd.__all__:
        f = getattr(sd, name)
        mod = getattr(f, "__module__", "") or ""
        if inspect.isfunction(f) and mod.startswith(("symdyn.algorithms", "symdyn.contact")):
            assert hasattr(f, "__wrapped__"), f"sd.{name} has no @dispatch"


def test_evaluator_protocol_answers_the_call():
    calls = []

    class Recorder:
        def __symdyn_evaluate__(self, function, args, kwargs):
            calls.append((function, args, kwargs))
            return "answered"

    assert isinstance(Recorder(), Evaluator)
    assert sd.rnea(Recorder(), 1, 2, qdd=3) == "answered"
    assert calls == [(sd.rnea, (1, 2), {"qdd": 3})]
    with pytest.raises(TypeError, match="expected a symdyn Model"):
        sd.rnea(object(), [0.0], [0.0], [0.0])


def test_dispatch_wraps_like_functools():
    @dispatch
    def f(model, q, *, backend=None):
        """Doc."""
        return q

    assert f.__doc__ == "Doc." and f.__wrapped__.__name__ == "f"
    assert f(SERIAL, [1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert f(SERIAL, np.ones((2, 3))).shape == (2, 3)      # the batch axis: state by state


# --- the batch axis on the NumPy path ---------------------------------------------------------

def test_numpy_batch_matches_per_state_calls():
    Q, QD, QDD = states(FLOATING, 3)
    tau = sd.rnea(FLOATING, Q, QD, QDD)
    M = sd.crba(FLOATING, Q)
    T = sd.kinetic_energy(FLOATING, Q, QD)
    Mc, Md, C = sd.coriolis_matrix(FLOATING, Q, QD)
    assert tau.shape == (3, FLOATING.nv) and M.shape == (3, FLOATING.nv, FLOATING.nv)
    assert T.shape == (3,) and C.shape == M.shape
    for b in range(3):
        close(tau[b], sd.rnea(FLOATING, Q[b], QD[b], QDD[b]))
        close(M[b], sd.crba(FLOATING, Q[b]))
        close(T[b], sd.kinetic_energy(FLOATING, Q[b], QD[b]))
        close((Mc[b], Md[b], C[b]), sd.coriolis_matrix(FLOATING, Q[b], QD[b]))
    J = sd.frame_jacobian(FLOATING, Q, 2, reference="world")
    close(J[1], sd.frame_jacobian(FLOATING, Q[1], 2, reference="world"))


def test_one_dimensional_inputs_keep_their_behaviour():
    q, qd, qdd = state(SERIAL)
    tau = sd.rnea(SERIAL, q, qd, qdd)
    assert tau.shape == (SERIAL.nv,)
    close(sd.rnea(SERIAL, q[:, None], qd, qdd), tau)          # a column is one state
    close(sd.rnea(SERIAL, list(q), list(qd), list(qdd)), tau)


@pytest.mark.parametrize("bad, message", [
    (lambda Q, QD, QDD: (Q, QD[:2], QDD), "qd has 2 states but q has 3"),
    (lambda Q, QD, QDD: (Q, QD[0], QDD), "q is a batch of 3 states .* but qd is not"),
    (lambda Q, QD, QDD: (Q[:0], QD[:0], QDD[:0]), "the batch holds no states"),
])
def test_mixed_batch_sizes_are_refused(bad, message):
    args = bad(*states(SERIAL, 3))
    with pytest.raises(ValueError, match=message):
        sd.rnea(SERIAL, *args)


def test_numpy_batch_errors_name_the_state_and_input():
    Q, QD, QDD = states(FLOATING, 3)
    Q[1, 3:7] *= 2.0
    with pytest.raises(ValueError, match=r"state 1 of the batch: q\[3:7\].*unit quaternion"):
        sd.rnea(FLOATING, Q, QD, QDD)


def test_jax_batch_uses_vmap():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    Q, QD, QDD = states(SERIAL, 3)
    tau = sd.rnea(SERIAL, jax.numpy.asarray(Q), jax.numpy.asarray(QD), jax.numpy.asarray(QDD))
    close(np.asarray(tau), sd.rnea(SERIAL, Q, QD, QDD))
    jitted = jax.jit(lambda Q: sd.crba(SERIAL, Q))
    close(np.asarray(jitted(jax.numpy.asarray(Q))), sd.crba(SERIAL, Q))


# --- the compiled model -----------------------------------------------------------------------

def test_compiled_rejects_what_it_cannot_build():
    with pytest.raises(TypeError, match="symdyn Model"):
        sd.compiled("ur5")
    with pytest.raises(TypeError, match="unknown build option.*parameters"):
        sd.compiled(SERIAL, parameters="inertial")


def test_fallback_list_is_what_has_no_compiled_counterpart():
    """NUMPY_FALLBACK (and the module docstring's list) name exactly the dispatched public
    functions that symdyn.codegen does not compile."""
    import importlib

    from symdyn.codegen import ALGORITHMS

    module = importlib.import_module("symdyn.compiled")     # sd.compiled is the function

    public = [n for n in sd.__all__ if hasattr(getattr(sd, n), "__wrapped__")]
    expected = sorted(n for n in public if n not in ALGORITHMS)
    assert sorted(NUMPY_FALLBACK) == expected
    doc = " ".join(module.__doc__.split())
    assert all(f"``{n}``" in doc for n in NUMPY_FALLBACK)


@requires_cc
@pytest.mark.parametrize("name, call", [
    ("rnea", lambda m, q, qd, qdd: sd.rnea(m, q, qd, qdd)),
    ("crba", lambda m, q, qd, qdd: sd.crba(m, q)),
    ("aba", lambda m, q, qd, qdd: sd.aba(m, q, qd, qdd)),
    ("coriolis_matrix", lambda m, q, qd, qdd: sd.coriolis_matrix(m, q, qd)),
    ("christoffel", lambda m, q, qd, qdd: sd.christoffel(m, q)),
    ("kinetic_energy", lambda m, q, qd, qdd: sd.kinetic_energy(m, q, qd)),
    ("frame_jacobian", lambda m, q, qd, qdd: sd.frame_jacobian(m, q, 2)),
    ("frame_jacobian_world", lambda m, q, qd, qdd: sd.frame_jacobian(m, q, 2, "world")),
    ("constraint_dynamics", lambda m, q, qd, qdd: sd.constraint_dynamics(
        m, q, qd, qdd, (sd.Contact(2),))),
])
def test_compiled_equals_numpy(fast, name, call):
    for seed in range(2):
        q, qd, qdd = state(FLOATING, seed)
        got, want = call(fast, q, qd, qdd), call(FLOATING, q, qd, qdd)
        assert type(got) is type(want)
        close(got, want)
        close(call(fast, q, qd, qdd), want)        # the second call takes the shortcut


@requires_cc
def test_compiled_runs_prepared_functions_without_building(fast):
    before = dict(fast.functions)
    q, qd, qdd = state(FLOATING)
    sd.rnea(fast, list(q), qd, qdd=qdd)
    sd.frame_jacobian(fast, q, frame=2, reference="local")   # the default: the same build
    assert fast.functions == before


@requires_cc
@pytest.mark.parametrize("corrupt", ["short_q", "long_qd", "nan_q", "inf_qdd", "quaternion",
                                     "strings"])
def test_compiled_errors_match_numpy(fast, corrupt):
    q, qd, qdd = state(FLOATING)
    q, qd, qdd = q.copy(), qd.copy(), qdd.copy()
    name = {"short_q": "q", "long_qd": "qd", "nan_q": "q", "inf_qdd": "qdd", "quaternion": "q",
            "strings": "q"}[corrupt]
    if corrupt == "short_q":
        q = q[:-1]
    elif corrupt == "long_qd":
        qd = np.append(qd, 0.0)
    elif corrupt == "nan_q":
        q[4] = np.nan
    elif corrupt == "inf_qdd":
        qdd[1] = np.inf
    elif corrupt == "quaternion":
        q[3:7] *= 1.5
    else:
        q = ["x"] * FLOATING.nq
    errors = []
    for m in (FLOATING, fast):
        with pytest.raises((ValueError, TypeError)) as info:
            sd.rnea(m, q, qd, qdd)
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1])
    for e in errors:
        assert re.search(rf"(^|\W){name}(\W|$)", str(e)), str(e)
        assert "nan=" not in str(e), str(e)      # sd.rnea has no nan= option to point at
    if corrupt == "quaternion":
        assert all("q[3:7]" in str(e) and "unit quaternion" in str(e) for e in errors)


@requires_cc
def test_static_torque_derivatives_take_external_forces(fast):
    """The one compiled function with an f_ext input: a list with None entries, an (N, 6) and a
    stacked (6 N,) array give NumPy's result; a batch takes (B, N, 6); bad shapes and NaN are
    refused naming f_ext."""
    m = FLOATING
    q, _, _ = state(m, 5)
    rng = np.random.default_rng(5)
    forces = [None if i == 1 else rng.uniform(-5, 5, 6) for i in range(m.N)]
    dense = np.array([np.zeros(6) if f is None else f for f in forces])
    want = sd.static_torque_derivatives(m, q, forces)
    for given in (forces, dense, dense.reshape(-1)):
        close(sd.static_torque_derivatives(fast, q, given), want)
    Q, _, _ = states(m, 4)
    F = rng.uniform(-5, 5, (4, m.N, 6))
    got = sd.static_torque_derivatives(fast, Q, F)
    assert got.shape == (4, m.nv, m.nv)
    for b in range(4):
        close(got[b], sd.static_torque_derivatives(m, Q[b], F[b]))
    close(sd.static_torque_derivatives(fast, Q, F.reshape(4, -1)), got)
    with pytest.raises(TypeError, match="f_ext is required"):
        sd.static_torque_derivatives(fast, q, None)
    with pytest.raises(ValueError, match=r"f_ext must have shape \(%d, 6\)" % m.N):
        sd.static_torque_derivatives(fast, q, dense[:, :5])
    with pytest.raises(ValueError, match=r"f_ext must have shape \(4, %d, 6\)" % m.N):
        sd.static_torque_derivatives(fast, Q, F[:3])
    with pytest.raises(ValueError, match="f_ext contains NaN"):
        sd.static_torque_derivatives(fast, q, np.full((m.N, 6), np.nan))


@requires_cc
def test_compiled_refuses_what_it_cannot_evaluate(fast):
    q, qd, qdd = state(FLOATING)
    with pytest.raises(TypeError, match=r"sympy values.*fast\.model"):
        sd.rnea(fast, sp.Matrix(q), qd, qdd)
    with pytest.raises(ValueError, match=r"backend='casadi'.*fast\.model"):
        sd.rnea(fast, q, qd, qdd, backend="casadi")
    with pytest.raises(TypeError, match=r"f_ext.*fast\.model"):
        sd.rnea(fast, q, qd, qdd, [np.zeros(6)] * FLOATING.N)
    with pytest.raises(TypeError, match=r"rnea\(\).*qdd"):
        sd.rnea(fast, q, qd)
    with pytest.raises(TypeError, match="frame must be one frame"):
        sd.frame_jacobian(fast, q, [1, 2])
    close(sd.rnea(fast, q, qd, qdd, backend="numpy"), sd.rnea(FLOATING, q, qd, qdd))


@requires_cc
def test_compiled_falls_back_to_numpy(fast):
    q, qd, _ = state(FLOATING)
    assert sd.total_mass(fast) == sd.total_mass(FLOATING)
    close(sd.coriolis_product(fast, q, qd, qd), sd.coriolis_product(FLOATING, q, qd, qd))
    Q, QD, _ = states(FLOATING, 2)
    close(sd.coriolis_transpose_product(fast, Q, QD),
          sd.coriolis_transpose_product(FLOATING, Q, QD))


@requires_cc
def test_compiled_batch_axis(fast):
    Q, QD, QDD = states(FLOATING, 4)
    tau = sd.rnea(fast, Q, QD, QDD)
    assert tau.shape == (4, FLOATING.nv)
    close(tau, sd.rnea(FLOATING, Q, QD, QDD))
    close(sd.coriolis_matrix(fast, Q, QD), sd.coriolis_matrix(FLOATING, Q, QD))
    close(sd.kinetic_energy(fast, Q, QD), sd.kinetic_energy(FLOATING, Q, QD))
    close(sd.frame_jacobian(fast, Q, 2, "world"), sd.frame_jacobian(FLOATING, Q, 2, "world"))
    with pytest.raises(ValueError, match="qd has 3 states but q has 4"):
        sd.rnea(fast, Q, QD[:3], QDD)
    with pytest.raises(ValueError, match="q is a batch of 4 states .* but qdd is not"):
        sd.rnea(fast, Q, QD, QDD[0])
    Q[2, 3:7] *= 2.0
    with pytest.raises(ValueError, match=r"state 2.*q\[3:7\].*unit quaternion"):
        sd.rnea(fast, Q, QD, QDD)


@requires_cc
def test_compiled_builds_on_first_use(cache_dir):
    lines = []
    fast = sd.compiled(SERIAL, opt="-O0", cache_dir=cache_dir, progress=lines.append)
    assert "nothing built yet" in repr(fast)
    q, qd, qdd = state(SERIAL)
    close(sd.gravity_vector(fast, q), sd.gravity_vector(SERIAL, q))
    assert lines and any("gravity_vector" in line for line in lines)
    assert any("compiling" in line for line in lines)
    again_lines = []
    again = sd.compiled(SERIAL, opt="-O0", cache_dir=cache_dir, progress=again_lines.append)
    close(sd.gravity_vector(again, q), sd.gravity_vector(SERIAL, q))
    assert not any("compiling" in line for line in again_lines)      # the disk cache served it


# --- robots (slow: one library per robot, ~15-40 s to build) ------------------------------------

@requires_cc
@pytest.mark.slow
@pytest.mark.parametrize("robot", ["panda", "solo12"])
def test_robots_compiled_equal_numpy(robot, cache_dir):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_contact_dynamics import FEET, robot as contact_robot

    model = contact_robot(robot)
    frame = "panda_hand" if robot == "panda" else "FL_FOOT"
    contacts = ((sd.Contact(frame, 6, "local_world_aligned"),) if robot == "panda"
                else tuple(sd.Contact(f) for f in FEET))
    fast = sd.compiled(model, opt="-O0", cache_dir=cache_dir, progress=False).prepare(
        "rnea", "crba", "aba", "coriolis_matrix", "christoffel",
        ("frame_jacobian", {"frame": frame}), ("constraint_dynamics", {"contacts": contacts}))
    calls = [lambda m, q, qd, qdd: sd.rnea(m, q, qd, qdd),
             lambda m, q, qd, qdd: sd.crba(m, q),
             lambda m, q, qd, qdd: sd.aba(m, q, qd, qdd),
             lambda m, q, qd, qdd: sd.coriolis_matrix(m, q, qd),
             lambda m, q, qd, qdd: sd.christoffel(m, q),
             lambda m, q, qd, qdd: sd.frame_jacobian(m, q, frame),
             lambda m, q, qd, qdd: sd.constraint_dynamics(m, q, qd, qdd, contacts)]
    for call in calls:
        q, qd, qdd = state(model)
        close(call(fast, q, qd, qdd), call(model, q, qd, qdd))
        Q, QD, QDD = states(model, 3)
        close(call(fast, Q, QD, QDD), call(model, Q, QD, QDD))
