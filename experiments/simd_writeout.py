"""Ways to write a vector batch's outputs (issue 50, item 1): can the transposes and the memory
writes of the AVX-512 batch hide behind its arithmetic, and what does the output layout cost?

reports/simd_batch.md shows that where the vector batch misses 3x over the scalar loop, its
parts add up: kernel + transpose + writes, with nothing overlapped. This experiment builds other
write-outs from the same SX function and times all of them side by side, with the library's own
batches. Three keep the layout the library returns (states first: row ``i`` of an output holds
state ``i``):

* ``current``: what ``f.batch`` does, rebuilt here so that all variants share everything else:
  pack a block of 8 states, the vector kernel (state-minor outputs), the transpose of each
  output back into the block's 8 rows (in L1), the rows streamed out in whole cache lines
  (non-temporal stores).
* ``fused``: the transposes inside the kernel: as soon as the kernel has written the 8 entries
  of a tile of a row-major output, the tile is transposed (8 x 8, in registers) into the rows,
  so that the shuffles run among the arithmetic; the rows are then streamed as above.
* ``pipelined``: ``fused``, and the previous block's rows streamed out from inside the kernel,
  a few lines after each tile (double-buffered rows), so that the memory writes also run among
  the arithmetic.

Three write the same values in other layouts, with no transpose:

* ``states_last``: output ``o`` as an array (entries, states), states last (an output of shape
  ``(n, n, N)``); the kernel streams each entry's line of 8 states to it as soon as it has
  computed it.
* ``states_last_tiled``: the same layout through a tile of 64 states in cache: the kernel stores
  its entries into the tile (ordinary stores), each entry's 64 states are then streamed out as
  one run of 8 lines (a tile holds 64 states' outputs: 3 MB for anymal_c's Christoffel symbols,
  more than the core's cache).
* ``blocked``: output ``o`` as an array (states / 8, entries, 8), the kernel's own state-minor
  blocks stored whole (AoSoA, panel-major): the kernel streams each entry's line as soon as it
  has computed it, each block's outputs one contiguous run of lines.

Only the unrolled form (one straight-line kernel) and W = 8 (AVX-512); arrays 64-byte aligned
and whole blocks of 8 states (the library's batch handles the general case). Every variant
writes its own output array (a line left in cache by one variant's ordinary stores would slow
the next one's non-temporal stores), checked against the library's batch. Cells: the unrolled
functions that miss 3x in reports/simd_batch.md (random_tree(40) has random geometry; the others
are example-robot-data URDFs), with kinova crba (which meets 3x) as a control.

Writes simd_writeout.md.

    python experiments/simd_writeout.py            # thirteen cells (~5 min)
    python experiments/simd_writeout.py --quick    # kinova and panda crba, fewer rounds
    python experiments/simd_writeout.py --cells "panda:crba,random_tree(40):crba"
"""
from __future__ import annotations

import ctypes
import sys
import time

from _common import (command, header, interleaved, log, median, out_dir, paired_ratio, parser,
                     table, write)
from simd_batch import _aligned, inputs, model, shared_library

import numpy as np  # noqa: E402

from symdyn.codegen import build, compiler_info, simd  # noqa: E402
from symdyn.codegen.functions import casadi_function  # noqa: E402

CELLS_FULL = ["kinova:crba", "kinova:coriolis_matrix", "kinova:christoffel", "panda:crba",
              "panda:coriolis_matrix", "panda:christoffel", "panda:rnea_derivatives",
              "anymal_c:crba", "anymal_c:coriolis_matrix", "anymal_c:christoffel", "g1:crba",
              "g1:coriolis_matrix", "random_tree(40):crba"]
CELLS_QUICK = ["kinova:crba", "panda:crba"]
ROW_MAJOR = ("current", "fused", "pipelined")      # the layout f.batch returns
VARIANTS = (*ROW_MAJOR, "states_last", "states_last_tiled", "blocked")
TILE = 64       # states of a states_last_tiled tile
STATES = 10_000
TARGET = "avx512"
W = 8

