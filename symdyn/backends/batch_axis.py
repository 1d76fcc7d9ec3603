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
from typing import Any, Callable

import numpy as np

from . import BackendError, kind_of

__all__ = ["evaluate_batch", "stack_results"]


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
    from ..algorithms.dispatch import batch_size, state_inputs

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
