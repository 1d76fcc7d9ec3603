"""Rigid-body algorithms, each written once over the scalar backends.

No module here imports numpy, sympy or casadi: every array is allocated through the backend
resolved at entry (see :mod:`symdyn.backends`).
"""
from .aba import aba
from .crba import crba
from .kinematics import body_jacobians, forward_kinematics
from .rnea import gravity_vector, nonlinear_effects, rnea

__all__ = ["aba", "body_jacobians", "crba", "forward_kinematics", "gravity_vector",
           "nonlinear_effects", "rnea"]
