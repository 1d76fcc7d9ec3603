"""Vector batches (symdyn.codegen.simd): W states per instruction in both compiled forms, chosen
at run time by CPU features, equal to the scalar loop to rounding, with the scalar loop's NaN,
quaternion and thread behaviour; the extension's fast path for small batches."""
from __future__ import annotations

import ctypes
import importlib
import os
import subprocess
import sys
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

from symdyn.codegen import build, compiler_info
from symdyn.codegen import simd
from symdyn.models import random_tree
from conftest import requires_cc

pytestmark = requires_cc


def _host() -> tuple[str, ...]:
    return simd.host_targets(compiler_info()[0])


needs_vectors = pytest.mark.skipif(not _host(), reason="this CPU runs none of simd.TARGETS")


def _model():
    # floating base and a spherical joint (two quaternions), revolute and prismatic joints
    return random_tree(5, seed=21, joint_kinds=("revolute", "spherical", "prismatic"),
                       floating_base=True, name="simdfloat")


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    return {"q": np.array([model.random_q(rng) for _ in range(n)]),
            "qd": rng.uniform(-2, 2, (n, model.nv)), "qdd": rng.uniform(-2, 2, (n, model.nv)),
            "tau": rng.uniform(-2, 2, (n, model.nv))}


ALGS = ["rnea", "crba", "aba", "christoffel"]


@pytest.fixture(scope="module", params=[(form, t) for form in ("unrolled", "recursive")
                                        for t in simd.TARGETS])
def lib(request, tmp_path_factory):
    """Each form with each vector target (one at a time, so that every target is exercised
    on every algorithm; simd="auto" would give each function one of them)."""
    form, target = request.param
    if target not in _host():
        pytest.skip(f"this CPU does not run {target}")
    return build(_model(), ALGS, form=form, opt="-O1", progress=False, simd=(target,),
                 cache_dir=tmp_path_factory.mktemp("symdyn-simd"))


def _args(f, states):
    return [states[n] for n in f.input_names]


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


@needs_vectors
@pytest.mark.parametrize("alg", ALGS)
def test_vector_batch_equals_the_scalar_loop(lib, alg):
    f = lib[alg]
    (target,) = f.meta["simd"]
    assert f.simd_width == simd.TARGETS[target][0]
    for n in (1, 3, f.simd_width, 2 * f.simd_width + 1, 37):
        args = _args(f, _states(_model(), n, seed=n))
        vec, sca = _tuple(f.batch(*args)), _tuple(f.batch(*args, simd=False))
        for v, s in zip(vec, sca, strict=True):
            np.testing.assert_allclose(v, s, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(s).max()))
        single = _tuple(f(*[a[-1] for a in args]))
        for v, s in zip(vec, single, strict=True):
            np.testing.assert_allclose(v[-1], s, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(s).max()))


@needs_vectors
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("alg", ["crba", "christoffel"])
@pytest.mark.parametrize("entry, bad", [(0, np.nan), (-1, np.inf)])
def test_vector_batch_modes_and_bad_states(lib, alg, threads, stream, entry, bad):
    """crba's M (196 entries) is transposed whole; christoffel's Gamma (2744 entries) is
    streamed in pieces, a line writer per state. The bad entry lies in the inputs' register
    transposes (entry 0) or in the entries past the last group of four (nq = 17: entry 16)."""
    f = lib[alg]
    n = 4 * f.simd_width + 3
    Q = _states(_model(), n, seed=5)["q"]
    ref = f.batch(Q, simd=False, threads=1)
    Q[6, entry] = bad          # one state with NaN or inf: NaN outputs there only
    out = f.batch(Q, threads=threads, stream=stream, nan="propagate")
    assert np.isnan(out[6]).all()
    keep = np.arange(n) != 6
    np.testing.assert_allclose(out[keep], ref[keep], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="state 6 has NaN"):
        f.batch(Q, threads=threads, stream=stream)
    Q[6] = _states(_model(), n, seed=5)["q"][6]
    off = [o for o, _ in f.quaternions][0]
    Q[n - 2, off:off + 4] *= 1.5   # not a unit quaternion, in the last (short) block
    with pytest.raises(ValueError, match=f"state {n - 2}"):
        f.batch(Q, threads=threads, stream=stream)


