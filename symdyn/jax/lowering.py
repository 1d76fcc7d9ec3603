"""CasADi SX graphs as JAX functions: the ``route="graph"`` of :func:`symdyn.jax.compile`.

:func:`graph_function` / :func:`graph_batch`: the unrolled ``casadi.Function`` (CasADi's CSE
applied) becomes one ``jax.numpy`` operation per SX instruction on rows of the batch: an input
entry is a ``(batch,)`` vector, every scalar operation is elementwise over the batch, results are
stacked at the end. XLA fuses the elementwise operations into loops over the batch. The graph
grows with the model (N^2 entries for nv x nv results, N^3 for Christoffel symbols) and XLA's
compile time with it. :func:`graph_batch` adds the fusion boundaries XLA's CPU backend needs,
keeps values used more than once for their users on large batches (:func:`_shared`) and writes
them a group of rows at a time (:meth:`SXLowering.plan_groups`). The joints' sines and cosines
come from :func:`symdyn.jax.trig.sincos` where the batch's angles allow it.

:class:`SXLowering` also evaluates the kernels of a recorded program (:mod:`symdyn.jax.program`).
Everything is plain ``jax.numpy``/``lax`` code: it runs under ``jit``, ``vmap``, ``jacfwd`` and
``grad``. Results follow the NumPy functions' conventions (``layout="numpy"`` of
:func:`~symdyn.codegen.functions.casadi_function`: every output a dense row-major flattening,
reshaped here to the NumPy shape).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import casadi as ca
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import trig

__all__ = ["BAND", "GROUP", "SHARED_MIN", "SHARED_WORK", "LoweringError", "SXLowering",
           "graph_batch", "graph_function"]


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


# _shared: a value used u > 1 times is kept (not recomputed by each user) where its cone c holds
# at least SHARED_MIN operations and (u - 1) * c >= SHARED_WORK / batch: a kept value ends a
# fusion, a fixed cost a call of about SHARED_WORK operations on one state; recomputing costs
# its cone on every state. Measured by experiments/bench_jax.py (panda aba, christoffel; g1).
SHARED_MIN = 4
SHARED_WORK = 6400


def _shared(code: Sequence[tuple[int, tuple, Any]], outputs: Sequence[int],
            given: Sequence[int], min_work: float) -> frozenset[int]:
    """Values to compute once and keep for their users: those used ``u > 1`` times whose cone
    ``c`` (the operations since the last kept value) holds at least :data:`SHARED_MIN`
    operations and for which ``(u - 1) * c >= min_work`` (the operations recomputing it for
    each further user would repeat).

    XLA's CPU fusion duplicates cheap elementwise producers into every fusion that consumes
    them, and on a CSE'd graph that duplication compounds (panda's aba grows about 17-fold in
    elementwise HLO operations). A value divided by a one XLA cannot fold (:func:`opaque_one`)
    is the result of a division, which XLA counts as expensive and does not duplicate (an
    ``optimization_barrier`` is removed before fusion): keeping cones of 4 brings the graph back
    near its SX size and halves the time a state (``experiments/bench_jax.py``). Smaller cones
    are cheaper to recompute than to store."""
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


def opaque_one(inputs: Sequence[Any]) -> tuple[Any, int]:
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
        one, batch = opaque_one(inputs)
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
        one, _ = opaque_one(inputs)
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
        return self._results(self._run_plan(inputs, plan, given, row, opaque_one(inputs)[0]))

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
    (:func:`opaque_one`; ``None``: not divided), so that XLA keeps it for its users (see
    :func:`_shared`)."""
    block = jnp.stack([row(v) for v in values])
    return block / one if one is not None else block


def rows_stacked(rows: Sequence[Any], inputs: Sequence[Any], group: int = 8) -> jax.Array:
    """``rows`` (arrays of one shape) stacked: more than ``group`` as stacks of ``group``, each
    divided by the :func:`opaque_one` of ``inputs``, concatenated. XLA's CPU backend runs a
    stack of more than 8 rows as one kernel per row and a copy, a concatenation of such blocks
    as one kernel (g1's 29 joint angles: 20 kernels become 1)."""
    one, _ = opaque_one(inputs)
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


# graph_batch: dependency levels per conditional (a fusion boundary; fewer levels ran no faster,
# none compounds XLA's duplication); measured by experiments/bench_jax.py
BAND = 64
# values written as one array: XLA:CPU stacks up to 8 rows in one fusion (plan_groups); measured
# by experiments/bench_jax.py (graphs) and experiments/jax_program_steps.py (program kernels)
GROUP = 8
# the joints' sines and cosines by trig.sincos (vectorized polynomials, not a C library call an
# element); measured by experiments/bench_jax.py (ur5 rnea, panda crba at 1e5 states)
SINCOS = True


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
    shared subexpressions per entry (an order of magnitude slower on ur5's rnea), duplicates
    sin/cos into every fusion using them (hundreds of sines for ur5's 5 joints, whose range
    reduction costs more the larger the angle), and on deep graphs the duplication compounds
    (minutes of compile time for a 20-body chain's aba).

    Every value computed once (kept, exported) is written with others into an array of
    ``group`` rows (default :data:`GROUP`; :meth:`SXLowering.plan_groups`): one kernel where
    XLA would run one per value (measured by ``experiments/bench_jax.py``)."""
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


def joint_sines(low: SXLowering, inputs, row: Callable):
    """The sines and cosines of :attr:`SXLowering.trig_inputs` (the joints' sin q, cos q) by
    :func:`~symdyn.jax.trig.sincos` (vectorized polynomials instead of one C library call
    per element) where every argument of the batch is within its range
    (:data:`~symdyn.jax.trig.LIMIT`), else by ``jnp.sin`` / ``jnp.cos``: a ``lax.cond``
    on the batch. ``(S, C, at)``: the sines and the cosines of the arguments, ``at[value] =
    (0 or 1, row)`` (in ``S`` or ``C``) of each trigonometric input; ``None`` where there are
    none, or one is not a sine or cosine (tan)."""
    if not low.trig_inputs or any(low.code[k][0] not in (ca.OP_SIN, ca.OP_COS)
                                  for k in low.trig_inputs):
        return None
    args = sorted({low.code[k][1][0] for k in low.trig_inputs})
    A = rows_stacked([row(v) for v in low.evaluate(inputs, args)], inputs)

    def libm(A):
        return jnp.sin(A), jnp.cos(A)
    S, C = lax.cond(jnp.all(jnp.abs(A) <= trig.LIMIT), trig.sincos, libm, A)
    return S, C, {k: (int(low.code[k][0] == ca.OP_COS), args.index(low.code[k][1][0]))
                  for k in low.trig_inputs}


def _trig_stage(low: SXLowering, rows, row: Callable, held: list[Any],
                at: dict[int, tuple[int, int]]) -> bool:
    """:func:`graph_batch`'s trigonometric inputs by :func:`joint_sines`: their arrays join
    ``held``; ``False`` where :func:`joint_sines` does not apply."""
    sines = joint_sines(low, rows, row)
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

    That write is a large part of a graph's time (``experiments/jax_call_parts.py`` measures
    it apart)."""
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
    # the indices are in range by construction: no bounds mask in the gathering loop
    return tuple(table.at[np.asarray(i)].get(mode="promise_in_bounds").T.reshape((B,) + s)
                 for i, s in zip(index, shapes))
