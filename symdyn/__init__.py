"""symdyn: rigid-body dynamics written once over NumPy, SymPy and CasADi SX.

Conventions: spatial vectors are [angular; linear]; Gamma[i, j, k] with
C[i, j] = sum_k Gamma[i, j, k] qd[k]; quaternions (x, y, z, w); floating-base velocities are body
velocities [omega; v]. See :mod:`symdyn.spatial`, :mod:`symdyn.joints`, :mod:`symdyn.model`.
"""
from .algorithms import (aba, body_jacobians, crba, forward_kinematics, gravity_vector,
                         nonlinear_effects, rnea)
from .backends import BackendError, get_backend
from .joints import Fixed, Floating, Helical, Planar, Prismatic, Revolute, Spherical
from .model import Body, Model, ModelError
from .spatial import Transform

__version__ = "0.1.0"

__all__ = ["aba", "body_jacobians", "crba", "forward_kinematics", "gravity_vector",
           "nonlinear_effects", "rnea", "BackendError", "get_backend", "Fixed", "Floating",
           "Helical", "Planar", "Prismatic", "Revolute", "Spherical", "Body", "Model",
           "ModelError", "Transform"]
