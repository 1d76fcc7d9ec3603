"""Program route: each kernel as one XLA function (``jax_lowering.PROGRAM_SMALL_CALLS``, the
default on a CPU) against XLA's kernels (prints, no report).

For one robot and its algorithms that ``symdyn.jax.compile`` runs as programs (or every one
named, with ``route="program"``), at each batch size: the first call's seconds (route choice,
trace, XLA's compile) and us a state of the default function with the kernels as XLA's kernels
and as one function each, beside the C batch, measured on one core with
``symdyn.jax.synchronous_dispatch()`` in interleaved rounds (medians; the ratios are the medians
of the per-round ratios)::

    python experiments/jax_program_steps.py g1
    python experiments/jax_program_steps.py serial:20 crba aba --sizes 100 1000 4096
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("robot", help="a built-in robot (g1, panda, ...) or serial:N")
    p.add_argument("algorithms", nargs="*",
                   default=["rnea", "crba", "coriolis_matrix", "christoffel", "aba"])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])   # before JAX starts
    import symdyn.jax as sjax
    sjax.synchronous_dispatch()
    import jax
    jax.config.update("jax_enable_x64", True)
    import symdyn as sd
    from _common import interleaved, median
    from bench_jax import _args
    from symdyn.codegen import build, jax_lowering
    from symdyn.models import serial_chain

    if args.robot.startswith("serial:"):
        model = serial_chain(int(args.robot.split(":")[1]), seed=1)
    else:
        model = sd.load_robot(args.robot)
    print(f"{args.robot}: us a state (one core, interleaved, {args.rounds} rounds); "
          "first call: seconds of route choice, trace and XLA's compile")
    for alg in args.algorithms:
        route = "auto" if sjax.compile(model, alg).route == "program" else "program"
        fns = {}
        for small in (False, True):
            jax_lowering.PROGRAM_SMALL_CALLS = small
            t0 = time.perf_counter()
            f = sjax.compile(model, alg, route=route)
            fns[small] = (time.perf_counter() - t0, f)
        jax_lowering.PROGRAM_SMALL_CALLS = True
        c = build(model, [alg], progress=False)[alg]
        for n in args.sizes:
            X = _args(model, fns[True][1].args, n, np.random.default_rng(0))
            Xj = [jax.device_put(x) for x in X]
            runs, first = [], {}
            for small, (setup, f) in fns.items():
                t = time.perf_counter()
                jax.block_until_ready(f(*Xj))
                first[small] = time.perf_counter() - t + setup
                runs.append(lambda f=f: jax.block_until_ready(f(*Xj)))
            c.batch(*X)
            runs.append(lambda: c.batch(*X))
            ts = interleaved(runs, repeat=args.rounds, target=0.05, max_total=20)
            ratio = [float(np.median([a / b for a, b in zip(t, ts[2])])) for t in ts[:2]]
            print(f"  {alg} ({route}) {n} states: XLA's kernels {median(ts[0]) / n * 1e6:.2f} "
                  f"(x{ratio[0]:.2f} C, first call {first[False]:.1f} s) -> one function a "
                  f"kernel {median(ts[1]) / n * 1e6:.2f} (x{ratio[1]:.2f} C, first call "
                  f"{first[True]:.1f} s); C batch {median(ts[2]) / n * 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
