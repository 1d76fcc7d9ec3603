"""Single calls through the fastcall extension (symdyn/codegen/fastcall.py): the same results,
errors and thread behaviour as the Python call path, which takes every call it does not."""
from __future__ import annotations

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
        assert isinstance(type(lib.rnea).__dict__["__call__"], fast.module().Caller)
        np.testing.assert_allclose(lib.rnea(q, qd, qdd), rnea(model, q, qd, qdd), atol=1e-10)
    model, lib = libs["fixed"]
    q, qd, _ = _state(model, 1)
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


def test_big_results_keep_the_pooled_python_path(libs, fast, monkeypatch):
    from symdyn.codegen import loader

    model, lib = libs["fixed"]
    assert isinstance(type(lib.crba).__dict__["__call__"], fast.module().Caller)
    monkeypatch.setattr(loader, "_FAST_MAX_BYTES", 8 * model.nv ** 2 - 1)
    f = lib.crba.copy()                                     # specialized again, now too big
    assert not isinstance(type(f).__dict__["__call__"], fast.module().Caller)
    q = _state(model, 7)[0]
    np.testing.assert_allclose(f(q), crba(model, q), atol=1e-10)


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
