"""Dispatch of the public numeric functions: plain models, model-like evaluators, a batch axis.

Every public numeric function (``rnea``, ``crba``, ``frame_jacobian``, the contact functions ...)
carries :func:`dispatch`. What it does with the first argument:

* a :class:`~symdyn.model.Model`: one type check, and one look at the first state input (``q``,
  or ``qd`` for ``friction_torque``): a 1-D input (or a list, a column, a symbol) runs the
  function as written; an array of shape ``(B, n)`` (``n`` = nq for ``q``, nv for velocities,
  accelerations and torques) is a batch of ``B`` states: every state input must then have the
  same leading axis (ValueError otherwise), options and other arguments are shared, and the
  results get a leading axis ``B`` (tuples and lists element-wise). NumPy batches are evaluated
  state by state; JAX batches through ``jax.vmap`` (:mod:`symdyn.backends.batch_axis`).
* an object with a method ``__symdyn_evaluate__(function, args, kwargs)`` (the
  :class:`Evaluator` protocol, e.g. :class:`symdyn.CompiledModel`): that method answers the call.
  ``function`` is the public function itself (``function(model, *args, **kwargs)`` runs the
  NumPy path on a plain model), ``args``/``kwargs`` the arguments after the first.
* anything else: the function as written (which refuses it with a TypeError).

This module knows nothing of code generation: evaluators bring their own.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Protocol, TypeVar, runtime_checkable

from ..backends.batch_axis import (STATE_INPUTS, batch_size, evaluate_batch, is_batch,
                                   state_inputs)
from ..model import Model

__all__ = ["STATE_INPUTS", "Evaluator", "batch_size", "dispatch", "is_batch", "state_inputs"]

F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class Evaluator(Protocol):
    """An object that evaluates the public functions in place of a :class:`Model`."""

    def __symdyn_evaluate__(self, function: Callable[..., Any], args: tuple,
                            kwargs: dict) -> Any: ...


def dispatch(fn: F) -> F:
    """Decorate a public function ``fn(model, ...)``: see the module docstring."""
    states = state_inputs(fn)
    first = states[0] if states and list(inspect.signature(fn).parameters)[1] == states[0] \
        else None
    size = STATE_INPUTS[first] if first else ""

    @functools.wraps(fn)
    def public(model, *args, **kwargs):
        if isinstance(model, Model):
            if first is not None:
                x = args[0] if args else kwargs.get(first)
                if getattr(x, "ndim", 1) == 2 and is_batch(x, getattr(model, size)):
                    return evaluate_batch(fn, model, args, kwargs)
            return fn(model, *args, **kwargs)
        evaluate = getattr(type(model), "__symdyn_evaluate__", None)
        if evaluate is None:
            return fn(model, *args, **kwargs)
        return evaluate(model, public, args, kwargs)

    return public  # type: ignore[return-value]
