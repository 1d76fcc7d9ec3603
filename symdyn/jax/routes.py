"""The routes of :func:`symdyn.jax.compile`: which one a compiled algorithm takes, and its
jitted ``(single, batch)`` functions."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symdyn.backends import BackendError, get_backend
from symdyn.codegen import choose

from .arguments import reference_shapes
from . import chunks
from .jitted import Jitted
from .lowering import LoweringError, graph_batch, graph_function
from .program import program_function

__all__ = ["FOLD_MAX", "PROGRAM_AUTO", "ROUTES", "choose_route", "record", "wrap"]

ROUTES = ("auto", "trace", "graph", "program")
# the algorithms route="auto" runs as programs past the JAX limit of symdyn.codegen.choose; the
# derivatives' kernels are large (XLA takes minutes over them), so those are traced instead.
# Measured by experiments/bench_jax.py (compile table).
PROGRAM_AUTO = ("rnea", "crba", "aba", "nonlinear_effects", "gravity_vector", "coriolis_matrix",
                "christoffel")
# programs fold the model's constants 0 and +-1 into their kernels while those hold at most
# FOLD_MAX SX instructions: faster rnea and crba, while larger folded kernels ran no faster and
# compiled 2.4-4.9x longer. Measured by experiments/jax_program_steps.py (g1).
FOLD_MAX = 5000


def choose_route(c: Any, route: str) -> tuple[str, str, tuple[Jitted, Jitted] | None]:
    """``(route, reason, (single, batch))`` of the compiled algorithm ``c`` (``None`` for the
    traced route, whose functions ``c`` makes): ``route`` as asked, or for ``"auto"``
    :func:`symdyn.codegen.choose.choose_by_size` with its :data:`~symdyn.codegen.choose.JAX`
    limits (the graph while it is small; past them the program for :data:`PROGRAM_AUTO`, else
    the trace); the trace where the algorithm has no CasADi form with these options."""
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; choose one of {', '.join(ROUTES)}")
    if route == "trace":
        return "trace", "asked for", None
    from symdyn.codegen.functions import ALGORITHMS, casadi_function
    spec = ALGORITHMS.get(c.name)
    if spec is None or spec.function is not c.fn or spec.input_names != c.args:
        if route != "auto":
            raise ValueError(f"route={route!r} needs one of symdyn's registered algorithms "
                             f"with its state arguments ({', '.join(sorted(ALGORITHMS))}); "
                             f"{c.name!r} runs with route='trace'")
        return "trace", f"{c.name!r} is not a registered algorithm with these arguments", None
    recordable = choose.choose_form(c.model, c.name, "auto", options=c.options)[0] == "measure"
    if route == "program" and not recordable:
        raise ValueError(f"route='program' is not available for {c.name!r} with options "
                         f"{c.options}; it exists for {', '.join(choose.RECURSIVE_ALGORITHMS)}")
    try:
        shapes, as_tuple = reference_shapes(c)

        def wrapped(route: str, reason: str, lowered_from):
            return wrap(route, reason, lowered_from, shapes, as_tuple, c.args, c.sizes)
        if route == "program":
            return wrapped("program", "asked for", record(c))
        graph: list = []

        def unrolled_size() -> int:
            graph.append(casadi_function(c.model, c.name, layout="numpy", **c.options))
            return graph[0].n_instructions()
        if route == "graph":
            unrolled_size()
            return wrapped("graph", "asked for", graph[0])
        program = record(c) if recordable and c.name in PROGRAM_AUTO else None
        choice = choose.choose_by_size(None if program is None else program.stats["work"],
                                       unrolled_size, choose.JAX,
                                       calls=0 if program is None else program.stats["n_calls"])
        if choice.form == "unrolled":
            return wrapped("graph", choice.reason, graph[0])
        if program is not None:
            return wrapped("program", choice.reason, program)
        return "trace", choice.reason, None
    except LoweringError as e:
        if route != "auto":
            raise BackendError(str(e)) from None
        return "trace", f"auto: {e}", None
    except (TypeError, ValueError, NotImplementedError, BackendError) as e:
        # options the CasADi / recording backends do not take (the traced route may)
        if route != "auto":
            raise
        return "trace", f"auto: no CasADi form with these options ({type(e).__name__}: {e})", None


def record(c: Any):
    """The program of ``route="program"``: constants folded (``fold=True``) while its kernels
    stay within :data:`FOLD_MAX` SX instructions, else read from the constant table."""
    from symdyn.codegen import recursive
    from symdyn.codegen.functions import algorithm_spec, exact_rotations, recorded_options
    spec = algorithm_spec(c.name)
    model = exact_rotations(c.model)
    # fuse=1: one kernel per step signature; fused runs (what the C loop gains from) are more
    # kernel variants, and XLA's compile time follows the kernels' total size
    args = (model, spec.function, list(spec.input_sizes(model)))
    # gather=False: the program route maps each value to a row of its scan (no signed copies);
    # dense steps keep a kernel per argument pattern here
    options = dict(name=c.name, fuse=1, gather=False, **recorded_options(c.name, c.options))
    try:    # stops as soon as the folded kernels pass FOLD_MAX
        return recursive.record(*args, fold=True, max_instructions=FOLD_MAX, **options)
    except recursive.OverBudget:
        return recursive.record(*args, fold=False, **options)


def wrap(route: str, reason: str, lowered_from, shapes, as_tuple: bool, args, sizes):
    """Jitted ``(single, batch)`` of a lowered graph or program: inputs as float arrays of the
    backend's dtype (float32 refused unless opted in) and of the expected shapes."""
    backend = get_backend("jax")

    def inputs(xs, batched: bool):
        if len(xs) != len(args):
            raise TypeError(f"takes {len(args)} arguments ({', '.join(args)}), got {len(xs)}")
        out = []
        for x, a, n in zip(xs, args, sizes):
            x = backend._check_float(x if isinstance(x, (jax.Array, jax.core.Tracer))
                                     else jnp.asarray(np.asarray(x, float)), a)
            want = (x.shape[0], n) if batched and x.ndim == 2 else (n,)
            if x.shape != want:
                raise ValueError(f"{a} must have shape {'(batch, %d)' % n if batched else want}, "
                                 f"got {tuple(x.shape)}")
            out.append(x)
        return out

    if route == "graph":
        fn = graph_function(lowered_from, shapes)
        fb = chunks.in_chunks(graph_batch(lowered_from, shapes), shapes, chunks.CHUNK_GRAPH,
                             chunks.CHUNKS_MIN_GRAPH)
    else:
        program = program_function(lowered_from, shapes)
        fb = chunks.in_chunks(program, shapes,
                             chunks.program_chunk(program.result_rows))  # type: ignore

        def fn(*xs):
            return tuple(o[0] for o in program(*(x[None] for x in xs)))

    def single(*xs):
        out = fn(*inputs(xs, False))
        return out if as_tuple else out[0]

    def batch(*xs, out=None):
        # out: a donated result set to write into (see in_chunks; Compiled's out=)
        xs = inputs(xs, True)
        if xs and xs[0].shape[0] == 0:      # no states: empty results (the lowerings index row 0)
            res = tuple(jnp.zeros((0,) + tuple(s), xs[0].dtype) for s in shapes)
        else:
            res = fb(*xs, out=out)
        return res if as_tuple else res[0]
    batch.writes_into = True                     # type: ignore[attr-defined]
    batch.state_shapes = shapes                  # type: ignore[attr-defined]
    return route, reason, (Jitted(single), Jitted(batch))
