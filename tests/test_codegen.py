"""Compiled fast path (symdyn.codegen): compiled == NumPy, batch, out=, cache, CLI, bad inputs.

Compile-heavy cases use 2-3 body models so the file stays fast.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import casadi as ca
import numpy as np
import pytest

from symdyn.codegen import (ALGORITHMS, available_algorithms, build, c_identifier, casadi_function,
                            load)
from symdyn.codegen import cache as cg_cache
from symdyn.models import random_tree
from conftest import requires_cc

pytestmark = requires_cc

ALGS = available_algorithms()
INPUTS = {"q", "qd", "qdd", "tau"}


def _model():
    # generalized coordinates only, so that christoffel_from_mass_matrix applies too
    return random_tree(3, seed=5, joint_kinds=("revolute", "prismatic", "helical"))


def _floating():
    return random_tree(3, seed=7, joint_kinds=("revolute", "spherical"), floating_base=True,
                       name="float-base")


def _state(model, rng):
    return {"q": model.random_q(rng), "qd": rng.uniform(-2, 2, model.nv),
            "qdd": rng.uniform(-2, 2, model.nv), "tau": rng.uniform(-2, 2, model.nv)}


def _reference(model, alg, state):
    spec = ALGORITHMS[alg]
    out = spec.resolve()(model, *[state[n] for n in spec.input_names])
    out = out if len(spec.outputs) > 1 else (out,)
    return tuple(np.asarray(o, dtype=float) for o in out)


def _close(a, b, rel=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    scale = max(1.0, float(np.abs(b).max()))
    assert float(np.abs(a - b).max()) <= rel * scale, float(np.abs(a - b).max())


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("symdyn-cache")


@pytest.fixture(scope="module")
def lib(cache_dir):
    return build(_model(), ALGS, opt="-O1", cache_dir=cache_dir, progress=False)


@pytest.fixture(scope="module")
def flib(cache_dir):
    algs = [a for a in ("rnea", "crba", "aba", "christoffel", "coriolis_matrix",
                        "rnea_derivatives") if a in ALGS]
    return build(_floating(), algs, opt="-O1", cache_dir=cache_dir, progress=False)


# --- compiled == NumPy ------------------------------------------------------------------------------

@pytest.mark.parametrize("alg", ALGS)
def test_compiled_equals_numpy(lib, alg):
    model, rng = _model(), np.random.default_rng(1)
    f = lib[alg]
    for _ in range(3):
        st = _state(model, rng)
        res = f(*[st[n] for n in f.input_names])
        res = res if isinstance(res, tuple) else (res,)
        for got, ref in zip(res, _reference(model, alg, st)):
            _close(got, ref)


def test_floating_base_quaternions(flib):
    model, rng = _floating(), np.random.default_rng(2)
    assert model.nq != model.nv
    for alg in flib.algorithms:
        st = _state(model, rng)
        res = flib[alg](*[st[n] for n in flib[alg].input_names])
        res = res if isinstance(res, tuple) else (res,)
        for got, ref in zip(res, _reference(model, alg, st)):
            _close(got, ref)


def test_signature_and_stats(lib):
    assert lib.rnea.input_names == ("q", "qd", "qdd") and lib.rnea.output_names == ("tau",)
    nv = _model().nv
    if "christoffel" in ALGS:
        assert lib.christoffel.output_shapes == ((nv, nv, nv),)
    st = lib.stats["functions"]["rnea"]
    assert st["n_nodes"] > 0 and st["n_instructions"] > 0 and st["t_compile"] > 0
    assert lib.stats["t_compile_cpu"] >= 0 and lib.header.is_file() and lib.library.is_file()


# --- batch and out= ----------------------------------------------------------------------------------

@pytest.mark.parametrize("alg", [a for a in ("rnea", "christoffel", "coriolis_matrix",
                                             "aba_derivatives") if a in ALGS])
@pytest.mark.parametrize("threads", [1, 3])
def test_batch_equals_loop(lib, alg, threads):
    model, rng = _model(), np.random.default_rng(3)
    f = lib[alg]
    states = [_state(model, rng) for _ in range(7)]
    arrays = [np.array([s[n] for s in states]) for n in f.input_names]
    res = f.batch(*arrays, threads=threads)
    res = res if isinstance(res, tuple) else (res,)
    for i, s in enumerate(states):
        one = f(*[s[n] for n in f.input_names])
        one = one if isinstance(one, tuple) else (one,)
        for r, o in zip(res, one):
            np.testing.assert_array_equal(r[i], o)


def test_batch_empty_and_out(lib):
    nq, nv = _model().nq, _model().nv
    tau = lib.rnea.batch(np.zeros((0, nq)), np.zeros((0, nv)), np.zeros((0, nv)))
    assert tau.shape == (0, nv)
    rng = np.random.default_rng(4)
    Q, V, A = rng.normal(size=(5, nq)), rng.normal(size=(5, nv)), rng.normal(size=(5, nv))
    out = np.full((5, nv), 7.0)
    assert lib.rnea.batch(Q, V, A, out=out) is out
    np.testing.assert_array_equal(out, lib.rnea.batch(Q, V, A))


def test_out_in_place(lib):
    model, rng = _model(), np.random.default_rng(5)
    st = _state(model, rng)
    out = np.zeros(model.nv)
    r = lib.rnea(st["q"], st["qd"], st["qdd"], out=out)
    assert r is out
    _close(out, _reference(model, "rnea", st)[0])
    M = np.zeros((model.nv, model.nv))
    lib.crba(st["q"], out=M)
    _close(M, _reference(model, "crba", st)[0])
    if "coriolis_matrix" in ALGS:
        outs = tuple(np.zeros((model.nv, model.nv)) for _ in range(3))
        assert lib.coriolis_matrix(st["q"], st["qd"], out=outs) is outs
        for o, ref in zip(outs, _reference(model, "coriolis_matrix", st)):
            _close(o, ref)
    # results are copies: a later call does not change an earlier result
    a = lib.rnea(st["q"], st["qd"], st["qdd"])
    b = a.copy()
    lib.rnea(st["q"] + 1, st["qd"], st["qdd"])
    np.testing.assert_array_equal(a, b)


# --- bad input ---------------------------------------------------------------------------------------

def test_bad_inputs(lib):
    model, rng = _model(), np.random.default_rng(6)
    st = _state(model, rng)
    q, qd, qdd = st["q"], st["qd"], st["qdd"]
    ref = lib.rnea(q, qd, qdd)
    with pytest.raises(ValueError, match=r"qd must have shape \(3,\), got \(2,\)"):
        lib.rnea(q, qd[:2], qdd)
    with pytest.raises(ValueError, match="shape"):
        lib.rnea(q.reshape(-1, 1), qd, qdd)
    with pytest.raises(TypeError, match="real numbers"):
        lib.rnea(q.astype(complex), qd, qdd)
    with pytest.raises(TypeError, match="real numbers"):
        lib.rnea(np.array(["a", "b", "c"]), qd, qdd)
    with pytest.raises(TypeError, match="rnea.. missing 1 required positional argument: 'qdd'"):
        lib.rnea(q, qd)
    # non-contiguous, lists, float32 and int inputs are converted
    wide = np.zeros((model.nv, 2))
    wide[:, 0] = qd
    assert not wide[:, 0].flags.c_contiguous
    np.testing.assert_array_equal(lib.rnea(q, wide[:, 0], qdd), ref)
    np.testing.assert_array_equal(lib.rnea(list(q), tuple(qd), qdd), ref)
    _close(lib.rnea(q.astype(np.float32), qd, np.zeros(3, dtype=int)),
           lib.rnea(q.astype(np.float32).astype(float), qd, np.zeros(3)))
    # NaN / inf: a clear error, or NaN outputs on request; the buffers stay usable
    bad = qd.copy()
    bad[1] = np.nan
    with pytest.raises(ValueError, match="input qd contains NaN or inf"):
        lib.rnea(q, bad, qdd)
    assert np.isnan(lib.rnea(q, bad, qdd, nan="propagate")).all()
    with pytest.raises(ValueError, match="input q contains NaN"):
        lib.crba(np.array([np.inf, 0, 0]))
    np.testing.assert_array_equal(lib.rnea(q, qd, qdd), ref)
    # out=
    with pytest.raises(TypeError, match="float64"):
        lib.rnea(q, qd, qdd, out=np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        lib.rnea(q, qd, qdd, out=np.zeros(4))
    if "coriolis_matrix" in ALGS:
        with pytest.raises(TypeError, match="tuple of 3 arrays"):
            lib.coriolis_matrix(q, qd, out=np.zeros((3, 3)))


def test_bad_batch_inputs(lib):
    nq, nv = _model().nq, _model().nv
    Q, V = np.zeros((4, nq)), np.zeros((4, nv))
    with pytest.raises(ValueError, match=r"must have shape \(B, 3\)"):
        lib.rnea.batch(Q[0], V, V)
    with pytest.raises(ValueError, match="3 states but q has 4"):
        lib.rnea.batch(Q, V[:3], V)
    with pytest.raises(TypeError, match="real numbers"):
        lib.rnea.batch(Q.astype(complex), V, V)
    with pytest.raises(ValueError, match="threads"):
        lib.rnea.batch(Q, V, V, threads=0)
    with pytest.raises(ValueError, match="C-contiguous"):
        lib.rnea.batch(Q, V, V, out=np.zeros((nv, 4)).T)
    Vn = V.copy()
    Vn[2, 0] = np.nan
    with pytest.raises(ValueError, match="state 2 has NaN"):
        lib.rnea.batch(Q, Vn, V)
    r = lib.rnea.batch(Q, Vn, V, nan="propagate", threads=2)
    assert np.isnan(r[2]).all() and np.isfinite(np.delete(r, 2, axis=0)).all()
    # non-contiguous batch inputs are copied, not rejected
    Qs = np.zeros((nq, 4)).T
    np.testing.assert_array_equal(lib.rnea.batch(Qs, V, V), lib.rnea.batch(Q, V, V))


def test_bad_build_arguments(cache_dir):
    m = _model()
    with pytest.raises(ValueError, match="unknown algorithm 'rnae'"):
        build(m, ["rnae"], cache_dir=cache_dir)
    with pytest.raises(TypeError, match="accepted by none"):
        build(m, ["rnea"], cache_dir=cache_dir, factorisation="simple")
    with pytest.raises(ValueError, match="unknown opt"):
        build(m, ["rnea"], cache_dir=cache_dir, opt="-O9")
    with pytest.raises(ValueError, match="listed twice"):
        build(m, "rnea,rnea", cache_dir=cache_dir)
    with pytest.raises(TypeError, match="Model"):
        build("serial:2", ["rnea"], cache_dir=cache_dir)


# --- casadi_function ---------------------------------------------------------------------------------

def test_casadi_function_named_and_savable(tmp_path):
    model, rng = _model(), np.random.default_rng(8)
    st = _state(model, rng)
    f = casadi_function(model, "rnea")
    assert f.name_in() == ["q", "qd", "qdd"] and f.name_out() == ["tau"]
    f.save(str(tmp_path / "rnea.casadi"))
    g = ca.Function.load(str(tmp_path / "rnea.casadi"))
    _close(np.array(g(q=st["q"], qd=st["qd"], qdd=st["qdd"])["tau"]).ravel(),
           _reference(model, "rnea", st)[0])
    if "christoffel" in ALGS:
        G = casadi_function(model, "christoffel")
        nv = model.nv
        assert G.size_out(0) == (nv, nv * nv)
        Gnat = np.array(G(st["q"]))
        ref = _reference(model, "christoffel", st)[0]
        for k in range(nv):
            _close(Gnat[:, k * nv:(k + 1) * nv], ref[:, :, k])
    if "coriolis_matrix" in ALGS:
        C = casadi_function(model, "coriolis_matrix", factorization="simple")
        assert C.name_out() == ["M", "Mdot", "C"]
        with pytest.raises(TypeError, match="unknown option"):
            casadi_function(model, "coriolis_matrix", factorisation="simple")
    with pytest.raises(ValueError, match="unknown algorithm"):
        casadi_function(model, "nope")
    with pytest.raises(ValueError, match="layout"):
        casadi_function(model, "rnea", layout="fortran")


# --- cache -------------------------------------------------------------------------------------------

def _tiny(name="tiny"):
    return random_tree(2, seed=11, name=name)


def test_cache_hit_and_corrupted_library_rebuilt(tmp_path):
    m = _tiny()
    q, v = np.array([0.3, -0.2]), np.array([0.5, 1.0])
    a = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path)
    ref = a.rnea(q, v, v)
    b = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path)
    assert not a.cache_hit and b.cache_hit and b.library == a.library
    # the same model under another name object is still a hit; other flags are not
    assert build(random_tree(2, seed=11, name="tiny"), "rnea", opt="-O0",
                 cache_dir=tmp_path).cache_hit
    # corrupt the library (new inode: the copy mapped in this process stays valid)
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF garbage" * 50)
    os.replace(junk, a.library)
    msgs = []
    c = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=msgs.append)
    assert not c.cache_hit and c.library != a.library
    assert any("invalid" in s and "checksum" in s for s in msgs)
    np.testing.assert_array_equal(c.rnea(q, v, v), ref)
    # a truncated manifest is detected too
    (c.path / cg_cache.MANIFEST).write_text("{")
    d = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert not d.cache_hit
    np.testing.assert_array_equal(d.rnea(q, v, v), ref)
    entries = [p for p in tmp_path.iterdir() if p.is_dir() and p.name not in ("locks",)]
    assert len(entries) == 1


def test_concurrent_builders(tmp_path):
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        from symdyn.codegen import build
        from symdyn.models import random_tree
        m = random_tree(2, seed=13, name="race")
        lib = build(m, ["rnea", "crba"], opt="-O0", cache_dir={str(tmp_path)!r}, progress=False)
        tau = lib.rnea(np.array([0.1, 0.2]), np.array([0.3, 0.4]), np.array([0.5, 0.6]))
        print(json.dumps({{"hit": lib.cache_hit, "tau": tau.tolist()}}))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["tau"] == results[1]["tau"]
    assert sorted(r["hit"] for r in results) == [False, True]
    entries = [p for p in tmp_path.iterdir() if p.is_dir() and p.name != "locks"]
    assert len(entries) == 1 and cg_cache.verify(entries[0])[0] is not None


def test_publish_race_keeps_the_winner(tmp_path):
    entry, tmp = tmp_path / "entry", tmp_path / "tmp-x"
    entry.mkdir()
    (entry / "a").write_text("winner")
    tmp.mkdir()
    (tmp / "a").write_text("loser")
    assert cg_cache.publish(tmp, entry) is False
    assert not tmp.exists() and (entry / "a").read_text() == "winner"


def test_fingerprint_is_content_not_name():
    assert cg_cache.model_fingerprint(_tiny("a")) == cg_cache.model_fingerprint(_tiny("b"))
    assert cg_cache.model_fingerprint(_tiny()) != cg_cache.model_fingerprint(
        random_tree(2, seed=12))


# --- names -------------------------------------------------------------------------------------------

def test_c_identifier():
    ident = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
    for raw in ["my robot-v2.0 (ü)", "3D arm!", "int", "", "___", "casadi_f0", "a" * 200, "ü"]:
        assert ident.match(c_identifier(raw)), raw
    assert c_identifier("int") == "m_int" and c_identifier("3D arm!") == "m3D_arm"
    assert c_identifier("a" * 100 + "x") != c_identifier("a" * 100 + "y")
    assert len(c_identifier("a" * 200)) <= 48


def test_illegal_model_name_builds(tmp_path):
    m = random_tree(2, seed=11, name="my robot-v2.0 (ü)/../x;rm")
    lib = build(m, ["crba"], opt="-O0", cache_dir=tmp_path, progress=False)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", lib.prefix)
    _close(lib.crba([0.1, 0.2]), _reference(m, "crba", {"q": np.array([0.1, 0.2])})[0])
    lib2 = build(m, ["crba"], name="3D arm!", opt="-O0", cache_dir=tmp_path, progress=False)
    assert lib2.prefix == "m3D_arm"


# --- CLI and the Python-free example -------------------------------------------------------------------

def test_cli_export_compiles_without_python(tmp_path):
    from symdyn.cli import main
    from symdyn.io.specs import from_spec

    out = tmp_path / "export"
    algs = [a for a in ("rnea", "crba", "christoffel", "coriolis_matrix") if a in ALGS]
    rc = main(["codegen", "serial:2", "--algorithms", ",".join(algs), "--out", str(out),
               "--name", "arm 2!", "--compile", "--opt", "O0", "--quiet"])
    assert rc == 0
    manifest = json.loads((out / "symdyn_build.json").read_text())
    assert manifest["prefix"] == "arm_2"
    # compile the exported sources with the C compiler alone and run the example
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    srcs = sorted(p.name for p in out.glob("*.c") if p.name != "main.c")
    subprocess.run([cc, "-O0", "-o", "standalone", "main.c", *srcs, "-lm", "-lpthread"],
                   cwd=out, check=True, capture_output=True)
    text = subprocess.run([str(out / "standalone")], check=True, capture_output=True,
                          text=True).stdout
    got: dict = {}
    for line in text.splitlines():
        alg, name, idx, val = line.split()
        got.setdefault((alg, name), {})[int(idx)] = float(val)
    model = from_spec("serial:2")
    st = {k: np.array(v) for k, v in manifest["example_inputs"].items()}
    for alg in algs:
        for name, ref in zip(ALGORITHMS[alg].output_names, _reference(model, alg, st)):
            vals = got[(alg, name)]
            _close(np.array([vals[i] for i in range(ref.size)]).reshape(ref.shape), ref)
    # the --compile library loads from Python (unrelated files in DIR do not matter), and the
    # linked example runs
    (out / "notes.txt").write_text("user file")
    lib = load(out)
    _close(lib.rnea(st["q"], st["qd"], st["qdd"]), _reference(model, "rnea", st)[0])
    assert subprocess.run([str(out / "example")], capture_output=True).returncode == 0


def test_cli_bad_arguments(tmp_path, capsys):
    from symdyn.cli import main

    assert main(["codegen", "serial:2", "--algorithms", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown algorithm" in capsys.readouterr().err
    assert main(["codegen", "serial:2", "--out", str(tmp_path), "--opt", "O7"]) == 2


def test_cache_key_follows_symdyn_sources(tmp_path, monkeypatch):
    """An edited algorithm (same version string) must not reuse a library built from old code."""
    import importlib

    cg_build = importlib.import_module("symdyn.codegen.generate")  # holds the source digest
    m = _tiny()
    a = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path)
    assert build(m, ["rnea"], opt="-O0", cache_dir=tmp_path).cache_hit
    monkeypatch.setattr(cg_build, "_SOURCE_DIGEST", ["edited-sources"])
    b = build(m, ["rnea"], opt="-O0", cache_dir=tmp_path)
    assert not b.cache_hit and b.path != a.path


# --- branch-free sin/cos (symdyn.codegen.trig) -----------------------------------------------------

def test_fast_trig_matches_libm(tmp_path):
    """The inline sin/cos agree with libm to ~1 ulp over joint-angle ranges, near multiples of
    pi/2 (the reduction's worst case), tiny and large arguments; inf/NaN give NaN."""
    import ctypes

    from symdyn.codegen.trig import PRELUDE

    src = tmp_path / "trig.c"
    src.write_text("#include <math.h>\n" + PRELUDE + textwrap.dedent("""
        void eval(const double* x, double* s, double* c, long n) {
          for (long i = 0; i < n; ++i) { s[i] = symdyn_sin(x[i]); c[i] = symdyn_cos(x[i]); }
        }"""))
    so = tmp_path / "libtrig.so"
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(src), "-o", str(so), "-lm"], check=True)
    fn = ctypes.CDLL(str(so)).eval
    rng = np.random.default_rng(0)
    k = np.arange(-4000, 4000)
    x = np.concatenate([rng.uniform(-7, 7, 20000), rng.uniform(-1e5, 1e5, 20000),
                        k * (np.pi / 2) + rng.uniform(-1e-9, 1e-9, k.size), k * (np.pi / 2),
                        rng.uniform(-1e-6, 1e-6, 1000), [0.0, -0.0, 1e5, -3e5, 1e300],
                        [np.inf, -np.inf, np.nan]])
    s, c = np.empty_like(x), np.empty_like(x)
    p = ctypes.c_void_p
    fn.argtypes = [p, p, p, ctypes.c_long]
    fn(x.ctypes.data, s.ctypes.data, c.ctypes.data, x.size)
    finite = np.isfinite(x)
    assert np.all(np.isnan(s[~finite])) and np.all(np.isnan(c[~finite]))
    np.testing.assert_allclose(s[finite], np.sin(x[finite]), rtol=0, atol=2.3e-16)
    np.testing.assert_allclose(c[finite], np.cos(x[finite]), rtol=0, atol=2.3e-16)
    assert s[x.size - 8] == 0.0 and s[x.size - 7] == 0.0               # sign of -0 not kept


