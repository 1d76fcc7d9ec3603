"""Compiled fast path, robustness (issue 12): unit quaternions, threads, option validation, long
names, corrupted manifests, missing compiler, fresh results, progress in logs, CLI errors.

Each silent-wrong-answer case here returned a finite wrong result (or raced) before its fix.
"""
from __future__ import annotations

import io
import json
import os
import threading
import time

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import BuildError, build, compiler_info, load
from symdyn.codegen import cache as cg_cache
from symdyn.models import quadruped, random_tree, serial_chain
from conftest import requires_cc




@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("symdyn-cache-robust")


@pytest.fixture(scope="module")
def fmodel():
    return quadruped(4, floating=True)


@pytest.fixture(scope="module")
def flib(fmodel, cache_dir):
    return build(fmodel, ["rnea", "crba", "coriolis_matrix"], opt="-O1", cache_dir=cache_dir,
                 progress=False)


def _fstate(model, rng):
    return model.random_q(rng), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


# --- 1. unit quaternions ---------------------------------------------------------------------------

@requires_cc
@pytest.mark.parametrize("scale", [1.1, 0.0, 1 + 3e-6])
def test_non_unit_quaternion_raises_on_single_calls(flib, fmodel, scale):
    q, qd, qdd = _fstate(fmodel, np.random.default_rng(1))
    q[3:7] *= scale
    with pytest.raises(ValueError, match=r"q\[3:7\] .*body 'torso'.*unit quaternion") as e1:
        sd.rnea(fmodel, q, qd, qdd)
    for call in (lambda: flib.rnea(q, qd, qdd), lambda: flib.crba(q),
                 lambda: flib.coriolis_matrix(q, qd),
                 lambda: flib.rnea(q, qd, qdd, nan="propagate"),
                 lambda: flib.rnea(q, qd, qdd, out=np.empty(fmodel.nv))):
        with pytest.raises(ValueError, match=r"input q\[3:7\] \(joint of body 'torso'\) must be "
                                             r"a unit quaternion") as e2:
            call()
        assert str(e1.value).split("; ")[-1] in str(e2.value)   # same norm reported


@requires_cc
def test_unit_quaternion_within_tolerance_passes(flib, fmodel):
    q, qd, qdd = _fstate(fmodel, np.random.default_rng(2))
    q[3:7] *= 1 + 5e-7                      # inside sd.rnea's tolerance (1e-6)
    np.testing.assert_allclose(flib.rnea(q, qd, qdd), sd.rnea(fmodel, q, qd, qdd), rtol=1e-12,
                               atol=1e-12)


@requires_cc
def test_non_unit_quaternion_raises_in_batch(flib, fmodel):
    rng = np.random.default_rng(3)
    states = [_fstate(fmodel, rng) for _ in range(9)]
    Q, QD, QDD = (np.array([s[k] for s in states]) for k in range(3))
    Q[5, 3:7] = 0.0
    Q[7, 3:7] *= 2
    for nan in ("raise", "propagate"):
        with pytest.raises(ValueError, match=r"batch: state 5: input q\[3:7\] \(joint of body "
                                             r"'torso'\).*norm is 0"):
            flib.rnea.batch(Q, QD, QDD, nan=nan)
        with pytest.raises(ValueError, match="state 5"):
            flib.crba.batch(Q, threads=3, nan=nan)
    # NaN in another state does not hide the quaternion error
    Q[1, 0] = np.nan
    with pytest.raises(ValueError, match="state 5"):
        flib.rnea.batch(Q, QD, QDD, nan="propagate")
    Q[5, 3:7] = Q[0, 3:7]
    Q[7, 3:7] = Q[0, 3:7]
    tau = flib.rnea.batch(Q, QD, QDD, nan="propagate")
    assert np.isnan(tau[1]).all() and np.isfinite(np.delete(tau, 1, axis=0)).all()


