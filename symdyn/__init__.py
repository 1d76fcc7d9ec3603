"""symdyn: rigid-body dynamics written once over NumPy, SymPy (SymEngine) and CasADi SX.

Conventions: spatial vectors are [angular; linear]; Gamma[i, j, k] with
C*[i, j] = sum_k Gamma[i, j, k] qd[k]; quaternions (x, y, z, w); floating-base and spherical
velocities are body velocities ([omega; v] for a free-flyer). See :mod:`symdyn.spatial`,
:mod:`symdyn.joints`, :mod:`symdyn.model`.

The backend follows the inputs: NumPy arrays/lists give NumPy results, ``sympy.Matrix`` SymPy
results, ``casadi.SX`` CasADi graphs (or pass ``backend=``). Submodules: :mod:`symdyn.models`
(builders), :mod:`symdyn.io` (URDF, MJCF, robots, spec strings such as ``"serial:20"``),
:mod:`symdyn.interop` (Pinocchio, MuJoCo), :mod:`symdyn.identification` (inertial and base
parameters), :mod:`symdyn.symbolic` (closed forms and LaTeX/Python/C export),
:mod:`symdyn.codegen` (compiled C fast path), :mod:`symdyn.jax` (compiled JAX, optional),
:mod:`symdyn.constrained` (closed loops), :mod:`symdyn.reference` (AD / finite-difference
reference derivatives that check the analytical ``rnea_derivatives`` and ``aba_derivatives``),
:mod:`symdyn.cli` (the ``symdyn`` command).
"""
from . import models
from .algorithms import (aba, aba_derivatives, body_jacobians, christoffel,
                         christoffel_from_mass_matrix, christoffel_nonzero, coriolis_matrix,
                         coriolis_product, coriolis_transpose_product, crba, forward_kinematics,
                         gravity_vector, integrate, nonlinear_effects, rnea, rnea_derivatives)
from .algorithms import (center_of_mass, centroidal_momentum, centroidal_momentum_matrix,
                         centroidal_momentum_matrix_time_variation, com_jacobian,
                         frame_classical_acceleration, frame_jacobian,
                         frame_jacobian_time_variation, frame_placement, frame_velocity,
                         joint_frames, kinetic_energy, mechanical_energy, potential_energy,
                         total_mass)
from .algorithms import friction_torque
from .backends import BackendError, get_backend
from .coordinates import CoMCoordinates, change_coordinates, com_coordinates
from .joints import Fixed, Floating, Helical, Planar, Prismatic, Revolute, Spherical
from .model import Body, Limits, Mimic, Model, ModelError
from .reference import reference_aba_derivatives, reference_rnea_derivatives
from .io import available_robots, load_robot, robot_urdf
from .reduce import (expand_mimic, mimic_aba, mimic_crba, mimic_matrix, mimic_rnea, reduce_mimic,
                     reduced_model)
from .spatial import Transform
from .io import URDFError, load_urdf

__version__ = "0.1.0"

__all__ = ["aba", "aba_derivatives", "body_jacobians", "christoffel",
           "christoffel_from_mass_matrix", "christoffel_nonzero", "coriolis_matrix",
           "coriolis_product", "coriolis_transpose_product", "crba", "forward_kinematics",
           "gravity_vector", "integrate", "nonlinear_effects", "rnea", "rnea_derivatives", "BackendError",
           "get_backend", "CoMCoordinates", "change_coordinates", "com_coordinates", "Fixed",
           "Floating", "Helical", "Planar", "Prismatic", "Revolute", "Spherical", "Body", "Model",
           "ModelError", "available_robots", "load_robot", "robot_urdf", "Transform", "URDFError",
           "load_urdf", "models", "reference_aba_derivatives", "reference_rnea_derivatives",
           "center_of_mass", "centroidal_momentum", "centroidal_momentum_matrix",
           "centroidal_momentum_matrix_time_variation", "com_jacobian", "total_mass",
           "kinetic_energy", "mechanical_energy", "potential_energy",
           "frame_classical_acceleration", "frame_jacobian", "frame_jacobian_time_variation",
           "frame_placement", "frame_velocity", "joint_frames", "friction_torque", "Limits",
           "Mimic", "expand_mimic", "mimic_aba", "mimic_crba", "mimic_matrix", "mimic_rnea",
           "reduce_mimic", "reduced_model"]

# Interop: Pinocchio models both ways, MJCF through MuJoCo (optional extra)
from .io import load_mjcf  # noqa: E402
from .interop import from_mujoco, from_pinocchio, to_pinocchio  # noqa: E402

__all__ += ["from_pinocchio", "to_pinocchio", "from_mujoco", "load_mjcf"]

# Regressors and inertial parameters
from .algorithms import (joint_torque_regressor, kinetic_energy_regressor,  # noqa: E402
                         potential_energy_regressor, slotine_li_regressor)
from .identification import (BaseParameters, base_parameters,  # noqa: E402
                             inertial_parameters, with_inertial_parameters)

__all__ += ["joint_torque_regressor", "kinetic_energy_regressor", "potential_energy_regressor",
            "slotine_li_regressor", "BaseParameters", "base_parameters", "inertial_parameters",
            "with_inertial_parameters"]

# Second-order derivatives of inverse and forward dynamics
from .algorithms import aba_second_derivatives, rnea_second_derivatives  # noqa: E402

__all__ += ["aba_second_derivatives", "rnea_second_derivatives"]

# Rigid contacts: contact kinematics and constrained / impulse dynamics
from .contact import (Contact, constraint_dynamics, contact_acceleration_drift,  # noqa: E402
                      contact_inverse_dynamics, contact_jacobian, contact_jacobian_time_variation,
                      contact_velocity, impulse_dynamics, kkt_matrix_inverse)

__all__ += ["Contact", "constraint_dynamics", "contact_acceleration_drift",
            "contact_inverse_dynamics", "contact_jacobian", "contact_jacobian_time_variation",
            "contact_velocity", "impulse_dynamics", "kkt_matrix_inverse"]

# Frame spatial accelerations and the analytical derivatives of kinematics and statics
from .algorithms.kinematics_derivatives import (frame_acceleration,  # noqa: E402
                                                frame_acceleration_derivatives,
                                                frame_kinematic_hessian,
                                                frame_velocity_derivatives)

from .algorithms.centroidal_derivatives import (centroidal_dynamics_derivatives,  # noqa: E402
                                                generalized_gravity_derivatives,
                                                static_torque_derivatives)

__all__ += ["frame_acceleration", "frame_acceleration_derivatives", "frame_kinematic_hessian",
            "frame_velocity_derivatives", "centroidal_dynamics_derivatives",
            "generalized_gravity_derivatives", "static_torque_derivatives"]

# Analytical derivatives of the rigid contact dynamics
from .contact import constraint_dynamics_derivatives, impulse_dynamics_derivatives  # noqa: E402

__all__ += ["constraint_dynamics_derivatives", "impulse_dynamics_derivatives"]

# A compiled model: every sd.* numeric call on it runs generated C (built on first use)
from .compiled import CompiledModel, compiled  # noqa: E402

__all__ += ["CompiledModel", "compiled"]

# Snapping rotation entries within a tolerance of 0, +-1 (file loaders' snap=, Model.snapped)
from .snapping import SNAP_TOLERANCE, SnapReport  # noqa: E402

__all__ += ["SNAP_TOLERANCE", "SnapReport"]