def test_fast_trig_in_generated_code(tmp_path):
    m = _model()
    lib = build(m, ["rnea"], opt="-O1", cache=False, progress=False)
    assert lib.stats["functions"]["rnea"]["n_fast_trig"] > 0
    src = (lib.path / lib.manifest["functions"][0]["source"]).read_text()
    assert "symdyn_sin(" in src and "=sin(" not in src
    plain = build(m, ["rnea"], opt="-O1", fast_trig=False, cache=False, progress=False)
    assert "=sin(" in (plain.path / plain.manifest["functions"][0]["source"]).read_text()
    rng = np.random.default_rng(4)
    for _ in range(5):
        st = _state(m, rng)
        st["q"] = np.asarray(st["q"]) + rng.uniform(-50, 50, m.nq)     # several periods
        args = [st[n] for n in lib.rnea.input_names]
        _close(lib.rnea(*args), plain.rnea(*args))
        _close(lib.rnea(*args), _reference(m, "rnea", st)[0])


# --- numerically-zero rotation entries (URDF rpy of +-pi/2) ------------------------------------------

def _rpy_model():
    from symdyn.joints import Revolute
    from symdyn.model import Body, Model
    from symdyn.spatial import Transform
    from symdyn.io.urdf import rpy_to_rot

    rng = np.random.default_rng(0)
    rpys = [(0, 0, 0), (-np.pi / 2, 0, 0), (np.pi / 2, 0, np.pi / 2), (0.3, -np.pi / 2, 0)]
    bodies = []
    for i, rpy in enumerate(rpys):
        X = Transform(rpy_to_rot(*rpy).T, rng.uniform(-0.5, 0.5, 3))
        bodies.append(Body(f"l{i}", None if i == 0 else f"l{i - 1}", Revolute("z"), 1.0 + i,
                           rng.uniform(-0.1, 0.1, 3), np.diag([0.3, 0.2, 0.25]), X))
    return Model(bodies, name="rpy")


