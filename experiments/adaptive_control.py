"""Slotine-Li adaptive tracking of a 7-DoF arm (Franka Panda, fingers locked) with the
Christoffel-consistent C*-based regressor against the regressor of the "simple" factorization
(paper 000 eq. (9), B = (v x*) I), paper 001 Sec. IV.

Both factorizations are admissible (Mdot - 2C skew; checked here), so the Slotine-Li Lyapunov
function V = 1/2 s^T M s + 1/2 pi~^T Gamma^-1 pi~ decreases for both (dV/dt = -s^T K s); they
differ by a totally skew-symmetric contorsion term (C_simple - C*)(q, qd) qr_d that the
controller feeds in, which is what paper 001 Sec. IV-A studies (twisting, oscillating torques).
A third run keeps the initial parameter estimate (no adaptation).

The plant is integrated with fixed-step RK4 (torque held over a step) through a compiled aba
(symdyn.codegen.build); the adaptation law pi_hat' = -Gamma Y^T s by explicit Euler at the
control rate. The per-step cost of the controller (regressor, torque, adaptation) is timed on
the compiled path and on the NumPy path.

Writes adaptive_control.md and adaptive_control_*.png.

    python experiments/adaptive_control.py            # 8 s horizon, < 1 min (builds cached)
    python experiments/adaptive_control.py --quick    # 3 s horizon
"""
from __future__ import annotations

import time

from _common import (command, header, interleaved, log, median, out_dir, paired_ratio, parser,
                     pyplot, save, table, us, write)

import numpy as np  # noqa: E402

import symdyn as sd  # noqa: E402
from symdyn.codegen import build  # noqa: E402

LOCK = ["panda_finger_joint1", "panda_finger_joint2"]
FACTS = ("christoffel", "simple")
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])        # centre of the reference motion
AMP = np.array([0.5, 0.4, 0.5, 0.4, 0.6, 0.5, 0.6])           # rad
FREQ = np.array([0.30, 0.37, 0.44, 0.51, 0.58, 0.65, 0.72])   # Hz, distinct: rich excitation
LAMBDA = 5.0                                                  # s = qd - qr_d = e_dot + LAMBDA e
KD_SCALE = 20.0                                               # K = KD_SCALE diag(M(q0)), 1/s
KD = None                                                     # set in main()
GAMMA = 1.0                                                   # adaptation gain (Gamma = GAMMA I)
DT = 5e-4                                                     # control and RK4 step [s]
SEEDS = (0, 1, 2, 3)                                          # initial estimates of the sweep
SWEEP = ((1e-3, 1.0), (5e-4, 1.0), (5e-4, 2.0), (2.5e-4, 2.0))  # (dt, Gamma): sampled loop


def reference(t):
    w = 2 * np.pi * FREQ
    return Q0 + AMP * np.sin(w * t), AMP * w * np.cos(w * t), -AMP * w ** 2 * np.sin(w * t)


def initial_estimate(pi, nb, seed=0):
    """Every body's 10 parameters scaled by one factor in [0.5, 1.5] (physically consistent)."""
    f = np.random.default_rng(seed).uniform(0.5, 1.5, nb)
    return pi * np.repeat(f, 10)


