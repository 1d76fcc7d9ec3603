"""Scalar backends: plain-function namespaces over native arrays.

The backend contract. Every backend module (``numpy``, ``sympy``, ``symengine``, ``casadi``,
``jax``) provides the same names with the same meaning; algorithms and consumers use only these, and never
branch on the backend's name or on the type of a result.

Capabilities (attributes)::

    ``name``      "numpy" | "sympy" | "symengine" | "casadi" | "jax" (for messages and cache keys, and to
                  pass the backend on as ``backend=B.name``; never to branch on).
    ``numeric``   True when values are numbers (NumPy): inputs can be checked by value (unit
                  quaternions, loop-closure residuals, regularity) before computing.
    ``graph``     ``not numeric``: the backend builds expressions (SymPy, SymEngine, CasADi SX) and
                  provides ``jacobian``; per-entry work (one value per symmetric entry) pays off.
                  (The former ``symbolic`` flag is gone: branch on ``numeric``/``graph``.)
                  JAX is neither: ``numeric`` and ``graph`` are both False (tracers carry no
                  values, and there is no graph of symbols to differentiate: use jax.jacfwd).
    ``ndarray``   the native matrix type.

Arrays. Vectors are native vectors (NumPy 1-D arrays; (n, 1) columns elsewhere), matrices native
2-D matrices, used with native ``@ + - *``, ``.T``, ``x[i]``/``x[i, j]`` and slicing::

    zeros(n, m=None)      zero vector (m None) or n x m matrix (CasADi: structural zeros)
    eye(n)                identity
    matrix(rows)          matrix from a list of rows of scalars
    vector(entries)       vector from scalars
    const(x)              model constant (number, list, array, SymPy matrix) as a native array;
                          SymPy/SymEngine keep integers exact
    rows(x, a, b)         rows a..b-1 (a vector stays a vector)
    cols(x, a, b)         columns a..b-1
    vcat(parts), hcat(parts), block(rows_of_blocks)
    inv(A), solve(A, b)   A^-1 and A^-1 b
    dot(a, b)             scalar a . b of two vectors
    skew(w)               3x3 S(w) with S(w) u = w x u
    sin, cos, sqrt        scalar functions
    sign                  scalar sign: -1, 0 (at 0) or 1
    atan2(y, x)           scalar two-argument arctangent
    where_positive(x, a, b)  a where the scalar x > 0, else b (Piecewise / if_else / where)
    is_zero(x)            every entry is (structurally or exactly) zero
    is_symbol(x)          x is a pure symbol (a differentiation variable); always False for NumPy
    jacobian(y, x)        graph backends only: d y / d x for column y, symbol column x
    to_numpy(x)           float ndarray of a result without free symbols (Tensor3 included)
    assign(x, r, c, v)    x[r, c] = v for ints or slices r, c; returns the result: write
                          ``x = B.assign(x, r, c, v)`` (in place on NumPy, SymPy, SymEngine and
                          CasADi; a new array on JAX, whose arrays are immutable)
    concrete(x)           x's values can be inspected now (NumPy: always; SymPy, SymEngine,
                          CasADi: never; JAX: outside jit/vmap/grad tracing). Checks by value
                          (unit quaternions) run only then.
    constant_scope()      context manager in which the model's constants are built (a no-op,
                          except JAX: eager evaluation, so that constants first built inside a
                          jit trace are concrete arrays, not tracers, in the model's cache)

Hooks (how an algorithm runs in this backend, :mod:`.protocol`)::

    call_step(fn, args)   run the per-body step fn(B, *args) (symdyn.algorithms.steps)
    model_constants(model) the model's ModelConstants in this backend's values (backend modules:
                          built once per backend and cached in the model)

The contract is the type :class:`~symdyn.backends.protocol.Backend`: algorithms annotate
``B: Backend`` and the type checker checks their calls against it.

Numerically safe helpers, all of ``x2 = x^2`` (a sum of squares: no square root of 0 is taken)::

    sin_over_x(x2)              sin(x)/x
    one_minus_cos_over_x2(x2)   (1 - cos x)/x^2
    x_minus_sin_over_x3(x2)     (x - sin x)/x^3

NumPy evaluates a series below x2 = 4 (full precision, no cancellation), CasADi builds a smooth
graph (series below 4, the closed form evaluated away from 0 above) whose value and derivatives
are finite and correct at x2 = 0, SymPy/SymEngine return the exact closed forms.

Rank-3 results (Christoffel symbols ``Gamma[i, j, k]`` with ``C[i, j] = sum_k Gamma[i, j, k]
qd[k]``): NumPy returns an ndarray (n1, n2, n3), JAX a jax array (n1, n2, n3); SymPy, SymEngine and CasADi return a
:class:`Tensor3` whose ``pages[k]`` is the native matrix ``Gamma[:, :, k]``. Both support
``T[i, j, k]`` (a scalar), ``T[:, :, k]`` (the native page), ``T[i, j, k] = v``, ``T.shape``,
``T.ndim == 3`` and ``len(T) == T.shape[0]``; a Tensor3 refuses iteration (ambiguous between the
two layouts). Through the backend::

    tensor3(n1, n2, n3)   a zero rank-3 tensor
    set3(T, i, j, k, v)   T[i, j, k] = v; returns the tensor: write ``T = B.set3(T, ...)``
                          (JAX: a new array)
    assign3(T, i, j, k, v) T[i, j, k] = v for ints or slices (v a native matrix over the sliced
                          axes, in order); returns the tensor (JAX: a new array)
    page(T, k)            the native matrix T[:, :, k]
    pages(T)              [T[:, :, k] for k in range(n3)]

Input validation (the same exception types on every backend, messages naming the argument)::

    to_vector(x, n, what), to_matrix(x, shape, what)
        wrong length/shape -> ValueError; NaN or inf (numbers, NaN constants inside a SymPy/
        SymEngine expression, constant entries of a casadi.SX or casadi.DM) -> ValueError;
        complex values (complex dtype, Python complex, SymPy/SymEngine numbers with I) ->
        TypeError (never truncated to the real part); entries that are not numbers or
        expressions of the backend -> TypeError.

The backend is resolved once at an algorithm's entry from the types of its inputs (and the model's
parameters), or named explicitly with ``backend="numpy" | "sympy" | "symengine" | "casadi" | "jax"``. JAX arrays
and tracers select "jax" (an optional dependency: ``pip install symdyn[jax]``); they mix with
numbers and NumPy arrays but not with SymPy, SymEngine or CasADi inputs.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from .protocol import Backend
from .tensor import Tensor3

__all__ = ["BACKENDS", "Backend", "BackendError", "Tensor3", "get_backend", "kind_of",
           "resolve_backend"]

BACKENDS = ("numpy", "sympy", "casadi", "symengine", "jax")
_loaded: dict[str, Backend] = {}

if TYPE_CHECKING:   # the type checker checks every backend module against the contract
    from . import casadi_backend, jax_backend, numpy_backend, symengine_backend, sympy_backend
    _numpy: Backend = numpy_backend
    _sympy: Backend = sympy_backend
    _symengine: Backend = symengine_backend
    _casadi: Backend = casadi_backend
    _jax: Backend = jax_backend


class BackendError(TypeError):
    """Inputs whose types cannot be combined, or an unknown backend name."""


@overload
def get_backend(name: Literal["sympy", "jax"]) -> ModuleType: ...  # with their own extras
@overload
def get_backend(name: str) -> Backend: ...


def get_backend(name: str) -> Backend | ModuleType:
    """The backend module called ``name`` (imported on first use). The type of the SymPy and
    JAX backends is their module: besides the contract they offer ``evaluate`` (SymPy) and the
    precision switches (JAX)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name not in _loaded:
        try:
            _loaded[name] = cast(Backend, importlib.import_module(f"symdyn.backends.{name}_backend"))
        except ImportError as exc:
            if exc.name not in ("jax", "jaxlib", "symengine"):
                raise
            raise ImportError(f"the {name} backend needs {exc.name}, which is not installed: "
                              f"pip install 'symdyn[{name}]'", name=exc.name) from exc
    return _loaded[name]


