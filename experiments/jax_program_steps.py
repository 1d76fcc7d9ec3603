"""Program route: the default against one constant of ``symdyn.jax`` changed (prints, no report).

For one robot and its algorithms that ``symdyn.jax.compile`` runs as programs (or every one
named, with ``route="program"``), at each batch size: the first call's seconds (route choice,
trace, XLA's compile) and us a state of the function compiled with the package's constants and
with ``--set MODULE.NAME=VALUE`` (a constant of ``symdyn.jax.program``, ``.routes``,
``.lowering`` or ``.chunks``), beside the C batch, measured on one core in interleaved rounds
(medians; the ratios are the medians of the per-round ratios). This measures the program
constants (``program.ROW_COST``, ``PROGRAM_WORK``, ``PROGRAM_GROUP_MIN``, ``GROUPED_ROWS_BELOW``,
``routes.FOLD_MAX``, ``lowering.GROUP``)::

    python experiments/jax_program_steps.py g1 --set routes.FOLD_MAX=0
    python experiments/jax_program_steps.py serial:20 crba aba --sizes 100 1000 4096 \\
        --set program.GROUPED_ROWS_BELOW=0
"""
from __future__ import annotations

import argparse
import importlib
import os
import time

import numpy as np


def _setting(text: str) -> tuple[str, str, float]:
    name, _, value = text.partition("=")
    module, _, const = name.rpartition(".")
    if not module or not const or not value:
        raise argparse.ArgumentTypeError(f"expected MODULE.NAME=VALUE, got {text!r}")
    return module, const, float(value)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("robot", help="a built-in robot (g1, panda, ...) or serial:N")
    p.add_argument("algorithms", nargs="*",
                   default=["rnea", "crba", "coriolis_matrix", "christoffel", "aba"])
    p.add_argument("--set", type=_setting, required=True, metavar="MODULE.NAME=VALUE")
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])   # before JAX starts
    import jax
    jax.config.update("jax_enable_x64", True)
    import symdyn as sd
    import symdyn.jax as sjax
    from _common import interleaved, median
    from bench_jax import _args
    from symdyn.codegen import build
    from symdyn.models import serial_chain

    module_name, const, value = args.set
    module = importlib.import_module(f"symdyn.jax.{module_name}")
    default = getattr(module, const)
    value = type(default)(value)
    if args.robot.startswith("serial:"):
        model = serial_chain(int(args.robot.split(":")[1]), seed=1)
    else:
        model = sd.load_robot(args.robot)
    print(f"{args.robot}: us a state (one core, interleaved, {args.rounds} rounds), "
          f"{module_name}.{const} = {default} -> {value}; first call: seconds of route choice, "
          "trace and XLA's compile")
    for alg in args.algorithms:
        route = "auto" if sjax.compile(model, alg).route == "program" else "program"
        fns = []
        for v in (default, value):
            setattr(module, const, v)
            try:
                t0 = time.perf_counter()
                f = sjax.compile(model, alg, route=route)
                fns.append((time.perf_counter() - t0, f))
            finally:
                setattr(module, const, default)
        c = build(model, [alg], progress=False)[alg]
        for n in args.sizes:
            X = _args(model, fns[0][1].args, n, np.random.default_rng(0))
            Xj = [jax.device_put(x) for x in X]
            runs, first = [], []
            for setup, f in fns:
                t = time.perf_counter()
                jax.block_until_ready(f(*Xj))     # the constant is read when the call is traced
                first.append(time.perf_counter() - t + setup)
                runs.append(lambda f=f: jax.block_until_ready(f(*Xj)))
            c.batch(*X)
            runs.append(lambda: c.batch(*X))
            ts = interleaved(runs, repeat=args.rounds, target=0.05, max_total=20)
            ratio = [float(np.median([a / b for a, b in zip(t, ts[2])])) for t in ts[:2]]
            print(f"  {alg} ({route}) {n} states: {default} {median(ts[0]) / n * 1e6:.2f} "
                  f"(x{ratio[0]:.2f} C, first call {first[0]:.1f} s) -> {value} "
                  f"{median(ts[1]) / n * 1e6:.2f} (x{ratio[1]:.2f} C, first call "
                  f"{first[1]:.1f} s); C batch {median(ts[2]) / n * 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
