"""CasADi SX backend: casadi.SX everywhere; vectors are (n, 1) columns; rank-3 results are
:class:`~symdyn.backends.tensor.Tensor3` of SX pages.

Zeros are structural (casadi.SX(n, m)) so that products skip them and graphs stay small.
"""
from __future__ import annotations

import contextlib
import math

import casadi as ca
import numpy as np

from . import tensor as _tensor
from ._plain import plain_hooks
from ._series import ONE_MINUS_COS_OVER_X2, SIN_OVER_X, THRESHOLD, X_MINUS_SIN_OVER_X3, horner
from .tensor import assign3, page, pages, set3  # noqa: F401

name = "casadi"
call_step, model_constants = plain_hooks(__name__)   # hooks: symdyn.backends.protocol
numeric = False         # expressions, not values: values cannot be checked at entry
graph = True            # builds an SX graph (``jacobian`` available)
ndarray = ca.SX

sin, cos, sqrt = ca.sin, ca.cos, ca.sqrt
sign = ca.sign  # -1, 0 or 1 (friction_torque)
atan2 = ca.atan2


def where_positive(x, a, b):
    """``a`` where ``x > 0``, else ``b`` (scalars; ``if_else``, both branches evaluated)."""
    return ca.if_else(x > 0, a, b)


def zeros(n: int, m: int | None = None):
    return ca.SX(n, 1 if m is None else m)


def eye(n: int):
    return ca.SX.eye(n)


def matrix(rows):
    return ca.vertcat(*[ca.horzcat(*r) for r in rows])


def vector(entries):
    return ca.vertcat(*entries)


def const(x):
    if isinstance(x, ca.SX):
        return x
    arr = np.array(x, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    return ca.SX(ca.DM(arr))


def rows(x, a: int, b: int):
    return x[a:b, :]


def cols(x, a: int, b: int):
    return x[:, a:b]


def vcat(parts):
    if not len(parts):   # a model with nv = 0: the empty SX column (vertcat() would be a DM)
        return ca.SX(0, 1)
    return ca.vertcat(*parts)


def hcat(parts):
    return ca.horzcat(*parts)


def block(blocks):
    if not len(blocks):   # a model with nv = 0: the 0 x 0 SX matrix
        return ca.SX(0, 0)
    return ca.blockcat(blocks)


def inv(A):
    if A.shape == (1, 1):
        return 1 / A
    if A.shape[0] <= 3:
        return ca.inv_minor(A)
    return ca.solve(A, ca.SX.eye(A.shape[0]))


def solve(A, b):
    return ca.solve(A, b)


def dot(a, b):
    return ca.dot(a, b)


def tensor3(n1: int, n2: int, n3: int):
    """A zero :class:`~symdyn.backends.tensor.Tensor3` (n1, n2, n3) of structurally zero SX
    pages."""
    return _tensor.tensor3(ca.SX, n1, n2, n3)


def _numbers(x, what: str, expect: str) -> np.ndarray:
    """float array of a non-SX input (numbers, arrays, casadi.DM); complex is refused."""
    if isinstance(x, ca.DM):
        return np.array(x.full(), dtype=float)
    if isinstance(x, (complex, np.complexfloating)):
        raise TypeError(f"{what} is complex ({x!r}); symdyn works with real numbers")
    if x is None:
        raise TypeError(f"{what} must be a casadi.SX or {expect} numbers, got None")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a casadi.SX or {expect} numbers") from exc
    if raw.dtype.kind == "c" or (raw.dtype == object and any(
            isinstance(e, (complex, np.complexfloating)) for e in raw.ravel())):
        raise TypeError(f"{what} is complex; symdyn works with real numbers")
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a casadi.SX or {expect} numbers, "
                        f"got {type(x).__name__}") from exc


def _check_constants(m, what: str, matrix: bool = False) -> None:
    """NaN/inf in the constant entries of an SX (symbolic entries pass)."""
    if m.is_constant():
        arr = np.array(ca.DM(m).full(), dtype=float)
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, j = bad[0]
            at = f"[{i}, {j}]" if matrix else f"index {i}"
            raise ValueError(f"{what} contains NaN or inf at {at}")
        return
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            e = m[i, j]
            if e.is_constant() and not math.isfinite(float(e)):
                raise ValueError(f"{what} contains NaN or inf at "
                                 f"{f'[{i}, {j}]' if matrix else f'index {i}'}")


