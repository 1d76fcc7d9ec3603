"""CasADi graphs and recorded programs of symdyn's algorithms as JAX functions (no C compiler).

Two lowerings of the same traced algorithm source that :mod:`symdyn.codegen` compiles to C, used
by :func:`symdyn.jax.compile` (``route="graph"`` / ``"program"``):

* :func:`graph_function` / :func:`graph_batch`: the unrolled ``casadi.Function`` (CasADi's CSE
  applied) becomes one ``jax.numpy`` operation per SX instruction on rows of the batch: an input
  entry is a ``(batch,)`` vector, every scalar operation is elementwise over the batch, results
  are stacked at the end. XLA fuses the elementwise operations into loops over the batch, so the
  states of a batch are evaluated side by side without the per-operation array bookkeeping of
  tracing the algorithm with JAX arrays (3x3 and 6x6 products, slices, block writes). The graph
  grows with the model (N^2 entries for nv x nv results, N^3 for Christoffel symbols) and XLA's
  compile time with it. :func:`graph_batch` adds the fusion boundaries XLA's CPU backend needs
  (see there), and values used more than once are kept for their users rather than recomputed
  in each fusion (:func:`_shared`; on large batches, where recomputing costs more than storing),
  written a group of rows at a time (:meth:`SXLowering.plan_groups`: XLA's CPU backend runs
  each fusion as a kernel at a fixed cost, which dominates small batches). Both routes take
  the joints' sines and cosines from :func:`symdyn.codegen.jax_trig.sincos` (vectorized
  polynomials; XLA calls the C library per element) where the batch's angles allow it.
* :func:`program_function`: a recorded :class:`~symdyn.codegen.recursive.Program` (one kernel
  per step signature, one instruction per step call) becomes ``lax.scan`` s over the
  instructions (one per segment of calls that share no kernel with the others: the algorithm's
  passes, :func:`_segments`) with a ``lax.switch`` over the segment's kernels: the workspace is
  one ``(rows, batch)`` array carried by the scans; the switch's branch of an instruction
  gathers its argument rows from it (or reads them from the constant table), runs its kernel
  and returns its result rows stacked, which are written back with one in-place
  ``dynamic_update_slice`` into rows a first-fit allocator keeps free for them (:func:`_rows`);
  the results are written from the final rows at the end, in the ``(batch, ...)`` layout, box by
  box around the entries that are always zero (:func:`_boxes`; into zeros, or into a donated set
  of earlier results, where those entries are not written again). The compiled code holds each
  kernel once, so XLA's compile time is bounded by the number of distinct kernels (joint kinds
  x step kinds), not by the model's size.

Large batches on a CPU run in chunks (:func:`in_chunks`): a loop over slices of a few hundred
(graph) or 128 to 1024 (program, :func:`program_chunk`) states, from 2048 (graph) or four
chunks (program) on, each written into the results in place (a donated result set is the
loop's start: no zero fill), so that the rows kept between fusions, or the program's
workspace, stay in the caches and are allocated once per chunk size rather than for the whole
batch.

Both are plain ``jax.numpy``/``lax`` code: they run under ``jit``, ``vmap``, ``jacfwd`` and
``grad`` like the traced route. Conventions of the results are those of the NumPy functions
(``layout="numpy"`` of :func:`~symdyn.codegen.functions.casadi_function`: every output a dense
row-major flattening, reshaped here to the NumPy shape).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import casadi as ca
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import jax_trig

__all__ = ["CHUNK_GRAPH", "CHUNK_PROGRAM", "CHUNKS_MIN", "CHUNKS_MIN_GRAPH", "LoweringError",
           "SXLowering", "graph_batch", "graph_function", "in_chunks", "program_chunk",
           "program_function"]


class LoweringError(NotImplementedError):
    """A CasADi graph holds an operation this lowering does not translate."""


def _float(x):
    return x.astype(jnp.result_type(float)) if hasattr(x, "astype") else float(x)


def _where(c, x):
    return jnp.where(c != 0, x, 0.0)


def _direct(prim: Callable, generic: Callable) -> Callable:
    """``generic(a, b)``, as the primitive ``prim`` where JAX's operator would only add work:
    operands of one shape and dtype, or one of them a Python float (a graph's constants).
    ``a + b`` on tracers goes through ``jnp.add``, itself a jitted function, whose call inside
    a trace costs ~10x the primitive's bind (g1's five algorithms: ~44k such calls)."""
    def op(a, b):
        sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
        if sa is None:
            direct = sb is not None and type(a) is float and _floating(b)
        elif sb is None:
            direct = type(b) is float and _floating(a)
        else:
            direct = sa == sb and a.dtype == b.dtype and _floating(a)
        return prim(a, b) if direct else generic(a, b)
    return op


def _floating(a) -> bool:
    return jnp.issubdtype(a.dtype, jnp.floating)


def _direct1(prim: Callable, generic: Callable) -> Callable:
    """``generic(a)``, as ``prim`` on floating arrays (see :func:`_direct`)."""
    def op(a):
        return prim(a) if hasattr(a, "shape") and _floating(a) else generic(a)
    return op


_UNARY: dict[int, Callable] = {
    ca.OP_NEG: _direct1(lax.neg, lambda a: -a),
    ca.OP_SQ: _direct1(lambda a: lax.mul(a, a), lambda a: a * a),
    ca.OP_TWICE: _direct1(lambda a: lax.mul(a, 2.0), lambda a: 2.0 * a),
    ca.OP_INV: _direct1(lambda a: lax.div(1.0, a), lambda a: 1.0 / a),
    ca.OP_ASSIGN: lambda a: a,
    ca.OP_SIN: jnp.sin, ca.OP_COS: jnp.cos, ca.OP_TAN: jnp.tan, ca.OP_SQRT: jnp.sqrt,
    ca.OP_EXP: jnp.exp, ca.OP_LOG: jnp.log, ca.OP_FABS: jnp.abs, ca.OP_SIGN: jnp.sign,
    ca.OP_ASIN: jnp.arcsin, ca.OP_ACOS: jnp.arccos, ca.OP_ATAN: jnp.arctan,
    ca.OP_SINH: jnp.sinh, ca.OP_COSH: jnp.cosh, ca.OP_TANH: jnp.tanh,
    ca.OP_FLOOR: jnp.floor, ca.OP_CEIL: jnp.ceil, ca.OP_LOG1P: jnp.log1p,
    ca.OP_EXPM1: jnp.expm1, ca.OP_NOT: lambda a: _float(a == 0),
}

_BINARY: dict[int, Callable] = {
    ca.OP_ADD: _direct(lax.add, lambda a, b: a + b),
    ca.OP_SUB: _direct(lax.sub, lambda a, b: a - b),
    ca.OP_MUL: _direct(lax.mul, lambda a, b: a * b),
    ca.OP_DIV: _direct(lax.div, lambda a, b: a / b),
    ca.OP_POW: jnp.power, ca.OP_CONSTPOW: jnp.power, ca.OP_ATAN2: jnp.arctan2,
    ca.OP_FMIN: jnp.minimum, ca.OP_FMAX: jnp.maximum, ca.OP_HYPOT: jnp.hypot,
    ca.OP_COPYSIGN: jnp.copysign, ca.OP_FMOD: jnp.fmod,
    ca.OP_LT: lambda a, b: _float(jnp.less(a, b)),
    ca.OP_LE: lambda a, b: _float(jnp.less_equal(a, b)),
    ca.OP_EQ: lambda a, b: _float(jnp.equal(a, b)),
    ca.OP_NE: lambda a, b: _float(jnp.not_equal(a, b)),
    ca.OP_AND: lambda a, b: _float(jnp.logical_and(a != 0, b != 0)),
    ca.OP_OR: lambda a, b: _float(jnp.logical_or(a != 0, b != 0)),
    ca.OP_IF_ELSE_ZERO: _where,
}
_OP_NAMES = {getattr(ca, n): n for n in dir(ca) if n.startswith("OP_")}
_INPUT, _OUTPUT, _CONST = -1, -2, -3
# operations XLA evaluates slowly (range reduction, polynomials): computed once per graph in a
# stage of their own (see graph_batch), not duplicated into the fusions that use them
_TRIG = {ca.OP_SIN, ca.OP_COS, ca.OP_TAN}


# _shared: a value used u > 1 times is kept for its users (not recomputed by each) where its
# cone c (the operations since the last kept value) holds at least SHARED_MIN operations and the
# work its recomputation would repeat, (u - 1) * c, at least SHARED_WORK / batch. Each kept value
# ends a fusion, which costs a fixed time per call (~ SHARED_WORK operations on one state);
# recomputing a cone costs its operations on every state, once per further user. Measured, one
# core, min cone 4 / 64 / none: panda aba 1e4 states 0.54 / - / 1.23 us a state, 100 states
# 1.32 / 1.38 / 1.88; panda crba 100 states 0.83 / 0.57 / 0.61, christoffel 100 states 4.3 / 4.4
# / 3.6, 1e4 states 1.84 / - / 2.15 (freed memory retained). Weighing the cone by its further
# users instead of requiring c >= SHARED_WORK / batch alone (same constants; interleaved, one
# core, us a state, 100 / 1000 states): panda aba 1.43 / 0.71 -> 1.04 / 0.69, christoffel 4.70
# / 1.91 -> 4.12 / 1.77, g1 rnea 4.39 / 1.87 -> 3.41 / 1.88, g1 crba 5.31 / 2.90 -> 4.93 /
# 3.02; ur5 and panda rnea, crba, aba, christoffel at 100 states, g1's programs: as fast or
# faster. From 1600 states on (SHARED_WORK / batch <= SHARED_MIN) the two rules keep the same.
SHARED_MIN = 4
SHARED_WORK = 6400


def _shared(code: Sequence[tuple[int, tuple, Any]], outputs: Sequence[int],
            given: Sequence[int], min_work: float) -> frozenset[int]:
    """Values to compute once and keep for their users: those used ``u > 1`` times whose cone
    ``c`` (the operations since the last kept value) holds at least :data:`SHARED_MIN`
    operations and for which ``(u - 1) * c >= min_work`` (the operations recomputing it for
    each further user would repeat).

    XLA's CPU fusion duplicates cheap elementwise producers into every fusion that consumes
    them, and on a CSE'd graph that duplication compounds: panda aba (2747 SX instructions)
    became 46725 elementwise HLO operations, 1.2 us a state at 1e4 states. A value divided by a
    one XLA cannot fold (:func:`_opaque_one`) is the result of a division, which XLA counts as
    expensive and does not duplicate (an ``optimization_barrier`` is removed before fusion):
    with cones of 4 kept the same graph compiles to 4360 operations (335 of them these
    divisions), 0.54 us a state. Smaller cones are cheaper to recompute than to store."""
    uses = [0] * len(code)
    for op, args, _ in code:
        if op >= 0:
            for a in args:
                uses[a] += 1
    for v in outputs:
        uses[v] += 1
    known = set(given)
    cone = [0] * len(code)
    kept = set()
    for k, (op, args, _) in enumerate(code):
        if op < 0 or k in known:
            continue
        cone[k] = 1 + sum(cone[a] for a in args)
        if uses[k] > 1 and cone[k] >= SHARED_MIN and (uses[k] - 1) * cone[k] >= min_work:
            kept.add(k)
            cone[k] = 0
    return frozenset(kept)


def _opaque_one(inputs: Sequence[Any]) -> tuple[Any, int]:
    """``(one, batch)``: 1.0 computed from an entry of ``inputs`` (``x == x or isnan(x)``) so
    that XLA cannot fold it, and the number of states evaluated at once (the size of the largest
    entry: a program kernel's constants are scalars); ``(None, 1)`` where all entries are
    Python numbers."""
    best: Any = None                           # the largest first entry of an input
    size = 0
    for entries in inputs:
        first: Any
        if hasattr(entries, "dtype"):
            if entries.ndim == 0 or entries.shape[0] == 0:
                continue
            first, n = entries, math.prod(int(d) for d in entries.shape[1:])
        else:
            first = next(iter(entries), None)
            if not hasattr(first, "dtype"):
                continue
            n = math.prod(int(d) for d in first.shape)
        if best is None or n > size:
            best, size = first, n
    if best is None:
        return None, 1
    # its first element (lax directly: jnp's indexing and operators cost ~10x more to trace)
    x0 = lax.reshape(lax.slice(best, (0,) * best.ndim, (1,) * best.ndim), ()) \
        if best.ndim else best
    one = lax.bitwise_or(lax.eq(x0, x0), lax.ne(x0, x0))       # x == x or isnan(x)
    return lax.convert_element_type(one, best.dtype), size


class SXLowering:
    """One SX ``casadi.Function`` as a JAX evaluator: ``lowered(inputs)`` takes per input a
    sequence of its (dense, column) entries - scalars, or arrays of one batch shape - and returns
    per output its dense row-major entries (arrays, or the float 0.0 for structural zeros).

    The instructions are kept in SSA form (value ``k`` is the result of instruction ``k``;
    CasADi's work vector reuses slots), so that subsets of the graph can be evaluated:
    :attr:`trig_inputs` are the trigonometric values computed from the inputs without other
    trigonometric values in between (sin q_i, cos q_i of the joints), which
    :meth:`evaluate` can take as given. With ``share`` (default), values used more than once
    are kept for their users on large batches (:meth:`shared`)."""

    def __init__(self, f: Any, what: str = "", share: bool = True, work: int | None = None):
        if not f.is_a("SXFunction"):
            raise LoweringError(f"{what or f.name()}: only SX functions can be lowered to JAX")
        for j in range(f.n_in()):
            if not f.sparsity_in(j).is_dense() or f.size2_in(j) != 1:
                raise LoweringError(f"{what or f.name()}: input {j} is not a dense column")
        code: list[tuple[int, tuple, Any]] = []       # (op, arguments, constant/function)
        slot: dict[int, int] = {}                      # CasADi work slot -> SSA value
        self.outputs_at: list[tuple[int, int, int]] = []   # (output, nz, value)
        trig_depth: list[int] = []
        for k in range(f.n_instructions()):
            op = f.instruction_id(k)
            i, o = f.instruction_input(k), f.instruction_output(k)
            if op == ca.OP_OUTPUT:
                self.outputs_at.append((o[0], o[1], slot[i[0]]))
                code.append((_OUTPUT, (), None))
                trig_depth.append(0)
                continue
            if op == ca.OP_INPUT:
                entry: tuple[int, tuple, Any] = (_INPUT, (i[0], i[1]), None)
                depth = 0
            elif op == ca.OP_CONST:
                entry = (_CONST, (), float(f.instruction_constant(k)))
                depth = 0
            elif op in _BINARY or op in _UNARY:
                args = tuple(slot[a] for a in (i if op in _BINARY else i[:1]))
                entry = (op, args, _BINARY[op] if op in _BINARY else _UNARY[op])
                depth = max(trig_depth[a] for a in args) + (op in _TRIG)
            else:
                raise LoweringError(f"{what or f.name()}: CasADi operation "
                                    f"{_OP_NAMES.get(op, op)} has no JAX lowering; use "
                                    "route='trace'")
            code.append(entry)
            trig_depth.append(depth)
            slot[o[0]] = k
        self.code = code
        self.trig_inputs = [k for k, (op, _, _) in enumerate(code)
                            if op in _TRIG and trig_depth[k] == 1]
        self.n_in = f.n_in()
        self.in_sizes = tuple(f.size1_in(j) for j in range(f.n_in()))
        self.outputs = []          # per output: (number of entries, row-major index of each nz)
        for j in range(f.n_out()):
            sp = f.sparsity_out(j)
            rows, cols = sp.get_triplet()
            self.outputs.append((sp.size1() * sp.size2(),
                                 [r * sp.size2() + c for r, c in zip(rows, cols)]))
        self.n_instructions = f.n_instructions()
        self.share = share        # keep shared values for their users (see _shared)
        self.work = work          # SHARED_WORK of this lowering (None: the module's)
        self._shared: dict[int, frozenset[int]] = {}

    def shared(self, batch: int) -> frozenset[int]:
        """The values kept for their users when evaluating ``batch`` states at once (see
        :func:`_shared`; ``work``: :data:`SHARED_WORK` unless given)."""
        min_work = -(-(SHARED_WORK if self.work is None else self.work) // max(batch, 1))
        if min_work not in self._shared:
            self._shared[min_work] = _shared(self.code, [v for *_, v in self.outputs_at],
                                             self.trig_inputs, min_work)
        return self._shared[min_work]

    def _needed(self, targets: Sequence[int], given: Sequence[int] = ()) -> list[bool]:
        need = [False] * len(self.code)
        stop = set(given)
        stack = list(targets)
        while stack:
            k = stack.pop()
            if need[k]:
                continue
            need[k] = True
            if k not in stop:
                stack.extend(self.code[k][1] if self.code[k][0] >= 0 else ())
        return need

    def evaluate(self, inputs: Sequence[Any], targets: Sequence[int],
                 given: dict[int, Any] | None = None) -> list[Any]:
        """The values ``targets`` (SSA indices), with the values in ``given`` taken as known."""
        given = given or {}
        need = self._needed(targets, list(given))
        one, batch = _opaque_one(inputs)
        shared = self.shared(batch) if one is not None and self.share else frozenset()
        w: dict[int, Any] = {}
        for k in range(len(self.code)):
            if need[k]:
                w[k] = self._value(k, inputs, given, w)
                if k in shared and k not in given:
                    w[k] = w[k] / one                  # kept, not recomputed (see _shared)
        return [w[t] for t in targets]

    def _value(self, k: int, inputs: Sequence[Any], given: dict[int, Any], w: dict[int, Any]):
        """Value ``k`` from the inputs, the ``given`` values and the values ``w`` before it."""
        op, args, fn = self.code[k]
        if k in given:
            return given[k]
        if op == _INPUT:
            entries = inputs[args[0]]
            if isinstance(entries, jax.Array):     # (jnp indexing: ~10x the trace time)
                return lax.index_in_dim(entries, args[1], 0, keepdims=False)
            return entries[args[1]]
        if op == _CONST:
            return fn
        return fn(w[args[0]], w[args[1]]) if len(args) == 2 else fn(w[args[0]])

    def plan_groups(self, targets: Sequence[int], given: Sequence[int], batch: int,
                    group: int) -> list[tuple[list[int], list[list[int]]]]:
        """How :meth:`evaluate_grouped` computes ``targets`` from ``given`` on ``batch`` states:
        per stage, the values computed (in order) and the kept values (:meth:`shared`) written
        as one array per group of at most ``group`` (stage of a value: one more than the latest
        stage of the kept values it is computed from; the values of a group need none of each
        other).

        XLA's CPU backend runs every fusion as a kernel of its own, at a fixed cost per kernel
        (its thunk executor: ~0.4 us on the benchmark machine), and a stack of at most 8 rows
        is one fusion (more operands: one kernel per operand and a copy), so a group is one
        kernel where its values were ``group``."""
        free = set(given)
        need = self._needed(targets, list(free))
        kept = self.shared(batch) if self.share else frozenset()
        stage = [0] * len(self.code)
        by_stage: dict[int, list[int]] = {}
        for k, (op, args, _) in enumerate(self.code):
            if not need[k]:
                continue
            if op >= 0 and k not in free:
                stage[k] = max((stage[a] + (a in kept and a not in free) for a in args),
                               default=0)
            by_stage.setdefault(stage[k], []).append(k)
        plan = []
        for s in sorted(by_stage):
            members = [k for k in by_stage[s]
                       if k in kept and k not in free and self.code[k][0] >= 0]
            plan.append((by_stage[s], [members[lo:lo + group]
                                       for lo in range(0, len(members), group)]))
        return plan

    def evaluate_grouped(self, inputs: Sequence[Any],
                         plan: list[tuple[list[int], list[list[int]]]],
                         rows: Sequence[int | float], given: dict[int, Any], row: Callable,
                         group: int) -> list[Any]:
        """``rows`` (values, or constants) as arrays of ``group`` rows (the last one shorter),
        in order, computed by :meth:`plan_groups`'s ``plan`` from ``inputs`` and the values
        ``given``; ``row(v)`` makes a value a row of the batch."""
        one, _ = _opaque_one(inputs)
        w = self._run_plan(inputs, plan, given, row, one)
        values = [w[v] if isinstance(v, int) else v for v in rows]
        return [_kept_block(values[lo:lo + group], row, one)
                for lo in range(0, len(values), group)]

    def _run_plan(self, inputs: Sequence[Any], plan: list[tuple[list[int], list[list[int]]]],
                  given: dict[int, Any], row: Callable, one: Any) -> dict[int, Any]:
        """Every value of :meth:`plan_groups`'s ``plan``, its kept values read from their
        groups' arrays (:func:`_kept_block`)."""
        w: dict[int, Any] = {}
        for computed, groups in plan:
            for k in computed:
                w[k] = self._value(k, inputs, given, w)
            for part in groups:
                block = _kept_block([w[k] for k in part], row, one)
                for i, k in enumerate(part):
                    w[k] = block[i]
        return w

    def call_grouped(self, inputs: Sequence[Any], given: dict[int, Any], batch: int,
                     row: Callable, group: int = 8) -> list[list[Any]]:
        """:meth:`__call__` with the kept values written ``group`` to an array
        (:meth:`plan_groups`)."""
        targets = [v for *_, v in self.outputs_at]
        plan = self.plan_groups(targets, list(given), batch, group)
        return self._results(self._run_plan(inputs, plan, given, row, _opaque_one(inputs)[0]))

    def __call__(self, inputs: Sequence[Any],
                 given: dict[int, Any] | None = None) -> list[list[Any]]:
        targets = [v for *_, v in self.outputs_at]
        return self._results(dict(zip(targets, self.evaluate(inputs, targets, given))))

    def _results(self, w: dict[int, Any]) -> list[list[Any]]:
        """Per output, its dense row-major entries: ``w[value]`` at the entries ``outputs_at``
        places it, the float 0.0 at structural zeros."""
        result: list[list[Any]] = [[0.0] * numel for numel, _ in self.outputs]
        for o, nz, v in self.outputs_at:
            result[o][self.outputs[o][1][nz]] = w[v]
        return result


def _kept_block(values: Sequence[Any], row: Callable, one: Any) -> jax.Array:
    """``values`` (``row(v)``: a row of the batch) stacked as one array and divided by ``one``
    (:func:`_opaque_one`; ``None``: not divided), so that XLA keeps it for its users (see
    :func:`_shared`)."""
    block = jnp.stack([row(v) for v in values])
    return block / one if one is not None else block


def _rows_stacked(rows: Sequence[Any], inputs: Sequence[Any], group: int = 8) -> jax.Array:
    """``rows`` (arrays of one shape) stacked: more than ``group`` as stacks of ``group``, each
    divided by the :func:`_opaque_one` of ``inputs``, concatenated. XLA's CPU backend runs a
    stack of more than 8 rows as one kernel per row and a copy, a concatenation of such blocks
    as one kernel (g1's 29 joint angles: 20 kernels -> 1; crba, 100 states, one core,
    interleaved: 3.18 -> 3.12 times the C batch's time)."""
    one, _ = _opaque_one(inputs)
    if len(rows) <= group or one is None:
        return jnp.stack(rows)
    return jnp.concatenate([jnp.stack(rows[i:i + group]) / one
                            for i in range(0, len(rows), group)])


def _stack(entries: Sequence[Any], bshape: tuple[int, ...], dtype) -> jax.Array:
    """Entries (scalars or arrays of ``bshape``) as one array of shape ``(n,) + bshape``
    (stacked on the leading axis: along the batch axis XLA would fuse the whole graph into the
    stacking loop and recompute shared subexpressions per entry)."""
    if not entries:
        return jnp.zeros((0,) + bshape, dtype)
    return jnp.stack([jnp.broadcast_to(jnp.asarray(v, dtype), bshape) for v in entries])


def graph_function(f: Any, shapes: Sequence[tuple[int, ...]]) -> Callable:
    """``fn(*xs)`` evaluating the SX function ``f`` (``layout="numpy"``) on inputs ``xs`` of shape
    ``batch + (n_i,)`` (``batch`` may be ``()``); returns a tuple of arrays of shape
    ``batch + shapes[o]``. One traceable function (use it under ``jit``/``vmap``/``jacfwd``);
    :func:`graph_batch` is the faster form for large batches."""
    low = SXLowering(f)
    shapes = [tuple(s) for s in shapes]

    def fn(*xs):
        dtype = jnp.result_type(*xs)
        bshape = tuple(xs[0].shape[:-1])
        rows = [jnp.moveaxis(x, -1, 0) for x in xs]      # entry i of input j: rows[j][i]
        outs = low(rows)
        return tuple(jnp.moveaxis(_stack(d, bshape, dtype), 0, -1).reshape(bshape + s)
                     for d, s in zip(outs, shapes))

    fn.n_instructions = low.n_instructions               # type: ignore[attr-defined]
    return fn


BAND = 64     # graph_batch: dependency levels per conditional (see there)
GROUP = 8     # graph_batch, program kernels: values written as one array (see plan_groups)
SINCOS = True  # graph_batch: the joints' sines and cosines by jax_trig.sincos (see _trig_stage)


def _bands(low: SXLowering, given: Sequence[int], width: int) -> list[tuple[list[int], list[int]]]:
    """The graph cut into bands of ``width`` dependency levels: per band, the values it needs from
    earlier bands and the values it exports (used by later bands or as outputs); inputs,
    constants and ``given`` values are at level 0 and available everywhere."""
    free = set(given)
    level = [0] * len(low.code)
    for k, (op, args, _) in enumerate(low.code):
        if op >= 0 and k not in free:
            level[k] = 1 + max(level[a] for a in args)
    band = [(lv - 1) // width if lv else -1 for lv in level]
    n_bands = max(band, default=-1) + 1
    needs: list[set[int]] = [set() for _ in range(n_bands)]
    exports: list[set[int]] = [set() for _ in range(n_bands)]
    for k, (op, args, _) in enumerate(low.code):
        if op >= 0 and band[k] >= 0:
            for a in args:
                if 0 <= band[a] < band[k]:
                    needs[band[k]].add(a)
                    exports[band[a]].add(a)
    for *_, v in low.outputs_at:
        if band[v] >= 0:
            exports[band[v]].add(v)
    return [(sorted(n), sorted(e)) for n, e in zip(needs, exports)]


def graph_batch(f: Any, shapes: Sequence[tuple[int, ...]], band: int = BAND,
                group: int | None = None, sincos: bool | None = None) -> Callable:
    """Like :func:`graph_function` for inputs of shape ``(batch, n_i)``, laid out for XLA: the
    inputs are transposed to rows ``(n_i, batch)``; the sines and cosines of the joint
    coordinates are computed first; the graph then runs on the rows in bands of ``band``
    dependency levels, each inside a ``lax.cond`` (its predicate is true at run time but not
    foldable), exporting the rows later bands use; the results are gathered from the exported
    rows at the end.

    A conditional is a fusion boundary, and XLA's CPU fusion needs them here: in one
    computation it fuses the graph into the transposing / stacking loops and recomputes
    shared subexpressions per entry (ur5 rnea, 4096 states: 2.2 us a state against 0.19 us),
    duplicates sin/cos into every fusion using them (ur5 coriolis_matrix: 5 joints, 326 sines,
    whose range reduction costs more the larger the angle), and on deep graphs the duplication
    compounds (serial_chain(20) aba unbanded: 83 s to compile, 35 ms a state).

    Every value computed once (kept, exported) is written with others into an array of
    ``group`` rows (default :data:`GROUP`; :meth:`SXLowering.plan_groups`): one kernel where
    XLA would run one per value. Measured against one value per array (``group=1``;
    interleaved, one core, us a state, medians of 9 rounds): 100 states ur5 rnea 0.49 -> 0.36,
    christoffel 0.61 -> 0.39, aba 0.80 -> 0.47; panda rnea 0.49 -> 0.32, crba 0.66 -> 0.41,
    coriolis_matrix 2.00 -> 1.48, christoffel 4.11 -> 2.44, aba 1.17 -> 0.57; g1 rnea 3.89 ->
    2.10, crba 5.40 -> 3.76. 1000 states and more: aba 20-30 % faster (panda 1e4 states 0.74 ->
    0.62), rnea 5-15 %, crba and coriolis_matrix within +-7 %, christoffel at 1000 states 8-20 %
    slower (panda 1.67 -> 1.88), at 1e4 / 1e5 within +-15 % either way.

    XLA's thunk executor runs a computation's kernels on its worker threads where more than 8
    are ready at once and a buffer exceeds 512 bytes (g1 crba, 100 states: two thread switches a
    call, none at 1 state); that hand-off costs little here: bands of 16 levels instead of 64
    doubled the switches at the same speed (one core, interleaved, JAX/C 3.03 -> 3.00)."""
    low = SXLowering(f)
    shapes = [tuple(s) for s in shapes]
    sizes = [int(np.prod(s)) for s in shapes]
    bands = _bands(low, low.trig_inputs, band)
    group = GROUP if group is None else group
    sincos = SINCOS if sincos is None else sincos

    def fn(*xs):
        B = xs[0].shape[0]
        dtype = jnp.result_type(*xs)
        rows = tuple(jnp.asarray(x, dtype).T for x in xs)

        def row(v):
            return jnp.broadcast_to(jnp.asarray(v, dtype), (B,))

        x0 = rows[0][0, 0] if rows[0].size else jnp.zeros((), dtype)
        true = (x0 == x0) | jnp.isnan(x0)           # always true, not known to the compiler
        held, at = _grouped_bands(low, bands, rows, true, row, B, dtype, group, sincos)
        return _gathered(low, held, at, rows, row, B, dtype, sizes, shapes)

    fn.n_instructions = low.n_instructions               # type: ignore[attr-defined]
    return fn


def _grouped_bands(low: SXLowering, bands, rows, true, row: Callable, B: int, dtype,
                   group: int, sincos: bool) -> tuple[list[Any], dict[int, tuple[int, int]]]:
    """:func:`graph_batch`'s bands with their values written in groups
    (:meth:`SXLowering.plan_groups`): ``(arrays, at)``, the arrays the conditionals return and
    ``at[value] = (array, row)`` of the trigonometric inputs and of every band's exports."""
    held: list[Any] = []
    at: dict[int, tuple[int, int]] = {}

    def run(targets, given):
        plan = low.plan_groups(targets, given, B, group)
        used = sorted({at[k][0] for k in given})

        def stage(rows, ins):
            pos = dict(zip(used, ins))
            known = {k: pos[at[k][0]][at[k][1]] for k in given}
            return tuple(low.evaluate_grouped(rows, plan, targets, known, row, group))

        def zeros(*_):
            return tuple(jnp.zeros((len(targets[lo:lo + group]), B), dtype)
                         for lo in range(0, len(targets), group))
        for j, arr in enumerate(lax.cond(true, stage, zeros, rows, tuple(held[i] for i in used))):
            for i, k in enumerate(targets[j * group:(j + 1) * group]):
                at[k] = (len(held), i)
            held.append(arr)
    if not (sincos and _trig_stage(low, rows, row, held, at)):
        run(low.trig_inputs, [])
    for needs, exports in bands:
        run(exports, low.trig_inputs + needs)
    return held, at


def _sines(low: SXLowering, inputs, row: Callable):
    """The sines and cosines of :attr:`SXLowering.trig_inputs` (the joints' sin q, cos q) by
    :func:`~symdyn.codegen.jax_trig.sincos` (vectorized polynomials instead of one C library call
    per element) where every argument of the batch is within its range
    (:data:`~symdyn.codegen.jax_trig.LIMIT`), else by ``jnp.sin`` / ``jnp.cos``: a ``lax.cond``
    on the batch. ``(S, C, at)``: the sines and the cosines of the arguments, ``at[value] =
    (0 or 1, row)`` (in ``S`` or ``C``) of each trigonometric input; ``None`` where there are
    none, or one is not a sine or cosine (tan)."""
    if not low.trig_inputs or any(low.code[k][0] not in (ca.OP_SIN, ca.OP_COS)
                                  for k in low.trig_inputs):
        return None
    args = sorted({low.code[k][1][0] for k in low.trig_inputs})
    A = _rows_stacked([row(v) for v in low.evaluate(inputs, args)], inputs)

    def libm(A):
        return jnp.sin(A), jnp.cos(A)
    S, C = lax.cond(jnp.all(jnp.abs(A) <= jax_trig.LIMIT), jax_trig.sincos, libm, A)
    return S, C, {k: (int(low.code[k][0] == ca.OP_COS), args.index(low.code[k][1][0]))
                  for k in low.trig_inputs}


def _trig_stage(low: SXLowering, rows, row: Callable, held: list[Any],
                at: dict[int, tuple[int, int]]) -> bool:
    """:func:`graph_batch`'s trigonometric inputs by :func:`_sines` (measured, one core, us a
    state, jnp.sin / jnp.cos -> sincos: panda crba 1e5 states 0.36 -> 0.22, ur5 rnea 0.24 ->
    0.11, ur5 christoffel 0.53 -> 0.41; 100 states g1 crba 3.90 -> 3.16): their arrays join
    ``held``; ``False`` where :func:`_sines` does not apply."""
    sines = _sines(low, rows, row)
    if sines is None:
        return False
    S, C, where = sines
    at.update({k: (len(held) + j, r) for k, (j, r) in where.items()})
    held.extend((S, C))
    return True


def _gathered(low: SXLowering, held: list[Any], at: dict[int, tuple[int, int]], rows, row,
              B: int, dtype, sizes: Sequence[int], shapes: Sequence[tuple[int, ...]]) -> tuple:
    """The results of :func:`graph_batch` from the arrays of :func:`_grouped_bands`: the arrays
    holding outputs, with rows for the outputs computed from the inputs alone (inputs,
    constants) and a row of zeros, as one table; each result one gather of its entries' rows
    and a transposition (one kernel each, where stacking rows costs one per row).

    That write is a large part of a graph's time: XLA's fused gather and transposition runs at
    ~0.6-1 ns an entry (one core, measured apart, us a call, the table alone -> with the
    results: g1 crba, 1225 entries a state, 100 states 135 -> 232, 1000 states 1225 -> 2422;
    panda christoffel, 729, 100 states 97 -> 171). Gathering rows first and transposing after,
    or transposing the table first and gathering within rows, ran slower (1225 entries from 331
    rows, 100 states: 74 us against 369 and 85); int32 or int16 indices: no change. Measured
    apart again once glibc serves a ~1 MB result from its heap (its mmap threshold raised by an
    earlier free) instead of mapping it afresh, those forms, jnp.take, and the table transposed
    behind an optimization barrier all take the same ~52 us (0.4 ns an entry; x + 1 on 1000 KB:
    142 us freshly mapped, 62 us from the heap), so their differences above were mostly
    mappings; in the graph's call the write still takes ~90 us (g1 crba, 100 states)."""
    values = sorted({v for *_, v in low.outputs_at})
    arrays = sorted({at[v][0] for v in values if v in at})
    start, n = {}, 0
    for a in arrays:
        start[a] = n
        n += held[a].shape[0]
    direct = [v for v in values if v not in at]
    position = {v: start[at[v][0]] + at[v][1] for v in values if v in at}
    position.update({v: n + j for j, v in enumerate(direct)})
    zero = n + len(direct)
    extra = [row(v) for v in low.evaluate(rows, direct)] + [jnp.zeros((B,), dtype)]
    table = jnp.concatenate([held[a] for a in arrays] + [jnp.stack(extra)])
    index = [np.full(size, zero) for size in sizes]
    for o, nz, v in low.outputs_at:
        index[o][low.outputs[o][1][nz]] = position[v]
    # the indices are in range by construction: no bounds mask in the gathering loop (panda
    # christoffel, one core, interleaved, times the C batch's time at 100 / 1000 states: 3.41 /
    # 2.66 -> 3.37 / 2.58 against jnp.take's default)
    return tuple(table.at[np.asarray(i)].get(mode="promise_in_bounds").T.reshape((B,) + s)
                 for i, s in zip(index, shapes))


# in_chunks: states per chunk of the graph route and of the program route, and the number of
# chunks from which a batch is split (on a CPU). Measured (one core, medians, glibc's defaults):
# 1e5 states, chunks of ~4000 against one pass, us a state: ur5 rnea 0.44 -> 0.20, aba 0.81 ->
# 0.26, coriolis_matrix 0.68 -> 0.32, christoffel 1.24 -> 0.95; panda rnea 0.72 -> 0.27, aba 1.30
# -> 0.43, coriolis_matrix 2.2 -> 1.3, crba 0.71 -> 0.50; programs, chunks of 1000 against one
# pass: g1 crba 4096 states 9.8 -> 7.5, 1e4 states 12.9 -> 9.1, panda christoffel 1e4 11.3 -> 6.8
# (at 1500-3000 states no gain). Graphs, since chunks start from the donated result set (no zero
# fill), 1e4 states in chunks of ~1000 against one pass (experiments/bench_jax.py): ur5
# rnea 0.245 -> 0.216, crba 0.181 -> 0.175, coriolis_matrix 0.401 -> 0.335, aba 0.404 -> 0.316,
# christoffel 0.355 -> 0.434 (the one slower); panda rnea 0.406 -> 0.318, crba 0.308 -> 0.289,
# coriolis_matrix 1.01 -> 0.89, christoffel 3.17 -> 2.27, aba 0.82 -> 0.62; at 1e5 states chunks
# of 1000, 2000 or 4000 within 5 % of each other. Graph chunks of 256 states instead of 1024,
# from the same 2048 states on (interleaved, one core, JAX/C at 1e4 / 1e5 states, 1024 -> 256):
# panda christoffel 2.98 / 3.19 -> 2.59 / 2.43 (its 729 results a state: a chunk's results and
# transposed rows stay in the L2 cache), rnea 0.96 / 1.06 -> 0.95 / 0.86; ur5 coriolis_matrix
# 1.29 / 1.55 -> 1.15 / 1.44, aba 0.96 / 1.06 -> 1.05 / 1.05, crba 0.97 / 1.08 -> 1.01 / 1.03;
# g1 crba 1e4 2.61 -> 2.39, rnea 1.38 -> 1.22. Programs: 1024 where their results are gathered
# from few workspace rows (g1 aba 1e4 states, 256 / 512 / 1024: 2.40 / 2.03 / 2.00), fewer where
# those rows outgrow the L2 cache (program_chunk).
CHUNK_GRAPH = 256
CHUNK_PROGRAM = 1024    # programs: at most (see program_chunk)
CHUNKS_MIN = 4          # programs: from four chunks (4096 states with chunks of 1024)
CHUNKS_MIN_GRAPH = 8    # graphs: from 2048 states

# program_chunk: the workspace rows a program's results are gathered from take at most
# PROGRAM_CHUNK_BYTES a chunk (the benchmark machine's L2 cache a core: 2 MiB), in chunks of at
# least CHUNK_PROGRAM_MIN states
PROGRAM_CHUNK_BYTES = 2 << 20
CHUNK_PROGRAM_MIN = 128


def program_chunk(result_rows: int) -> int:
    """States per chunk of a program whose results are gathered from ``result_rows`` rows of its
    workspace: :data:`CHUNK_PROGRAM`, or the largest power of two (at least
    :data:`CHUNK_PROGRAM_MIN`) whose rows take at most :data:`PROGRAM_CHUNK_BYTES`.

    Writing the results transposes those rows into the ``(batch, ...)`` layout, an entry from
    another row at each step; where the rows of a chunk outgrow the L2 cache, each entry is a
    read from further out (g1 coriolis_matrix at 1000 states, unchunked: ~6.5 of its ~22 ms a
    call in writing its 3675 entries a state from 1341 rows, measured by XLA's profiler).
    Measured (one core, interleaved, JAX/C, against the same function unchunked or in chunks
    of 1024 placed second, after a first copy that absorbs the first-compiled function's
    slower start): g1 coriolis_matrix (1341 rows; 128) at 1000 states 2.52-2.78 -> 2.35-2.39,
    at 1e4 states 2.48 -> 2.39 (256: 2.27); christoffel (5750 rows; 128) at 1000 states
    2.56-2.58 -> 1.86-1.88 (64: 1.87, 256: 2.56); aba (35 rows; 1024 kept) at 1000 states 128
    states a chunk were slower, 2.00-2.05 -> 2.30, at 1e4 states 256: 1.90 -> 2.25: its results
    are small and each chunk costs its ~240 us of fixed cost again."""
    if result_rows * 8 * CHUNK_PROGRAM <= PROGRAM_CHUNK_BYTES:
        return CHUNK_PROGRAM
    fits = PROGRAM_CHUNK_BYTES // (8 * max(result_rows, 1))
    return min(CHUNK_PROGRAM, max(CHUNK_PROGRAM_MIN, 1 << max(fits.bit_length() - 1, 0)))


def _on_cpu() -> bool:
    """Whether code traced now runs on a CPU: JAX's default device (``jax.default_device``) or,
    unset, its default backend."""
    device = getattr(jax.config, "jax_default_device", None)
    if device is None:
        return jax.default_backend() == "cpu"
    return (device if isinstance(device, str) else device.platform) == "cpu"


def guarded_call(fn: Callable, args: tuple, kwargs: dict | None = None):
    """``fn(*args, **kwargs)`` as the true branch of a conditional whose predicate reads an entry
    of every array argument (true, but not known to XLA): the body of an XLA:CPU single-function
    call (:func:`small_call`, ``symdyn.jax``'s one kernel). XLA:CPU (jaxlib 0.10.2) emits such a
    call whose body is not a conditional wrongly where it partitions a fusion over two cores
    (its LLVM IR fails to verify: "Incorrect number of arguments passed to called function") and
    aborts the process on one with an argument it does not read ("All or none of the slices
    should have an explicit index"). Without array entries (an empty batch), ``fn`` itself."""
    kwargs = kwargs or {}
    leaves = [a for a in jax.tree_util.tree_leaves((args, kwargs)) if jnp.size(a)]
    if not leaves:
        return fn(*args, **kwargs)
    firsts = [lax.reshape(lax.slice(a, (0,) * a.ndim, (1,) * a.ndim), ()) if a.ndim else a
              for a in map(jnp.asarray, leaves)]
    x0 = next((x for x in firsts if jnp.issubdtype(x.dtype, jnp.floating)),
              jnp.zeros((), jnp.result_type(float)))
    for x in firsts:             # 0 * x: read, not folded (0 * inf is nan)
        x0 = x0 + lax.convert_element_type(x, x0.dtype) * 0.0
    true = lax.bitwise_or(lax.eq(x0, x0), lax.ne(x0, x0))       # x == x or isnan(x)
    shapes = jax.eval_shape(fn, *args, **kwargs)

    def zeros(_):
        return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
    return lax.cond(true, lambda ak: fn(*ak[0], **ak[1]), zeros, (args, kwargs))


def small_call(fn: Callable) -> Callable:
    """``fn`` (arrays -> arrays), where it runs on a CPU, as a nested call tagged
    ``xla_cpu_small_call``: XLA's CPU backend compiles it into one function, where it would
    otherwise run each of its fusions as a kernel of its own at a fixed cost per kernel (its
    thunk executor; body: :func:`guarded_call`). Traced for another device, ``fn`` itself."""
    from jax.experimental.xla_metadata import set_xla_metadata
    jitted = jax.jit(fn)
    inner = jax.jit(lambda *a: guarded_call(jitted, a), inline=False)

    def call(*args):
        if not _on_cpu():
            return fn(*args)
        return set_xla_metadata(inner(*args), xla_cpu_small_call="true", inlineable="false")
    return call


def in_chunks(fn: Callable, shapes: Sequence[tuple[int, ...]], chunk: int,
              min_chunks: int = CHUNKS_MIN) -> Callable:
    """``fn`` (inputs ``(batch, n_i)``, results ``(batch,) + shapes[o]``, states independent)
    evaluated over a batch of at least ``min_chunks * chunk`` states in a ``fori_loop`` over
    ``ceil(batch / chunk)`` slices of equal size, each result slice written in place into the
    results (the last slice ends at the batch's end and may overlap the one before it: the states
    in both are computed twice, with the same values). Smaller batches, and any batch traced for
    a GPU (which wants all its states at once), run in one pass.

    ``out``: arrays of the results' shapes that the loop starts from instead of zeros: a result
    set donated by the caller, so that the batch is written into it without first filling it
    with zeros (one pass over the results less: ur5 christoffel, 1e5 states, 173 MB of results,
    0.76 -> 0.54 us a state, one core). Every entry is overwritten, unless ``fn`` writes into a
    given set itself (``fn.writes_into``, :func:`program_function`: then ``out`` is passed to it,
    in one pass too, and must hold zeros or earlier results of ``fn`` where its results are
    always zero)."""
    shapes = [tuple(s) for s in shapes]

    def chunked(*xs, out: Sequence[Any] | None = None):
        B = xs[0].shape[0]
        if out is not None and [tuple(o.shape) for o in out] != [(B,) + s for s in shapes]:
            raise ValueError(f"out: expected arrays of shapes {[(B,) + s for s in shapes]}, "
                             f"got {[tuple(o.shape) for o in out]}")
        into = getattr(fn, "writes_into", False)
        if B < min_chunks * chunk or not _on_cpu():
            return fn(*xs, out=out) if into else fn(*xs)
        n = -(-B // chunk)
        size = -(-B // n)
        dtype = jnp.result_type(*xs)

        def body(i, outs):
            start = jnp.minimum(i * size, B - size)
            if into:
                return fn(*(lax.dynamic_slice_in_dim(x, start, size) for x in xs),
                          out=outs, at=start)
            part = fn(*(lax.dynamic_slice_in_dim(x, start, size) for x in xs))
            return tuple(lax.dynamic_update_slice_in_dim(o, p, start, 0)
                         for o, p in zip(outs, part))
        if out is None:
            out = tuple(jnp.zeros((B,) + s, dtype) for s in shapes)
        return lax.fori_loop(0, n, body, tuple(out))
    chunked.one_pass_below = min_chunks * chunk     # type: ignore[attr-defined]
    return chunked


def _rows(steps: Sequence[tuple[list[int], int, int, int]], n_versions: int, n_inputs: int,
          kept: np.ndarray) -> tuple[np.ndarray, int]:
    """Rows of the program's workspace for its versions: ``(row of each version, rows)``.

    ``steps``: per scan step the versions it reads, the first version it writes, how many
    (``m``) and the rows it writes (``P >= m``, that of its segment). Version 0 (zero) and the
    inputs ``1 ... n_inputs - 1`` take rows 0 ...; a step writes ``P`` rows from the lowest row
    ``r`` where ``P`` rows are free after its reads (rows of versions no later step reads and
    not in ``kept``, the results' sources): its versions take ``r ... r + m - 1``, the rest of
    the ``P`` rows get values nothing reads. Linear scan, first fit: the workspace holds what is
    live (plus the largest ``P``), not every value written."""
    last = np.full(n_versions, -1, np.int64)      # the last step reading each version
    for s, (read, *_) in enumerate(steps):
        last[read] = s
    last[:n_inputs] = np.maximum(last[:n_inputs], 0)
    last[0] = len(steps)
    last[kept.astype(np.int64)] = len(steps)
    row = np.zeros(n_versions, np.int64)
    row[:n_inputs] = np.arange(n_inputs)
    free_at: dict[int, list[int]] = {}            # step -> rows whose versions die after it
    for v in range(n_inputs):
        free_at.setdefault(int(last[v]), []).append(v)
    live = np.zeros(max(2 * n_inputs, 64), bool)
    live[:n_inputs] = True
    end = n_inputs
    for s, (_, first, m, P) in enumerate(steps):
        live[free_at.pop(s, [])] = False          # read by this step's gather, then free
        c = np.concatenate([[0], np.cumsum(live)])
        fits = np.flatnonzero(c[P:] - c[:-P] == 0) if live.size >= P else np.empty(0, int)
        r = int(fits[0]) if fits.size else live.size
        if r + P > live.size:
            live = np.concatenate([live, np.zeros(max(r + P - live.size, live.size), bool)])
        end = max(end, r + P)
        vs = np.arange(first, first + m)
        row[vs] = np.arange(r, r + m)
        live[r:r + m] = True
        for v in vs.tolist():
            if last[v] < s:                        # never read: free at once
                live[row[v]] = False
            else:
                free_at.setdefault(int(last[v]), []).append(int(row[v]))
    return row, end


def _segments(kernels: Sequence[int]) -> list[tuple[int, int]]:
    """The program's calls (their ``kernels``, in order) cut into the most contiguous runs
    ``[lo, hi)`` such that no kernel is called in two runs (the passes of a recursive
    algorithm): each run can be a scan of its own, whose steps write no more rows than its calls
    need and whose switch holds its kernels only, each kernel compiled once."""
    last = {k: i for i, k in enumerate(kernels)}
    runs, lo, hi = [], 0, 0
    for i, k in enumerate(kernels):
        hi = max(hi, last[k] + 1)
        if i + 1 == hi:
            runs.append((lo, hi))
            lo = hi
    return runs


# _split: the cost of a row a scan step stacks and writes (padding included), in kernel
# operations. Measured (one core, interleaved, us a state at 100 / 1000 states), P at the 90th
# percentile of the rows a call writes against the median and fixed P: g1 coriolis_matrix (P 24
# -> 6) 32.0 / 22.9 -> 16.1 / 16.5, crba (17 -> 4) 11.5 / 7.3 -> 6.1 / 5.0, christoffel (24 ->
# 6) 240 / 251 -> 202 / 237, panda aba (49 -> 7) 5.8 / 2.5 -> 3.4 / 1.7; but g1 aba (50 -> 12)
# 15.9 / 12.2 -> 18.5 / 14.3, its heavy 50-row kernels repeated in five parts (P 25: 16.9 /
# 11.7). A row costed as 4 operations reproduces these choices (g1 aba 50, coriolis_matrix 6,
# crba 4; christoffel 13).
ROW_COST = 4

# program kernels: SHARED_WORK of their lowerings, and the number of kept values from which a
# branch writes them GROUP to an array (plan_groups: one XLA kernel a group instead of one a
# value; XLA's CPU runtime pays a fixed cost per kernel and step: g1 aba's heavy kernel, 757
# instructions, is 16-17 us a call from 8 to 100 states). Measured, one core, interleaved, JAX/C
# at 100 / 1000 states, one value an array and SHARED_WORK 6400 -> grouped and 1600: g1 aba
# 3.15 / 2.12 -> 2.88 / 1.95 (its backward pass kernels keep 50-99 values); coriolis_matrix
# 2.03 / 2.57 -> 2.06 / 2.59, christoffel 1.37 / 2.71 -> 1.40 / 2.71. Grouping every kernel's
# kept values instead (coriolis_matrix's keep 3-18 at 1000 states) made coriolis_matrix 1.15x
# slower at 1000 states (2.60 -> 2.99); grouping at 6400 gave aba 3.16 / 2.13 -> 2.99 / 1.98.
PROGRAM_WORK = 1600
PROGRAM_GROUP_MIN = 32

# A branch's result rows, where a step writes more than GROUP and its kernel is not one function
# (PROGRAM_SMALL_CALLS off, one_kernel=True, another device): as one stack (XLA's kernels: one
# per row and a copy) or, on batches of fewer than GROUPED_ROWS_BELOW states, as stacks of
# GROUP rows kept (_rows_stacked: one kernel per stack and a copy). Measured, g1 aba (P 50),
# one core, interleaved, XLA's MLIR emitters, us a state, one stack -> stacks of 8: 100 states
# 8.28 -> 6.70, 512 states 5.52 -> 6.12. Inside one function (small_call) they run slower
# (experiments/jax_program_steps.py g1, us a state at 100 states, kernels as functions, one
# stack -> stacks of 8: christoffel 49.2 -> 70.6, aba 6.0 -> 10.6); in the one function of
# one_kernel=True they halve XLA's compile (G1 christoffel, 100 states, 15.8 -> 8.0 s).
GROUPED_ROWS_BELOW = 256

# On a CPU the kernels of a segment whose steps write more than GROUP rows (a branch of its
# steps' switch) are each compiled by XLA as one function (small_call): a step then runs the
# scan's iteration, the switch and one call, where XLA's thunk executor would run every fusion
# of the kernel (kept values, result rows: a stack of more than 8 rows is a kernel a row) as a
# kernel of its own at a fixed cost each. Measured in symdyn.jax's "Program steps" paragraph
# (experiments/jax_program_steps.py); False: XLA's kernels throughout.
PROGRAM_SMALL_CALLS = True



def _split(calls: Sequence[tuple[SXLowering, int]]) -> int:
    """P, the rows every scan step of a program writes: the one of the calls' row counts that
    minimises ``ROW_COST * steps * P`` plus the kernels' operations, where a call writing ``n``
    rows takes ``ceil(n / P)`` steps and each step evaluates the cone of its ``P`` rows (XLA
    drops the rest of the kernel)."""
    if not calls:
        return 1
    dense: dict[int, list[int | None]] = {}       # per kernel: SSA value of each result row
    for low, _ in calls:
        if id(low) not in dense:
            rows: list[int | None] = []
            for o, (numel, _) in enumerate(low.outputs):
                at: list[int | None] = [None] * numel
                for oo, nz, v in low.outputs_at:
                    if oo == o:
                        at[low.outputs[o][1][nz]] = v
                rows.extend(at)
            dense[id(low)] = rows
    cone: dict[tuple[int, int, int], int] = {}

    def work(low: SXLowering, lo: int, hi: int) -> int:
        key = (id(low), lo, hi)
        if key not in cone:
            targets = [v for v in dense[id(low)][lo:hi] if v is not None]
            need = low._needed(targets)
            cone[key] = sum(1 for k, (op, _, _) in enumerate(low.code) if need[k] and op >= 0)
        return cone[key]

    def cost(P: int) -> int:
        return sum(ROW_COST * P + work(low, lo, min(n, lo + P))
                   for low, n in calls for lo in range(0, max(n, 1), P))
    return min(sorted({max(n, 1) for _, n in calls}), key=cost)


# program results written into a given result set (see _write_boxes): at most BOXES_MAX boxes
# a result (each one dynamic_update_slice, a fusion of its own), else one box over all of it
BOXES_MAX = 256


def _boxes(live: np.ndarray) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Boxes ``(start, size)`` covering the ``True`` entries of ``live`` (a result's entries
    that are not always zero): per index of the leading axes, each run of consecutive rows
    (second last axis) holding such an entry, over the columns from the first to the last one.
    One box over the whole result for fewer than two axes or more than :data:`BOXES_MAX`."""
    shape = live.shape
    whole = [((0,) * len(shape), shape)] if live.any() else []
    if len(shape) < 2:
        return whole
    boxes = []
    for lead in np.ndindex(*shape[:-2]):
        L = live[lead]
        rows = np.flatnonzero(L.any(axis=1))
        if not rows.size:
            continue
        cut = np.flatnonzero(np.diff(rows) > 1)
        for a, b in zip(np.r_[rows[0], rows[cut + 1]], np.r_[rows[cut], rows[-1]] + 1):
            cols = np.flatnonzero(L[a:b].any(axis=0))
            boxes.append((lead + (int(a), int(cols[0])),
                          (1,) * len(lead) + (int(b - a), int(cols[-1] - cols[0] + 1))))
    return boxes if len(boxes) <= BOXES_MAX else whole


def _write_boxes(S, o, at, rows: np.ndarray, sign: np.ndarray, cval: np.ndarray, boxes):
    """Result ``o`` (``(batch,) + shape``) with states ``at ...`` written from the workspace
    ``S`` (``(rows, states)``), box by box: ``rows``, ``sign``, ``cval`` per entry of the
    flattened result (its workspace row, factor and constant). Entries outside ``boxes`` are
    not written (they are always zero; ``o`` holds zeros there)."""
    B = S.shape[1]
    flat = np.arange(int(np.prod(o.shape[1:]))).reshape(o.shape[1:])
    at = jnp.asarray(at)
    for start, size in boxes:
        e = flat[tuple(slice(a, a + n) for a, n in zip(start, size))].reshape(-1)
        # read from the (rows, states) workspace as it is: XLA fuses the transpose into the
        # write (a transposed copy of the rows first: g1 christoffel, 1000 states, 98 -> 159 us
        # a state)
        part = S[rows[e]].T
        if np.any(sign[e] != 1.0):
            part = part * jnp.asarray(sign[e], S.dtype)
        if np.any(cval[e] != 0.0):
            part = part + jnp.asarray(cval[e], S.dtype)
        o = lax.dynamic_update_slice(o, part.reshape((B,) + size),
                                     (at,) + tuple(jnp.asarray(a, at.dtype) for a in start))
    return o


def program_function(prog: Any, shapes: Sequence[tuple[int, ...]],
                     sincos: bool | None = None, small_calls: bool | None = None) -> Callable:
    """``fn(*xs)`` running the recorded program ``prog`` on inputs of shape ``(batch, n_i)``;
    returns a tuple of arrays of shape ``(batch,) + shapes[o]``. One ``lax.scan`` step per
    program instruction, a ``lax.switch`` over its kernel (see the module docstring).

    ``fn(*xs, out=results, at=start)`` writes the batch into the states ``start ...`` of
    ``results`` (arrays of shape ``(states,) + shapes[o]``) and returns them: ``results`` must
    hold zeros, or earlier results of this function, where a result entry is always zero (the
    program never writes it), as those entries are not written (``fn.writes_into``).

    ``small_calls`` (default :data:`PROGRAM_SMALL_CALLS`): on a CPU, the kernels of segments
    whose steps write more than :data:`GROUP` rows each one XLA function (:func:`small_call`)."""
    from .recursive.program import decode
    sincos = SINCOS if sincos is None else sincos      # the kernels' sin q, cos q (see _sines)

    # Every value the program writes is a version of its own (SSA; the recorded program reuses
    # dead blocks, which here would need masked writes), an instruction's results consecutive
    # versions. Rows of the scan's workspace are then given to versions by _rows: a step writes
    # one dynamic_update_slice of the switch's P result rows into P free rows.
    ZERO = 0                                     # a version never written: reads of unset values
    version: dict[tuple[int, int], int] = {}     # (base, offset) -> its current version
    top = 1
    for a, n in prog.inputs:
        base, off = decode(a)
        version.update({(base, off + i): top + i for i in range(n)})
        top += n
    n_inputs = top
    lowerings: dict[int, SXLowering] = {}
    calls = []                                   # (kernel, constant offsets, read, first, n)
    for k, args, outs in prog.instructions:
        kern = prog.kernels[k]
        if k not in lowerings:
            # shared values kept (see _shared), so that the branch can stack its result rows
            # itself (see branch)
            lowerings[k] = SXLowering(kern.function, f"kernel {kern.step}", work=PROGRAM_WORK)
        at: list[int | None] = []                # offset in the constant table, None: workspace
        read: list[int] = []
        for a, n in zip(args, lowerings[k].in_sizes):
            base, off = decode(a)
            if base == 1:
                at.append(off)
            else:
                at.append(None)
                read.extend(version.get((base, off + i), ZERO) for i in range(n))
        first = top
        for a, n in zip(outs, kern.out_sizes):
            base, off = decode(a)
            if base == 1:
                raise LoweringError("a program instruction writes into the constant table")
            version.update({(base, off + i): top + i for i in range(n)})
            top += n
        calls.append((k, at, read, first, top - first))
    # A switch's branches return one shape: P rows. A call writing more is split into parts of
    # P rows, one scan step each (XLA drops what a part does not return), so that the common
    # small calls do not carry the padding of the largest (P: see _split). The calls run as one
    # scan per segment (_segments: the passes of a recursive algorithm), whose steps write
    # min(P, the most rows a call of the segment writes), adjacent segments of as many rows
    # one scan: g1 aba's segments write 12, 9, 16, 50, 42, 12 and 7 rows a step instead of 50
    # (one core, interleaved, us a state at 100 / 1000 states: 14.0 / 9.3 -> 11.6 / 6.8;
    # coriolis_matrix, P 6 in all but its first segment: 12.6 / 14.1 -> 12.7 / 13.9)
    P = _split([(lowerings[k], n) for k, *_, n in calls])
    segments: list[tuple[int, int, int]] = []
    for lo, hi in _segments([k for k, *_ in calls]):
        p = min(P, max(max(n, 1) for *_, n in calls[lo:hi]))
        if segments and segments[-1][2] == p:         # as many rows: one scan
            lo = segments.pop()[0]
        segments.append((lo, hi, p))
    steps = [(read, first + part * P, min(P, n - part * P), P)
             for lo, hi, P in segments for k, at, read, first, n in calls[lo:hi]
             for part in range(max(1, -(-n // P)))]
    # each result gathered from the final versions at the end: version, sign and constant per
    # entry (entries neither written nor copied are zero: version ZERO, sign 0)
    results = []
    for o, (entries, codes, signs, shape) in enumerate(prog.outputs):
        n = int(np.prod(shape))
        src = np.array([version.get((o + 2, i), ZERO) for i in range(n)], np.int64)
        sign = (src != ZERO).astype(float)
        cval = np.zeros(n)
        for e, a, sg in zip(np.asarray(entries).tolist(), np.asarray(codes).tolist(),
                            np.asarray(signs).tolist()):
            base, off = decode(a)
            if base == 1:
                src[e], sign[e], cval[e] = ZERO, 0.0, sg * prog.constants[off]
            else:
                src[e], sign[e], cval[e] = version.get((base, off), ZERO), float(sg), 0.0
        results.append((src, sign, cval))
    kept = np.concatenate([r[0] for r in results]) if results else np.zeros(0, np.int64)
    row, total = _rows(steps, top, n_inputs, kept)

    def branch(low: SXLowering, mask, part: int, P: int, stacked: bool):
        n_read = sum(n for n, const in zip(low.in_sizes, mask) if not const)
        # Measured against gathering the longest row list before the switch and stacking a
        # tuple of rows after it (one core, us a state at 100 / 1000 states): g1 aba 17.6 /
        # 13.0 -> 14.7 / 10.6, coriolis_matrix 30.0 / 32.2 -> 22.3 / 20.3, crba 13.6 / 9.2 ->
        # 9.1 / 7.0. Stacked inside without kept values XLA fuses the kernel into the
        # concatenation, recomputing shared subexpressions per row (coriolis_matrix 1000
        # states: 35.3).

        def run(S, C, at, rows_in):
            B = S.shape[1]
            X = S[rows_in[:n_read]]
            xs, k = [], 0
            for j, (n, const) in enumerate(zip(low.in_sizes, mask)):
                if const:
                    xs.append(lax.dynamic_slice(C, (at[j],), (n,)))
                else:
                    xs.append(X[k:k + n])
                    k += n
            given = {}

            def as_row(v):
                return jnp.broadcast_to(jnp.asarray(v, S.dtype), (B,))
            sines = _sines(low, xs, as_row) if sincos else None
            if sines is not None:
                given = {k: sines[j][r] for k, (j, r) in sines[2].items()}
            if len(low.shared(B)) >= PROGRAM_GROUP_MIN:
                out = low.call_grouped(xs, given, B, as_row, GROUP)
            else:
                out = low(xs, given)
            vals = [e for entries in out for e in entries][part * P:(part + 1) * P]
            # (the padding rows are zeros: they land in free rows)
            rows = [as_row(v) for v in vals + [0.0] * (P - len(vals))]
            if stacked and P > GROUP and B < GROUPED_ROWS_BELOW:
                return _rows_stacked(rows, xs, GROUP)
            return jnp.stack(rows)
        return run

    small_calls = PROGRAM_SMALL_CALLS if small_calls is None else small_calls
    scans = []               # per segment: its branches and its steps' tables (see step)
    for lo, hi, P in segments:
        branches_of: dict[tuple, int] = {}
        lowered: list[tuple[SXLowering, tuple[bool, ...], int]] = []
        index, consts, reads, starts = [], [], [], []
        for k, at, read, first, n in calls[lo:hi]:
            mask = tuple(a is not None for a in at)
            for part in range(max(1, -(-n // P))):
                sig = (k, mask, part)
                if sig not in branches_of:
                    branches_of[sig] = len(lowered)
                    lowered.append((lowerings[k], mask, part))
                index.append(branches_of[sig])
                consts.append([a or 0 for a in at])
                reads.append(row[read].tolist())
                starts.append(row[first + part * P])
        n_args = max(len(c) for c in consts) or 1
        n_rows_in = max(len(r) for r in reads) or 1
        # the workspace rows an instruction reads, padded to the segment's longest: its branch
        # gathers only its own (a branch that reads the workspace does not copy it; one that
        # returned it would)
        one = small_calls and P > GROUP          # each kernel one function (else stacked)
        kernel = small_call if one else (lambda fn: fn)
        scans.append(([kernel(branch(low, mask, part, P, not one))
                       for low, mask, part in lowered],
                      (np.array(index, np.int32),
                       np.array([c + [0] * (n_args - len(c)) for c in consts], np.int32),
                       np.array([r + [0] * (n_rows_in - len(r)) for r in reads], np.int32),
                       np.array(starts, np.int32))))
    constants = np.asarray(prog.constants, float)
    outputs = []                          # per result: row, sign and constant of each entry
    for (src, sign, cval), shape in zip(results, shapes):
        boxes = _boxes(((sign != 0) | (cval != 0)).reshape(tuple(shape)))
        outputs.append((row[src], sign, cval, boxes, tuple(shape)))

    def fn(*xs, out=None, at=0):
        dtype = jnp.result_type(*xs)
        B = xs[0].shape[0]
        # the constant table and the steps' tables as values XLA cannot fold (times / plus an
        # opaque one / zero): a scan of one step is inlined, and XLA:CPU aborts on a kernel
        # compiled as one function (small_call) that is passed a constant
        one = _opaque_one(xs)[0]
        one = jnp.ones((), dtype) if one is None else one
        zero = lax.convert_element_type(one, np.int32) - 1
        C = jnp.asarray(constants, dtype) * one
        S = jnp.zeros((total, B), dtype)
        at_row = 1                               # inputs: versions (and rows) 1 ... n_inputs - 1
        for (_, n), x in zip(prog.inputs, xs):
            S = S.at[at_row:at_row + n].set(x.T)
            at_row += n

        for branches, tables in scans:
            def step(S, t, branches=branches):
                i, at, rows_in, r = t
                V = lax.switch(i, branches, S, C, at, rows_in)
                return lax.dynamic_update_slice(S, V, (r, jnp.zeros((), r.dtype))), None
            S, _ = lax.scan(step, S, tuple(jnp.asarray(t) + zero for t in tables))
        # written box by box into zeros or the given set (zeros or earlier results: the
        # entries that are always zero are zero there and left alone). g1 christoffel, 42875
        # entries a state, 77 % always zero, boxes over 44 %, 1000 states, into a reused set:
        # 98 us a state, 150 with every entry gathered and written (the C batch: 35)
        if out is None:
            out = [jnp.zeros((B,) + s, dtype) for *_, s in outputs]
        return tuple(_write_boxes(S, o, at, rows, sign, cval, boxes)
                     for (rows, sign, cval, boxes, _), o in zip(outputs, out))

    fn.writes_into = True                               # type: ignore[attr-defined]
    # the workspace rows the results are gathered from (see program_chunk)
    gathered = {int(r) for rows, sign, cval, *_ in outputs
                for r in rows[(sign != 0) | (cval != 0)]}
    fn.result_rows = len(gathered)                      # type: ignore[attr-defined]
    fn.n_branches = sum(len(b) for b, _ in scans)     # type: ignore[attr-defined]
    fn.n_scans = len(scans)                             # type: ignore[attr-defined]
    fn.rows_per_step = max((p for *_, p in segments), default=0)   # type: ignore[attr-defined]
    fn.n_calls = len(prog.instructions)                 # type: ignore[attr-defined]
    return fn
