"""SymPy backend: sympy.Matrix everywhere; vectors are (n, 1) column matrices; rank-3 results are
:class:`~symdyn.backends.tensor.Tensor3` of sympy.Matrix pages. Code shared with the SymEngine
backend lives in :mod:`symdyn.backends._symbolic_common`."""
from __future__ import annotations

import numbers
from typing import Any, Callable

import sympy as sp

from . import tensor as _tensor
from ._plain import plain_hooks
from ._symbolic_common import (  # noqa: F401  (shared, re-exported)
    assign, assign3, cols, concrete, constant_scope, dot, empty_shape, exact_helpers, graph,
    inv_with, is_symbol, is_zero, numeric, page, pages, refuse_complex_or_scalar, rows, set3, skew_of, solve, validated)

name = "sympy"
call_step, model_constants = plain_hooks(__name__)   # hooks: symdyn.backends.protocol
ndarray = sp.MatrixBase

sin, cos, sqrt = sp.sin, sp.cos, sp.sqrt
sign = sp.sign  # -1, 0 or 1 (friction_torque)
atan2 = sp.atan2


def where_positive(x, a, b):
    """``a`` where ``x > 0``, else ``b`` (scalars): a Piecewise, or the branch when x is a number."""
    x = sp.sympify(x)
    if x.is_number:
        return a if x > 0 else b
    return sp.Piecewise((a, x > 0), (b, True))
sin_over_x, one_minus_cos_over_x2, x_minus_sin_over_x3 = exact_helpers(sp.sin, sp.cos, sp.sqrt)


def zeros(n: int, m: int | None = None):
    return sp.zeros(n, 1 if m is None else m)


def eye(n: int):
    return sp.eye(n)


def matrix(rows):
    return sp.Matrix(rows)


def vector(entries):
    entries = list(entries)
    return sp.Matrix(entries) if entries else sp.zeros(0, 1)


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
    empty = empty_shape(x)
    if empty is not None:               # sympy.Matrix([]) would be 0 x 0 whatever the shape
        return sp.zeros(*empty)
    m = sp.Matrix(x.tolist() if hasattr(x, "tolist") else x)
    return m.applyfunc(_number)


def vcat(parts):
    if not len(parts):   # a model with nv = 0: the empty (0, 1) column
        return sp.zeros(0, 1)
    return sp.Matrix.vstack(*parts)


def hcat(parts):
    return sp.Matrix.hstack(*parts)


def block(blocks):
    if not len(blocks):   # a model with nv = 0: the 0 x 0 matrix
        return sp.zeros(0, 0)
    return sp.Matrix.vstack(*[sp.Matrix.hstack(*r) for r in blocks])


def inv(A):
    return inv_with(sp.Matrix, A)


def tensor3(n1: int, n2: int, n3: int):
    """A zero :class:`~symdyn.backends.tensor.Tensor3` (n1, n2, n3) of sympy.Matrix pages."""
    return _tensor.tensor3(sp.zeros, n1, n2, n3)


def _problem(e) -> str | None:
    """'complex', 'nonfinite' or None for one SymPy entry."""
    if e.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return "nonfinite"
    if e.has(sp.I) or any(s.is_real is False for s in e.free_symbols):
        return "complex"
    return None


def _as_matrix(x, what: str, expect: str):
    if isinstance(x, sp.MatrixBase):
        return x
    refuse_complex_or_scalar(x, what, (sp.Basic,))
    empty = empty_shape(x)
    if empty is not None:
        return sp.zeros(*empty)
    try:
        return sp.Matrix(x.tolist() if hasattr(x, "tolist") else x)
    except (TypeError, ValueError, sp.SympifyError) as exc:
        raise TypeError(f"{what} must be {expect} SymPy expressions or numbers, "
                        f"got {type(x).__name__}") from exc


def to_vector(x, n: int, what: str):
    return validated(_as_matrix(x, what, f"a vector of {n}"), n, what, _problem).applyfunc(_number)


def to_matrix(x, shape: tuple[int, int], what: str):
    m = _as_matrix(x, what, f"a {shape[0]} x {shape[1]} matrix of")
    return validated(m, shape, what, _problem).applyfunc(_number)


def to_numpy(x):
    """Float array of a SymPy matrix (or Tensor3) without free symbols (linear in the DAG)."""
    return evaluate(x, {})


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return skew_of(matrix, w)


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

    funcs: dict[Any, Callable[..., float]] = {
        sp.sin: math.sin, sp.cos: math.cos, sp.tan: math.tan, sp.exp: math.exp,
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

    if isinstance(x, _tensor.Tensor3):
        return np.stack([evaluate(p, values) for p in x.pages], axis=2).reshape(x.shape)
    if isinstance(x, sp.MatrixBase):
        return np.array([[value(e) for e in row] for row in x.tolist()], dtype=float)
    if isinstance(x, sp.NDimArray):
        return np.array([value(sp.sympify(e)) for e in sp.flatten(x)], float).reshape(x.shape)
    if isinstance(x, (list, tuple, np.ndarray)):
        arr = np.asarray(x, dtype=object)
        return np.array([value(sp.sympify(e)) for e in arr.ravel()], float).reshape(arr.shape)
    return np.array(value(sp.sympify(x)), dtype=float)


