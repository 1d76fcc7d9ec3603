"""Sine and cosine of float64 arrays in elementwise ``jax.numpy`` arithmetic (vectorized by XLA).

XLA's CPU backend evaluates ``sin`` and ``cos`` of float64 arrays by calling the C library once
per element (~10 ns each on the benchmark machine): for panda crba on 1e5 states 40 % of the
time. :func:`sincos` computes both from one argument reduction with polynomials, arithmetic XLA
fuses and vectorizes.

Method (the classic one of fdlibm's ``__ieee754_rem_pio2`` / ``__kernel_sin`` /
``__kernel_cos``): ``x = n pi/2 + r`` with ``n = round(2x / pi)`` and ``r`` carried as
``y0 + y1`` from three Cody-Waite steps with pi/2 split into 33-bit parts (each ``n * part``
exact for ``|n| < 2^20``); then ``sin r`` and ``cos r`` on ``|r| <= pi/4`` by odd / even minimax
polynomials of degree 13 / 14 with ``y1`` as a first-order correction, and the quadrant ``n mod
4`` picks signs and the order. Within 1 ulp of the correctly rounded values for ``|x| <=``
:data:`LIMIT`; beyond it the reduction is not exact, and callers use ``jnp.sin`` / ``jnp.cos``.
"""
from __future__ import annotations

import jax.numpy as jnp

__all__ = ["LIMIT", "sincos"]

LIMIT = 2.0 ** 19 * 1.5707963267948966    # |x| up to which n * (33-bit part of pi/2) is exact

_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e+00      # first 33 bits of pi/2
_PIO2_2 = 6.07710050630396597660e-11      # second 33 bits
_PIO2_2T = 2.02226624879595063154e-21     # pi/2 - (_PIO2_1 + _PIO2_2)
_PIO2_3 = 2.02226624871116645580e-21      # third 33 bits
_PIO2_3T = 8.47842766036889956997e-32     # pi/2 - (_PIO2_1 + _PIO2_2 + _PIO2_3)
# sin r = r + r^3 (S1 + r^2 (S2 + ...)), cos r = 1 - r^2/2 + r^4 (C1 + r^2 (C2 + ...))
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _horner(z, coefficients):
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = c + z * acc
    return acc


def _reduced(x):
    """``(n, y0, y1)``: ``x = n pi/2 + y0 + y1`` (``|y0 + y1| <= pi/4`` about)."""
    n = jnp.round(x * _TWO_OVER_PI)
    r = x - n * _PIO2_1
    t = r                                            # refined twice more (no early exit:
    w = n * _PIO2_2                                  # the steps cost less than a branch)
    r = t - w
    w = n * _PIO2_2T - ((t - r) - w)
    t = r
    w = n * _PIO2_3
    r = t - w
    w = n * _PIO2_3T - ((t - r) - w)
    y0 = r - w
    return n, y0, (r - y0) - w


def sincos(x):
    """``(sin x, cos x)`` of a float64 array, elementwise (see the module docstring); exact to 1
    ulp for ``|x| <= LIMIT``."""
    n, y0, y1 = _reduced(x)
    z = y0 * y0
    v = z * y0
    s = y0 - ((z * (0.5 * y1 - v * _horner(z, _S[1:])) - y1) - v * _S[0])
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + (z * z * _horner(z, _C) - y0 * y1))
    q = jnp.mod(n, 4.0)
    sin = jnp.where(q == 0, s, jnp.where(q == 1, c, jnp.where(q == 2, -s, -c)))
    cos = jnp.where(q == 0, c, jnp.where(q == 1, -s, jnp.where(q == 2, -c, s)))
    return sin, cos
