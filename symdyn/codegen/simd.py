"""C that evaluates W states at once: every SX instruction of a function becomes one operation on
a vector of W doubles (GCC/clang vector extensions), for the batch wrapper of
:mod:`symdyn.codegen.csource`.

Layout: a block of W states is stored "state-minor": entry ``j`` of an input or output is the W
doubles ``block[j*W : (j+1)*W]``, one per state, so that every load and store of the generated
code is one contiguous vector. The wrapper transposes each block of W states in and out.

Targets (:data:`TARGETS`): ``"avx512"`` (W = 8) and ``"avx2"`` (W = 4, with FMA). Each variant is
compiled into the function's own C file with a ``target`` attribute per function, so the rest of
the library keeps the build's flags: a library built without ``-march=native`` runs on any
x86-64 CPU, and the wrapper takes a variant only where the CPU reports its features
(``__builtin_cpu_supports``), else the scalar loop. ``simd="auto"`` builds the widest variant
the building CPU runs, per function: a function whose outputs are large, in bytes and against its
arithmetic, gets AVX2 where the CPU runs it (:func:`auto_target`); ``simd=("avx512", "avx2")`` builds
both (a library to ship), ``simd=()`` none.

Operations: arithmetic maps to vector operators, sqrt to the target's instruction, sin/cos to a
vector form of the branch-free kernels of :mod:`symdyn.codegen.trig` (lanes with
``|x| >= 1e5``, inf or NaN go to libm, as in the scalar form), fabs/if_else_zero to bit masks and
comparisons to masks converted to 0/1. Other elementary functions run lane by lane through libm
(correct, not fast; none occurs in the dynamics algorithms). A function using an operation not
listed raises :class:`Unsupported`; its batch stays scalar (the manifest says why).
"""
from __future__ import annotations

import math
import platform
import subprocess
from typing import Any, Sequence

import casadi as ca

# name -> (width W, gcc/clang target attribute, __builtin_cpu_supports features, sqrt intrinsic)
TARGETS: dict[str, tuple[int, str, tuple[str, ...], str]] = {
    "avx512": (8, "avx512f,avx512dq,fma", ("avx512f", "avx512dq"), "_mm512_sqrt_pd"),
    "avx2": (4, "avx2,fma", ("avx2", "fma"), "_mm256_sqrt_pd"),
}
SIMD_MODES = ("auto",)      # besides a tuple of target names (empty: none)
# simd="auto" builds AVX2 rather than AVX-512 for functions writing this many bytes a state or
# more (80 doubles) and at least AUTO_NARROW_OUT_PER_OP output entries per SX operation of
# their evaluation: there W = 8 loses to W = 4 or ties, the transposes and stores of the
# outputs dominating (reports/simd_batch.md, "Every vector target this CPU runs": of 30
# functions on an AVX-512 Xeon, AVX2 was faster or within 1 % on all 11 at or above 0.1 entries
# per operation, Christoffel symbols of all five models among them, AVX-512 faster on all 19
# below, panda crba at 0.096 the closest). Functions with much arithmetic per output keep
# AVX-512 (reports/contact_dynamics.md: the contact derivatives of talos and g1, ~0.018
# entries per operation, batch faster with it).
AUTO_NARROW_OUT_BYTES = 640
AUTO_NARROW_OUT_PER_OP = 0.1


class Unsupported(ValueError):
    """The function uses an SX operation that has no vector form here."""


def check_simd(simd: Any) -> tuple[str, ...] | str:
    """``"auto"`` or a tuple of target names (checked); ``TypeError``/``ValueError`` otherwise."""
    if isinstance(simd, str):
        if simd == "auto":
            return simd
        simd = (simd,)
    if simd is None or simd is False:
        return ()
    if not isinstance(simd, (tuple, list)):
        raise TypeError(f"simd must be 'auto', a target name or a tuple of them "
                        f"({', '.join(TARGETS)}), got {simd!r}")
    out = []
    for t in simd:
        if t not in TARGETS:
            raise ValueError(f"unknown simd target {t!r}; choose from {', '.join(TARGETS)}")
        if t not in out:
            out.append(t)
    return tuple(out)


