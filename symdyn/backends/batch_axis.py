"""A leading batch axis on the public functions for NumPy and JAX inputs.

:func:`evaluate_batch` runs ``fn(model, ...)`` over states given as arrays of shape ``(B, n)``
(:mod:`symdyn.algorithms.dispatch` decides that a call is batched): NumPy inputs state by state
(one call of the algorithm per state, then the results stacked: the batch axis is a
convenience here, not a speed-up; a compiled model has the C batch loop), JAX inputs through
``jax.vmap`` (so that it also works inside ``jax.jit``). Options and non-state arguments are
shared by every state. Results have the leading axis ``B``: arrays ``(B, ...)``, scalars
``(B,)``, tuples, lists and dicts element-wise.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from . import BackendError, kind_of

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["STATE_INPUTS", "batch_size", "evaluate_batch", "is_batch", "stack_results",
           "state_inputs"]


# parameter names that hold one state's vector, and the model size each has ("nq" or "nv")
STATE_INPUTS = {"q": "nq", "qd": "nv", "qdd": "nv", "tau": "nv", "qd_minus": "nv",
                "qd_r": "nv", "qr_d": "nv", "qr_dd": "nv", "v": "nv"}


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


def stack_results(results: list) -> Any:
    """Stack per-state results along a new leading axis, keeping tuples, lists and dicts."""
    head = results[0]
    if isinstance(head, tuple):
        return tuple(stack_results([r[k] for r in results]) for k in range(len(head)))
    if isinstance(head, list):
        return [stack_results([r[k] for r in results]) for k in range(len(head))]
    if isinstance(head, dict):
        return {k: stack_results([r[k] for r in results]) for k in head}
    if head is None:
        return None
    return np.stack([np.asarray(r, dtype=float) for r in results])


def evaluate_batch(fn: Callable[..., Any], model: Any, args: tuple, kwargs: dict) -> Any:
    """``fn(model, *args, **kwargs)`` over the leading axis of its state inputs (see the module
    docstring). ValueError when the state inputs' batch sizes differ; the per-state errors
    (NaN, shapes, quaternions) keep their type and name the state."""
    bound = inspect.signature(fn).bind(model, *args, **kwargs)
    arguments = bound.arguments
    names = [n for n in state_inputs(fn) if arguments.get(n) is not None]
    values = [arguments[n] for n in names]
    n_states = batch_size(model, names, values, fn.__name__)
    assert n_states is not None      # the dispatcher calls this for batches only
    kinds = {k for k in map(kind_of, values) if k is not None}
    if "jax" in kinds:
        return _vmap(fn, arguments, names, values)
    if kinds - {"numpy"}:
        raise BackendError(f"{fn.__name__}: a batch axis needs NumPy or JAX arrays, got "
                           f"{' and '.join(sorted(kinds))} inputs")
    results = []
    for b in range(n_states):
        call = dict(arguments, **{n: x[b] for n, x in zip(names, values)})
        try:
            results.append(fn(**call))
        except (ValueError, TypeError) as exc:
            raise _with_state(exc, b) from exc
    return stack_results(results)


def _with_state(exc: Exception, b: int) -> Exception:
    """``exc`` of the same type, its message prefixed with the state's index (``exc`` itself
    where its type takes another constructor)."""
    try:
        return type(exc)(f"state {b} of the batch: {exc}")
    except Exception:  # noqa: BLE001 - an exception type with its own constructor
        return exc


def _vmap(fn: Callable[..., Any], arguments: dict, names: list, values: list) -> Any:
    import jax

    def one(*xs):
        return fn(**dict(arguments, **dict(zip(names, xs))))

    return jax.vmap(one)(*values)
