"""Vector batches (issue 50, item 1): ``f.batch(..., simd=True)`` (W states per instruction,
symdyn/codegen/simd.py) against the scalar loop of the same compiled function
(``simd=False``), per state, one thread, at 10^4 states (fewer where the outputs would exceed
256 MB: the states are then named), outputs written into reused arrays (``out=``), the two
interleaved in one process (medians of the per-round ratios). Both compiled forms, as
``form="auto"`` chooses them per function.

Where the CPU runs more than one vector target (AVX-512 and AVX2), the narrower ones are built
and timed beside the widest, and the report says which one ``simd="auto"`` builds for each
function (:func:`symdyn.codegen.simd.auto_target`: by its output bytes and outputs per operation) and
what that choice costs against the best.

Also: the vector FMA peak of this CPU (independent multiply-add chains on the same vector type,
same target attribute), against which the batches' SX operations per ns are set; the bytes of
outputs per state (a batch that writes more than memory takes is bandwidth-bound whatever its
arithmetic); the batch's parts timed alone (the vector kernel on one block in cache, the
transpose of its outputs back into state rows, the write floor), to show where the time goes
against the 3x of issue 50; and the fixed cost of a ``.batch`` call (one state) through the
extension's fast path, with and without ``out=`` (reused arrays) and ``threads=1``, against the
Python path (``CompiledFunction.batch`` called directly).

Models: kinova, panda, anymal_c, g1 (example-robot-data URDFs) and random_tree(40) with random
geometry (``symdyn.models.random_tree(40, seed=1)``: random axes, offsets and inertias, what a
user's own robot looks like, not axis-aligned); rnea, crba, aba, coriolis_matrix, christoffel,
rnea_derivatives.

Writes simd_batch.md.

    python experiments/simd_batch.py            # five models (cold build cache: ~30 min)
    python experiments/simd_batch.py --quick    # panda, fewer repeats (~2 min)
"""
from __future__ import annotations

import ctypes
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import command, header, interleaved, log, median, out_dir, paired_ratio, parser, table, write

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
from symdyn.codegen import build, compiler_info, csource, simd  # noqa: E402
from symdyn.codegen.loader import CompiledFunction  # noqa: E402
from symdyn.models import random_tree  # noqa: E402

MODELS_FULL = ["kinova", "panda", "anymal_c", "g1", "random_tree(40)"]
MODELS_QUICK = ["panda"]
ALGS = ["rnea", "crba", "aba", "coriolis_matrix", "christoffel", "rnea_derivatives"]
STATES = 10_000
MAX_OUT_BYTES = 256e6
# The same functions again on batches whose outputs stay in the core's cache (at most this many
# bytes, at most CACHED_STATES states, at least 4 vector blocks), to separate the arithmetic's
# speedup from the memory writes of 10^4 states.
CACHED_BYTES = 512 * 1024
CACHED_STATES = 256


def model(name: str):
    if name == "random_tree(40)":
        return random_tree(40, seed=1, name="tree40")
    return sd.load_robot(name)


def shared_library(src: str, name: str) -> ctypes.CDLL:
    """C source ``src`` compiled at -O2 into a shared library of its own (a temporary
    directory that lives as long as the process) and loaded."""
    d = Path(tempfile.mkdtemp(prefix=f"symdyn-{name}-"))
    (d / f"{name}.c").write_text(src)
    subprocess.run([compiler_info()[0], "-O2", "-shared", "-fPIC", "-o", str(d / f"lib{name}.so"),
                    str(d / f"{name}.c")], check=True, capture_output=True)
    return ctypes.CDLL(str(d / f"lib{name}.so"))


