"""Snapping file precision (issue 50, item 3): SX graphs of every example-robot-data robot loaded
with the loaders' default ``snap=1e-10`` (symdyn.snapping) against the same URDF loaded with
``snap=0`` (the file's values, as Pinocchio reads them).

Per robot of ``sd.available_robots()`` (robots that fail to load are listed with the reason): the
snap report (entries made exactly 0 or +-1, the largest change and where), and for rnea, crba,
aba, coriolis_matrix and christoffel (christoffel up to ``--max-nv-christoffel`` speeds):

* SX instructions of ``symdyn.codegen.casadi_function(model, alg)`` without and with snapping;
* the time to build that CasADi function (one build each, so noisy; the ratio is what counts);
* the evaluation time per state of the CasADi SX function itself (``f.map(B)``, CasADi's virtual
  machine; blocks of both variants interleaved, medians of the per-round ratios);
* the largest relative difference of the two functions' outputs on random states
  (``max |a - b| / max |b|`` per output);
* numerically (``sd.rnea``/``sd.crba``/``sd.aba``), the relative difference of each variant from
  Pinocchio built from the same URDF (the index maps of tests/test_pinocchio_robots.py), and,
  for the choice of the default, the largest change and the relative difference from the
  unsnapped model of a load with ``snap=1e-9``.

Code generation snaps within 4 eps in both variants (``exact_rotations``), so robots whose
snapping changed nothing beyond 4 eps have identical graphs by construction; they are listed, not
rebuilt.

    python experiments/snapping.py            # every robot (~5 min)
    python experiments/snapping.py --quick    # ur5, kinova, anymal_c, talos_arm (~30 s)
"""
from __future__ import annotations

import sys
import time

from _common import (ROOT, command, header, interleaved, log, median, out_dir, paired_ratio,
                     parser, sci, table, write)

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
from symdyn.codegen.cache import model_fingerprint  # noqa: E402
from symdyn.codegen.functions import casadi_function, exact_rotations  # noqa: E402
from symdyn.snapping import SNAP_TOLERANCE  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))

ALGORITHMS = ("rnea", "crba", "aba", "coriolis_matrix", "christoffel")
QUICK = ["ur5", "kinova", "anymal_c", "talos_arm"]
STATES = 5        # states on which the two variants' outputs are compared
BATCH = 64        # states per evaluation of f.map(BATCH)


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = float(np.abs(b).max()) if b.size else 0.0
    return float(np.abs(a - b).max() / scale) if scale > 0 else float(np.abs(a - b).max(initial=0))


def inputs(f, model, rng, n):
    """Random inputs of ``f`` by name, n states as columns: q from ``model.random_q`` (unit
    quaternions), the others normal."""
    out = []
    for i, name in enumerate(f.name_in()):
        if name == "q":
            out.append(np.array([model.random_q(rng) for _ in range(n)]).T)
        else:
            out.append(rng.normal(size=(f.nnz_in(i), n)))
    return out


def outputs_rel(fa, fb, model, rng) -> float:
    """Largest relative difference of fa's outputs from fb's over STATES random states."""
    worst = 0.0
    X = inputs(fb, model, rng, STATES)
    for k in range(STATES):
        a = fa.call([x[:, k] for x in X])
        b = fb.call([x[:, k] for x in X])
        worst = max(worst, max(rel(np.array(x), np.array(y)) for x, y in zip(a, b)))
    return worst


def eval_times(fa, fb, model, rng) -> tuple[float, float, float]:
    """(per-state s of fa, of fb, median ratio fa/fb) of the SX functions mapped over BATCH."""
    import casadi as ca

    X = [ca.DM(x) for x in inputs(fb, model, rng, BATCH)]
    ma, mb = fa.map(BATCH), fb.map(BATCH)
    ta, tb = interleaved([lambda: ma.call(X), lambda: mb.call(X)], repeat=11, target=0.01,
                         max_total=3.0)
    return median(ta) / BATCH, median(tb) / BATCH, paired_ratio(ta, tb)