def test_exact_rotations_snaps_only_rounding_noise():
    from symdyn.codegen.functions import exact_rotations

    m = _rpy_model()
    assert any(np.any((np.abs(X.E) < 1e-15) & (X.E != 0)) for X in m.Xtree)   # the noise is there
    s = exact_rotations(m)
    assert s is not m and exact_rotations(s) is s
    for X, Y in zip(m.Xtree, s.Xtree):
        assert np.abs(X.E - Y.E).max() < 1e-15 and np.array_equal(X.r, Y.r)
        assert not np.any((np.abs(Y.E) < 1e-15) & (Y.E != 0))
        np.testing.assert_allclose(Y.E @ Y.E.T, np.eye(3), atol=1e-15)
    rng, nv = np.random.default_rng(1), m.nv
    sizes = {}
    for snap in (True, False):
        f = casadi_function(m, "coriolis_matrix", layout="numpy", snap_rotations=snap)
        sizes[snap] = f.n_instructions()
        for _ in range(3):
            q, qd = m.random_q(rng), rng.uniform(-2, 2, nv)
            out = f(q, qd)
            for got, ref in zip(out, _reference(m, "coriolis_matrix", {"q": q, "qd": qd})):
                _close(np.array(got).reshape(nv, nv), ref)
    assert sizes[True] < sizes[False]


