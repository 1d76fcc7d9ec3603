"""Rigid-body algorithms, each written once over the scalar backends.

No module here imports numpy, sympy or casadi: every array is allocated through the backend
resolved at entry (see :mod:`symdyn.backends`).
"""
from .aba import aba
from .aba_derivatives import aba_derivatives
from .christoffel import christoffel, christoffel_from_mass_matrix, christoffel_nonzero
from .coriolis import coriolis_matrix, coriolis_product, coriolis_transpose_product
from .crba import crba
from .kinematics import body_jacobians, forward_kinematics
from .rnea import gravity_vector, nonlinear_effects, rnea
from .rnea_derivatives import rnea_derivatives

__all__ = ["aba", "aba_derivatives", "body_jacobians", "christoffel",
           "christoffel_from_mass_matrix", "christoffel_nonzero", "coriolis_matrix",
           "coriolis_product", "coriolis_transpose_product", "crba", "forward_kinematics",
           "gravity_vector", "nonlinear_effects", "rnea", "rnea_derivatives"]
