"""Rank-3 results of the graph backends (SymPy, SymEngine, CasADi): :class:`Tensor3`.

NumPy returns a rank-3 ``numpy.ndarray``; the other backends return a :class:`Tensor3`, a list of
native matrices ("pages") with ``pages[k] = T[:, :, k]``. Both support the same subset of ndarray
semantics, so consumers index them the same way:

* ``T[i, j, k]``: one scalar (a float, a SymPy/SymEngine expression, a 1x1 ``casadi.SX``);
* ``T[:, :, k]``: the native page (an ndarray view for NumPy, the stored matrix otherwise: writing
  into it writes into ``T`` in both cases);
* ``T[i, j, k] = value``; ``T.shape``, ``T.ndim == 3``, ``len(T) == T.shape[0]``.

Iterating is refused: a list of pages iterates over the last index, an ndarray over the first,
and code written for one would silently read the other wrongly. Use ``B.pages(T)`` (or
``T[:, :, k]``) for the pages. Other slices (``T[i]``, ``T[:, j, :]``) raise ``IndexError``.
"""
from __future__ import annotations

import operator
from typing import Any, Callable


class Tensor3:
    """A rank-3 tensor stored as pages: ``pages[k]`` is the native ``shape[0] x shape[1]`` matrix
    ``T[:, :, k]``. Build one with ``B.tensor3(n1, n2, n3)``; see the module docstring."""

    __slots__ = ("pages", "shape")
    ndim = 3

    def __init__(self, pages: list, shape: tuple[int, ...] | None = None):
        pages = list(pages)
        if shape is None:
            if not pages:
                raise ValueError("Tensor3 of no pages needs an explicit shape")
            r, c = pages[0].shape
            shape = (int(r), int(c), len(pages))
        shape = tuple(int(s) for s in shape)
        if len(shape) != 3 or len(pages) != shape[2]:
            raise ValueError(f"Tensor3 of shape {shape} needs one page per k, got {len(pages)}")
        for k, p in enumerate(pages):
            if tuple(p.shape) != shape[:2]:
                raise ValueError(f"Tensor3 page {k} has shape {tuple(p.shape)}, "
                                 f"expected {shape[:2]}")
        self.pages = pages
        self.shape = shape

    def _index(self, key) -> tuple[int, ...] | int:
        """(i, j, k) for a scalar key, or k for the page key (:, :, k)."""
        if not (isinstance(key, tuple) and len(key) == 3):
            raise IndexError("Tensor3 supports T[i, j, k] and T[:, :, k] (pages: B.pages(T)); "
                             f"got index {key!r}")
        full = [isinstance(s, slice) and s == slice(None) for s in key[:2]]
        if all(full):
            return _norm(key[2], self.shape[2], 2)
        if any(full) or any(isinstance(s, slice) for s in key):
            raise IndexError("Tensor3 supports T[i, j, k] and T[:, :, k] (pages: B.pages(T)); "
                             f"got index {key!r}")
        return tuple(_norm(s, n, a) for a, (s, n) in enumerate(zip(key, self.shape)))

    def __getitem__(self, key):
        idx = self._index(key)
        if isinstance(idx, int):
            return self.pages[idx]
        i, j, k = idx
        return self.pages[k][i, j]

    def __setitem__(self, key, value) -> None:
        idx = self._index(key)
        if isinstance(idx, int):
            if tuple(value.shape) != self.shape[:2]:
                raise ValueError(f"page of shape {tuple(value.shape)} for a Tensor3 of shape "
                                 f"{self.shape}")
            self.pages[idx] = value
            return
        i, j, k = idx
        self.pages[k][i, j] = value

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        raise TypeError("iterating a Tensor3 is ambiguous (ndarray: first index, pages: last); "
                        "use B.pages(T) or T[:, :, k]")

    def __array__(self, dtype=None, copy=None):
        """ndarray of the entries (object dtype unless ``dtype`` is given)."""
        import numpy as np

        out = np.empty(self.shape, dtype=object)
        for k, p in enumerate(self.pages):
            for i in range(self.shape[0]):
                for j in range(self.shape[1]):
                    out[i, j, k] = p[i, j]
        return out if dtype is None else out.astype(dtype)

    def map_pages(self, fn: Callable[[Any], Any]) -> "Tensor3":
        """A new Tensor3 whose pages are ``fn(page)`` (e.g. ``sympy.Matrix`` to convert)."""
        return Tensor3([fn(p) for p in self.pages])

    def __repr__(self) -> str:
        kind = type(self.pages[0]).__name__ if self.pages else "?"
        return f"Tensor3(shape={self.shape}, pages of {kind})"


def _norm(i, n: int, axis: int) -> int:
    try:
        i = operator.index(i)
    except TypeError:
        raise IndexError(f"Tensor3 index {i!r} on axis {axis} is not an integer") from None
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i + n if i < 0 else i


# Functions shared by the graph backends (their tensor3 passes its own zeros).

def tensor3(zeros: Callable[[int, int], Any], n1: int, n2: int, n3: int) -> Tensor3:
    return Tensor3([zeros(n1, n2) for _ in range(n3)], (n1, n2, n3))


def _require(T, fn: str) -> Tensor3:
    if not isinstance(T, Tensor3):
        raise TypeError(f"{fn} expects a rank-3 tensor from B.tensor3 (symdyn.backends.Tensor3), "
                        f"got {type(T).__name__}")
    return T


def set3(T, i: int, j: int, k: int, value):
    """T[i, j, k] = value (in place); returns T."""
    _require(T, "set3").pages[k][i, j] = value
    return T


def assign3(T, i, j, k, value):
    """T[i, j, k] = value (in place) for ints or slices i, j, k, two of them slices: ``value`` is
    a native matrix whose axes are the sliced ones in order (as NumPy's ``T[i, j, k] = value``);
    returns T."""
    T = _require(T, "assign3")
    if not isinstance(k, slice):
        T.pages[_norm(k, T.shape[2], 2)][i, j] = value
        return T
    row_of_page = not isinstance(i, slice)     # T[i, b:c, k0:k1]: page k gets row i, cols b:c
    for t, kk in enumerate(range(*k.indices(T.shape[2]))):
        col = value[:, t]
        T.pages[kk][i, j] = col.T if row_of_page else col
    return T


def page(T, k: int):
    """The native matrix T[:, :, k] (stored, not copied)."""
    return _require(T, "page")[:, :, k]


def pages(T) -> list:
    """[T[:, :, k] for every k] (a new list of the stored pages)."""
    return list(_require(T, "pages").pages)
