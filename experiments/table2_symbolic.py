"""Paper 000 Table 2, reproduced and extended: time to obtain all Christoffel symbols symbolically,
"eq. (4): symbolic partials of M" versus "Algorithm 2 with symbolic inputs", on every symbolic
backend (SymPy, SymEngine, CasADi SX), plus expression sizes with and without simplification/CSE.

    python experiments/table2_symbolic.py [--quick] [--budget SECONDS]

Writes reports/table2_symbolic.md. Each cell runs in a fresh subprocess with a time budget (a cell
that exceeds it is reported as "> budget", and larger N of that row are skipped).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAPER = {  # paper 000 Table 2 (MATLAB symbolic toolbox, seconds); planar 10-DoF: 26.8 min for Alg. 2
    ("binary", 5): (1.23, 0.97), ("binary", 10): (7.83, 3.11), ("binary", 15): (27.1, 5.88),
    ("planar", 10): (None, 26.8 * 60),
}


def _model(kind: str, n: int):
    from symdyn.models import binary_tree, planar_chain, serial_chain

    return {"binary": binary_tree, "serial": serial_chain, "planar": planar_chain}[kind](n)


def _symbols(backend: str, n: int):
    if backend == "casadi":
        import casadi as ca

        return ca.SX.sym("q", n)
    if backend == "symengine":
        import symengine as se

        return list(se.symbols(" ".join(f"q{i}" for i in range(n))))
    import sympy as sp

    return sp.Matrix(sp.symbols(f"q0:{n}", real=True))  # joint coordinates are real


def _dag_size(entries) -> int:
    """Unique nodes of the expression DAG (SymPy or SymEngine expressions)."""
    seen, stack = set(), list(entries)
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        stack.extend(e.args)
    return len(seen)


def _cell(kind, n, backend, method, queue):
    from symdyn.algorithms.christoffel import christoffel, christoffel_from_mass_matrix

    model = _model(kind, n)
    q = _symbols(backend, model.nq)
    fn = christoffel if method == "alg2" else christoffel_from_mass_matrix
    t0 = time.perf_counter()
    G = fn(model, q)
    seconds = time.perf_counter() - t0
    if seconds < 0.5 and backend != "sympy":  # fast cells: median of 5 runs (shared machine);
        # not SymPy: its expression cache would make repeats time cache look-ups
        runs = [seconds]
        for _ in range(4):
            t0 = time.perf_counter()
            fn(model, q)
            runs.append(time.perf_counter() - t0)
        seconds = sorted(runs)[2]
    nv = model.nv
    if backend == "casadi":  # size of the graph: CasADi counts instructions, the others DAG nodes
        import casadi as ca

        from symdyn.backends import get_backend

        f = ca.Function("G", [q], [ca.horzcat(*get_backend("casadi").pages(G))])
        size = f.n_instructions()
    else:
        size = _dag_size([G[i, j, k] for i in range(nv) for j in range(nv) for k in range(nv)])
    queue.put((seconds, size))


def _simplified(kind, n, queue):
    from symdyn import symbolic as S

    model = _model(kind, n)
    t0 = time.perf_counter()
    res = S.christoffel(model, simplify=True)
    seconds = time.perf_counter() - t0
    queue.put((seconds, len(res.entries), res.operations, res.cse_operations()))


def run_with_budget(target, args, budget):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, queue))
    p.start()
    p.join(budget)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    return queue.get() if not queue.empty() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small N only (a minute or two)")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per cell (default 300)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "table2_symbolic.md"))
    args = ap.parse_args(argv)
    rows = [("binary", [5, 10, 15] + ([] if args.quick else [20, 30])),
            ("serial", [5, 10] + ([] if args.quick else [15, 20])),
            ("planar", [5] + ([] if args.quick else [10, 15]))]
    backends = ["casadi", "symengine", "sympy"]
    results = {}
    for kind, Ns in rows:
        for backend in backends:
            for method in ("eq4", "alg2"):
                for n in Ns:
                    r = run_with_budget(_cell, (kind, n, backend, method), args.budget)
                    results[kind, n, backend, method] = r
                    shown = "timeout" if r is None else f"{r[0]:.3f} s, size {r[1]}"
                    print(f"{kind:7s} N={n:3d} {backend:9s} {method:4s}: {shown}", flush=True)
                    if r is None:
                        break
    simp = {}
    for kind, Ns in rows:
        for n in Ns:
            if kind == "serial" and n > 10 or kind == "binary" and n > 15:
                continue
            r = run_with_budget(_simplified, (kind, n), args.budget)
            simp[kind, n] = r
            print(f"simplified {kind} N={n}: {r}", flush=True)
            if r is None:
                break
    Path(args.out).write_text(_report(rows, backends, results, simp, args))
    print(f"wrote {args.out}")
    return 0


def _fmt(r):
    return "> budget" if r is None else f"{r[0]:.3g}"


def _report(rows, backends, results, simp, args) -> str:
    L = ["# Paper 000 Table 2: symbolic Christoffel symbols, eq. (4) vs Algorithm 2", "",
         f"Generated by `python experiments/table2_symbolic.py{' --quick' if args.quick else ''}` on "
         f"{date.today()}; machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
         f"Python {platform.python_version()}; budget {args.budget:.0f} s per cell (fresh process each).",
         "",
         "Time (s) to obtain every Gamma[i,j,k] as an expression of symbolic q (model constants numeric, "
         "as in the paper). **eq. (4)**: M by CRBA with symbolic q, then symbolic partial derivatives "
         "(`Matrix.jacobian` / `casadi.jacobian`). **Alg. 2**: paper 000 Algorithm 2 run on symbols. "
         "SymPy symbols are declared real (joint coordinates are real numbers): without it SymPy's "
         "assumption queries on large products (0 * expr must ask whether expr is finite) cost about "
         "1.7x the time. "
         "No simplification in these columns (as in the paper). Size: unique nodes of the expression DAG "
         "(SymPy/SymEngine) or CasADi instructions. CasADi/SymEngine cells under 0.5 s are the median of 5 runs; SymPy cells are single first runs (repeats would hit SymPy's expression cache).", ""]
    for kind, Ns in rows:
        L.append(f"## {kind} {'tree (branching factor 2)' if kind == 'binary' else 'chain'}")
        L.append("")
        head = "| N | paper eq.(4) | paper Alg. 2 | " + " | ".join(
            f"{b} eq.(4) | {b} Alg. 2" for b in backends) + " |"
        L.append(head)
        L.append("|" + "---|" * (3 + 2 * len(backends)))
        for n in Ns:
            p4, p2 = PAPER.get((kind, n), (None, None))
            cells = [str(n), "" if p4 is None else f"{p4:g}", "" if p2 is None else f"{p2:g}"]
            for b in backends:
                for m in ("eq4", "alg2"):
                    key = (kind, n, b, m)
                    cells.append(_fmt(results[key]) if key in results else "skipped")
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        L.append("Expression size (DAG nodes / CasADi instructions):")
        L.append("")
        L.append("| N | " + " | ".join(f"{b} eq.(4) | {b} Alg. 2" for b in backends) + " |")
        L.append("|" + "---|" * (1 + 2 * len(backends)))
        for n in Ns:
            cells = [str(n)]
            for b in backends:
                for m in ("eq4", "alg2"):
                    r = results.get((kind, n, b, m))
                    cells.append("" if r is None else str(r[1]))
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
    L += ["## Simplified closed forms", "",
          "`symdyn.symbolic.christoffel(model)` (SymEngine engine, then the canonical Fourier normal form "
          "of :mod:`symdyn.symbolic.simplify`): total time, nonzero unique symbols, SymPy operation count "
          "of all entries, and after common-subexpression elimination.", "",
          "| model | N | seconds | nonzero unique Gamma | ops | ops after CSE |", "|---|---|---|---|---|---|"]
    for (kind, n), r in simp.items():
        L.append(f"| {kind} | {n} | " + ("> budget | | | |" if r is None else
                                         f"{r[0]:.3g} | {r[1]} | {r[2]} | {r[3]} |"))
    L.append("")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
