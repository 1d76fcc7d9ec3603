"""Rigid contacts with the environment: contact descriptions, contact kinematics and the
constrained dynamics (forward, impulse, KKT inverse, contact inverse dynamics).

* :mod:`.contact`: :class:`Contact` (a 3-D point contact or a 6-D frame contact at a frame, in a
  reference, with Baumgarte gains) and their resolution against a model.
* :mod:`.kinematics`: the stacked contact Jacobian, its time variation, the contact velocity and
  the acceleration drift (as Pinocchio's ``constraintDynamics`` defines it).
* :mod:`.sparse`: the tree-sparse ``L^T D L`` solves and the small operational-space factorization.
* :mod:`.dynamics`: ``constraint_dynamics``, ``impulse_dynamics``, ``kkt_matrix_inverse``,
  ``contact_inverse_dynamics``.

All are written once over the backends (NumPy, SymPy, SymEngine, CasADi, JAX).
"""
from .contact import Contact, resolve_contacts
from .dynamics import (constraint_dynamics, contact_inverse_dynamics, impulse_dynamics,
                       kkt_matrix_inverse)
from .kinematics import (contact_acceleration_drift, contact_jacobian,
                         contact_jacobian_time_variation, contact_velocity)

__all__ = ["Contact", "constraint_dynamics", "contact_acceleration_drift", "contact_inverse_dynamics",
           "contact_jacobian", "contact_jacobian_time_variation", "contact_velocity",
           "impulse_dynamics", "kkt_matrix_inverse", "resolve_contacts"]
from .derivatives import constraint_dynamics_derivatives, impulse_dynamics_derivatives  # noqa: E402

__all__ += ["constraint_dynamics_derivatives", "impulse_dynamics_derivatives"]
