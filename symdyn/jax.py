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
  operation over the batch (:mod:`symdyn.codegen.jax_lowering`). Fastest for small models;
  XLA's compile time grows with the graph.
* ``"program"``: the recorded step program of the recursive compiled form (one kernel per step
  signature) run by ``lax.scan`` + ``lax.switch``: compile time bounded by the kernels, not the
  model (rnea ... christoffel, the derivatives). Slower per state. The model's constants that
  are exactly 0 or +-1 are folded into the kernels while they stay within :data:`FOLD_MAX`
  instructions (fewer operations, more kernels to compile).
* ``"trace"``: the algorithm traced with JAX arrays (``vmap`` over ``single``): every function and
  option, including those with no CasADi form.
* ``"auto"`` (default): ``"graph"`` while the unrolled graph has at most :data:`GRAPH_MAX`
  instructions; beyond, ``"program"`` for the algorithms of :data:`PROGRAM_AUTO` and
  ``"trace"`` for the others (the derivatives' kernels are large); ``"trace"`` for functions
  without a registered CasADi form (or options it does not take).

Measured in ``reports/jax.md`` (``experiments/bench_jax.py``).

Any JAX array works as input to symdyn's functions directly (``sd.rnea(model, jnp_q, ...)``,
inside your own ``jax.jit``/``vmap``/``grad``): the backend follows the inputs. This module only
packages the common case.