@needs_vectors
@pytest.mark.parametrize("entry", [0, 9, 13])
def test_bad_entry_in_every_pack_path(lib, entry):
    """qd has nv = 14 entries: with W = 8 entry 0 is packed by the 8 x 8 transpose, 9 by the
    group of four after it and 13 one entry at a time; with W = 4, 0 and 9 by 4 x 4
    transposes. A NaN in any of them marks its state, and only it."""
    f = lib["rnea"]
    n = 3 * f.simd_width
    states = _states(_model(), n, seed=7)
    ref = f.batch(*_args(f, states), simd=False)
    for state in (0, f.simd_width + 3, n - 1):
        bad = {k: v.copy() for k, v in states.items()}
        bad["qd"][state, entry] = np.nan
        out = f.batch(*_args(f, bad), nan="propagate")
        assert np.isnan(out[state]).all()
        keep = np.arange(n) != state
        np.testing.assert_allclose(out[keep], ref[keep], rtol=1e-12, atol=1e-12)


def test_without_vector_variants_the_batch_is_scalar(tmp_path):
    lib = build(_model(), ["rnea"], simd=(), opt="-O1", progress=False, cache_dir=tmp_path)
    f = lib.rnea
    assert f.simd_width == 1 and f.meta["simd"] == []
    args = _args(f, _states(_model(), 9, seed=2))
    np.testing.assert_array_equal(f.batch(*args), f.batch(*args, simd=False))


@needs_vectors
def test_the_widest_variant_the_cpu_runs_is_chosen(tmp_path):
    """A library with every target: the batch takes the widest this CPU reports (the others
    are compiled, never run here)."""
    lib = build(_model(), ["rnea"], simd=tuple(simd.TARGETS), opt="-O1", progress=False,
                cache_dir=tmp_path)
    f = lib.rnea
    assert f.meta["simd"] == list(simd.TARGETS)
    assert f.simd_width == simd.TARGETS[_host()[0]][0]
    args = _args(f, _states(_model(), 11, seed=4))
    np.testing.assert_allclose(f.batch(*args), f.batch(*args, simd=False), rtol=1e-12, atol=1e-12)


def test_auto_target_narrows_for_output_heavy_functions():
    """simd="auto": the widest host target, AVX2 from AUTO_NARROW_OUT_BYTES a state and
    AUTO_NARROW_OUT_PER_OP entries per operation on."""
    n = simd.AUTO_NARROW_OUT_BYTES // 8
    work = int(n / simd.AUTO_NARROW_OUT_PER_OP)           # n entries are just enough per op
    both = ("avx512", "avx2")
    assert simd.auto_target(both, n - 1, 0) == ("avx512",)          # too few bytes
    assert simd.auto_target(both, n, work) == ("avx2",)
    assert simd.auto_target(both, n, 2 * work) == ("avx512",)       # much arithmetic per entry
    assert simd.auto_target(("avx2",), 10 * n, 0) == ("avx2",)
    assert simd.auto_target(("avx512",), 10 * n, 0) == ("avx512",)
    assert simd.auto_target((), 1, 0) == ()


@needs_vectors
def test_auto_builds_one_variant_per_function_by_its_output_size(tmp_path):
    """rnea writes nv doubles a state, christoffel nv^3: with both targets on the host they get
    different variants, each equal to the scalar loop."""
    host = _host()
    m = _model()
    lib = build(m, ["rnea", "christoffel"], opt="-O1", progress=False, cache_dir=tmp_path)
    assert 8 * m.nv ** 3 >= simd.AUTO_NARROW_OUT_BYTES > 8 * m.nv
    assert lib.rnea.meta["simd"] == [host[0]]
    assert lib.christoffel.stats["work"] * simd.AUTO_NARROW_OUT_PER_OP <= m.nv ** 3
    want = ["avx2"] if "avx2" in host else [host[0]]
    assert lib.christoffel.meta["simd"] == want
    assert lib.christoffel.simd_width == simd.TARGETS[want[0]][0]
    st = _states(m, 13, seed=5)
    for f in (lib.rnea, lib.christoffel):
        args = _args(f, st)
        np.testing.assert_allclose(_tuple(f.batch(*args))[0], _tuple(f.batch(*args, simd=False))[0],
                                   rtol=1e-12, atol=1e-12)


