"""Compiled contact dynamics against Pinocchio 4.1 (issue 48): per-call time of
``symdyn.codegen.build(model, {"constraint_dynamics": {"contacts": ...}, "impulse_dynamics": ...})``
against ``pinocchio.constraintDynamics`` / ``impulseDynamics`` (Python call on both sides, same
process, interleaved blocks, medians), the compiled ``.batch`` over 1000 states (one thread) per
state against a Python loop of Pinocchio calls, and the agreement with Pinocchio on the same
states. Where the analytical derivatives are registered as compiled functions
(``constraint_dynamics_derivatives`` / ``impulse_dynamics_derivatives`` in
``symdyn.codegen.ALGORITHMS``) they are timed too, against ``constraintDynamics`` followed by
``computeConstraintDynamicsDerivatives`` (and the impulse pair); otherwise only the agreement of
the NumPy ``sd.constraint_dynamics_derivatives`` with Pinocchio is reported.

Robots (URDFs of example-robot-data, ``sd.load_robot``) and contacts as in
tests/test_contact_dynamics.py, whose Pinocchio twin (``PinTwin``: the same contacts as
``RigidConstraintModel``) this script reuses: four 3-D point contacts at the feet of solo12,
anymal_c, go2 and b1 (free-flyer), two 6-D sole contacts and one 6-D hand contact on talos and g1
(free-flyer), one 6-D contact at the hand of panda (fixed base, fingers locked). Contacts in
``local_world_aligned``, no Baumgarte gains, no damping, restitution 0.

Writes contact_dynamics.md and contact_dynamics.png.

    python experiments/contact_dynamics.py            # all seven robots (cold build cache: ~10 min)
    python experiments/contact_dynamics.py --quick    # solo12 and panda, fewer repeats (~1 min)
"""
from __future__ import annotations

import os
import sys
import time

from _common import (ROOT, command, header, interleaved, log, median, out_dir, paired_ratio,
                     parser, pyplot, save, sci, table, us, write)

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
from symdyn.codegen import ALGORITHMS, build  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_contact_dynamics import PinTwin, rel, robot, robot_contacts  # noqa: E402

ROBOTS_FULL = ["solo12", "anymal_c", "go2", "b1", "talos", "g1", "panda"]
ROBOTS_QUICK = ["solo12", "panda"]
BATCH = 1000
AGREE_STATES = 20          # states of the batch also checked one by one against Pinocchio
REFERENCE = "local_world_aligned"
DERIVATIVES = ("constraint_dynamics_derivatives", "impulse_dynamics_derivatives")


def compiled_derivatives() -> bool:
    """Whether the analytical contact derivatives are registered as compiled functions."""
    return all(name in ALGORITHMS for name in DERIVATIVES)


def states(model, rng, n):
    """n random states: q (unit quaternions for the free-flyer), qd in [-2, 2], tau in [-20, 20]
    (the ranges of tests/test_contact_dynamics.py)."""
    Q = np.array([model.random_q(rng) for _ in range(n)])
    return Q, rng.uniform(-2, 2, (n, model.nv)), rng.uniform(-20, 20, (n, model.nv))


class PinCalls:
    """Pinocchio's calls on one model with the contact models built once (anchored at the first
    state; without Baumgarte gains the anchor does not enter the dynamics)."""

    def __init__(self, twin: PinTwin, contacts, q0):
        self.twin, self.pin, self.pb, self.m = twin, twin.pin, twin.pb, twin.model
        self.cms, self.cds = twin.contacts(q0, contacts)
        self.settings = self.pin.ProximalSettings(1e-14, 0.0, 1)
        self.settings_imp = self.pin.ProximalSettings(1e-12, 0.0, 1)

    def convert(self, q, qd, tau):
        pb, m = self.pb, self.m
        return pb.q_to_pin(m, q), pb.v_to_pin(m, qd), pb.v_to_pin(m, tau)

    def constraint(self, qp, vp, tp):
        t = self.twin
        return self.pin.constraintDynamics(t.pm, t.pd, qp, vp, tp, self.cms, self.cds,
                                           self.settings)

    def impulse(self, qp, vp):
        t = self.twin
        return self.pin.impulseDynamics(t.pm, t.pd, qp, vp, self.cms, self.cds, 0.0,
                                        self.settings_imp)

    def constraint_derivatives(self, qp, vp, tp):
        t = self.twin
        self.constraint(qp, vp, tp)
        return self.pin.computeConstraintDynamicsDerivatives(t.pm, t.pd, self.cms, self.cds,
                                                             self.settings)

    def impulse_derivatives(self, qp, vp):
        t = self.twin
        self.impulse(qp, vp)
        return self.pin.computeImpulseDynamicsDerivatives(t.pm, t.pd, self.cms, self.cds, 0.0,
                                                          self.settings_imp)


