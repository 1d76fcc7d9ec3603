"""SymPy backend: sympy.Matrix everywhere; vectors are (n, 1) column matrices."""
from __future__ import annotations

import numbers

import sympy as sp

name = "sympy"
symbolic = True
ndarray = sp.MatrixBase

sin, cos, sqrt = sp.sin, sp.cos, sp.sqrt


def zeros(n: int, m: int | None = None):
    return sp.zeros(n, 1 if m is None else m)


def eye(n: int):
    return sp.eye(n)


def matrix(rows):
    return sp.Matrix(rows)


def vector(entries):
    return sp.Matrix(list(entries))


def _number(x):
    """A model constant as an exact Integer when it is integral, else a Float; symbols pass."""
    if isinstance(x, sp.Basic):
        return x
    if isinstance(x, numbers.Integral):
        return sp.Integer(int(x))
    xf = float(x)
    return sp.Integer(int(xf)) if xf.is_integer() else sp.Float(xf)


def const(x):
    if isinstance(x, sp.MatrixBase):
        return x.applyfunc(_number)
    m = sp.Matrix(x.tolist() if hasattr(x, "tolist") else x)
    return m.applyfunc(_number)


def rows(x, a: int, b: int):
    return x[a:b, :]


def cols(x, a: int, b: int):
    return x[:, a:b]


def vcat(parts):
    return sp.Matrix.vstack(*parts)


def hcat(parts):
    return sp.Matrix.hstack(*parts)


def block(blocks):
    return sp.Matrix.vstack(*[sp.Matrix.hstack(*r) for r in blocks])


def inv(A):
    if A.shape == (1, 1):
        return sp.Matrix([[1 / A[0, 0]]])
    return A.inv()


def solve(A, b):
    return A.LUsolve(b)


def dot(a, b):
    return (a.T @ b)[0, 0]


def tensor3(n1: int, n2: int, n3: int):
    return sp.MutableDenseNDimArray.zeros(n1, n2, n3)


def to_vector(x, n: int, what: str):
    try:
        m = sp.Matrix(x) if not isinstance(x, sp.MatrixBase) else x
    except (TypeError, ValueError, sp.SympifyError) as exc:
        raise TypeError(f"{what} must be a vector of {n} SymPy expressions or numbers") from exc
    if m.shape[1] != 1 and m.shape[0] == 1:
        m = m.T
    if m.shape != (n, 1):
        raise ValueError(f"{what} must have {n} entries, got shape {m.shape}")
    for k, e in enumerate(m):
        if e.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"{what} contains NaN or inf at index {k}")
    return m.applyfunc(_number)


def to_matrix(x, shape: tuple[int, int], what: str):
    m = sp.Matrix(x)
    if m.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {m.shape}")
    return m.applyfunc(_number)


def is_zero(x) -> bool:
    return all(e == 0 for e in x)


def to_numpy(x):
    """Float array of a SymPy matrix without free symbols (linear in the expression DAG)."""
    return evaluate(x, {})


def jacobian(y, x):
    """d y / d x for column vectors y (m) and x (n) of symbols: an m x n Matrix."""
    return sp.Matrix(y).jacobian(x)


def evaluate(x, values: dict):
    """Numeric value (float ndarray of x's shape) of a SymPy matrix or expression at
    ``values`` (symbol -> number), walking the expression DAG once with memoization.

    ``subs``/``evalf``/``lambdify`` walk shared subexpressions once per occurrence, which is
    exponential in the depth of the recursive algorithms' expressions; this is linear in the DAG.
    """
    import math

    import numpy as np

    funcs = {sp.sin: math.sin, sp.cos: math.cos, sp.tan: math.tan, sp.exp: math.exp,
             sp.log: math.log, sp.Abs: abs, sp.sign: lambda a: math.copysign(1.0, a) if a else 0.0}
    memo: dict = {}
    fvals = {k: float(v) for k, v in values.items()}

    def value(root):
        stack = [root]
        while stack:
            e = stack[-1]
            if e in memo:
                stack.pop()
                continue
            if e.is_Number or e.is_NumberSymbol:
                memo[e] = float(e)
                stack.pop()
                continue
            if e.is_Symbol:
                if e not in fvals:
                    raise ValueError(f"no value given for symbol {e}")
                memo[e] = fvals[e]
                stack.pop()
                continue
            todo = [a for a in e.args if a not in memo]
            if todo:
                stack.extend(todo)
                continue
            args = [memo[a] for a in e.args]
            if e.is_Add:
                r = math.fsum(args)
            elif e.is_Mul:
                r = math.prod(args)
            elif e.is_Pow:
                r = args[0] ** args[1]
            elif e.func in funcs:
                r = funcs[e.func](*args)
            else:
                r = float(e.func(*map(sp.Float, args)).evalf())
            memo[e] = r
            stack.pop()
        return memo[root]

    if isinstance(x, sp.MatrixBase):
        return np.array([[value(e) for e in row] for row in x.tolist()], dtype=float)
    if isinstance(x, sp.NDimArray):
        return np.array([value(sp.sympify(e)) for e in sp.flatten(x)], float).reshape(x.shape)
    if isinstance(x, (list, tuple, np.ndarray)):
        arr = np.asarray(x, dtype=object)
        return np.array([value(sp.sympify(e)) for e in arr.ravel()], float).reshape(arr.shape)
    return np.array(value(sp.sympify(x)), dtype=float)


def set3(T, i: int, j: int, k: int, value) -> None:
    """T[i, j, k] = value for a tensor from :func:`tensor3`."""
    T[i, j, k] = value


def is_symbol(x) -> bool:
    """True for a pure symbol (a valid differentiation variable)."""
    return bool(getattr(x, "is_Symbol", False))


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