_HOST: dict[str, tuple[str, ...]] = {}


def host_targets(cc: str) -> tuple[str, ...]:
    """The targets of :data:`TARGETS` this CPU runs and ``cc`` compiles, widest first (read from
    the macros of ``cc -march=native``; empty off x86-64 or where that fails)."""
    if cc in _HOST:
        return _HOST[cc]
    found: tuple[str, ...] = ()
    if platform.machine().lower() in ("x86_64", "amd64"):
        try:
            res = subprocess.run([cc, "-march=native", "-E", "-dM", "-x", "c", "-"], input="",
                                 capture_output=True, text=True, timeout=60)
            macros = set(line.split()[1] for line in res.stdout.splitlines()
                         if line.startswith("#define ")) if res.returncode == 0 else set()
        except (OSError, subprocess.SubprocessError):
            macros = set()
        want = {"avx512": {"__AVX512F__", "__AVX512DQ__", "__FMA__"},
                "avx2": {"__AVX2__", "__FMA__"}}
        found = tuple(t for t in TARGETS if want[t] <= macros)
    _HOST[cc] = found
    return found


def resolve_targets(simd: Any, cc: str) -> tuple[str, ...]:
    """The targets a build may compile: ``"auto"`` -> every one the building CPU runs, widest
    first (each function then takes one of them, :func:`auto_target`), or none."""
    simd = check_simd(simd)
    if simd == "auto":
        return host_targets(cc)
    assert isinstance(simd, tuple)
    if simd and platform.machine().lower() not in ("x86_64", "amd64"):
        raise ValueError(f"simd targets {simd} are x86-64 instruction sets; this CPU is "
                         f"{platform.machine()} (use simd='auto' or ())")
    return simd


def auto_target(host: Sequence[str], out_entries: int, work: int) -> tuple[str, ...]:
    """The one variant ``simd="auto"`` builds for a function writing ``out_entries`` doubles a
    state with ``work`` SX operations a state, from the ``host`` targets (widest first): AVX2
    from :data:`AUTO_NARROW_OUT_BYTES` and :data:`AUTO_NARROW_OUT_PER_OP` on, where the host
    runs it; else the widest."""
    if not host:
        return ()
    if (8 * out_entries >= AUTO_NARROW_OUT_BYTES
            and out_entries >= AUTO_NARROW_OUT_PER_OP * work and "avx2" in host):
        return ("avx2",)
    return tuple(host[:1])


