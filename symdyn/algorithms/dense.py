"""Dense matrix products as steps (:mod:`.steps`): the products of the FD second derivatives and
of the contact derivatives' KKT solve. On the backend modules they are ``A @ X``; a backend that
runs steps as units copies their arguments into dense blocks and may run :func:`product` as a
native product loop."""
from __future__ import annotations

from ..types import Backend
from .steps import dense_step, matmul_step

__all__ = ["negated_sum", "product", "total"]


@matmul_step
def product(B: Backend, A, X):
    """``A X``."""
    return A @ X


@dense_step
def negated_sum(B: Backend, X, *more):
    """``-(X + more...)`` (blocks of one shape)."""
    for Y in more:
        X = X + Y
    return -X


@dense_step
def total(B: Backend, X, *more):
    """``X + more...`` (blocks of one shape)."""
    for Y in more:
        X = X + Y
    return X
