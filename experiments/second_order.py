"""Second-order derivatives of inverse and forward dynamics (SO-IDSVA, Singh, Russell & Wensing,
arXiv 2203.01497 and 2302.06001), compiled, against compiled CasADi AD of symdyn's own rnea / aba.

For each model: ``symdyn.codegen.build(model, ["rnea_second_derivatives"])`` (and
``aba_second_derivatives``) against CasADi AD of ``casadi_function(model, "rnea" | "aba",
layout="numpy")`` differentiated twice into the same four rank-3 tensors, generated with CasADi's
CodeGenerator and compiled with the flags symdyn's build chooses for a function of that size
(``symdyn.codegen.compiler.choose_opt`` plus ``-march=native``). Per call: medians over
interleaved rounds in one process (symdyn's call returns fresh arrays; the AD call copies the inputs
into preallocated buffers through ctypes, whose overhead is measured on an identity function).
Each build runs in a child process with an empty cache; its wall time, CPU time and peak memory
(``os.wait4`` of the child: the largest of the Python builder and gcc) are recorded.

Writes second_order.md and second_order.png.

    python experiments/second_order.py --budget 2700   # FULL_PLAN (~35 min)
    python experiments/second_order.py --quick          # chains N = 2, 3, rnea only (~1 min)

The full preset measures the (derivatives, model) pairs of ``FULL_PLAN`` in that order (chains
N = 5, 10, 20, 40, ur5, talos, solo12), builds the unrolled AD graphs up to nv =
``FULL_AD_MAX_NV`` and the mapped AD (``ad_map_function``) above it, and stops a build
after ``--timeout`` seconds; pairs left when ``--budget`` runs out are listed as not run.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (command, fit_slope, header, interleaved, log, median, out_dir,
                     paired_ratio, parser, pyplot, save, sci, table, us, write)

import numpy as np  # noqa: E402

ALGS = {"rnea": ("rnea_second_derivatives", ("d2tau_dq2", "d2tau_dqd2", "d2tau_dq_dqd", "dM_dq")),
        "aba": ("aba_second_derivatives", ("d2qdd_dq2", "d2qdd_dqd2", "d2qdd_dq_dqd", "dMinv_dq"))}
AD_MODES = ("jac_jac", "fwd_over_rev", "fwd_over_fwd")
MAP_MODE = "fwd_over_rev map"     # ad_map_function: above --ad-max-nv, where the graphs do not build
FULL_N, QUICK_N = [5, 10, 20, 40], [2, 3]
FULL_ROBOTS, QUICK_ROBOTS = ["ur5", "talos", "solo12"], []
FULL_PLAN = [("rnea", "chain5"), ("rnea", "chain10"), ("rnea", "ur5"), ("rnea", "talos"),
             ("aba", "chain5"), ("aba", "ur5"), ("aba", "talos"), ("rnea", "chain20"),
             ("rnea", "solo12"), ("aba", "chain10"), ("aba", "solo12"), ("aba", "chain20"),
             ("rnea", "chain40"), ("aba", "chain40")]
FULL_AD_MAX_NV = 12   # unrolled AD builds above this nv take longer than the preset's timeout
PAPER = {"ID_us": 200.0, "FD_ms": 2.1, "robot": "ATLAS (36 DoF)", "ref": "arXiv 2302.06001"}


# --- models --------------------------------------------------------------------------------------

def make_model(spec: str):
    """``chain<N>`` -> serial_chain(N, seed=1); otherwise a robot of ``sd.load_robot``."""
    from symdyn.models import serial_chain

    if spec.startswith("chain"):
        return serial_chain(int(spec[5:]), seed=1)
    import symdyn as sd

    return sd.load_robot(spec)


# --- CasADi AD of symdyn's rnea / aba --------------------------------------------------------------

def ad_function(model, alg: str, mode: str = "jac_jac"):
    """CasADi Function (q, qd, x) -> four (nv*nv, nv) matrices: AD of ``casadi_function(model,
    alg, layout="numpy")`` (x = qdd for rnea, tau for aba), in the convention of
    ``rnea_second_derivatives`` after ``reshape(nv, nv, nv, order="F")``. q-derivatives are taken
    along ``(q (+) e_k) (+) e_j`` at zero (tangent space), the perturbations then substituted by 0.

    ``mode``: ``jac_jac`` (``casadi.jacobian`` twice; CasADi picks forward or reverse),
    ``fwd_over_rev`` (inner Jacobian in reverse mode, outer in forward mode) or
    ``fwd_over_fwd`` (both forward)."""
    import casadi as ca

    from symdyn.algorithms.configuration import integrate
    from symdyn.codegen import casadi_function

    if mode not in AD_MODES:
        raise ValueError(f"unknown AD mode {mode!r}; choose from {', '.join(AD_MODES)}")
    nv = model.nv
    F = casadi_function(model, alg, layout="numpy")
    q0 = ca.SX.sym("q", model.nq)
    ej, ek = ca.SX.sym("ej", nv), ca.SX.sym("ek", nv)
    v, x = ca.SX.sym("v", nv), ca.SX.sym("x", nv)
    q1 = integrate(model, q0, ek, backend="casadi")
    y = F(integrate(model, q1, ej, backend="casadi"), v, x)
    inner = {"jac_jac": {}, "fwd_over_rev": {"allow_forward": False},
             "fwd_over_fwd": {"allow_reverse": False}}[mode]
    outer = {} if mode == "jac_jac" else {"allow_reverse": False}

    def jac(e, a, opts):
        return ca.jacobian(e, a, opts) if opts else ca.jacobian(e, a)

    dy_dq = ca.vec(jac(y, ej, inner))
    outs = [jac(dy_dq, ek, outer), jac(ca.vec(jac(y, v, inner)), v, outer),
            jac(dy_dq, v, outer), jac(ca.vec(jac(y, x, inner)), ek, outer)]
    z = ca.DM.zeros(nv)
    outs = ca.substitute([ca.densify(o) for o in outs], [ej, ek], [z, z])
    return ca.Function(f"ad_{alg}_{mode}", [q0, v, x], outs, {"cse": True})


def ad_map_function(model, alg: str):
    """CasADi AD that builds at every size: one forward-over-reverse sweep of ``casadi_function(
    model, alg, layout="numpy")`` (output weight ``w``, one direction along ``(q (+) e_k, qd)``) as
    an SX kernel, mapped over the nv^2 pairs (output i, direction k) by ``Function.map(...,
    "serial")`` (a loop in C, not nv^2 inlined copies). Returns the four tensors as (nv, nv^2)
    matrices: column ``i + nv k`` holds ``[i, :, k]`` (``reshape(nv, nv, nv, order="F")
    .transpose(1, 0, 2)`` gives the ``[i, j, k]`` layout). More operations than the unrolled
    graphs (no subexpression shared across pairs), a kernel of a few times rnea's size."""
    import casadi as ca

    from symdyn.algorithms.configuration import integrate
    from symdyn.codegen import casadi_function

    nv = model.nv
    F = casadi_function(model, alg, layout="numpy")
    q0 = ca.SX.sym("q", model.nq)
    ej, ek = ca.SX.sym("ej", nv), ca.SX.sym("ek", nv)
    v, x, w, e = (ca.SX.sym(n, nv) for n in ("v", "x", "w", "e"))
    y = F(integrate(model, integrate(model, q0, ek, backend="casadi"), ej, backend="casadi"), v, x)
    g = ca.gradient(ca.dot(w, y), ca.vertcat(ej, v, x))            # row i of the Jacobians
    gq, gv, gx = g[:nv], g[nv:2 * nv], g[2 * nv:]
    zero = ca.DM.zeros(nv)
    along_q = ca.jtimes(ca.vertcat(gq, gx), ek, e)                  # d/dq_k: d2y_dq2, dM_dq
    along_v = ca.jtimes(ca.vertcat(gq, gv), v, e)                   # d/dqd_k: dq_dqd, dqd2
    outs = [along_q[:nv], along_v[nv:], along_v[:nv], along_q[nv:]]
    outs = ca.substitute([ca.densify(o) for o in outs], [ej, ek], [zero, zero])
    kernel = ca.Function(f"ad_{alg}_pair", [q0, v, x, w, e], outs, {"cse": True})
    pairs = kernel.map(f"ad_{alg}_pairs", "serial", nv * nv, [0, 1, 2], [])
    W = ca.DM(np.kron(np.ones((1, nv)), np.eye(nv)))               # column i + nv k: e_i
    E = ca.DM(np.kron(np.eye(nv), np.ones((1, nv))))               # column i + nv k: e_k
    Q0, V, X = ca.MX.sym("q", model.nq), ca.MX.sym("v", nv), ca.MX.sym("x", nv)
    return ca.Function(f"ad_{alg}_map", [Q0, V, X], pairs(Q0, V, X, W, E)), kernel


