"""SymEngine backend (optional, ``pip install symengine``): a fast SymPy-compatible core.

Arrays are ``symengine.DenseMatrix``; vectors are (n, 1) columns. Results convert to SymPy with
``sympy.Matrix(result)`` (or ``sympy.sympify``) for simplification and printing.
"""
from __future__ import annotations

import numbers

import symengine as se

name = "symengine"
symbolic = True
ndarray = se.DenseMatrix

sin, cos, sqrt = se.sin, se.cos, se.sqrt


def zeros(n: int, m: int | None = None):
    return se.zeros(n, 1 if m is None else m)


def eye(n: int):
    return se.eye(n)


def matrix(rows):
    return se.DenseMatrix([list(r) for r in rows])


def vector(entries):
    return se.DenseMatrix([[e] for e in entries])


def _number(x):
    if isinstance(x, se.Basic):
        return x
    if isinstance(x, numbers.Integral):
        return se.Integer(int(x))
    if type(x).__module__.split(".")[0] == "sympy":
        return se.sympify(x)
    xf = float(x)
    return se.Integer(int(xf)) if xf.is_integer() else se.RealDouble(xf)


def const(x):
    if hasattr(x, "tolist"):
        x = x.tolist()
    elif type(x).__module__.split(".")[0] == "sympy":
        x = [[x[i, j] for j in range(x.shape[1])] for i in range(x.shape[0])]
    rows_ = [list(r) if isinstance(r, (list, tuple)) else [r] for r in x]
    return se.DenseMatrix([[_number(e) for e in r] for r in rows_])


def rows(x, a: int, b: int):
    return x[a:b, :]


def cols(x, a: int, b: int):
    return x[:, a:b]


def vcat(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out.col_join(p)
    return out


def hcat(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out.row_join(p)
    return out


def block(blocks):
    return vcat([hcat(r) for r in blocks])


def inv(A):
    if A.shape == (1, 1):
        return se.DenseMatrix([[1 / A[0, 0]]])
    return A.inv()


def solve(A, b):
    return A.LUsolve(b)


def dot(a, b):
    return (a.T @ b)[0, 0]


def tensor3(n1: int, n2: int, n3: int):
    """Lists of n3 DenseMatrix pages (n1 x n2): T[k] = T[:, :, k]."""
    return [se.zeros(n1, n2) for _ in range(n3)]


def to_vector(x, n: int, what: str):
    if isinstance(x, se.DenseMatrix):
        m = x
    else:
        try:
            items = list(x) if not hasattr(x, "tolist") else list(x.tolist())
            m = se.DenseMatrix([[_number(e)] for e in items])
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be a vector of {n} SymEngine expressions or numbers") from exc
    if m.shape[0] == 1 and m.shape[1] != 1:
        m = m.T
    if m.shape != (n, 1):
        raise ValueError(f"{what} must have {n} entries, got shape {m.shape}")
    for k in range(n):
        e = m[k, 0]
        if e.has(se.nan) or e.has(se.oo) or e.has(se.zoo):
            raise ValueError(f"{what} contains NaN or inf at index {k}")
    return m


def to_matrix(x, shape: tuple[int, int], what: str):
    m = const(x)
    if m.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {m.shape}")
    return m


def is_zero(x) -> bool:
    return all(x[i, j] == 0 for i in range(x.shape[0]) for j in range(x.shape[1]))


def to_numpy(x):
    import numpy as np

    return np.array([[float(x[i, j]) for j in range(x.shape[1])] for i in range(x.shape[0])])


def jacobian(y, x):
    return y.jacobian(x)


def set3(T, i: int, j: int, k: int, value) -> None:
    """T[i, j, k] = value for a tensor from :func:`tensor3` (pages: T[k][i, j])."""
    T[k][i, j] = value


def is_symbol(x) -> bool:
    return bool(getattr(x, "is_Symbol", False))


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
