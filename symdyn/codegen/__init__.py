"""Compiled fast path: CasADi functions and C code generation of the symdyn algorithms.

* :func:`casadi_function` - a ``casadi.Function`` with named inputs/outputs (savable ``.casadi``).
* :func:`build` - generate C, compile it (cached) and load it: ``lib = build(model, ["rnea"])``;
  ``lib.rnea(q, qd, qdd)`` calls the C entry point directly, ``lib.rnea.batch(Q, QD, QDD)``
  loops over states in C. Needs a C compiler (gcc or clang; ``$CC``).
* :func:`generate_sources` / :func:`compile_library` / :func:`load` - the steps of ``build``
  (used by ``symdyn codegen``).

Layers: :mod:`~symdyn.codegen.functions` (algorithm registry, tracing to ``casadi.Function``),
:mod:`~symdyn.codegen.generate` (CasADi's C plus the ordered passes over it, wrapper sources),
:mod:`~symdyn.codegen.compiler` (compiler driver), :mod:`~symdyn.codegen.cache`,
:mod:`~symdyn.codegen.loader` (ctypes calls), :mod:`~symdyn.codegen.build` (orchestration).

Output conventions of the compiled functions: NumPy arrays, C order; ``Gamma[i, j, k]`` with
``C[i, j] = sum_k Gamma[i, j, k] qd[k]``; spatial vectors [angular; linear].
"""
from .build import build
from .cache import cache_root, clear_cache, model_fingerprint
from .compiler import BuildError, compile_library, compiler_info
from .functions import (ALGORITHMS, AlgorithmSpec, algorithm_options, available_algorithms,
                        casadi_function)
from .generate import generate_sources
from .loader import CompiledFunction, CompiledModule, load
from .names import c_identifier

__all__ = ["ALGORITHMS", "AlgorithmSpec", "BuildError", "CompiledFunction", "CompiledModule",
           "algorithm_options", "available_algorithms", "build", "c_identifier", "cache_root",
           "casadi_function", "clear_cache", "compile_library", "compiler_info",
           "generate_sources", "load", "model_fingerprint"]
