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
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

from ..model import Model

__all__ = ["STATE_INPUTS", "Evaluator", "batch_size", "dispatch", "is_batch", "state_inputs"]

# parameter names that hold one state's vector, and the model size each has ("nq" or "nv")
STATE_INPUTS = {"q": "nq", "qd": "nv", "qdd": "nv", "tau": "nv", "qd_minus": "nv",
                "qd_r": "nv", "qr_d": "nv", "qr_dd": "nv", "v": "nv"}

F = TypeVar("F", bound=Callable[..., Any])


@runtime_checkable
class Evaluator(Protocol):
    """An object that evaluates the public functions in place of a :class:`Model`."""

    def __symdyn_evaluate__(self, function: Callable[..., Any], args: tuple,
                            kwargs: dict) -> Any: ...


def state_inputs(function: Callable[..., Any]) -> tuple[str, ...]:
    """Names of ``function``'s state inputs (:data:`STATE_INPUTS`), in signature order."""
    params = list(inspect.signature(function).parameters)[1:]
    return tuple(p for p in params if p in STATE_INPUTS)


def is_batch(x: Any, n: int) -> bool:
    """Whether ``x`` is a batch of states of length ``n``: an array (``.ndim``) of shape
    ``(B, n)``; the column ``(n, 1)`` is one state (as the functions take it)."""
    if getattr(x, "ndim", 1) != 2:
        return False
    rows, cols = x.shape
    return cols == n and (rows, cols) != (n, 1)


def batch_size(model: Model, names: Sequence[str], values: Sequence[Any],
               function: str = "") -> int | None:
    """``None`` when the first state input (``values[0]``) is one state; else the number of
    states ``B`` (at least 1), after checking that every other given state input (not None) is
    a batch of ``B`` too (ValueError naming the input otherwise)."""
    sizes = [getattr(model, STATE_INPUTS[n]) for n in names]
    if not values or not is_batch(values[0], sizes[0]):
        return None
    first = int(values[0].shape[0])
    where = f"{function}: " if function else ""
    if first == 0:
        raise ValueError(f"{where}the batch holds no states ({names[0]} of shape "
                         f"{tuple(values[0].shape)})")
    for name, x, n in zip(names[1:], values[1:], sizes[1:]):
        if x is None:
            continue
        if not is_batch(x, n):
            shape = getattr(x, "shape", None)
            got = f"shape {tuple(shape)}" if shape is not None else type(x).__name__
            raise ValueError(f"{where}{names[0]} is a batch of {first} states (shape "
                             f"{tuple(values[0].shape)}) but {name} is not ({got}); give every "
                             f"state input the leading axis: {name} of shape ({first}, {n})")
        if int(x.shape[0]) != first:
            raise ValueError(f"{where}{name} has {int(x.shape[0])} states but {names[0]} has "
                             f"{first}; every state input needs the same leading axis")
    return first


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
                    from ..backends.batch_axis import evaluate_batch
                    return evaluate_batch(fn, model, args, kwargs)
            return fn(model, *args, **kwargs)
        evaluate = getattr(type(model), "__symdyn_evaluate__", None)
        if evaluate is None:
            return fn(model, *args, **kwargs)
        return evaluate(model, public, args, kwargs)

    return public  # type: ignore[return-value]
