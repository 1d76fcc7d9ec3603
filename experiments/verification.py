"""Verification residuals of paper 000 Sec. 5, beside the paper's numbers, for serial chains and
branched trees (and, beyond the paper, floating bases, multi-DoF joints and a real humanoid).

For each model, over random trials (q in [0, 2 pi], unit quaternions; qd in [0, 10]; gravity 0):
max |C qd - RNEA(q, qd, 0)|, max |Mdot - dM/dt| (Mdot from Alg. 1, where it is formed as C + C^T by
Prop. 1, against forward-mode automatic differentiation of CRBA along the motion,
`symdyn.reference.reference_mass_matrix_rate`: an independent check, where Mdot - C - C^T would hold
by construction), max |C - sum_k Gamma_k qd_k| (C from Alg. 1 with factorization (10), Gamma from
Alg. 2), max |C - Pinocchio's computeCoriolisMatrix|, and the non-recursive Lagrangian reference of
paper 002: max |M - sum_k J_k^T I_k J_k| and, for scalar coordinates, C against the Euler-Lagrange
Coriolis matrix of that M (eq. (4) by CasADi AD).
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
from symdyn.algorithms.kinematics import body_jacobians  # noqa: E402
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
    from symdyn.io.robots import load_robot

    return load_robot("talos")


def lagrangian_mass_matrix(model, J, lib):
    """Paper 002's M = sum_k J_k^T I_k J_k (+ the armature's diagonal): the kinetic energy
    T = 1/2 sum_k v_k^T I_k v_k with v_k = J_k qd, from body Jacobians and body inertias only
    (no composite inertias, no recursion over forces). ``lib``: numpy or casadi."""
    from symdyn.backends import get_backend

    inertias = model.constants(get_backend("numpy")).I
    M = 0
    for Jk, Ik in zip(J, inertias):
        Ik = np.asarray(Ik, float)
        M = M + (Jk.T @ Ik @ Jk if lib is np else Jk.T @ (lib.DM(Ik) @ Jk))
    arm = np.asarray(getattr(model, "armature", np.zeros(model.nv)), float).ravel()
    if arm.size == model.nv and np.any(arm):
        M = M + (np.diag(arm) if lib is np else lib.DM(np.diag(arm)))
    return M


def lagrangian_coriolis(model):
    """CasADi Function (q, qd) -> C_L: the Coriolis matrix of the Euler-Lagrange equations of
    T = 1/2 qd^T M_L(q) qd, with M_L = sum_k J_k^T I_k J_k (paper 002) differentiated by CasADi
    AD: C_L[i, j] = sum_k Gamma_ijk qd_k with Gamma_ijk of eq. (4), i.e.
    C_L = 1/2 (dM_L/dt + d(M_L qd)/dq - d(M_L qd)/dq^T). Only for coordinates q whose time
    derivative is qd (revolute, prismatic, helical joints): nq == nv."""
    import casadi as ca

    from symdyn.algorithms.kinematics import body_jacobians

    assert model.nq == model.nv
    q, qd = ca.SX.sym("q", model.nq), ca.SX.sym("qd", model.nv)
    M = lagrangian_mass_matrix(model, body_jacobians(model, q, backend="casadi"), ca)
    Mdot = ca.jtimes(M, q, qd)                       # sum_k dM/dq_k qd_k
    Jp = ca.jacobian(M @ qd, q)                      # [i, j] = sum_k dM_ik/dq_j qd_k
    return ca.Function("C_lagrange", [q, qd], [0.5 * (Mdot + Jp - Jp.T)])


def zero_gravity(model):
    return model.replace(gravity=np.zeros(3))


def residuals(model, trials: int, rng):
    """Max residuals over the trials and the magnitudes they are relative to."""
    import pinocchio as pin

    from symdyn.interop.pinocchio import matrix_from_pin, q_to_pin, to_pinocchio, v_to_pin

    pm = to_pinocchio(model)
    pd = pm.createData()
    zero = np.zeros(model.nv)
    r = dict(rnea=0.0, mdot=0.0, gamma=0.0, pin=0.0, tau=0.0, C=0.0, Mdot=0.0, M=0.0,
             lagM=0.0, lagCqd=None, lagC=None)
    Q = np.stack([model.random_q(rng) for _ in range(trials)])
    QD = rng.uniform(0, 10, (trials, model.nv))
    Mdot_ad = reference_mass_matrix_rate(model, Q, QD)
    C_lag = lagrangian_coriolis(model) if model.nq == model.nv else None
    if C_lag is not None:
        r["lagCqd"] = r["lagC"] = 0.0
    for q, qd, Mdot_ref in zip(Q, QD, Mdot_ad):
        M, Mdot, C = coriolis_matrix(model, q, qd)
        M_L = lagrangian_mass_matrix(model, body_jacobians(model, q), np)
        r["lagM"] = max(r["lagM"], float(np.abs(M - M_L).max()))
        r["M"] = max(r["M"], float(np.abs(M).max()))
        if C_lag is not None:
            CL = np.asarray(C_lag(q, qd).full())
            r["lagCqd"] = max(r["lagCqd"], float(np.abs(C @ qd - CL @ qd).max()))
            r["lagC"] = max(r["lagC"], float(np.abs(C - CL).max()))
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
    rows, rel_rows, lag_rows, descr = [], [], [], []
    worst_rel, worst_lag, big = 0.0, 0.0, None
    for label, what, make in models(args.quick):
        model = zero_gravity(make())
        t1 = time.perf_counter()
        r = residuals(model, trials, rng)
        log(f"{label:18s} nv={model.nv:3d}: C qd-RNEA {r['rnea']:.1e}, Mdot-dM/dt {r['mdot']:.1e}, "
            f"C-Gamma qd {r['gamma']:.1e}, C-pin {r['pin']:.1e} ({time.perf_counter() - t1:.1f} s)")
        descr.append(f"- `{label}`: {what}; nv = {model.nv}, depth d = {model.d}.")
        na = "n/a (quaternion)"
        rows.append([label, model.nv, model.d, sci(r["rnea"]), sci(r["mdot"]), sci(r["gamma"]),
                     sci(r["pin"])])
        lag_rows.append([label, sci(r["lagM"]), na if r["lagCqd"] is None else sci(r["lagCqd"]),
                         na if r["lagC"] is None else sci(r["lagC"]),
                         f"{r['lagM'] / (np.finfo(float).eps * r['M']):.1f}",
                         "-" if r["lagC"] is None else
                         f"{r['lagC'] / (np.finfo(float).eps * r['C']):.1f}"])
        worst_lag = max(worst_lag, r["lagM"] / (np.finfo(float).eps * r["M"]),
                        0.0 if r["lagC"] is None else r["lagC"] / (np.finfo(float).eps * r["C"]))
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

    lines = header("Verification of Algorithms 1 and 2 (Echeandia & Wensing 2021, paper 000, Sec. 5)",
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
    lines += ["", "## Independent reference: the Lagrangian route (Liu & Jain's tutorial, paper 002)",
              "",
              "The columns above check Algorithms 1 and 2 against each other, against RNEA and "
              "against Pinocchio, all of which are recursive Newton-Euler / composite-inertia "
              "computations. This table checks them against the textbook route that shares none "
              "of that recursion: the mass matrix as the kinetic-energy sum "
              "M_L = sum_k J_k^T I_k J_k over the bodies (body Jacobians `symdyn.body_jacobians`, "
              "body spatial inertias I_k, plus the armature diagonal), and the Coriolis matrix of "
              "the Euler-Lagrange equations of T = 1/2 qd^T M_L qd, "
              "C_L[i, j] = sum_k Gamma_ijk qd_k with Gamma_ijk from eq. (4) applied to M_L, the "
              "partial derivatives taken by CasADi automatic differentiation of the M_L graph "
              "(C_L = 1/2 (dM_L/dt + d(M_L qd)/dq - d(M_L qd)/dq^T), the same contraction). "
              "Columns: max |M (CRBA) - M_L|, max |C qd - C_L qd| (C from Alg. 1: the "
              "Euler-Lagrange Coriolis/centripetal torque), max |C - C_L| (the whole matrix: both "
              "are the Christoffel-consistent factorization), and the M and C residuals in eps "
              "units as above. For models with quaternion coordinates (spherical joints, floating "
              "bases: nq != nv) only M is compared: there qd is a vector of generalized speeds "
              "(body velocities), not the time derivative of q, and the Euler-Lagrange equations "
              "in such quasi-velocities carry Boltzmann-Hamel terms (paper 001's structure "
              "constants) that eq. (4) does not contain; this script does not build them, so C of "
              "those rows is checked only against RNEA, Alg. 2 and Pinocchio above.", ""]
    lines += table(["model", "M - M_L", "C qd - C_L qd", "C - C_L", "M - M_L (eps units)",
                    "C - C_L (eps units)"], lag_rows)
    lines += ["", "## What matches the paper, what differs, and why", "",
              "- **Matches**: every identity holds to rounding: C qd = RNEA (so Alg. 1 gives a "
              "valid factorization), Mdot = dM/dt (the Mdot of Alg. 1, formed as C + C^T, equals the AD "
              "derivative of CRBA: C is admissible), C = sum_k Gamma_k qd_k (Alg. 2 "
              "consistent with Alg. 1), and C equals Pinocchio's Christoffel-consistent "
              "`computeCoriolisMatrix` to rounding on every model, including floating bases, "
              "spherical joints and TALOS; M and C also equal the non-recursive Lagrangian "
              "M_L and C_L on every model with scalar coordinates (M_L on every model), the worst "
              f"within {worst_lag:.1f} eps of the compared magnitude. The residual levels are of the paper's order (1e-12 to "
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