def prelude(target: str) -> str:
    """Types and helpers of one target (``symdyn_<t>``, ``SYMDYN_<T>_*``); guarded, so each
    function's C file may include it."""
    W, attr, _, sqrt = TARGETS[target]
    t, T = target, target.upper()
    splat = ", ".join(["c"] * W)
    return f"""
#ifndef SYMDYN_SIMD_{T}
#define SYMDYN_SIMD_{T}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef double symdyn_{t} __attribute__((vector_size({8 * W})));
typedef long long symdyn_{t}i __attribute__((vector_size({8 * W})));
#define SYMDYN_{T}_W {W}
#define SYMDYN_{T}_TARGET __attribute__((target("{attr}")))
#define SYMDYN_{T}_FN static inline __attribute__((always_inline, target("{attr}")))
#define SYMDYN_{T}_SPLAT(c) ((symdyn_{t}){{{splat}}})
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_sqrt(symdyn_{t} x) {{ return (symdyn_{t}){sqrt}(x); }}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_fabs(symdyn_{t} x) {{
  return (symdyn_{t})((symdyn_{t}i)x & 0x7fffffffffffffffLL);
}}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_bool(symdyn_{t}i m) {{   /* lanes of a mask -> 1.0 / 0.0 */
  return (symdyn_{t})(m & (symdyn_{t}i)SYMDYN_{T}_SPLAT(1.0));
}}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_map1(symdyn_{t} x, double (*f)(double)) {{
  symdyn_{t} r; int l;
  for (l = 0; l < {W}; ++l) r[l] = f(x[l]);
  return r;
}}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_map2(symdyn_{t} x, symdyn_{t} y, double (*f)(double, double)) {{
  symdyn_{t} r; int l;
  for (l = 0; l < {W}; ++l) r[l] = f(x[l], y[l]);
  return r;
}}
/* the kernels of symdyn/codegen/trig.py on W lanes: k = nearest integer to x / (pi/2) (its
 * low bits read from the rounding constant's mantissa), r = x - k pi/2 in three parts */
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_trig_(symdyn_{t} x, long long shift) {{
  const symdyn_{t} t = x * 6.36619772367581382433e-01 + 6755399441055744.0;
  const symdyn_{t} k = t - 6755399441055744.0;
  const symdyn_{t} r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11)
                   - k * 2.02226624871116645580e-21;
  const symdyn_{t} z = r * r;
  const symdyn_{t} ps = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * (
      2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08
      + z * 1.58969099521155010221e-10)));
  const symdyn_{t} s = r + (z * r) * (-1.66666666666666324348e-01 + z * ps);
  const symdyn_{t} pc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * (
      2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 + z * (
      2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const symdyn_{t} hz = 0.5 * z, w = 1.0 - hz;
  const symdyn_{t} c = w + (((1.0 - w) - hz) + z * pc);
  const symdyn_{t}i n = (symdyn_{t}i)t + shift;
  const symdyn_{t}i odd = -(n & 1), neg = (n & 2) << 62;
  return (symdyn_{t})((((symdyn_{t}i)s & ~odd) | ((symdyn_{t}i)c & odd)) ^ neg);
}}
SYMDYN_{T}_FN int symdyn_{t}_trig_ok(symdyn_{t} x) {{   /* every lane |x| < 1e5 (not NaN) */
  const symdyn_{t}i m = (symdyn_{t}i)(symdyn_{t}_fabs(x) < 1e5);
  int l, ok = 1;
  for (l = 0; l < {W}; ++l) ok &= m[l] != 0;
  return ok;
}}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_sin(symdyn_{t} x) {{
  return symdyn_{t}_trig_ok(x) ? symdyn_{t}_trig_(x, 0) : symdyn_{t}_map1(x, sin);
}}
SYMDYN_{T}_FN symdyn_{t} symdyn_{t}_cos(symdyn_{t} x) {{
  return symdyn_{t}_trig_ok(x) ? symdyn_{t}_trig_(x, 1) : symdyn_{t}_map1(x, cos);
}}
SYMDYN_{T}_FN double symdyn_{t}_sign_(double x) {{ return x < 0 ? -1.0 : x > 0 ? 1.0 : x; }}
#define SYMDYN_{T}_OK 1
#endif
#endif
"""


# 4 x 4 transpose of r0..r3 (rows) into e0..e3 (columns), in 256-bit registers
_T4 = """
        const __m256d t0_ = _mm256_unpacklo_pd(r0, r1), t1_ = _mm256_unpackhi_pd(r0, r1);
        const __m256d t2_ = _mm256_unpacklo_pd(r2, r3), t3_ = _mm256_unpackhi_pd(r2, r3);
        const __m256d e0 = _mm256_permute2f128_pd(t0_, t2_, 0x20);
        const __m256d e1 = _mm256_permute2f128_pd(t1_, t3_, 0x20);
        const __m256d e2 = _mm256_permute2f128_pd(t0_, t2_, 0x31);
        const __m256d e3 = _mm256_permute2f128_pd(t1_, t3_, 0x31);"""