@requires_cc
def test_quaternions_normalize_option(fmodel, cache_dir):
    lib = build(fmodel, ["rnea", "crba"], opt="-O1", cache_dir=cache_dir, progress=False,
                quaternions="normalize")
    rng = np.random.default_rng(11)
    q, qd, qdd = _fstate(fmodel, rng)
    qn = q.copy()
    q[3:7] *= 1.7
    kept = q.copy()
    np.testing.assert_allclose(lib.rnea(q, qd, qdd), sd.rnea(fmodel, qn, qd, qdd), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(lib.crba(list(q)), sd.crba(fmodel, qn), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(q, kept)                 # the caller's q is not modified
    Q = np.array([q, qn, q * 1.0])
    Q[2, 3:7] *= 0.01
    M = lib.crba.batch(Q)
    for k in range(3):
        np.testing.assert_allclose(M[k], sd.crba(fmodel, qn), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(Q[0], kept)
    q[3:7] = 0.0                                           # nothing to normalize: still refused
    with pytest.raises(ValueError, match=r"q\[3:7\].*norm is 0"):
        lib.rnea(q, qd, qdd)
    Q[1, 3:7] = 0.0
    with pytest.raises(ValueError, match="state 1"):
        lib.crba.batch(Q)
    with pytest.raises(ValueError, match="quaternions must be one of"):
        build(fmodel, ["crba"], cache_dir=cache_dir, progress=False, quaternions="fix")
    with pytest.raises(ValueError, match="quaternions must be one of"):
        load(lib.path, quaternions=None)


@requires_cc
def test_models_without_quaternions_have_no_check(cache_dir):
    m = serial_chain(3)
    lib = build(m, ["crba"], opt="-O0", cache_dir=cache_dir, progress=False)
    assert lib.manifest["quaternions"] == []
    q = np.full(m.nq, 5.0)                  # no quaternion: any angles are fine
    np.testing.assert_allclose(lib.crba(q), sd.crba(m, q), rtol=1e-12, atol=1e-12)


# --- 2. threads ------------------------------------------------------------------------------------

@requires_cc
def test_threads_hammering_one_function(fmodel, cache_dir):
    lib = build(fmodel, ["rnea", "coriolis_matrix"], opt="-O1", cache_dir=cache_dir,
                progress=False)
    rng = np.random.default_rng(4)
    states = [_fstate(fmodel, rng) for _ in range(16)]
    ref_tau = [sd.rnea(fmodel, *s) for s in states]
    ref_C = [lib.coriolis_matrix(s[0], s[1]) for s in states]   # owner thread's own values
    errors, n_threads, n_calls = [], 6, 3000
    start = threading.Barrier(n_threads)

    def hammer(t):
        start.wait()
        kept = []
        for i in range(n_calls):
            k = (7 * t + i) % len(states)
            tau = lib.rnea(*states[k])
            if not np.allclose(tau, ref_tau[k], rtol=1e-12, atol=1e-12):
                errors.append((t, i, "rnea"))
            if i % 3 == 0:
                res = lib.coriolis_matrix(states[k][0], states[k][1])
                kept.append((k, res))
                if len(kept) > 4:
                    k0, r0 = kept.pop(0)
                    if not all(np.array_equal(a, b) for a, b in zip(r0, ref_C[k0])):
                        errors.append((t, i, "kept result overwritten"))

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(n_threads)]
    interval = __import__("sys").getswitchinterval()
    __import__("sys").setswitchinterval(1e-6)           # switch threads as often as possible
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        __import__("sys").setswitchinterval(interval)
    assert not errors, errors[:5]
    # the owner thread keeps the fast path; batch threading still works
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    A = np.array([s[2] for s in states])
    np.testing.assert_allclose(lib.rnea.batch(Q, V, A, threads=3), np.array(ref_tau),
                               rtol=1e-12, atol=1e-12)


@requires_cc
def test_context_refuses_other_threads(flib, fmodel):
    """The C wrapper refuses the owner's context from another thread (status -3, no write), and
    that thread's call runs on its own copy."""
    f = flib.crba
    q = fmodel.random_q(9)
    M = np.zeros((fmodel.nv, fmodel.nv))
    seen = {}

    def other():
        seen["status"] = f._run((q,), (M,))
        seen["M"] = f(q)
        seen["copy"] = f._tls.fn

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert seen["status"] == -3 and not M.any()
    assert seen["copy"] is not f and seen["copy"]._w.ctypes.data != f._w.ctypes.data
    np.testing.assert_allclose(seen["M"], sd.crba(fmodel, q), rtol=1e-12, atol=1e-12)
    assert f._run((q,), (M,)) == 0
    np.testing.assert_allclose(M, seen["M"], rtol=1e-12, atol=1e-12)


@requires_cc
def test_batches_from_many_threads_do_not_share_results(flib, fmodel):
    rng = np.random.default_rng(5)
    Qs = [np.array([fmodel.random_q(rng) for _ in range(50)]) for _ in range(4)]
    refs = [flib.crba.batch(Q) for Q in Qs]
    errors = []

    def work(t):
        for _ in range(40):
            M = flib.crba.batch(Qs[t])
            time.sleep(0)
            if not np.array_equal(M, refs[t]):
                errors.append(t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


# --- 3. options validated on single calls -----------------------------------------------------------

@requires_cc
def test_nan_option_validated_on_single_calls(flib, fmodel):
    q, qd, qdd = _fstate(fmodel, np.random.default_rng(6))
    for call in (lambda: flib.rnea(q, qd, qdd, nan="bogus"), lambda: flib.crba(q, nan=None),
                 lambda: flib.rnea.batch(q[None], qd[None], qdd[None], nan="bogus")):
        with pytest.raises(ValueError, match="nan must be one of"):
            call()
    other = []
    th = threading.Thread(target=lambda: other.append(_raises(lambda: flib.crba(q, nan="x"))))
    th.start()
    th.join()
    assert other == [True]


def _raises(fn) -> bool:
    try:
        fn()
    except ValueError as exc:
        return "nan must be one of" in str(exc)
    return False


# --- 4. long names ----------------------------------------------------------------------------------

@requires_cc
@pytest.mark.parametrize("length", [44, 200])
def test_long_names_build(tmp_path, length):
    m = serial_chain(2)
    name = ("x" * (length - 3)) + "abc"
    lib = build(m, ["christoffel_from_mass_matrix", "rnea"], name=name, opt="-O0",
                cache_dir=tmp_path, progress=False)
    f = lib.christoffel_from_mass_matrix
    assert len(f.symbol) <= 48 and f.name.endswith("_christoffel_from_mass_matrix")
    q = m.random_q(0)
    np.testing.assert_allclose(f(q), np.asarray(sd.christoffel_from_mass_matrix(m, q),
                                                dtype=float), rtol=1e-10, atol=1e-12)
    assert build(m, ["christoffel_from_mass_matrix", "rnea"], name=name, opt="-O0",
                 cache_dir=tmp_path, progress=False).cache_hit


def test_function_symbols_are_short_and_distinct():
    from symdyn.codegen.generate import function_symbol

    a = function_symbol("x" * 44, "christoffel_from_mass_matrix")
    b = function_symbol("x" * 44, "christoffel")
    assert len(a) <= 48 and len(b) <= 48 and a != b
    assert function_symbol("panda", "rnea") == "panda_rnea"


# --- 5. manifests of the wrong shape ---------------------------------------------------------------

@requires_cc
@pytest.mark.parametrize("content", ["[]", '{"files": 3}', '{"prefix": "x"}', "{}", "3",
                                     "null", '"text"', "MISSING_FUNCTIONS", "BAD_FILES"])
def test_wrong_shape_manifest_is_rebuilt(tmp_path, content):
    m = serial_chain(2)
    lib = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    path = lib.path / cg_cache.MANIFEST
    manifest = json.loads(path.read_text())
    if content == "MISSING_FUNCTIONS":
        del manifest["functions"]
        content = json.dumps(manifest)
    elif content == "BAD_FILES":
        manifest["files"] = {"../evil": "0"}
        content = json.dumps(manifest)
    path.write_text(content)
    assert cg_cache.verify(lib.path, manifest["key"])[0] is None
    with pytest.raises(ValueError, match="cannot load"):
        load(lib.path)
    again = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert not again.cache_hit
    q = m.random_q(1)
    np.testing.assert_allclose(again.rnea(q, q, q), sd.rnea(m, q, q, q), rtol=1e-12, atol=1e-12)
    assert build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False).cache_hit


# --- 6. no C compiler ------------------------------------------------------------------------------

def test_compile_tests_skip_without_a_compiler(tmp_path):
    """With no compiler on PATH (and no $CC) the tests that compile are skipped, not errors."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CC"}
    env["PATH"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                          "-k", "long_names or without_quaternions", "-m", "slow or not slow"],
                         capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 0 and "3 skipped" in res.stdout, res.stdout[-2000:]


def test_no_compiler_named_in_the_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(BuildError, match=r"\$CC = '/nonexistent/cc'.*install gcc or clang"):
        compiler_info()
    with pytest.raises(BuildError, match="no C compiler"):
        build(serial_chain(2), ["rnea"], cache_dir=tmp_path, progress=False)
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(tmp_path))          # no cc, gcc or clang there
    with pytest.raises(BuildError, match="looked for cc, gcc, clang on PATH"):
        compiler_info()
    with pytest.raises(BuildError, match="cc = 'nope'"):
        compiler_info("nope")


# --- 7. / 10. results -----------------------------------------------------------------------------

@requires_cc
def test_batch_and_single_results_are_fresh_arrays(fmodel, cache_dir):
    lib = build(fmodel, ["crba", "coriolis_matrix"], opt="-O1", cache_dir=cache_dir,
                progress=False)
    f = lib.crba
    rng = np.random.default_rng(7)
    Q1 = np.array([fmodel.random_q(rng) for _ in range(30)])
    Q2 = np.array([fmodel.random_q(rng) for _ in range(30)])
    ref1 = f.batch(Q1, out=np.empty((30, fmodel.nv, fmodel.nv)))
    a = f.batch(Q1)
    view = a[3:5]
    del a
    b = f.batch(Q2)
    np.testing.assert_array_equal(view, ref1[3:5])     # a dropped batch's memory stays its own
    assert not np.shares_memory(view, b)
    c = lib.coriolis_matrix
    states = [_fstate(fmodel, rng)[:2] for _ in range(5)]
    refs = [tuple(np.asarray(x) for x in sd.coriolis_matrix(fmodel, *s)) for s in states]
    kept = [c(*s) for s in states]
    for _ in range(3):
        for s, ref in zip(states, refs):
            np.testing.assert_allclose(c(*s)[2], ref[2], rtol=1e-11, atol=1e-11)
    for got, ref in zip(kept, refs):
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-11)


# --- 8. progress in logs ---------------------------------------------------------------------------

def test_progress_prints_periodic_lines_when_not_a_tty(capsys, monkeypatch):
    from symdyn import progress

    class Log(io.StringIO):
        def isatty(self):
            return False

    log = Log()
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr(progress, "DEFAULT_INTERVAL", 0.05)
    p = progress.Progress("demo", None)
    assert p.heartbeat == 0.05
    p("traced in no time")                       # automatic mode: quick steps stay silent
    with p.step("compiling demo.c", slow=True):
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert lines[0] == "demo: compiling demo.c"
    assert sum("still compiling demo.c" in ln for ln in lines) >= 2, lines
    quiet = progress.Progress("demo", False)
    with quiet.step("tracing", slow=True):
        time.sleep(0.12)
    assert len(log.getvalue().splitlines()) == len(lines)
    seen: list = []
    progress.make_progress(seen.append, "demo")("linked")
    assert seen == ["demo: linked"]
    with pytest.raises(TypeError, match="progress must be"):
        progress.make_progress("loud", "demo")


def test_progress_default_through_a_real_pipe():
    """progress=None, stderr a pipe (as in CI): step lines and periodic 'still' lines arrive."""
    import subprocess
    import sys

    code = ("import time; from symdyn import progress as p; p.DEFAULT_INTERVAL = 0.05\n"
            "pr = p.Progress('pipe', None)\n"
            "with pr.step('compiling x.c', slow=True): time.sleep(0.4)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    lines = res.stderr.splitlines()
    assert res.returncode == 0 and lines[0] == "pipe: compiling x.c", res.stderr
    assert sum("still compiling x.c" in ln for ln in lines) >= 3, lines


@requires_cc
def test_compile_heartbeat_in_a_log(monkeypatch, tmp_path):
    from symdyn import progress

    seen = []
    monkeypatch.setattr(progress, "DEFAULT_INTERVAL", 0.0)   # a line at every poll
    monkeypatch.setattr(progress.Progress, "tty", False)
    build(serial_chain(3), ["crba"], opt="-O1", cache_dir=tmp_path, progress=seen.append)
    assert any("still compiling" in s for s in seen), seen
    assert any("tracing crba" in s for s in seen) and any("linked" in s for s in seen)


# --- 11. CLI errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,match", [
    (["codegen", "nosuchmodel:3", "--out", "{tmp}"], "nosuchmodel"),
    (["codegen", "serial:2", "--algorithms", "rnea,bogus", "--out", "{tmp}"], "bogus"),
    (["codegen", "serial:2", "--algorithms", "rnea", "--option", "frame=body", "--out", "{tmp}"],
     "frame"),
    (["codegen", "serial:2", "--option", "oops", "--out", "{tmp}"], "KEY=VALUE"),
])
def test_cli_codegen_errors_are_one_line(tmp_path, capsys, argv, match):
    from symdyn.cli import main

    code = main([a.replace("{tmp}", str(tmp_path / "out")) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("symdyn codegen: error: ") and match in err[0]


@requires_cc
def test_cli_compile_failure_is_one_line(tmp_path, capsys):
    from symdyn.cli import main

    code = main(["codegen", "serial:2", "--algorithms", "rnea", "--out", str(tmp_path / "o"),
                 "--compile", "--quiet", "--cflags", "-DSYMDYN_BROKEN=1 -include /nonexistent.h"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("symdyn codegen: error: "), err


def test_cli_no_compiler_is_one_line(tmp_path, capsys, monkeypatch):
    from symdyn.cli import main

    monkeypatch.setenv("CC", "/nonexistent/cc")
    code = main(["codegen", "serial:2", "--algorithms", "rnea", "--out", str(tmp_path / "o"),
                 "--compile", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no C compiler" in err[0], err


def test_random_tree_floating_quaternion_slices():
    from symdyn.codegen.generate import quaternion_slices

    m = random_tree(4, seed=3, joint_kinds=("revolute", "spherical"), floating_base=True)
    slices = quaternion_slices(m)
    assert slices[0] == {"offset": 3, "body": m.names[0]}
    for s in slices:
        i = list(m.names).index(s["body"])
        assert s["offset"] == m.q_idx[i][1] - 4


@requires_cc
def test_second_quaternion_named_like_sd_rnea(cache_dir):
    """A spherical joint's quaternion further down the tree: the error names its slice and body,
    as sd.rnea does, on single calls and in batches."""
    from symdyn.codegen.generate import quaternion_slices

    m = random_tree(4, seed=3, joint_kinds=("revolute", "spherical"), floating_base=True)
    slices = quaternion_slices(m)
    assert len(slices) >= 2, slices
    off, body = slices[-1]["offset"], slices[-1]["body"]
    lib = build(m, ["rnea"], opt="-O0", cache_dir=cache_dir, progress=False)
    rng = np.random.default_rng(10)
    q, qd, qdd = _fstate(m, rng)
    q[off:off + 4] *= 0.5
    with pytest.raises(ValueError) as ref:
        sd.rnea(m, q, qd, qdd)
    assert f"q[{off}:{off + 4}] (joint of body {body!r})" in str(ref.value)
    with pytest.raises(ValueError, match=rf"input q\[{off}:{off + 4}\] \(joint of body "
                                         rf"{body!r}\).*norm is 0.5"):
        lib.rnea(q, qd, qdd)
    Q = np.array([m.random_q(rng), q])
    with pytest.raises(ValueError, match=rf"state 1: input q\[{off}:{off + 4}\]"):
        lib.rnea.batch(Q, np.zeros((2, m.nv)), np.zeros((2, m.nv)))