def fma_peak(target: str, seconds: float = 0.3) -> float:
    """Flop per ns of independent FMA chains on ``target``'s vectors (one thread)."""
    W = simd.TARGETS[target][0]
    t = target
    T = t.upper()
    chains = range(12)    # independent chains in registers (a loop over an array would not be)
    src = simd.prelude(target) + f"""
#ifdef SYMDYN_{T}_OK
SYMDYN_{T}_TARGET double fma_peak(long long n) {{
  const symdyn_{t} m = SYMDYN_{T}_SPLAT(0.9999999), c = SYMDYN_{T}_SPLAT(1e-9);
  symdyn_{t} {", ".join(f"a{k} = SYMDYN_{T}_SPLAT({k + 1}.0)" for k in chains)};
  long long i;
  int l;
  double s = 0;
  for (i = 0; i < n; ++i) {{
    {" ".join(f"a{k} = a{k} * m + c;" for k in chains)}
  }}
  for (l = 0; l < {W}; ++l) s += {" + ".join(f"a{k}[l]" for k in chains)};
  return s;
}}
#endif
"""
    f = shared_library(src, "fma").fma_peak
    f.argtypes, f.restype = [ctypes.c_longlong], ctypes.c_double
    n = 1_000_000
    best = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        f(n)
        best = max(best, n * 12 * W * 2 / ((time.perf_counter() - t0) * 1e9))
    return best


_FILL_C = r"""
#include <emmintrin.h>
#include <stdint.h>
/* n doubles written with non-temporal stores (what a streamed batch does), or ordinary ones */
void fill_stream(double* p, long long n) {
  const __m128d v = _mm_set1_pd(1.0);
  long long i = 0;
  for (; i < n && ((uintptr_t)(p + i) & 15); ++i) p[i] = 1.0;
  for (; i + 2 <= n; i += 2) _mm_stream_pd(p + i, v);
  for (; i < n; ++i) p[i] = 1.0;
  _mm_sfence();
}
void fill_plain(double* p, long long n) {
  long long i;
  for (i = 0; i < n; ++i) p[i] = 1.0;
}
"""
_FILL: list = []


def write_floor(nbytes: int):
    """Two callables writing ``nbytes`` of a reused array, with non-temporal stores and with
    ordinary ones: the least time any batch writing that much output can take."""
    if not _FILL:
        cdll = shared_library(_FILL_C, "fill")
        for fn in (cdll.fill_stream, cdll.fill_plain):
            fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_longlong], None
        _FILL.extend([cdll.fill_stream, cdll.fill_plain])
    buf = np.empty(nbytes // 8)
    ptr, n = buf.ctypes.data, buf.size
    return [lambda fn=fn: fn(ptr, n) or buf for fn in _FILL]


_PARTS_C = r"""
typedef void (*symdyn_vfn_)(const double* const*, double* const*, double*);
/* the vector kernel alone on one packed block of W states, called ``blocks`` times */
void kernel_loop(void* f, const double* const* arg, double* const* res, double* w,
                 long long blocks) {
  long long b;
  for (b = 0; b < blocks; ++b) ((symdyn_vfn_)f)(arg, res, w);
}
/* the transpose alone: each output block back into rows of W states, in pieces of at most
 * ``piece`` entries into one reused buffer (what the batch does before streaming them out) */
void unpack_loop(const double* const* blk, const long long* n, int n_out, double* rows,
                 long long piece, long long blocks) {
  long long b, j0;
  int k;
  for (b = 0; b < blocks; ++b)
    for (k = 0; k < n_out; ++k)
      for (j0 = 0; j0 < n[k]; j0 += piece)
        UNPACK(blk[k] + j0 * W_, n[k] - j0 < piece ? n[k] - j0 : piece, rows, W_);
}
"""
# the batch's transpose works in pieces of this many entries of an output (its C template)
VPIECE = int(re.search(r"#define SYMDYN_VPIECE (\d+)", Path(csource.__file__).read_text())[1])
_PARTS: dict = {}


def _aligned(n: int) -> np.ndarray:
    """``n`` doubles starting on a 64-byte boundary (the vector blocks' alignment)."""
    buf = np.zeros(n + 8)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + n]