def kind_of(x: Any) -> str | None:
    """'numpy', 'sympy', 'symengine', 'casadi', 'jax' or None (no information, e.g. None or plain
    numbers). JAX arrays and tracers (inside jit, vmap, grad) are 'jax'."""
    if x is None:
        return None
    if isinstance(x, Tensor3):
        return kind_of(x.pages[0]) if x.pages else None
    mod = type(x).__module__.split(".")[0]
    if mod == "casadi":
        cls = type(x).__name__
        if cls == "MX":
            raise BackendError("casadi.MX inputs are not supported: symdyn builds casadi.SX graphs "
                               "(wrap them with casadi.Function to use them in MX expressions)")
        return "casadi" if cls in ("SX", "SXElem") else "numpy"
    if mod == "sympy":
        return "sympy"
    if mod == "symengine":
        return "symengine"
    if mod in ("jax", "jaxlib"):
        return "jax"
    if mod == "numpy":
        if getattr(x, "dtype", None) is not None and x.dtype == object:
            return _kind_of_sequence(x.ravel().tolist())
        return "numpy"
    if isinstance(x, (list, tuple)):
        return _kind_of_sequence(x)
    return None


def _kind_of_sequence(seq) -> str | None:
    kinds = {k for k in (kind_of(e) for e in seq) if k is not None}
    if len(kinds) > 1:
        raise BackendError(f"one input mixes {' and '.join(sorted(kinds))} entries")
    return kinds.pop() if kinds else "numpy"