def simulate(arm, lib, fact, pi, pi0, T, gamma, dt=None):
    DT = dt or globals()["DT"]
    n, steps = arm.nv, int(round(T / DT))
    reg = lib[f"slotine_li_regressor:{fact}"] if fact else None
    reg_c = lib["slotine_li_regressor:christoffel"]
    q = reference(0.0)[0] + 0.1                                # 0.1 rad off on every joint
    qd = np.zeros(n)
    pi_hat = pi0.copy()
    out = {k: np.zeros(steps) for k in ("e", "ed", "param", "pred", "V", "tau_rate", "torsion", "sigma2")}
    out["tau"] = np.zeros((steps, n))
    out["t"] = np.arange(steps) * DT
    tau_prev = None
    for k in range(steps):
        t = k * DT
        qdes, qd_des, qdd_des = reference(t)
        e, ed = q - qdes, qd - qd_des
        qr_d, qr_dd = qd_des - LAMBDA * e, qdd_des - LAMBDA * ed
        s = qd - qr_d
        Y = reg(q, qd, qr_d, qr_dd) if fact else reg_c(q, qd, qr_d, qr_dd)
        tau = Y @ pi_hat - KD * s
        if fact:
            Yc = Y if fact == "christoffel" else reg_c(q, qd, qr_d, qr_dd)
            out["torsion"][k] = np.linalg.norm((Y - Yc) @ pi_hat)  # (C_fact - C*) qr_d, estimated
        pt = pi_hat - pi
        M = lib.crba(q)
        out["V"][k] = 0.5 * s @ M @ s + (0.5 / gamma * pt @ pt if gamma > 0 else 0.0)
        out["e"][k], out["ed"][k] = np.linalg.norm(e), np.linalg.norm(ed)
        out["param"][k] = np.linalg.norm(pt) / np.linalg.norm(pi)
        # torque prediction error on the actual motion: Y(q, qd, qd, qdd_des) pi~
        out["pred"][k] = np.linalg.norm(reg_c(q, qd, qd, qdd_des) @ pt)
        out["tau"][k] = tau
        out["sigma2"][k] = np.linalg.norm(Y, 2) ** 2
        out["tau_rate"][k] = 0.0 if tau_prev is None else np.linalg.norm(tau - tau_prev) / DT
        tau_prev = tau
        if gamma > 0:
            pi_hat = pi_hat - DT * gamma * (Y.T @ s)
        # RK4 of the plant, tau held
        f = lib.aba
        k1v = f(q, qd, tau)
        k2q, k2v = qd + DT / 2 * k1v, f(q + DT / 2 * qd, qd + DT / 2 * k1v, tau)
        k3q, k3v = qd + DT / 2 * k2v, f(q + DT / 2 * k2q, qd + DT / 2 * k2v, tau)
        k4q, k4v = qd + DT * k3v, f(q + DT * k3q, qd + DT * k3v, tau)
        q = q + DT / 6 * (qd + 2 * k2q + 2 * k3q + k4q)
        qd = qd + DT / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return out


def rms(x, t, a, b):
    m = (t >= a) & (t < b)
    return float(np.sqrt(np.mean(x[m] ** 2)))


def check_admissible(arm, lib, rng):
    """max |Mdot - C - C^T| and max |(C - C*) qd| of both factorizations at random states, C
    assembled column by column from the regressor (g subtracted)."""
    n, pi = arm.nv, sd.inertial_parameters(arm)
    res = {}
    for fact in FACTS:
        skew = cqd = diff = 0.0
        for _ in range(5):
            q, qd = arm.random_q(rng), rng.normal(size=n)
            M, Md, Cs = sd.coriolis_matrix(arm, q, qd)
            Yf = lib[f"slotine_li_regressor:{fact}"]
            g = Yf(q, qd, np.zeros(n), np.zeros(n)) @ pi
            C = np.column_stack([Yf(q, qd, np.eye(n)[j], np.zeros(n)) @ pi - g for j in range(n)])
            skew = max(skew, np.abs(Md - C - C.T).max())
            cqd = max(cqd, np.abs((C - Cs) @ qd).max())
            diff = max(diff, np.abs(C - Cs).max() / np.abs(Cs).max())
        res[fact] = (skew, cqd, diff)
    return res


def timing(arm, lib, rng):
    n = arm.nv
    pi_hat = sd.inertial_parameters(arm)
    q, qd, a, b = arm.random_q(rng), rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    s = rng.normal(size=n)

    def step(regf):
        def f():
            Y = regf(q, qd, a, b)
            tau = Y @ pi_hat - KD * s
            return tau, pi_hat - DT * GAMMA * (Y.T @ s)
        return f
    fns = {}
    for fact in FACTS:
        fns[f"compiled {fact}"] = step(lib[f"slotine_li_regressor:{fact}"])
        fns[f"NumPy {fact}"] = step(lambda q, qd, a, b, fact=fact:
                                    sd.slotine_li_regressor(arm, q, qd, a, b, fact))
    fns["compiled aba (one RK4 stage)"] = lambda: lib.aba(q, qd, a)
    fns["NumPy aba (one RK4 stage)"] = lambda: sd.aba(arm, q, qd, a)
    names = list(fns)
    ts = interleaved([fns[k] for k in names], repeat=9, max_total=15.0)
    return {k: t for k, t in zip(names, ts)}