# 8 x 8 transpose of r0..r7 into e0..e7 in 512-bit registers: pairs within 128-bit lanes, then
# 128-bit lanes gathered twice (0x88: lanes 0, 2 of each source; 0xDD: lanes 1, 3)
_T8 = """
      const __m512d t0_ = _mm512_unpacklo_pd(r0, r1), t1_ = _mm512_unpackhi_pd(r0, r1);
      const __m512d t2_ = _mm512_unpacklo_pd(r2, r3), t3_ = _mm512_unpackhi_pd(r2, r3);
      const __m512d t4_ = _mm512_unpacklo_pd(r4, r5), t5_ = _mm512_unpackhi_pd(r4, r5);
      const __m512d t6_ = _mm512_unpacklo_pd(r6, r7), t7_ = _mm512_unpackhi_pd(r6, r7);
      const __m512d u0_ = _mm512_shuffle_f64x2(t0_, t2_, 0x88), u1_ = _mm512_shuffle_f64x2(t1_, t3_, 0x88);
      const __m512d u2_ = _mm512_shuffle_f64x2(t0_, t2_, 0xDD), u3_ = _mm512_shuffle_f64x2(t1_, t3_, 0xDD);
      const __m512d u4_ = _mm512_shuffle_f64x2(t4_, t6_, 0x88), u5_ = _mm512_shuffle_f64x2(t5_, t7_, 0x88);
      const __m512d u6_ = _mm512_shuffle_f64x2(t4_, t6_, 0xDD), u7_ = _mm512_shuffle_f64x2(t5_, t7_, 0xDD);
      const __m512d e0 = _mm512_shuffle_f64x2(u0_, u4_, 0x88), e4 = _mm512_shuffle_f64x2(u0_, u4_, 0xDD);
      const __m512d e1 = _mm512_shuffle_f64x2(u1_, u5_, 0x88), e5 = _mm512_shuffle_f64x2(u1_, u5_, 0xDD);
      const __m512d e2 = _mm512_shuffle_f64x2(u2_, u6_, 0x88), e6 = _mm512_shuffle_f64x2(u2_, u6_, 0xDD);
      const __m512d e3 = _mm512_shuffle_f64x2(u3_, u7_, 0x88), e7 = _mm512_shuffle_f64x2(u3_, u7_, 0xDD);"""

# ``x - x`` is 0 for finite x and NaN otherwise: the finite check of a pack is one vector sum
_FINITE4 = """
        acc = _mm256_add_pd(acc, _mm256_add_pd(_mm256_sub_pd(r0, r0), _mm256_sub_pd(r1, r1)));
        acc = _mm256_add_pd(acc, _mm256_add_pd(_mm256_sub_pd(r2, r2), _mm256_sub_pd(r3, r3)));"""

_PACK4 = """
  if (m == 4) {
    __m256d acc = _mm256_setzero_pd();
    for (; j + 4 <= n; j += 4) {
      {
        const double* s = src + j;
        const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + n);
        const __m256d r2 = _mm256_loadu_pd(s + 2 * n), r3 = _mm256_loadu_pd(s + 3 * n);""" + _FINITE4 + _T4 + """
        _mm256_store_pd(blk + 4 * j, e0);
        _mm256_store_pd(blk + 4 * j + 4, e1);
        _mm256_store_pd(blk + 4 * j + 8, e2);
        _mm256_store_pd(blk + 4 * j + 12, e3);
      }
    }
    fin = symdyn_sum256(acc);
  }"""