def agreement(model, twin, contacts, Q, QD, TAU, outs_c, outs_i) -> dict:
    """Max relative difference (max |x - x_pin| / max |x_pin| per state and quantity) between
    the compiled outputs ``outs_c`` = (qdd, lam), ``outs_i`` = (qd_plus, impulse) (arrays over
    the states) and Pinocchio's, over the states."""
    err = {"qdd": 0.0, "lam": 0.0, "qd_plus": 0.0, "impulse": 0.0}
    for k in range(len(Q)):
        qdd_p, lam_p = twin.constraint_dynamics(Q[k], QD[k], TAU[k], contacts)
        v_p, imp_p = twin.impulse_dynamics(Q[k], QD[k], contacts, 0.0)
        for key, got, want in (("qdd", outs_c[0][k], qdd_p), ("lam", outs_c[1][k], lam_p),
                               ("qd_plus", outs_i[0][k], v_p), ("impulse", outs_i[1][k], imp_p)):
            err[key] = max(err[key], rel(got, want))
    return err


def derivative_agreement(model, twin, contacts, q, qd, tau, compiled=None) -> dict:
    """Agreement of symdyn's analytical contact derivatives with Pinocchio's at one state
    (helpers of tests/test_contact_derivatives.py: speed order, row order, M^-1 floor): the
    NumPy evaluation and, where given, the compiled functions ``compiled`` = (constraint,
    impulse); the larger difference of the two."""
    from test_contact_derivatives import (IMPULSE_NAMES, NAMES, pin_constraint_derivatives,
                                          pin_impulse_derivatives, worst)

    floors = {"dqdd_dtau": float(np.abs(np.linalg.inv(sd.crba(model, q))).max())}
    ref_c = pin_constraint_derivatives(twin, q, qd, tau, contacts)
    ref_i = pin_impulse_derivatives(twin, q, qd, contacts, 0.0)
    got_c = [sd.constraint_dynamics_derivatives(model, q, qd, tau, contacts)]
    got_i = [sd.impulse_dynamics_derivatives(model, q, qd, contacts, restitution=0.0)]
    if compiled is not None:
        got_c.append(compiled[0](q, qd, tau))
        got_i.append(compiled[1](q, qd))
    return {"constraint_derivatives": max(worst(g, ref_c, NAMES, floors)[0] for g in got_c),
            "impulse_derivatives": max(worst(g, ref_i, IMPULSE_NAMES)[0] for g in got_i)}