# streams n whole lines from src to dst (both 64-byte aligned); the drainer holds what is left
# of the previous block's rows for the pipelined kernel
_IO = r"""
SYMDYN_AVX512_FN void wo_lines(double* dst, const double* src, long long n) {
  long long j;
  for (j = 0; j < n; ++j) _mm512_stream_pd(dst + 8 * j, _mm512_load_pd(src + 8 * j));
}
typedef struct { const double* src[16]; double* dst[16]; long long left[16]; int k, n; } wo_drainer;
SYMDYN_AVX512_FN void wo_drain(wo_drainer* d, long long lines) {
  while (lines > 0 && d->k < d->n) {
    const long long m = d->left[d->k] < lines ? d->left[d->k] : lines;
    wo_lines(d->dst[d->k], d->src[d->k], m);
    d->src[d->k] += 8 * m; d->dst[d->k] += 8 * m; d->left[d->k] -= m; lines -= m;
    if (!d->left[d->k]) d->k++;
  }
}
"""

_BATCHES = r"""
typedef void (*wo_plain)(const double* const*, double* const*, double*);
SYMDYN_AVX512_TARGET void batch_current(const double* const* in, const long long* nin, int n_in,
    double* const* out, const long long* nout, int n_out, long long N, double** varg,
    double** vres, double* rows) {
  long long i; int k;
  for (i = 0; i < N; i += 8) {
    for (k = 0; k < n_in; ++k) symdyn_avx512_pack(in[k] + i * nin[k], nin[k], varg[k], 8);
    kernel_plain((const double* const*)varg, vres, 0);
    for (k = 0; k < n_out; ++k) {
      symdyn_avx512_unpack(vres[k], nout[k], rows, 8);
      wo_lines(out[k] + i * nout[k], rows, nout[k]);
    }
  }
  _mm_sfence();
}
SYMDYN_AVX512_TARGET void batch_fused(const double* const* in, const long long* nin, int n_in,
    double* const* out, const long long* nout, int n_out, long long N, double** varg,
    double** vres, double** rows) {
  long long i; int k;
  for (i = 0; i < N; i += 8) {
    for (k = 0; k < n_in; ++k) symdyn_avx512_pack(in[k] + i * nin[k], nin[k], varg[k], 8);
    kernel_fused((const double* const*)varg, (symdyn_avx512* const*)vres, rows);
    for (k = 0; k < n_out; ++k) wo_lines(out[k] + i * nout[k], rows[k], nout[k]);
  }
  _mm_sfence();
}
SYMDYN_AVX512_TARGET void batch_pipelined(const double* const* in, const long long* nin,
    int n_in, double* const* out, const long long* nout, int n_out, long long N, double** varg,
    double** vres, double** rows, double** rows2) {
  long long i; int k;
  double **cur = rows, **prev = rows2, **t;
  wo_drainer d;
  d.n = d.k = 0;
  for (i = 0; i < N; i += 8) {
    for (k = 0; k < n_in; ++k) symdyn_avx512_pack(in[k] + i * nin[k], nin[k], varg[k], 8);
    kernel_pipelined((const double* const*)varg, (symdyn_avx512* const*)vres, cur, &d);
    wo_drain(&d, 1LL << 62);            /* what the kernel's hooks left of the previous block */
    d.n = n_out; d.k = 0;
    for (k = 0; k < n_out; ++k) {
      d.src[k] = cur[k]; d.dst[k] = out[k] + i * nout[k]; d.left[k] = nout[k];
    }
    t = cur; cur = prev; prev = t;
  }
  wo_drain(&d, 1LL << 62);
  _mm_sfence();
}
/* states_last (stride N between entries) or blocked (the block's run of nout[k] lines) */
SYMDYN_AVX512_TARGET void batch_direct(const double* const* in, const long long* nin, int n_in,
    double* const* out, const long long* nout, int n_out, long long N, double** varg,
    void (*kernel)(const double* const*, double* const*, long long), int blocked) {
  long long i; int k;
  double* r[16];
  for (i = 0; i < N; i += 8) {
    for (k = 0; k < n_in; ++k) symdyn_avx512_pack(in[k] + i * nin[k], nin[k], varg[k], 8);
    for (k = 0; k < n_out; ++k) r[k] = out[k] + (blocked ? i * nout[k] : i);
    kernel((const double* const*)varg, r, N);
  }
  _mm_sfence();
}
#define WO_TILE TILE_STATES
#define WO_DIRECT(name, blocked) \
SYMDYN_AVX512_TARGET void batch_##name(const double* const* in, const long long* nin, \
    int n_in, double* const* out, const long long* nout, int n_out, long long N, \
    double** varg) { \
  batch_direct(in, nin, n_in, out, nout, n_out, N, varg, kernel_##name, blocked); \
}
WO_DIRECT(states_last, 0)
WO_DIRECT(blocked, 1)
/* states-last through a tile of up to TILE states in cache: the kernel stores each block's
   entries at stride TILE, each entry's run of the tile is then streamed out whole */
SYMDYN_AVX512_TARGET void batch_states_last_tiled(const double* const* in, const long long* nin,
    int n_in, double* const* out, const long long* nout, int n_out, long long N, double** varg,
    double* const* tile) {
  long long i, j, e; int k;
  double* r[16];
  for (i = 0; i < N; i += WO_TILE) {
    const long long m = N - i < WO_TILE ? N - i : WO_TILE;
    for (j = 0; j < m; j += 8) {
      for (k = 0; k < n_in; ++k)
        symdyn_avx512_pack(in[k] + (i + j) * nin[k], nin[k], varg[k], 8);
      for (k = 0; k < n_out; ++k) r[k] = tile[k] + j;
      kernel_tile((const double* const*)varg, r, 0);
    }
    for (k = 0; k < n_out; ++k)
      for (e = 0; e < nout[k]; ++e) wo_lines(out[k] + e * N + i, tile[k] + e * WO_TILE, m / 8);
  }
  _mm_sfence();
}
"""