# W = 8: eight entries of the eight states at a time (a 512-bit row load per state, one 8 x 8
# transpose), then groups of four entries per group of four states (4 x 4 transposes) with the
# two groups' halves joined: every entry of the block is one 512-bit store, so that the kernel's
# 512-bit loads are forwarded from single stores. Rows of n = 4 (mod 8) entries all start on
# 32 bytes (rows of an aligned array), where 256-bit accesses never cross a cache line and
# half the 512-bit ones would: those take the groups of four only (in pack and unpack).
_PACK8 = """
  if (m == 8) {
    __m512d acc8 = _mm512_setzero_pd();
    __m256d acc = _mm256_setzero_pd();
    if (n % 8 != 4) for (; j + 8 <= n; j += 8) {
      const double* s = src + j;
      const __m512d r0 = _mm512_loadu_pd(s), r1 = _mm512_loadu_pd(s + n);
      const __m512d r2 = _mm512_loadu_pd(s + 2 * n), r3 = _mm512_loadu_pd(s + 3 * n);
      const __m512d r4 = _mm512_loadu_pd(s + 4 * n), r5 = _mm512_loadu_pd(s + 5 * n);
      const __m512d r6 = _mm512_loadu_pd(s + 6 * n), r7 = _mm512_loadu_pd(s + 7 * n);
      acc8 = _mm512_add_pd(acc8, _mm512_add_pd(
          _mm512_add_pd(_mm512_sub_pd(r0, r0), _mm512_sub_pd(r1, r1)),
          _mm512_add_pd(_mm512_sub_pd(r2, r2), _mm512_sub_pd(r3, r3))));
      acc8 = _mm512_add_pd(acc8, _mm512_add_pd(
          _mm512_add_pd(_mm512_sub_pd(r4, r4), _mm512_sub_pd(r5, r5)),
          _mm512_add_pd(_mm512_sub_pd(r6, r6), _mm512_sub_pd(r7, r7))));""" + _T8 + """
      _mm512_store_pd(blk + 8 * j, e0);
      _mm512_store_pd(blk + 8 * j + 8, e1);
      _mm512_store_pd(blk + 8 * j + 16, e2);
      _mm512_store_pd(blk + 8 * j + 24, e3);
      _mm512_store_pd(blk + 8 * j + 32, e4);
      _mm512_store_pd(blk + 8 * j + 40, e5);
      _mm512_store_pd(blk + 8 * j + 48, e6);
      _mm512_store_pd(blk + 8 * j + 56, e7);
    }
    fin = symdyn_sum256(_mm256_add_pd(_mm512_castpd512_pd256(acc8),
                                      _mm512_extractf64x4_pd(acc8, 1)));
    for (; j + 4 <= n; j += 4) {
      __m256d l0, l1, l2, l3;
      {
        const double* s = src + j;
        const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + n);
        const __m256d r2 = _mm256_loadu_pd(s + 2 * n), r3 = _mm256_loadu_pd(s + 3 * n);""" + _FINITE4 + _T4 + """
        l0 = e0; l1 = e1; l2 = e2; l3 = e3;
      }
      {
        const double* s = src + 4 * n + j;
        const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + n);
        const __m256d r2 = _mm256_loadu_pd(s + 2 * n), r3 = _mm256_loadu_pd(s + 3 * n);""" + _FINITE4 + _T4 + """
        _mm512_store_pd(blk + 8 * j, _mm512_insertf64x4(_mm512_castpd256_pd512(l0), e0, 1));
        _mm512_store_pd(blk + 8 * j + 8, _mm512_insertf64x4(_mm512_castpd256_pd512(l1), e1, 1));
        _mm512_store_pd(blk + 8 * j + 16, _mm512_insertf64x4(_mm512_castpd256_pd512(l2), e2, 1));
        _mm512_store_pd(blk + 8 * j + 24, _mm512_insertf64x4(_mm512_castpd256_pd512(l3), e3, 1));
      }
    }
    fin += symdyn_sum256(acc);
  }"""

_UNPACK4 = """
  if (m == 4) for (; j + 4 <= n; j += 4) {
    {
      const double* b = blk + 4 * j;
      const __m256d r0 = _mm256_load_pd(b), r1 = _mm256_load_pd(b + 4);
      const __m256d r2 = _mm256_load_pd(b + 8), r3 = _mm256_load_pd(b + 12);
      double* d = dst + j;""" + _T4 + """
      _mm256_storeu_pd(d, e0);
      _mm256_storeu_pd(d + n, e1);
      _mm256_storeu_pd(d + 2 * n, e2);
      _mm256_storeu_pd(d + 3 * n, e3);
    }
  }"""

