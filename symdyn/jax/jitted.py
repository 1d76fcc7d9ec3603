"""``jax.jit`` with symdyn's XLA options at the top level (:class:`Jitted`)."""
from __future__ import annotations

from typing import Any, Callable

import jax

__all__ = ["COMPILER_OPTIONS", "Jitted", "compiler_options"]

# XLA:CPU's LLVM IR fusion emitters instead of its MLIR ones: 1.5-3x less compile time for these
# long elementwise graphs and programs, about the same run time. Passed through jax.jit's public
# compiler_options; measured by experiments/bench_jax.py (the compile table's default-XLA row).
COMPILER_OPTIONS: dict[str, Any] = {"xla_cpu_use_fusion_emitters": False}
_compiler_options: dict[str, Any] | None = None


def compiler_options() -> dict[str, Any]:
    """The XLA options :func:`symdyn.jax.compile` passes to ``jax.jit``: :data:`COMPILER_OPTIONS`
    where this jaxlib accepts them (checked once on a trivial function), else none."""
    global _compiler_options
    if _compiler_options is None:
        try:
            jax.jit(lambda x: x + 1, compiler_options=COMPILER_OPTIONS).lower(1.0).compile()
            _compiler_options = dict(COMPILER_OPTIONS)
        except jax.errors.JaxRuntimeError:      # an option this XLA does not know: none
            _compiler_options = {}
    return dict(_compiler_options)


def top_options() -> dict[str, Any]:
    """``jax.jit`` keywords of a top-level function: :func:`compiler_options` on a CPU."""
    options = compiler_options() if jax.default_backend() == "cpu" else {}
    return {"compiler_options": options} if options else {}


class Jitted:
    """``jax.jit(fn)`` whose calls from Python are compiled with :func:`compiler_options` where
    JAX's default backend is the CPU: ``jax.jit(fn, compiler_options=...)``, one executable per
    input shapes. Inside a trace (the caller's own ``jit``, ``vmap``, ``grad``, ``jacfwd``) it is
    ``jax.jit(fn)``, compiled with the enclosing function (``jax.jit`` refuses compiler options
    on a nested call). ``options``: the keywords of the top-level ``jax.jit``, for the functions
    that wrap ``fn`` (checks, ``out=``)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.jit = jax.jit(fn)
        self.options = top_options()
        self.top = jax.jit(fn, **self.options) if self.options else self.jit

    def __call__(self, *xs):
        for x in xs:
            if isinstance(x, jax.core.Tracer):
                return self.jit(*xs)
        return self.top(*xs)

    def lower(self, *args, **kwargs):
        return self.top.lower(*args, **kwargs)
