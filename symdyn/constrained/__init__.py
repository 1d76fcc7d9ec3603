"""Constrained mechanisms and induced Coriolis factorizations (paper 001 Secs. V-VI).

* :mod:`.maximal`: maximal-coordinates route (Sec. VI-A; paper 000 eqs. (29)-(31)): body Jacobians,
  their exact time derivatives, and ``C = J^T C_max J + J^T M_max Jring``, an O(N^3) cross-check
  of Algorithm 1 for any open chain (generic over the backends).
* :mod:`.differentiation`: C* from derivatives of the bias vector with the structure-constant
  correction for generalized speeds (Sec. VI-D), through CasADi AD.
"""
from .maximal import (body_twist_factorization, coriolis_maximal, jacobian_derivatives,
                      maximal_coordinates)

__all__ = ["body_twist_factorization", "coriolis_maximal", "jacobian_derivatives",
           "maximal_coordinates"]
