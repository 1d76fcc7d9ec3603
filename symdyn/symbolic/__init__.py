"""Closed-form symbolic output: simplified M, C* and Christoffel symbols, printed as LaTeX,
Python and C. See :mod:`symdyn.symbolic.core` for conventions.

``christoffel(model, structured=True)`` (and ``coriolis_matrix``, ``mass_matrix``, ``regressor``)
return structured closed forms (:mod:`symdyn.symbolic.structured`): shared definitions in recursion
order, then per-entry expressions, for real arms.

Attributes load lazily, so ``symdyn.cli.symbolic`` (registered with the ``symdyn`` command) does
not import SymPy until a symbolic command runs.
"""
from __future__ import annotations

import importlib

_ATTRS = {
    "SymbolicResult": "core", "as_model": "core", "christoffel": "core", "coordinates": "core",
    "Progress": "core",
    "StructuredResult": "structured", "regressor": "structured",
    "coriolis_matrix": "core", "mass_matrix": "core", "symbolize_inertias": "core",
    "coriolis_from_christoffel": "export", "lambdify": "export", "to_c": "export",
    "to_latex": "export", "to_python": "export",
    "equal": "simplify", "simplify_kinematic": "simplify", "trig_normal_form": "simplify",
}

__all__ = sorted(_ATTRS)


def __getattr__(name: str):
    mod = _ATTRS.get(name)
    if mod is None:
        raise AttributeError(f"module 'symdyn.symbolic' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
