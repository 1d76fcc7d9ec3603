"""Single calls of compiled functions (symdyn/codegen/loader.py): one call path, reaching C
through the fastcall extension (symdyn/codegen/fastcall.py) or through ctypes where it is off,
with the same results, errors and thread behaviour either way."""
from __future__ import annotations

import ast
import inspect
import threading

import numpy as np
import pytest

from conftest import requires_cc
from symdyn.algorithms import crba, rnea
from symdyn.models import random_tree

pytestmark = requires_cc


@pytest.fixture(scope="module")
def fast():
    from symdyn.codegen import fastcall

    if fastcall.status() != "on":
        pytest.skip(f"fastcall extension unavailable: {fastcall.status()}")
    return fastcall


@pytest.fixture(scope="module")
def libs(tmp_path_factory, fast):
    from symdyn.codegen import build

    d = tmp_path_factory.mktemp("fastcall-cache")
    fixed = random_tree(4, seed=3, joint_kinds=("revolute", "prismatic", "helical"))
    floating = random_tree(3, seed=7, joint_kinds=("revolute", "spherical"), floating_base=True)
    return {"fixed": (fixed, build(fixed, ["rnea", "crba", "coriolis_matrix"], opt="-O1",
                                   cache_dir=d, progress=False)),
            "floating": (floating, build(floating, ["rnea"], opt="-O1", cache_dir=d,
                                         progress=False))}


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-2, 2, model.nv), rng.uniform(-2, 2, model.nv)


def test_fast_path_is_used_and_equals_numpy(libs, fast):
    for name, (model, lib) in libs.items():
        q, qd, qdd = _state(model)
        assert isinstance(lib.rnea, fast.module().Function)
        np.testing.assert_allclose(lib.rnea(q, qd, qdd), rnea(model, q, qd, qdd), atol=1e-10)
    model, lib = libs["fixed"]
    q, qd, qdd = _state(model, 1)
    np.testing.assert_array_equal(lib.rnea(q, qdd=qdd, qd=qd), lib.rnea(q, qd, qdd))
    np.testing.assert_array_equal(lib.rnea(qdd=qdd, q=q, qd=qd), lib.rnea(q, qd, qdd))
    own = lib.crba.copy()
    assert isinstance(own, fast.module().Function) and own._w is not lib.crba._w
    np.testing.assert_array_equal(own(q), lib.crba(q))
    np.testing.assert_allclose(lib.crba(q), crba(model, q), atol=1e-10)
    M, Mdot, C = lib.coriolis_matrix(q, qd)
    assert M.shape == Mdot.shape == C.shape == (model.nv, model.nv)
    np.testing.assert_allclose(M, crba(model, q), atol=1e-10)


def test_results_are_fresh_arrays_owned_by_the_caller(libs):
    model, lib = libs["fixed"]
    q1, qd1, qdd1 = _state(model, 2)
    q2, qd2, qdd2 = _state(model, 3)
    r1 = lib.rnea(q1, qd1, qdd1)
    keep = r1.copy()
    r2 = lib.rnea(q2, qd2, qdd2)
    assert r1 is not r2 and r1.flags.owndata and r1.flags.writeable
    np.testing.assert_array_equal(r1, keep)                 # not overwritten by the next call
    M1, _, _ = lib.coriolis_matrix(q1, qd1)
    M2, _, _ = lib.coriolis_matrix(q2, qd2)
    assert not np.allclose(M1, M2)


def test_batches_of_several_outputs_into_out_tuples(libs):
    """out= of a function with several outputs: a tuple of arrays, filled and returned as given
    by the extension; a list or a wrong array goes to the Python path (same results, its
    errors)."""
    from symdyn.codegen.loader import CompiledFunction

    model, lib = libs["fixed"]
    f = lib.coriolis_matrix
    rng = np.random.default_rng(4)
    Q = np.stack([model.random_q(rng) for _ in range(6)])
    QD = rng.uniform(-1, 1, (6, model.nv))
    want = CompiledFunction.batch(f, Q, QD)
    outs = tuple(np.full((6, *s), np.nan) for s in f.output_shapes)
    assert f.batch(Q, QD, out=outs, threads=1) is outs
    as_list = [np.full((6, *s), np.nan) for s in f.output_shapes]
    assert f.batch(Q, QD, out=as_list) is as_list
    for got in (outs, as_list):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(TypeError, match="a tuple of 3 arrays"):
        f.batch(Q, QD, out=outs[:2])
    with pytest.raises(TypeError, match="dtype float64"):
        f.batch(Q, QD, out=(outs[0], outs[1], outs[2].astype(np.float32)))


