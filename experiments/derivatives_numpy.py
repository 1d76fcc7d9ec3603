"""Derivatives of rigid-body dynamics with NumPy: IDSVA (paper 003 Alg. 1) against central finite
differences and CasADi AD, and the DMM / AZA choice in eq. (5) against n (paper 003 Sec. IV-E).

Models: paper 004's serial chain (revolute about local z, m = 1, l = 1, CoM mid-link, Izz = 1) and
a binary tree (branching factor 2) of revolute joints. Writes reports/derivatives_numpy.md and
reports/derivatives_numpy.png. Runs in a few minutes on 2 cores:

    python experiments/derivatives_numpy.py            # full
    python experiments/derivatives_numpy.py --quick    # smaller sizes

BLAS is pinned to one thread (the machine is shared), and times are CPU times (minimum over
repeats of a batch mean), the estimate least affected by other jobs.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402

import symdyn as D  # noqa: E402  (rnea/aba_derivatives, reference_*)
from provenance import cpu_name, report_provenance  # noqa: E402
from symdyn.algorithms.aba_derivatives import AUTO_CROSSOVER, aba_pass, aza  # noqa: E402
from symdyn.algorithms.common import entry, joint_kinematics  # noqa: E402
from symdyn.algorithms.rnea import rnea  # noqa: E402
from symdyn.algorithms.rnea_derivatives import idsva, rnea_derivatives  # noqa: E402
from symdyn.models import binary_tree, paper004_chain  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORTS = os.path.join(ROOT, "reports")




def cpu_time(fn, min_total=0.2, repeats=5):
    """Minimum over ``repeats`` of the mean CPU time of a batch sized to take ~min_total/repeats."""
    t0 = time.process_time()
    fn()
    one = time.process_time() - t0
    batch = max(1, int(min_total / repeats / max(one, 1e-9)))
    if one > min_total:  # slow calls: the first run and one more
        repeats, batch = 1, 1
    best = one
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(batch):
            fn()
        best = min(best, (time.process_time() - t0) / batch)
    return best


def state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_q(rng), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


def ad_function(model):
    """A prebuilt CasADi Function (q, dq, qd, qdd) -> (dtau/dq, dtau/dqd): jacobians of the generic
    rnea traced on SX (the 'ad' route without its tracing cost)."""
    Q, dQ = ca.SX.sym("q", model.nq), ca.SX.sym("dq", model.nv)
    V, A = ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    tau = rnea(model, D.integrate(model, Q, dQ, backend="casadi"), V, A, backend="casadi")
    return ca.Function("ad", [Q, dQ, V, A], [ca.jacobian(tau, dQ), ca.jacobian(tau, V)])


def idsva_function(model):
    """IDSVA traced once on CasADi SX: a Function (q, qd, qdd) -> (dtau/dq, dtau/dqd)."""
    Q, V, A = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    return ca.Function("idsva", [Q, V, A], list(rnea_derivatives(model, Q, V, A)))


def rel_err(X, R):
    return max(float(np.abs(x - r).max() / max(np.abs(r).max(), 1e-300)) for x, r in zip(X, R))


# --- part 1: IDSVA vs FD (vs AD) ------------------------------------------------------------------

def accuracy_speed(kind, sizes, log):
    rows = []
    for n in sizes:
        model = paper004_chain(n) if kind == "chain" else binary_tree(n)
        q, qd, qdd = state(model, n)
        ref = D.reference_rnea_derivatives(model, q, qd, qdd, method="ad")
        ids = rnea_derivatives(model, q, qd, qdd)
        fd = D.reference_rnea_derivatives(model, q, qd, qdd, method="fd")
        f, g = ad_function(model), idsva_function(model)
        args = (q, np.zeros(model.nv), qd, qdd)
        r = dict(n=n, nv=model.nv,
                 t_idsva=cpu_time(lambda: rnea_derivatives(model, q, qd, qdd)),
                 t_fd=cpu_time(lambda: D.reference_rnea_derivatives(model, q, qd, qdd, method="fd"), 0.5, 2),
                 t_ad=cpu_time(lambda: D.reference_rnea_derivatives(model, q, qd, qdd, method="ad"), 0.5, 2),
                 t_ad_eval=cpu_time(lambda: f(*args)),
                 t_idsva_sx=cpu_time(lambda: g(q, qd, qdd)),
                 ops_ad=f.n_instructions(), ops_idsva=g.n_instructions(),
                 t_rnea=cpu_time(lambda: rnea(model, q, qd, qdd)),
                 e_idsva=rel_err(ids, ref), e_fd=rel_err(fd, ref),
                 e_ad_fn=rel_err([np.array(x) for x in f(*args)], ref),
                 e_idsva_sx=rel_err([np.array(x) for x in g(q, qd, qdd)], ref))
        rows.append(r)
        log(f"  {kind:6s} n={n:4d}  IDSVA {r['t_idsva'] * 1e3:8.2f} ms  FD {r['t_fd'] * 1e3:9.1f} ms  "
            f"AD {r['t_ad'] * 1e3:8.1f} ms   SX eval: AD {r['t_ad_eval'] * 1e3:.2f} ms "
            f"IDSVA {r['t_idsva_sx'] * 1e3:.2f} ms  "
            f"err IDSVA {r['e_idsva']:.1e}  FD {r['e_fd']:.1e}")
    return rows


# --- part 2: DMM vs AZA ---------------------------------------------------------------------------

def ipr_setup(model, seed):
    q, qd, tau = state(model, seed)
    B, (qs, qds, taus) = entry(model, ("q", q, "q"), ("qd", qd, "v"), ("tau", tau, "v"))
    Xup, S = joint_kinematics(B, model, qs)
    fx = [None] * model.N
    qdd, U, Dinv = aba_pass(B, model, qs, qds, taus, fx, Xup, S)
    dq, dqd = idsva(B, model, qds, qdd, fx, Xup, S)
    n = model.nv

    def dmm():  # M^-1 by AZA on the identity, then the two O(n^3) products
        Minv = aza(B, model, Xup, S, U, Dinv, np.eye(n))
        return -(Minv @ dq), -(Minv @ dqd), Minv

    def aza_():  # AZA on [I, dtau/dq, dtau/dqd]
        return aza(B, model, Xup, S, U, Dinv, np.hstack([np.eye(n), dq, dqd]))

    return dmm, aza_, (q, qd, tau)


def dmm_vs_aza(kind, sizes, log):
    rows = []
    for n in sizes:
        model = paper004_chain(n) if kind == "chain" else binary_tree(n)
        dmm, aza_, (q, qd, tau) = ipr_setup(model, n)
        r = dict(n=n, t_dmm=cpu_time(dmm), t_aza=cpu_time(aza_),
                 t_full_dmm=cpu_time(lambda: D.aba_derivatives(model, q, qd, tau, method="dmm")),
                 t_full_aza=cpu_time(lambda: D.aba_derivatives(model, q, qd, tau, method="aza")))
        rows.append(r)
        log(f"  {kind:6s} n={n:4d}  IPR: DMM {r['t_dmm'] * 1e3:8.2f} ms  AZA {r['t_aza'] * 1e3:8.2f} ms"
            f"   full: DMM {r['t_full_dmm'] * 1e3:8.2f} ms  AZA {r['t_full_aza'] * 1e3:8.2f} ms")
    return rows


def casadi_ipr(sizes, log):
    """SX graphs of the IPR step for the chain: operation count and VM evaluation time."""
    rows = []
    for n in sizes:
        model = paper004_chain(n)
        Q, Dm = ca.SX.sym("q", n), ca.SX.sym("D", n, 2 * n)
        B, (qs, qds, taus) = entry(model, ("q", Q, "q"), ("qd", np.zeros(n), "v"),
                                   ("tau", np.zeros(n), "v"))
        Xup, S = joint_kinematics(B, model, qs)
        _, U, Dinv = aba_pass(B, model, qs, qds, taus, [None] * model.N, Xup, S)
        Minv = aza(B, model, Xup, S, U, Dinv, ca.SX.eye(n))
        fd = ca.Function("dmm", [Q, Dm], [-(Minv @ Dm), Minv])
        fa = ca.Function("aza", [Q, Dm], [aza(B, model, Xup, S, U, Dinv, ca.horzcat(ca.SX.eye(n), Dm))])
        rng = np.random.default_rng(n)
        args = (paper004_chain(n).random_q(rng), rng.normal(size=(n, 2 * n)))
        r = dict(n=n, ops_dmm=fd.n_instructions(), ops_aza=fa.n_instructions(),
                 t_dmm=cpu_time(lambda: fd(*args)), t_aza=cpu_time(lambda: fa(*args)))
        rows.append(r)
        log(f"  casadi n={n:4d}  ops DMM {r['ops_dmm']:9d}  AZA {r['ops_aza']:9d}   "
            f"VM eval DMM {r['t_dmm'] * 1e3:8.2f} ms  AZA {r['t_aza'] * 1e3:8.2f} ms")
    return rows


def crossover(rows, a="t_dmm", b="t_aza"):
    """Smallest n of the sweep from which AZA (b) is faster than DMM (a) at every larger n."""
    for k, r in enumerate(rows):
        if all(s[b] < s[a] for s in rows[k:]):
            return r["n"]
    return None


# --- report ----------------------------------------------------------------------------------------

def plot(acc, ipr, cas, path):
    from _common import pyplot  # matplotlib is optional: a clear message when it is missing

    plt = pyplot(style=False)

    fig, ax = plt.subplots(1, 3, figsize=(16, 4.6))
    for kind, ls in (("chain", "-"), ("binary", "--")):
        rows = acc[kind]
        n = [r["nv"] for r in rows]
        ax[0].loglog(n, [r["t_idsva"] for r in rows], "o" + ls, color="C0", label=f"IDSVA ({kind})")
        ax[0].loglog(n, [r["t_fd"] for r in rows], "s" + ls, color="C3", label=f"central FD ({kind})")
        ax[0].loglog(n, [r["t_ad"] for r in rows], "^" + ls, color="C2", label=f"AD trace+eval ({kind})")
        ax[0].loglog(n, [r["t_ad_eval"] for r in rows], "v" + ls, color="C1",
                     label=f"AD, SX Function eval ({kind})")
        ax[0].loglog(n, [r["t_idsva_sx"] for r in rows], "D" + ls, color="C9",
                     label=f"IDSVA, SX Function eval ({kind})")
        ax[1].loglog(n, [max(r["e_idsva"], 1e-17) for r in rows], "o" + ls, color="C0",
                     label=f"IDSVA ({kind})")
        ax[1].loglog(n, [r["e_fd"] for r in rows], "s" + ls, color="C3", label=f"central FD ({kind})")
        rows = ipr[kind]
        n = [r["n"] for r in rows]
        ax[2].loglog(n, [r["t_dmm"] for r in rows], "o" + ls, color="C4", label=f"DMM NumPy ({kind})")
        ax[2].loglog(n, [r["t_aza"] for r in rows], "s" + ls, color="C5", label=f"AZA NumPy ({kind})")
    if cas:
        n = [r["n"] for r in cas]
        ax[2].loglog(n, [r["t_dmm"] for r in cas], "o:", color="C7", label="DMM CasADi SX VM (chain)")
        ax[2].loglog(n, [r["t_aza"] for r in cas], "s:", color="C8", label="AZA CasADi SX VM (chain)")
    ax[0].set(xlabel="n (DoF)", ylabel="CPU time per call [s]", title="dtau/dq, dtau/dqd with NumPy")
    ax[1].set(xlabel="n (DoF)", ylabel="max |err| / max |AD|", title="error against CasADi AD")
    ax[2].set(xlabel="n (DoF)", ylabel="CPU time [s]",
              title="eq. (5) step: -M^-1 [dtau/dq, dtau/dqd], M^-1")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(rows, cols, fmt):
    head = "| " + " | ".join(c for c, _ in cols) + " |"
    sep = "|" + "|".join("---:" for _ in cols) + "|"
    body = ["| " + " | ".join(fmt[k](r[k]) if k in fmt else str(r[k]) for _, k in cols) + " |"
            for r in rows]
    return "\n".join([head, sep, *body])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--out-dir", default=REPORTS, metavar="DIR",
                    help="where the report and figure go (default: reports/)")
    args = ap.parse_args(argv)
    quick = args.quick
    chain_sizes = [2, 5, 10, 20, 50] if quick else [2, 5, 10, 20, 50, 100]
    tree_sizes = [3, 7, 15, 31] if quick else [3, 7, 15, 31, 63, 127]
    ipr_sizes = [5, 10, 20, 50, 100] if quick else [5, 10, 20, 50, 100, 150, 200, 300, 400]
    cas_sizes = [5, 10, 20] if quick else [5, 10, 20, 30, 50, 80]
    t_start = time.time()
    log = print
    log("IDSVA vs finite differences vs AD (NumPy):")
    acc = {"chain": accuracy_speed("chain", chain_sizes, log),
           "binary": accuracy_speed("binary", tree_sizes, log)}
    log("eq. (5): DMM vs AZA (NumPy):")
    ipr = {"chain": dmm_vs_aza("chain", ipr_sizes, log), "binary": dmm_vs_aza("binary", ipr_sizes, log)}
    log("eq. (5): DMM vs AZA (CasADi SX graph):")
    cas = casadi_ipr(cas_sizes, log)
    x_np = {k: crossover(v) for k, v in ipr.items()}
    ipr_share = max((r["t_dmm"] / r["t_full_dmm"] for v in ipr.values() for r in v
                     if r.get("t_full_dmm")), default=float("nan"))
    x_ca = crossover(cas)
    x_ops = crossover(cas, "ops_dmm", "ops_aza")     # n from which AZA has fewer operations
    elapsed = time.time() - t_start
    os.makedirs(args.out_dir, exist_ok=True)
    png = os.path.join(args.out_dir, "derivatives_numpy.png")
    plot(acc, ipr, cas, png)

    ms = lambda x: f"{x * 1e3:.3g}"  # noqa: E731
    e = lambda x: f"{x:.1e}"  # noqa: E731
    fmt = {k: ms for k in ("t_idsva", "t_fd", "t_ad", "t_ad_eval", "t_idsva_sx", "t_rnea", "t_dmm",
                           "t_aza", "t_full_dmm", "t_full_aza")}
    fmt.update({k: e for k in ("e_idsva", "e_fd", "e_ad_fn", "e_idsva_sx")})
    acc_cols = [("n", "nv"), ("RNEA [ms]", "t_rnea"), ("IDSVA [ms]", "t_idsva"),
                ("central FD [ms]", "t_fd"), ("AD trace+eval [ms]", "t_ad"), ("err IDSVA", "e_idsva"),
                ("err FD", "e_fd")]
    sx_cols = [("n", "nv"), ("SX ops AD", "ops_ad"), ("SX ops IDSVA", "ops_idsva"),
               ("VM eval AD [ms]", "t_ad_eval"), ("VM eval IDSVA [ms]", "t_idsva_sx"),
               ("err IDSVA SX", "e_idsva_sx")]
    ipr_cols = [("n", "n"), ("IPR DMM [ms]", "t_dmm"), ("IPR AZA [ms]", "t_aza"),
                ("aba_derivatives dmm [ms]", "t_full_dmm"), ("aba_derivatives aza [ms]", "t_full_aza")]
    cas_cols = [("n", "n"), ("SX ops DMM", "ops_dmm"), ("SX ops AZA", "ops_aza"),
                ("VM eval DMM [ms]", "t_dmm"), ("VM eval AZA [ms]", "t_aza")]
    fd_speed = {k: v[-1]["t_fd"] / v[-1]["t_idsva"] for k, v in acc.items()}
    sx_speed = {k: v[-1]["t_ad_eval"] / v[-1]["t_idsva_sx"] for k, v in acc.items()}
    big = {k: v[-1] for k, v in ipr.items()}
    no_cross = x_np["chain"] is None and x_np["binary"] is None
    np_cross = ("no crossover in the sweep: DMM is faster at every n up to "
                f"{big['chain']['n']} (chain: DMM {ms(big['chain']['t_dmm'])} ms vs AZA "
                f"{ms(big['chain']['t_aza'])} ms; binary: {ms(big['binary']['t_dmm'])} vs "
                f"{ms(big['binary']['t_aza'])} ms)") if no_cross \
        else f"crossover chain n = {x_np['chain']}, binary tree n = {x_np['binary']}"
    lines = [
        "# Derivatives of rigid-body dynamics with NumPy: IDSVA vs finite differences, DMM vs AZA",
        "",
        f"Generated by `python experiments/derivatives_numpy.py{' --quick' if quick else ''}` "
        f"({elapsed:.0f} s) on {cpu_name()}, {os.cpu_count()} cores shared with other jobs, "
        f"Python {platform.python_version()}, NumPy {np.__version__}, CasADi {ca.__version__}, "
        "BLAS pinned to 1 thread. Times are CPU times, minimum over repeats of a batch mean.",
        "",
        *report_provenance(ROOT, "derivatives_numpy.py"),
        "Models: paper 004's serial chain (`symdyn.models.paper004_chain`: revolute about local z, "
        "m = 1 kg, l = 1 m, CoM mid-link, Izz = 1 kg m^2, gravity in the plane) and a binary tree of "
        "revolute joints (`binary_tree`). States: random angles, qd and qdd uniform in [-1, 1].",
        "",
        "## IDSVA vs finite differences (NumPy)",
        "",
        "`rnea_derivatives` (IDSVA, paper 003 Alg. 1, NumPy) against `symdyn."
        "reference_rnea_derivatives(method=\"fd\")` (central differences of the NumPy RNEA: 4 nv RNEA calls, "
        "step eps^(1/3)) and `method=\"ad\"` (traces RNEA on CasADi SX, differentiates, evaluates). "
        "Errors: max |X - AD| / max |AD| over both matrices.",
        "",
        "Serial chain (paper 004):",
        "",
        table(acc["chain"], acc_cols, fmt),
        "",
        "Binary tree:",
        "",
        table(acc["binary"], acc_cols, fmt),
        "",
        f"At the largest sizes NumPy IDSVA is {fd_speed['chain']:.0f}x (chain, n = "
        f"{acc['chain'][-1]['nv']}) and {fd_speed['binary']:.0f}x (binary tree, n = "
        f"{acc['binary'][-1]['nv']}) faster than central differences and agrees with AD to rounding, "
        "where differences keep only about two thirds of the digits (error ~ eps^(2/3)). IDSVA is "
        "O(N d) in flops, but with NumPy its time is dominated by the per-call overhead of small-array "
        "operations, about 3x one RNEA (O(N) calls: forward pass, and one product per body over the "
        "stacked columns of its subtree in the backward pass), so it grows ~linearly here.",
        "",
        "Same algorithms as CasADi SX Functions, evaluated in CasADi's virtual machine (no Python "
        "per operation; the compiled-C comparison is the code-generation issue's): AD = jacobians "
        "of the traced RNEA (tangent space), IDSVA = Algorithm 1 traced once.",
        "",
        "Serial chain:",
        "",
        table(acc["chain"], sx_cols, fmt),
        "",
        "Binary tree:",
        "",
        table(acc["binary"], sx_cols, fmt),
        "",
        f"In the same VM the IDSVA graph evaluates {sx_speed['chain']:.1f}x (chain, n = "
        f"{acc['chain'][-1]['nv']}) and {sx_speed['binary']:.1f}x (binary tree, n = "
        f"{acc['binary'][-1]['nv']}) faster than the AD graph.",
        "",
        "## Eq. (5): DMM vs AZA",
        "",
        "The 'IPR' columns time only the step after IDSVA: DMM = M^-1 by AZA on the identity, then "
        "-M^-1 dtau/dq and -M^-1 dtau/dqd by two BLAS products (O(n^3)); AZA = AZA on [I, dtau/dq, "
        "dtau/dqd] (3n columns in one pass over the bodies, reusing the kinematics and articulated "
        "inertias of one ABA pass, O(N n)). The full `aba_derivatives` (ABA pass + IDSVA + IPR) is "
        "shown too.",
        "",
        "Serial chain:",
        "",
        table(ipr["chain"], ipr_cols, fmt),
        "",
        "Binary tree:",
        "",
        table(ipr["binary"], ipr_cols, fmt),
        "",
        f"NumPy: {np_cross}. With NumPy the O(n^3) product runs in one BLAS call while AZA is a Python "
        "loop over bodies on 6 x 3n blocks that are streamed through memory several times per body; "
        "the cubic term does not catch up in the practical range"
        + (", and `method=\"auto\"` uses DMM with NumPy" if AUTO_CROSSOVER.get("numeric") is None
           else f"; `method=\"auto\"` switches to AZA from n = {AUTO_CROSSOVER['numeric']} with "
           "NumPy")
        + f" (the IPR step with DMM is at most {ipr_share:.0%} of `aba_derivatives` in this sweep).",
        "",
        "CasADi SX graphs of the same IPR step (chain; inputs q and a symbolic n x 2n matrix in "
        "place of [dtau/dq, dtau/dqd]): operation count and evaluation in CasADi's VM:",
        "",
        table(cas, cas_cols, fmt),
        "",
        f"CasADi: AZA evaluates faster from n = {x_ca} on and has fewer operations from n = "
        f"{x_ops} on (smallest swept n from which it stays so); operation counts grow as n^3 "
        "(DMM) against n^2 (AZA). "
        + (f"`method=\"auto\"` uses AZA from n = {AUTO_CROSSOVER.get('graph')} on with "
           "expression graphs (CasADi, SymPy/SymEngine, whose expression size follows the same "
           "operation count)" if AUTO_CROSSOVER.get("graph") is not None else
           "`method=\"auto\"` keeps DMM with expression graphs")
        + (", the crossover measured here." if AUTO_CROSSOVER.get("graph") == x_ca else
           f"; the crossover measured here in CasADi's VM is n = {x_ca}, and the compiled-C "
           "crossover is measured in derivatives_compiled.md (the threshold serves both)."),
        "",
        "![derivatives](derivatives_numpy.png)",
        "",
    ]
    with open(os.path.join(args.out_dir, "derivatives_numpy.md"), "w") as fh:
        fh.write("\n".join(lines))
    log(f"crossover NumPy {x_np}, CasADi {x_ca}; wrote reports/derivatives_numpy.md ({elapsed:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
