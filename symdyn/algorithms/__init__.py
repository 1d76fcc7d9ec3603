"""Rigid-body algorithms, each written once over the scalar backends.

No module here imports numpy, sympy or casadi: every array is allocated through the backend
resolved at entry (see :mod:`symdyn.backends`).
"""
from .aba import aba
from .aba_derivatives import aba_derivatives
from .christoffel import christoffel, christoffel_from_mass_matrix, christoffel_nonzero
from .configuration import integrate
from .com import (center_of_mass, centroidal_momentum, centroidal_momentum_matrix,
                  centroidal_momentum_matrix_time_variation, com_jacobian, total_mass)
from .coriolis import coriolis_matrix, coriolis_product, coriolis_transpose_product
from .crba import crba
from .energy import kinetic_energy, mechanical_energy, potential_energy
from .friction import friction_torque
from .frames import (frame_classical_acceleration, frame_jacobian,
                     frame_jacobian_time_variation, frame_placement, frame_velocity,
                     joint_frames)
from .kinematics import body_jacobians, forward_kinematics
from .rnea import gravity_vector, nonlinear_effects, rnea
from .rnea_derivatives import rnea_derivatives

__all__ = ["aba", "aba_derivatives", "body_jacobians", "christoffel", "integrate",
           "christoffel_from_mass_matrix", "christoffel_nonzero", "coriolis_matrix",
           "coriolis_product", "coriolis_transpose_product", "crba", "forward_kinematics",
           "gravity_vector", "nonlinear_effects", "rnea", "rnea_derivatives",
           "center_of_mass", "centroidal_momentum", "centroidal_momentum_matrix",
           "centroidal_momentum_matrix_time_variation", "com_jacobian", "total_mass",
           "kinetic_energy", "mechanical_energy", "potential_energy",
           "frame_classical_acceleration", "frame_jacobian", "frame_jacobian_time_variation",
           "frame_placement", "frame_velocity", "joint_frames", "friction_torque"]

# Regressors: linear in the inertial parameters of symdyn.identification.parameters
from .regressors import (joint_torque_regressor, kinetic_energy_regressor,  # noqa: E402
                         potential_energy_regressor, slotine_li_regressor)

__all__ += ["joint_torque_regressor", "kinetic_energy_regressor", "potential_energy_regressor",
            "slotine_li_regressor"]

# Second-order derivatives of inverse dynamics (SO-IDSVA) and forward dynamics
from .rnea_second_derivatives import aba_second_derivatives, rnea_second_derivatives  # noqa: E402

__all__ += ["aba_second_derivatives", "rnea_second_derivatives"]

# Frame spatial accelerations and the analytical derivatives of frame kinematics
from .kinematics_derivatives import (frame_acceleration,  # noqa: E402
                                     frame_acceleration_derivatives, frame_kinematic_hessian,
                                     frame_velocity_derivatives)

from .centroidal_derivatives import (centroidal_dynamics_derivatives,  # noqa: E402
                                     generalized_gravity_derivatives, static_torque_derivatives)

__all__ += ["frame_acceleration", "frame_acceleration_derivatives", "frame_kinematic_hessian",
            "frame_velocity_derivatives", "centroidal_dynamics_derivatives",
            "generalized_gravity_derivatives", "static_torque_derivatives"]
