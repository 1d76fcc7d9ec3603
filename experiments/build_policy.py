"""The build policy of the recursive form (issue 50, item 4): its C compiled at ``-O2`` against
``-Og`` (what the size threshold of ``symdyn.codegen.compiler.AUTO_POLICY`` gives unrolled
functions over 32k instructions), on functions whose kernels exceed that threshold: compile
time (wall and the compiler's CPU time, from the build manifest) and the per-state time of the
scalar batch loop (``simd=False``) and of the vector batch, one thread, both builds interleaved
in one process (medians of per-round ratios).

Model: ``random_tree(160, seed=1)`` (random geometry), aba and rnea_derivatives, recursive form.
With ``--christoffel`` also the build time of christoffel on ``serial_chain(160)`` (the
recording of its O(N^3) step calls in Python dominates; see the report).

Writes build_policy.md.

    python experiments/build_policy.py            # ~10 min with a cold build cache
    python experiments/build_policy.py --quick    # random_tree(60)
"""
from __future__ import annotations

import sys
import tempfile
import time

from _common import command, header, interleaved, log, median, out_dir, paired_ratio, parser, table, write

import numpy as np  # noqa: E402

from symdyn.codegen import build  # noqa: E402
from symdyn.models import random_tree, serial_chain  # noqa: E402

ALGS = ["aba", "rnea_derivatives"]
OPTS = ("-Og", "-O2")


def measure(n_bodies: int, repeat: int) -> list[dict]:
    m = random_tree(n_bodies, seed=1, name=f"tree{n_bodies}")
    rng = np.random.default_rng(0)
    B = 200
    data = {"q": np.array([m.random_q(rng) for _ in range(B)]),
            **{k: rng.uniform(-1, 1, (B, m.nv)) for k in ("qd", "qdd", "tau")}}
    libs = {}
    with tempfile.TemporaryDirectory() as cache:     # cold builds: their compile times count
        for opt in OPTS:
            t0 = time.perf_counter()
            libs[opt] = build(m, ALGS, form="recursive", opt=opt, progress=False, cache_dir=cache)
            log(f"{m.name} {opt}: built in {time.perf_counter() - t0:.0f} s")
        rows = []
        for alg in ALGS:
            fs = {o: libs[o][alg] for o in OPTS}
            ins = [data[n] for n in fs["-O2"].input_names]
            row = {"model": m.name, "nv": m.nv, "alg": alg,
                   "instr": fs["-O2"].stats["n_instructions"]}
            for o, f in fs.items():
                row[f"compile {o}"] = f.stats.get("t_compile", float("nan"))
                row[f"cpu {o}"] = f.stats.get("cpu_compile", float("nan"))
            for simd in (False, True):
                outs = {o: f.batch(*ins, threads=1) for o, f in fs.items()}
                ts = interleaved([lambda o=o: fs[o].batch(*ins, out=outs[o], threads=1, simd=simd)
                                  for o in OPTS], repeat=repeat)
                key = "vector" if simd else "scalar"
                row[f"{key} -Og"], row[f"{key} -O2"] = (median(t) / B for t in ts)
                row[f"{key} ratio"] = paired_ratio(ts[0], ts[1])
            rows.append(row)
            log(f"{alg}: scalar -Og/-O2 {row['scalar ratio']:.2f}, vector {row['vector ratio']:.2f}; "
                f"compile {row['compile -Og']:.0f} s vs {row['compile -O2']:.0f} s")
    return rows


def christoffel_build(n: int) -> dict:
    m = serial_chain(n, seed=1)
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        lib = build(m, ["christoffel"], progress=False, cache_dir=cache)
        total = time.perf_counter() - t0
    f = lib.christoffel
    return {"n": n, "total": total, "trace": f.stats.get("t_trace", float("nan")),
            "compile": f.stats.get("t_compile", float("nan")), "form": f.meta["form"]}


def report(rows, chris, args, t0) -> list[str]:
    L = header("Build policy: the recursive form at -O2 against -Og (issue 50)",
               command("build_policy.py", args), t0,
               "Recursive-form builds of the same functions with `opt=\"-Og\"` and "
               "`opt=\"-O2\"`, cold cache. Compile times from the manifests (wall, and the "
               "compiler's CPU time, which other jobs on the machine do not inflate); per-state "
               "batch times over 200 states, one thread, the two builds interleaved; `ratio`: "
               "median of per-round -Og/-O2 (above 1: -O2 faster).")
    L += table(["model", "nv", "function", "kernel instructions", "compile -Og s (CPU)",
                "compile -O2 s (CPU)", "scalar -Og us", "scalar -O2 us", "ratio",
                "vector -Og us", "vector -O2 us", "ratio"],
               [[r["model"], str(r["nv"]), r["alg"], str(r["instr"]),
                 f"{r['compile -Og']:.1f} ({r['cpu -Og']:.1f})",
                 f"{r['compile -O2']:.1f} ({r['cpu -O2']:.1f})",
                 f"{r['scalar -Og'] * 1e6:.1f}", f"{r['scalar -O2'] * 1e6:.1f}",
                 f"**{r['scalar ratio']:.2f}**", f"{r['vector -Og'] * 1e6:.1f}",
                 f"{r['vector -O2'] * 1e6:.1f}", f"**{r['vector ratio']:.2f}**"] for r in rows])
    if chris:
        L += ["", "## Christoffel of a long chain", "",
              f"`build(serial_chain({chris['n']}), ['christoffel'])`, cold cache: "
              f"{chris['total']:.0f} s in all, {chris['trace']:.0f} s recording (Python, one "
              f"record per step call of Algorithm 2's O(N^3) loops), {chris['compile']:.0f} s "
              f"compiling; form {chris['form']}. Recording the innermost loop as one program "
              "loop is not built: this is the time to beat.", ""]
    slower = [r for r in rows if r["scalar ratio"] < 1.0]
    L += ["", "## Summary", "",
          "- -O2 against -Og on the recursive form: scalar batches "
          + ", ".join(f"{r['alg']} {r['scalar ratio']:.2f}x" for r in rows)
          + "; compile time -O2/-Og "
          + ", ".join(f"{r['alg']} {r['cpu -O2'] / r['cpu -Og']:.2f}" for r in rows) + " (CPU).",
          "- Policy: the recursive form compiles at -O2 whatever its size"
          + (" (" + ", ".join(r["alg"] for r in slower) + " ran slower at -O2 here)."
             if slower else "."), ""]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeat", type=int, default=None, help="interleaved rounds (9; 5 with --quick)")
    p.add_argument("--christoffel", action="store_true",
                   help="also build christoffel of serial_chain(160) (minutes)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    rows = measure(60 if args.quick else 160, args.repeat or (5 if args.quick else 9))
    chris = christoffel_build(160) if args.christoffel else None
    write(d, "build_policy.md", report(rows, chris, args, t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
