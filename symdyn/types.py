"""Type aliases used in symdyn's annotations.

symdyn's algorithms are written once over several scalar libraries, so the arrays they take and
return are the libraries' own types and are annotated with the aliases below (which are
``typing.Any`` for the type checker: NumPy, SymPy and CasADi arrays share no common protocol).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, TypeAlias, Union

# Backend: the contract of symdyn.backends as a Protocol, e.g. symdyn.backends.get_backend("numpy")
from .backends.protocol import Backend

#: A native array of the backend: ``numpy.ndarray``, ``sympy.Matrix`` (or a SymEngine matrix),
#: ``casadi.SX``. Inputs may also be plain sequences of numbers or symbols.
Array: TypeAlias = Any

#: A random source accepted by ``Model.random_q``: a seed, a ``numpy.random.Generator`` or None.
Seed: TypeAlias = Union[int, Any, None]

#: External forces: None, or one spatial force ``[n; f]`` per body in body coordinates (None
#: entries for bodies without one).
ExternalForces: TypeAlias = Optional[Sequence[Optional[Array]]]

__all__ = ["Array", "Backend", "ExternalForces", "Seed"]