def robot_row(name: str, repeat: int, rng) -> dict:
    model = robot(name)
    contacts = robot_contacts(name, REFERENCE)
    specs = {"constraint_dynamics": {"contacts": contacts},
             "impulse_dynamics": {"contacts": contacts}}
    with_derivs = compiled_derivatives()
    if with_derivs:
        specs.update({d: {"contacts": contacts} for d in DERIVATIVES})
    t0 = time.perf_counter()
    lib = build(model, specs, progress=False)
    t_build = time.perf_counter() - t0
    fc, fi = lib["constraint_dynamics"], lib["impulse_dynamics"]
    twin = PinTwin(model)
    Q, QD, TAU = states(model, rng, BATCH)
    P = PinCalls(twin, contacts, Q[0])
    pin_states = [P.convert(q, v, t) for q, v, t in zip(Q, QD, TAU)]
    q, qd, tau = Q[0], QD[0], TAU[0]
    qp, vp, tp = pin_states[0]
    r = {"name": name, "nv": model.nv, "base": "floating" if model.is_floating else "fixed",
         "contacts": " + ".join(f"{c.dim}-D {c.frame}" for c in contacts),
         "rows": sum(c.dim for c in contacts), "build_s": t_build,
         "form": fc.meta.get("form", "unrolled"), "ins": fc.stats["n_instructions"],
         "ins_imp": fi.stats["n_instructions"]}

    pairs = [("constraint", lambda: fc(q, qd, tau), lambda: P.constraint(qp, vp, tp)),
             ("impulse", lambda: fi(q, qd), lambda: P.impulse(qp, vp))]
    if with_derivs:
        fdc, fdi = lib[DERIVATIVES[0]], lib[DERIVATIVES[1]]
        pairs += [("constraint_derivatives", lambda: fdc(q, qd, tau),
                   lambda: P.constraint_derivatives(qp, vp, tp)),
                  ("impulse_derivatives", lambda: fdi(q, qd),
                   lambda: P.impulse_derivatives(qp, vp))]
    for key, mine, theirs in pairs:
        ts, tp_ = interleaved([mine, theirs], repeat=repeat)
        r[f"t_{key}"], r[f"tp_{key}"], r[f"ratio_{key}"] = (median(ts), median(tp_),
                                                            paired_ratio(ts, tp_))

    # batch (one thread, preallocated outputs) against a Python loop of Pinocchio calls
    out_c = fc.batch(Q, QD, TAU, threads=1)
    out_i = fi.batch(Q, QD, threads=1)

    def pin_loop_c():
        for s in pin_states:
            P.constraint(*s)

    def pin_loop_i():
        for s in pin_states:
            P.impulse(s[0], s[1])

    batches = [("constraint", lambda: fc.batch(Q, QD, TAU, out=out_c, threads=1), pin_loop_c),
               ("impulse", lambda: fi.batch(Q, QD, out=out_i, threads=1), pin_loop_i)]
    if with_derivs:
        out_dc = fdc.batch(Q, QD, TAU, threads=1)
        out_di = fdi.batch(Q, QD, threads=1)

        def pin_loop_dc():
            for s in pin_states:
                P.constraint_derivatives(*s)

        def pin_loop_di():
            for s in pin_states:
                P.impulse_derivatives(s[0], s[1])

        batches += [("constraint_derivatives",
                     lambda: fdc.batch(Q, QD, TAU, out=out_dc, threads=1), pin_loop_dc),
                    ("impulse_derivatives", lambda: fdi.batch(Q, QD, out=out_di, threads=1),
                     pin_loop_di)]
        r["form_d"] = f"{fdc.meta.get('form', 'unrolled')} / {fdi.meta.get('form', 'unrolled')}"
        r["ins_d"] = f"{fdc.stats['n_instructions']} / {fdi.stats['n_instructions']}"
    for key, mine, theirs in batches:
        tb, tl = interleaved([mine, theirs], repeat=max(3, repeat // 3), target=0.05)
        r[f"b_{key}"], r[f"bp_{key}"] = median(tb) / BATCH, median(tl) / BATCH
        r[f"bratio_{key}"] = paired_ratio(tb, tl)

    # agreement: the per-call state and the first batch states (batch outputs) vs Pinocchio
    one_c, one_i = fc(q, qd, tau), fi(q, qd)
    n = AGREE_STATES
    err = agreement(model, twin, contacts, Q[:n], QD[:n], TAU[:n],
                    [np.asarray(x)[:n] for x in out_c], [np.asarray(x)[:n] for x in out_i])
    err_call = agreement(model, twin, contacts, Q[:1], QD[:1], TAU[:1],
                         [np.asarray(x)[None] for x in one_c], [np.asarray(x)[None] for x in one_i])
    r["err"] = {k: max(err[k], err_call[k]) for k in err}
    r["err"].update(derivative_agreement(
        model, twin, contacts, q, qd, tau,
        (lib[DERIVATIVES[0]], lib[DERIVATIVES[1]]) if with_derivs else None))
    r["load"] = os.getloadavg()[0]
    log(f"{name}: constraint {us(r['t_constraint'])} us vs Pinocchio {us(r['tp_constraint'])} "
        f"us (ratio {r['ratio_constraint']:.2f}), impulse ratio {r['ratio_impulse']:.2f}, batch "
        f"ratio {r['bratio_constraint']:.2f} / {r['bratio_impulse']:.2f}, max rel. diff "
        f"{max(r['err'].values()):.1e}, build {t_build:.0f} s")
    return r


DYNAMICS_ERRORS = ("qdd", "lam", "qd_plus", "impulse")
DERIVATIVE_ERRORS = ("constraint_derivatives", "impulse_derivatives")
DERIVS_TIMED = ("compiled functions timed above; the agreement columns give the larger "
                "difference of the compiled and the NumPy evaluation")
DERIVS_NOT_TIMED = "NumPy; not yet registered as compiled functions, so not timed here"


def disturbed(r, key: str) -> bool:
    """Whether the per-call median of ``key`` exceeds the batch's per-state time of the same C
    code by more than half (plus 5 us of call overhead): the per-call blocks were preempted."""
    return r[f"t_{key}"] > 1.5 * r[f"b_{key}"] + 5e-6


def worst_err(rows, keys) -> float:
    return max(r["err"][k] for r in rows for k in keys)


def plot(rows, directory):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    names = [r["name"] for r in rows]
    x = np.arange(len(rows))
    keys = [("constraint", "constraint_dynamics"), ("impulse", "impulse_dynamics")]
    if compiled_derivatives():
        keys += [("constraint_derivatives", "constraint_dynamics_derivatives"),
                 ("impulse_derivatives", "impulse_dynamics_derivatives")]
    w = 0.8 / len(keys)
    ax = axes[0]
    for i, (k, label) in enumerate(keys):
        ax.bar(x + (i - (len(keys) - 1) / 2) * w, [r[f"ratio_{k}"] for r in rows], w, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, names)
    ax.set_ylabel("compiled / Pinocchio, per Python call")
    ax.set_title("per call (< 1: symdyn faster)")
    ax.legend()
    ax = axes[1]
    for i, (k, label) in enumerate(keys):
        ax.bar(x + (i - (len(keys) - 1) / 2) * w, [r[f"bratio_{k}"] for r in rows], w,
               label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, names)
    ax.set_ylabel(".batch / Pinocchio loop, per state")
    ax.set_title(f"batch of {BATCH} states, one thread (< 1: symdyn faster)")
    ax.legend()
    return save(fig, directory, "contact_dynamics.png")


def report(rows, fig, args, t0):
    derivs = compiled_derivatives()
    L = header("Contact dynamics, compiled, against Pinocchio 4.1 (issue 48)",
               command("contact_dynamics.py", args), t0)
    L += ["What is compared:", "",
          "- **symdyn**: `symdyn.codegen.build(model, {'constraint_dynamics': {'contacts': C}, "
          "'impulse_dynamics': {'contacts': C}})` (contacts fixed at build time, `form='auto'`), "
          "called from Python per state, and `.batch` over "
          f"{BATCH} random states in one C loop (`threads=1`, preallocated outputs), per state.",
          "- **Pinocchio** 4.1 `constraintDynamics(model, data, q, v, tau, contact_models, "
          "contact_datas, ProximalSettings(1e-14, 0, 1))` and `impulseDynamics(..., r_coeff=0, "
          "ProximalSettings(1e-12, 0, 1))` on `sd.to_pinocchio(model)` with the same contacts as "
          "`RigidConstraintModel`s (built once, `PinTwin` of tests/test_contact_dynamics.py), "
          "per Python call; the batch column is a Python loop of these calls over the same "
          f"{BATCH} states (arguments converted to Pinocchio's order beforehand).",
          "- Contacts in `local_world_aligned`, no Baumgarte gains, no damping, restitution 0. "
          "Every model is a real URDF of example-robot-data loaded with `sd.load_robot` (solo12: "
          "solo12.urdf, anymal_c: anymal_c_simple_description, go2, b1, talos: talos_reduced.urdf, "
          "g1: g1_29dof_rev_1_0.urdf, panda: panda.urdf with its two mimic finger joints locked "
          "by `sd.reduced_model`).", "",
          "Timing: medians of ~20 ms blocks (~50 ms for the batch), symdyn and Pinocchio blocks "
          "alternating, ratio = median of the per-round ratios (< 1: symdyn faster). The ratios "
          "were measured on a shared machine (other engineers' jobs were running): the two sides "
          "of each ratio saw the same load, the absolute times did not stay the same from robot "
          "to robot.", ""]
    L += ["## Per call", ""]
    head = ["robot", "nv", "base", "contacts", "rows", "load (1 min)", "constraint_dynamics (us)",
            "Pinocchio (us)", "ratio", "impulse_dynamics (us)", "Pinocchio (us)", "ratio"]
    if derivs:
        head += ["constraint derivs (us)", "Pinocchio (us)", "ratio", "impulse derivs (us)",
                 "Pinocchio (us)", "ratio"]
    body = []
    for r in rows:
        row = [r["name"], r["nv"], r["base"], r["contacts"], r["rows"], f"{r['load']:.1f}"]
        for k in ("constraint", "impulse") + (("constraint_derivatives", "impulse_derivatives")
                                              if derivs else ()):
            mark = " (*)" if k in ("constraint", "impulse") and disturbed(r, k) else ""
            row += [us(r[f"t_{k}"]) + mark, us(r[f"tp_{k}"]), f"{r[f'ratio_{k}']:.2f}"]
        body.append(row)
    L += table(head, body)
    marked = [f"{r['name']} {k}_dynamics" for r in rows for k in ("constraint", "impulse")
              if disturbed(r, k)]
    L += ["", "Load (1 min): the machine's 1-minute load average when the robot's row was "
          f"finished ({os.cpu_count()} cores). (*): the per-call median exceeds the batch's "
          "per-state time of the same C code (next table) by more than half plus 5 us of call "
          "overhead: the per-call blocks were preempted by other jobs more than their "
          "Pinocchio neighbours, and that ratio does not measure the compiled code alone"
          + (f" ({', '.join(marked)})." if marked else "; no row is marked in this run.")]
    L += ["", f"## Batch: .batch over {BATCH} states vs a Python loop of Pinocchio calls (per "
          "state)", ""]
    L += table(["robot", "constraint_dynamics batch (us)", "Pinocchio loop (us)", "ratio",
                "impulse_dynamics batch (us)", "Pinocchio loop (us)", "ratio", "code form",
                "SX instr. (constraint / impulse)", "build (s)"],
               [[r["name"], us(r["b_constraint"]), us(r["bp_constraint"]),
                 f"{r['bratio_constraint']:.2f}", us(r["b_impulse"]), us(r["bp_impulse"]),
                 f"{r['bratio_impulse']:.2f}", r["form"], f"{r['ins']} / {r['ins_imp']}",
                 f"{r['build_s']:.1f}"] for r in rows])
    if derivs:
        L += ["", "Derivatives, batch per state (same states) against a Python loop of "
              "`constraintDynamics` + `computeConstraintDynamicsDerivatives` (and "
              "`impulseDynamics` + `computeImpulseDynamicsDerivatives`):", ""]
        L += table(["robot", "constraint derivs batch (us)", "Pinocchio loop (us)", "ratio",
                    "impulse derivs batch (us)", "Pinocchio loop (us)", "ratio",
                    "code form (constraint / impulse derivs)", "SX instr."],
                   [[r["name"]] + [x for k in DERIVATIVE_ERRORS
                                   for x in (us(r[f"b_{k}"]), us(r[f"bp_{k}"]),
                                             f"{r[f'bratio_{k}']:.2f}")]
                    + [r["form_d"], r["ins_d"]] for r in rows])
        L += ["", "The Pinocchio side of the derivative columns includes its forward pass "
              "(`constraintDynamics` / `impulseDynamics`, which "
              "`computeConstraintDynamicsDerivatives` / `computeImpulseDynamicsDerivatives` "
              "need), as symdyn's derivative functions compute the dynamics themselves.",
              "", "Code form: `form='auto'` of `build` (the recursive form where the unrolled "
              "graph is over its size bound). SX instr.: the instructions of the compiled "
              "kernels (unrolled: the whole graph; recursive: its kernels, whose dense "
              "products (J M^-1 and the KKT partials) are native product loops of the C program, "
              "not SX code, and are not counted)."]
    L += ["", "Build: wall seconds of `build` in this run (a warm cache reads the library back).",
          "", "## Agreement with Pinocchio", "",
          f"Max over states of max |x - x_pin| / max |x_pin|: the per-call state and the first "
          f"{AGREE_STATES} states of the batch (compiled outputs), each against a fresh "
          "Pinocchio solve at that state. Derivatives: symdyn's analytical "
          "`sd.constraint_dynamics_derivatives` / `sd.impulse_dynamics_derivatives` "
          f"({DERIVS_TIMED if derivs else DERIVS_NOT_TIMED}) "
          "against `computeConstraintDynamicsDerivatives` / "
          "`computeImpulseDynamicsDerivatives` at the per-call state, each matrix against its "
          "largest entry (dqdd/dtau against max |M^-1|, tests/test_contact_derivatives.py).", ""]
    L += table(["robot", "qdd", "lam", "qd_plus", "impulse", "constraint derivatives",
                "impulse derivatives"],
               [[r["name"]] + [sci(r["err"][k]) for k in DYNAMICS_ERRORS + DERIVATIVE_ERRORS]
                for r in rows])
    worst_ratio = max(rows, key=lambda r: r["ratio_constraint"])
    slow_b = [r["name"] for r in rows if r["bratio_constraint"] >= 1.0]
    L += ["", f"![contact dynamics]({fig})", "", "## Summary", "",
          f"- constraint_dynamics per call: ratios "
          + ", ".join(f"{r['name']} {r['ratio_constraint']:.2f}" for r in rows)
          + f" (largest: {worst_ratio['name']}); impulse_dynamics: "
          + ", ".join(f"{r['name']} {r['ratio_impulse']:.2f}" for r in rows) + "."
          + (" At or above 1: " + ", ".join(
              f"{r['name']} {k}_dynamics ({r[f'ratio_{k}']:.2f}"
              + (", marked (*)" if disturbed(r, k) else "") + ")"
              for r in rows for k in ("constraint", "impulse") if r[f"ratio_{k}"] >= 1.0) + "."
             if any(r[f"ratio_{k}"] >= 1.0 for r in rows for k in ("constraint", "impulse"))
             else " Below 1 on every robot."),
          *([f"- constraint_dynamics_derivatives per call: "
             + ", ".join(f"{r['name']} {r['ratio_constraint_derivatives']:.2f}" for r in rows)
             + "; impulse_dynamics_derivatives: "
             + ", ".join(f"{r['name']} {r['ratio_impulse_derivatives']:.2f}" for r in rows)
             + "; batched per state against the Pinocchio loop: "
             + ", ".join(f"{r['name']} {r['bratio_constraint_derivatives']:.2f} / "
                         f"{r['bratio_impulse_derivatives']:.2f}" for r in rows)
             + ". At or above 1 per call: "
             + (", ".join(f"{r['name']} {k}" for r in rows for k in DERIVATIVES
                          if r[f"ratio_{k.replace('_dynamics', '')}"] >= 1.0) or "none")
             + ". Code of the derivative functions (form, SX instructions, constraint / "
             "impulse): " + ", ".join(f"{r['name']} {r['form_d']}, {r['ins_d']}" for r in rows)
             + " (not profiled further)."]
            if derivs else []),
          "- Batch per state against the Pinocchio loop: "
          + ", ".join(f"{r['name']} {r['bratio_constraint']:.2f}" for r in rows)
          + (f"; not faster on {', '.join(slow_b)}." if slow_b else "; faster on every robot."),
          f"- Largest relative difference to Pinocchio: {worst_err(rows, DYNAMICS_ERRORS):.1e} "
          f"(dynamics), {worst_err(rows, DERIVATIVE_ERRORS):.1e} (derivatives).", ""]
    return L


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeat", type=int, default=None,
                   help="rounds of side-by-side blocks (15; 5 with --quick)")
    p.add_argument("--robots", default=None,
                   help="comma-separated robots (default: all seven; solo12,panda with --quick)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    repeat = args.repeat or (5 if args.quick else 15)
    names = (args.robots.split(",") if args.robots else
             ROBOTS_QUICK if args.quick else ROBOTS_FULL)
    unknown = [n for n in names if n not in ROBOTS_FULL]
    if unknown:
        p.error(f"unknown robot(s) {', '.join(unknown)}; choose from {', '.join(ROBOTS_FULL)}")
    rng = np.random.default_rng(0)
    rows = [robot_row(n, repeat, rng) for n in names]
    fig = plot(rows, d)
    write(d, "contact_dynamics.md", report(rows, fig, args, t0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