def ad_instructions(model, alg: str) -> dict:
    """SX instructions of each AD mode (the smallest is compiled)."""
    return {m: int(ad_function(model, alg, m).n_instructions()) for m in AD_MODES}


def compile_casadi(f, directory: Path) -> dict:
    """Generate C for ``f`` and compile it into a shared library with symdyn's flag policy."""
    import casadi as ca

    from symdyn.codegen.compiler import choose_opt, compiler_info, native_target

    directory.mkdir(parents=True, exist_ok=True)
    name = f.name()
    cg = ca.CodeGenerator(f"{name}.c", {"with_header": False, "casadi_int": "long long"})
    cg.add(f)
    cg.generate(str(directory) + "/")
    n_out = sum(f.nnz_out(i) for i in range(f.n_out()))
    cc = compiler_info()[0]
    flags = [choose_opt(int(f.n_instructions()), n_out), *native_target(cc)[0]]
    so = directory / f"lib{name}.so"
    subprocess.run([cc, *flags, "-fPIC", "-shared", f"{name}.c", "-o", so.name, "-lm"],
                   cwd=directory, check=True, capture_output=True)
    return {"library": str(so), "symbol": name, "flags": flags,
            "n_instructions": int(f.n_instructions()), "sz_w": int(f.sz_w()),
            "sz_iw": int(f.sz_iw()), "sz_arg": int(f.sz_arg()), "sz_res": int(f.sz_res()),
            "nnz_in": [int(f.nnz_in(i)) for i in range(f.n_in())],
            "nnz_out": [int(f.nnz_out(i)) for i in range(f.n_out())]}


