"""JAX convenience: jitted and vmapped symdyn algorithms over batches of states.

::

    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)        # symdyn computes in float64 (see below)
    import symdyn.jax
    from symdyn.models import serial_chain

    model = serial_chain(7)
    rnea = symdyn.jax.compile(model, "rnea")          # (Q, QD, QDD) -> TAU, leading batch axis
    tau = rnea(Q, QD, QDD)                            # Q: (batch, nq), QD, QDD: (batch, nv)
    tau0 = rnea.single(Q[0], QD[0], QDD[0])           # one state (jitted, not vmapped)
    M, Mdot, C = symdyn.jax.compile(model, "coriolis_matrix", frame="root")(Q, QD)
    dtau_dq = jax.jacfwd(rnea.single)(q, qd, qdd)     # differentiable (q in coordinates)

``algorithm`` is the name of a symdyn function (``"rnea"``, ``"crba"``, ``"aba"``,
``"coriolis_matrix"``, ``"christoffel"``, ``"rnea_derivatives"``, ``"aba_derivatives"``,
``"nonlinear_effects"``, ``"gravity_vector"``, the frame / centre-of-mass / energy functions and
the regressors, the ``mimic_*`` functions) or such a function itself. Its required positional
arguments after ``model`` that are not given in ``options`` are the batched state arguments, in
their order: ``q`` of length ``nq``, ``qd``, ``qdd``, ``tau`` (and the other speeds) of length
``nv``; the mimic functions' ``q_r``, ``qd_r``, ... those of the independent joints. ``options``
(e.g. ``factorization=``, ``frame=``, ``method=``, ``f_ext=``) are fixed at compile time; the frame
functions' ``frame`` is one of them (``compile(model, "frame_jacobian", frame="hand")``). Results
have the function's structure (an array, a tuple of arrays) with the batch axis first.

Routes (``route=``; ``.route`` and ``.route_reason`` say which was taken). All three evaluate the
same generic algorithm source and need no C compiler; all are ``jax.numpy``/``lax`` code, so
``jit``, ``vmap``, ``jacfwd`` and ``grad`` work on ``.single`` and ``.batch`` alike.

* ``"graph"``: the algorithm traced once with CasADi (the unrolled SX graph of
  :func:`symdyn.codegen.casadi_function`, CSE applied), lowered to one JAX operation per scalar
  operation over the batch (:mod:`symdyn.jax.lowering`). Fastest for small models;
  XLA's compile time grows with the graph.
* ``"program"``: the recorded step program of the recursive compiled form (one kernel per step
  signature) run by ``lax.scan`` + ``lax.switch`` (:mod:`symdyn.jax.program`): compile time
  bounded by the kernels, not the model (rnea ... christoffel, the derivatives). Slower per
  state. The model's constants that are exactly 0 or +-1 are folded into the kernels while they
  stay within :data:`~symdyn.jax.routes.FOLD_MAX` instructions.
* ``"trace"``: the algorithm traced with JAX arrays (``vmap`` over ``single``): every function and
  option, including those with no CasADi form.
* ``"auto"`` (default): the one chooser of :mod:`symdyn.codegen.choose`, shared with the C
  library's ``form="auto"``, with its JAX limits (:data:`symdyn.codegen.choose.JAX`, set by
  XLA's compile time): ``"graph"`` while the unrolled graph is within them; beyond,
  ``"program"`` for the algorithms of :data:`~symdyn.jax.routes.PROGRAM_AUTO` and ``"trace"``
  for the others (the derivatives' kernels are large); ``"trace"`` for functions without a
  registered CasADi form (or options it does not take).

Measured in ``reports/jax.md`` (``experiments/bench_jax.py``).

Any JAX array works as input to symdyn's functions directly (``sd.rnea(model, jnp_q, ...)``,
inside your own ``jax.jit``/``vmap``/``grad``): the backend follows the inputs. This package only
packages the common case.

Checks. Under ``jit`` the values are tracers and cannot be checked; ``compile``'s functions
therefore check concrete batches (``check=True``: shapes and dtypes when a call is traced, once
per shape; NaN/inf and unit quaternions in the call itself, one flag that the host reads after
it, and only where the flag says a value failed the host looks for the argument and the state to
name; ``check=False`` skips the values). ``.single`` checks a concrete state on the host before
its call and passes tracers through unchecked. A batch of no states gives empty results.

Compiling. ``compile``'s functions, called from Python on a CPU, are compiled by XLA with
:func:`compiler_options` (passed to ``jax.jit``), one executable per input shapes; inside your
own ``jax.jit`` they are compiled with your function and your options. A function compiles for a
batch shape at its first call with that shape; ``f.warm_up(B, ...)`` compiles it ahead, and
:func:`compile_many` compiles several algorithms so, on threads::

    fs = symdyn.jax.compile_many(model, ["rnea", "crba", "aba"], batch_sizes=(4096,))
    tau = fs["rnea"](Q, QD, QDD)                      # compiled already

Large batches on a CPU run as a loop over chunks of states (:mod:`symdyn.jax.chunks`). Large
results: XLA allocates a call's results afresh, and touching freshly mapped memory can cost more
than the computation; ``f(Q, QD, out=earlier)`` writes the batch into the arrays of earlier
results of the same shapes instead (donated to the call with ``jax.jit``'s ``donate_argnums``:
they are invalid afterwards, the call returns the results). :mod:`symdyn.jax.process` holds the
opt-in, process-wide settings for a process that evaluates batches in a loop (synchronous
dispatch, glibc's allocator); symdyn never applies them itself.

Precision. JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)`` was called
before creating arrays. symdyn does not change that global setting on import; it refuses float32
with a :class:`~symdyn.backends.BackendError` unless you opt in with :func:`allow_float32`.
"""
from __future__ import annotations

import jax

JAX_MIN = (0, 8, 2)     # the jax extra's floor: older releases fail in the program route


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        parts.append(int(digits or 0))
    return tuple(parts)


if _version(jax.__version__) < JAX_MIN:
    raise ImportError(f"symdyn.jax needs JAX >= {'.'.join(map(str, JAX_MIN))}, found "
                      f"{jax.__version__}: pip install 'symdyn[jax]' (or 'jax>=0.8.2')", name="jax")

from .compiled import Compiled, Single, allow_float32, compile, compile_many  # noqa: E402
from .jitted import COMPILER_OPTIONS, Jitted, compiler_options  # noqa: E402
from .routes import ROUTES  # noqa: E402

__all__ = ["COMPILER_OPTIONS", "JAX_MIN", "ROUTES", "Compiled", "Jitted", "Single",
           "allow_float32", "compile", "compile_many", "compiler_options"]
