"""JAX throughput on one device, without the compiled-C and ADAM comparisons of bench_jax.py.

For a machine that has a GPU and JAX but neither CasADi, a C toolchain setup nor
example-robot-data: the models are the URDF files in ``--urdf-dir`` (ur5_robot.urdf and
panda.urdf, copied from example-robot-data; the Panda's fingers are locked) plus a
random-geometry chain built here (``serial_chain(20, seed=1)``). For each algorithm it times the
jitted, vmapped function of ``symdyn.jax.compile`` at batch sizes 1e2..1e6 (median of 5 timed
calls after one compile call; results kept on the device, ``block_until_ready``), and records
the compile time. Prints and writes a markdown table (``--out``), for a GPU run to be quoted
beside the CPU figures of reports/jax.md (none has been taken: no GPU was lent to this project
so far).

    python experiments/bench_jax_device.py --device gpu --urdf-dir DIR --out table.md
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ALGS = ("rnea", "crba", "aba", "coriolis_matrix", "christoffel")
SIZES = (100, 1_000, 10_000, 100_000, 1_000_000)
OUT_BYTES = 2e9           # a batch's results stay below ~2 GB on the device


def models(urdf_dir: Path):
    import symdyn as sd
    from symdyn.models import serial_chain

    out = [("ur5", sd.load_urdf(urdf_dir / "ur5_robot.urdf"))]
    panda = sd.load_urdf(urdf_dir / "panda.urdf")
    out.append(("panda (fingers locked)",
                sd.reduced_model(panda, ["panda_finger_joint1", "panda_finger_joint2"])))
    out.append(("serial_chain(20, seed=1)", serial_chain(20, seed=1)))
    return out


def out_size(alg: str, nv: int) -> int:
    return {"rnea": nv, "aba": nv, "crba": nv * nv, "coriolis_matrix": 3 * nv * nv,
            "christoffel": nv ** 3}[alg]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "gpu"), default="gpu")
    p.add_argument("--urdf-dir", type=Path, required=True)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--max-size", type=int, default=SIZES[-1])
    args = p.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    import symdyn.jax as sjax

    dev = jax.devices(args.device)[0]
    rng = np.random.default_rng(0)
    lines = [f"JAX {jax.__version__} on {dev.device_kind} ({dev.platform}), float64; "
             f"Python {sys.version.split()[0]}", "",
             "| model | nv | algorithm | compile (s) | batch | us / state | states / s |",
             "|---|---|---|---|---|---|---|"]
    for label, model in models(args.urdf_dir):
        for alg in ALGS:
            if alg == "christoffel" and model.nv > 10:
                continue
            f = sjax.compile(model, alg, check=False)
            t_compile = None
            for n in SIZES:
                if n > args.max_size or n * out_size(alg, model.nv) * 8 > OUT_BYTES:
                    continue
                q = np.stack([model.random_q(rng) for _ in range(min(n, 1000))])
                q = np.resize(q, (n, model.nq))
                X = [q if a == "q" else rng.uniform(-1, 1, (n, model.nv)) for a in f.args]
                Xd = [jax.device_put(x, dev) for x in X]
                t0 = time.perf_counter()
                jax.block_until_ready(f.batch(*Xd))
                if t_compile is None:
                    t_compile = time.perf_counter() - t0
                ts = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    jax.block_until_ready(f.batch(*Xd))
                    ts.append(time.perf_counter() - t0)
                t = statistics.median(ts) / n
                lines.append(f"| {label} | {model.nv} | {alg} | {t_compile:.1f} | {n:.0e} | "
                             f"{t * 1e6:.3g} | {1 / t:.3g} |")
                print(lines[-1], flush=True)
                del X, Xd
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