class RawCall:
    """A CasADi-signature C function (``int f(const double** arg, double** res, long long* iw,
    double* w, int mem)``, as CasADi's CodeGenerator writes it and as symdyn's libraries export
    it) called through ctypes with preallocated buffers: ``f(*inputs)`` copies the inputs in and
    returns the (reused) output buffers. symdyn's function and the AD one are timed through this
    same wrapper."""

    def __init__(self, library: str, symbol: str, nnz_in, nnz_out):
        self._lib = ctypes.CDLL(library)
        fn = getattr(self._lib, symbol)
        work = getattr(self._lib, f"{symbol}_work")
        ll = ctypes.c_longlong
        work.argtypes = [ctypes.POINTER(ll)] * 4
        sizes = [ll() for _ in range(4)]
        if work(*[ctypes.byref(x) for x in sizes]):
            raise RuntimeError(f"{symbol}_work failed")
        sz_arg, sz_res, sz_iw, sz_w = (max(int(x.value), 1) for x in sizes)
        self.ins = [np.zeros(int(n)) for n in nnz_in]
        self.outs = [np.zeros(int(n)) for n in nnz_out]
        self._w, self._iw = np.zeros(sz_w), np.zeros(sz_iw, dtype=np.int64)
        arg = (ctypes.c_void_p * sz_arg)(*[a.ctypes.data for a in self.ins])
        res = (ctypes.c_void_p * sz_res)(*[a.ctypes.data for a in self.outs])
        fn.argtypes, fn.restype = None, ctypes.c_int
        self._fn, self.symbol = fn, symbol
        self._args = (arg, res, ctypes.c_void_p(self._iw.ctypes.data),
                      ctypes.c_void_p(self._w.ctypes.data), ctypes.c_int(0))

    def __call__(self, *inputs):
        for buf, x in zip(self.ins, inputs):
            buf[:] = x
        if self._fn(*self._args):
            raise RuntimeError(f"{self.symbol} failed")
        return self.outs

    @classmethod
    def casadi(cls, info: dict) -> "RawCall":
        return cls(info["library"], info["symbol"], info["nnz_in"], info["nnz_out"])

    @classmethod
    def symdyn(cls, lib, f) -> "RawCall":
        """The C function behind ``f = lib[name]`` of a build ``lib``."""
        return cls(str(lib.library), f.symbol, [s[0] for s in f.input_shapes],
                   [int(np.prod(s)) for s in f.output_shapes])