def test_simd_option_is_checked():
    assert simd.check_simd("auto") == "auto"
    assert simd.check_simd(()) == () and simd.check_simd(None) == ()
    assert simd.check_simd(["avx2", "avx2"]) == ("avx2",)
    with pytest.raises(ValueError, match="unknown simd target 'sse9'"):
        simd.check_simd(("sse9",))
    with pytest.raises(TypeError, match="simd must be"):
        simd.check_simd(3)
    with pytest.raises(ValueError, match="unknown simd target"):
        build(_model(), ["rnea"], simd="neon9", progress=False)


def test_every_operation_has_its_vector_form(tmp_path):
    """Each SX operation the generator knows, on lanes that exercise its edge cases (libm's
    range for sin/cos, NaN, zero), against CasADi's own evaluation lane by lane."""
    host = _host()
    if not host:
        pytest.skip("this CPU runs none of simd.TARGETS")
    t = host[0]
    W = simd.TARGETS[t][0]
    x, y = ca.SX.sym("x", 3), ca.SX.sym("y", 2)
    exprs = [x[0] * y[1] + 2.5, x[0] - y[0], x[1] / y[0], -x[1], 2 * x[2], x[0] ** 2, 1 / y[1],
             ca.sin(x[2]), ca.cos(x[2]), ca.sqrt(ca.fabs(x[0])), ca.fabs(x[1]),
             ca.if_else(x[0] < y[0], x[1], 0.0), x[0] <= y[1], x[0] == y[0], x[0] != y[0],
             ca.logic_and(x[0] > 0, x[1] > 0), ca.logic_or(x[0] > 0, x[1] > 0),
             ca.logic_not(x[1] > 0), ca.exp(y[0]), ca.log(ca.fabs(y[1]) + 1), ca.tan(x[0]),
             ca.atan2(x[0], x[1]), ca.fmin(x[0], x[1]), ca.fmax(x[0], x[1]), ca.sign(x[1]),
             ca.fabs(y[0]) ** 1.5, ca.atan(x[0]), ca.tanh(x[1]), ca.floor(x[0]), ca.ceil(x[1])]
    f = ca.Function("opsf", [x, y], [ca.vertcat(*exprs)])
    src = "#include <math.h>\n" + simd.function_source(f, "opsf", [t])
    (tmp_path / "ops.c").write_text(src)
    lib_path = tmp_path / "libops.so"
    subprocess.run([compiler_info()[0], "-O2", "-shared", "-fPIC", "-o", str(lib_path),
                    str(tmp_path / "ops.c"), "-lm"], check=True, capture_output=True)
    c = ctypes.CDLL(str(lib_path))
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (W, 3))
    Y = rng.uniform(-2, 2, (W, 2))
    X[0, 2] = 3e5            # sin/cos through libm on this lane
    X[1, 0] = 0.0
    X[W - 1, 2] = np.nan     # NaN stays in its lane

    def aligned(n):
        raw = np.zeros(n + 8)
        off = (-raw.ctypes.data % 64) // 8
        return raw[off:off + n]

    xb, yb, rb = aligned(3 * W), aligned(2 * W), aligned(len(exprs) * W)
    xb[:] = X.T.reshape(-1)
    yb[:] = Y.T.reshape(-1)
    arg = (ctypes.c_void_p * 2)(xb.ctypes.data, yb.ctypes.data)
    res = (ctypes.c_void_p * 1)(rb.ctypes.data)
    c[f"opsf_{t}"](arg, res, None)
    got = rb.reshape(len(exprs), W).T
    for lane in range(W):
        want = np.array(f(X[lane], Y[lane])).reshape(-1)
        np.testing.assert_allclose(got[lane], want, rtol=1e-14, atol=1e-15, equal_nan=True,
                                   err_msg=f"lane {lane}")


def test_unsupported_operation_is_reported():
    x = ca.SX.sym("x")
    f = ca.Function("g", [x], [ca.erfinv(x)])
    with pytest.raises(simd.Unsupported, match="erfinv"):
        simd.statements(f, "avx2")


