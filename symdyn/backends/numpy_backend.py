"""NumPy backend: float64 arrays. Vectors are 1-D arrays, matrices 2-D arrays, rank-3 results
(n1, n2, n3) arrays."""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ._plain import plain_hooks
from ._series import ONE_MINUS_COS_OVER_X2, SIN_OVER_X, THRESHOLD, X_MINUS_SIN_OVER_X3, horner

name = "numpy"
call_step, model_constants = plain_hooks(__name__)   # hooks: symdyn.backends.protocol
numeric = True          # values are numbers: entries can be checked (unit quaternions, ...)
graph = False           # builds no expression graph (no ``jacobian``)
ndarray = np.ndarray

sqrt = np.sqrt


def sin(x):
    """sin of a number (math.sin: a ufunc call costs more than the sine) or of an array."""
    return math.sin(x) if isinstance(x, float) else np.sin(x)


def cos(x):
    """cos of a number (math.cos) or of an array."""
    return math.cos(x) if isinstance(x, float) else np.cos(x)


sign = np.sign  # -1, 0 or 1 (friction_torque)


def atan2(y, x):
    """atan2 of numbers (math.atan2) or arrays."""
    return math.atan2(y, x) if isinstance(y, float) and isinstance(x, float) else np.arctan2(y, x)


def where_positive(x, a, b):
    """``a`` where ``x > 0``, else ``b`` (scalars, or arrays element-wise)."""
    if np.ndim(x) == 0 and np.ndim(a) == 0 and np.ndim(b) == 0:
        return a if x > 0 else b
    return np.where(np.asarray(x) > 0, a, b)


def zeros(n: int, m: int | None = None):
    return np.zeros(n if m is None else (n, m))


_EYE = {k: np.eye(k) for k in range(1, 7)}   # copied: a copy costs a fraction of np.eye


def eye(n: int):
    I = _EYE.get(n)
    return np.eye(n) if I is None else I.copy()


def matrix(rows):
    return np.array(rows, dtype=float)


def vector(entries):
    return np.array(entries, dtype=float).reshape(-1)


def const(x):
    """Model constant (number, list, array) as a native array."""
    return np.array(x, dtype=float)


def rows(x, a: int, b: int):
    return x[a:b]


def cols(x, a: int, b: int):
    return x[:, a:b]


def vcat(parts):
    if not len(parts):   # a model with nv = 0: the empty vector
        return np.zeros(0)
    return np.concatenate(parts)


def hcat(parts):
    return np.concatenate([p.reshape(-1, 1) if p.ndim == 1 else p for p in parts], axis=1)


def block(blocks):
    """The matrix of a list of rows of 2-D blocks: np.block's result, without its generic depth
    checks (1 x 1 blocks, as of 1-dof joints: one array of their entries; larger ones: two
    levels of concatenation); other inputs go to np.block."""
    if not len(blocks):   # a model with nv = 0: the 0 x 0 matrix
        return np.zeros((0, 0))
    try:
        return np.array([[b.item() for b in row] for row in blocks], dtype=float)
    except (ValueError, AttributeError):   # a block of several entries (or not an array)
        pass
    try:
        return np.concatenate([np.concatenate(row, axis=1) for row in blocks])
    except (ValueError, TypeError):   # 1-D or 0-D blocks, ragged rows: np.block decides
        return np.block(blocks)


def inv(A):
    if A.shape == (1, 1):
        return 1.0 / A
    return np.linalg.inv(A)


def solve(A, b):
    return np.linalg.solve(A, b)


def dot(a, b):
    return float(a @ b)


def tensor3(n1: int, n2: int, n3: int):
    """A zero (n1, n2, n3) array."""
    return np.zeros((n1, n2, n3))


def _rank3(T, fn: str):
    if getattr(T, "ndim", None) != 3:
        raise TypeError(f"{fn} expects a rank-3 array from B.tensor3, got "
                        f"{type(T).__name__} of shape {getattr(T, 'shape', '?')}")
    return T


def page(T, k: int):
    """T[:, :, k] (a view)."""
    return _rank3(T, "page")[:, :, k]


def pages(T) -> list:
    """[T[:, :, k] for every k] (views)."""
    return [T[:, :, k] for k in range(_rank3(T, "pages").shape[2])]


_FLOAT = np.dtype(float)


