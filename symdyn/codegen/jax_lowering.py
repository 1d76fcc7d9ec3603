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
  (see there).
* :func:`program_function`: a recorded :class:`~symdyn.codegen.recursive.Program` (one kernel
  per step signature, one instruction per step call) becomes a ``lax.scan`` over the
  instructions with a ``lax.switch`` over the kernels: the workspace is one ``(rows, batch)``
  array carried by the scan; an instruction's argument rows are gathered from it (or read from
  the constant table), its kernel runs in the switch, and its result rows are written back with
  in-place ``dynamic_update_slice`` s. The compiled code holds each kernel once, so XLA's
  compile time is bounded by the number of distinct kernels (joint kinds x step kinds), not by
  the model's size.

Both are plain ``jax.numpy``/``lax`` code: they run under ``jit``, ``vmap``, ``jacfwd`` and
``grad`` like the traced route. Conventions of the results are those of the NumPy functions
(``layout="numpy"`` of :func:`~symdyn.codegen.functions.casadi_function`: every output a dense
row-major flattening, reshaped here to the NumPy shape).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import casadi as ca
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["LoweringError", "SXLowering", "graph_batch", "graph_function", "program_function"]


class LoweringError(NotImplementedError):
    """A CasADi graph holds an operation this lowering does not translate."""


def _float(x):
    return x.astype(jnp.result_type(float)) if hasattr(x, "astype") else float(x)


def _where(c, x):
    return jnp.where(c != 0, x, 0.0)


