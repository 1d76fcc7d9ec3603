"""The order in which generated C computes a function's outputs.

CasADi emits an SX function's instructions depth-first from its output entries, in output order.
With the row-major layout of the compiled fast path that order jumps across the tree (M[0, :]
needs the composite inertia of everything, M[1, :] the transports of every descendant, ...), so
values stay alive for long and gcc spills them to the stack. Emitting nv x nv matrices in the
order of the backward sweep instead (body j from the leaves to the root, then its ancestors i:
blocks (i, j) and (j, i)) follows the algorithms' own order and cuts the spills
(the figures, from a C driver, are in the summary of reports/fastpath.md).

The function is traced with each output permuted into that order; :func:`remap_output_writes`
then rewrites the generated ``res[o][k]=...`` statements to the row-major positions, so the C
function keeps its documented dense row-major outputs.
"""
from __future__ import annotations

import re


def tree_sweep_order(model) -> list[int]:
    """Row-major flat indices (r * nv + c) of an nv x nv matrix: blocks (i, j) and (j, i) for
    bodies j from N-1 down to 0 and i = j and its ancestors, then every other entry."""
    nv = model.nv
    order, seen = [], set()

    def add(r, c):
        if (r, c) not in seen:
            seen.add((r, c))
            order.append(r * nv + c)

    for j in reversed(range(model.N)):
        a, b = model.v_idx[j]
        i = j
        while i >= 0:
            c, d = model.v_idx[i]
            for r in range(c, d):
                for s in range(a, b):
                    add(r, s)
                    add(s, r)
            i = model.parents[i]
    for r in range(nv):
        for c in range(nv):
            add(r, c)
    return order


def output_orders(model, shapes) -> list[list[int] | None]:
    """Per output of the given NumPy shapes: the emission order (see :func:`tree_sweep_order`)
    for nv x nv matrices, ``None`` (row-major) for the others."""
    sweep: list[int] | None = None
    out: list[list[int] | None] = []
    for shape in shapes:
        if tuple(shape) == (model.nv, model.nv) and model.nv > 1:
            sweep = sweep or tree_sweep_order(model)
            out.append(sweep)
        else:
            out.append(None)
    return out


_WRITE = re.compile(r"res\[(\d+)\]\[(\d+)\]=")


def remap_output_writes(source: str, orders: list[list[int] | None]) -> str:
    """CasADi C whose output ``o`` was traced permuted by ``orders[o]`` (entry k holding the
    row-major entry ``orders[o][k]``), with each ``res[o][k]=`` write sent to ``orders[o][k]``.
    Raises RuntimeError unless every entry of every permuted output is written exactly once."""
    written: dict[int, list[int]] = {o: [] for o, p in enumerate(orders) if p is not None}

    def repl(m):
        o, k = int(m.group(1)), int(m.group(2))
        if o not in written:
            return m.group(0)
        written[o].append(k)
        order = orders[o]
        assert order is not None  # `written` holds only the permuted outputs
        return f"res[{o}][{order[k]}]="

    new = _WRITE.sub(repl, source)
    for o, ks in written.items():
        order = orders[o]
        assert order is not None
        if sorted(ks) != list(range(len(order))):
            raise RuntimeError(f"output {o}: the generated code does not write each entry once "
                               f"({len(ks)} writes for {len(order)} entries)")
    return new