def _real_array(x, what: str, expect: str):
    """float64 array of x; complex input is refused, not truncated to its real part."""
    if isinstance(x, (complex, np.complexfloating)):
        raise TypeError(f"{what} is complex ({x!r}); symdyn works with real numbers")
    if x is None:
        raise TypeError(f"{what} must be {expect} numbers, got None")
    raw = x if isinstance(x, np.ndarray) else None
    if raw is None:
        try:
            raw = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be {expect} numbers, got {type(x).__name__}") from exc
    if raw.dtype.kind == "c":
        raise TypeError(f"{what} is complex (dtype {raw.dtype}); symdyn works with real numbers")
    if raw.dtype == object and any(isinstance(e, (complex, np.complexfloating))
                                   for e in raw.ravel()):
        raise TypeError(f"{what} has complex entries; symdyn works with real numbers")
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be {expect} numbers, got {type(x).__name__}") from exc


def to_vector(x, n: int, what: str):
    """Validate and convert a user vector of length n (list, tuple or array) to float64 1-D."""
    if type(x) is np.ndarray and x.dtype == _FLOAT and x.shape == (n,) and n <= 64 \
            and math.isfinite(sum(x.tolist())):   # all finite (an overflow: the full check)
        return x
    arr = _real_array(x, what, f"a vector of {n}")
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr)).tolist()
        raise ValueError(f"{what} contains NaN or inf at index {bad}")
    return arr


def to_matrix(x, shape: tuple[int, int], what: str):
    arr = _real_array(x, what, f"a {shape[0]} x {shape[1]} matrix of")
    if arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or inf")
    return arr


def is_zero(x) -> bool:
    return not np.any(x)


def to_numpy(x):
    return np.asarray(x, dtype=float)


def set3(T, i: int, j: int, k: int, value):
    """T[i, j, k] = value for a tensor from :func:`tensor3` (in place); returns T."""
    T[i, j, k] = value
    return T


def assign3(T, i, j, k, value):
    """T[i, j, k] = value (in place; ints or slices, value over the sliced axes); returns T."""
    T[i, j, k] = value
    return T


def assign(x, rows, cols, value):
    """x[rows, cols] = value (in place; rows, cols: ints or slices); returns x."""
    x[rows, cols] = value
    return x


def concrete(x) -> bool:
    """Values can always be inspected (numbers)."""
    return True


def constant_scope():
    """Context in which model constants are built (a no-op here; JAX: eager evaluation)."""
    return contextlib.nullcontext()


def is_symbol(x) -> bool:
    return False


_SKEW = ((0, 1, 2, -1.0), (0, 2, 1, 1.0), (1, 0, 2, 1.0),     # S(w)[i, j] = sign * w[k]
         (1, 2, 0, -1.0), (2, 0, 1, -1.0), (2, 1, 0, 1.0))


def _gather(n: int, blocks) -> tuple[np.ndarray, np.ndarray]:
    """``(take, sign)`` with ``x[take] * sign`` the n x n matrix whose 3x3 block (bi, bj) is
    ``s * S(x[k:k + 3])`` for each ``(bi, bj, k, s)`` of ``blocks`` (zero elsewhere): skew
    matrices built with one gather, their entries +-x exactly."""
    take, sign = np.zeros((n, n), dtype=np.intp), np.zeros((n, n))
    for bi, bj, k, s in blocks:
        for i, j, c, e in _SKEW:
            take[3 * bi + i, 3 * bj + j], sign[3 * bi + i, 3 * bj + j] = k + c, s * e
    return take, sign


_SKEW3 = _gather(3, [(0, 0, 0, 1.0)])
_MINUS_SKEW3 = _gather(3, [(0, 0, 0, -1.0)])
# with x = [a; b]: crm [[S(a), 0], [S(b), S(a)]], crf [[S(a), S(b)], [0, S(a)]],
# crfbar [[-S(a), -S(b)], [-S(b), 0]]
_CRM = _gather(6, [(0, 0, 0, 1.0), (1, 0, 3, 1.0), (1, 1, 0, 1.0)])
_CRF = _gather(6, [(0, 0, 0, 1.0), (0, 1, 3, 1.0), (1, 1, 0, 1.0)])
_CRFBAR = _gather(6, [(0, 0, 0, -1.0), (0, 1, 3, -1.0), (1, 0, 3, -1.0)])