def pinocchio_rel(name) -> tuple[float, float] | None:
    """Largest relative difference from Pinocchio of (snapped, unsnapped) rnea, crba and aba on
    two states, or None without Pinocchio."""
    try:
        import pinocchio as pin
        from test_pinocchio_robots import Pair
    except ImportError:
        return None
    pair = Pair(name, None)
    P, pm, pd = pair.P, pair.pm, pair.pd
    worst = [0.0, 0.0]
    for q, qd, qdd, tau in pair.states(2, seed=3):
        qp = pair.q_pin(q)
        ref = (pin.rnea(pm, pd, qp, qd[P], qdd[P]), pin.crba(pm, pd, qp),
               pin.aba(pm, pd, qp, qd[P], tau[P]))
        for k, m in enumerate((pair.model, pair.exact)):
            ours = (sd.rnea(m, q, qd, qdd)[P], sd.crba(m, q)[np.ix_(P, P)],
                    sd.aba(m, q, qd, tau)[P])
            worst[k] = max(worst[k], *(rel(a, b) for a, b in zip(ours, ref)))
    return worst[0], worst[1]


def numeric_rel(a, b, seed: int = 3) -> float:
    """Largest relative difference of rnea, crba and aba of model a from model b on two states."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(2):
        q, qd, qdd = b.random_q(rng), rng.normal(size=b.nv), rng.normal(size=b.nv)
        pairs = ((sd.rnea(a, q, qd, qdd), sd.rnea(b, q, qd, qdd)), (sd.crba(a, q), sd.crba(b, q)),
                 (sd.aba(a, q, qd, qdd), sd.aba(b, q, qd, qdd)))
        worst = max(worst, *(rel(x, y) for x, y in pairs))
    return worst


def graph_key(model) -> str:
    """What the generated graphs of the dynamics depend on, after codegen's own 4-eps snap."""
    return model_fingerprint(exact_rotations(model))


def measure(names, max_nv_christoffel: int):
    robots, skipped, identical, rows = [], [], [], []
    for name in names:
        t0 = time.perf_counter()
        try:
            exact = sd.load_robot(name, snap=0)
            snapped = sd.load_robot(name)
        except Exception as exc:  # noqa: BLE001 (listed in the report with its reason)
            skipped.append((name, f"{type(exc).__name__}: {str(exc)[:160]}"))
            continue
        rep = snapped.snap_report
        pin_rel = pinocchio_rel(name)
        coarse = exact.snapped(1e-9)
        robots.append(dict(name=name, N=snapped.N, nv=snapped.nv, report=rep, pin=pin_rel,
                           rel=numeric_rel(snapped, exact),
                           coarse=(coarse.snap_report.largest, numeric_rel(coarse, exact))))
        if graph_key(snapped) == graph_key(exact):
            identical.append(name)
            log(f"{name}: graphs identical (nothing beyond 4 eps snapped)")
            continue
        rng = np.random.default_rng(0)
        for alg in ALGORITHMS:
            if alg == "christoffel" and snapped.nv > max_nv_christoffel:
                continue
            built = {}
            for key, m in (("before", exact), ("after", snapped)):
                t = time.perf_counter()
                f = casadi_function(m, alg)
                built[key] = (f, time.perf_counter() - t)
            fb, tb = built["before"]
            fa, ta = built["after"]
            ea, eb, ratio = eval_times(fa, fb, snapped, rng)
            rows.append(dict(robot=name, alg=alg, n_before=fb.n_instructions(),
                             n_after=fa.n_instructions(), build_before=tb, build_after=ta,
                             eval_before=eb, eval_after=ea, eval_ratio=ratio,
                             rel=outputs_rel(fa, fb, snapped, rng)))
        log(f"{name}: {time.perf_counter() - t0:.1f} s")
    return robots, skipped, identical, rows


