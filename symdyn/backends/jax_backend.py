"""JAX backend: ``jax.numpy`` arrays, traceable by ``jax.jit``, ``jax.vmap`` and ``jax.jacfwd``/``grad``.

Vectors are 1-D arrays and matrices 2-D arrays (as NumPy); rank-3 results are (n1, n2, n3) arrays.
JAX arrays are immutable: :func:`assign` and :func:`set3` return a new array (``out.at[...].set``).

Capabilities. ``numeric`` is False: under ``jax.jit``/``vmap``/``grad`` the inputs are tracers whose
values cannot be inspected, so algorithms must not branch on values. ``graph`` is False too: JAX
builds no expression graph of symbols (no ``jacobian(y, x)``; differentiate with ``jax.jacfwd``).
Values are checked where they can be: :func:`to_vector` / :func:`to_matrix` refuse NaN/inf and
:func:`concrete` is True for concrete (non-traced) arrays, so unit quaternions are checked outside
``jit`` and skipped for tracers.

Precision. JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)`` was called
(before arrays are created). symdyn refuses float32 (inputs, or JAX in float32 mode) with a
:class:`~symdyn.backends.BackendError` naming both ways out: enable x64, or opt in to float32 with
:func:`allow_float32` (``symdyn.jax.allow_float32()``). Importing symdyn never changes JAX's global
configuration.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import numpy_backend as _np
from ._plain import plain_hooks
from ._series import ONE_MINUS_COS_OVER_X2, SIN_OVER_X, THRESHOLD, X_MINUS_SIN_OVER_X3, horner

name = "jax"
call_step, model_constants = plain_hooks(__name__)   # hooks: symdyn.backends.protocol
numeric = False         # tracers carry no values: algorithms must not branch on values
graph = False           # no expression graph of symbols (differentiate with jax.jacfwd / grad)
ndarray = jax.Array

sin, cos, sqrt = jnp.sin, jnp.cos, jnp.sqrt
sign = jnp.sign  # -1, 0 or 1 (friction_torque)
atan2 = jnp.arctan2


def where_positive(x, a, b):
    """``a`` where ``x > 0``, else ``b`` (``jnp.where``: both branches evaluated)."""
    return jnp.where(x > 0, a, b)

_ALLOW_FLOAT32 = False


def allow_float32(allow: bool = True) -> None:
    """Opt in to (or back out of) computing in float32: JAX without ``jax_enable_x64``, or float32
    inputs. Single precision loses about 8 digits: mass matrices of long chains and derivatives
    are then accurate to ~1e-4 relative, not 1e-12."""
    global _ALLOW_FLOAT32
    _ALLOW_FLOAT32 = bool(allow)


def float32_allowed() -> bool:
    return _ALLOW_FLOAT32


def _x64() -> bool:
    return bool(jax.config.read("jax_enable_x64"))


def _float():
    """The float dtype of new arrays (float64 with x64 enabled; else float32 when opted in)."""
    if _x64():
        return jnp.float64
    if not _ALLOW_FLOAT32:
        from . import BackendError
        raise BackendError(
            "JAX is in float32 mode (its default) and symdyn computes in float64: call "
            "jax.config.update('jax_enable_x64', True) at start-up, before creating arrays, or opt "
            "in to single precision with symdyn.jax.allow_float32()")
    return jnp.float32


def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def concrete(x) -> bool:
    """True when ``x``'s values can be inspected now (not a tracer of jit/vmap/grad)."""
    return not _is_tracer(x)


def constant_scope():
    """Model constants are built eagerly inside this context (concrete arrays even when the
    first call happens inside a jit trace), so the model's per-backend cache holds no tracer."""
    return jax.ensure_compile_time_eval()


def zeros(n: int, m: int | None = None):
    return jnp.zeros(n if m is None else (n, m), dtype=_float())


def eye(n: int):
    return jnp.eye(n, dtype=_float())


def matrix(rows):
    return jnp.asarray(jnp.array(rows, dtype=_float()))


def vector(entries):
    return jnp.array(entries, dtype=_float()).reshape(-1)


def const(x):
    """Model constant as a concrete array (also when first built inside a trace, so that the
    model's per-backend cache never holds a tracer)."""
    if isinstance(x, jax.Array) and not _is_tracer(x):
        return x
    arr = np.array(x, dtype=float)
    with jax.ensure_compile_time_eval():
        return jnp.asarray(arr, dtype=_float())


def rows(x, a: int, b: int):
    return x[a:b]


def cols(x, a: int, b: int):
    return x[:, a:b]


def vcat(parts):
    if not len(parts):   # a model with nv = 0: the empty vector
        return jnp.zeros(0, dtype=_float())
    return jnp.concatenate(parts, axis=0)


def hcat(parts):
    return jnp.concatenate([p.reshape(-1, 1) if p.ndim == 1 else p for p in parts], axis=1)


def block(blocks):
    if not len(blocks):   # a model with nv = 0: the 0 x 0 matrix
        return jnp.zeros((0, 0), dtype=_float())
    return jnp.block(blocks)


def inv(A):
    if A.shape == (1, 1):
        return 1.0 / A
    return jnp.linalg.inv(A)


def solve(A, b):
    return jnp.linalg.solve(A, b)


def dot(a, b):
    return a @ b


def skew(w):
    """3x3 cross-product matrix S(w) with S(w) u = w x u."""
    z = jnp.zeros_like(w[0])
    return jnp.stack([jnp.stack([z, -w[2], w[1]]), jnp.stack([w[2], z, -w[0]]),
                      jnp.stack([-w[1], w[0], z])])


def is_zero(x) -> bool:
    """Every entry is zero; False for a tracer (its values are unknown: not structurally zero)."""
    if _is_tracer(x):
        return False
    return not bool(jnp.any(jnp.asarray(x)))