# --- builds in child processes -----------------------------------------------------------------------

def build_child(kind: str, spec: str, alg: str, directory: str) -> None:
    """Child process: one cold build; prints its record as JSON on the last line."""
    model = make_model(spec)
    t0 = time.perf_counter()
    if kind == "symdyn":
        from symdyn.codegen import build

        lib = build(model, [ALGS[alg][0]], cache_dir=directory)
        f = lib[ALGS[alg][0]]
        rec = {"n_instructions": f.stats.get("n_instructions"), "flags": f.stats.get("cflags"),
               "form": f.meta.get("form", "unrolled")}
    elif kind == "admap":
        f, kernel = ad_map_function(model, alg)
        rec = compile_casadi(f, Path(directory))
        rec.update(mode=MAP_MODE, counts={MAP_MODE: int(kernel.n_instructions())},
                   layout="map")
    else:
        counts = ad_instructions(model, alg)
        mode = min(counts, key=counts.get)
        rec = compile_casadi(ad_function(model, alg, mode), Path(directory))
        rec.update(mode=mode, counts=counts)
    rec["t_inside"] = time.perf_counter() - t0
    print(json.dumps(rec))


def run_child(kind: str, spec: str, alg: str, directory: Path, timeout: float) -> dict:
    """Run :func:`build_child` in a child process (its own process group, killed after
    ``timeout`` s: RuntimeError); adds wall, CPU (child and its compilers) and peak resident
    memory (MB, the largest process) from ``os.wait4``."""
    directory.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--build-child", kind, spec, alg, str(directory)]
    t0 = time.perf_counter()
    with open(directory / "child.out", "w") as fo, open(directory / "child.err", "w") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, start_new_session=True)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                os.killpg(p.pid, signal.SIGKILL)
                os.wait4(p.pid, 0)
                raise RuntimeError(f"{kind} build over {timeout:.0f} s (stopped)")
            time.sleep(0.2)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        err = (directory / "child.err").read_text()[-3000:]
        raise RuntimeError(f"{kind} build failed: {err.strip().splitlines()[-1] if err else ''}")
    rec = json.loads((directory / "child.out").read_text().strip().splitlines()[-1])
    rec.update(t_wall=wall, cpu=ru.ru_utime + ru.ru_stime, maxrss_mb=ru.ru_maxrss / 1024.0)
    return rec


# --- one model ---------------------------------------------------------------------------------------

def rel_diff(X, R) -> float:
    """max |X - R| / max |R| over a tuple of tensors."""
    return max(float(np.abs(np.asarray(x) - r).max()) for x, r in zip(X, R)) / max(
        float(np.abs(r).max()) for r in R)


