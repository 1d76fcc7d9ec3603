"""Verification residuals of paper 000 Sec. 5, beside the paper's numbers, for serial chains and
branched trees (and, beyond the paper, floating bases, multi-DoF joints and a real humanoid).

For each model, over random trials (q in [0, 2 pi], unit quaternions; qd in [0, 10]; gravity 0):
max |C qd - RNEA(q, qd, 0)|, max |Mdot - dM/dt| (Mdot from Alg. 1, where it is formed as C + C^T by
Prop. 1, against forward-mode automatic differentiation of CRBA along the motion,
`symdyn.reference.reference_mass_matrix_rate`: an independent check, where Mdot - C - C^T would hold
by construction), max |C - sum_k Gamma_k qd_k| (C from Alg. 1 with factorization (10), Gamma from
Alg. 2), and max |C - Pinocchio's computeCoriolisMatrix|.
Writes verification.md.

    python experiments/verification.py            # 100 trials per model (~1-2 min)
    python experiments/verification.py --quick    # 10 trials, fewer models
"""
from __future__ import annotations

import time

from _common import command, header, log, out_dir, parser, sci, table, write

import numpy as np  # noqa: E402

from symdyn.algorithms import rnea  # noqa: E402
from symdyn.algorithms.christoffel import christoffel  # noqa: E402
from symdyn.algorithms.coriolis import coriolis_matrix  # noqa: E402
from symdyn.reference import reference_mass_matrix_rate  # noqa: E402
from symdyn.models import (binary_tree, biped, branched_tree, quadruped, random_tree,  # noqa: E402
                           serial_chain)

PAPER = {"serial10": (1.3e-11, 1.8e-12, 1.6e-11), "serial20": (1.4e-9, 1.8e-12, 1.6e-11),
         "serial30": (1.4e-9, 1.8e-12, 1.6e-11)}


def models(quick: bool):
    """(label, description, model) of the verification set."""
    out = [(f"serial{n}", f"serial chain, {n} revolute bodies (`serial_chain({n})`)",
            lambda n=n: serial_chain(n)) for n in ((10, 20) if quick else (10, 20, 30))]
    out += [("binary15", "binary tree, 15 bodies (`binary_tree(15)`)", lambda: binary_tree(15)),
            ("branched31_bf5", "tree with branching factor 5, 31 bodies (`branched_tree(31, 5)`)",
             lambda: branched_tree(31, 5)),
            ("quadruped20", "fixed torso + 4 legs, 20 DoF (`quadruped(20)`)",
             lambda: quadruped(20))]
    if not quick:
        out += [("binary31", "binary tree, 31 bodies (`binary_tree(31)`)", lambda: binary_tree(31)),
                ("biped20", "fixed torso + 2 legs, 20 DoF (`biped(20)`)", lambda: biped(20)),
                ("random12_multidof", "random floating-base tree, 12 bodies, revolute/prismatic/"
                 "helical/spherical joints (`random_tree(12, seed=3, ..., floating_base=True)`)",
                 lambda: random_tree(12, seed=3, floating_base=True,
                                     joint_kinds=("revolute", "prismatic", "helical", "spherical")))]
    out.append(("talos", "TALOS humanoid, floating base (`load_robot('talos')`, example-robot-data)",
                _talos))
    return out


def _talos():
    from symdyn.robots import load_robot

    return load_robot("talos")


def zero_gravity(model):
    return model.replace(gravity=np.zeros(3))


def residuals(model, trials: int, rng):
    """Max residuals over the trials and the magnitudes they are relative to."""
    import pinocchio as pin

    from symdyn.pinocchio_bridge import matrix_from_pin, q_to_pin, to_pinocchio, v_to_pin

    pm = to_pinocchio(model)
    pd = pm.createData()
    zero = np.zeros(model.nv)
    r = dict(rnea=0.0, mdot=0.0, gamma=0.0, pin=0.0, tau=0.0, C=0.0, Mdot=0.0)
    Q = np.stack([model.random_q(rng) for _ in range(trials)])
    QD = rng.uniform(0, 10, (trials, model.nv))
    Mdot_ad = reference_mass_matrix_rate(model, Q, QD)
    for q, qd, Mdot_ref in zip(Q, QD, Mdot_ad):
        _, Mdot, C = coriolis_matrix(model, q, qd)
        G = christoffel(model, q)
        tau = rnea(model, q, qd, zero)
        Cp = matrix_from_pin(model, pin.computeCoriolisMatrix(pm, pd, q_to_pin(model, q),
                                                              v_to_pin(model, qd)))
        r["rnea"] = max(r["rnea"], float(np.abs(C @ qd - tau).max()))
        r["mdot"] = max(r["mdot"], float(np.abs(Mdot - Mdot_ref).max()))
        r["gamma"] = max(r["gamma"], float(np.abs(C - G @ qd).max()))
        r["pin"] = max(r["pin"], float(np.abs(C - Cp).max()))
        r["tau"] = max(r["tau"], float(np.abs(tau).max()))
        r["C"] = max(r["C"], float(np.abs(C).max()))
        r["Mdot"] = max(r["Mdot"], float(np.abs(Mdot).max()))
    return r


