"""The fast numeric default (issue 50): ``sd.f(sd.compiled(model), ...)`` against Pinocchio 4.1.

Per-call time of the public functions on a compiled model (``fast = sd.compiled(model)``, default
build options: ``opt="auto"``, ``-march=native``) against Pinocchio's Python calls, for rnea, crba,
aba, coriolis_matrix and frame_jacobian on ur5, panda and g1. Each robot's calls and
Pinocchio's are timed side by side in one process: interleaved rounds, one block of calls of each
per round, medians of the per-round ratios. A third timer calls the loaded compiled function
directly (``fast.function(name, ...)(q, ...)``, what ``symdyn.codegen.build`` returns), so that
the report splits the time of ``sd.f(fast, ...)`` into the compiled call and what the dispatch
adds. Targets: at most 3x Pinocchio's time on ur5 and panda, 1.5x on g1.

What each side computes:

* rnea, crba, aba: the same quantities (crba: symdyn the full symmetric M, Pinocchio's ``crba``
  the upper triangle);
* coriolis_matrix: symdyn returns ``(M, Mdot, C)``, Pinocchio's ``computeCoriolisMatrix`` C only;
* frame_jacobian: symdyn ``sd.frame_jacobian(fast, q, frame)`` (reference ``"local"``: forward
  kinematics and the 6 x nv Jacobian, rows [angular; linear]); Pinocchio
  ``computeFrameJacobian(model, data, q, frame_id, LOCAL)`` (forward kinematics and the same
  Jacobian, rows [linear; angular]).

Models: ``sd.load_robot(name)`` and its Pinocchio twin ``sd.to_pinocchio(model)`` (the same
joints, frames and inertias; states converted with ``symdyn.interop.pinocchio.q_to_pin``).

Writes fast_default.md.

    python experiments/fast_default.py            # ur5, panda, g1 (cold build cache: ~10 min)
    python experiments/fast_default.py --quick    # fewer rounds
"""
from __future__ import annotations

import time

from _common import (command, header, interleaved, log, median, out_dir, paired_ratio, parser,
                     table, us, write)

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
import symdyn.codegen  # noqa: E402,F401  (what sd.compiled builds with: the report's sources)

ROBOTS = {"ur5": ("tool0", 3.0), "panda": ("panda_hand", 3.0), "g1": ("right_rubber_hand", 1.5)}
FUNCTIONS = ("rnea", "crba", "aba", "coriolis_matrix", "frame_jacobian")
PIN_NAMES = {"rnea": "rnea", "crba": "crba", "aba": "aba",
             "coriolis_matrix": "computeCoriolisMatrix",
             "frame_jacobian": "computeFrameJacobian(LOCAL)"}


def calls(name: str, fast, frame: str, state):
    """(the public call on the compiled model, the loaded compiled function called directly)."""
    q, qd, qdd = state
    if name == "frame_jacobian":
        direct = fast.function(name, frame=frame)
        return (lambda: sd.frame_jacobian(fast, q, frame)), (lambda: direct(q))
    fn = getattr(sd, name)
    args = {"rnea": (q, qd, qdd), "crba": (q,), "aba": (q, qd, qdd),
            "coriolis_matrix": (q, qd)}[name]
    direct = fast.function(name)
    return (lambda: fn(fast, *args)), (lambda: direct(*args))


def pin_calls(model, frame: str, state):
    import pinocchio as pin

    from symdyn.interop.pinocchio import q_to_pin, v_to_pin

    pm = sd.to_pinocchio(model)
    pd = pm.createData()
    fid = pm.getFrameId(frame)
    if fid >= pm.nframes:
        raise SystemExit(f"{model.name}: Pinocchio's twin has no frame {frame!r}")
    q, qd, qdd = state
    pq, pv, pa = q_to_pin(model, q), v_to_pin(model, qd), v_to_pin(model, qdd)
    return {"rnea": lambda: pin.rnea(pm, pd, pq, pv, pa),
            "crba": lambda: pin.crba(pm, pd, pq),
            "aba": lambda: pin.aba(pm, pd, pq, pv, pa),
            "coriolis_matrix": lambda: pin.computeCoriolisMatrix(pm, pd, pq, pv),
            "frame_jacobian": lambda: pin.computeFrameJacobian(pm, pd, pq, fid, pin.LOCAL)}