def identity_overhead(directory: Path) -> float:
    """Per-call seconds of the ctypes wrapper around a compiled identity function (nv = 3)."""
    import casadi as ca

    x = ca.SX.sym("x", 3)
    f = RawCall.casadi(compile_casadi(ca.Function("ad_identity", [x], [x]), directory))
    z = np.zeros(3)
    return median(interleaved([lambda: f(z)], repeat=7)[0])


def measure(spec: str, alg: str, work: Path, rng, states: int, repeat: int,
            timeout: float, ad_max_nv: int | None = None) -> dict:
    """One model and one of rnea / aba: cold builds, agreement, per-call times. The AD columns
    are None when the AD build does not finish (``r["ad_note"]`` says why)."""
    from symdyn.codegen import build

    model = make_model(spec)
    nv, name = model.nv, ALGS[alg][0]
    d_sd, d_ad = work / f"{spec}_{alg}_symdyn", work / f"{spec}_{alg}_ad"
    log(f"{spec} {alg}: building symdyn's {name} (child process, empty cache)")
    b_sd = run_child("symdyn", spec, alg, d_sd, timeout)
    log(f"{spec} {alg}: {b_sd['t_wall']:.1f} s, {b_sd['maxrss_mb']:.0f} MB; building AD")
    r = {"model": spec, "nv": nv, "alg": alg, "b_sd": b_sd, "b_ad": None, "t_ad": None,
         "ratio": None, "err": None, "ad_note": "", "floating": bool(model.is_floating)}
    try:
        mapped = ad_max_nv is not None and nv > ad_max_nv
        r["b_ad"] = run_child("admap" if mapped else "ad", spec, alg, d_ad, timeout)
        if mapped:
            r["ad_note"] = (f"{MAP_MODE}: nv = {nv} > {ad_max_nv} (--ad-max-nv), where the "
                            "unrolled AD graphs take longer to build than the timeout")
        log(f"{spec} {alg}: AD {r['b_ad']['mode']} {r['b_ad']['t_wall']:.1f} s")
    except RuntimeError as exc:
        r["ad_note"] = str(exc)
        log(f"{spec} {alg}: AD not built ({exc})")
    lib = build(model, [name], cache_dir=d_sd)     # a cache hit of the child's build
    f_sd = lib[name]
    f_raw = RawCall.symdyn(lib, f_sd)
    f_ad = RawCall.casadi(r["b_ad"]) if r["b_ad"] else None
    err = 0.0
    for _ in range(states):
        q, v, x = model.random_q(rng), rng.uniform(-1, 1, nv), rng.uniform(-1, 1, nv)
        mine = f_sd(q, v, x)
        raw = f_raw(q, v, x)     # the raw C function writes the same entries
        assert rel_diff([np.sort(o) for o in raw], [np.sort(o.ravel()) for o in mine]) < 1e-12
        if f_ad:
            ref = [np.array(o).reshape(nv, nv, nv, order="F") for o in f_ad(q, v, x)]
            if r["b_ad"].get("layout") == "map":          # columns i + nv k hold [i, :, k]
                ref = [o.transpose(1, 0, 2) for o in ref]
            err = max(err, rel_diff(mine, ref))
    q, v, x = model.random_q(rng), rng.uniform(-1, 1, nv), rng.uniform(-1, 1, nv)
    fns = [lambda: f_raw(q, v, x), lambda: f_sd(q, v, x)] + ([lambda: f_ad(q, v, x)] if f_ad
                                                               else [])
    ts = interleaved(fns, repeat=repeat)
    r.update(t_sd=median(ts[0]), t_api=median(ts[1]))
    if f_ad:
        r.update(t_ad=median(ts[2]), ratio=paired_ratio(ts[2], ts[0]), err=err)
    log(f"{spec} {alg}: symdyn {us(r['t_sd'])} us, AD {us(r['t_ad'])} us, AD/symdyn "
        f"{r['ratio'] or float('nan'):.2f}, max rel diff {sci(r['err'])}")
    return r


# --- report ---------------------------------------------------------------------------------------

