"""Scalar backends: plain-function namespaces over native arrays.

A backend module provides ``name``, ``symbolic``, ``zeros``, ``eye``, ``matrix``, ``vector``, ``const``,
``rows``, ``cols``, ``vcat``, ``hcat``, ``block``, ``inv``, ``solve``, ``sin``, ``cos``, ``sqrt``,
``tensor3``, ``set3``, ``skew``, ``is_symbol``, ``to_vector``, ``to_matrix``, ``to_numpy``
(and ``jacobian`` for the symbolic ones). Arrays are the library's own
(numpy.ndarray, sympy.Matrix, casadi.SX); ``@ + - *`` and ``.T`` are used natively.

The backend is resolved once at an algorithm's entry from the types of its inputs (and the model's
parameters), or named explicitly with ``backend="numpy" | "sympy" | "casadi"``.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

BACKENDS = ("numpy", "sympy", "casadi", "symengine")
_loaded: dict[str, ModuleType] = {}


class BackendError(TypeError):
    """Inputs whose types cannot be combined, or an unknown backend name."""


def get_backend(name: str) -> ModuleType:
    """The backend module called ``name`` (imported on first use)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name not in _loaded:
        _loaded[name] = importlib.import_module(f"symdyn.backends.{name}_backend")
    return _loaded[name]


def kind_of(x: Any) -> str | None:
    """'numpy', 'sympy', 'casadi' or None (no information, e.g. None or plain numbers)."""
    if x is None:
        return None
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


def resolve_backend(*inputs: Any, backend: str | None = None, model=None) -> ModuleType:
    """Choose the backend for an algorithm call.

    SymPy, SymEngine and CasADi inputs cannot be mixed; numbers mix with any. A model whose
    parameters are SymPy symbols forces the SymPy backend (SymEngine when the inputs are SymEngine
    symbols) and refuses an explicit numpy/casadi one.
    """
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
        if "casadi" in symbolic:
            raise BackendError(f"model {model.name!r} has SymPy parameters and cannot take CasADi "
                               "inputs; substitute numbers with model.subs(...) first")
        return get_backend("sympy")
    if symbolic:
        return get_backend(symbolic.pop())
    return get_backend("numpy")