# W = 8: eight entries at a time (one 8 x 8 transpose, a 512-bit store per state), then groups
# of four entries, each entry's vector split into its two groups of four states (n = 4 mod 8:
# groups of four only, as in pack)
_UNPACK8 = """
  if (m == 8) {
    if (n % 8 != 4) for (; j + 8 <= n; j += 8) {
      const double* b = blk + 8 * j;
      double* d = dst + j;
      const __m512d r0 = _mm512_load_pd(b), r1 = _mm512_load_pd(b + 8);
      const __m512d r2 = _mm512_load_pd(b + 16), r3 = _mm512_load_pd(b + 24);
      const __m512d r4 = _mm512_load_pd(b + 32), r5 = _mm512_load_pd(b + 40);
      const __m512d r6 = _mm512_load_pd(b + 48), r7 = _mm512_load_pd(b + 56);""" + _T8 + """
      _mm512_storeu_pd(d, e0);
      _mm512_storeu_pd(d + n, e1);
      _mm512_storeu_pd(d + 2 * n, e2);
      _mm512_storeu_pd(d + 3 * n, e3);
      _mm512_storeu_pd(d + 4 * n, e4);
      _mm512_storeu_pd(d + 5 * n, e5);
      _mm512_storeu_pd(d + 6 * n, e6);
      _mm512_storeu_pd(d + 7 * n, e7);
    }
    for (; j + 4 <= n; j += 4) {
      const double* b = blk + 8 * j;
      const __m512d v0 = _mm512_load_pd(b), v1 = _mm512_load_pd(b + 8);
      const __m512d v2 = _mm512_load_pd(b + 16), v3 = _mm512_load_pd(b + 24);
      {
        const __m256d r0 = _mm512_castpd512_pd256(v0), r1 = _mm512_castpd512_pd256(v1);
        const __m256d r2 = _mm512_castpd512_pd256(v2), r3 = _mm512_castpd512_pd256(v3);
        double* d = dst + j;""" + _T4 + """
        _mm256_storeu_pd(d, e0);
        _mm256_storeu_pd(d + n, e1);
        _mm256_storeu_pd(d + 2 * n, e2);
        _mm256_storeu_pd(d + 3 * n, e3);
      }
      {
        const __m256d r0 = _mm512_extractf64x4_pd(v0, 1), r1 = _mm512_extractf64x4_pd(v1, 1);
        const __m256d r2 = _mm512_extractf64x4_pd(v2, 1), r3 = _mm512_extractf64x4_pd(v3, 1);
        double* d = dst + 4 * n + j;""" + _T4 + """
        _mm256_storeu_pd(d, e0);
        _mm256_storeu_pd(d + n, e1);
        _mm256_storeu_pd(d + 2 * n, e2);
        _mm256_storeu_pd(d + 3 * n, e3);
      }
    }
  }"""

# the whole-block paths of pack and unpack, by width
_PACK_FULL = {4: _PACK4, 8: _PACK8}
_UNPACK_FULL = {4: _UNPACK4, 8: _UNPACK8}


def io_source(targets: Sequence[str]) -> str:
    """For the batch wrapper: ``symdyn_<t>_pack(src, n, blk, m)`` (``m`` consecutive states'
    vectors of ``n`` entries, rows of ``src``, into a state-minor block; lanes past ``m`` repeat
    the last state; returns 1 when every entry of the ``m`` states is finite, else 0) and
    ``symdyn_<t>_unpack(blk, n, dst, m)`` (the first ``m`` lanes back into rows of ``dst``)."""
    parts = []
    for t in targets:
        W = TARGETS[t][0]
        T = t.upper()
        parts += [prelude(t), f"#ifdef SYMDYN_{T}_OK", f"""
SYMDYN_{T}_FN double symdyn_{t}_sum256(__m256d a) {{
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}}
SYMDYN_{T}_TARGET static int symdyn_{t}_pack(const double* src, long long n, double* blk, int m) {{
  long long j = 0;
  int l;
  double fin = 0.0;{_PACK_FULL[W].replace("symdyn_sum256", f"symdyn_{t}_sum256")}
  if (j < n) {{   /* the rest an entry at a time, each built in a register and stored whole */
    const double* row[{W}];
    symdyn_{t} acc = SYMDYN_{T}_SPLAT(0.0);
    for (l = 0; l < {W}; ++l) row[l] = src + (l < m ? l : m - 1) * n;
    for (; j < n; ++j) {{
      const symdyn_{t} v = {{{", ".join(f"row[{l}][j]" for l in range(W))}}};
      *(symdyn_{t}*)(blk + j * {W}) = v;
      acc += v - v;
    }}
    for (l = 0; l < {W}; ++l) fin += acc[l];
  }}
  return fin == 0.0;
}}
SYMDYN_{T}_TARGET static void symdyn_{t}_unpack(const double* blk, long long n, double* dst, int m) {{
  long long j = 0;
  int l;{_UNPACK_FULL[W]}
  for (; j < n; ++j) for (l = 0; l < m; ++l) dst[l * n + j] = blk[j * {W} + l];
}}
#endif"""]
    return "\n".join(parts)