def test_small_batches_run_in_the_extension(lib):
    """Exact-array calls are handled by the fastcall extension, out= arrays and plain keyword
    values included; they equal the Python path (``CompiledFunction.batch``) and fall back to
    it for its conversions and errors."""
    from symdyn.codegen import fastcall
    from symdyn.codegen.loader import CompiledFunction

    on = fastcall.status() == "on"
    f = lib["rnea"].copy()
    calls = []
    real = f._batch

    def spy(*a):               # the ctypes entry point of the Python path
        calls.append(a[2])
        return real(*a)

    f._batch = spy
    args = _args(f, _states(_model(), 5, seed=7))
    want = CompiledFunction.batch(f, *args)
    assert calls == [5]
    calls.clear()
    np.testing.assert_array_equal(f.batch(*args), want)
    out = np.full_like(want, np.nan)
    for kw in ({"out": out}, {"out": out, "threads": 1, "simd": False, "stream": True},
               {"out": out, "threads": 2, "nan": "propagate", "stream": None},
               {"threads": None, "simd": True, "nan": "raise", "out": None}):
        out[:] = np.nan
        got = f.batch(*args, **kw)
        assert (got is out) == (kw["out"] is not None), kw
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert calls == ([] if on else [5] * 4)
    # the Python path's conversions: NumPy scalars as keyword values, other dtypes
    calls.clear()
    np.testing.assert_allclose(f.batch(*args, threads=np.int64(1), simd=np.True_), want,
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(f.batch(*[a.astype(np.float32) for a in args]),
                               CompiledFunction.batch(f, *[a.astype(np.float32) for a in args]))
    assert len(calls) == 3
    # and its errors, named
    with pytest.raises(ValueError, match="must have shape"):
        f.batch(*args, out=np.empty((4, f.output_shapes[0][0])))
    with pytest.raises(ValueError, match="must be C-contiguous"):
        f.batch(*args, out=np.empty((f.output_shapes[0][0], 5)).T)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.empty_like(want)
        ro.flags.writeable = False
        f.batch(*args, out=ro)
    with pytest.raises(ValueError, match="threads must be"):
        f.batch(*args, threads=0)
    with pytest.raises(ValueError, match="nan must be"):
        f.batch(*args, nan="ignore")
    with pytest.raises(TypeError, match="unexpected keyword"):
        f.batch(*args, outs=out)
    args[1][2, 0] = np.inf
    with pytest.raises(ValueError, match="state 2 has NaN or inf"):
        f.batch(*args, out=out)
    got = f.batch(*args, out=out, nan="propagate")
    assert np.isnan(got[2]).all() and np.isfinite(np.delete(got, 2, axis=0)).all()
    np.testing.assert_array_equal(np.delete(got, 2, axis=0), np.delete(want, 2, axis=0))


_DIRTY_CHECK = """
import sys
import numpy as np
from symdyn.codegen import build
from symdyn.models import random_tree
model = random_tree(12, seed=2)
lib = build(model, ["rnea_derivatives"], form=sys.argv[3], opt="-O1", cache_dir=sys.argv[1],
            progress=False, simd=(sys.argv[2],))
f = lib["rnea_derivatives"]
rng = np.random.default_rng(3)
n = 4 * f.simd_width + 1
args = (np.stack([model.random_q(rng) for _ in range(n)]), rng.uniform(-1, 1, (n, model.nv)),
        rng.uniform(-1, 1, (n, model.nv)))
want = f.batch(*args, simd=False, threads=1)
args[1][1] = np.nan                 # a NaN state: NaN rows in the output, not in the blocks
for stream in (False, True, False):
    got = f.batch(*args, simd=True, threads=1, stream=stream, nan="propagate")
    for g, w in zip(got, want):
        assert np.isnan(g[1]).all()
        np.testing.assert_allclose(np.delete(g, 1, 0), np.delete(w, 1, 0), atol=1e-10)
"""


@needs_vectors
# ids without "recursive", which conftest marks slow in this module: this build is small
@pytest.mark.parametrize("form", ["recursive", "unrolled"], ids=["zeros-skipped", "all-written"])
def test_vector_outputs_are_whole_from_dirty_blocks(tmp_path, form):
    """The recursive form's vector kernels leave the outputs' structural zeros (entries off the
    tree's sparsity: most of random_tree(12)'s derivatives) unwritten and the wrapper zeroes
    their output blocks once per thread; the unrolled form's write every entry and get no
    zeroing. Either way the outputs are whole where malloc hands back dirty memory (glibc's
    MALLOC_PERTURB_ fills it; in a subprocess, where that takes effect)."""
    env = dict(os.environ, MALLOC_PERTURB_="165")
    run = subprocess.run([sys.executable, "-c", _DIRTY_CHECK, str(tmp_path), _host()[0], form],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]


@needs_vectors
@pytest.mark.parametrize("straight", [True, False], ids=["straight-line", "table"])
def test_programs_as_straight_line_or_table(tmp_path, monkeypatch, straight):
    """Programs of up to STRAIGHT_MAX_CALLS step calls are straight-line C, longer ones a table
    and its loop. Both, in the scalar and the vector entry, with signed gathers and native
    products (aba_second_derivatives of a 7-link chain), equal NumPy."""
    import symdyn as sd
    from symdyn.codegen.recursive import csource
    from symdyn.models import serial_chain

    monkeypatch.setattr(csource, "STRAIGHT_MAX_CALLS", 10 ** 9 if straight else 0)
    model = serial_chain(7, seed=3)
    lib = build(model, ["aba_second_derivatives"], form="recursive", cache_dir=tmp_path,
                opt="-O1", simd=_host()[:1], progress=False)
    f = lib["aba_second_derivatives"]
    assert f.meta["recursive"]["straight"] is straight and f.simd_width > 1
    source = next(tmp_path.rglob(f"{f.meta['fname']}.c")).read_text()
    table = f"symdyn_{csource.kernel_prefix(f.meta['fname'])}_prog"   # the table's C name
    assert (table in source) is not straight
    rng = np.random.default_rng(4)
    Q = np.array([model.random_q(rng) for _ in range(11)])
    V, T = rng.uniform(-1, 1, (2, 11, model.nv))
    for batch in (f.batch(Q, V, T, simd=True), f.batch(Q, V, T, simd=False)):
        for b in (0, 7, 10):
            for o, r in zip(batch, sd.aba_second_derivatives(model, Q[b], V[b], T[b]),
                            strict=True):
                np.testing.assert_allclose(o[b], r, rtol=1e-12, atol=1e-10)


def _experiment(name: str):
    """experiments/<name>.py, imported without the BLAS/OpenMP thread pins its helpers set
    in the environment (``threads=None`` follows ``$OMP_NUM_THREADS``)."""
    saved, path = dict(os.environ), str(Path(__file__).resolve().parents[1] / "experiments")
    sys.path.insert(0, path)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(path)
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def simd_batch():
    return _experiment("simd_batch")


@needs_vectors
@pytest.mark.parametrize("alg", ALGS)
def test_exported_kernel_and_unpack_give_the_batch(lib, alg, simd_batch):
    """The parts simd_batch.py times alone: the library's exported vector kernel
    ``<symbol>_<target>`` on a state-minor block of W states, and the unpack of its outputs,
    give what ``.batch`` gives for those states."""
    f = lib[alg]
    (target,) = f.meta["simd"]
    W = f.simd_width
    args = _args(f, _states(_model(), W, seed=4))
    parts = simd_batch.Parts.of(lib, f, target, args, W)
    assert parts is not None and parts.states == W
    parts.kernel()
    want = [np.asarray(x).reshape(W, -1) for x in _tuple(f.batch(*args))]
    for blk, x in zip(parts.blocks, want, strict=True):
        np.testing.assert_allclose(blk.reshape(-1, W).T, x, rtol=1e-12, atol=1e-12)
    parts.transpose()
    n = parts.sizes[-1] % simd_batch.VPIECE or min(parts.sizes[-1], simd_batch.VPIECE)
    np.testing.assert_allclose(parts.rows[:W * n].reshape(W, n), want[-1][:, -n:],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.skipif("avx512" not in _host(), reason="this CPU does not run avx512")
@pytest.mark.parametrize("alg", ["coriolis_matrix", "rnea_derivatives"])
def test_write_out_variants_of_simd_writeout_give_the_batch(alg):
    """experiments/simd_writeout.py's write-outs (the batch's, transposes fused into the kernel,
    stores pipelined into the next block's kernel, states-last, states-last through a tile and
    blocked outputs) give the library batch's outputs, on outputs whose sizes are not multiples
    of W (masked tail tiles), several outputs and a batch that ends in a partial tile."""
    simd_writeout = _experiment("simd_writeout")
    model = random_tree(5, seed=3, name="writeout5")
    wo = simd_writeout.Writeouts(model, alg, np.random.default_rng(2), n=88)
    assert wo.function is not None and any(k % 8 for k in wo.nout) and len(wo.nout) > 1
    assert set(wo.run) == set(simd_writeout.VARIANTS) and wo.n % simd_writeout.TILE
    assert wo.error(wo.function.batch(*wo.inputs, threads=1)) < 1e-12
    wrong = [x.copy() for x in wo.inputs]
    wrong[0][5] += 0.1          # the check sees a changed state
    assert wo.error(wo.function.batch(*wrong, threads=1)) > 1e-6