def plot(rows, directory):
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for a, alg in zip(ax, ALGS):
        ch = sorted((r for r in rows if r["alg"] == alg and r["model"].startswith("chain")),
                    key=lambda r: r["nv"])
        if not ch:
            a.set_visible(False)
            continue
        a.loglog([r["nv"] for r in ch], [r["t_sd"] * 1e6 for r in ch], "o-",
                 label=f"symdyn {ALGS[alg][0]}")
        ad = [r for r in ch if r["t_ad"]]
        a.loglog([r["nv"] for r in ad], [r["t_ad"] * 1e6 for r in ad], "s--",
                 label="CasADi AD, compiled")
        a.set_xlabel("N (serial_chain(N, seed=1))")
        a.set_ylabel("time per call (us)")
        a.set_title(f"second-order {'ID' if alg == 'rnea' else 'FD'}")
        a.legend()
    return save(fig, directory, "second_order.png")


def ad_build_cells(b) -> list[str]:
    if not b:
        return ["-"] * 4
    counts = f"{b['counts'][MAP_MODE]} (kernel, nv^2 calls)" if MAP_MODE in b["counts"] else \
        " / ".join(str(b["counts"][m]) for m in AD_MODES)
    return [counts, " ".join(b["flags"]),
            f"{b['t_wall']:.1f} / {b['cpu']:.1f}", f"{b['maxrss_mb']:.0f}"]


def slopes(rows, alg, key):
    ch = [r for r in rows if r["alg"] == alg and r["model"].startswith("chain") and r[key]]
    return fit_slope([r["nv"] for r in ch], [r[key] for r in ch]) if len(ch) > 1 else float("nan")


def pinocchio_note() -> str:
    try:
        import pinocchio as pin
    except ImportError:
        return "Pinocchio is not installed here, so it is not compared."
    names = [n for n in dir(pin) if "secondorder" in n.lower()]
    have = f" (names found: {', '.join(names)})" if names else ""
    return (f"Pinocchio {pin.__version__}'s Python package has no second-order derivatives of "
            f"the dynamics (no `*SecondOrderDerivatives` function in `dir(pinocchio)`{have}), "
            "so there is no Pinocchio column.")


