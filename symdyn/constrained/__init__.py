"""Constrained mechanisms and induced Coriolis factorizations (paper 001 Secs. V-VI).

* :mod:`.maximal`: maximal-coordinates route (Sec. VI-A; paper 000 eqs. (29)-(31)): body Jacobians,
  their exact time derivatives, and ``C = J^T C_max J + J^T M_max Jring``, an O(N^3) cross-check
  of Algorithm 1 for any open chain (generic over the backends).
* :mod:`.loops`: closed kinematic loops by the spanning-tree method (Sec. VI-C1): ``LoopModel``
  with loop-closure constraints, ``qd = G(q) y``, ``Mbar = G^T M G``, ``Cbar = G^T C G + G^T M Gdot``
  with ``Gdot`` exact (generic over the backends).
* :mod:`.clusters`: the cluster-tree method (Secs. VI-C2/3): local loops grouped into clusters
  that move like multi-body joints, Algorithm 1 over the cluster tree (Mbar, Mbar_dot, Cbar
  without the spanning tree's C*) and the generalized Christoffel symbols in the minimal speeds.
* :mod:`.numeric`: NumPy-only helpers for loops: closure/singularity checks, Newton on the
  closure constraints, RK4 simulation in the independent coordinates, energies.
* :mod:`.mechanisms`: worked models: planar four-bar linkage, five-bar parallel leg, spatial
  2-DoF parallel ankle (crank-rod actuators).
* :mod:`.differentiation`: C* from derivatives of the bias vector with the structure-constant
  correction for generalized speeds (Sec. VI-D), through CasADi AD (imported on demand: it is
  the only module here that imports CasADi).
"""
from .clusters import Cluster, ClusterTree
from .errors import ClosureError, SingularConfigurationError
from .loops import LoopClosure, LoopModel
from .maximal import (body_twist_factorization, coriolis_maximal, jacobian_derivatives,
                      maximal_coordinates)
from .mechanisms import (branched_loops, five_bar_leg, four_bar, loop_chain, parallel_ankle,
                         sized_loop_chain)
from .numeric import complete_configuration, simulate, solve_configuration

__all__ = ["Cluster", "ClusterTree", "branched_loops", "loop_chain", "ClosureError", "LoopClosure", "LoopModel", "SingularConfigurationError",
           "body_twist_factorization", "coriolis_maximal", "jacobian_derivatives",
           "maximal_coordinates", "five_bar_leg", "four_bar", "parallel_ankle", "sized_loop_chain",
           "complete_configuration",
           "simulate", "solve_configuration"]
