"""Where the time of one ``symdyn.jax.compile`` call on a small batch goes (prints, no report).

Two tables for one robot, algorithm and batch size, measured on one core with
``symdyn.jax.process.synchronous_dispatch()`` in interleaved rounds (medians, us a call):

1. The call's parts: the batch function under a bare ``jax.jit``; on the graph route, the same
   without writing the results (it returns the rows the results are gathered from, their table:
   the difference is the time of :func:`symdyn.jax.lowering._gathered`'s gather and
   transposition into the ``(batch, ...)`` results), and the table with as many bytes of
   results written without a transposition (each entry the table's first row at its state plus
   the entry's index, in the results' order: what writing the results' bytes costs in the
   call, apart from their gather and transposition);
   ``compile(..., check=False)``; the default ``compile`` (values checked in the call, one flag
   read by the host); the C batch.
2. Host work between two calls of the bare jit: writing 4 / 64 / 256 KB, a NumPy sum of a
   3-element array, ``np.isfinite`` of it. One call's code and buffers fill about a core's L2
   cache on the larger cells, so whatever the host touches between calls is fetched again in
   the next one.

Below the first table: the thread switches of one default call (all the process's threads,
from ``/proc``; XLA hands part of a call's kernels to a worker thread).

``--loop S`` instead calls the default ``compile`` for ``S`` seconds and prints its time a call,
for a sampling profiler to attach to (the split of a call between XLA's compiled kernels, its
runtime, the scheduler, the C library and Python)::

    python experiments/jax_call_parts.py g1 crba 100
    python experiments/jax_call_parts.py panda christoffel 100
    python experiments/jax_call_parts.py panda christoffel 100 --loop 10 > loop.out &
    # once loop.out says "calling" (after the compiles):
    perf record -F 5000 -p $! -o perf.data -- sleep 5; perf report -i perf.data --sort dso
"""
from __future__ import annotations

import argparse
import os
import time
import timeit

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("robot")
    p.add_argument("algorithm")
    p.add_argument("batch", type=int)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--loop", type=float, default=0.0, metavar="S",
                   help="only call the default compile for S seconds (for a profiler)")
    args = p.parse_args()
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])   # before JAX starts
    from symdyn.jax.process import synchronous_dispatch
    synchronous_dispatch()
    import jax
    import symdyn.jax as sjax
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
    bare = jax.jit(lambda *xs: batch(*xs), **f.batch.options)       # compile's XLA options

    def run(g):
        return lambda: jax.block_until_ready(g(*Xj))
    if args.loop > 0:
        loop(run(f), args.loop)
        return
    parts = {"bare jax.jit": run(bare)}
    if f.route == "graph":
        table = table_only(model, args.algorithm, Xj, f.batch.options)
        parts["bare, results not written"] = run(table)
        table = table_only(model, args.algorithm, Xj, f.batch.options, untransposed=True)
        parts["bare, bytes untransposed"] = run(table)
    parts.update({"compile(check=False)": run(unchecked), "compile (default)": run(f),
                  "C batch": lambda: c.batch(*X)})
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
        if title == "call":
            switches = thread_switches(run(f))
            if switches is not None:
                print(f"  thread switches a default call {switches:8.2f}")


def table_only(model, algorithm: str, Xj, options: dict, untransposed: bool = False):
    """The graph route's batch function under a bare ``jax.jit``, returning the table of rows its
    results would be gathered from instead of the results (traced here, with
    ``symdyn.jax.lowering._gathered`` replaced for the trace; ``options``: ``jax.jit``'s keywords).
    ``untransposed``: also arrays of the results' shapes, entry ``e`` of state ``b`` the table's
    ``[0, b]`` plus ``e``, written in the results' order by a vectorized loop: the results' bytes
    without their gather and transposition."""
    import jax
    import jax.numpy as jnp

    import symdyn.jax as sjax
    from symdyn.jax import lowering as jax_lowering

    def table(low, held, at, rows, row, B, dtype, sizes, shapes):
        arrays = sorted({at[v][0] for *_, v in low.outputs_at if v in at})
        t = jnp.concatenate([held[a] for a in arrays])
        if not untransposed:
            return (t,)
        return (t,) + tuple((t[0, :, None] + jnp.arange(size, dtype=dtype)).reshape((B,) + s)
                            for size, s in zip(sizes, shapes))
    gathered = jax_lowering._gathered
    jax_lowering._gathered = table
    try:
        fn = sjax.compile(model, algorithm, check=False).batch.fn
        g = jax.jit(lambda *xs: fn(*xs), **options)
        jax.block_until_ready(g(*Xj))                    # traced with the table
    finally:
        jax_lowering._gathered = gathered
    return g


def loop(fn, seconds: float) -> None:
    """``fn`` called for ``seconds`` (after 100 calls to warm up); prints its time a call."""
    for _ in range(100):
        fn()
    print("calling", flush=True)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    print(f"{(time.perf_counter() - start) / n * 1e6:.1f} us a call, {n} calls")


def thread_switches(fn, calls: int = 1000) -> float | None:
    """Context switches of all the process's threads a call of ``fn`` (``/proc``; ``None``
    where there is none)."""
    def total() -> int:
        count = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/status") as status:
                count += sum(int(line.split()[1]) for line in status
                             if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))
        return count
    if not os.path.isdir("/proc/self/task"):
        return None
    before = total()
    for _ in range(calls):
        fn()
    return (total() - before) / calls


if __name__ == "__main__":
    main()