def is_symbol(x) -> bool:
    return False


def assign(x, rows, cols, value):
    """``x`` with ``x[rows, cols] = value`` (a new array: ``x.at[rows, cols].set(value)``)."""
    return x.at[rows, cols].set(value)


def tensor3(n1: int, n2: int, n3: int):
    """A zero (n1, n2, n3) array."""
    return jnp.zeros((n1, n2, n3), dtype=_float())


def _rank3(T, fn: str):
    if getattr(T, "ndim", None) != 3:
        raise TypeError(f"{fn} expects a rank-3 array from B.tensor3, got "
                        f"{type(T).__name__} of shape {getattr(T, 'shape', '?')}")
    return T


def set3(T, i: int, j: int, k: int, value):
    """``T`` with ``T[i, j, k] = value`` (a new array)."""
    return _rank3(T, "set3").at[i, j, k].set(value)


def assign3(T, i, j, k, value):
    """``T`` with ``T[i, j, k] = value`` (ints or slices; a new array)."""
    return _rank3(T, "assign3").at[i, j, k].set(value)


def page(T, k: int):
    return _rank3(T, "page")[:, :, k]


def pages(T) -> list:
    return [T[:, :, k] for k in range(_rank3(T, "pages").shape[2])]


# --- input validation ------------------------------------------------------------------------------

def _has_jax(x) -> bool:
    if isinstance(x, jax.Array) or _is_tracer(x):
        return True
    return isinstance(x, (list, tuple)) and any(_has_jax(e) for e in x)


def _check_float(arr, what: str):
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{what} is complex (dtype {arr.dtype}); symdyn works with real numbers")
    if kind not in "fiub":
        raise TypeError(f"{what} must be real numbers, got dtype {arr.dtype}")
    dtype = _float()
    if kind == "f" and arr.dtype.itemsize < 8 and not _ALLOW_FLOAT32:
        from . import BackendError
        raise BackendError(f"{what} has dtype {arr.dtype}; symdyn computes in float64: pass "
                           f"float64 arrays (x.astype(jnp.float64), with jax_enable_x64 on) or opt "
                           "in to single precision with symdyn.jax.allow_float32()")
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _as_array(x, what: str, expect: str):
    """(array, whether its values can be checked) of a JAX array, tracer or list of them; other
    inputs (lists, NumPy arrays) go through the NumPy backend's conversion and checks."""
    if _has_jax(x):
        try:
            arr = x if isinstance(x, jax.Array) or _is_tracer(x) else jnp.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be {expect} numbers, got {type(x).__name__}") from exc
        return _check_float(arr, what), not _is_tracer(arr)
    return None, True


def to_vector(x, n: int, what: str):
    """A float array of shape (n,): shape, dtype (complex, float32) always checked; NaN/inf
    only for concrete arrays (a tracer's values are unknown)."""
    arr, concrete_ = _as_array(x, what, f"a vector of {n}")
    if arr is None:
        return jnp.asarray(_np.to_vector(x, n, what), dtype=_float())
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {tuple(arr.shape)}")
    if concrete_:
        bad = np.flatnonzero(~np.isfinite(np.asarray(arr))).tolist()
        if bad:
            raise ValueError(f"{what} contains NaN or inf at index {bad}")
    return arr


def to_matrix(x, shape: tuple[int, int], what: str):
    arr, concrete_ = _as_array(x, what, f"a {shape[0]} x {shape[1]} matrix of")
    if arr is None:
        return jnp.asarray(_np.to_matrix(x, shape, what), dtype=_float())
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{what} must have shape {tuple(shape)}, got {tuple(arr.shape)}")
    if concrete_ and not np.all(np.isfinite(np.asarray(arr))):
        raise ValueError(f"{what} contains NaN or inf")
    return arr


def to_numpy(x):
    """float64 ndarray of a concrete result."""
    return np.asarray(x, dtype=float)


# --- numerically safe helpers (jit-, vmap- and grad-safe) -------------------------------------------

def _safe(coeffs, exact, label):
    """Series below THRESHOLD, the closed form above, with the double-``where`` trick: each branch
    is evaluated only at points where it is finite (the series at min(x2, THRESHOLD), the closed form
    at max(x2, THRESHOLD)), so value and gradients are finite everywhere, x2 = 0 included."""
    def f(x2):
        x2 = jnp.asarray(x2)
        small = x2 < THRESHOLD
        near = jnp.where(small, x2, 0.0)
        far = jnp.where(small, THRESHOLD, x2)
        return jnp.where(small, horner(coeffs, near), exact(far))
    f.__name__ = label
    f.__doc__ = (f"{label.replace('_', ' ')} of x2 = x^2: series below x2 = {THRESHOLD}, the "
                 "closed form above; finite value and derivatives at x2 = 0 under jit and grad.")
    return f


def _sin_over_x(x2):
    x = jnp.sqrt(x2)
    return jnp.sin(x) / x


def _one_minus_cos_over_x2(x2):
    s = jnp.sin(jnp.sqrt(x2) / 2)
    return 2 * s * s / x2


def _x_minus_sin_over_x3(x2):
    x = jnp.sqrt(x2)
    return (x - jnp.sin(x)) / (x2 * x)


sin_over_x = _safe(SIN_OVER_X, _sin_over_x, "sin_over_x")
one_minus_cos_over_x2 = _safe(ONE_MINUS_COS_OVER_X2, _one_minus_cos_over_x2,
                              "one_minus_cos_over_x2")
x_minus_sin_over_x3 = _safe(X_MINUS_SIN_OVER_X3, _x_minus_sin_over_x3, "x_minus_sin_over_x3")
