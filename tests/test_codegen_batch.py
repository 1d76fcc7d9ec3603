"""Compiled batches (symdyn.codegen csource/loader): outputs streamed in whole cache lines or written
in place, chunked threads, the automatic choices, and the C fallbacks without threads or SSE.

Every mode must give exactly the numbers of single calls (same C function, same inputs), agree
with NumPy, give NaN outputs for NaN states and report the first bad state, whatever the
threads, chunking and alignment of the output arrays.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import BuildError, build
from symdyn.codegen import loader as cg_loader
from symdyn.codegen.loader import CompiledFunction
from symdyn.models import random_tree
from conftest import requires_cc


pytestmark = requires_cc

ALGS = ["rnea", "crba", "coriolis_matrix"]
MODES = [(s, t) for s in (True, False, None) for t in (1, 2, 3, None)]


def _fmodel():
    # floating base + a spherical joint: two quaternions in q; nv = 12, rnea's tau is 96 bytes
    # (states share cache lines), crba's M 1152 bytes (a state starts mid-line)
    return random_tree(4, seed=11, joint_kinds=("revolute", "spherical"), floating_base=True,
                       name="batchfloat")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("symdyn-cache-batch")


@pytest.fixture(scope="module")
def lib(cache_dir):
    return build(_fmodel(), ALGS, opt="-O1", cache_dir=cache_dir, progress=False)


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    return {"q": np.array([model.random_q(rng) for _ in range(n)]),
            "qd": rng.uniform(-2, 2, (n, model.nv)), "qdd": rng.uniform(-2, 2, (n, model.nv)),
            "tau": rng.uniform(-2, 2, (n, model.nv))}


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _loop(f, ins):
    """Single calls, stacked: the reference every batch mode must equal exactly."""
    rows = [_tuple(f(*[x[i] for x in ins])) for i in range(len(ins[0]))]
    return tuple(np.array([r[k] for r in rows]) for k in range(len(f.output_shapes)))


@pytest.mark.parametrize("stream,threads", MODES)
@pytest.mark.parametrize("alg", ALGS)
def test_batch_modes_equal_single_calls_and_numpy(lib, alg, stream, threads):
    model = _fmodel()
    f = lib[alg]
    st = _states(model, 157, seed=1)                 # not a multiple of any chunk or line
    ins = [st[n] for n in f.input_names]
    ref = _loop(f, ins)
    got = _tuple(f.batch(*ins, stream=stream, threads=threads))
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
    fn = getattr(sd, alg)
    for i in (0, 78, 156):
        num = _tuple(fn(model, *[x[i] for x in ins]))
        for g, r in zip(got, num):
            np.testing.assert_allclose(g[i], r, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("offset", [0, 1, 3, 7])
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_outputs_at_any_alignment(lib, offset, threads):
    """Output arrays starting anywhere in a cache line (views of a larger buffer): the line
    writer must neither write before nor after them."""
    model = _fmodel()
    f = lib["coriolis_matrix"]
    st = _states(model, 61, seed=2)
    ins = [st[n] for n in f.input_names]
    ref = _loop(f, ins)
    size = 61 * model.nv ** 2
    bufs = [np.full(size + 16, 7.0) for _ in range(3)]
    outs = tuple(b[offset:offset + size].reshape(61, model.nv, model.nv) for b in bufs)
    assert f.batch(*ins, out=outs, stream=True, threads=threads) is outs
    for o, r, b in zip(outs, ref, bufs):
        np.testing.assert_array_equal(o, r)
        assert (b[:offset] == 7.0).all() and (b[offset + size:] == 7.0).all()


@pytest.mark.parametrize("alg", ["rnea", "crba"])
def test_streamed_small_batches_every_size_and_offset(lib, alg):
    """Every way a batch's first and last states can sit in their cache lines: 1-17 states of
    96 bytes (rnea: states share lines) or 1152 bytes (crba), arrays starting at each of the 8
    doubles of a line, 1 and 3 threads."""
    model = _fmodel()
    f = lib[alg]
    st = _states(model, 17, seed=13)
    ins = [st[n] for n in f.input_names]
    ref = _loop(f, ins)[0]
    size = int(np.prod(f.output_shapes[0]))
    for n in range(1, 18):
        for offset in range(8):
            buf = np.full(17 * size + 24, 7.0)
            base = (-buf.ctypes.data // 8) % 8          # buf[base] starts a cache line
            out = buf[base + offset:base + offset + n * size].reshape(n, *f.output_shapes[0])
            for threads in (1, 3):
                out.fill(0.0)
                f.batch(*[x[:n] for x in ins], out=out, stream=True, threads=threads)
                np.testing.assert_array_equal(out, ref[:n])
            assert (buf[:base + offset] == 7.0).all()
            assert (buf[base + offset + n * size:] == 7.0).all()


def test_misaligned_output_array_gets_ordinary_stores(lib):
    """A float64 array not aligned to 8 bytes (a view of a byte buffer) cannot take aligned
    streaming stores: the writer falls back to ordinary stores."""
    model = _fmodel()
    f = lib["crba"]
    Q = _states(model, 33, seed=3)["q"]
    raw = bytearray(33 * model.nv ** 2 * 8 + 16)
    out = np.frombuffer(raw, dtype=np.float64, count=33 * model.nv ** 2,
                        offset=3).reshape(33, model.nv, model.nv)
    assert not out.flags.aligned and out.flags.writeable and out.flags.c_contiguous
    f.batch(Q, out=out, stream=True)
    np.testing.assert_array_equal(out, _loop(f, [Q])[0])


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_nan_states_in_every_mode(lib, stream, threads):
    model = _fmodel()
    f = lib["coriolis_matrix"]
    n = 300
    st = _states(model, n, seed=4)
    Q, V = st["q"], st["qd"]
    bad = [0, 5, 149, 150, 299]
    V[bad[1:], 2] = np.nan
    Q[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"state 0 has NaN or inf"):
        f.batch(Q, V, stream=stream, threads=threads)
    got = f.batch(Q, V, stream=stream, threads=threads, nan="propagate")
    ok = np.setdiff1d(np.arange(n), bad)
    good = _loop(f, [Q[ok], V[ok]])
    for g, r in zip(got, good):
        assert np.isnan(g[bad]).all()
        np.testing.assert_array_equal(g[ok], r)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("threads", [1, 3])
def test_first_non_unit_quaternion_state_reported(lib, stream, threads):
    model = _fmodel()
    f = lib["crba"]
    Q = _states(model, 200, seed=5)["q"]
    Q[[37, 150, 190], 3:7] *= 1.01
    with pytest.raises(ValueError, match=r"batch: state 37: input q\[3:7\]"):
        f.batch(Q, stream=stream, threads=threads)
    with pytest.raises(ValueError, match=r"batch: state 37: input q\[3:7\]"):
        f.batch(Q, stream=stream, threads=threads, nan="propagate")


def test_large_batch_auto_mode_is_chunked_and_streamed(lib):
    """> 1 MiB of outputs per thread: streamed, chunks taken by threads as they go; equal to the
    in-place writes of the same states."""
    model = _fmodel()
    f = lib["coriolis_matrix"]
    n = 4000                                     # 3 x 1152 bytes a state: 13.8 MB
    st = _states(model, n, seed=6)
    st["qd"][1234, 0] = np.nan
    ins = [st[n_] for n_ in f.input_names]
    a = f.batch(*ins, nan="propagate", threads=2)
    b = f.batch(*ins, nan="propagate", threads=1, stream=False)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert np.isnan(a[2][1234]).all() and not np.isnan(a[2][1235]).any()


def test_concurrent_streamed_batches_from_python_threads(lib):
    model = _fmodel()
    f = lib["crba"]
    Qs = [_states(model, 500, seed=10 + t)["q"] for t in range(4)]
    refs = [f.batch(Q, stream=False, threads=1).copy() for Q in Qs]
    errors = []

    def work(t):
        for _ in range(5):
            M = f.batch(Qs[t], stream=True, threads=2, out=np.empty((500, model.nv, model.nv)))
            if not np.array_equal(M, refs[t]):
                errors.append(t)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_many_small_threaded_batches(lib):
    """Batches that end before their helper threads start (the caller does not wait for those;
    they find no state left and free the shared work): results and reports stay right."""
    model = _fmodel()
    f = lib["crba"]
    st = _states(model, 40, seed=15)
    Q = st["q"]
    Q[17, 0] = np.nan
    ref = f.batch(Q, threads=1, nan="propagate")
    for n in list(range(1, 41)) * 5:
        got = f.batch(Q[:n], threads=4, stream=bool(n % 2), nan="propagate")
        np.testing.assert_array_equal(got, ref[:n])


def test_c_entry_points_agree(lib):
    """F_batch (the automatic rule) and F_batch_write(stream = 0 / 1) from C directly."""
    model = _fmodel()
    f = lib["crba"]
    Q = np.ascontiguousarray(_states(model, 40, seed=7)["q"])
    res = []
    for name, extra in ((f"{f.symbol}_batch", ()), (f"{f.symbol}_batch_write", (0,)),
                        (f"{f.symbol}_batch_write", (1,))):
        fn = getattr(ctypes.CDLL(str(lib.library)), name)
        fn.restype = ctypes.c_int
        out = np.empty((40, model.nv, model.nv))
        pin = (ctypes.c_void_p * 1)(Q.ctypes.data)
        pout = (ctypes.c_void_p * 1)(out.ctypes.data)
        bad = (ctypes.c_longlong * 2)(-1, -1)
        args = [pin, pout, ctypes.c_longlong(40), ctypes.c_int(2),
                *[ctypes.c_int(x) for x in extra], bad]
        assert fn(*args) == 0 and list(bad) == [-1, -1]
        res.append(out)
    for r in res[1:]:
        np.testing.assert_array_equal(r, res[0])
    np.testing.assert_array_equal(res[0], _loop(f, [Q])[0])


def test_fallbacks_without_atomics_or_sse(lib, cache_dir):
    """The portable paths of the wrapper (one thread without POSIX threads or GCC atomics; plain
    copies of whole lines without SSE2/AVX) give the same numbers."""
    model = _fmodel()
    try:
        plain = build(model, ["crba", "coriolis_matrix"], opt="-O1", native=False,
                      cflags=["-DSYMDYN_NO_THREADS", "-U__AVX__", "-U__SSE2__"],
                      cache_dir=cache_dir, progress=False)
    except BuildError as exc:  # pragma: no cover - a compiler that refuses -U of a builtin
        pytest.skip(f"compiler refused the flags: {exc}")
    st = _states(model, 157, seed=8)
    st["qd"][100, 1] = np.nan
    for alg in ("crba", "coriolis_matrix"):
        ins = [st[n] for n in lib[alg].input_names]
        for stream in (True, False):
            for threads in (1, 3):
                a = _tuple(plain[alg].batch(*ins, stream=stream, threads=threads,
                                            nan="propagate"))
                b = _tuple(lib[alg].batch(*ins, stream=not stream, threads=1, nan="propagate"))
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)


def test_option_validation(lib):
    model = _fmodel()
    Q = _states(model, 3, seed=9)["q"]
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be a positive integer or None"):
            lib.crba.batch(Q, threads=bad)
    for bad in (1, 0, "yes"):
        with pytest.raises(ValueError, match="stream must be True, False or None"):
            lib.crba.batch(Q, stream=bad)


def test_auto_threads(monkeypatch):
    monkeypatch.delenv("SYMDYN_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(cg_loader, "available_cpus", lambda: 4)
    T = cg_loader.AUTO_THREAD_NS
    assert cg_loader.auto_threads(0) == 1
    assert cg_loader.auto_threads(0.9 * T) == 1          # too little work for a second thread
    assert cg_loader.auto_threads(2.5 * T) == 2
    assert cg_loader.auto_threads(100 * T) == 4          # at most the CPUs
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert cg_loader.auto_threads(100 * T) == 1
    monkeypatch.setenv("SYMDYN_NUM_THREADS", "3")      # symdyn's own variable first
    assert cg_loader.auto_threads(100 * T) == 3
    monkeypatch.setenv("SYMDYN_NUM_THREADS", "lots")   # not a number: the next one applies
    assert cg_loader.auto_threads(100 * T) == 1


def test_auto_threads_follow_the_work(lib, monkeypatch):
    """threads=None passes auto_threads(states x estimated ns a state) to C (in the Python
    batch, called directly: the extension runs exact-array calls of small batches on one
    thread without asking it)."""
    seen = []
    monkeypatch.setattr(cg_loader, "auto_threads", lambda ns: seen.append(ns) or 2)
    f = lib["crba"]
    Q = _states(_fmodel(), 20, seed=12)["q"]
    out = np.empty((20, *f.output_shapes[0]))
    np.testing.assert_array_equal(CompiledFunction.batch(f, Q, out=out), _loop(f, [Q])[0])
    assert len(seen) == 1 and seen[0] == pytest.approx(20 * f._state_ns) and seen[0] > 0
    # batches of 32 states or more average their measured time into the estimate
    before = f._state_ns
    Q = _states(_fmodel(), 64, seed=14)["q"]
    CompiledFunction.batch(f, Q, threads=1)
    assert f._state_ns != before and f._state_ns > 0


def test_automatic_threads_follow_measured_times(lib, monkeypatch):
    """threads=None with several threads possible: each count is tried, then the faster per
    state is used, the slower one again every 16th call; explicit threads= records nothing."""
    monkeypatch.setattr(cg_loader, "auto_threads", lambda ns: 2)
    f = lib["crba"].copy()
    f._tune, f._tune_calls = {}, 0
    Q = _states(_fmodel(), 64, seed=16)["q"]
    ref = _loop(f, [Q])[0]
    f.batch(Q, threads=2)
    assert f._tune == {}
    used = []
    real = f._batch

    def spy(*args):
        used.append(args[3])
        return real(*args)

    f._batch = spy
    # the Python batch, called directly (the extension runs exact-array calls of batches that
    # auto_threads gives one thread, without asking it)
    for _ in range(3):
        np.testing.assert_array_equal(CompiledFunction.batch(f, Q), ref)
    assert used[:2] == [2, 1] and set(f._tune) == {1, 2}
    f._tune = {1: 10.0, 2: 50.0}                 # one thread measured faster
    used.clear()
    f._tune_calls = 0
    for _ in range(32):
        CompiledFunction.batch(f, Q)
        f._tune = {1: 10.0, 2: 50.0}
    assert used.count(2) == 2 and used.count(1) == 30
