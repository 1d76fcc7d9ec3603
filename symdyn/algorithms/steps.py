"""Per-body steps: the unit in which a backend may run an algorithm.

An algorithm's loop bodies are written as *steps*: functions of the backend ``B`` and of native
arrays (plus static data such as a joint or ``None``), marked with :func:`step`. A call goes
through the backend's hook ``B.call_step(fn, args)``: the backend modules call ``fn(B, *args)``;
a backend may instead run each step as a unit of its own (trace it once per signature and record
the call, so that compiled code grows with the number of joint kinds, not of bodies).

Rules for a step: no side effects, results only through its return value (nested tuples of
arrays, ``None`` allowed); everything an algorithm computes should happen inside a step
(outside them it indexes lists, passes values on and assembles the result with
``B.vcat``/``B.block``/``B.zeros``/``B.assign``), so that every backend can run it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, TypeVar

from ..backends._plain import DirectCall
from ..types import Backend

F = TypeVar("F", bound=Callable)


def step(fn: F) -> F:
    """Mark ``fn(B, *args)`` as a per-body step (see the module docstring)."""
    @functools.wraps(fn)
    def call(B: Backend, *args: Any) -> Any:
        hook = B.call_step
        if type(hook) is DirectCall:   # a backend module: the hook would call fn(B, *args)
            return fn(B, *args)
        return hook(fn, args)
    call.__wrapped_step__ = fn  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def dense_step(fn: F) -> F:
    """:func:`step` for a step whose arguments are assembled from many places (pages of a
    tensor, columns from several steps): a backend that runs steps as units may first copy each
    argument into one dense block, so that every call of the same shapes is one unit (the
    recording backend's gathers)."""
    fn.dense_arguments = True  # type: ignore[attr-defined]
    return step(fn)


def matmul_step(fn: F) -> F:
    """:func:`dense_step` for ``fn(B, A, X) == A @ X``: a backend that runs steps as units may
    run it as a native product of the dense blocks (the recording backend's matmul kernels)."""
    fn.matmul = True  # type: ignore[attr-defined]
    return dense_step(fn)


def loop_step(B: Backend, fn: Callable, calls: Sequence[tuple]) -> list:
    """``[fn(B, *args) for args in calls]`` for a :func:`step` ``fn`` whose calls do not read
    each other's results (an ancestor loop whose blocks need no transform): a backend that
    records steps may record the loop as one (the recording backend's ``call_steps``: the
    first call traced, the others taken as the same kernel at other addresses)."""
    hook = getattr(B, "call_steps", None)
    if hook is None:
        return [fn(B, *args) for args in calls]
    return hook(fn.__wrapped_step__, calls)  # type: ignore[attr-defined]


def run_as_step(B: Backend, fn: Callable, *args: Any) -> Any:
    """``fn(B, *args)`` as one step: for a part of an algorithm that computes outside steps
    (scalar factorizations, frame terms) inside one otherwise made of steps. ``fn`` may close
    over static data (the model, the contacts); each call is a unit of its own."""
    return step(fn)(B, *args)