def test_other_inputs_take_the_python_path_with_its_conversions_and_errors(libs):
    model, lib = libs["fixed"]
    q, qd, qdd = _state(model, 4)
    ref = rnea(model, q, qd, qdd)
    wide = np.zeros((model.nv, 2))
    wide[:, 0] = q
    for args in ((list(q), qd, qdd), (q.astype(np.float32).astype(np.float64), qd, qdd),
                 (wide[:, 0], qd, qdd), (q.reshape(1, -1)[0], qd, qdd)):
        np.testing.assert_allclose(lib.rnea(*args), rnea(model, *args), atol=1e-10)
    assert not wide[:, 0].flags.c_contiguous
    np.testing.assert_allclose(lib.rnea(q.astype(np.float32), qd, qdd),
                               rnea(model, q.astype(np.float32).astype(float), qd, qdd),
                               atol=1e-6)
    with pytest.raises(ValueError, match=r"input q must have shape"):
        lib.rnea(q[:-1], qd, qdd)
    with pytest.raises(TypeError, match=r"missing 1 required positional argument"):
        lib.rnea(q, qd)
    with pytest.raises(TypeError, match=r"real numbers"):
        lib.rnea(np.array(["a"] * model.nq), qd, qdd)
    out = np.empty(model.nv)
    assert lib.rnea(q, qd, qdd, out=out) is out
    np.testing.assert_allclose(out, ref, atol=1e-10)


def test_nan_and_quaternion_errors_come_from_the_python_path(libs):
    model, lib = libs["fixed"]
    q, qd, qdd = _state(model, 5)
    bad = qd.copy()
    bad[1] = np.nan
    with pytest.raises(ValueError, match=r"input qd contains NaN"):
        lib.rnea(q, bad, qdd)
    assert np.isnan(lib.rnea(q, bad, qdd, nan="propagate")).all()
    model, lib = libs["floating"]
    q, qd, qdd = _state(model, 6)
    q[3:7] *= 2.0                                           # the base quaternion, norm 2
    with pytest.raises(ValueError, match=r"unit quaternion"):
        lib.rnea(q, qd, qdd)