_UNARY: dict[int, Callable] = {
    ca.OP_NEG: lambda a: -a, ca.OP_SQ: lambda a: a * a, ca.OP_TWICE: lambda a: 2.0 * a,
    ca.OP_INV: lambda a: 1.0 / a, ca.OP_ASSIGN: lambda a: a,
    ca.OP_SIN: jnp.sin, ca.OP_COS: jnp.cos, ca.OP_TAN: jnp.tan, ca.OP_SQRT: jnp.sqrt,
    ca.OP_EXP: jnp.exp, ca.OP_LOG: jnp.log, ca.OP_FABS: jnp.abs, ca.OP_SIGN: jnp.sign,
    ca.OP_ASIN: jnp.arcsin, ca.OP_ACOS: jnp.arccos, ca.OP_ATAN: jnp.arctan,
    ca.OP_SINH: jnp.sinh, ca.OP_COSH: jnp.cosh, ca.OP_TANH: jnp.tanh,
    ca.OP_FLOOR: jnp.floor, ca.OP_CEIL: jnp.ceil, ca.OP_LOG1P: jnp.log1p,
    ca.OP_EXPM1: jnp.expm1, ca.OP_NOT: lambda a: _float(a == 0),
}
_BINARY: dict[int, Callable] = {
    ca.OP_ADD: lambda a, b: a + b, ca.OP_SUB: lambda a, b: a - b,
    ca.OP_MUL: lambda a, b: a * b, ca.OP_DIV: lambda a, b: a / b,
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


class SXLowering:
    """One SX ``casadi.Function`` as a JAX evaluator: ``lowered(inputs)`` takes per input a
    sequence of its (dense, column) entries - scalars, or arrays of one batch shape - and returns
    per output its dense row-major entries (arrays, or the float 0.0 for structural zeros).

    The instructions are kept in SSA form (value ``k`` is the result of instruction ``k``;
    CasADi's work vector reuses slots), so that subsets of the graph can be evaluated:
    :attr:`trig_inputs` are the trigonometric values computed from the inputs without other
    trigonometric values in between (sin q_i, cos q_i of the joints), which
    :meth:`evaluate` can take as given."""

    def __init__(self, f: Any, what: str = ""):
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
        w: dict[int, Any] = {}
        for k, (op, args, fn) in enumerate(self.code):
            if not need[k]:
                continue
            if k in given:
                w[k] = given[k]
            elif op == _INPUT:
                w[k] = inputs[args[0]][args[1]]
            elif op == _CONST:
                w[k] = fn
            elif len(args) == 2:
                w[k] = fn(w[args[0]], w[args[1]])
            else:
                w[k] = fn(w[args[0]])
        return [w[t] for t in targets]

    def __call__(self, inputs: Sequence[Any],
                 given: dict[int, Any] | None = None) -> list[list[Any]]:
        vals = self.evaluate(inputs, [v for *_, v in self.outputs_at], given)
        result: list[list[Any]] = [[0.0] * numel for numel, _ in self.outputs]
        for (o, nz, _), v in zip(self.outputs_at, vals):
            result[o][self.outputs[o][1][nz]] = v
        return result


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


def graph_batch(f: Any, shapes: Sequence[tuple[int, ...]], band: int = BAND) -> Callable:
    """Like :func:`graph_function` for inputs of shape ``(batch, n_i)``, laid out for XLA: the
    inputs are transposed to rows ``(n_i, batch)``; the sines and cosines of the joint
    coordinates are computed first; the graph then runs on the rows in bands of ``band``
    dependency levels, each inside a ``lax.cond`` (its predicate is true at run time but not
    foldable), exporting the rows later bands use; the result rows are stacked at the end.

    A conditional is a fusion boundary, and XLA's CPU fusion needs them here: in one
    computation it fuses the graph into the transposing / stacking loops and recomputes
    shared subexpressions per entry (ur5 rnea, 4096 states: 2.2 us a state against 0.19 us),
    duplicates sin/cos into every fusion using them (ur5 coriolis_matrix: 5 joints, 326 sines,
    whose range reduction costs more the larger the angle), and on deep graphs the duplication
    compounds (serial_chain(20) aba unbanded: 83 s to compile, 35 ms a state)."""
    low = SXLowering(f)
    shapes = [tuple(s) for s in shapes]
    sizes = [int(np.prod(s)) for s in shapes]
    bands = _bands(low, low.trig_inputs, band)

    def fn(*xs):
        B = xs[0].shape[0]
        dtype = jnp.result_type(*xs)
        rows = tuple(jnp.asarray(x, dtype).T for x in xs)

        def row(v):
            return jnp.broadcast_to(jnp.asarray(v, dtype), (B,))

        def zeros(n):
            return lambda *_: tuple(jnp.zeros((B,), dtype) for _ in range(n))

        x0 = rows[0][0, 0] if rows[0].size else jnp.zeros((), dtype)
        true = (x0 == x0) | jnp.isnan(x0)           # always true, not known to the compiler

        def trig(rows):
            return tuple(row(v) for v in low.evaluate(rows, low.trig_inputs))

        env = dict(zip(low.trig_inputs,
                       lax.cond(true, trig, zeros(len(low.trig_inputs)), rows)))
        for needs, exports in bands:
            def stage(rows, known, needs=needs, exports=exports):
                given = {**dict(zip(low.trig_inputs, known[0])), **dict(zip(needs, known[1]))}
                return tuple(row(v) for v in low.evaluate(rows, exports, given))
            known = ([env[k] for k in low.trig_inputs], [env[k] for k in needs])
            env.update(zip(exports, lax.cond(true, stage, zeros(len(exports)), rows, known)))
        vals = low.evaluate(rows, [v for *_, v in low.outputs_at], env)
        dense: list[list[Any]] = [[0.0] * n for n in sizes]
        for (o, nz, _), v in zip(low.outputs_at, vals):
            dense[o][low.outputs[o][1][nz]] = v
        out = []
        for d, n, s in zip(dense, sizes, shapes):
            block = jnp.stack([row(v) for v in d], axis=1) if n else jnp.zeros((B, 0), dtype)
            out.append(block.reshape((B,) + s))
        return tuple(out)

    fn.n_instructions = low.n_instructions               # type: ignore[attr-defined]
    return fn


def program_function(prog: Any, shapes: Sequence[tuple[int, ...]]) -> Callable:
    """``fn(*xs)`` running the recorded program ``prog`` on inputs of shape ``(batch, n_i)``;
    returns a tuple of arrays of shape ``(batch,) + shapes[o]``. One ``lax.scan`` step per
    program instruction, a ``lax.switch`` over its kernel (see the module docstring)."""
    from .recursive.program import decode

    W = prog.workspace
    starts, total = [], W
    for *_, shape in prog.outputs:
        starts.append(total)
        total += int(np.prod(shape))

    def row(a: int) -> tuple[bool, int]:           # (in the constant table, row)
        base, off = decode(a)
        return (True, off) if base == 1 else (False, off if base == 0 else starts[base - 2] + off)

    calls = []                                   # (kernel, argument rows, rows written)
    for k, args, outs in prog.instructions:
        kern = prog.kernels[k]
        at = [row(a) for a in args]
        written: list[int] = []
        for a, n in zip(outs, kern.out_sizes):
            c, r = row(a)
            if c:
                raise LoweringError("a program instruction writes into the constant table")
            written.extend(range(r, r + n))
        calls.append((k, at, written))
    # A switch's branches return one shape: P rows. A call writing more is split into parts of
    # P rows, one scan step each (XLA drops what a part does not return), so that the common
    # small calls do not carry the padding of the largest (P: the 90th percentile of the
    # number of rows written). Measured, this bounds memory but did not change the time a state
    # (panda christoffel 14-16 us, g1 crba 16-35 us either way): the per-step gathers and
    # conditionals dominate.
    P = max(1, int(np.ceil(np.percentile([len(w) for *_, w in calls], 90)))) if calls else 1
    branches_of: dict[tuple, int] = {}
    lowered: list[tuple[SXLowering, tuple[bool, ...], int]] = []
    lowerings: dict[int, SXLowering] = {}
    index, reads, blocks = [], [], []
    for k, at, written in calls:
        kern = prog.kernels[k]
        if k not in lowerings:
            lowerings[k] = SXLowering(kern.function, f"kernel {kern.step}")
        rows_in: list[int] = []                  # the rows of the workspace arguments, in order
        for (c, r), n in zip(at, lowerings[k].in_sizes):
            if not c:
                rows_in.extend(range(r, r + n))
        for part in range(max(1, -(-len(written) // P))):
            sig = (k, tuple(c for c, _ in at), part)
            if sig not in branches_of:
                branches_of[sig] = len(lowered)
                lowered.append((lowerings[k], sig[1], part))
            index.append(branches_of[sig])
            reads.append(([r for _, r in at], rows_in))
            bl: list[list[int]] = []             # contiguous runs [row, n, offset in the part]
            for off, t in enumerate(written[part * P:(part + 1) * P]):
                if bl and bl[-1][0] + bl[-1][1] == t:
                    bl[-1][1] += 1
                else:
                    bl.append([t, 1, off])
            blocks.append(bl)
    n_read = max((len(r) for r, _ in reads), default=0) or 1
    n_rows_in = max((len(r) for _, r in reads), default=0) or 1
    # one write slot per contiguous run of rows (slot j as long as the longest j-th run): a
    # dynamic_update_slice of the slot's rows, read-modify-write beyond the run, which XLA does
    # in place on the scan's carry
    n_slots = max((len(bl) for bl in blocks), default=0)
    slot_len = [max([bl[j][1] for bl in blocks if len(bl) > j]) for j in range(n_slots)]
    scratch = total                              # slots of fewer runs write nothing here
    total += max(slot_len, default=0)
    read_tab = np.array([r + [0] * (n_read - len(r)) for r, _ in reads], np.int32)
    # the workspace rows an instruction reads, gathered before the switch: the switch then
    # carries only them (passing the whole workspace into a conditional copies it every step)
    gather_tab = np.array([r + [0] * (n_rows_in - len(r)) for _, r in reads], np.int32)
    slot_tab = np.array([[v for j in range(n_slots)
                          for v in (bl[j] if j < len(bl) else [scratch, 0, 0])] for bl in blocks],
                        np.int32).reshape(len(blocks), n_slots, 3)
    index_tab = np.array(index, np.int32)
    constants = np.asarray(prog.constants, float)

    def branch(low: SXLowering, mask, part: int):
        def run(X, C, at):
            B = X.shape[1]
            xs, k = [], 0
            for j, (n, const) in enumerate(zip(low.in_sizes, mask)):
                if const:
                    xs.append(lax.dynamic_slice(C, (at[j],), (n,)))
                else:
                    xs.append(X[k:k + n])
                    k += n
            vals = [e for out in low(xs) for e in out][part * P:(part + 1) * P]
            # a tuple of rows, stacked after the switch: stacked inside, XLA would fuse the
            # kernel into the concatenation and recompute shared subexpressions per entry
            return tuple(jnp.broadcast_to(jnp.asarray(v, X.dtype), (B,))
                         for v in vals + [0.0] * (P - len(vals)))
        return run

    branches = [branch(*b) for b in lowered]
    outputs = []
    for (entries, codes, signs, shape), start, s in zip(prog.outputs, starts, shapes):
        at = [row(a) for a in np.asarray(codes).tolist()]
        outputs.append((np.asarray(entries, np.int64), np.array([c for c, _ in at], bool),
                        np.array([r for _, r in at], np.int64), np.asarray(signs, float),
                        start, int(np.prod(shape)), tuple(s)))

    def fn(*xs):
        dtype = jnp.result_type(*xs)
        B = xs[0].shape[0]
        C = jnp.asarray(constants, dtype)
        S = jnp.zeros((total, B), dtype)
        for (a, n), x in zip(prog.inputs, xs):
            r = decode(a)[1]
            S = S.at[r:r + n].set(x.T)

        def step(S, t):
            i, at, rows_in, slots = t
            V = jnp.stack(lax.switch(i, branches, S[rows_in], C, at))
            zero = jnp.zeros((), slots.dtype)
            for j, m in enumerate(slot_len):
                r, n, o = slots[j, 0], slots[j, 1], slots[j, 2]
                new = V[jnp.minimum(o + jnp.arange(m, dtype=o.dtype), P - 1)]
                if m > 1:
                    old = lax.dynamic_slice(S, (r, zero), (m, B))
                    new = jnp.where((jnp.arange(m) < n)[:, None], new, old)
                elif n_slots:
                    new = jnp.where(n > 0, new, lax.dynamic_slice(S, (r, zero), (1, B)))
                S = lax.dynamic_update_slice(S, new, (r, zero))
            return S, None

        if branches:
            S, _ = lax.scan(step, S, (jnp.asarray(index_tab), jnp.asarray(read_tab),
                                      jnp.asarray(gather_tab), jnp.asarray(slot_tab)))
        results = []
        for entries, const, rows, signs, start, n, s in outputs:
            R = S[start:start + n]
            if entries.size:
                vals = jnp.where(const[:, None], C[np.where(const, rows, 0)][:, None],
                                 S[np.where(const, 0, rows)]) * signs[:, None]
                R = R.at[entries].set(vals)
            results.append(R.T.reshape((B,) + s))
        return tuple(results)

    fn.n_branches = len(branches)                       # type: ignore[attr-defined]
    fn.n_calls = len(prog.instructions)                 # type: ignore[attr-defined]
    return fn
