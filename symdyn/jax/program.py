"""Recorded step programs as JAX functions: the ``route="program"`` of :func:`symdyn.jax.compile`.

:func:`program_function`: a recorded :class:`~symdyn.codegen.recursive.Program` (one kernel per
step signature, one instruction per step call) becomes ``lax.scan`` s over the instructions (one
per segment of calls that share no kernel with the others: the algorithm's passes,
:func:`_segments`) with a ``lax.switch`` over the segment's kernels: the workspace is one
``(rows, batch)`` array carried by the scans; the switch's branch of an instruction gathers its
argument rows from it (or reads them from the constant table), runs its kernel and returns its
result rows stacked, which are written back with one in-place ``dynamic_update_slice`` into rows
a first-fit allocator keeps free for them (:func:`_rows`); the results are written from the
final rows at the end, in the ``(batch, ...)`` layout, box by box around the entries that are
always zero (:func:`_boxes`). The compiled code holds each kernel once, so XLA's compile time is
bounded by the number of distinct kernels (joint kinds x step kinds), not by the model's size.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax.numpy as jnp
import numpy as np
from jax import lax

from . import lowering
from .lowering import GROUP, LoweringError, SXLowering, joint_sines, opaque_one, rows_stacked

__all__ = ["BOXES_MAX", "GROUPED_ROWS_BELOW", "PROGRAM_GROUP_MIN", "PROGRAM_WORK", "ROW_COST",
           "program_function"]


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


# _split: a row a scan step stacks and writes costs as much as 4 kernel operations (the value that
# reproduces the fastest P of g1 aba, coriolis_matrix, crba); experiments/jax_program_steps.py
ROW_COST = 4
# program kernels: SHARED_WORK of their lowerings (kept values end fusions; a step's kernels run
# on few states), and from PROGRAM_GROUP_MIN kept values a branch writes them GROUP to an array
# (one XLA kernel a group); measured by experiments/jax_program_steps.py (g1 aba)
PROGRAM_WORK = 1600
PROGRAM_GROUP_MIN = 32
# a branch's result rows, where a step writes more than GROUP: below GROUPED_ROWS_BELOW states
# stacks of GROUP rows kept (one XLA kernel a stack, not one a row); measured by
# experiments/jax_program_steps.py (g1 aba)
GROUPED_ROWS_BELOW = 256


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


# results written box by box (one dynamic_update_slice, a fusion, each): at most BOXES_MAX boxes
# a result, else one box over all of it; measured by experiments/bench_jax.py (g1 christoffel)
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
        # write (a transposed copy of the rows first is half again slower on g1's christoffel)
        part = S[rows[e]].T
        if np.any(sign[e] != 1.0):
            part = part * jnp.asarray(sign[e], S.dtype)
        if np.any(cval[e] != 0.0):
            part = part + jnp.asarray(cval[e], S.dtype)
        o = lax.dynamic_update_slice(o, part.reshape((B,) + size),
                                     (at,) + tuple(jnp.asarray(a, at.dtype) for a in start))
    return o


def program_function(prog: Any, shapes: Sequence[tuple[int, ...]],
                     sincos: bool | None = None) -> Callable:
    """``fn(*xs)`` running the recorded program ``prog`` on inputs of shape ``(batch, n_i)``;
    returns a tuple of arrays of shape ``(batch,) + shapes[o]``. One ``lax.scan`` step per
    program instruction, a ``lax.switch`` over its kernel (see the module docstring).

    ``fn(*xs, out=results, at=start)`` writes the batch into the states ``start ...`` of
    ``results`` (arrays of shape ``(states,) + shapes[o]``) and returns them: ``results`` must
    hold zeros, or earlier results of this function, where a result entry is always zero (the
    program never writes it), as those entries are not written (``fn.writes_into``)."""
    from symdyn.codegen.recursive.program import decode
    sincos = lowering.SINCOS if sincos is None else sincos    # the kernels' sin q, cos q

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
    if prog.gathers:
        raise LoweringError("the program route runs programs recorded without gathers "
                            "(symdyn.codegen.recursive.record(..., gather=False))")
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
    # one scan: g1 aba's segments write 12, 9, 16, 50, 42, 12 and 7 rows a step instead of 50,
    # a fifth faster; coriolis_matrix, 6 rows in all but its first segment, is unchanged
    # (experiments/jax_program_steps.py)
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

    def branch(low: SXLowering, mask, part: int, P: int):
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
            sines = joint_sines(low, xs, as_row) if sincos else None
            if sines is not None:
                given = {k: sines[j][r] for k, (j, r) in sines[2].items()}
            if len(low.shared(B)) >= PROGRAM_GROUP_MIN:
                out = low.call_grouped(xs, given, B, as_row, GROUP)
            else:
                out = low(xs, given)
            vals = [e for entries in out for e in entries][part * P:(part + 1) * P]
            # (the padding rows are zeros: they land in free rows)
            rows = [as_row(v) for v in vals + [0.0] * (P - len(vals))]
            if P > GROUP and B < GROUPED_ROWS_BELOW:
                return rows_stacked(rows, xs, GROUP)
            return jnp.stack(rows)
        return run

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
        scans.append(([branch(low, mask, part, P) for low, mask, part in lowered],
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
        # opaque one / zero): a scan of one step is inlined and its kernel folded otherwise
        one = opaque_one(xs)[0]
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
        # entries that are always zero are zero there and left alone): on g1's christoffel
        # (three quarters of its entries always zero) a third faster than gathering and writing
        # every entry
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