def _vector(x, n: int):
    return x if type(x) is np.ndarray and x.shape == (n,) else np.asarray(x, float).reshape(n)


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u (entries: +-w exactly, zero diagonal)."""
    take, sign = _SKEW3
    return _vector(w, 3)[take] * sign


class Kernels:
    """Kernels of :mod:`symdyn.spatial` and of the algorithms' shared code on NumPy
    (``kernels``; not part of the backend contract: callers use them where a numeric backend
    offers them and their generic forms elsewhere). NumPy pays per operation, so these do in
    one what the generic forms do in several."""

    @staticmethod
    def crm(v):
        """(v x) of a motion vector v = [w; u]: [[S(w), 0], [S(u), S(w)]] (one gather)."""
        take, sign = _CRM
        return _vector(v, 6)[take] * sign

    @staticmethod
    def crf(v):
        """(v x*) = -(v x)^T: [[S(w), S(u)], [0, S(w)]] (one gather)."""
        take, sign = _CRF
        return _vector(v, 6)[take] * sign

    @staticmethod
    def crfbar(f):
        """(f xbar*) of a force vector f = [n; g]: [[-S(n), -S(g)], [-S(g), 0]] (one gather)."""
        take, sign = _CRFBAR
        return _vector(f, 6)[take] * sign

    @staticmethod
    def motion_matrix(E, r):
        """The 6x6 motion transform [[E, 0], [-E S(r), E]] of a compact transform (E, r)."""
        X = np.zeros((6, 6))
        X[:3, :3] = E
        X[3:, 3:] = E
        take, minus_sign = _MINUS_SKEW3
        X[3:, :3] = E.dot(_vector(r, 3)[take] * minus_sign)
        return X

    @staticmethod
    def assemble(blocks: dict, row_ranges, col_ranges):
        """The matrix whose rows ``row_ranges[i]`` and columns ``col_ranges[j]`` (``(a, b)``
        pairs, consecutive from 0) hold ``blocks[i, j]``, zero where a block is missing; built
        from a list of floats when every block is 1 x 1 (1-dof joints)."""
        nr, nc = (row_ranges[-1][1] if row_ranges else 0), (col_ranges[-1][1] if col_ranges else 0)
        if blocks and all(b - a == 1 for a, b in row_ranges) \
                and all(b - a == 1 for a, b in col_ranges):   # 1 x 1 blocks: entry (i, j)
            entries = [[0.0] * nc for _ in range(nr)]
            try:
                for (i, j), blk in blocks.items():
                    entries[i][j] = blk.item()
                return np.array(entries)
            except ValueError:   # a block of several entries: its shape is wrong, said below
                pass
        out = np.zeros((nr, nc))
        for (i, j), blk in blocks.items():
            (a, b), (c, d) = row_ranges[i], col_ranges[j]
            if blk.shape != (b - a, d - c):
                raise ValueError(f"block ({i}, {j}) has shape {blk.shape}, expected "
                                 f"{(b - a, d - c)}")
            out[a:b, c:d] = blk
        return out

    # mul(A, x): A @ x for a matrix A and a vector or matrix x, through ndarray.dot (the same
    # product; on 6x6 operands about half the cost of the ``@`` operator's generic dispatch)
    mul = staticmethod(np.ndarray.dot)


kernels = Kernels()


def _safe(coeffs, exact):
    def f(x2):
        x2 = float(x2)
        return horner(coeffs, x2) if x2 < THRESHOLD else exact(x2)
    return f


def _sin_over_x(x2):
    x = math.sqrt(x2)
    return math.sin(x) / x


def _one_minus_cos_over_x2(x2):
    s = math.sin(math.sqrt(x2) / 2)
    return 2 * s * s / x2                     # 2 sin^2(x/2) / x^2: no cancellation


def _x_minus_sin_over_x3(x2):
    x = math.sqrt(x2)
    return (x - math.sin(x)) / (x2 * x)


sin_over_x = _safe(SIN_OVER_X, _sin_over_x)
sin_over_x.__doc__ = "sin(x)/x of x2 = x^2 (a float; a series below x2 = 4)."
one_minus_cos_over_x2 = _safe(ONE_MINUS_COS_OVER_X2, _one_minus_cos_over_x2)
one_minus_cos_over_x2.__doc__ = "(1 - cos x)/x^2 of x2 = x^2 (a float; a series below x2 = 4)."
x_minus_sin_over_x3 = _safe(X_MINUS_SIN_OVER_X3, _x_minus_sin_over_x3)
x_minus_sin_over_x3.__doc__ = "(x - sin x)/x^3 of x2 = x^2 (a float; a series below x2 = 4)."
