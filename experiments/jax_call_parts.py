"""Where the time of one ``symdyn.jax.compile`` call on a small batch goes (prints, no report).

Two tables for one robot, algorithm and batch size, measured on one core with
``symdyn.jax.synchronous_dispatch()`` in interleaved rounds (medians, us a call):

1. The call's parts: the batch function under a bare ``jax.jit``; ``compile(..., check=False)``;
   the default ``compile`` (values checked in the call, one flag read by the host); the C batch.
2. Host work between two calls of the bare jit: writing 4 / 64 / 256 KB, a NumPy sum of a
   3-element array, ``np.isfinite`` of it. One call's code and buffers fill about a core's L2
   cache on the larger cells, so whatever the host touches between calls is fetched again in
   the next one (the "Small batches on a CPU" paragraph of ``symdyn.jax``).

    python experiments/jax_call_parts.py g1 crba 100
    python experiments/jax_call_parts.py panda christoffel 100
"""
from __future__ import annotations

import argparse
import os
import timeit

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("robot")
    p.add_argument("algorithm")
    p.add_argument("batch", type=int)
    p.add_argument("--rounds", type=int, default=21)
    args = p.parse_args()
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])   # before JAX starts
    import symdyn.jax as sjax
    sjax.synchronous_dispatch()
    import jax
    jax.config.update("jax_enable_x64", True)
    import symdyn as sd
    from _common import interleaved, median
    from bench_jax import _args
    from symdyn.codegen import build

    model = sd.load_robot(args.robot)
    f = sjax.compile(model, args.algorithm)
    unchecked = sjax.compile(model, args.algorithm, check=False)
    c = build(model, [args.algorithm], progress=False)[args.algorithm]
    X = _args(model, f.args, args.batch, np.random.default_rng(0))
    Xj = [jax.device_put(x) for x in X]
    batch = f.batch.fn
    bare = jax.jit(lambda *xs: batch(*xs), compiler_options=sjax.compiler_options())

    def run(g):
        return lambda: jax.block_until_ready(g(*Xj))
    parts = {"bare jax.jit": run(bare), "compile(check=False)": run(unchecked),
             "compile (default)": run(f), "C batch": lambda: c.batch(*X)}
    z, scratch = np.zeros(3), bytearray(1 << 20)

    def touch(k):
        scratch[:k] = bytes(k)
    between = {"4 KB written": lambda: touch(4096), "64 KB written": lambda: touch(65536),
               "256 KB written": lambda: touch(262144), "NumPy sum of 3 floats": z.sum,
               "np.isfinite of 3 floats": lambda: np.isfinite(z)}
    g = run(bare)
    host = {"nothing": g}
    host.update({k: (lambda w=w: (g(), w())) for k, w in between.items()})

    for title, fns in (("call", parts), ("between two calls of the bare jit", host)):
        fns = {"(first, not counted)": g, **fns}
        for fn in fns.values():
            fn()
        ts = interleaved(list(fns.values()), repeat=args.rounds, target=0.05, max_total=60)
        print(f"{args.robot} {args.algorithm}, {args.batch} states, {title} (us a call):")
        for (name, _), t in list(zip(fns.items(), ts))[1:]:
            alone = ""
            if name in between:
                alone = " (alone: %.2f)" % (min(timeit.repeat(between[name], number=2000,
                                                              repeat=3)) / 2000 * 1e6)
            print(f"  {name:28s} {median(t) * 1e6:8.1f}{alone}")


if __name__ == "__main__":
    main()
