"""Per-body steps: the unit of the recursion-keeping compiled form.

An algorithm's loop bodies are written as *steps*: functions of the backend ``B`` and of native
arrays (plus static data such as a joint or ``None``), marked with :func:`step`. Called with an
ordinary backend a step is a plain function call, so the algorithm runs as before on NumPy,
SymPy, SymEngine, CasADi and JAX. A *recording* backend (``B.recorder``, see
:mod:`symdyn.codegen.recursive`) receives the call instead: it traces the step once per
signature (joint kind, shapes, structure of the arguments) into a kernel and records the call as
one instruction of a program, which a C loop then runs over a table of model constants. The
compiled code then grows with the number of joint kinds, not with the number of bodies.

Rules for a step: no side effects, results only through its return value (nested tuples of
arrays, ``None`` allowed); everything an algorithm computes in a recording must happen inside a
step (outside them it may only index lists, pass values on and assemble the result with
``B.vcat``/``B.block``/``B.zeros``).
"""
from __future__ import annotations

import functools
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def step(fn: F) -> F:
    """Mark ``fn(B, *args)`` as a per-body step (see the module docstring)."""
    @functools.wraps(fn)
    def call(B, *args):
        recorder = getattr(B, "recorder", None)
        if recorder is None:
            return fn(B, *args)
        return recorder.call(fn, args)
    call.__wrapped_step__ = fn  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
