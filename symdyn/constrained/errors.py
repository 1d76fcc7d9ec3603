"""Errors of the constrained mechanisms (:mod:`symdyn.constrained`)."""


class ClosureError(ValueError):
    """A loop closure that is ill-specified, or a configuration that does not close the loop."""


class SingularConfigurationError(ValueError):
    """The dependent-speed Jacobian K_d is singular at this configuration: G(q) does not exist."""
