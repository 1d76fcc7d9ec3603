"""One chooser between an algorithm's unrolled graph and its recorded step program.

Every evaluator that has both forms picks between them by the same cost model: the unrolled SX
graph (:func:`symdyn.codegen.casadi_function`, CSE applied; ``n`` instructions) is evaluated as
straight-line code, the recorded program (:mod:`symdyn.codegen.recursive`; ``work`` operations a
call) as a loop over per-step kernels. The unrolled graph is faster while it is small, and what
stops it is a budget on ``n`` (a compiler's time and memory, the instruction cache); where both
are large, the program wins once its work is close to the graph's size. An evaluator differs
only in its :class:`Limits`: :data:`C` for the compiled C library (``form=``), :data:`JAX` for
:func:`symdyn.jax.compile` (``route=``).

:func:`choose_form` says whether an algorithm has a recorded form at all; :func:`choose_by_size`
makes the choice once the sizes are known and returns it with its reason, which the compiled
objects keep (the C manifest's ``reason``, ``Compiled.route_reason``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["C", "FORMS", "JAX", "RECURSIVE_ALGORITHMS", "RECURSIVE_OPTIONS", "Choice", "Limits",
           "check_form", "choose_by_size", "choose_form"]

FORMS = ("auto", "unrolled", "recursive")
# algorithms whose every computation is in steps (recordable)
RECURSIVE_ALGORITHMS = ("rnea", "crba", "aba", "nonlinear_effects", "gravity_vector",
                        "coriolis_matrix", "christoffel", "rnea_derivatives", "aba_derivatives",
                        "generalized_gravity_derivatives", "static_torque_derivatives",
                        "rnea_second_derivatives", "aba_second_derivatives",
                        "constraint_dynamics_derivatives")
# options whose other values compute outside steps (no recorded form): aba_derivatives'
# "dmm" (a dense product) and "ltdl" (scalar loops) routes
RECURSIVE_OPTIONS = {"aba_derivatives": {"method": ("auto", "aza")}}


@dataclass(frozen=True)
class Limits:
    """The cost model's bounds for one evaluator.

    ``max_unrolled``: the unrolled graph is kept while it has at most this many instructions.
    ``compare_min`` / ``work_per_instruction`` / ``call_cost``: from ``compare_min``
    instructions on, the program is taken where its cost, its work plus ``call_cost``
    operations per step call, is at most ``work_per_instruction`` operations per unrolled
    instruction (``None``: never below ``max_unrolled``). ``work_ratio``: a program doing more
    than ``work_ratio * max_unrolled`` operations is taken without tracing the unrolled graph,
    whose size is at least ``work / work_ratio`` on every model measured."""

    max_unrolled: int
    compare_min: int | None = None
    work_per_instruction: float = 0.0
    work_ratio: int = 5     # unrolled size >= 0.2 x recorded work: experiments/scaling.py
    call_cost: float = 0.0


# C (gcc): graphs to 40k instructions compile in seconds at -O2 and run faster than the loop;
# from 12k on the loop wins where its work, plus 5 operations per step call (its dispatch and
# argument gathers), is <= 1.5 per instruction (instruction cache). Measured by
# experiments/scaling.py (reports/scaling.md: both forms of 72 model x algorithm pairs; this
# rule picks the faster form, or one within 10 %, on all but the three cells that the rule
# before it, 15k and 1.4 without the call term, also missed, and on five more than it).
C = Limits(max_unrolled=40000, compare_min=12000, work_per_instruction=1.5, call_cost=5.0)
# JAX (XLA:CPU): graphs to 8.5k instructions compile in about a program's time and run faster;
# its bound is XLA's compile time. Measured by experiments/bench_jax.py (its compile table).
JAX = Limits(max_unrolled=8500)


@dataclass(frozen=True)
class Choice:
    """``form``: ``"unrolled"`` or ``"recursive"``; ``reason``: why, in a few words."""

    form: str
    reason: str


def check_form(form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    return form


def choose_form(model, algorithm: str, form: str = "auto", *,
                parameters: str | None = None, options: dict | None = None) -> tuple[str, str]:
    """``(form, reason)`` before any size is known: ``form`` as asked (``ValueError`` where
    ``"recursive"`` is asked for an algorithm or options without a recorded form); for
    ``"auto"`` the unrolled form where there is no recorded one (:data:`RECURSIVE_ALGORITHMS`,
    :data:`RECURSIVE_OPTIONS`, no ``parameters``), else ``"measure"``: :func:`choose_by_size`
    decides once both sizes are known."""
    check_form(form)
    bad = [f"{k}={v!r}" for k, allowed in RECURSIVE_OPTIONS.get(algorithm, {}).items()
           for v in [(options or {}).get(k, allowed[0])] if v not in allowed]
    supported = algorithm in RECURSIVE_ALGORITHMS and parameters is None and not bad
    if form == "recursive":
        if not supported:
            what = (f"parameters={parameters!r}" if parameters is not None else
                    f"{algorithm!r} with {', '.join(bad)}" if bad else f"{algorithm!r}")
            raise ValueError(f"form='recursive' is not available for {what}; it exists for "
                             f"{', '.join(RECURSIVE_ALGORITHMS)} without parameters= "
                             "(aba_derivatives with method 'auto' or 'aza')")
        return "recursive", "asked for"
    if form == "unrolled":
        return "unrolled", "asked for"
    if not supported:
        return "unrolled", ("no recursive form with parameters=" if parameters is not None else
                            f"no recursive form with {', '.join(bad)}" if bad else
                            "no recursive form")
    return "measure", "auto"


def choose_by_size(work: float | None, unrolled_size: Callable[[], int],
                   limits: Limits, calls: int = 0) -> Choice:
    """The form of ``"auto"`` by :class:`Limits`: ``work``, the recorded program's operations a
    call (``None``: no program; the choice is then by the graph's size alone, and
    ``"recursive"`` means that the graph is over budget), ``calls``, its step calls a call, and
    ``unrolled_size()``, the unrolled graph's instructions (called only where ``work`` leaves
    the unrolled form in question)."""
    cap = limits.max_unrolled
    if work is not None and work > limits.work_ratio * cap:
        return Choice("recursive", f"auto: {work} operations per call recorded > "
                                   f"{limits.work_ratio} x {cap}")
    n = unrolled_size()
    if n > cap:
        return Choice("recursive", f"auto: unrolled graph {n} > {cap} instructions")
    if work is not None and limits.compare_min is not None and n >= limits.compare_min:
        cost = work + limits.call_cost * calls
        if cost <= limits.work_per_instruction * n:
            calls_part = (f" + {limits.call_cost:g} x {calls} calls" if limits.call_cost and calls
                          else "")
            return Choice("recursive", f"auto: recorded work {work}{calls_part} <= "
                                       f"{limits.work_per_instruction} x unrolled graph {n} "
                                       f"(>= {limits.compare_min} instructions)")
    return Choice("unrolled", f"auto: unrolled graph {n} <= {cap} instructions")
