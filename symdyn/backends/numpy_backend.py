"""NumPy backend: float64 arrays. Vectors are 1-D arrays, matrices 2-D arrays."""
from __future__ import annotations

import numpy as np

name = "numpy"
symbolic = False
ndarray = np.ndarray

sin, cos, sqrt = np.sin, np.cos, np.sqrt


def zeros(n: int, m: int | None = None):
    return np.zeros(n if m is None else (n, m))


def eye(n: int):
    return np.eye(n)


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
    return np.concatenate(parts, axis=0)


def hcat(parts):
    return np.concatenate([p.reshape(-1, 1) if p.ndim == 1 else p for p in parts], axis=1)


def block(blocks):
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
    return np.zeros((n1, n2, n3))


def to_vector(x, n: int, what: str):
    """Validate and convert a user vector of length n (list, tuple or array) to float64 1-D."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a vector of {n} numbers, got {type(x).__name__}") from exc
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr)).tolist()
        raise ValueError(f"{what} contains NaN or inf at index {bad}")
    return arr


def to_matrix(x, shape: tuple[int, int], what: str):
    arr = np.asarray(x, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or inf")
    return arr


def is_zero(x) -> bool:
    return not np.any(x)


def to_numpy(x):
    return np.asarray(x, dtype=float)


def set3(T, i: int, j: int, k: int, value) -> None:
    """T[i, j, k] = value for a tensor from :func:`tensor3`."""
    T[i, j, k] = value


def is_symbol(x) -> bool:
    return False


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    return matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