_BINARY = {ca.OP_ADD: "+", ca.OP_SUB: "-", ca.OP_MUL: "*", ca.OP_DIV: "/"}
_COMPARE = {ca.OP_LT: "<", ca.OP_LE: "<=", ca.OP_EQ: "==", ca.OP_NE: "!="}
_LIBM1 = {ca.OP_EXP: "exp", ca.OP_LOG: "log", ca.OP_TAN: "tan", ca.OP_ASIN: "asin",
          ca.OP_ACOS: "acos", ca.OP_ATAN: "atan", ca.OP_SINH: "sinh", ca.OP_COSH: "cosh",
          ca.OP_TANH: "tanh", ca.OP_ASINH: "asinh", ca.OP_ACOSH: "acosh", ca.OP_ATANH: "atanh",
          ca.OP_FLOOR: "floor", ca.OP_CEIL: "ceil", ca.OP_ERF: "erf", ca.OP_LOG1P: "log1p",
          ca.OP_EXPM1: "expm1", ca.OP_SIGN: "symdyn_{t}_sign_"}
_LIBM2 = {ca.OP_POW: "pow", ca.OP_CONSTPOW: "pow", ca.OP_ATAN2: "atan2", ca.OP_FMIN: "fmin",
          ca.OP_FMAX: "fmax", ca.OP_FMOD: "fmod", ca.OP_COPYSIGN: "copysign",
          ca.OP_HYPOT: "hypot"}
_OP_NAMES = {getattr(ca, n): n[3:].lower() for n in dir(ca) if n.startswith("OP_")}


