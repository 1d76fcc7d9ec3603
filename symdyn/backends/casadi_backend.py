"""CasADi SX backend: casadi.SX everywhere; vectors are (n, 1) columns.

Zeros are structural (casadi.SX(n, m)) so that products skip them and graphs stay small.
"""
from __future__ import annotations

import casadi as ca
import numpy as np

name = "casadi"
symbolic = True
ndarray = ca.SX

sin, cos, sqrt = ca.sin, ca.cos, ca.sqrt


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
    return ca.vertcat(*parts)


def hcat(parts):
    return ca.horzcat(*parts)


def block(blocks):
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
    """Gamma-like tensors are lists of n3 SX matrices (n1 x n2): T[k] = T[:, :, k]."""
    return [ca.SX(n1, n2) for _ in range(n3)]


def to_vector(x, n: int, what: str):
    if isinstance(x, ca.MX):
        raise TypeError(f"{what} is a casadi.MX; symdyn's CasADi backend works on casadi.SX")
    if isinstance(x, ca.SX):
        v = x
    else:
        try:
            arr = np.asarray(x, dtype=float).reshape(-1, 1)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be a casadi.SX or numbers") from exc
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{what} contains NaN or inf")
        v = ca.SX(ca.DM(arr))
    if v.shape[0] == 1 and v.shape[1] != 1:
        v = v.T
    if v.shape != (n, 1):
        raise ValueError(f"{what} must have shape ({n}, 1), got {v.shape}")
    return v


def to_matrix(x, shape: tuple[int, int], what: str):
    m = x if isinstance(x, ca.SX) else ca.SX(ca.DM(np.asarray(x, dtype=float)))
    if m.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {m.shape}")
    return m


def is_zero(x) -> bool:
    return x.nnz() == 0 or all(ca.SX(e).is_zero() for e in ca.vertsplit(ca.vec(x)))


def to_numpy(x):
    return np.array(ca.DM(ca.evalf(x)), dtype=float)


def jacobian(y, x):
    """d y / d x for SX columns y (m) and x (n, pure symbols): an m x n SX."""
    return ca.jacobian(y, x)


def set3(T, i: int, j: int, k: int, value) -> None:
    """T[i, j, k] = value for a tensor from :func:`tensor3` (pages: T[k][i, j])."""
    T[k][i, j] = value


def is_symbol(x) -> bool:
    """True for a pure SX symbol (a valid differentiation variable)."""
    return ca.SX(x).is_symbolic()


def skew(w):
    """3x3 cross-product matrix of a 3-vector (casadi.skew: one call instead of 9 slices)."""
    return ca.skew(w)
