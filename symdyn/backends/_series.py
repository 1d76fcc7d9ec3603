"""Power series in x2 = x^2 of the numerically delicate functions of a rotation angle x.

Each backend offers ``sin_over_x(x2) = sin(x)/x``, ``one_minus_cos_over_x2(x2) = (1 - cos x)/x^2``
and ``x_minus_sin_over_x3(x2) = (x - sin x)/x^3``, all of x2 = x^2 >= 0 (a sum of squares, so
that no square root is taken of 0). NumPy and CasADi use these series for ``x2 < THRESHOLD``:

* the closed forms cancel: (x - sin x)/x^3 computed directly has a relative error of about
  6 eps/x2 (2.5e-15 measured at x2 = 0.1, 1e-9 at x2 = 1e-6), which falls to eps only from x2 ~ 4;
  (1 - cos x)/x^2 is evaluated as 2 sin(x/2)^2/x^2, which does not cancel;
* a graph built with sqrt(x2) has an infinite (NaN) derivative at x2 = 0.

Fourteen terms leave a remainder below x2^14/29! < 3e-23 for x2 < 4.
"""
from __future__ import annotations

from math import factorial

THRESHOLD = 4.0
_TERMS = 14

SIN_OVER_X = tuple((-1) ** n / factorial(2 * n + 1) for n in range(_TERMS))
ONE_MINUS_COS_OVER_X2 = tuple((-1) ** n / factorial(2 * n + 2) for n in range(_TERMS))
X_MINUS_SIN_OVER_X3 = tuple((-1) ** n / factorial(2 * n + 3) for n in range(_TERMS))


def horner(coeffs, x2):
    """sum_n coeffs[n] x2^n (works on floats and on graph scalars)."""
    out = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        out = out * x2 + c
    return out
