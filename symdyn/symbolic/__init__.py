"""Closed-form symbolic output: simplified M, C* and Christoffel symbols, printed as LaTeX,
Python and C. See :mod:`symdyn.symbolic.core` for conventions."""
from .core import SymbolicResult, christoffel, coordinates, coriolis_matrix, mass_matrix
from .export import coriolis_from_christoffel, lambdify, to_c, to_latex, to_python
from .simplify import equal, simplify_kinematic, trig_normal_form

__all__ = ["SymbolicResult", "christoffel", "coordinates", "coriolis_from_christoffel",
           "coriolis_matrix", "equal", "lambdify", "mass_matrix", "simplify_kinematic", "to_c",
           "to_latex", "to_python", "trig_normal_form"]