class Parts:
    """The vector batch's parts alone, on one block of W states in cache. ``kernel()`` runs the
    vector kernel (``<symbol>_<target>``, exported by the library) and ``transpose()`` the
    transpose of its outputs back into state rows (``simd.io_source``'s unpack, in pieces as
    the batch does), each once per block of ``n`` states; ``states``: the states they cover.
    ``blocks`` (state-minor outputs, entry j of lane l at ``j * W + l``) and ``rows`` (the last
    piece of the last output, W rows of its length) hold what they computed."""

    def __init__(self, cdll, f, target: str, ins: list[np.ndarray], n: int):
        W = simd.TARGETS[target][0]
        helper = _helper(target)
        kernel = getattr(cdll, f"{f.symbol}_{target}")
        sz_w = getattr(cdll, f"{f.symbol}_{target}_sz_w")
        sz_w.restype = ctypes.c_longlong
        # the first W states, state-minor; outputs, workspace (constants prepared) and rows
        self.inputs = [_aligned(W * x.shape[1]) for x in ins]
        for blk, x in zip(self.inputs, ins):
            blk[:] = np.ascontiguousarray(x[:W].T).ravel()
        self.sizes = [int(np.prod(s)) for s in f.output_shapes]
        self.blocks = [_aligned(W * k) for k in self.sizes]
        self.w = _aligned(max(1, int(sz_w())))
        getattr(cdll, f"{f.symbol}_{target}_prepare")(ctypes.c_void_p(self.w.ctypes.data))
        self.rows = _aligned(W * min(max(self.sizes), VPIECE))
        self.states = max(1, n // W) * W
        ptrs = lambda arrays: (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        arg, res = ptrs(self.inputs), ptrs(self.blocks)
        fn = ctypes.cast(kernel, ctypes.c_void_p)
        nk = (ctypes.c_longlong * len(self.sizes))(*self.sizes)
        w, rows = ctypes.c_void_p(self.w.ctypes.data), ctypes.c_void_p(self.rows.ctypes.data)
        blocks, piece = ctypes.c_longlong(self.states // W), ctypes.c_longlong(VPIECE)
        self.kernel = lambda: helper.kernel_loop(fn, arg, res, w, blocks)
        self.transpose = lambda: helper.unpack_loop(res, nk, len(self.sizes), rows, piece, blocks)

    @classmethod
    def of(cls, lib, f, target: str, ins: list[np.ndarray], n: int):
        """The parts of ``f`` (of the built ``lib``), or None where the library exports no
        vector kernel for ``target``."""
        cdll = ctypes.CDLL(str(lib.library))
        if not hasattr(cdll, f"{f.symbol}_{target}"):
            return None
        return cls(cdll, f, target, ins, n)


def _helper(target: str):
    """The C loops of :data:`_PARTS_C` over ``target``'s unpack, compiled once."""
    if target not in _PARTS:
        lib = shared_library(simd.io_source((target,))
                             + f"\n#define UNPACK symdyn_{target}_unpack\n"
                             f"#define W_ {simd.TARGETS[target][0]}\n" + _PARTS_C, "parts")
        lib.kernel_loop.restype = lib.unpack_loop.restype = None
        _PARTS[target] = lib
    return _PARTS[target]


def inputs(m, f, n: int, rng) -> list[np.ndarray]:
    q = np.array([m.random_q(rng) for _ in range(n)])
    other = {k: rng.uniform(-1, 1, (n, m.nv)) for k in ("qd", "qdd", "tau")}
    return [q if name == "q" else other[name] for name in f.input_names]


def measure(name: str, repeat: int, rng, others: list[str]) -> list[dict]:
    """Rows of ``name``'s functions; ``others``: narrower vector targets this CPU also runs,
    built separately (``simd=(target,)``) and timed in the same interleaved rounds."""
    m = model(name)
    t0 = time.perf_counter()
    host = simd.host_targets(compiler_info()[0])
    lib = build(m, ALGS, simd=host[:1], progress=False)     # the widest target
    narrower = {t: build(m, ALGS, simd=(t,), progress=False) for t in others}
    log(f"{name}: built in {time.perf_counter() - t0:.0f} s (cache hit: {lib.cache_hit})")
    rows = []
    for alg in ALGS:
        f = lib[alg]
        out_bytes = 8 * sum(int(np.prod(s)) for s in f.output_shapes)
        n = int(min(STATES, MAX_OUT_BYTES // out_bytes))
        ins = inputs(m, f, n, rng)
        res = f.batch(*ins, threads=1)
        out = res
        alts = [(t, narrower[t][alg]) for t in others]
        alt_out = [g.batch(*ins, threads=1) for _, g in alts]
        split = Parts.of(lib, f, host[0], ins, n) if f.simd_width > 1 else None
        ts = interleaved([lambda: f.batch(*ins, out=out, threads=1, simd=True),
                          lambda: f.batch(*ins, out=out, threads=1, simd=False)]
                         + write_floor(out_bytes * n)
                         + [lambda g=g, o=o: g.batch(*ins, out=o, threads=1, simd=True)
                            for (_, g), o in zip(alts, alt_out)]
                         + ([split.kernel, split.transpose] if split else []), repeat=repeat)
        t_kernel = t_unpack = float("nan")
        if split:
            t_kernel, t_unpack = median(ts[-2]) / split.states, median(ts[-1]) / split.states
            ts = ts[:-2]
        ts_v, ts_s = ts[0], ts[1]
        t_floor = min(median(ts[2]), median(ts[3])) / n
        ts = ts[:2] + ts[4:]
        vec = f.batch(*ins, threads=1, simd=True)
        sca = f.batch(*ins, threads=1, simd=False)
        err = max(float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))
                  for a, b in zip(vec if isinstance(vec, tuple) else (vec,),
                                  sca if isinstance(sca, tuple) else (sca,)))
        nc = min(CACHED_STATES, CACHED_BYTES // out_bytes) // f.simd_width * f.simd_width
        cached = float("nan")
        if f.simd_width > 1 and nc >= 4 * f.simd_width:
            ins_c = [a[:nc].copy() for a in ins]
            out_c = f.batch(*ins_c, threads=1)
            tc = interleaved([lambda: f.batch(*ins_c, out=out_c, threads=1, simd=True),
                              lambda: f.batch(*ins_c, out=out_c, threads=1, simd=False)],
                             repeat=repeat)
            cached = paired_ratio(tc[1], tc[0])
        one = [a[:1].copy() for a in ins]
        out1 = f.batch(*one)
        tf, to, tp = interleaved([lambda: f.batch(*one),
                                  lambda: f.batch(*one, out=out1, threads=1),
                                  lambda: CompiledFunction.batch(f, *one)], repeat=repeat)
        rows.append({"model": name, "nv": m.nv, "alg": alg, "form": f.meta["form"],
                     "width": f.simd_width, "states": n, "instr": int(f.stats["n_instructions"]),
                     "work": int(f.stats.get("work", f.stats["n_instructions"])),
                     "out_bytes": out_bytes, "t_vec": median(ts_v) / n, "t_sca": median(ts_s) / n,
                     "speedup": paired_ratio(ts_s, ts_v), "err": err, "t_floor": t_floor,
                     "t_kernel": t_kernel, "t_unpack": t_unpack,
                     "cached": cached, "cached_states": nc,
                     "fixed_fast": median(tf), "fixed_out": median(to),
                     "fixed_python": median(tp),
                     "cpu_scalar": f.stats.get("cpu_compile", float("nan")),
                     "cpu_vector": f.stats.get("cpu_compile_simd", float("nan")),
                     "others": {t: (g.simd_width, median(tt) / n, paired_ratio(ts_s, tt))
                                for (t, g), tt in zip(alts, ts[2:])}})
        r = rows[-1]
        log(f"{name} {alg}: {r['form']}, W={r['width']}, scalar {r['t_sca'] * 1e9:.0f} ns, "
            f"vector {r['t_vec'] * 1e9:.0f} ns a state: {r['speedup']:.2f}x; one-state batch "
            f"{r['fixed_fast'] * 1e6:.2f} us (Python path {r['fixed_python'] * 1e6:.2f} us)")
    return rows


def report(rows, peak, target, args, t0) -> list[str]:
    W = simd.TARGETS[target][0] if target else 1
    L = header("Vector batches: W states per instruction against the scalar loop (issue 50)",
               command("simd_batch.py", args), t0,
               "Per state, one thread, outputs into reused arrays, vector and scalar interleaved "
               "in one process (medians; speedup = median of per-round ratios). `form`: the "
               "compiled form `form=\"auto\"` chose. `ops/ns`: SX instructions of the function "
               "times states over the vector batch's time; `% peak`: of the vector FMA peak "
               "below, counting one SX operation as two flops (an FMA), an upper bound on the "
               "share of the arithmetic units in use. `GB/s out`: output bytes written per "
               "second by the vector batch. `write floor ns`: the time to write the same output "
               "bytes alone into a reused array of their size, per state (the faster of "
               "non-temporal and ordinary stores, timed in the same rounds): no batch writing "
               "these outputs can be faster. `bound`: scalar ns / write floor ns, the largest "
               "speedup over the scalar loop that writing the outputs leaves possible. "
               "`in cache`: the speedup on a batch small enough that its outputs stay in the "
               f"core's cache (at most {CACHED_BYTES // 1024} KiB of outputs and "
               f"{CACHED_STATES} states; the states in brackets; `-` where that leaves fewer "
               "than four vector blocks): the arithmetic's speedup without the writes to "
               "memory, fixed cost of the call included.")
    L += [f"Vector target: `{target or 'none'}` (W = {W}); vector FMA peak measured in this run: "
          f"{peak:.1f} flop/ns (12 independent chains, one thread).", ""]
    body = []
    for r in rows:
        ops = r["instr"] / (r["t_vec"] * 1e9)
        body.append([r["model"], str(r["nv"]), r["alg"], r["form"], str(r["width"]),
                     str(r["states"]), f"{r['t_sca'] * 1e9:.0f}", f"{r['t_vec'] * 1e9:.0f}",
                     f"**{r['speedup']:.2f}**", f"{ops:.1f}",
                     f"{100 * 2 * ops / peak:.0f}" if peak else "-",
                     f"{r['out_bytes'] / 1024:.1f}", f"{r['out_bytes'] / (r['t_vec'] * 1e9):.1f}",
                     f"{r['t_floor'] * 1e9:.0f}", f"{r['t_sca'] / r['t_floor']:.1f}",
                     f"{r['cached']:.2f} ({r['cached_states']})"
                     if r["cached"] == r["cached"] else "-",
                     f"{r['err']:.0e}"])
    L += table(["model", "nv", "function", "form", "W", "states", "scalar ns", "vector ns",
                "speedup", "ops/ns", "% peak", "KiB out", "GB/s out", "write floor ns", "bound",
                "in cache", "max rel. diff"], body)
    split = [r for r in rows if r["t_kernel"] == r["t_kernel"]]
    if split:
        L += ["", "## Where the vector batch's time goes", "",
              "The vector batch's parts timed alone, per state, in the same interleaved rounds: "
              "`kernel ns`, the vector kernel (`<function>_<target>` of the library) called on "
              "one packed block of W states over and over (inputs, outputs and workspace in "
              "cache); `transpose ns`, the transpose of that block's outputs back into rows of "
              f"states (the batch's unpack, in pieces of at most {VPIECE} entries into one "
              "reused buffer, in cache); `write floor ns` as above. `parts`: their sum, "
              "against `vector ns`, the whole batch (which also packs the inputs and checks "
              "them). `3x needs`: scalar ns / 3, the vector time the target asks for.", ""]
        L += table(["model", "function", "form", "vector ns", "kernel ns", "transpose ns",
                    "write floor ns", "parts", "3x needs", "kernel speedup"],
                   [[r["model"], r["alg"], r["form"], f"{r['t_vec'] * 1e9:.0f}",
                     f"{r['t_kernel'] * 1e9:.0f}", f"{r['t_unpack'] * 1e9:.0f}",
                     f"{r['t_floor'] * 1e9:.0f}",
                     f"{(r['t_kernel'] + r['t_unpack'] + r['t_floor']) * 1e9:.0f}",
                     (f"**{r['t_sca'] / 3 * 1e9:.0f}**" if r["speedup"] < 3.0
                      else f"{r['t_sca'] / 3 * 1e9:.0f}"),
                     f"{r['t_sca'] / r['t_kernel']:.2f}"] for r in split])
        L += ["", "`kernel speedup`: scalar ns (the whole scalar batch, its writes included) / "
              "kernel ns, the speedup the arithmetic alone would give. Bold: the cells below 3x."]
    others = sorted({t for r in rows for t in r["others"]})
    if others:
        L += ["", "## Every vector target this CPU runs, side by side", "",
              "Each target built on its own (`simd=(target,)`) and timed in the same "
              "interleaved rounds. Speedups over the scalar loop; the best per function in "
              "bold. `auto`: the target `simd=\"auto\"` builds for the function "
              f"(`simd.auto_target`: AVX2 from {simd.AUTO_NARROW_OUT_BYTES} output bytes a "
              f"state and {simd.AUTO_NARROW_OUT_PER_OP} output entries per SX operation of "
              "the evaluation on, else the widest) and its speedup.", ""]
        body = []
        host = (target, *others)
        for r in rows:
            cells = {target: r["speedup"], **{t: r["others"][t][2] for t in others}}
            best = max(cells.values())
            (pick,) = simd.auto_target(host, r["out_bytes"] // 8, r["work"])
            r["auto"], r["auto_loss"] = pick, cells[pick] / best
            body.append([r["model"], r["alg"], f"{r['out_bytes'] / 1024:.1f}"]
                        + [(f"**{cells[t]:.2f}**" if cells[t] == best else f"{cells[t]:.2f}")
                           for t in [target, *others]] + [f"{pick} {cells[pick]:.2f}"])
        L += table(["model", "function", "KiB out", *[f"{t} (W = {simd.TARGETS[t][0]})"
                                                      for t in [target, *others]], "auto"], body)
    L += ["", "## What the vector variants cost at build time", "",
          "CPU seconds of the compiler for the function's scalar C and for its vector variants "
          "(a unit of their own, compiled in parallel with the scalar one where cores are "
          "free; the recursive form keeps them in its one file: included in the scalar "
          "figure). Taken from the build manifest: a cache hit shows the original build's.", ""]
    L += table(["model", "function", "form", "scalar C s", "vector variants s"],
               [[r["model"], r["alg"], r["form"], f"{r['cpu_scalar']:.1f}",
                 f"{r['cpu_vector']:.1f}" if r["cpu_vector"] == r["cpu_vector"] else "-"]
                for r in rows])
    L += ["", "## Fixed cost of a `.batch` call (one state)", "",
          "The extension's fast path (exact C-contiguous float64 arrays, batches that "
          "`threads=None` runs on one thread or an explicit `threads=`), without keywords "
          "(fresh outputs) and with `out=` (reused arrays) and `threads=1`, against the Python "
          "path of the same call (`CompiledFunction.batch` called directly), medians in "
          "microseconds; the state's evaluation is included in all three (a batch of fewer "
          "than W states runs the scalar loop).", ""]
    L += table(["model", "function", "fast path us", "fast path, out= us", "Python path us"],
               [[r["model"], r["alg"], f"{r['fixed_fast'] * 1e6:.2f}",
                 f"{r['fixed_out'] * 1e6:.2f}", f"{r['fixed_python'] * 1e6:.2f}"]
                for r in rows])
    sp = [r["speedup"] for r in rows]
    cheap = min(rows, key=lambda r: r["fixed_fast"])
    below = [r for r in rows if r["speedup"] < 3.0]
    capped = [r for r in below if r["t_sca"] / r["t_floor"] < 3.0]
    free = [r for r in below if r["t_sca"] / r["t_floor"] >= 3.0]
    big_slow = ", ".join(f"{r['model']} {r['alg']} {r['speedup']:.2f}x" for r in below
                         if r["out_bytes"] >= 1024) or "none"
    small_slow = ", ".join(f"{r['model']} {r['alg']} {r['speedup']:.2f}x ({r['form']})"
                           for r in below if r["out_bytes"] < 1024) or "none"
    small = [r for r in rows if r["t_sca"] < 1e-6] or rows
    fast_small = f"{min(r['fixed_fast'] for r in small) * 1e6:.2f}-" \
                 f"{max(r['fixed_fast'] for r in small) * 1e6:.2f}"
    py_small = f"{min(r['fixed_python'] for r in small) * 1e6:.2f}-" \
               f"{max(r['fixed_python'] for r in small) * 1e6:.2f}"
    out_small = f"{min(r['fixed_out'] for r in small) * 1e6:.2f}-" \
                f"{max(r['fixed_out'] for r in small) * 1e6:.2f}"
    L += ["", "## Summary", "",
          f"- Speedup of the vector batch over the scalar loop: {min(sp):.2f}x to {max(sp):.2f}x "
          f"(median {float(np.median(sp)):.2f}x) with W = {W}.",
          f"- Fixed cost of `.batch`: the cheapest one-state call, {cheap['model']} "
          f"{cheap['alg']} (its evaluation included), takes "
          f"{cheap['fixed_fast'] * 1e6:.2f} us through the extension's fast path and "
          f"{cheap['fixed_python'] * 1e6:.2f} us through Python; over the functions whose "
          f"per-state time is under 1 us: {fast_small} us (fast path; {out_small} us with "
          f"`out=` and `threads=1`) against {py_small} us.",
          f"- Below 3x, by kind: functions with outputs of 1 KiB a state or more "
          f"({big_slow}), where every state's outputs go through the transpose and out to "
          f"memory (the `GB/s out` column) and the arithmetic is a smaller share; the others "
          f"({small_slow}).",
          f"- Of those below 3x, where writing the outputs alone leaves no 3x (bound < 3): "
          + (", ".join(f"{r['model']} {r['alg']} ({r['speedup']:.2f}x of a bound "
                       f"{r['t_sca'] / r['t_floor']:.1f}, vector {r['t_vec'] / r['t_floor']:.1f}x "
                       "the write floor)" for r in capped) or "none") + "; where it does: "
          + (", ".join(f"{r['model']} {r['alg']} ({r['speedup']:.2f}x of "
                       f"{r['t_sca'] / r['t_floor']:.1f})" for r in free) or "none") + "."]
    parted = [r for r in below if r["t_kernel"] == r["t_kernel"]]
    if parted:
        over = [r for r in parted if r["t_unpack"] + r["t_floor"] >= r["t_sca"] / 3]
        L += ["- Of those below 3x, the transpose and the write floor together take "
              + ", ".join(f"{r['model']} {r['alg']} "
                          f"{100 * (r['t_unpack'] + r['t_floor']) * 3 / r['t_sca']:.0f} %"
                          for r in parted)
              + " of the time 3x allows (`Where the vector batch's time goes`); "
              f"{len(over)} of {len(parted)} leave nothing for the kernel unless the writes "
              "overlap the arithmetic."]
    inc = [r for r in below if r["cached"] == r["cached"]]
    L += [f"- Of those below 3x, on batches whose outputs stay in cache (`in cache`): "
          + (", ".join(f"{r['model']} {r['alg']} {r['cached']:.2f}x" for r in inc) or "none")
          + f"; {sum(r['cached'] >= 3.0 for r in inc)} of {len(inc)} reach 3x there."]
    for t in others:
        wins = [r for r in rows if r["others"][t][2] > r["speedup"]]
        kib = sorted(r["out_bytes"] / 1024 for r in wins)
        L += [f"- `{t}` (W = {simd.TARGETS[t][0]}) beats `{target}` on {len(wins)} of "
              f"{len(rows)} functions"
              + (f" (outputs {kib[0]:.1f}-{kib[-1]:.1f} KiB a state)" if kib else "")
              + f"; `{target}` wins on the others."]
    if others:
        hit = [r for r in rows if r["auto_loss"] == 1.0]
        worst = min(rows, key=lambda r: r["auto_loss"])
        L += [f"- `simd=\"auto\"` picks the fastest target on {len(hit)} of {len(rows)} "
              f"functions; its worst pick is {worst['model']} {worst['alg']} "
              f"({worst['auto']}, {worst['auto_loss']:.2f}x the best speedup)."]
    return L + [""]


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeat", type=int, default=None, help="interleaved rounds (9; 5 with --quick)")
    p.add_argument("--models", default=None, help="comma-separated models (default: all five)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    repeat = args.repeat or (5 if args.quick else 9)
    names = args.models.split(",") if args.models else MODELS_QUICK if args.quick else MODELS_FULL
    host = simd.host_targets(compiler_info()[0])
    target = host[0] if host else None
    peak = fma_peak(target) if target else 0.0
    log(f"vector target {target}, FMA peak {peak:.1f} flop/ns")
    rng = np.random.default_rng(0)
    rows = [r for n in names for r in measure(n, repeat, rng, host[1:])]
    write(d, "simd_batch.md", report(rows, peak, target, args, t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
