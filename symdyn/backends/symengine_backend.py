"""SymEngine backend (optional, ``pip install symengine``): a fast SymPy-compatible core.

Arrays are ``symengine.DenseMatrix``; vectors are (n, 1) columns; rank-3 results are
:class:`~symdyn.backends.tensor.Tensor3` of DenseMatrix pages. Results convert to SymPy with
``sympy.Matrix(result)`` (or ``sympy.sympify``) for simplification and printing. Code shared with
the SymPy backend lives in :mod:`symdyn.backends._symbolic_common`.
"""
from __future__ import annotations

import math
import numbers

import symengine as se

from . import tensor as _tensor
from ._plain import plain_hooks
from ._symbolic_common import (  # noqa: F401  (shared, re-exported)
    assign, assign3, concrete, constant_scope, dot, empty_shape, exact_helpers, graph,
    inv_with, is_symbol, is_zero, numeric, page, pages, refuse_complex_or_scalar, set3, skew_of,
    solve, validated)

name = "symengine"
call_step, model_constants = plain_hooks(__name__)   # hooks: symdyn.backends.protocol
ndarray = se.DenseMatrix

sin, cos, sqrt = se.sin, se.cos, se.sqrt
sign = se.sign  # -1, 0 or 1 (friction_torque)
atan2 = se.atan2


def where_positive(x, a, b):
    """``a`` where ``x > 0``, else ``b`` (scalars): a Piecewise, or the branch when x is a number."""
    x = se.sympify(x)
    if x.is_Number:
        return a if float(x) > 0 else b
    return se.Piecewise((a, x > 0), (b, True))
sin_over_x, one_minus_cos_over_x2, x_minus_sin_over_x3 = exact_helpers(se.sin, se.cos, se.sqrt)


def zeros(n: int, m: int | None = None):
    return se.zeros(n, 1 if m is None else m)


def eye(n: int):
    return se.eye(n)


def matrix(rows):
    return se.DenseMatrix([list(r) for r in rows])


def vector(entries):
    entries = list(entries)
    return se.DenseMatrix([[e] for e in entries]) if entries else se.zeros(0, 1)


def _number(x):
    if isinstance(x, se.Basic):
        return x
    if isinstance(x, numbers.Integral):
        return se.Integer(int(x))
    if type(x).__module__.split(".")[0] == "sympy":
        return se.sympify(x)
    if isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real):
        return se.sympify(complex(x))          # refused by the entry check, with its index
    xf = float(x)
    return se.Integer(int(xf)) if xf.is_integer() else se.RealDouble(xf)


def const(x):
    empty = empty_shape(x)
    if empty is not None:               # DenseMatrix([]) would be 0 x 0 whatever the shape
        return se.zeros(*empty)
    if hasattr(x, "tolist"):
        x = x.tolist()
    elif type(x).__module__.split(".")[0] == "sympy":
        x = [[x[i, j] for j in range(x.shape[1])] for i in range(x.shape[0])]
    rows_ = [list(r) if isinstance(r, (list, tuple)) else [r] for r in x]
    return se.DenseMatrix([[_number(e) for e in r] for r in rows_])


def rows(x, a: int, b: int):
    """x[a:b, :]; an empty selection (or a matrix without columns) is a zeros matrix of that
    shape (DenseMatrix raises IndexError for slices with no rows or no columns)."""
    n = len(range(x.shape[0])[a:b])
    if n == 0 or x.shape[1] == 0:
        return se.zeros(n, x.shape[1])
    return x[a:b, :]


def cols(x, a: int, b: int):
    """x[:, a:b]; an empty selection (or a matrix without rows) is a zeros matrix of that shape."""
    n = len(range(x.shape[1])[a:b])
    if n == 0 or x.shape[0] == 0:
        return se.zeros(x.shape[0], n)
    return x[:, a:b]


def vcat(parts):
    if not len(parts):   # a model with nv = 0: the empty (0, 1) column
        return se.zeros(0, 1)
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
    if not len(blocks):   # a model with nv = 0: the 0 x 0 matrix
        return se.zeros(0, 0)
    return vcat([hcat(r) for r in blocks])


def inv(A):
    return inv_with(se.DenseMatrix, A)


def tensor3(n1: int, n2: int, n3: int):
    """A zero :class:`~symdyn.backends.tensor.Tensor3` (n1, n2, n3) of DenseMatrix pages."""
    return _tensor.tensor3(se.zeros, n1, n2, n3)


_NONFINITE = (se.nan, se.oo, -se.oo, se.zoo)


def _problem(e) -> str | None:
    """'complex', 'nonfinite' or None for one SymEngine entry."""
    if any(e.has(b) for b in _NONFINITE):
        return "nonfinite"
    nums = e.atoms(se.Number)
    if e.has(se.I) or any(a.is_real is False for a in nums):
        return "complex"
    if any(not math.isfinite(float(a)) for a in nums):      # RealDouble(nan), RealDouble(inf)
        return "nonfinite"
    return None


def _as_matrix(x, what: str, expect: str):
    if isinstance(x, se.DenseMatrix):
        return x
    refuse_complex_or_scalar(x, what, (se.Basic,))
    try:
        return const(x)
    except (TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise TypeError(f"{what} must be {expect} SymEngine expressions or numbers, "
                        f"got {type(x).__name__}") from exc


def to_vector(x, n: int, what: str):
    return validated(_as_matrix(x, what, f"a vector of {n}"), n, what, _problem)


def to_matrix(x, shape: tuple[int, int], what: str):
    m = _as_matrix(x, what, f"a {shape[0]} x {shape[1]} matrix of")
    return validated(m, shape, what, _problem)


def to_numpy(x):
    """Float array of a DenseMatrix (or Tensor3) without free symbols."""
    import numpy as np

    if isinstance(x, _tensor.Tensor3):
        return np.stack([to_numpy(p) for p in x.pages], axis=2).reshape(x.shape)
    return np.array([[float(x[i, j]) for j in range(x.shape[1])] for i in range(x.shape[0])])


def jacobian(y, x):
    return y.jacobian(x)


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return skew_of(matrix, w)