def test_calls_from_other_threads(libs):
    model, lib = libs["fixed"]
    states = [_state(model, 10 + k) for k in range(4)]
    results: dict = {}

    def work(k):
        results[k] = [lib.rnea(*states[k]) for _ in range(50)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, s in enumerate(states):
        ref = rnea(model, *s)
        for r in results[k]:
            np.testing.assert_allclose(r, ref, atol=1e-10)


def test_switched_off_and_failing_builds_fall_back(monkeypatch, tmp_path):
    from symdyn.codegen import fastcall

    monkeypatch.setattr(fastcall, "_state", {})
    monkeypatch.setenv("SYMDYN_FASTCALL", "0")
    assert fastcall.module() is None and fastcall.status() == "off: $SYMDYN_FASTCALL is off"
    monkeypatch.setattr(fastcall, "_state", {})
    monkeypatch.delenv("SYMDYN_FASTCALL")
    bad = tmp_path / "_fastcall.c"
    bad.write_text("this is not C\n")
    monkeypatch.setattr(fastcall, "SOURCE", bad)
    assert fastcall.module() is None
    assert fastcall.status().startswith("off: compiling _fastcall.c failed")


def test_loader_generates_no_python_source():
    """Compiled functions are ordinary classes: the loader neither execs nor compiles code."""
    from symdyn.codegen import fastcall, loader

    for mod in (loader, fastcall):
        tree = ast.parse(inspect.getsource(mod))
        calls = {n.func.id for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not calls & {"exec", "eval", "compile"}, mod.__name__


@pytest.fixture
def ctypes_libs(libs, monkeypatch):
    """The builds of ``libs`` loaded again with the extension switched off (ctypes)."""
    from symdyn.codegen import fastcall, load

    monkeypatch.setattr(fastcall, "_state", {"module": None, "status": "off: test"})
    return {name: (model, load(lib.path)) for name, (model, lib) in libs.items()}


def _outcome(call):
    """(results, None) or (None, (exception type, message)) of ``call()``."""
    try:
        res = call()
    except (TypeError, ValueError) as exc:
        return None, (type(exc), str(exc))
    return tuple(np.copy(r) for r in (res if isinstance(res, tuple) else (res,))), None


def test_ctypes_and_extension_give_the_same_results_and_errors(libs, ctypes_libs):
    from symdyn.codegen import CompiledFunction

    for name, (model, lib) in libs.items():
        plain = ctypes_libs[name][1]
        assert type(plain.rnea) is CompiledFunction             # ctypes
        assert isinstance(lib.rnea, CompiledFunction)           # the same class on the C base
        assert type(lib.rnea) is not CompiledFunction
        q, qd, qdd = _state(model, 20)
        nan_qd = qd.copy()
        nan_qd[0] = np.inf
        bad_q = q.copy()
        bad_q[-1] += 0.5                                       # off the unit sphere if floating
        wide = np.zeros((model.nv, 3))
        wide[:, 1] = qd
        cases = [((q, qd, qdd), {}), ((list(q), tuple(qd), qdd.astype(np.float32)), {}),
                 ((q, wide[:, 1], qdd), {}), ((q,), {"qdd": qdd, "qd": qd}),
                 ((q, nan_qd, qdd), {}), ((q, nan_qd, qdd), {"nan": "propagate"}),
                 ((bad_q, qd, qdd), {}), ((q, qd[:-1], qdd), {}), ((q, qd), {}),
                 ((q, qd, qdd, qdd), {}), ((q, qd, qdd), {"qd": qd}),
                 ((q, qd, qdd), {"tau": qd}), ((q, qd, qdd), {"nan": "ignore"}),
                 ((q.astype(complex), qd, qdd), {}),
                 ((q, qd, qdd), {"out": np.empty(model.nv, dtype=np.float32)}),
                 ((q, qd, qdd), {"out": np.empty(model.nv + 1)})]
        for args, kwargs in cases:
            got = _outcome(lambda: lib.rnea(*args, **kwargs))
            want = _outcome(lambda: plain.rnea(*args, **kwargs))
            assert (got[1] is None) == (want[1] is None), (name, kwargs, got[1], want[1])
            if got[1] is not None:
                assert got[1] == want[1]
            else:
                for g, w in zip(got[0], want[0]):
                    np.testing.assert_array_equal(g, w)
        for f, g in ((lib.rnea, plain.rnea),):
            out_f, out_g = np.empty(model.nv), np.empty(model.nv)
            assert f(q, qd, qdd, out=out_f) is out_f and g(q, qd, qdd, out=out_g) is out_g
            np.testing.assert_array_equal(out_f, out_g)
            np.testing.assert_allclose(out_f, rnea(model, q, qd, qdd), atol=1e-10)
    model, lib = libs["fixed"]
    plain = ctypes_libs["fixed"][1]
    q, qd, _ = _state(model, 21)
    for a, b in zip(lib.coriolis_matrix(q, qd), plain.coriolis_matrix(q, qd)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(lib.crba.batch(np.array([q, q])),
                                  plain.crba.batch(np.array([q, q])))


def test_ctypes_path_results_are_fresh_and_threads_use_their_own_copies(ctypes_libs):
    model, lib = ctypes_libs["fixed"]
    q1, qd1, qdd1 = _state(model, 22)
    r1 = lib.rnea(q1, qd1, qdd1)
    keep = r1.copy()
    r2 = lib.rnea(*_state(model, 23))
    assert r1 is not r2 and not np.shares_memory(r1, r2)
    np.testing.assert_array_equal(r1, keep)
    results: dict = {}

    def work(k):
        f = lib.rnea if k % 2 else lib.rnea.copy()             # refused context, or a copy
        results[k] = [f(*_state(model, 30 + k)) for _ in range(20)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, res in results.items():
        ref = rnea(model, *_state(model, 30 + k))
        for r in res:
            np.testing.assert_allclose(r, ref, atol=1e-10)