def fused_kernel(f, out_index, name: str, pipelined: bool) -> str:
    """``f``'s vector kernel with each 8-entry tile of a (row-major) output transposed into the
    block's rows right after the kernel writes its last entry: ``res`` the state-minor outputs
    (in L1), ``rows[o]`` 8 rows of output ``o``. ``pipelined``: after each tile, the next lines
    of the previous block's rows are streamed out (``wo_drain``), as many as spread them over
    the block's tiles. (Hooks spread evenly over the kernel's statements instead, two lines
    each, did no better: 0.92-1.24x the time of ``current`` on five of these cells in an ad hoc
    run.)"""
    body, n_locals = simd.statements(f, TARGET, out_index=out_index)
    sizes = [f.nnz_out(o) for o in range(f.n_out())]
    need = [[min(W, n - W * t) for t in range((n + W - 1) // W)] for n in sizes]
    have = [[0] * len(x) for x in need]
    drain = -(-sum(sizes) // sum(len(x) for x in need))   # a block's rows: sum(sizes) lines
    lines = []
    for s in body:
        lines.append(s)
        if not s.startswith("res["):
            continue
        o = int(s[4:s.index("]")])
        at = int(s[s.index("][") + 2:s.index("]=")])
        t = at // W
        have[o][t] += 1
        if have[o][t] < need[o][t]:
            continue
        m = need[o][t]
        rs = ", ".join(f"r{l} = _mm512_load_pd((const double*)(res[{o}] + {W * t + l}))"
                       if l < m else f"r{l} = _mm512_setzero_pd()" for l in range(W))
        st = [f"_mm512_storeu_pd(rows[{o}] + {l * sizes[o] + W * t}, e{l});" if m == W else
              f"_mm512_mask_storeu_pd(rows[{o}] + {l * sizes[o] + W * t}, {(1 << m) - 1}, e{l});"
              for l in range(W)]
        lines.append("{ const __m512d " + rs + ";" + simd._T8 + "\n" + "\n".join(st) + " }")
        if pipelined:
            lines.append(f"wo_drain(d, {drain});")
    decl = ", ".join(f"a{i}" for i in range(n_locals))
    extra = ", wo_drainer* d" if pipelined else ""
    return "\n".join([
        f"SYMDYN_AVX512_TARGET void {name}(const double* const* arg_, symdyn_avx512* const* res, "
        f"double* const* rows{extra}) {{",
        "  const symdyn_avx512* const* arg = (const symdyn_avx512* const*)arg_;",
        f"  symdyn_avx512 {decl};" if n_locals else "", *("  " + s for s in lines), "}", ""])


def direct_kernel(f, out_index, name: str, blocked: bool, stride: str = "N",
                  store: str = "_mm512_stream_pd") -> str:
    """``f``'s vector kernel storing each output entry, as soon as it is computed, to
    ``out[o] + 8 * k`` (``blocked``) or ``out[o] + k * stride`` (states-last), ``out[o]`` the
    block's first state."""
    body, n_locals = simd.statements(f, TARGET, out_index=out_index)
    lines = []
    for s in body:
        if s.startswith("res["):
            o = int(s[4:s.index("]")])
            at = int(s[s.index("][") + 2:s.index("]=")])
            to = f"{W * at}" if blocked else f"{at}LL * {stride}"
            s = f"{store}(out[{o}] + {to}, (__m512d){s[s.index('=') + 1:-1]});"
        lines.append(s)
    decl = ", ".join(f"a{i}" for i in range(n_locals))
    return "\n".join([
        f"SYMDYN_AVX512_TARGET void {name}(const double* const* arg_, double* const* out, "
        "long long N) {",
        "  const symdyn_avx512* const* arg = (const symdyn_avx512* const*)arg_;",
        f"  symdyn_avx512 {decl};" if n_locals else "", *("  " + s for s in lines),
        "  (void)N;", "}", ""])


def source(f, out_index) -> str:
    return "\n".join([f"#define TILE_STATES {TILE}",
        "#include <immintrin.h>", simd.io_source((TARGET,)), _IO,
        simd.vector_function(f, "kernel_plain", TARGET, out_index=out_index, static=True),
        "static " + fused_kernel(f, out_index, "kernel_fused", False),
        "static " + fused_kernel(f, out_index, "kernel_pipelined", True),
        "static " + direct_kernel(f, out_index, "kernel_states_last", False),
        "static " + direct_kernel(f, out_index, "kernel_blocked", True),
        "static " + direct_kernel(f, out_index, "kernel_tile", False, str(TILE),
                                  "_mm512_store_pd"), _BATCHES])


class Writeouts:
    """The write-outs (:data:`VARIANTS`) of ``alg`` on model ``m`` for ``n`` states (a multiple
    of W; default: :data:`STATES`, fewer where the outputs would pass 256 MB): ``run[k]()``
    evaluates ``inputs`` into ``outs[k]`` (flat arrays, one per output, in ``k``'s layout) with
    write-out ``k``;
    ``function``: the library's compiled function (built with ``simd=(TARGET,)``), or None,
    with ``form``, when its compiled form is not the unrolled one."""

    def __init__(self, m, alg: str, rng, n: int | None = None):
        self.function = build(m, [alg], simd=(TARGET,), progress=False)[alg]
        self.form = self.function.meta["form"]
        out_bytes = 8 * sum(int(np.prod(s)) for s in self.function.output_shapes)
        self.n = n = n or int(min(STATES, 256e6 // out_bytes)) // W * W
        if self.form != "unrolled":
            self.function = None
            return
        info: dict = {}
        f = casadi_function(m, alg, layout="numpy", emit_order=True, info=info)
        orders = info["orders"]
        if f.n_out() > 16:
            raise ValueError(f"{alg}: {f.n_out()} outputs; the write-outs here take at most 16")
        t0 = time.perf_counter()
        cdll = shared_library(source(f, lambda o, k: k if orders[o] is None else orders[o][k]),
                              f"writeout_{m.name}_{alg}")
        self.t_cc = time.perf_counter() - t0
        self.instructions = f.n_instructions()
        nin = [f.nnz_in(i) for i in range(f.n_in())]
        self.nout = nout = [f.nnz_out(o) for o in range(f.n_out())]
        self.inputs = [np.ascontiguousarray(x) for x in inputs(m, self.function, n, rng)]
        P = lambda arrs: (ctypes.c_void_p * len(arrs))(*[a.ctypes.data for a in arrs])  # noqa: E731
        LL = lambda xs: (ctypes.c_longlong * len(xs))(*xs)                              # noqa: E731
        # the buffers and pointer arrays stay referenced from self: the C side only gets addresses
        self._bufs = [[_aligned(W * k) for k in nin], [_aligned(W * k) for k in nout],
                      [_aligned(W * k) for k in nout], [_aligned(W * k) for k in nout],
                      _aligned(W * max(nout))]
        varg, vres, rows_a, rows_b = (P(b) for b in self._bufs[:4])
        rows_one = ctypes.c_void_p(self._bufs[4].ctypes.data)
        self._tiles = [_aligned(TILE * k) for k in nout]
        tiles = P(self._tiles)
        self.outs = {k: [_aligned(n * j) for j in nout] for k in VARIANTS}
        o = {k: P(v) for k, v in self.outs.items()}
        args = (P(self.inputs), LL(nin), len(nin))
        tail = (LL(nout), len(nout), ctypes.c_longlong(n), varg, vres)
        self._keep = (o, args, tail, rows_a, rows_b, tiles)
        self.run = {
            "current": lambda: cdll.batch_current(*args, o["current"], *tail, rows_one),
            "fused": lambda: cdll.batch_fused(*args, o["fused"], *tail, rows_a),
            "pipelined": lambda: cdll.batch_pipelined(*args, o["pipelined"], *tail, rows_a, rows_b),
            "states_last": lambda: cdll.batch_states_last(*args, o["states_last"], *tail[:4]),
            "states_last_tiled": lambda: cdll.batch_states_last_tiled(
                *args, o["states_last_tiled"], *tail[:4], tiles),
            "blocked": lambda: cdll.batch_blocked(*args, o["blocked"], *tail[:4]),
        }

    def error(self, ref) -> float:
        """Largest relative difference of the write-outs' outputs, brought back to states
        first, from ``ref`` (the library batch's outputs for the same inputs), after running
        each once."""
        ref = ref if isinstance(ref, tuple) else (ref,)
        err = 0.0
        for k, fn in self.run.items():
            fn()
            for got, r in zip(self.outs[k], ref, strict=True):
                if k.startswith("states_last"):     # (entries, states) -> (states, entries)
                    got = got.reshape(-1, self.n).T
                elif k == "blocked":        # (states / W, entries, W) -> (states, entries)
                    got = got.reshape(self.n // W, -1, W).transpose(0, 2, 1).reshape(self.n, -1)
                d = np.max(np.abs(got.reshape(r.shape) - r)) / max(1.0, float(np.max(np.abs(r))))
                err = max(err, float(d))
        return err


def measure(cell: str, repeat: int, rng) -> dict | None:
    name, alg = cell.split(":")
    wo = Writeouts(model(name), alg, rng)
    if wo.function is None:
        log(f"{cell}: form {wo.form}, skipped (only the unrolled form)")
        return None
    g, ins, n = wo.function, wo.inputs, wo.n
    lib_vec = g.batch(*ins, threads=1)
    lib_sca = g.batch(*ins, threads=1, simd=False)
    err = wo.error(lib_vec)
    if err > 1e-12:
        raise AssertionError(f"{cell}: a write-out variant differs from the batch by {err:.1e}")
    ts = interleaved([lambda: g.batch(*ins, out=lib_sca, threads=1, simd=False),
                      lambda: g.batch(*ins, out=lib_vec, threads=1, simd=True),
                      *wo.run.values()], repeat=repeat)
    row = {"cell": cell, "states": n, "instr": wo.instructions, "out": sum(wo.nout),
           "cc": wo.t_cc, "err": err, "scalar": median(ts[0]) / n}
    for k, t in zip(("library", *wo.run), ts[1:]):
        row[k] = median(t) / n
        row[k + "_x"] = paired_ratio(ts[0], t)
        row[k + "_rel"] = paired_ratio(t, ts[2])
    log(f"{cell}: scalar {row['scalar'] * 1e9:.0f} ns, " + ", ".join(
        f"{k} {row[k] * 1e9:.0f}" for k in ("library", *VARIANTS)) + " ns a state")
    return row


def report(rows, args, t0) -> list[str]:
    L = header("Writing a vector batch's outputs: transposes, stores and layouts (issue 50)",
               command("simd_writeout.py", args), t0,
               f"Per state, one thread, {TARGET} (W = {W}), outputs into reused arrays (one per "
               "variant), every column timed in the same interleaved rounds (medians; speedups "
               "are medians of per-round ratios). `scalar`, `library`: the library's batch "
               "with `simd=False` and `simd=True`. The other columns: the write-outs of the "
               "module docstring, built here from the same SX function (`current` transposes a "
               "whole output at once, the library's batch in pieces of at most 512 entries: "
               "the two differ on larger outputs). Each cell: ns a state (speedup over "
               "`scalar`); bold where the speedup reaches 3. `3x needs`: scalar / 3.")
    ns = lambda t: f"{t * 1e9:.0f}"   # noqa: E731

    def cell(r, k):
        x = f"{r[k + '_x']:.2f}x"
        return f"{ns(r[k])} ({'**' + x + '**' if r[k + '_x'] >= 3 else x})"

    L += ["", "### States first (the layout `f.batch` returns)", ""]
    L += table(["cell", "SX instr.", "out entries", "states", "scalar ns", "3x needs", "library",
                *ROW_MAJOR],
               [[r["cell"], r["instr"], r["out"], r["states"], ns(r["scalar"]),
                 ns(r["scalar"] / 3), cell(r, "library"), *(cell(r, k) for k in ROW_MAJOR)]
                for r in rows])
    other = [k for k in VARIANTS if k not in ROW_MAJOR]
    L += ["", "### Other layouts, no transpose", "",
          "`/ current`: time against `current` in the same rounds (below 1: faster).", ""]
    L += table(["cell", "scalar ns", "3x needs", *(f"{k} (/ current)" for k in other)],
               [[r["cell"], ns(r["scalar"]), ns(r["scalar"] / 3),
                 *(f"{cell(r, k)}, {r[k + '_rel']:.2f}" for k in other)] for r in rows])

    def reach(kinds):
        return [r["cell"] for r in rows if max(r[k + "_x"] for k in kinds) >= 3]

    lib = reach(("library",))
    L += ["", "## Summary", "",
          f"- At 3x or more: with the library's batch {len(lib)} of {len(rows)} cells; with "
          f"some states-first write-out here {len(reach(ROW_MAJOR))}; "
          + "; ".join(f"`{k}` {len(reach((k,)))}" for k in other) + ".",
          "- Reaching 3x with `blocked` and not with the library's batch: "
          + (", ".join(c for c in reach(("blocked",)) if c not in lib) or "none") + ".",
          f"- `fused` and `pipelined` take "
          f"{min(r[k + '_rel'] for r in rows for k in ROW_MAJOR[1:]):.2f}-"
          f"{max(r[k + '_rel'] for r in rows for k in ROW_MAJOR[1:]):.2f} times the time of "
          "`current`; `blocked` "
          f"{min(r['blocked_rel'] for r in rows):.2f}-{max(r['blocked_rel'] for r in rows):.2f}.",
          f"- Largest difference between a variant and the library's batch: "
          f"{max(r['err'] for r in rows):.0e} (relative; the kernels' FMA contraction differs).",
          f"- Compiling the kernels of a cell took {min(r['cc'] for r in rows):.1f}-"
          f"{max(r['cc'] for r in rows):.1f} s."]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeat", type=int, default=None,
                   help="interleaved rounds (11; 5 with --quick)")
    p.add_argument("--cells", default=None, help="comma-separated model:function cells")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    if TARGET not in simd.host_targets(compiler_info()[0]):
        log(f"this CPU (or compiler) has no {TARGET}: nothing to measure")
        write(d, "simd_writeout.md", header("Writing a vector batch's outputs (issue 50)",
                                            command("simd_writeout.py", args), t0,
                                            f"Not measured: this CPU runs no {TARGET}."))
        return 0
    cells = args.cells.split(",") if args.cells else CELLS_QUICK if args.quick else CELLS_FULL
    repeat = args.repeat or (5 if args.quick else 11)
    rng = np.random.default_rng(0)
    rows = [r for c in cells if (r := measure(c, repeat, rng)) is not None]
    write(d, "simd_writeout.md", report(rows, args, t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