def _as_sx(x, what: str, expect: str):
    if isinstance(x, ca.MX):
        raise TypeError(f"{what} is a casadi.MX; symdyn's CasADi backend works on casadi.SX")
    if isinstance(x, ca.SX):
        return x
    arr = _numbers(x, what, expect)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be {expect} numbers, got an array of shape {arr.shape}")
    return ca.SX(ca.DM(arr))


def to_vector(x, n: int, what: str):
    v = _as_sx(x, what, f"a vector of {n}")
    if v.shape[0] == 1 and v.shape[1] != 1:
        v = v.T
    if v.shape != (n, 1):
        raise ValueError(f"{what} must have shape ({n}, 1), got {v.shape}")
    _check_constants(v, what)
    return v


def to_matrix(x, shape: tuple[int, int], what: str):
    m = _as_sx(x, what, f"a {shape[0]} x {shape[1]} matrix of")
    if m.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {m.shape}")
    _check_constants(m, what, matrix=True)
    return m


def assign(x, rows, cols, value):
    """x[rows, cols] = value (in place; rows, cols: ints or slices); returns x."""
    x[rows, cols] = value
    return x


def concrete(x) -> bool:
    """SX expressions: values cannot be inspected (checks by value are skipped)."""
    return False


def constant_scope():
    """Context in which model constants are built (a no-op here; JAX: eager evaluation)."""
    return contextlib.nullcontext()


def is_zero(x) -> bool:
    return x.nnz() == 0 or all(ca.SX(e).is_zero() for e in ca.vertsplit(ca.vec(x)))


def to_numpy(x):
    """Float array of a constant SX (or Tensor3 of them)."""
    if isinstance(x, _tensor.Tensor3):
        return np.stack([to_numpy(p) for p in x.pages], axis=2).reshape(x.shape)
    return np.array(ca.DM(ca.evalf(x)), dtype=float)


def jacobian(y, x):
    """d y / d x for SX columns y (m) and x (n, pure symbols): an m x n SX."""
    return ca.jacobian(y, x)


def is_symbol(x) -> bool:
    """True for a pure SX symbol (a valid differentiation variable)."""
    return ca.SX(x).is_symbolic()


def skew(w):
    """3x3 cross-product matrix of a 3-vector (casadi.skew: one call instead of 9 slices)."""
    return ca.skew(w)


def _safe(coeffs, exact, label):
    """A smooth graph of x2 valid at 0: the series below THRESHOLD, else the closed form evaluated
    at a point kept away from 0 (so neither branch nor its derivative is NaN/inf anywhere)."""
    def f(x2):
        small = x2 < THRESHOLD
        far = ca.if_else(small, 1.0, x2)
        return ca.if_else(small, horner(coeffs, x2), exact(far))
    f.__name__ = label
    f.__doc__ = (f"{label.replace('_', ' ')} of x2 = x^2 as an SX: series below x2 = {THRESHOLD}, "
                 "the closed form above; finite value and derivatives at x2 = 0.")
    return f


def _sin_over_x(x2):
    x = ca.sqrt(x2)
    return ca.sin(x) / x


def _one_minus_cos_over_x2(x2):
    s = ca.sin(ca.sqrt(x2) / 2)
    return 2 * s * s / x2                     # 2 sin^2(x/2) / x^2: no cancellation


def _x_minus_sin_over_x3(x2):
    x = ca.sqrt(x2)
    return (x - ca.sin(x)) / (x2 * x)


sin_over_x = _safe(SIN_OVER_X, _sin_over_x, "sin_over_x")
one_minus_cos_over_x2 = _safe(ONE_MINUS_COS_OVER_X2, _one_minus_cos_over_x2,
                              "one_minus_cos_over_x2")
x_minus_sin_over_x3 = _safe(X_MINUS_SIN_OVER_X3, _x_minus_sin_over_x3, "x_minus_sin_over_x3")