def main(argv=None) -> int:
    args = parser(__doc__).parse_args(argv)
    t0 = time.perf_counter()
    d = out_dir(args)
    trials = 10 if args.quick else 100
    rng = np.random.default_rng(0)
    rows, rel_rows, descr = [], [], []
    worst_rel, big = 0.0, None
    for label, what, make in models(args.quick):
        model = zero_gravity(make())
        t1 = time.perf_counter()
        r = residuals(model, trials, rng)
        log(f"{label:18s} nv={model.nv:3d}: C qd-RNEA {r['rnea']:.1e}, Mdot-dM/dt {r['mdot']:.1e}, "
            f"C-Gamma qd {r['gamma']:.1e}, C-pin {r['pin']:.1e} ({time.perf_counter() - t1:.1f} s)")
        descr.append(f"- `{label}`: {what}; nv = {model.nv}, depth d = {model.d}.")
        rows.append([label, model.nv, model.d, sci(r["rnea"]), sci(r["mdot"]), sci(r["gamma"]),
                     sci(r["pin"])])
        eps = np.finfo(float).eps
        rel = (r["rnea"] / (eps * r["tau"]), r["mdot"] / (eps * r["Mdot"]),
               r["gamma"] / (eps * r["C"]))
        worst_rel = max(worst_rel, *rel)
        if label == "serial30" or (args.quick and label == "serial20"):
            big = (label, r["tau"], r["rnea"])
        rel_rows.append([label, f"{r['tau']:.3g}", f"{r['C']:.3g}"] + [f"{x:.1f}" for x in rel])
        if label in PAPER:
            p = PAPER[label]
            rows.append([f"*paper 000, {label}*", "", "", sci(p[0]), sci(p[1]), sci(p[2]), ""])

    lines = header("Verification of Algorithms 1 and 2 (paper 000 Sec. 5)",
                   command("verification.py", args), t0)
    lines += [f"Max residuals over {trials} random trials per model, NumPy path (`coriolis_matrix`, "
              "`christoffel`, `rnea`), gravity 0, q uniform in [0, 2 pi] (unit quaternions for "
              "spherical/floating joints), qd uniform in [0, 10] (paper 000 Sec. 5). Units: N m "
              "(torques), N m s (matrix entries); rows in *italics* are the paper's numbers "
              "(C/C++ RBDL extension; the paper gives one worst case for N = 20 and 30 together "
              "and one number for each other check over all its trials). The paper's Mdot column "
              "is Mdot - C - C^T with Mdot from Alg. 1 lines 14 and 22; symdyn forms Mdot as C + C^T "
              "(Prop. 1), which would make that check hold by construction, so its column compares "
              "Mdot with an independent derivative of CRBA (forward-mode AD along q (+) e qd).", "",
              "Models:", ""] + descr + [""]
    lines += table(["model", "nv", "d", "C qd - RNEA", "Mdot - dM/dt (AD)", "C - sum_k Gamma_k qd_k",
                    "C - Pinocchio C"], rows)
    lines += ["", "The same residuals in units of double-precision rounding, residual / (eps x the "
              "largest entry of the compared quantity):", ""]
    lines += table(["model", "max abs RNEA torque", "max abs C entry", "C qd - RNEA", "Mdot - dM/dt",
                    "C - Gamma qd"], rel_rows)
    lines += ["", "## What matches the paper, what differs, and why", "",
              "- **Matches**: every identity holds to rounding: C qd = RNEA (so Alg. 1 gives a "
              "valid factorization), Mdot = dM/dt (the Mdot of Alg. 1, formed as C + C^T, equals the AD "
              "derivative of CRBA: C is admissible), C = sum_k Gamma_k qd_k (Alg. 2 "
              "consistent with Alg. 1), and C equals Pinocchio's Christoffel-consistent "
              "`computeCoriolisMatrix` to rounding on every model, including floating bases, "
              "spherical joints and TALOS. The residual levels are of the paper's order (1e-12 to "
              "1e-9) and grow with N like the paper's (1.3e-11 at N = 10, 1.4e-9 at N = 20-30).",
              "- **Differs**: the absolute values are not the paper's digits. The residual of a "
              "floating-point identity is a few eps times the magnitude of the terms, and the "
              "magnitudes depend on the geometry and inertias (the paper's chain parameters are "
              "not given; ours are 1 m, 1 kg links, `symdyn.models.serial_chain`) and on the "
              f"summation order of each implementation. With qd up to 10 rad/s, torques in the "
              f"{big[0]} chain reach {big[1]:.2g} N m, so its {big[2]:.1e} N m residual is "
              f"{big[2] / (np.finfo(float).eps * big[1]):.1f} eps relative; over all models and "
              f"checks the worst residual is {worst_rel:.1f} eps relative (table above), i.e. "
              "rounding level. The multi-DoF/floating/TALOS rows go beyond the paper (which "
              "verified revolute chains only).", ""]
    write(d, "verification.md", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