def _const(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def statements(f: ca.Function, target: str, *, out_index=None, fast_trig: bool = True
               ) -> tuple[list[str], int]:
    """The body of ``f`` on vectors: (C statements over locals ``aK``, number of locals).
    ``arg[i][j]`` / ``res[o][k]`` are vector pointers; output entry ``k`` of output ``o`` is
    written at ``out_index(o, k)`` (default ``k``)."""
    t = target
    V = f"symdyn_{t}"
    T = t.upper()
    lines: list[str] = []
    n_out = f.n_out()
    written = [[0] * f.nnz_out(o) for o in range(n_out)]
    for o in range(n_out):
        if not f.sparsity_out(o).is_dense():
            raise Unsupported(f"output {o} of {f.name()} is sparse")
    for k in range(f.n_instructions()):
        op = f.instruction_id(k)
        ins = f.instruction_input(k)
        outs = f.instruction_output(k)
        if op == ca.OP_INPUT:
            lines.append(f"a{outs[0]}=arg[{ins[0]}][{ins[1]}];")
        elif op == ca.OP_OUTPUT:
            o, j = outs
            written[o][j] += 1
            at = j if out_index is None else out_index(o, j)
            lines.append(f"res[{o}][{at}]=a{ins[0]};")
        elif op == ca.OP_CONST:
            lines.append(f"a{outs[0]}=SYMDYN_{T}_SPLAT({_const(f.instruction_constant(k))});")
        elif op in _BINARY:
            lines.append(f"a{outs[0]}=a{ins[0]}{_BINARY[op]}a{ins[1]};")
        elif op == ca.OP_NEG:
            lines.append(f"a{outs[0]}=-a{ins[0]};")
        elif op == ca.OP_TWICE:
            lines.append(f"a{outs[0]}=a{ins[0]}+a{ins[0]};")
        elif op == ca.OP_SQ:
            lines.append(f"a{outs[0]}=a{ins[0]}*a{ins[0]};")
        elif op == ca.OP_INV:
            lines.append(f"a{outs[0]}=SYMDYN_{T}_SPLAT(1.0)/a{ins[0]};")
        elif op == ca.OP_ASSIGN:
            lines.append(f"a{outs[0]}=a{ins[0]};")
        elif op == ca.OP_SQRT:
            lines.append(f"a{outs[0]}=symdyn_{t}_sqrt(a{ins[0]});")
        elif op == ca.OP_FABS:
            lines.append(f"a{outs[0]}=symdyn_{t}_fabs(a{ins[0]});")
        elif op in (ca.OP_SIN, ca.OP_COS):
            fn = "sin" if op == ca.OP_SIN else "cos"
            lines.append(f"a{outs[0]}=symdyn_{t}_{fn}(a{ins[0]});" if fast_trig else
                         f"a{outs[0]}=symdyn_{t}_map1(a{ins[0]}, {fn});")
        elif op in _COMPARE:
            lines.append(f"a{outs[0]}=symdyn_{t}_bool(({V}i)(a{ins[0]}{_COMPARE[op]}a{ins[1]}));")
        elif op == ca.OP_NOT:
            lines.append(f"a{outs[0]}=symdyn_{t}_bool(({V}i)(a{ins[0]}==0.0));")
        elif op == ca.OP_AND:
            lines.append(f"a{outs[0]}=symdyn_{t}_bool(({V}i)(a{ins[0]}!=0.0)&({V}i)(a{ins[1]}!=0.0));")
        elif op == ca.OP_OR:
            lines.append(f"a{outs[0]}=symdyn_{t}_bool(({V}i)(a{ins[0]}!=0.0)|({V}i)(a{ins[1]}!=0.0));")
        elif op == ca.OP_IF_ELSE_ZERO:
            lines.append(f"a{outs[0]}=({V})(({V}i)(a{ins[0]}!=0.0)&({V}i)a{ins[1]});")
        elif op in _LIBM1:
            lines.append(f"a{outs[0]}=symdyn_{t}_map1(a{ins[0]}, {_LIBM1[op].format(t=t)});")
        elif op in _LIBM2:
            lines.append(f"a{outs[0]}=symdyn_{t}_map2(a{ins[0]}, a{ins[1]}, {_LIBM2[op]});")
        else:
            raise Unsupported(f"{f.name()}: SX operation {_OP_NAMES.get(op, op)!r} has no "
                              "vector form")
    for o, counts in enumerate(written):
        if any(c != 1 for c in counts):
            raise Unsupported(f"{f.name()}: output {o} is not written exactly once per entry")
    return lines, f.sz_w()


def vector_function(f: ca.Function, name: str, target: str, *, out_index=None,
                    fast_trig: bool = True, static: bool = False) -> str:
    """``void <name>(const double* const* arg, double* const* res, double* w)``: ``f`` on W
    states, each ``arg[i]`` / ``res[o]`` a state-minor block aligned to the vector size (``w``
    is unused: everything lives in locals)."""
    body, n_locals = statements(f, target, out_index=out_index, fast_trig=fast_trig)
    t, T = target, target.upper()
    decl = ", ".join(f"a{i}" for i in range(n_locals))
    head = "static " if static else ""
    return "\n".join([
        f"{head}SYMDYN_{T}_TARGET void {name}(const double* const* arg_, double* const* res_, "
        "double* w) {",
        f"  const symdyn_{t}* const* arg = (const symdyn_{t}* const*)arg_;",
        f"  symdyn_{t}* const* res = (symdyn_{t}* const*)res_;",
        (f"  symdyn_{t} {decl};" if n_locals else ""),
        *("  " + s for s in body),
        "  (void)arg; (void)res; (void)w;",
        "}", ""])


def function_source(f: ca.Function, fname: str, targets: Sequence[str], *, out_index=None,
                    fast_trig: bool = True) -> str:
    """The vector variants of an unrolled function, appended to its C file: for each target
    ``t``, ``<fname>_<t>(arg, res, w)``, ``<fname>_<t>_sz_w()`` (doubles of ``w``: 0) and
    ``<fname>_<t>_prepare(w)`` (nothing to prepare)."""
    parts = []
    for t in targets:
        parts += [prelude(t), f"#ifdef SYMDYN_{t.upper()}_OK",
                  vector_function(f, f"{fname}_{t}", t, out_index=out_index, fast_trig=fast_trig),
                  f"long long {fname}_{t}_sz_w(void) {{ return 0; }}",
                  f"void {fname}_{t}_prepare(double* w) {{ (void)w; }}", "#endif"]
    return "\n".join(parts)