def _plain_arrays(inputs) -> bool:
    """Every input is None or a NumPy array of numbers (not objects): the NumPy backend's."""
    import numpy as np

    for x in inputs:
        if x is not None and (type(x) is not np.ndarray or x.dtype.hasobject):
            return False
    return True


def resolve_backend(*inputs: Any, backend: str | Backend | None = None,
                    model: Any = None) -> Backend:
    """Choose the backend for an algorithm call.

    SymPy, SymEngine and CasADi inputs cannot be mixed; numbers mix with any. A model whose
    parameters are SymPy symbols forces the SymPy backend (SymEngine when the inputs are SymEngine
    symbols) and refuses an explicit numpy/casadi one. ``backend`` is a name or a backend: one of
    the modules is checked as its name, any other :class:`Backend` is used as given (it checks
    its inputs itself).
    """
    if backend is None and _plain_arrays(inputs) and not getattr(model, "is_symbolic", False):
        return get_backend("numpy")    # the common numeric call, without the general checks
    if backend is not None and not isinstance(backend, str):
        if not isinstance(backend, Backend):
            raise BackendError(f"backend must be a name ({', '.join(BACKENDS)}) or a Backend, "
                               f"got {type(backend).__name__}")
        if _loaded.get(backend.name) is not backend:
            return backend
        backend = backend.name
    kinds = set()
    for x in inputs:
        k = kind_of(x)
        if k is not None:
            kinds.add(k)
    symbolic = {k for k in kinds if k != "numpy"}
    if len(symbolic) > 1:
        raise BackendError(f"cannot mix {' and '.join(sorted(symbolic))} inputs in one call; "
                           "convert them to one library first")
    model_symbolic = model is not None and getattr(model, "is_symbolic", False)
    if backend is not None:
        B = get_backend(backend)
        if symbolic and backend not in symbolic:
            raise BackendError(f"backend={backend!r} was asked for but the inputs are "
                               f"{symbolic.pop()} expressions")
        if model_symbolic and backend not in ("sympy", "symengine"):
            raise BackendError(f"model {model.name!r} has SymPy parameters; it runs only with the "
                               f"sympy backend (substitute numbers with model.subs(...) first)")
        return B
    if model_symbolic:
        if "symengine" in symbolic:
            return get_backend("symengine")
        if "casadi" in symbolic or "jax" in symbolic:
            lib = "CasADi" if "casadi" in symbolic else "JAX"
            raise BackendError(f"model {model.name!r} has SymPy parameters and cannot take {lib} "
                               "inputs; substitute numbers with model.subs(...) first")
        return get_backend("sympy")
    if symbolic:
        return get_backend(symbolic.pop())
    return get_backend("numpy")
