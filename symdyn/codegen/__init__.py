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
``C[i, j] = sum_k Gamma[i, j, k] qd[k]``; spatial vectors and Jacobian rows [angular; linear];
scalars (energies) as shape ``()`` arrays.

Beyond the dynamics algorithms, :data:`ALGORITHMS` holds the toolkit (groups ``frames``, ``com``,
``energy``, ``regressors``). Frame functions fix their frame at build time and are keyed by it::

    lib = build(model, {"frame_jacobian": {"frame": ["panda_hand", "panda_link7"],
                                           "reference": "local_world_aligned"},
                        "com_jacobian": {}, "joint_torque_regressor": {}})
    J = lib.frame_jacobian["panda_hand"](q)        # or lib["frame_jacobian:panda_hand"](q)

``build(..., parameters="inertial")`` gives the inertia-dependent functions a last input ``pi``
(:mod:`~symdyn.codegen.parameters`): ``lib.rnea(q, qd, qdd, pi)``.
"""
from .build import build
from .cache import cache_root, clear_cache, model_fingerprint
from .compiler import BuildError, compile_library, compiler_info
from .functions import (ALGORITHMS, GROUPS, AlgorithmSpec, algorithm_options,
                        available_algorithms, casadi_function, required_options)
from .generate import generate_sources
from .loader import CompiledFunction, CompiledModule, FunctionGroup, load
from .names import c_identifier

__all__ = ["ALGORITHMS", "GROUPS", "AlgorithmSpec", "BuildError", "CompiledFunction",
           "CompiledModule", "FunctionGroup", "algorithm_options", "available_algorithms", "build",
           "c_identifier", "cache_root", "casadi_function", "clear_cache", "compile_library",
           "compiler_info", "generate_sources", "load", "model_fingerprint", "required_options"]