def measure(robot: str, repeat: int) -> tuple[list[dict], dict]:
    frame, target = ROBOTS[robot]
    model = sd.load_robot(robot)
    rng = np.random.default_rng(0)
    state = (model.random_q(rng), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv))
    request = [*[n for n in FUNCTIONS if n != "frame_jacobian"],
               ("frame_jacobian", {"frame": frame})]
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        log(line)

    fast = sd.compiled(model, progress=progress)
    t0 = time.perf_counter()
    fast.prepare(*request)
    built = any("compiling" in line for line in lines)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sd.compiled(model, progress=False).prepare(*request)       # a new process's first use
    t_load = time.perf_counter() - t0
    pins = pin_calls(model, frame, state)
    rows = []
    for name in FUNCTIONS:
        public, direct = calls(name, fast, frame, state)
        public()                      # first call: resolves the call form (no build left)
        tp, td, tq = interleaved([public, direct, pins[name]], repeat=repeat)
        row = {"robot": robot, "nv": model.nv, "function": name, "public": median(tp),
               "direct": median(td), "pin": median(tq), "ratio": paired_ratio(tp, tq),
               "direct_ratio": paired_ratio(td, tq), "target": target,
               "overhead": median([a - b for a, b in zip(tp, td)])}
        log(f"{robot} {name}: sd {us(row['public'])} us, direct {us(row['direct'])} us, "
            f"pin {us(row['pin'])} us, ratio {row['ratio']:.2f} (target {target})")
        rows.append(row)
    return rows, {"first": t_first, "built": built, "load": t_load}


HOW = {True: "built: the cache had no entry", False: "loaded from the disk cache"}


def report(rows: list[dict], builds: dict, args, t0: float) -> list[str]:
    what = ("Per-call median wall time of `sd.f(fast, ...)` with `fast = sd.compiled(model)` "
            "against Pinocchio's Python call, side by side in one process (interleaved rounds, "
            "medians of the per-round ratios). *direct*: the loaded compiled function called "
            "without the dispatch; *dispatch*: median per-round difference public - direct. "
            "Targets: ratio <= 3 on ur5 and panda, <= 1.5 on g1.")
    L = header("Fast numeric default: sd.* on a compiled model vs Pinocchio 4.1 (issue 50)",
               command("fast_default.py", args), t0, what)
    body = []
    for r in rows:
        ok = "yes" if r["ratio"] <= r["target"] else "**no**"
        body.append([r["robot"], str(r["nv"]), r["function"], PIN_NAMES[r["function"]],
                     us(r["public"]), us(r["direct"]), us(r["overhead"]), us(r["pin"]),
                     f"{r['ratio']:.2f}", f"{r['direct_ratio']:.2f}", f"{r['target']:g}", ok])
    L += table(["robot", "nv", "function", "Pinocchio", "sd.f(fast) [us]", "direct [us]",
                "dispatch [us]", "Pinocchio [us]", "ratio", "direct ratio", "target", "met"],
               body)
    missed = [r for r in rows if r["ratio"] > r["target"]]
    over = [r["overhead"] for r in rows]
    L += ["", "## Summary", ""]
    L += [f"* Targets met: {len(rows) - len(missed)} of {len(rows)}."
          + ("" if not missed else " Missed: " + ", ".join(
              f"{r['robot']} {r['function']} ({r['ratio']:.2f} > {r['target']:g}; direct "
              f"{r['direct_ratio']:.2f}, dispatch {us(r['overhead'])} us)" for r in missed) + ".")]
    L += [f"* What the dispatch adds to a call (decorator, type check, the compiled model's "
          f"lookup of the call form): median {us(float(np.median(over)))} us, range "
          f"{us(min(over))}-{us(max(over))} us."]
    L += ["* First use (one library per robot holding the five functions, `fast.prepare`): "
          + ", ".join(f"{k} {b['first']:.1f} s ({HOW[b['built']]})" for k, b in builds.items())
          + "; a second compiled model of the same robot then loads the library from the disk "
          "cache: " + ", ".join(f"{k} {b['load']:.2f} s" for k, b in builds.items()) + "."]
    L += ["", "What each side computes: rnea, crba, aba the same quantities (Pinocchio's crba "
          "fills the upper triangle of M, symdyn all of it); coriolis_matrix: symdyn (M, Mdot, "
          "C), Pinocchio's computeCoriolisMatrix C only; frame_jacobian: both forward kinematics "
          "and the 6 x nv frame Jacobian in the LOCAL frame (symdyn rows [angular; linear], "
          "Pinocchio [linear; angular]).", ""]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--robots", default=None, help="comma-separated subset of ur5,panda,g1")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    repeat = 7 if args.quick else 21
    robots = args.robots.split(",") if args.robots else list(ROBOTS)
    rows, builds = [], {}
    for robot in robots:
        r, builds[robot] = measure(robot, repeat)
        rows += r
    write(d, "fast_default.md", report(rows, builds, args, t0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
