"""The same measurements on two versions of symdyn, side by side -> reports/before_after.md.

    python experiments/before_after.py --before REF [--rounds 2] [--quick]

A refactoring must not make symdyn slower: this script checks out ``REF`` into a temporary git
worktree and runs one measuring process per version, alternating (before, after, before, ...),
each importing its own tree (``PYTHONPATH``). Every process measures ratios side by side in the
same process, so that machine load cancels:

* fastpath: a compiled single call (``symdyn.codegen.build``, the default form) / the same call of
  Pinocchio, on Panda (URDF) and random-geometry trees;
* scaling: the compiled function the automatic form choice picks / Pinocchio, against N on
  random-geometry chains and branched trees;
* jax: per-state time of a ``symdyn.jax.compile`` batch of 1000 states / the compiled C batch's
  scalar loop (``.batch``, one thread, ``simd=False`` where the version has vector batches) on
  Panda (only when JAX is installed).

The table gives the median ratio of each version over the rounds and after/before.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FASTPATH = {"robot:panda": ("rnea", "crba", "aba", "coriolis_matrix", "rnea_derivatives"),
            "random:20:seed=1": ("rnea", "crba", "aba", "coriolis_matrix", "rnea_derivatives")}
SCALING = {"serial": (10, 40, 80), "branched": (10, 40, 80)}
SCALING_ALGS = ("rnea", "crba", "aba", "coriolis_matrix")
JAX_ALGS = ("rnea", "crba", "aba")
JAX_BATCH = 1000


# --- the measuring process (runs inside one version's tree) --------------------------------------

def _imports():
    """The APIs the measurements use, from whichever layout the version has."""
    try:
        from symdyn.io.specs import from_spec
        from symdyn.interop.pinocchio import q_to_pin, to_pinocchio, v_to_pin
    except ImportError:      # the layout before symdyn.io / symdyn.interop
        from symdyn.cli.specs import from_spec  # type: ignore[no-redef]
        from symdyn.pinocchio_bridge import q_to_pin, to_pinocchio, v_to_pin  # type: ignore
    return from_spec, to_pinocchio, q_to_pin, v_to_pin


def _pin_call(pin, pm, pd, alg, q, v, a):
    return {"rnea": lambda: pin.rnea(pm, pd, q, v, a),
            "crba": lambda: pin.crba(pm, pd, q),
            "aba": lambda: pin.aba(pm, pd, q, v, a),
            "coriolis_matrix": lambda: pin.computeCoriolisMatrix(pm, pd, q, v),
            "rnea_derivatives": lambda: pin.computeRNEADerivatives(pm, pd, q, v, a)}[alg]


def _ratio(f, g, repeat: int) -> float:
    sys.path.insert(0, str(ROOT / "experiments"))
    from _common import interleaved, paired_ratio

    ta, tb = interleaved([f, g], repeat=repeat)
    return paired_ratio(ta, tb)


def _compiled_vs_pinocchio(spec: str, algs, repeat: int, out: dict, key: str) -> None:
    import numpy as np
    import pinocchio as pin
    from symdyn.codegen import build

    from_spec, to_pinocchio, q_to_pin, v_to_pin = _imports()
    model = from_spec(spec)
    lib = build(model, list(algs), progress=False)
    pm = to_pinocchio(model)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q, v, a = model.random_q(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp, vp, ap = q_to_pin(model, q), v_to_pin(model, v), v_to_pin(model, a)
    for alg in algs:
        f = getattr(lib, alg)
        args = {"rnea": (q, v, a), "crba": (q,), "aba": (q, v, a), "coriolis_matrix": (q, v),
                "rnea_derivatives": (q, v, a)}[alg]
        out[f"{key} {alg}"] = _ratio(lambda: f(*args), _pin_call(pin, pm, pd, alg, qp, vp, ap),
                                     repeat)


def _jax_vs_c(repeat: int, out: dict) -> None:
    try:
        import jax
        import symdyn.jax as sjax
    except ImportError:
        return
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from symdyn.codegen import build

    from_spec = _imports()[0]
    model = from_spec("robot:panda")
    lib = build(model, list(JAX_ALGS), progress=False)
    rng = np.random.default_rng(0)
    Q = np.stack([model.random_q(rng) for _ in range(JAX_BATCH)])
    V = rng.normal(size=(JAX_BATCH, model.nv))
    for alg in JAX_ALGS:
        X = (Q,) if alg == "crba" else (Q, V, V)
        f = sjax.compile(model, alg)
        f(*X)
        c = getattr(lib, alg)
        # the scalar C loop on both versions (versions with vector batches take simd=False), so
        # that a faster vector batch does not read as a slower JAX
        try:
            c.batch(*X, threads=1, simd=False)
            scalar = {"simd": False}
        except TypeError:
            scalar = {}
        out[f"jax panda {alg} ({JAX_BATCH} states) / scalar C batch"] = _ratio(
            lambda: f(*X), lambda: c.batch(*X, threads=1, **scalar), repeat)


def measure(repeat: int, quick: bool) -> dict:
    out: dict = {}
    for spec, algs in FASTPATH.items():
        _compiled_vs_pinocchio(spec, algs, repeat, out, f"fastpath {spec}")
    for family, sizes in SCALING.items():
        for n in sizes[:2] if quick else sizes:
            spec = f"serial:{n}:seed=1" if family == "serial" else f"branched:{n}:3:seed=1"
            _compiled_vs_pinocchio(spec, SCALING_ALGS, repeat, out, f"scaling {family} N={n}")
    _jax_vs_c(repeat, out)
    return out


# --- the driver ----------------------------------------------------------------------------------

def _worktree(ref: str) -> Path:
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], check=True,
                         capture_output=True, text=True).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"symdyn-before-{sha[:12]}"
    if not (path / "symdyn").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), sha],
                       check=True, capture_output=True)
    return path


def _run_side(tree: Path, repeat: int, quick: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        cmd = [sys.executable, str(ROOT / "experiments" / "before_after.py"), "--measure",
               fh.name, "--repeat", str(repeat)] + (["--quick"] if quick else [])
        subprocess.run(cmd, check=True, env=env, cwd=str(tree))
        return json.loads(Path(fh.name).read_text())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", help="git ref of the version to compare with (the 'before')")
    p.add_argument("--rounds", type=int, default=2, help="processes per version, alternating")
    p.add_argument("--repeat", type=int, default=9, help="timed rounds per ratio in a process")
    p.add_argument("--quick", action="store_true", help="the two smaller sizes of the scaling rows")
    p.add_argument("--out", default=str(ROOT / "reports" / "before_after.md"))
    p.add_argument("--measure", metavar="JSON", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        import symdyn

        res = measure(args.repeat, args.quick)
        res["_symdyn"] = str(Path(symdyn.__file__).resolve().parent)
        Path(args.measure).write_text(json.dumps(res))
        return 0
    if not args.before:
        p.error("--before REF is required")
    t0 = time.perf_counter()
    sides = {"before": _worktree(args.before), "after": ROOT}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(args.rounds):
        for side, tree in sides.items():
            print(f"round {r + 1}/{args.rounds}: {side} ({tree})", flush=True)
            res = _run_side(tree, args.repeat, args.quick)
            assert res.pop("_symdyn") == str((tree / "symdyn").resolve()), "wrong tree imported"
            runs[side].append(res)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "symdyn"],
                           capture_output=True, text=True).stdout.strip()
    lines = ["# Before / after: the same measurements on two versions", "",
             f"Regenerate with `python experiments/before_after.py --before {args.before} "
             f"--rounds {args.rounds} --repeat {args.repeat}{' --quick' if args.quick else ''}`; "
             f"{args.rounds} processes per version, "
             f"alternating; {time.perf_counter() - t0:.0f} s. Before: `{args.before}`; after: "
             f"`{head}`{' plus uncommitted changes' if dirty else ''}.", "",
             "Each cell is the median over the processes of a ratio measured side by side in "
             "one process (interleaved blocks, median of per-round ratios); lower is faster for "
             "symdyn. Models: Panda from its URDF and random-geometry trees "
             "(`random:20:seed=1`, `serial:N:seed=1`, `branched:N:3:seed=1`).", "",
             "| measurement | before | after | after / before |", "|---|---|---|---|"]
    for key in runs["after"][0]:
        b = [r[key] for r in runs["before"] if key in r]
        a = [r[key] for r in runs["after"]]
        mb = statistics.median(b) if b else float("nan")
        ma = statistics.median(a)
        lines.append(f"| {key} | {mb:.3f} | {ma:.3f} | {ma / mb:.2f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