def test_source_digest_covers_every_import_of_codegen():
    """CODEGEN_SOURCES must be closed under symdyn-internal imports (module-level and inside
    functions), else an edit to an imported module could reuse a stale cache entry."""
    import ast
    import importlib
    from pathlib import Path

    cg_build = importlib.import_module("symdyn.codegen.generate")
    root = Path(cg_build.__file__).resolve().parents[1]
    covered = set(cg_build.codegen_source_files())
    assert root / "algorithms" / "coriolis.py" in covered and root / "cli.py" not in covered
    assert root / "symbolic" / "__init__.py" not in covered

    def resolve(mod: str) -> list:
        base = root.joinpath(*mod.split(".")[1:])
        return [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()]

    for f in covered:
        pkg = ".".join(["symdyn", *f.relative_to(root).with_suffix("").parts[:-1]])
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    mod = ".".join(parts + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                if not mod.startswith("symdyn"):
                    continue
                # "from pkg import name": the module pkg.name if there is one, else pkg itself;
                # symdyn/__init__.py only re-exports (its __version__ is a key entry of its own)
                targets = [p for a in node.names
                           for p in (resolve(f"{mod}.{a.name}") or resolve(mod))]
                targets = [p for p in targets if p != root / "__init__.py"]
            elif isinstance(node, ast.Import):
                targets = [p for a in node.names if a.name.startswith("symdyn")
                           for p in resolve(a.name)]
            else:
                continue
            for t in targets:
                assert t in covered, f"{f.relative_to(root)} imports {t.relative_to(root)}"


# --- emission order (symdyn.codegen.emit_order) ----------------------------------------------------

def test_tree_sweep_order_and_remap():
    from symdyn.codegen.emit_order import output_orders, remap_output_writes, tree_sweep_order

    m = _floating()                      # floating base + spherical: multi-DoF blocks
    order = tree_sweep_order(m)
    assert sorted(order) == list(range(m.nv ** 2)) and order != sorted(order)
    j = m.N - 1                          # the first block is the last body's diagonal block
    a, b = m.v_idx[j]
    assert order[0] == a * m.nv + a
    assert output_orders(m, [(m.nv,), (m.nv, m.nv)]) == [None, order]
    src = "if (res[0]!=0) res[0][1]=a1;\nif (res[1]!=0) res[1][0]=a2;\nres[1][1]=a3;"
    out = remap_output_writes(src, [None, [1, 0]])
    assert "res[0][1]=a1" in out and "res[1][1]=a2" in out and "res[1][0]=a3" in out
    with pytest.raises(RuntimeError, match="each entry once"):
        remap_output_writes(src, [None, [1, 0, 2]])


def test_generated_code_writes_in_sweep_order(tmp_path):
    m = _floating()
    out = tmp_path / "src"
    from symdyn.codegen import generate_sources

    man = generate_sources(m, ["crba"], out, progress=False)
    text = (out / man["functions"][0]["source"]).read_text()
    ks = [int(k) for k in re.findall(r"res\[0\]\[(\d+)\]=", text)]
    assert sorted(ks) == list(range(m.nv ** 2)) and ks != sorted(ks)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_batch_streamed_equals_in_place(lib, threads):
    """> 8 MiB of outputs takes the scratch + non-temporal-store path; it must give the same
    numbers as small batches written in place (and NaN states stay NaN)."""
    model, rng = _model(), np.random.default_rng(9)
    f = lib["coriolis_matrix"]
    n = 8 * 1024 * 1024 // (3 * model.nv ** 2 * 8) + 100
    Q = np.array([model.random_q(rng) for _ in range(n)])
    V = rng.uniform(-2, 2, (n, model.nv))
    V[7, 0] = np.nan
    big = f.batch(Q, V, threads=threads, nan="propagate")
    for lo in range(0, n, 5000):
        small = f.batch(Q[lo:lo + 5000], V[lo:lo + 5000], nan="propagate")
        for b, s in zip(big, small):
            np.testing.assert_array_equal(b[lo:lo + 5000], s)
    assert np.isnan(big[0][7]).all() and not np.isnan(big[0][8]).any()


# --- result pool (single calls return output buffers no caller references) ------------------------

def test_results_are_never_overwritten_while_referenced(lib):
    model, rng = _model(), np.random.default_rng(10)
    f = lib["coriolis_matrix"]
    states = [_state(model, rng) for _ in range(6)]
    refs = [tuple(np.asarray(x) for x in _reference(model, "coriolis_matrix", s)) for s in states]
    kept = [f(s["q"], s["qd"]) for s in states]                 # more than the pool holds
    view = f(states[0]["q"], states[0]["qd"])[2][1:, :]       # a view keeps its buffer busy
    only_M = f(states[1]["q"], states[1]["qd"])[0]            # so does one array of a tuple
    for _ in range(4):
        f(states[2]["q"], states[2]["qd"])
        lib["crba"](states[3]["q"])
    for got, ref in zip(kept, refs):
        for g, r in zip(got, ref):
            _close(g, r)
    _close(view, refs[0][2][1:, :])
    _close(only_M, refs[1][0])
    assert len({id(k[0]) for k in kept}) == len(kept)


def test_ctypes_path_returns_fresh_results_and_propagates_nan(lib, monkeypatch):
    """With the fastcall extension off, calls go through ctypes: fresh result arrays (never
    buffers a later call writes into), NaN outputs on request, ``out=``."""
    from symdyn.codegen import CompiledFunction, fastcall, load

    monkeypatch.setattr(fastcall, "_state", {"module": None, "status": "off: test"})
    model, rng = _model(), np.random.default_rng(11)
    f = load(lib.path)["crba"]
    assert type(f) is CompiledFunction
    q, q2 = _state(model, rng)["q"], _state(model, rng)["q"]
    first = f(q)
    second = f(q2)
    assert not np.shares_memory(first, second)
    _close(first, _reference(model, "crba", {"q": q})[0])
    _close(second, _reference(model, "crba", {"q": q2})[0])
    bad = np.array(q, dtype=float)
    bad[0] = np.nan
    assert np.isnan(f(bad, nan="propagate")).all()
    with pytest.raises(ValueError, match="NaN"):
        f(bad)
    out = np.empty((model.nv, model.nv))
    assert f(q, out=out) is out
    _close(out, _reference(model, "crba", {"q": q})[0])


def test_frame_auto_keeps_the_smaller_graph(cache_dir):
    """coriolis_matrix codegen traces the body and root frames and keeps the smaller graph:
    root on random geometry, body on axis-aligned chains; an explicit frame is respected."""
    from symdyn.io.specs import from_spec
    from symdyn.models import serial_chain

    rand, aligned = serial_chain(8, seed=1), from_spec("serial:5")
    sizes = {}
    for model in (rand, aligned):
        for frame in ("body", "root", "auto"):
            info: dict = {}
            casadi_function(model, "coriolis_matrix", info=info, frame=frame)
            sizes[model.name, frame] = (info["trace"].n_instructions, info.get("frame"))
    assert sizes["serial8", "auto"] == (sizes["serial8", "root"][0], "root")
    assert sizes["serial8", "root"][0] < sizes["serial8", "body"][0]
    assert sizes["serial5", "auto"] == (sizes["serial5", "body"][0], "body")
    assert sizes["serial5", "body"][0] < sizes["serial5", "root"][0]
    assert sizes["serial8", "body"][1] is None            # explicit frame: traced as given
    lib = build(rand, ["coriolis_matrix"], opt="-O1", cache_dir=cache_dir, progress=False)
    assert lib.manifest["functions"][0]["frame"] == "root"
    rng = np.random.default_rng(4)
    for _ in range(3):
        st = _state(rand, rng)
        for got, ref in zip(lib.coriolis_matrix(st["q"], st["qd"]),
                            _reference(rand, "coriolis_matrix", st)):
            _close(got, ref)
