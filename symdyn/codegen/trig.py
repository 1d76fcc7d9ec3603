"""Branch-free sin/cos for the generated C (``build(..., fast_trig=True)``, the default).

Every revolute, helical and planar joint costs one sin and one cos of its angle. gcc turns each
pair into a call of glibc's ``sincos``, whose branches depend on the argument's range: with joint
angles spread over [0, 2 pi) they mispredict, and the calls also split the straight-line code
that the register allocator works on (the figures, batched over random states, are in the
summary of reports/fastpath.md).

The replacement inlines the classic fdlibm/FreeBSD method: Cody-Waite reduction of x by pi/2 in
three parts (exact products for |x| < 1e5), the kernels ``__kernel_sin``/``__kernel_cos`` on
[-pi/4, pi/4] (< 1 ulp), and the quadrant applied with bit operations instead of branches.
Arguments with |x| >= 1e5, inf and NaN go to libm (a branch that is never taken for joint
angles), so NaN/inf propagate as with libm (sin(-0.0) returns +0.0). gcc merges the shared reduction and polynomials of
``symdyn_sin(a)`` and ``symdyn_cos(a)``. Do not compile with -ffast-math (it would reassociate
the compensated sums).
"""
from __future__ import annotations

import re

PRELUDE = r"""
/* symdyn: sin/cos without data-dependent branches (see symdyn/codegen/trig.py). */
#include <stdint.h>
#include <string.h>
#if defined(__GNUC__)
#define SYMDYN_TRIG_INLINE static inline __attribute__((always_inline))
#else
#define SYMDYN_TRIG_INLINE static inline
#endif
SYMDYN_TRIG_INLINE double symdyn_trig_(double x, int64_t shift) {
  /* k = nearest integer to x / (pi/2); r = x - k pi/2 in three parts (fdlibm pio2_1..3) */
  const double k = (x * 6.36619772367581382433e-01 + 6755399441055744.0) - 6755399441055744.0;
  const double r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11)
                   - k * 2.02226624871116645580e-21;
  const double z = r * r;
  const double ps = 8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04 + z * (
      2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08
      + z * 1.58969099521155010221e-10)));
  const double s = r + (z * r) * (-1.66666666666666324348e-01 + z * ps);
  const double pc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * (
      2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 + z * (
      2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  const double c = w + (((1.0 - w) - hz) + z * pc);
  /* quadrant n: sin(x) = [s, c, -s, -c][n & 3]; cos(x) = sin(x + pi/2): n + 1 */
  const int64_t n = (int64_t)k + shift;
  const uint64_t odd = (uint64_t)0 - (uint64_t)(n & 1), neg = (uint64_t)(n & 2) << 62;
  uint64_t bs, bc, b;
  double out;
  memcpy(&bs, &s, 8);
  memcpy(&bc, &c, 8);
  b = ((bs & ~odd) | (bc & odd)) ^ neg;
  memcpy(&out, &b, 8);
  return out;
}
SYMDYN_TRIG_INLINE double symdyn_sin(double x) { return fabs(x) < 1e5 ? symdyn_trig_(x, 0) : sin(x); }
SYMDYN_TRIG_INLINE double symdyn_cos(double x) { return fabs(x) < 1e5 ? symdyn_trig_(x, 1) : cos(x); }
"""

_CALL = re.compile(r"=(sin|cos)\((a\d+)\);")
_MATH_H = "#include <math.h>\n"


def use_fast_trig(source: str) -> tuple[str, int]:
    """CasADi-generated C with every ``aN=sin(aM);`` / ``aN=cos(aM);`` statement calling the
    inline functions of :data:`PRELUDE` instead of libm; returns (source, replacements)."""
    new, count = _CALL.subn(r"=symdyn_\1(\2);", source)
    if count == 0:
        return source, 0
    at = new.find(_MATH_H)
    if at < 0:
        raise RuntimeError("generated C has no '#include <math.h>' to put the trig prelude after")
    at += len(_MATH_H)
    return new[:at] + PRELUDE + new[at:], count