def report(robots, skipped, identical, rows, args, t0) -> list[str]:
    cmd = command("snapping.py", args)
    L = header("Snapping file precision: SX graphs with and without the loaders' snap (issue 50)", cmd,
               t0, "Before = `sd.load_robot(name, snap=0)` (the file's values), after = "
               f"`sd.load_robot(name)` (default snap={SNAP_TOLERANCE:g}); both go through "
               "`symdyn.codegen.casadi_function(model, alg)`, which snaps within 4 eps in both. "
               "Ratios are after / before. Build times are one build each (noisy); evaluation "
               f"times are CasADi's SX virtual machine over `f.map({BATCH})`, both variants "
               "interleaved, median of the per-round ratios; on this shared machine single "
               "evaluation ratios scatter by tens of percent (the instruction counts are exact).")
    L += ["## Summary", ""]
    if rows:
        L += ["Per algorithm over the robots whose graphs changed (medians and extremes of the "
              "after / before ratios):", ""]
        srows = []
        for alg in ALGORITHMS:
            r = [x for x in rows if x["alg"] == alg]
            if not r:
                continue
            n = [x["n_after"] / x["n_before"] for x in r]
            b = [x["build_after"] / x["build_before"] for x in r]
            e = [x["eval_ratio"] for x in r]
            srows.append([alg, len(r), f"{np.median(n):.2f} ({min(n):.2f}-{max(n):.2f})",
                          f"{np.median(b):.2f}", f"{np.median(e):.2f} ({min(e):.2f}-{max(e):.2f})",
                          sci(max(x["rel"] for x in r))])
        L += table(["algorithm", "robots", "SX instructions", "build time", "SX eval time",
                    "max rel. difference"], srows)
        L += [""]
    snapped_reps = [r for r in robots if r["report"].entries]
    largest = max((r["report"].largest for r in robots), default=0.0)
    pins = [r["pin"] for r in robots if r["pin"] is not None]
    L += [f"{len(robots)} robots loaded, {len(skipped)} skipped; {len(snapped_reps)} had entries "
          f"snapped, the largest change {sci(largest)}; graphs identical (nothing beyond 4 eps) "
          f"on {len(identical)}."]
    if pins:
        agree = [r for r in robots if r["pin"] is not None and r["pin"][1] < 1e-12]
        off = [f"{r['name']} ({sci(r['pin'][1])} unsnapped, {sci(r['pin'][0])} snapped)"
               for r in robots if r["pin"] is not None and r["pin"][1] >= 1e-12]
        L += [f"Against Pinocchio (rnea, crba, aba, two states each), on the {len(agree)} robots "
              f"whose unsnapped model agrees with it to 1e-12: largest relative difference "
              f"{sci(max(r['pin'][0] for r in agree))} snapped, "
              f"{sci(max(r['pin'][1] for r in agree))} unsnapped"
              + (f"; differing from Pinocchio with or without snapping: {', '.join(off)}."
                 if off else ".")]
    L += [f"Numerically (rnea, crba, aba against the unsnapped model): largest relative "
          f"difference {sci(max(r['rel'] for r in robots))} with the default, "
          f"{sci(max(r['coarse'][1] for r in robots))} with snap=1e-9 (largest change "
          f"{sci(max(r['coarse'][0] for r in robots))})."]
    L += ["", "## Robots", "",
          "Snap report of the default load (`model.snap_report`: entries snapped, largest change, "
          "where), the relative difference of rnea, crba and aba from the unsnapped model and "
          "from Pinocchio (snapped and unsnapped models), and the same for snap=1e-9.", ""]
    L += table(["robot", "N", "nv", "entries", "largest", "where", "vs unsnapped",
                "vs Pinocchio (snapped)", "vs Pinocchio (unsnapped)", "1e-9: largest",
                "1e-9: vs unsnapped"],
               [[r["name"], r["N"], r["nv"], r["report"].entries, sci(r["report"].largest),
                 r["report"].where or "-", sci(r["rel"]), sci(r["pin"][0]) if r["pin"] else "-",
                 sci(r["pin"][1]) if r["pin"] else "-", sci(r["coarse"][0]),
                 sci(r["coarse"][1])] for r in robots])
    L += ["", "## Graphs", "",
          "Robots whose graphs changed; christoffel up to nv = "
          f"{args.max_nv_christoffel}.", ""]
    L += table(["robot", "algorithm", "SX before", "SX after", "ratio", "build before (s)",
                "build ratio", "eval before (us/state)", "eval ratio", "max rel. difference"],
               [[x["robot"], x["alg"], x["n_before"], x["n_after"],
                 f"{x['n_after'] / x['n_before']:.2f}", f"{x['build_before']:.2f}",
                 f"{x['build_after'] / x['build_before']:.2f}", f"{x['eval_before'] * 1e6:.3g}",
                 f"{x['eval_ratio']:.2f}", sci(x["rel"])] for x in rows])
    L += ["", "Identical graphs (nothing snapped beyond 4 eps): " + (", ".join(identical) or "none")
          + ".", ""]
    L += ["Skipped (failed to load): " + ("; ".join(f"{n} ({why})" for n, why in skipped)
                                          if skipped else "none") + "."]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--max-nv-christoffel", type=int, default=40, metavar="NV",
                   help="build christoffel only for robots with at most NV speeds (default 40)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    names = QUICK if args.quick else sd.available_robots()
    names = [n for n in names if n in sd.available_robots()]
    if not names:
        log("example-robot-data is not installed: nothing to measure")
        return 1
    robots, skipped, identical, rows = measure(names, args.max_nv_christoffel)
    write(out_dir(args), "snapping.md", report(robots, skipped, identical, rows, args, t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