Checks. Under ``jit`` the values are tracers and cannot be checked; ``compile``'s functions
therefore check concrete batches (``check=True``: shapes and dtypes when a call is traced, once
per shape; NaN/inf and unit quaternions in the call itself, one flag that the host reads after
it, and only where the flag says a value failed the host looks for the argument and the state to
name; ``check=False`` skips the values). ``.single`` checks a concrete state on the host before
its call (it is one state: the host's check costs little beside the call) and passes tracers
through unchecked. A batch of no states gives empty results.

Compile time. ``compile``'s functions, called from Python on a CPU, are compiled by XLA with
:func:`compiler_options` (XLA's LLVM IR fusion emitters instead of its MLIR ones: 1.5-3x less
compile time for these long elementwise graphs and programs, about the same run time; the
comment at :data:`COMPILER_OPTIONS` has the figures), one executable per input shapes. Inside
your own ``jax.jit`` they are compiled with your function, with your options (``jax.jit``
accepts ``compiler_options=`` at the top level: pass ``symdyn.jax.compiler_options()`` there
for the same).

Compiling ahead. A function compiles for a batch shape at its first call with that shape;
``f.warm_up(B, ...)`` compiles what those calls run (checks and result reuse included) without
running anything, and :func:`compile_many` compiles several algorithms so, on threads: while one
algorithm is recorded and traced in Python, XLA compiles another (G1's five, 4096 states, 2
cores: 30.9 s one after the other, 24.5 s on two threads; the compile table of reports/jax.md
has the benchmark's figures)::

    fs = symdyn.jax.compile_many(model, ["rnea", "crba", "aba"], batch_sizes=(4096,))
    tau = fs["rnea"](Q, QD, QDD)                      # compiled already

Small batches on a CPU. XLA's CPU client runs each call on a worker thread; when that thread
sits on another core, the hand-off costs more than a small batch's arithmetic (UR5 rnea, 100
states, 2 cores: 1.1-1.3 us a state unpinned, 0.41 pinned to one core), and on the same core it
still costs two thread switches a call. A process that evaluates small batches in a loop gains
from running its calls on the calling thread (:func:`synchronous_dispatch`, before JAX starts)
and on one core (``taskset -c 0 python ...``, or ``os.sched_setaffinity(0, {0})`` before
importing JAX); large batches gain a little from more cores (XLA splits large fusions over the
cores it sees). One call's code and buffers can fill a core's L2 cache (G1 crba, 100 states: 387
KB of machine code, 1.5 MB of buffers with its 957 KB of results), and whatever the host touches
between two calls is missing from the cache in the next one. Measured on one core, one run, us a
call (``experiments/jax_call_parts.py g1 crba 100``), against 287 with nothing between the
calls: writing 4 / 64 / 256 KB between them, 297 / 315 / 356 (the writes alone take 0.4 / 4.5 /
17); a NumPy sum of a 3-element array (0.8 alone), 312. A loop over small batches runs fastest
when the host does little between calls; more states per call amortise it. Less than half of such
a call is arithmetic: sampled with ``perf`` over a loop of default calls at 100 states (one core;
``experiments/jax_call_parts.py ROBOT ALG 100 --loop 10``), Panda christoffel (259 us a call) /
G1 crba (321 us) spent 43 / 45 % in XLA's compiled kernels, 27 / 28 % in XLA's runtime (its
thunk executor runs each of the call's ~110 kernels and their dependencies), 11 / 8 % in the
operating system (mostly the two thread switches), 9 / 9 % in the C library (copies, allocation
of the call's buffers) and 9 / 9 % in Python (the loop, JAX's dispatch, the wrapper's checks).

One kernel (``compile(..., one_kernel=True)``, graph and program routes on a CPU). XLA's CPU
client runs a call as one kernel per fusion (about a hundred on Panda christoffel's or G1 crba's
graph), each dispatched by its thunk executor; on small batches that dispatch and the data the
kernels hand each other through memory cost about as much as the arithmetic. With
``one_kernel=True`` ``.single`` and the batches that run in one pass (not in chunks: below 2048
states on graphs, four chunks on programs) are a nested call that XLA:CPU compiles into one
function (its ``xla_cpu_small_call`` attribute; a program's kernels are not functions of their
own there, see "Program steps"); ``f.one_kernel_at(batch)`` says which.
Measured (one core, synchronous dispatch, interleaved, us a state, XLA's kernels -> one kernel,
beside the C batch): G1 crba 100 states 3.16 -> 2.31 (1.04), 1000 states 2.26 -> 2.00 (1.09);
Panda christoffel 100 states 1.86 -> 1.28 (0.70), 1000 states 2.02 -> 1.73 (0.76); one state,
G1 crba, 110 -> 37 us (C 2.3). The values agree to rounding (the function is optimized as a
whole: G1 aba differs by up to ~2e-13 relative). Not the default, for its compile time: XLA
compiles the one function on one thread, and LLVM takes longer over it (G1 crba's graph at 100
states, first call 4.6 -> 8.2 s), which takes G1's five algorithms past the 30 s budget of
reports/jax.md on the benchmark's two cores. The attribute is XLA-internal: where XLA cannot
compile a call this way (its single-function emitter does not take every fusion: the traced
route's matrix products, some reductions), the call runs as XLA's kernels, with a warning.
Chunked batches run as XLA's kernels too (one kernel wrote their results through copies:
Panda christoffel 1e4 states 2.07 -> 5.42, G1 christoffel 1000 states in chunks of 128, 1.9 ->
8.5 times the C batch's time).

Program steps on a CPU. A program's step runs one kernel (a branch of the scan's switch); run
as XLA's kernels it costs one kernel per fusion (kept values, result rows: a stack of more than
8 rows runs as a kernel a row and a copy) at a fixed cost each. Where a segment's steps write
more than 8 rows, each of its kernels is therefore one function
(:func:`jax_lowering.small_call`, ``jax_lowering.PROGRAM_SMALL_CALLS``): a step is the loop's
iteration, the switch and one call. Measured (``experiments/jax_program_steps.py g1``: one core,
synchronous dispatch, interleaved, us a state, XLA's kernels -> one function a kernel, beside
the C batch): G1 christoffel 100 states 78.7 -> 49.2 (44.5), 1000 states 78.1 -> 61.7 (45.0);
aba 10.5 -> 6.0 (4.0), 7.8 -> 6.3 (3.9); XLA's compile about the same (christoffel +0.5-2 s,
aba -0.5-4 s, which no longer needs XLA's MLIR fusion emitters for its stacked rows). Steps
writing at most 8 rows (G1 coriolis_matrix) stay XLA's kernels: one function each ran no faster
and took longer to compile (its 104 kernels: first call 7.5 -> 10.6 s). With
``one_kernel=True`` a program's kernels are not functions of their own, and below 256 states
their steps stack result rows eight at a time (``jax_lowering.GROUPED_ROWS_BELOW``), which
halves XLA's compile of the one function (G1 christoffel, 100 states: 15.8 -> 8.0 s).

Large batches on a CPU. A batch of two chunks or more (graph route; program route: four) runs as
a loop over chunks of ~1024 states, each written in place into the results, so that XLA's
temporaries are those of one chunk and stay in the caches (one core, us a state, one pass ->
chunks: 1e5 states UR5 rnea 0.44 -> 0.20, Panda aba 1.30 -> 0.43; 1e4 states Panda christoffel
3.17 -> 2.27, aba 0.82 -> 0.62, UR5 christoffel 0.36 -> 0.43, the one slower; G1 crba program at
1e4 states 12.9 -> 9.1).

Large results on a CPU. XLA allocates its result and temporary buffers afresh for every call;
glibc maps blocks above its mmap threshold (raised as blocks are freed, at most 32 MiB; blocks
above 64 MiB from a worker thread's arena always) anew each time, and the page faults of touching
them cost more than the computation when the results are large: G1 christoffel (42875 entries a
state), fresh process, one core: ~180-225 us a state at 100 and at 1000 states, of which the
program's scan is ~30. Like the C batch (``load(..., reuse_results=True)``), ``compile``'s
functions therefore write a batch's results, from :data:`REUSE_MIN` bytes on, into those of an
earlier batch of the same size that the caller has dropped (``reuse_results=True``, default; at
most :data:`REUSE_POOL` sets kept, ``.release()`` drops them): the set is donated to the call
(``jax.jit(donate_argnums=...)``), so XLA writes into memory already mapped. A set is reused only
when no reference to its arrays is left but the pool's (CPython reference counts) and none is
viewed by a NumPy array (JAX then does not donate it). Measured, one core, us a state, fresh ->
reused: G1 christoffel 171 / 237 -> 89 / 139 at 100 / 1000 states, Panda christoffel 1e4 states
5.2 -> 3.3, UR5 christoffel 1e5 states 1.14 -> 0.75; a chunked batch's loop then starts from the
reused set instead of filling its results with zeros first (UR5 christoffel 1e5 states 0.76 ->
0.54, Panda crba 0.46 -> 0.38, coriolis_matrix 1.38 -> 1.09), and a program writes only the
boxes of entries that are not always zero into it (G1 christoffel, 77 % of its entries always
zero: 106 / 150 -> 60 / 98 at 100 / 1000 states). The temporaries (the program's workspace,
the rows kept between fusions) are still fresh for every call; NumPy asks for transparent huge
pages for its large arrays, glibc does not unless told. Two remedies, both process-wide:

* ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` in the environment of the process (glibc >= 2.35;
  read at start-up only; the kernel's transparent_hugepage setting ``madvise`` or ``always``):
  glibc's mapped blocks on transparent huge pages, one fault per 2 MiB instead of per 4 KiB.
  Before result reuse: G1 christoffel 179 / 203 -> 89 / 84 us a state at 100 / 1000 states;
  1e5 states: Panda crba 0.49 -> 0.30 (the C batch 0.12), UR5 christoffel 0.95 -> 0.39 (0.21).
  Small batches run as fast as without it.
* :func:`retain_freed_memory` (once, from Python): glibc reuses the freed buffers instead of
  mapping new ones; the process keeps its peak memory. Before result reuse: G1 christoffel ~225
  -> ~89 / ~72. In four benchmark runs with it, small batches measured after large ones ran
  slower (G1 aba at 100 states 4x of the C batch -> 14-21x, G1 crba 20x; alone 10-25 % slower):
  for processes that evaluate large batches only.

reports/jax_hugepages.md and reports/jax_retained.md are the benchmark run each way,
reports/jax.md with glibc's defaults.

Precision. JAX computes in float32 unless ``jax.config.update("jax_enable_x64", True)`` was called
before creating arrays. symdyn does not change that global setting on import; it refuses float32
with a :class:`~symdyn.backends.BackendError` unless you opt in with :func:`allow_float32`.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import gc
import inspect
import math
import os
import sys
import threading
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

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

from symdyn.backends import BackendError, get_backend  # noqa: E402
from symdyn.codegen import jax_lowering  # noqa: E402
from symdyn.codegen.jax_lowering import LoweringError  # noqa: E402

__all__ = ["COMPILER_OPTIONS", "FOLD_MAX", "GRAPH_MAX", "GRAPH_MAX_WORK", "PROGRAM_AUTO", "ROUTES",
           "Compiled", "Jitted", "Single", "allow_float32", "compile", "compile_many",
           "compiler_options",
           "retain_freed_memory", "synchronous_dispatch"]

ROUTES = ("auto", "trace", "graph", "program")
# route="auto": the unrolled graph while it has at most GRAPH_MAX SX instructions, else the
# recorded program where the algorithm has one. The limit is set by XLA's compile time (batch of
# 4096 states, 2 shared cores, the graph's shared values kept, COMPILER_OPTIONS): graphs to
# ~8500 instructions compile in a program's time (g1 rnea 6.3k instructions 3.0 s, crba 6.6k
# 3.1 s, panda christoffel 6.3k 3.3 s, serial_chain(10) aba 8.2k 4.2 s; g1's programs 2.1-4.4 s,
# reports/jax.md at ab51ce0) and run faster (g1 rnea 1.7-2.4x, crba 2.4-3.3x of the C batch
# against 2.6-3.2x and 7.9-9.7x as programs, reports/jax.md of 2026-11-25); with them g1's five
# algorithms compile in 23.1 s (ab51ce0). Larger graphs take longer than any program (g1 aba
# 16.4k: 11.2 s, which takes its five to about 30 s; g1 coriolis_matrix 25k: 18.8 s). Before
# COMPILER_OPTIONS the limit was 5000 (g1's five with its rnea and crba as graphs: 30.7 s). A
# program recording more than GRAPH_MAX_WORK operations per state is not traced unrolled at all
# (the unrolled graph has at least ~0.2x the recorded work).
GRAPH_MAX = 8500
GRAPH_MAX_WORK = 5 * GRAPH_MAX
# the algorithms route="auto" runs as programs past GRAPH_MAX; the derivatives' kernels are large
# (IDSVA's pair products, the AZA column chunks: 11-DoF floating tree, rnea_derivatives 11 s and
# aba_derivatives 34 s of XLA), so past GRAPH_MAX they are traced with JAX arrays instead
PROGRAM_AUTO = ("rnea", "crba", "aba", "nonlinear_effects", "gravity_vector", "coriolis_matrix",
                "christoffel")

# route="program": the model's constants that are exactly 0 or +-1 (identity tree rotations,
# zero offsets and products of inertia) folded into the kernels, which then specialize on them,
# while the folded kernels hold at most FOLD_MAX SX instructions in all; beyond, the constants
# are read from the table. G1 (interleaved, one core, 100 / 1000 states): rnea 1.39x / 1.81x
# and crba 1.10x / 1.25x faster a state folded, their kernels 2275 -> 4696 and 1458 -> 3871
# instructions; XLA compiles each kernel once (aba: 7106 -> 13800 instructions, not folded).
# Folded, g1's aba, coriolis_matrix and christoffel programs ran no faster (interleaved, one
# core, 100 / 1000 states: 0.94x / 1.21x, 0.99x / 1.00x, 0.89x / 1.01x) and took 2.4-4.9x as
# long to compile (COMPILER_OPTIONS applied both ways)
FOLD_MAX = 5000

_QUATERNION_TOL = 1e-6
# batched arguments by name: their length (model.nq / nv, or the independent joints' nq / nv of
# the mimic functions: those taking q_r) and whether they hold the joints' unit quaternions
_BATCHED = {"q": "q", "qd": "v", "qdd": "v", "tau": "v", "nu": "v", "qd_r": "v", "qr_d": "v",
            "qr_dd": "v"}
_BATCHED_MIMIC = {"q_r": "q_r", "qd_r": "v_r", "qdd_r": "v_r", "tau_r": "v_r"}
_STATE = {"q", "q_r"}     # the arguments holding coordinates (quaternions checked)
# required arguments that are one value for the whole batch: compile's options
_FIXED = {"frame": "frame='<frame name or index>'"}
# result reuse (see "Large results" in the module docstring): batches whose results take at least
# REUSE_MIN bytes are written into a result set of the same size that the caller has dropped;
# at most REUSE_POOL sets are kept per compiled function
REUSE_MIN = 1 << 20
REUSE_POOL = 2


def _refcounts(arrays) -> tuple[int, ...]:
    return tuple(sys.getrefcount(a) for a in arrays)


_HELD_BY_POOL = _refcounts((object(),))[0]    # an array held only by its pool entry's tuple


# XLA options of every function compile() jits. XLA's CPU backend emits its fusions with MLIR
# fusion emitters by default; its earlier LLVM IR emitters compile symdyn's long elementwise
# graphs and programs 1.5-3x faster (one core, 4096 states, seconds of XLA: g1 rnea graph 12.0 ->
# 4.3, crba graph 8.4 -> 4.8, aba program 7.4 -> 4.3, coriolis_matrix program 4.1 -> 1.8) with
# about the same run time (interleaved, one core, 100 and 1000 states: within 5 % on graphs of
# ur5, panda and g1 and on g1's programs at 1000 states; g1's rnea and crba programs at 100
# states 8-10 % slower). The option is a CPU one (other backends ignore it); a jaxlib that no
# longer knows it gets no options. Not taken: LLVM's optimization level 1
# (xla_backend_optimization_level): g1's graphs compile 20-30 % faster (five algorithms 30.1 ->
# 25.7 s), but graphs run slower (benchmark runs an hour apart, JAX/C: panda christoffel 100
# states 3.37 -> 5.43, 1e4 3.44 -> 5.72, crba 1e5 2.0 -> 3.5; 43 -> 31 of 49 cells within 3x).
COMPILER_OPTIONS: dict[str, Any] = {"xla_cpu_use_fusion_emitters": False}
_compiler_options: dict[str, Any] | None = None


def compiler_options() -> dict[str, Any]:
    """The XLA options :func:`compile` passes to ``jax.jit``: :data:`COMPILER_OPTIONS` where
    this jaxlib accepts them (checked once on a trivial function), else none."""
    global _compiler_options
    if _compiler_options is None:
        try:
            jax.jit(lambda x: x + 1, compiler_options=COMPILER_OPTIONS).lower(1.0).compile()
            _compiler_options = dict(COMPILER_OPTIONS)
        except jax.errors.JaxRuntimeError:      # an option this XLA does not know: none
            _compiler_options = {}
    return dict(_compiler_options)


def _top_options() -> dict[str, Any]:
    """``jax.jit`` keywords of a top-level function: :func:`compiler_options` on a CPU."""
    options = compiler_options() if jax.default_backend() == "cpu" else {}
    return {"compiler_options": options} if options else {}


_NO_KERNEL: contextvars.ContextVar[bool] = contextvars.ContextVar("symdyn_no_kernel", default=False)


def _one_kernel(fn: Callable, batched: bool = True) -> Callable:
    """``fn`` (arrays -> arrays) as one XLA kernel where it runs on a CPU (``compile(...,
    one_kernel=True)``; "One kernel" in the module docstring): a nested call tagged
    ``xla_cpu_small_call``, which XLA's CPU backend compiles into a single function instead of
    one kernel per fusion run by its thunk executor (:func:`jax_lowering.small_call`; the call's
    body: :func:`jax_lowering.guarded_call`). Traced for another device, ``fn`` itself."""
    from jax.experimental.xla_metadata import set_xla_metadata
    jitted = jax.jit(fn)                 # traced once, for its result shapes and in the branch

    def guarded(args, kwargs):
        return jax_lowering.guarded_call(jitted, args, kwargs)
    inner = jax.jit(guarded, inline=False)

    one_pass_below = getattr(fn, "one_pass_below", None) if batched else None

    def call(*args, **kwargs):
        if (_NO_KERNEL.get() or not jax_lowering._on_cpu() or (
                one_pass_below is not None and jnp.shape(args[0])[0] >= one_pass_below)):
            return jitted(*args, **kwargs)
        return set_xla_metadata(inner(args, kwargs), xla_cpu_small_call="true",
                                inlineable="false")
    return call


def _jit(fn: Callable, one_kernel: bool, kernel: bool = False, batched: bool = True,
         **options: Any) -> Any:
    """``jax.jit(fn, **options)``; with ``one_kernel``, a :class:`_Fallback` from the function
    holding one-kernel calls (``kernel``: ``fn`` itself made one, :func:`_one_kernel`) to the
    same without them."""
    if not one_kernel:
        return jax.jit(fn, **options)
    return _Fallback(jax.jit(_one_kernel(fn, batched) if kernel else fn, **options), fn, options)


class _Fallback:
    """A jitted function holding one-kernel calls, and ``fn`` without them for the input shapes
    XLA fails to compile it for (XLA:CPU's single-function emitter does not emit every fusion:
    "Fusion kind not implemented on CPU" for some reductions). Warns once per shape; a failing
    compile has run nothing, so donated arguments are intact for the second compile."""

    def __init__(self, jitted, fn: Callable, options: dict):
        self.jitted, self._fn, self._options = jitted, fn, options
        self._plain: Any = None          # jax.jit of fn without one-kernel calls
        self._failed: set = set()

    def __call__(self, *args):
        if self._failed and self._key(args) in self._failed:
            return self._without()(*args)
        try:
            return self.jitted(*args)
        except jax.errors.JaxRuntimeError as e:
            self._fails(args, e)
            return self._without()(*args)

    def _fails(self, args, e: Exception) -> None:
        import warnings
        self._failed.add(self._key(args))
        warnings.warn(f"symdyn.jax: XLA could not compile this call as one kernel "
                      f"({str(e).splitlines()[0][:160]}); running it as XLA's separate "
                      "kernels instead", RuntimeWarning, stacklevel=4)

    def compile_ahead(self, *args) -> None:
        """Compile what a call with arguments of these shapes (``jax.ShapeDtypeStruct``) runs."""
        if self._key(args) not in self._failed:
            try:
                self.jitted.lower(*args).compile()
                return
            except jax.errors.JaxRuntimeError as e:
                self._fails(args, e)
        self._without().lower(*args).compile()

    def _without(self) -> Any:
        if self._plain is None:
            self._plain = jax.jit(_without_kernels(self._fn), **self._options)
        return self._plain

    @staticmethod
    def _key(args) -> tuple:
        return tuple((tuple(jnp.shape(a)), str(jnp.result_type(a)))
                     for a in jax.tree_util.tree_leaves(args))

    def lower(self, *args, **kwargs):
        return self.jitted.lower(*args, **kwargs)


def _compile_ahead(jitted, *args) -> None:
    """XLA's executable of ``jitted`` (``jax.jit`` or :class:`_Fallback`) for arguments of these
    shapes, compiled now; JAX keeps it for the calls."""
    if isinstance(jitted, _Fallback):
        jitted.compile_ahead(*args)
    else:
        jitted.lower(*args).compile()


def _without_kernels(fn: Callable) -> Callable:
    """``fn`` traced with :func:`_one_kernel` calling its function directly."""
    def plain(*args):
        token = _NO_KERNEL.set(True)
        try:
            return fn(*args)
        finally:
            _NO_KERNEL.reset(token)
    return plain


_gc_lock = threading.Lock()
_gc_pauses = 0                  # threads inside _gc_paused (compile_many traces several at once)
_gc_restore = False             # whether the collector ran when the first of them entered


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector paused (if it runs) for the duration. Recording and
    tracing allocate objects by the million that stay alive until the trace ends; the collector's
    passes over them took ~20 % of the Python side of G1's five algorithms (4096 states, setup +
    trace, the columns of the compile table of ``experiments/bench_jax.py``: 6.9 -> 5.6 s).
    The collector is process-wide: nested and concurrent pauses (threads of
    :func:`compile_many`) are counted, and the last one to end restores its state."""
    global _gc_pauses, _gc_restore
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_restore = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_restore:
                gc.enable()


def _traced_without_gc(fn: Callable) -> Callable:
    """``fn`` run with :func:`_gc_paused`: the Python function ``jax.jit`` traces."""
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        with _gc_paused():
            return fn(*args, **kwargs)
    return traced


class Jitted:
    """``jax.jit(fn)`` whose calls from Python are compiled with :func:`compiler_options` where
    JAX's default backend is the CPU (they are XLA CPU options): ``jax.jit(fn,
    compiler_options=...)``, one executable per input shapes, as any jitted function. Inside a
    trace (the caller's own ``jit``, ``vmap``, ``grad``, ``jacfwd``) it is ``jax.jit(fn)``,
    compiled with the enclosing function: ``jax.jit`` refuses compiler options on a nested call.
    ``lower(...)`` lowers the top-level function (its ``compile()`` applies the options).
    ``options``: the keywords of the top-level ``jax.jit`` (:func:`_top_options`), fixed here,
    for the functions that wrap ``fn`` (result reuse, checks). ``one_kernel``: top-level calls
    compiled as one kernel (:func:`_one_kernel`; ``batched``: ``fn``'s first argument has the
    batch on its leading axis)."""

    def __init__(self, fn: Callable, one_kernel: bool = False, batched: bool = True):
        self.fn, self.one_kernel = fn, one_kernel
        traced = _traced_without_gc(fn)
        self.jit = jax.jit(traced)
        self.options = _top_options()
        if one_kernel:
            self.top = _jit(traced, True, kernel=True, batched=batched, **self.options)
        else:
            self.top = jax.jit(traced, **self.options) if self.options else self.jit

    def as_one_kernel(self, batched: bool = True) -> Jitted:
        """This function with its top-level calls compiled as one kernel (:func:`_one_kernel`;
        ``batched``: its first argument's leading axis is the batch)."""
        return Jitted(self.fn, one_kernel=True, batched=batched)

    def __call__(self, *xs):
        for x in xs:
            if isinstance(x, jax.core.Tracer):
                return self.jit(*xs)
        return self.top(*xs)

    def lower(self, *args, **kwargs):
        return self.top.lower(*args, **kwargs)


class Single:
    """``Compiled.single``: the jitted algorithm on one state (arguments of shapes ``(n,)``).
    Called with concrete values (NumPy or JAX arrays, lists) it checks them on the host as the
    batched call does (shapes; with ``check``, NaN / inf and unit quaternions, named); called
    with tracers (inside your ``jit``, ``grad``, ``jacfwd``, ``vmap``) it is the jitted function
    itself. ``lower(...)`` lowers it."""

    def __init__(self, jitted: Jitted, compiled: "Compiled"):
        self.jitted, self._compiled = jitted, compiled

    def __call__(self, *xs):
        if any(isinstance(x, jax.core.Tracer) for x in xs):
            return self.jitted(*xs)
        c = self._compiled
        if len(xs) != len(c.args):
            raise TypeError(f"{c.name}.single takes {len(c.args)} arguments "
                            f"({', '.join(c.args)}), got {len(xs)}")
        xs = tuple(self._checked(x, a, n) for x, a, n in zip(xs, c.args, c.sizes))
        return self.jitted(*xs)

    def _checked(self, x, arg: str, n: int):
        c = self._compiled
        if not isinstance(x, jax.Array):
            x = np.asarray(x)
            if x.dtype.kind not in "fiu":
                raise TypeError(f"{arg} must be an array of {n} real numbers, got dtype {x.dtype}")
            if x.dtype.kind != "f":
                x = x.astype(float)
        if tuple(x.shape) != (n,):
            raise ValueError(f"{arg} must have shape ({n},), got {tuple(x.shape)}")
        if c.check:
            c._check_values(np.asarray(x)[None], arg, one=True)
        return x

    def lower(self, *args, **kwargs):
        return self.jitted.lower(*args, **kwargs)


def allow_float32(allow: bool = True) -> None:
    """Opt in to single precision (JAX without ``jax_enable_x64``, or float32 inputs)."""
    get_backend("jax").allow_float32(allow)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8   # glibc's mallopt parameters
_GLIBC_DEFAULT_THRESHOLD = 128 * 1024


def retain_freed_memory(retain: bool = True, threshold: int = 1 << 30) -> bool:
    """Let glibc's ``malloc`` serve blocks below ``threshold`` bytes from its heap and keep what
    is freed (``mallopt`` of ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``), for every thread
    from the main heap (``M_ARENA_MAX`` = 1: a thread's own arena maps blocks above 64 MiB
    whatever the threshold, and XLA allocates on its worker threads), so that the buffers XLA
    allocates for every call are reused instead of mapped afresh (see "Large results" in the
    module docstring). Process-wide: the process keeps its peak memory, and threads allocating
    at once share one arena. ``retain=False`` sets both thresholds back to glibc's initial
    128 KiB (its dynamic threshold stays off) and the arena limit to its default.
    Returns ``False``, changing nothing, where the C library is not glibc. Where the process can
    be started with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, that is the better remedy (same
    section: it does not slow small batches)."""
    import ctypes
    import ctypes.util
    if threshold < 1 or threshold > 2 ** 31 - 1:
        raise ValueError(f"threshold must be in [1, 2**31 - 1] bytes, got {threshold}")
    if not ctypes.util.find_library("c"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
        libc.gnu_get_libc_version                       # glibc only
    except (OSError, AttributeError):
        return False
    value = int(threshold) if retain else _GLIBC_DEFAULT_THRESHOLD
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all([bool(mallopt(_M_MMAP_THRESHOLD, value)), bool(mallopt(_M_TRIM_THRESHOLD, value)),
                bool(mallopt(_M_ARENA_MAX, 1 if retain else 0))])


def synchronous_dispatch(sync: bool = True) -> None:
    """Make JAX's CPU client run each compiled call on the calling thread (JAX's option
    ``jax_cpu_enable_async_dispatch=False``) instead of handing it to a worker thread and
    waiting for it: the hand-off costs a small batch more than its arithmetic (one core, glibc's
    defaults, 100 states, JAX/C per call asynchronous -> synchronous, medians in separate
    processes: ur5 rnea 2.16 -> 1.88, christoffel 2.71 -> 2.31, panda rnea 2.40 -> 1.89, crba
    3.00 -> 2.72, coriolis_matrix 4.43 -> 3.79, g1 crba 6.47 -> 6.20; see "Small batches on a
    CPU" in the module docstring). Calls return when their results are computed (what a caller
    that uses them at once waits for anyway). Process-wide, and read when JAX creates its CPU
    client: call it before the first JAX array or computation, else a :class:`RuntimeError`
    says so. ``sync=False`` asks for JAX's default again (before that point too)."""
    try:                                 # JAX's private module: a later JAX may move it
        from jax._src import xla_bridge
        started = getattr(xla_bridge, "backends_are_initialized", None)
    except ImportError:
        started = None
    if started is not None and started():
        raise RuntimeError("synchronous_dispatch() must be called before JAX creates its "
                           "backends (before the first JAX array or computation of the "
                           "process); JAX's CPU client reads the setting only then")
    if "jax_cpu_enable_async_dispatch" not in jax.config.values:
        raise RuntimeError(f"JAX {jax.__version__} has no option jax_cpu_enable_async_dispatch; "
                           "its CPU client dispatches as it does by default")
    jax.config.update("jax_cpu_enable_async_dispatch", not sync)


def _resolve(algorithm) -> tuple[str, Callable]:
    if callable(algorithm):
        return getattr(algorithm, "__name__", "algorithm"), algorithm
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a symdyn function or its name, got "
                        f"{type(algorithm).__name__}")
    import symdyn
    import symdyn.algorithms
    from symdyn.algorithms import regressors
    for ns in (symdyn, symdyn.algorithms, regressors):
        fn = getattr(ns, algorithm, None)
        if callable(fn) and not algorithm.startswith("_"):
            return algorithm, fn
    raise ValueError(f"unknown algorithm {algorithm!r}: pass the name of a symdyn function "
                     "(rnea, crba, aba, coriolis_matrix, christoffel, rnea_derivatives, ...) "
                     "or the function")


class Compiled:
    """A jitted, vmapped algorithm of one model: ``f(*batched_states)``; ``f.single(*state)`` for
    one state; ``f.args`` names the batched arguments, ``f.sizes`` their lengths; ``f.release()``
    drops the result sets kept for reuse (``reuse_results``, see :func:`compile`)."""

    def __init__(self, model, algorithm, check: bool = True, route: str = "auto",
                 reuse_results: bool = True, one_kernel: bool = False, **options: Any):
        from symdyn.model import Model
        if not isinstance(model, Model):
            raise TypeError(f"expected a symdyn Model, got {type(model).__name__}")
        if model.is_symbolic:
            raise BackendError(f"model {model.name!r} has SymPy parameters; substitute numbers "
                               "with model.subs(...) before compiling it with JAX")
        get_backend("jax")._float()           # float32 mode without opt-in: refuse now
        self.name, self.fn = _resolve(algorithm)
        self.model, self.options, self._check = model, dict(options), bool(check)
        self.args, self.sizes, self._quaternions = _batched_arguments(model, self.name, self.fn,
                                                                      self.options)
        fn, opts = self.fn, self.options

        def single(*xs):
            return fn(model, *xs, backend="jax", **opts)
        self._single = single
        if not isinstance(one_kernel, bool):
            raise TypeError(f"one_kernel must be True or False, got {one_kernel!r}")
        with _gc_paused():
            self.route, self.route_reason, lowered = _choose_route(self, route, one_kernel)
        if lowered is None:
            one, self.batch = Jitted(single), Jitted(jax.vmap(single))
        else:
            one, self.batch = lowered
        # the traced route's matrix products are fusions XLA's single-function emitter does not
        # take ("Fusion kind not implemented on CPU"): it runs as XLA's kernels
        self.one_kernel = one_kernel and lowered is not None
        if self.one_kernel:
            one, self.batch = one.as_one_kernel(batched=False), self.batch.as_one_kernel()
        self.single = Single(one, self)
        self.reuse_results = bool(reuse_results)
        self._pool: list[tuple[jax.Array, ...]] = []        # result sets the caller may drop
        self._pool_lock = threading.Lock()
        self._reuse_from = 0           # batch size from which results are reused (0: unknown)
        self._reusing: Callable | None = None
        self._checked: Callable | None = None
        self._state_results: list | None = None     # (shape, dtype or None: the inputs') a state
        # NumPy arrays and concrete JAX arrays (not tracers): __call__'s fast path
        self._plain = (np.ndarray, type(jnp.zeros(0)))

    def __repr__(self) -> str:
        return (f"<symdyn.jax.Compiled {self.name}({', '.join(self.args)}) of model "
                f"{self.model.name!r}, nq={self.model.nq}, nv={self.model.nv}, "
                f"route={self.route!r}>")

    def __call__(self, *xs):
        if len(xs) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} batched arguments "
                            f"({', '.join(self.args)}), got {len(xs)}")
        if all(type(x) in self._plain for x in xs):
            # the common calls (NumPy arrays, as the C batch takes them, or concrete JAX
            # arrays): shapes and dtypes are checked when the call is traced (once per shape,
            # _validated), values in the call (_flagged). Python here is kept short: host work
            # between calls slows the next call's XLA code (one core, ur5 rnea, 100 states: 0.7
            # us of Python before each call lengthened it by ~2 us)
            try:
                return self._call(xs)
            except TypeError:        # e.g. a NumPy array of objects, which jit refuses: name it
                for x, a, n in zip(xs, self.args, self.sizes):
                    self._batch_input(x, a, n)
                raise
        xs = tuple(self._batch_input(x, a, n) for x, a, n in zip(xs, self.args, self.sizes))
        self._validated(xs)
        if any(isinstance(x, jax.core.Tracer) for x in xs):
            return self.batch(*xs)
        return self._call(xs)

    def _validated(self, xs) -> tuple:
        """``xs`` as float arrays of the backend's dtype (float32 refused unless opted in), of
        shapes ``(batch, n)`` and of one batch length; run where they are traced (shapes and
        dtypes are known then), so that a call pays for it once per shape."""
        backend = get_backend("jax")
        out = []
        for x, a, n in zip(xs, self.args, self.sizes):
            x = backend._check_float(x, a)
            if x.ndim != 2 or x.shape[1] != n:
                raise ValueError(f"{a} must have shape (batch, {n}), got {tuple(x.shape)}")
            out.append(x)
        if len({x.shape[0] for x in out}) > 1:
            raise ValueError(f"{self.name}: batched arguments of different lengths "
                             f"{[x.shape[0] for x in out]}")
        return tuple(out)

    def _call(self, xs):
        """The batch of concrete inputs ``xs``; large results written into a dropped set."""
        if not self._reuses(xs):
            return self._verified(self._fresh_fn()(*xs), xs)
        B = xs[0].shape[0]
        bufs = self._dropped(B)
        if bufs is None:                 # none to reuse: new ones (zeros: a fill, no compile)
            # placed like the results they stand for (committed to the inputs' device where
            # those are: a set committed otherwise would compile the function once more)
            where = next((x.sharding for x in xs if getattr(x, "committed", False)), None)
            bufs = tuple(jnp.zeros(o.shape, o.dtype, device=where)
                         for o in self._result_shapes(xs, B))
        out = self._reusing_fn(len(bufs))(*xs, *bufs)
        del bufs
        out = self._verified(out, xs)
        with self._pool_lock:
            if len(self._pool) < REUSE_POOL:
                self._pool.append(tuple(jax.tree_util.tree_leaves(out)))
        return out

    def _reuses(self, xs) -> bool:
        """Whether a batch shaped like ``xs`` writes its results into a result set (one of
        :data:`REUSE_MIN` bytes or more, with ``reuse_results``, on a CPU)."""
        shape = xs[0].shape
        if self._reuse_from == 0:            # not known yet: the results' bytes a state
            self._reuse_from = sys.maxsize
            if self.reuse_results and jax_lowering._on_cpu():
                shapes = self._result_shapes(xs, 1)
                state_bytes = sum(int(np.prod(o.shape)) * o.dtype.itemsize for o in shapes)
                self._reuse_from = max(1, -(-REUSE_MIN // max(state_bytes, 1)))
        return (shape[0] if shape else 0) >= self._reuse_from

    def _reusing_fn(self, n_sets: int) -> Callable:
        """The jitted batch of :meth:`_call` that writes into a donated result set (of
        ``n_sets`` arrays)."""
        if self._reusing is None:
            fn, n, flagged = self._kernel(self.batch.fn), len(self.args), self._flagged
            if getattr(self.batch.fn, "writes_into", False):    # graph and program: chunks
                def reusing(*a):                        # written into the set (no zero fill)
                    return flagged(a[:n], lambda xs: fn(*xs, out=a[n:]))
            else:
                def reusing(*a):
                    return flagged(a[:n], lambda xs: fn(*xs))
            self._reusing = _jit(reusing, self.one_kernel, keep_unused=True,
                                 donate_argnums=tuple(range(n, n + n_sets)),
                                 **self.batch.options)
        return self._reusing

    def _flagged(self, xs, fn: Callable):
        """Traced: ``fn`` of the :meth:`_validated` ``xs``, with ``check`` also the flag of
        whether their values pass :meth:`_check_values` (no NaN or inf, unit quaternions),
        computed in the same XLA call instead of in NumPy on the host before it (one core, 100
        states, JAX/C per call, host checks -> flag, interleaved; asynchronous dispatch: ur5 rnea
        2.50 -> 2.16, christoffel 2.72 -> 2.71, panda crba 3.18 -> 3.00, coriolis_matrix 4.93 ->
        4.43, g1 crba 7.05 -> 6.47; synchronous: 2.19 -> 1.88, 2.88 -> 2.31, 2.88 -> 2.72, 4.36
        -> 3.79, 6.71 -> 6.20)."""
        xs = self._validated(xs)
        if not self.check:
            return fn(xs)
        ok = jnp.isfinite(sum(jnp.sum(x) for x in xs))   # NaN and inf propagate (or overflow)
        lo, hi = (1.0 - _QUATERNION_TOL) ** 2, (1.0 + _QUATERNION_TOL) ** 2
        for x, arg in zip(xs, self.args):
            if arg in _STATE:
                for a, _ in self._quaternions:
                    norm2 = jnp.sum(x[:, a:a + 4] ** 2, axis=1)
                    ok = ok & jnp.all((norm2 >= lo) & (norm2 <= hi))
        return fn(xs), ok

    def _verified(self, out, xs):
        """The results of a call of :meth:`_flagged`; where its flag says that a value failed,
        :meth:`_check_values`'s error, which names the argument and the state (a sum that
        overflowed passes)."""
        if not self.check:
            return out
        out, ok = out
        # np.asarray: less host work than ok.item(), and host work between calls slows the next
        # call's XLA code (one core, 100 states, us a call, item -> asarray, interleaved: panda
        # aba 152 -> 147, coriolis_matrix 195 -> 183, ur5 christoffel 63 -> 60). The fetch still
        # costs ~1.5 us a call on ur5 and ~10 on g1 crba or panda christoffel (100 states,
        # against not reading the flag); np.from_dlpack(ok) ~45 us more. Not taken: raising from
        # an io_callback in a branch run only on failure, without any fetch (a function with a
        # host callback is dispatched ~90-210 us a call slower: ur5 rnea 22 -> 109, g1 crba 260
        # -> 472)
        if not np.asarray(ok):
            for x, a in zip(xs, self.args):
                self._check_values(np.asarray(x), a)
        return out

    def _fresh_fn(self) -> Callable:
        """The jitted batch of :meth:`_call` into new results."""
        if self._checked is None:
            fn, flagged = self._kernel(self.batch.fn), self._flagged
            self._checked = _jit(lambda *a: flagged(a, lambda xs: fn(*xs)), self.one_kernel,
                                 **self.batch.options)
        return self._checked

    def warm_up(self, *batch_sizes: int) -> Compiled:
        """Compile now, without running anything, what calls with NumPy batches of these
        sizes run (their trace, lowering and XLA's compile; JAX keeps the executables, and the
        first such call runs at once). Returns ``self``. :func:`compile_many` does this for
        several algorithms at once."""
        dtype = jax.dtypes.canonicalize_dtype(np.float64)
        for B in _batch_sizes(batch_sizes):
            xs = tuple(jax.ShapeDtypeStruct((B, n), dtype) for n in self.sizes)
            if self._reuses(xs):
                sets = [jax.ShapeDtypeStruct(o.shape, o.dtype)
                        for o in self._result_shapes(xs, B)]
                _compile_ahead(self._reusing_fn(len(sets)), *xs, *sets)
            else:
                _compile_ahead(self._fresh_fn(), *xs)
        return self

    def one_kernel_at(self, batch: int) -> bool:
        """Whether a batch of ``batch`` states runs as one kernel (``one_kernel=True``, a graph
        or program route, on a CPU, a batch run in one pass)."""
        return (self.one_kernel and jax_lowering._on_cpu()
                and batch < getattr(self.batch.fn, "one_pass_below", math.inf))

    def _kernel(self, fn: Callable) -> Callable:
        """``fn`` as one kernel with ``one_kernel`` (:func:`_one_kernel`; the checks' reductions
        stay outside it), else ``fn``."""
        return _one_kernel(fn) if self.one_kernel else fn

    @property
    def check(self) -> bool:
        """Whether concrete batches are checked (NaN, inf, unit quaternions); fixed at compile
        time."""
        return self._check

    def _result_shapes(self, xs, B: int) -> list:
        """The results' shapes and dtypes of a batch of ``B`` states shaped like ``xs``: the
        shapes of one state (known to the graph and program routes; the traced route's from one
        trace of a batch of one, kept) behind the batch axis. Each trace of G1's programs takes
        ~0.9 s; tracing the batch for its shapes took a first call's trace three times."""
        if self._state_results is None:
            shapes = getattr(self.batch.fn, "state_shapes", None)
            if shapes is not None:
                self._state_results = [(tuple(s), None) for s in shapes]
            else:
                one = [jax.ShapeDtypeStruct((1, n), x.dtype) for x, n in zip(xs, self.sizes)]
                self._state_results = [(o.shape[1:], o.dtype) for o in
                                       jax.tree_util.tree_leaves(jax.eval_shape(self.batch.fn, *one))]
        return [jax.ShapeDtypeStruct((B,) + s, xs[0].dtype if d is None else d)
                for s, d in self._state_results]

    def _dropped(self, B: int):
        """A result set of ``B`` states from the pool that the caller has dropped (no reference
        left but the pool's; not deleted), taken out of the pool; else ``None``, after dropping
        a set of another size that the caller has dropped too."""
        with self._pool_lock:
            for k, arrays in enumerate(self._pool):
                if (arrays[0].shape[0] == B and _refcounts(arrays) == (_HELD_BY_POOL,) *
                        len(arrays) and not any(a.is_deleted() for a in arrays)):
                    return self._pool.pop(k)
            for k, arrays in enumerate(self._pool):
                if _refcounts(arrays) == (_HELD_BY_POOL,) * len(arrays):
                    del self._pool[k]
                    break
        return None

    def release(self) -> None:
        """Drop the result sets kept for reuse (their memory is freed once the caller holds none
        of their arrays)."""
        with self._pool_lock:
            self._pool.clear()

    def _batch_input(self, x, arg: str, n: int):
        if not isinstance(x, (jax.Array, jax.core.Tracer)):
            # NumPy (or lists): checked here and handed to jit as they are - converting them to
            # JAX arrays first and back for the checks costs ~40 us a call
            arr = np.asarray(x)
            if arr.dtype.kind not in "fiu":
                raise TypeError(f"{arg} must be a (batch, {n}) array of real numbers, "
                                f"got dtype {arr.dtype}")
            dtype = np.dtype(get_backend("jax")._float())
            if arr.dtype != dtype:
                if arr.dtype.kind == "f" and arr.dtype.itemsize < dtype.itemsize:
                    get_backend("jax")._check_float(jnp.zeros(0, arr.dtype), arg)  # refuses
                arr = arr.astype(dtype)
            x = arr
        else:
            x = get_backend("jax")._check_float(x, arg)     # float32 only when opted in
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{arg} must have shape (batch, {n}), got {tuple(x.shape)}")
        return x

    def _check_values(self, arr: np.ndarray, arg: str, one: bool = False) -> None:
        # on the host, where the call's check (_flagged) failed: names the argument and the state
        # (one: arr is the state of a .single call, a batch of one, named without its index)
        def at(s, rest=""):
            index = ", ".join(x for x in ("" if one else str(s), rest) if x)
            return f"{arg}[{index}]" if index else arg
        if not math.isfinite(arr.sum()):        # NaN and inf propagate (or finite overflow)
            bad = ~np.isfinite(arr)
            if bad.any():
                s, i = np.argwhere(bad)[0]
                raise ValueError(f"{at(s)} contains NaN or inf at index {i}")
        if arg not in _STATE or not arr.shape[0]:
            return
        lo, hi = (1.0 - _QUATERNION_TOL) ** 2, (1.0 + _QUATERNION_TOL) ** 2
        for a, body in self._quaternions:
            quat = arr[:, a:a + 4]
            norm2 = np.einsum("ij,ij->i", quat, quat)
            if not lo <= norm2.min() <= norm2.max() <= hi:      # |norm - 1| > tol somewhere
                norm = np.sqrt(norm2)
                bad = np.flatnonzero(np.abs(norm - 1.0) > _QUATERNION_TOL)
                if not bad.size:                 # at the bound, within rounding
                    continue
                s = int(bad[0])
                raise ValueError(f"{at(s, f'{a}:{a + 4}')} (joint of body {body!r}) must be a unit "
                                 f"quaternion (x, y, z, w); its norm is {norm[s]:.6g}")


def compile(model, algorithm, *, check: bool = True, route: str = "auto",  # noqa: A001
            reuse_results: bool = True, one_kernel: bool = False, **options: Any) -> Compiled:
    """A jitted, batched ``algorithm`` of ``model`` over batches of states (leading batch axis);
    ``.single`` evaluates one state. ``route``: ``"auto"``, ``"trace"``, ``"graph"`` or
    ``"program"`` (see the module docstring; ``.route`` and ``.route_reason`` say which ran).
    ``reuse_results``: on a CPU, write large results (from :data:`REUSE_MIN` bytes a batch) into
    those of an earlier batch of the same size that the caller has dropped (see "Large results"
    in the module docstring). ``one_kernel``: on a CPU, compile each call (batched and
    ``.single``) into one XLA kernel instead of one per fusion: less time a call, more compile
    time (see "One kernel" in the module docstring)."""
    return Compiled(model, algorithm, check=check, route=route, reuse_results=reuse_results,
                    one_kernel=one_kernel, **options)


def _batch_sizes(sizes) -> tuple[int, ...]:
    """Batch sizes as a tuple of ints: one integer ``B`` means ``(B,)``; a sequence of integers
    >= 0 is taken as it is (``TypeError`` for anything else, ``ValueError`` for a bad size)."""
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        sizes = (sizes,)
    elif isinstance(sizes, (str, bytes, bool)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"batch_sizes must be an integer or a sequence of integers, got "
                        f"{sizes!r}")
    out = tuple(sizes)
    for B in out:
        if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 0:
            raise ValueError(f"batch sizes must be integers >= 0, got {B!r}")
    return tuple(int(B) for B in out)


def compile_many(model, algorithms, *, batch_sizes: int | Sequence[int] = (),
                 workers: int | None = None, check: bool = True, route: str = "auto",
                 reuse_results: bool = True, one_kernel: bool = False) -> dict[str, Compiled]:
    """Several algorithms of ``model`` compiled at once: ``{name: compile(model, algorithm,
    ...)}`` in the order given, each warmed up for ``batch_sizes`` (:meth:`Compiled.warm_up`;
    one integer ``B`` means ``(B,)``).
    ``algorithms``: names or functions as :func:`compile` takes them, or ``(algorithm,
    {keyword: value})`` pairs (the algorithm's options, and :func:`compile`'s keywords for this
    one: ``("crba", {"one_kernel": True})``); a name may appear once. The compiles run on ``workers`` threads
    (default: one per algorithm, at most one per core this process may use): while one
    algorithm is recorded and traced in Python, XLA compiles another, and XLA compiles a
    single-function kernel on one thread. The other keywords are :func:`compile`'s, for all;
    the first error of a compile is raised once those running have ended (those not started
    are cancelled).
    Measured in reports/jax.md (G1's five algorithms, 4096 states: the compile table)."""
    items = []
    for a in algorithms:
        alg, opts = a if isinstance(a, tuple) else (a, {})
        if not isinstance(opts, dict):
            raise TypeError(f"expected an algorithm or an (algorithm, options dict) pair, got {a!r}")
        items.append((_resolve(alg)[0], alg, opts))
    names = [name for name, _, _ in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{twice[0]!r} appears more than once; compile the variants with "
                         "symdyn.jax.compile, one call each")
    batch_sizes = _batch_sizes(batch_sizes)
    if workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        workers = max(1, min(len(items), cores or 1))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")

    common = dict(check=check, route=route, reuse_results=reuse_results, one_kernel=one_kernel)

    def one(alg, opts) -> Compiled:
        return compile(model, alg, **{**common, **opts}).warm_up(*batch_sizes)
    if workers == 1 or len(items) <= 1:
        return {name: one(alg, opts) for name, alg, opts in items}
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="symdyn-compile") as ex:
        futures = [ex.submit(one, alg, opts) for _, alg, opts in items]
        try:
            return {name: f.result() for (name, _, _), f in zip(items, futures)}
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _batched_arguments(model, name: str, fn: Callable, options: dict) -> tuple[
        tuple[str, ...], tuple[int, ...], list[tuple[int, str]]]:
    """``(args, sizes, quaternions)`` of ``fn`` compiled for ``model``: the batched arguments
    (the required positional ones after the model that ``options`` does not give), their lengths,
    and ``(offset, body)`` of each unit quaternion (spherical and floating joints: x, y, z, w
    last) in the coordinates argument. A clear ``TypeError`` where ``fn`` is not an algorithm of
    batched states: no ``backend=``, no state argument, an option it does not take, or a fixed
    argument (``frame``) not given."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    if "backend" not in sig.parameters and not any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(f"{name} is not a symdyn algorithm of (model, states..., backend=): "
                        "symdyn.jax.compile takes rnea, crba, aba, coriolis_matrix, christoffel, "
                        "the derivatives, the frame / centre-of-mass / energy functions, the "
                        "regressors, the mimic_* functions, or a function of that form")
    known = {p.name for p in params}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"{name}() takes no option {unknown[0]!r}")
    args = tuple(p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                 and p.default is p.empty and p.name not in options)
    fixed = [a for a in args if a in _FIXED]
    if fixed:
        raise TypeError(f"{name}: {fixed[0]!r} is the same for every state of a batch; give it to "
                        f"compile: symdyn.jax.compile(model, {name!r}, {_FIXED[fixed[0]]})")
    if not args:
        raise TypeError(f"{name} takes no batched state (q, qd, ...): there is nothing to "
                        "batch; call it directly")
    from symdyn.reduce import _reduced_layout
    table = dict(_BATCHED, **_BATCHED_MIMIC) if "q_r" in args else _BATCHED
    if (getattr(fn, "__module__", None) or "").startswith("symdyn."):
        odd = [a for a in args if a not in table]
        if odd:
            raise TypeError(f"{name}: argument {odd[0]!r} is not a batched state; give it to "
                            f"compile as an option ({odd[0]}=...)")
    bodies, qr, _, nq_r, nv_r = _reduced_layout(model)
    length = {"q": model.nq, "v": model.nv, "q_r": nq_r, "v_r": nv_r}
    sizes = tuple(length[table.get(a, "v")] for a in args)   # other names (your functions): nv
    if "q_r" in args:
        at = {i: qr[i][1] for i in bodies}
    else:
        at = {i: model.q_idx[i][1] for i in range(len(model.joints))}
    quaternions = [(at[i] - 4, model.names[i]) for i, j in enumerate(model.joints)
                   if i in at and j.type in ("spherical", "floating")]
    return args, sizes, quaternions


def _random_state(c: Compiled, rng: np.random.Generator) -> list[np.ndarray]:
    """One valid state of ``c``'s batched arguments (unit quaternions where they belong)."""
    from symdyn.reduce import reduce_mimic
    xs = []
    for a, n in zip(c.args, c.sizes):
        if a == "q":
            xs.append(c.model.random_q(rng))
        elif a == "q_r":
            xs.append(np.asarray(reduce_mimic(c.model, c.model.random_q(rng))))
        else:
            xs.append(rng.uniform(-1, 1, n))
    return xs


def _reference_shapes(c: Compiled) -> tuple[list[tuple[int, ...]], bool]:
    """Shapes of the results (NumPy at a random state) and whether they come as a tuple."""
    xs = _random_state(c, np.random.default_rng(0))
    out = c.fn(c.model, *xs, backend="numpy", **c.options)
    outs = list(out) if isinstance(out, tuple) else [out]
    return [np.shape(o) for o in outs], isinstance(out, tuple)


def _choose_route(c: Compiled, route: str, one_kernel: bool = False):
    """``(route, reason, (single, batch) or None for the traced route)``; ``one_kernel``: a
    program's kernels are not made functions of their own (the call is one already)."""
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; choose one of {', '.join(ROUTES)}")
    if route == "trace":
        return "trace", "asked for", None
    from symdyn.codegen import recursive
    from symdyn.codegen.functions import ALGORITHMS
    spec = ALGORITHMS.get(c.name)
    if spec is None or spec.function is not c.fn or spec.input_names != c.args:
        if route != "auto":
            raise ValueError(f"route={route!r} needs one of symdyn's registered algorithms "
                             f"with its state arguments ({', '.join(sorted(ALGORITHMS))}); "
                             f"{c.name!r} runs with route='trace'")
        return "trace", f"{c.name!r} is not a registered algorithm with these arguments", None
    recordable = c.name in recursive.RECURSIVE_ALGORITHMS
    try:
        recursive.choose_form(c.model, c.name, "recursive", options=c.options)
    except ValueError:
        recordable = False
    if route == "program" and not recordable:
        raise ValueError(f"route='program' is not available for {c.name!r} with options "
                         f"{c.options}; it exists for {', '.join(recursive.RECURSIVE_ALGORITHMS)}")
    try:
        shapes, as_tuple = _reference_shapes(c)

        def wrap(route, reason, lowered_from):
            return _wrap(route, reason, lowered_from, shapes, as_tuple, c.args, c.sizes,
                         small_calls=not one_kernel)
        program = None
        if route == "program" or (route == "auto" and recordable and c.name in PROGRAM_AUTO):
            program = _record(c)
            if route == "auto" and program.stats["work"] > GRAPH_MAX_WORK:
                return wrap("program", f"auto: {program.stats['work']} operations per call "
                            f"recorded > {GRAPH_MAX_WORK}", program)
            if route == "program":
                return wrap("program", "asked for", program)
        from symdyn.codegen.functions import casadi_function
        f = casadi_function(c.model, c.name, layout="numpy", **c.options)
        n = f.n_instructions()
        if route == "auto" and program is None and n > GRAPH_MAX:
            return "trace", f"auto: unrolled graph {n} > {GRAPH_MAX} instructions", None
        if route == "auto" and program is not None and n > GRAPH_MAX:
            return wrap("program", f"auto: unrolled graph {n} > {GRAPH_MAX} instructions",
                        program)
        return wrap("graph", "asked for" if route == "graph" else
                    f"auto: unrolled graph {n} instructions", f)
    except LoweringError as e:
        if route != "auto":
            raise BackendError(str(e)) from None
        return "trace", f"auto: {e}", None
    except (TypeError, ValueError, NotImplementedError, BackendError) as e:
        # options the CasADi / recording backends do not take (the traced route may)
        if route != "auto":
            raise
        return "trace", f"auto: no CasADi form with these options ({type(e).__name__}: {e})", None


def _record(c: Compiled):
    """The program of ``route="program"``: constants folded (``fold=True``) while its kernels
    stay within :data:`FOLD_MAX` SX instructions, else read from the constant table."""
    from symdyn.codegen import recursive
    from symdyn.codegen.functions import algorithm_spec, exact_rotations
    from symdyn.codegen.generate import _recursive_options
    spec = algorithm_spec(c.name)
    model = exact_rotations(c.model)
    # fuse=1: one kernel per step signature. Fused runs (what the C loop gains from) are more
    # kernel variants, and XLA's compile time follows the kernels' total size (g1 crba 5244 ->
    # 1458 SX instructions, christoffel 9569 -> 3905)
    args = (model, spec.function, list(spec.input_sizes(model)))
    options = dict(name=c.name, fuse=1, **_recursive_options(c.name, c.options))
    try:    # stops as soon as the folded kernels pass FOLD_MAX (g1 aba, christoffel: ~1 s)
        return recursive.record(*args, fold=True, max_instructions=FOLD_MAX, **options)
    except recursive.OverBudget:
        return recursive.record(*args, fold=False, **options)


def _wrap(route, reason, lowered_from, shapes, as_tuple, args, sizes, small_calls=True):
    """Jitted ``(single, batch)`` of a lowered graph or program: inputs as float arrays of the
    backend's dtype (float32 refused unless opted in) and of the expected shapes."""
    from symdyn.codegen import jax_lowering
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
        fn = jax_lowering.graph_function(lowered_from, shapes)
        fb = jax_lowering.in_chunks(jax_lowering.graph_batch(lowered_from, shapes), shapes,
                                    jax_lowering.CHUNK_GRAPH, jax_lowering.CHUNKS_MIN_GRAPH)
    else:
        program = jax_lowering.program_function(
            lowered_from, shapes,
            small_calls=None if small_calls else False)   # None: PROGRAM_SMALL_CALLS
        chunk = jax_lowering.program_chunk(program.result_rows)   # type: ignore[attr-defined]
        fb = jax_lowering.in_chunks(program, shapes, chunk)

        def fn(*xs):
            return tuple(o[0] for o in program(*(x[None] for x in xs)))

    def single(*xs):
        out = fn(*inputs(xs, False))
        return out if as_tuple else out[0]

    def batch(*xs, out=None):
        # out: a donated result set to write into (see in_chunks; Compiled._call passes it)
        xs = inputs(xs, True)
        if xs and xs[0].shape[0] == 0:      # no states: empty results (the lowerings index row 0)
            res = tuple(jnp.zeros((0,) + tuple(s), xs[0].dtype) for s in shapes)
        else:
            res = fb(*xs, out=out)
        return res if as_tuple else res[0]
    batch.writes_into = True             # type: ignore[attr-defined]
    batch.one_pass_below = fb.one_pass_below     # type: ignore[attr-defined]
    batch.state_shapes = shapes                  # type: ignore[attr-defined]
    return route, reason, (Jitted(single), Jitted(batch))