def report(rows, skipped, overhead, args, t0):
    L = header("Second-order derivatives of ID and FD, compiled: SO-IDSVA vs CasADi AD "
               "(Singh, Russell & Wensing)", command("second_order.py", args), t0)
    L += ["## Method", "",
          "- **symdyn**: `symdyn.codegen.build(model, ['rnea_second_derivatives'])` (and "
          "`'aba_second_derivatives'`), default options (`form='auto'`, flags by size).",
          "- **AD**: CasADi's symbolic AD of symdyn's own `casadi_function(model, 'rnea' | 'aba', "
          "layout='numpy')`, differentiated twice into the same four tensors (q-derivatives in the "
          "tangent space, as symdyn's), with CSE, generated by CasADi's CodeGenerator and compiled "
          "with the flags symdyn's build gives a function of that size "
          "(`symdyn.codegen.compiler.choose_opt` + `-march=native`). Three AD routes are traced "
          "for every model: `jac_jac` (`casadi.jacobian` twice, CasADi picks the modes), "
          "`fwd_over_rev` (reverse inner Jacobian, forward outer) and `fwd_over_fwd`; the one "
          "with the fewest SX instructions is compiled (the AD column names it). Above "
          "`--ad-max-nv` those graphs (growing about as N^4.6) take longer to build than the "
          f"timeout, and the AD is `{MAP_MODE}`: one forward-over-reverse sweep (an output "
          "weight, one direction) as an SX kernel, mapped over the nv^2 (output, direction) "
          "pairs with `Function.map(..., 'serial')`, a loop in C: it builds at every size and "
          "does more operations than they do (no subexpression shared across pairs).",
          f"- **Per call**: medians over interleaved rounds in one process; ratio = median of "
          f"the per-round AD / symdyn ratios (> 1: symdyn faster). Both compiled functions are "
          f"called through the same ctypes wrapper with preallocated buffers (the C function "
          f"of CasADi's signature that symdyn's library exports, and the AD one; "
          f"{us(overhead)} us a call for an identity function, included in both); "
          f"'symdyn API' is the usual `lib[name](q, qd, x)` (fresh arrays, input checks).",
          "- **Build**: each build in a child process with an empty cache; wall and CPU seconds "
          "(the child and its compilers) and peak resident memory (`os.wait4` of the child: "
          "the largest of the Python builder and gcc).",
          "- **Agreement**: max |symdyn - AD| / max |AD| over the four tensors on random states.",
          "- Measured on a shared machine (two cores, other engineers' jobs running): absolute "
          "times and build times are inflated; ratios are side by side.", "",
          pinocchio_note(), "", "## Per call", ""]
    hdr = ["model", "nv", "derivatives", "symdyn (us)", "AD (us)", "AD / symdyn", "AD route",
           "symdyn API (us)", "max rel diff"]
    L += table(hdr, [[r["model"], r["nv"], ALGS[r["alg"]][0], us(r["t_sd"]), us(r["t_ad"]),
                      f"{r['ratio']:.2f}" if r["ratio"] else "-",
                      r["b_ad"]["mode"] if r["b_ad"] else "not built", us(r["t_api"]),
                      sci(r["err"])] for r in rows])
    notes = [f"- {r['model']} {ALGS[r['alg']][0]}: AD {r['ad_note']}" for r in rows
             if r["ad_note"]]
    L += ["", *notes] if notes else []
    L += ["", "## Builds", ""]
    L += table(["model", "derivatives", "symdyn form", "symdyn instr.", "symdyn flags",
                "symdyn build (s wall / CPU)", "symdyn peak MB", "AD instr. (jac_jac / fwd_over_rev / "
                "fwd_over_fwd)", "AD flags", "AD build (s wall / CPU)", "AD peak MB"],
               [[r["model"], ALGS[r["alg"]][0], r["b_sd"]["form"], r["b_sd"]["n_instructions"],
                 " ".join(r["b_sd"]["flags"] or []),
                 f"{r['b_sd']['t_wall']:.1f} / {r['b_sd']['cpu']:.1f}",
                 f"{r['b_sd']['maxrss_mb']:.0f}",
                 *ad_build_cells(r["b_ad"])] for r in rows])
    fig = plot(rows, out_dir(args))
    L += ["", f"![time per call vs N]({fig})", "", "## Growth with N", ""]
    for alg in ALGS:
        s_sd, s_ad = slopes(rows, alg, "t_sd"), slopes(rows, alg, "t_ad")
        if np.isfinite(s_sd):
            ns = sorted(r["nv"] for r in rows if r["alg"] == alg and r["model"].startswith("chain"))
            L.append(f"- {ALGS[alg][0]} on serial chains N = {', '.join(map(str, ns))}: fitted "
                     f"exponent of time vs N {s_sd:.2f} (symdyn), {s_ad:.2f} (AD). The papers' "
                     "O(N d^2) is O(N^3) on a serial chain (depth d = N), which is also the size "
                     "of the output (4 N^3 entries).")
    L += ["", "## The issue's targets", ""]
    fast = [r for r in rows if r["alg"] == "rnea" and r["ratio"] and r["nv"] >= 5]
    if fast:
        worst = min(fast, key=lambda r: r["ratio"])
        L.append(f"- Compiled second-order ID at least 1.5x faster than compiled AD at nv >= 5: "
                 f"{'met' if worst['ratio'] >= 1.5 else 'NOT met'} on the models measured "
                 f"(smallest ratio {worst['ratio']:.2f}, {worst['model']}).")
    for r in rows:
        if r["model"] in ("talos", "g1"):
            b = r["b_sd"]
            ok = b["t_wall"] < 60 and b["maxrss_mb"] < 2048
            L.append(f"- {r['model']} {ALGS[r['alg']][0]} builds in under 60 s and 2 GB: "
                     f"{'met' if ok else 'NOT met'} ({b['t_wall']:.0f} s wall, "
                     f"{b['maxrss_mb']:.0f} MB, on the shared machine).")
    hum = [r for r in rows if r["model"] in ("talos", "g1")]
    L += ["", "## The humanoid beside the paper's ATLAS", ""]
    if hum:
        for r in hum:
            paper = (f"{PAPER['ID_us']:.0f} us" if r["alg"] == "rnea" else f"{PAPER['FD_ms']} ms")
            L.append(f"- {r['model']} (nv = {r['nv']}) {ALGS[r['alg']][0]}: {us(r['t_sd'])} us "
                     f"a call; the paper reports ~{paper} for {PAPER['robot']} "
                     f"({PAPER['ref']}, their C++ on their machine).")
    else:
        L.append(f"- Not measured in this run (see below). The paper's figures for "
                 f"{PAPER['robot']}: ID ~{PAPER['ID_us']:.0f} us, FD ~{PAPER['FD_ms']} ms "
                 f"({PAPER['ref']}).")
    L += ["", "## Not run", ""]
    L += [f"- {s}" for s in skipped] or ["- Everything of this preset ran."]
    return L


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--build-child", nargs=4, metavar=("KIND", "MODEL", "ALG", "DIR"),
                    help=argparse_help())
    ap.add_argument("--n", type=int, nargs="*", help="chain sizes (default: preset)")
    ap.add_argument("--robots", nargs="*", help="robots (default: preset)")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds one build may take before it is stopped (default 900)")
    ap.add_argument("--ad-max-nv", type=int, default=None,
                    help=f"build AD only up to this nv (default: {FULL_AD_MAX_NV} for the full "
                         "preset, no limit otherwise)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds after which the remaining cases are skipped (default: none)")
    args = ap.parse_args(argv)
    if args.ad_max_nv is None and not args.quick and args.n is None and args.robots is None:
        args.ad_max_nv = FULL_AD_MAX_NV
    if args.build_child:
        build_child(*args.build_child)
        return 0
    t0 = time.perf_counter()
    d = out_dir(args)
    ns = args.n if args.n is not None else (QUICK_N if args.quick else FULL_N)
    robots = args.robots if args.robots is not None else (QUICK_ROBOTS if args.quick else
                                                          FULL_ROBOTS)
    algs = ("rnea",) if args.quick else ("rnea", "aba")
    rng = np.random.default_rng(0)
    rows, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="sd_second_order_") as tmp:
        work = Path(tmp)
        overhead = identity_overhead(work / "identity")
        plan = [(a, s) for a in algs for s in [f"chain{n}" for n in ns] + list(robots)]
        if args.n is None and args.robots is None and not args.quick:
            plan = FULL_PLAN                 # most telling first, within the budget
        for alg, spec in plan:
            if args.budget is not None and time.perf_counter() - t0 > args.budget:
                skipped.append(f"{spec} {ALGS[alg][0]}: over the run's time budget of "
                               f"{args.budget:.0f} s")
                continue
            try:
                rows.append(measure(spec, alg, work, rng, states=2 if args.quick else 3,
                                    repeat=7 if args.quick else 15, timeout=args.timeout,
                                    ad_max_nv=args.ad_max_nv))
            except (RuntimeError, ValueError) as exc:
                skipped.append(f"{spec} {ALGS[alg][0]}: {str(exc).splitlines()[0]}")
                log(f"{spec} {alg}: skipped ({exc})")
    if args.quick:
        skipped.append("aba_second_derivatives and the robots: not in the quick preset")
    write(d, "second_order.md", report(rows, skipped, overhead, args, t0))
    return 0


def argparse_help() -> str:
    return "internal: run one cold build (symdyn or ad) and print its record"


if __name__ == "__main__":
    raise SystemExit(main())
