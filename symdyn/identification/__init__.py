"""Inertial parameters and their identification: the 10 parameters of each body and models built
from them (:mod:`.parameters`), and the base parameters of a model's regressor
(:mod:`.base`). The regressors themselves are algorithms (:mod:`symdyn.algorithms.regressors`)."""
from .base import BaseParameters, base_parameters
from .parameters import (PARAMETER_NAMES, inertia_from_parameters, inertial_parameters,
                         parameter_names, parameters_from_inertia, parameters_from_spatial,
                         with_inertial_parameters)

__all__ = ["PARAMETER_NAMES", "BaseParameters", "base_parameters", "inertia_from_parameters",
           "inertial_parameters", "parameter_names", "parameters_from_inertia",
           "parameters_from_spatial", "with_inertial_parameters"]