def main():
    p = parser(__doc__)
    args = p.parse_args()
    d = out_dir(args)
    t0 = time.perf_counter()
    T = 3.0 if args.quick else 8.0
    arm = sd.load_robot("panda", lock=LOCK)
    pi = sd.inertial_parameters(arm)
    pi0 = initial_estimate(pi, arm.N)
    global KD
    tb = time.perf_counter()
    lib = build(arm, {"slotine_li_regressor:christoffel": {"factorization": "christoffel"},
                      "slotine_li_regressor:simple": {"factorization": "simple"},
                      "aba": {}, "crba": {}}, progress=False)
    t_build = time.perf_counter() - tb
    log(f"build {t_build:.1f} s (cache hit: {lib.cache_hit})")
    KD = KD_SCALE * np.diag(lib.crba(Q0))
    rng = np.random.default_rng(1)
    adm = check_admissible(arm, lib, rng)
    runs = {}
    for label, fact, gamma in (("C* (christoffel)", "christoffel", GAMMA),
                               ("simple, eq. (9)", "simple", GAMMA),
                               ("C*, no adaptation", "christoffel", 0.0)):
        ts = time.perf_counter()
        runs[label] = simulate(arm, lib, fact, pi, pi0, T, gamma)
        log(f"{label}: {time.perf_counter() - ts:.1f} s")
    sweep = []
    for dt, gamma in SWEEP:
        for fact in FACTS:
            rate, err, gain = [], [], 0.0
            for seed in SEEDS:
                r = simulate(arm, lib, fact, pi, initial_estimate(pi, arm.N, seed), 1.5, gamma, dt)
                m = r["t"] >= 0.5
                rate.append(f"{np.percentile(r['tau_rate'][m], 99):.0f}")
                err.append(f"{rms(r['e'], r['t'], 1.0, 1.5):.1e}")
                gain = max(gain, gamma * dt * np.max(r["sigma2"]))
            sweep.append([f"{dt * 1e3:g}", f"{gamma:g}", fact, " / ".join(rate), " / ".join(err),
                          f"{gain:.2f}"])
    log("sampled-loop sweep done")
    tim = timing(arm, lib, rng)

    plt = pyplot()
    figs = []
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, r in runs.items():
        ax[0].semilogy(r["t"], r["e"], label=label, lw=1)
        ax[1].semilogy(r["t"], r["pred"], label=label, lw=1)
    ax[0].set(xlabel="t [s]", ylabel="|q - q_des| [rad]", title="tracking error")
    ax[1].set(xlabel="t [s]", ylabel="|Y(q, qd, qd, qdd_des) pi~| [N m]",
              title="torque prediction error of the estimate")
    ax[0].legend()
    figs.append(save(fig, d, "adaptive_control_tracking.png"))
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    for label, r in runs.items():
        ax[0].plot(r["t"], r["param"], label=label, lw=1)
        if "no adaptation" not in label:
            ax[1].semilogy(r["t"], r["V"], label=label, lw=1)
            ax[2].plot(r["t"], r["torsion"], label=label, lw=1)
    ax[0].set(xlabel="t [s]", ylabel="|pi_hat - pi| / |pi|", title="parameter estimate")
    ax[1].set(xlabel="t [s]", ylabel="V", title="Lyapunov function V")
    ax[2].set(xlabel="t [s]", ylabel="[N m]", title="|(C - C*) qr_d| fed by the controller")
    ax[0].legend()
    figs.append(save(fig, d, "adaptive_control_parameters.png"))
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, r in runs.items():
        if "no adaptation" in label:
            continue
        ax[0].plot(r["t"], r["tau"][:, 1], label=label, lw=1)
        ax[1].semilogy(r["t"][1:], r["tau_rate"][1:], label=label, lw=0.7)
    ax[0].set(xlabel="t [s]", ylabel="tau_2 [N m]", title="joint-2 torque")
    ax[1].set(xlabel="t [s]", ylabel="|d tau / dt| [N m / s]", title="torque rate")
    ax[0].legend()
    figs.append(save(fig, d, "adaptive_control_torques.png"))

    lines = header("Slotine-Li adaptive control of the Panda arm: C* vs the simple factorization",
                   command("adaptive_control.py", args), t0,
                   "Issue 13 section 6, paper 001 Sec. IV. " + __doc__.split("\n\n")[1].replace("\n", " "))
    lines += ["## Set-up", "",
              f"- Model: Panda, fingers locked (`sd.load_robot('panda', lock={LOCK})`), nv = "
              f"{arm.nv}, {pi.size} inertial parameters; true `pi = sd.inertial_parameters(arm)`.",
              "- Initial estimate: every body's 10 parameters scaled by one factor drawn in "
              f"[0.5, 1.5] (seed 0); relative error {np.linalg.norm(pi0 - pi) / np.linalg.norm(pi):.2f}.",
              f"- Reference: `q_des = q0 + A sin(2 pi f t)`, q0 = {Q0.tolist()}, A = {AMP.tolist()} "
              f"rad, f = {FREQ.tolist()} Hz; the arm starts 0.1 rad off on every joint, at rest.",
              f"- Control: `qr_d = qd_des - Lambda e`, `s = qd - qr_d`, `tau = Y(q, qd, qr_d, qr_dd) "
              f"pi_hat - K s`, `pi_hat' = -Gamma Y^T s`; Lambda = {LAMBDA}, K = {KD_SCALE:g} diag(M(q0)) = diag{np.round(KD, 2).tolist()}, "
              f"Gamma = {GAMMA} I. Y from the compiled `slotine_li_regressor` with "
              "`factorization='christoffel'` (C*) or `'simple'` (eq. (9)).",
              f"- Plant: RK4, dt = {DT * 1e3:g} ms, T = {T:g} s, compiled `aba`; no torque "
              f"saturation (max |tau| / effort is listed). Compiled build: {t_build:.1f} s "
              f"(cache hit: {lib.cache_hit}).", ""]
    lines += ["## Both factorizations are admissible", "",
              "At 5 random states (C assembled from the regressor column by column):", ""]
    lines += table(["factorization", "max |Mdot - C - C^T|", "max |(C - C*) qd|",
                    "max |C - C*| / max |C*|"],
                   [[f, f"{a:.1e}", f"{b:.1e}", f"{c:.2f}"] for f, (a, b, c) in adm.items()])
    lines += ["", "So `simple` is C* plus a non-zero contorsion term: same dynamics, same skew "
              "property, hence the same Slotine-Li Lyapunov argument (paper 001 Prop. IV.1, Cor. "
              "IV.1); only the connection (its torsion) differs.", ""]
    lines += ["## Tracking, parameters, torques", ""]
    rows = []
    for label, r in runs.items():
        t = r["t"]
        dV = np.diff(r["V"])
        rows.append([label, f"{rms(r['e'], t, 0, 1):.1e}", f"{rms(r['e'], t, T - 1, T):.1e}",
                     f"{r['e'][-1]:.1e}", f"{r['param'][-1]:.3f}",
                     f"{rms(r['pred'], t, 0, 1):.2f} / {rms(r['pred'], t, T - 1, T):.2f}",
                     f"{median(r['tau_rate'][1:]):.0f} / "
                     f"{np.percentile(r['tau_rate'][t >= 0.5], 99):.0f}",
                     f"{np.max(np.abs(r['tau']) / arm.limits.effort):.2f}",
                     f"{max(dV.max(), 0) / r['V'][0]:.1e}" if "no adaptation" not in label else "-",
                     f"{rms(r['torsion'], t, 0, T):.2f}" if "simple" in label else "0"])
    lines += table(["controller", "RMS |e| [rad], first 1 s", f"RMS |e|, last 1 s", "|e(T)|",
                    "|pi~(T)| / |pi|", "RMS torque prediction error [N m], first / last 1 s",
                    "|dtau/dt| median / 99th pct after 0.5 s [N m/s]", "max |tau| / effort",
                    "largest step increase of V / V(0)", "RMS |(C - C*) qr_d| [N m]"], rows)
    rc, rs = runs["C* (christoffel)"], runs["simple, eq. (9)"]
    lines += ["", f"Figures: tracking error and torque prediction error "
              f"(`{figs[0]}`), parameter error, Lyapunov function and the contorsion torque "
              f"(`{figs[1]}`), joint-2 torque and torque rate (`{figs[2]}`).", "",
              f"![tracking]({figs[0]})", "", f"![parameters]({figs[1]})", "",
              f"![torques]({figs[2]})", ""]
    ratio_e = rms(rs["e"], rs["t"], 0, T) / rms(rc["e"], rc["t"], 0, T)
    de = np.abs(rs["e"] - rc["e"]).max()
    dtau = np.sqrt(np.mean(np.sum((rs["tau"] - rc["tau"]) ** 2, axis=1)))
    tau_rms = np.sqrt(np.mean(np.sum(rc["tau"] ** 2, axis=1)))
    ra = runs["C*, no adaptation"]
    lines += ["## What the data shows", "",
              f"- Tracking: the RMS tracking error over the whole run with `simple` is "
              f"{ratio_e:.2f}x that with C*; the two error norms differ by at most {de:.1e} rad "
              f"at any time, and the torques by {dtau:.2f} N m RMS (the torque itself: "
              f"{tau_rms:.1f} N m RMS). Adaptation matters far more than the factorization: the "
              f"last-second RMS error is {rms(rc['e'], rc['t'], T - 1, T):.1e} rad adaptive vs "
              f"{rms(ra['e'], ra['t'], T - 1, T):.1e} rad with the fixed estimate.",
              "- V is non-increasing for both up to the discretisation (column 'largest step "
              "increase'), as the theory says for any admissible factorization: the Lyapunov "
              "argument cannot tell them apart.",
              "- Why the difference is small here: since (C_simple - C*) qd = 0 (table above), the "
              "extra torque is (C_simple - C*) qr_d = -(C_simple - C*)(q, qd) s, a skew "
              "(power-free, s^T T s = 0) feedback on the sliding variable s. It is large only "
              "while s is large (the initial 0.1 rad offset; see the contorsion panel) and it "
              "rotates s without changing V, which is paper 001's twisting effect; with this "
              f"reference (joint speeds up to {np.max(AMP * 2 * np.pi * FREQ):.1f} rad/s) and "
              "the damping K s dominating it, "
              "it leaves a small trace in tracking. Paper 001 Fig. 6 shows the effect with a "
              "large contorsion on a point mass (experiments/passivity.py reproduces it).",
              "- The parameter estimate converges only in the directions the motion excites: "
              "|pi~| / |pi| rises in the transient, then falls only slowly and stays near its "
              "initial value (of the 70 parameters only the base "
              "parameters are identifiable, and one sinusoid per joint does not excite all of "
              "them), while the torque prediction error Y pi~ on the actual motion falls.",
              "- The adaptive runs exceed the effort limits briefly during the initial transient "
              "(column max |tau| / effort; no saturation is simulated).", ""]
    lines += ["## Sampled adaptive loop: control rate and adaptation gain", "",
              "The continuous-time argument ignores sampling. Each pair below runs 1.5 s with "
              "the same set-up at a different step / adaptation gain, for the initial estimates "
              f"of seeds {', '.join(map(str, SEEDS))} (values per seed); 'torque rate' is the 99th "
              "percentile of |dtau/dt| after 0.5 s (the smooth runs sit near 60-100 N m/s), and "
              "`Gamma dt max sigma_max(Y)^2` is a crude loop gain of the Euler adaptation step "
              "(the largest change of `Y pi_hat` per step per unit s).", ""]
    lines += table(["dt [ms]", "Gamma", "regressor", "torque rate p99 per seed [N m/s]",
                    "RMS |e| 1-1.5 s per seed [rad]", "Gamma dt max sigma_max(Y)^2"], sweep)
    lines += ["", "Where the sampled loop is near its limit, a burst of chattering (torque rates "
              "of several hundred to a thousand N m/s, all joints) appears; compare the rows "
              "of the two regressors at equal (dt, Gamma). In these runs it is the C* regressor "
              "that chatters at the edge and the simple one that stays smooth, for every seed, "
              "although both have the same loop gain: the torsion feedback -(C_simple - C*) s is "
              "gyroscopic (power-free) and seems to damp the sampled-loop oscillation by coupling "
              "the joints (a hypothesis; not analysed here). This is the opposite of a reading "
              "of paper 001 in which torsion is what excites oscillations; paper 001's "
              "statement is about continuous time and trajectory twisting, which the main runs "
              "(below the sampling limit) show to be small for this arm and reference. The burst disappears at a higher "
              "rate or a lower gain; the main runs above use "
              f"dt = {DT * 1e3:g} ms, Gamma = {GAMMA:g}, checked to be free of it by the "
              "torque-rate column of the main table.", ""]
    lines += ["## Per-step cost of the controller", "",
              "One control step = regressor + `tau = Y pi_hat - K s` + adaptation update "
              "(medians of interleaved rounds, same load); the plant costs four `aba` per RK4 step.", ""]
    base = tim["compiled christoffel"]
    lines += table(["path", "per step [us]", "vs compiled christoffel"],
                   [[k, us(median(v)), f"{paired_ratio(v, base):.1f}x"] for k, v in tim.items()])
    lines += ["", f"Whole simulations (3 runs of {T:g} s at {DT * 1e3:g} ms, plus the diagnostics "
              "of every step: C* regressor, M, prediction error) ran on the compiled path.", ""]
    write(d, "adaptive_control.md", lines)


if __name__ == "__main__":
    main()
