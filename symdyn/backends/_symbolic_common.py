"""What the SymPy and SymEngine backends share: both store (n, 1) column vectors and mutable
dense matrices with the same methods (``[i, j]``, slicing, ``.T``, ``@``, ``LUsolve``,
``jacobian``, ``inv``), so everything here works on either library's objects. The backend modules
hold only what differs (constructors, number conversion, the check of one scalar, evaluation).
"""
from __future__ import annotations

import contextlib
import numbers
from typing import Any, Callable

from .tensor import assign3, page, pages, set3  # noqa: F401  (re-exported by both backends)

graph = True            # expressions, not values: values cannot be checked at entry
numeric = False


def rows(x, a: int, b: int):
    return x[a:b, :]


def cols(x, a: int, b: int):
    return x[:, a:b]


def solve(A, b):
    return A.LUsolve(b)


def dot(a, b):
    return (a.T @ b)[0, 0]


def assign(x, rows, cols, value):
    """x[rows, cols] = value (in place; rows, cols: ints or slices); returns x."""
    x[rows, cols] = value
    return x


def concrete(x) -> bool:
    """Expressions: values cannot be inspected (checks by value are skipped)."""
    return False


def constant_scope():
    """Context in which model constants are built (a no-op here; JAX: eager evaluation)."""
    return contextlib.nullcontext()


def entries(x) -> list:
    """All entries, row by row."""
    return [x[i, j] for i in range(x.shape[0]) for j in range(x.shape[1])]


def is_zero(x) -> bool:
    return all(e == 0 for e in entries(x))


def is_symbol(x) -> bool:
    """True for a pure symbol (a valid differentiation variable)."""
    return bool(getattr(x, "is_Symbol", False))


def check_entries(m, what: str, problem: Callable[[Any], str | None], matrix: bool = False):
    """Raise for the first entry of m for which ``problem(e)`` names a problem: TypeError for
    complex values, ValueError for NaN/inf (the same exception types as the other backends)."""
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            p = problem(m[i, j])
            if p is None:
                continue
            at = f"[{i}, {j}]" if matrix else f"index {i}"
            if p == "complex":
                raise TypeError(f"{what} has a complex entry at {at} ({m[i, j]}); "
                                "symdyn works with real numbers and real expressions")
            raise ValueError(f"{what} contains NaN or inf at {at}")


def empty_shape(x) -> tuple[int, int] | None:
    """The (rows, cols) of an input with no entries (which the libraries' constructors turn
    into a 0 x 0 matrix whatever its shape): an empty 1-D array or list is the (0, 1) column, a
    2-D array keeps its shape, a list of k empty rows is k x 0. None when ``x`` has entries."""
    shape = getattr(x, "shape", None)
    if shape is not None:
        shape = tuple(shape)
        if len(shape) == 1 and shape[0] == 0:
            return (0, 1)
        if len(shape) == 2 and 0 in shape:
            return (int(shape[0]), int(shape[1]))
        return None
    if isinstance(x, (list, tuple)):
        if not x:
            return (0, 1)
        if all(isinstance(r, (list, tuple)) and not r for r in x):
            return (len(x), 0)
    return None


def as_column(m, n: int, what: str):
    """``m`` as an (n, 1) column: a row is transposed; for n = 0 (a model with no moving joint)
    the empty matrix ``sympy.Matrix([])`` (shape (0, 0)) and the empty row are the empty
    column."""
    if n == 0 and tuple(m.shape) in ((0, 0), (1, 0)):
        return m.reshape(0, 1)
    if m.shape[0] == 1 and m.shape[1] != 1:
        m = m.T
    if m.shape != (n, 1):
        raise ValueError(f"{what} must have {n} entries, got shape {tuple(m.shape)}")
    return m


def refuse_complex_or_scalar(x, what: str, scalar_types: tuple) -> None:
    """Before conversion: a Python complex or complex-dtype array is a TypeError; a single number
    or expression where an array is expected a ValueError (wrong shape), as on NumPy."""
    if isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", "") == "c":
        raise TypeError(f"{what} is complex ({type(x).__name__}); symdyn works with real numbers "
                        "and real expressions")
    if isinstance(x, (numbers.Number, *scalar_types)) or getattr(x, "ndim", None) == 0:
        raise ValueError(f"{what} must be an array, got the scalar {x!r}")


def validated(m, shape, what: str, problem: Callable[[Any], str | None]):
    """``m`` checked for shape (a vector when ``shape`` is an int n: (n, 1), a row transposed) and
    for complex/NaN/inf entries (see :func:`check_entries`)."""
    if isinstance(shape, int):
        m = as_column(m, shape, what)
        check_entries(m, what, problem)
        return m
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"{what} must have shape {tuple(shape)}, got {tuple(m.shape)}")
    check_entries(m, what, problem, matrix=True)
    return m


def inv_with(matrix, A):
    """A^-1 (a 1x1 matrix without the general inverse's machinery)."""
    if A.shape == (1, 1):
        return matrix([[1 / A[0, 0]]])
    return A.inv()


def exact_helpers(sin, cos, sqrt):
    """Closed forms of ``sin_over_x``, ``one_minus_cos_over_x2``, ``x_minus_sin_over_x3`` (of
    x2 = x^2): exact expressions for printing and simplification (undefined at x2 = 0 exactly)."""
    def sin_over_x(x2):
        x = sqrt(x2)
        return sin(x) / x

    def one_minus_cos_over_x2(x2):
        return (1 - cos(sqrt(x2))) / x2

    def x_minus_sin_over_x3(x2):
        x = sqrt(x2)
        return (x - sin(x)) / (x2 * x)

    return sin_over_x, one_minus_cos_over_x2, x_minus_sin_over_x3


def skew_of(matrix, w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
