"""The report runner: run the scripts of ``experiments/`` that regenerate ``reports/``, one at a
time or all, and keep ``reports/README.md`` (the index of every report with its command, date,
duration, machine and source commit) up to date.

    python experiments/runner.py list
    python experiments/runner.py run NAME [NAME ...] | all [--quick] [--out-dir DIR] [--timeout S]

Each experiment runs as a subprocess (``python experiments/<script> ...``) with BLAS pinned to one
thread; its output is streamed with the experiment's name and elapsed time. ``--quick`` selects
each script's small preset (a few minutes for all). ``--out-dir`` writes reports (and the index)
elsewhere; scripts that can only write to ``reports/`` are skipped there. The run records of the
index are kept in ``<out-dir>/runs.json``. The runner belongs to the source checkout, not to the
installed package.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from provenance import (ROOT, STATE_ENV, machine_description, source_state, state_from_report,
                        staleness)

INDEX = "README.md"
RUNS = "runs.json"
COMMAND = "python experiments/runner.py"


@dataclass(frozen=True)
class Experiment:
    """One script of ``experiments/`` and the reports it regenerates.

    ``out_option`` is how the script is told where to write (``{dir}`` is replaced by the output
    directory), or None when it always writes to ``reports/``. ``minutes`` are the expected
    (full, quick) run times on two cores with a warm build cache.
    """

    name: str
    script: str
    title: str
    reports: tuple[str, ...]
    full_args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ("--quick",)
    out_option: tuple[str, ...] | None = ("--out-dir", "{dir}")
    minutes: tuple[float, float] = (1.0, 0.5)
    cold_minutes: float = 0.0   # extra time of a first run with an empty build cache

    def argv(self, quick: bool, out_dir: Path | None, root: Path) -> list[str]:
        args = [sys.executable, str(Path(root) / "experiments" / self.script)]
        args += list(self.quick_args if quick else self.full_args)
        if out_dir is not None and self.out_option is not None:
            args += [a.format(dir=str(out_dir)) for a in self.out_option]
        return args

    def command(self, quick: bool) -> str:
        """The command line recorded in the index (relative to the repository root)."""
        return " ".join([f"python experiments/{self.script}",
                         *(self.quick_args if quick else self.full_args)]).strip()


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("verification", "verification.py",
               "Echeandia & Wensing 2021 (paper 000) Sec. 5 verification residuals (C qd vs "
               "RNEA, Mdot vs AD of CRBA, C - Gamma qd, vs Pinocchio, vs the Lagrangian "
               "sum J^T I J route of Liu & Jain) on chains, trees, floating bases, TALOS",
               ("verification.md",), minutes=(0.5, 0.1)),
    Experiment("com_coordinates", "com_coordinates.py",
               "Echeandia & Wensing 2021 (paper 000) Remark 6: CoM speeds on TALOS / a floating biped, block-diagonal M "
               "and zero blocks of C*",
               ("com_coordinates.md", "com_coordinates.png"), minutes=(0.1, 0.1)),
    Experiment("passivity", "passivity.py",
               "Coriolis factorizations and Riemannian geometry (paper 001) Sec. IV-A: "
               "Slotine-Li tracking with C* vs C* + torsion (point mass, "
               "Figs. 4-7; 7-DoF Panda with eq. (12)), high-frequency content",
               ("passivity.md", "passivity_pointmass_errors.png", "passivity_pointmass_path.png",
                "passivity_pointmass_lyapunov.png", "passivity_arm.png"), minutes=(0.5, 0.2),
               cold_minutes=0.5),
    Experiment("coriolis_scaling", "coriolis_scaling.py",
               "NumPy cost of C and Gamma vs N (serial, binary) with fitted exponents; paper "
               "000 Sec. 5 residuals on serial chains",
               ("coriolis_scaling.md", "coriolis_scaling.png"), minutes=(0.6, 0.3)),
    Experiment("derivatives_numpy", "derivatives_numpy.py",
               "Singh, Russell & Wensing (papers 003/004) with NumPy: IDSVA vs FD/AD (accuracy, time, SX op counts), "
               "DMM vs AZA up to n = 400",
               ("derivatives_numpy.md", "derivatives_numpy.png"), minutes=(1.2, 0.5)),
    Experiment("constrained", "constrained_demo.py",
               "Coriolis factorizations (paper 001) Secs. V-VI: maximal-coordinates and differentiation routes, closed "
               "loops (four-bar Lagrangian, energy, Christoffel consistency), cluster-tree method",
               ("constrained.md",), quick_args=(), minutes=(0.3, 0.3)),
    Experiment("derivatives_compiled", "derivatives_compiled.py",
               "Singh, Russell & Wensing (papers 003/004) compiled: IDSVA vs AD vs FD (chain to n = 100, bf 2 and 5), "
               "vs Pinocchio on real robots, DMM vs AZA crossover",
               ("derivatives_compiled.md", "derivatives_compiled.png"), minutes=(2.5, 0.6),
               cold_minutes=5.0),
    Experiment("derivatives_variants", "derivatives_variants.py",
               "Singh, Russell & Wensing (papers 003/004): ground vs body-coordinate IDSVA, the App. B "
               "ancestor loop, RNEA_CR / FD_CR / ABA_CR baselines (NumPy, SX op counts, compiled C)",
               ("derivatives_variants.md",), minutes=(2.5, 0.7)),
    Experiment("derivatives_figures", "derivatives_figures.py",
               "Singh, Russell & Wensing 2022 Figs. 2, 3, 4, 6, 7 and the earlier version's Figs. 2-7, "
               "figure by figure: compiled C, NumPy and SX op counts on chains, bf 2 / bf 5 trees and "
               "robots, beside the papers' numbers",
               ("derivatives_figures.md", "derivatives_figures_fig2_chain_rule.png",
                "derivatives_figures_fig3_body_ground.png", "derivatives_figures_fig4_trees_id.png",
                "derivatives_figures_p20fig5_robots.png", "derivatives_figures_fig6_trees_fd.png",
                "derivatives_figures_fig7_dmm_aza.png", "derivatives_figures_p20fig6_parts.png"),
               minutes=(4.0, 1.5), cold_minutes=9.0),
    Experiment("table1_timing", "table1_timing.py",
               "Echeandia & Wensing 2021 (paper 000) Table 1 and Figs. 2-4: C and Gamma vs DoF (serial, binary, biped, "
               "quadruped), NumPy / compiled / Pinocchio, slopes vs theory",
               ("table1_timing.md", "table1_fig2_serial.png", "table1_fig3_binary.png",
                "table1_fig4_legged.png", "table1_opcount.png"), minutes=(1.2, 0.6),
               cold_minutes=2.5),
    Experiment("table2_symbolic", "table2_symbolic.py",
               "Echeandia & Wensing 2021 (paper 000) Table 2: symbolic Christoffel symbols, eq. (4) vs Alg. 2 on "
               "SymPy / SymEngine / CasADi",
               ("table2_symbolic.md",), full_args=("--budget", "60"),
               quick_args=("--quick", "--budget", "30"),
               out_option=("--out", "{dir}/table2_symbolic.md"), minutes=(10.5, 1.8)),
    Experiment("fastpath", "bench_fastpath.py",
               "Compiled fast path vs Pinocchio per call and batched (rnea, crba, aba, C, "
               "Gamma, derivatives), call overhead, compiler flags, vector batches' share of "
               "the vector FMA peak",
               ("fastpath.md",), out_option=("--out", "{dir}/fastpath.md"),
               quick_args=("--quick", "--sections", "overhead,calls"), minutes=(20.0, 1.0),
               cold_minutes=3.0),
    Experiment("cluster_christoffel", "cluster_christoffel.py",
               "Coriolis factorizations (paper 001) Sec. VI-C3: Christoffel symbols over clusters, tensor "
               "route vs page-by-page vs spanning tree (values, NumPy time, CasADi graph size)",
               ("cluster_christoffel.md",), minutes=(3.0, 0.5)),
    Experiment("jax", "bench_jax.py",
               "JAX backend: jitted and vmapped per-state throughput vs the compiled C batch and "
               "ADAM's JAX backend; jit compile times vs model size",
               ("jax.md",), minutes=(15.0, 3.0)),
    Experiment("jax_retained", "bench_jax.py",
               "The JAX throughput table after symdyn.jax.process.retain_freed_memory() "
               "(glibc reuses the buffers XLA allocates for every call)",
               ("jax_retained.md",), full_args=("--throughput-only", "--retain-memory"),
               quick_args=("--quick", "--throughput-only", "--retain-memory"),
               minutes=(8.0, 2.0)),
    Experiment("jax_hugepages", "bench_jax.py",
               "The JAX throughput table with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc "
               "maps XLA's per-call buffers on transparent huge pages, as NumPy does its arrays)",
               ("jax_hugepages.md",), full_args=("--throughput-only", "--huge-pages"),
               quick_args=("--quick", "--throughput-only", "--huge-pages"),
               minutes=(8.0, 2.0)),
    Experiment("closed_forms", "closed_forms.py",
               "Structured closed forms (Gamma, C*, M) of ur5, ur10, kinova, "
               "xarm7, Panda; time, definitions, ops vs the CasADi graph, error vs NumPy; "
               "regressor form on ur5",
               ("closed_forms.md",), minutes=(7.0, 0.6)),
    Experiment("adaptive_control", "adaptive_control.py",
               "Paper 001 Sec. IV: Slotine-Li adaptive tracking of the Panda "
               "arm with the C* regressor vs the simple factorization (eq. (9)); tracking, "
               "parameter convergence, Lyapunov function, sampled-loop sweep, compiled per-step cost",
               ("adaptive_control.md", "adaptive_control_tracking.png",
                "adaptive_control_parameters.png", "adaptive_control_torques.png"),
               minutes=(1.0, 0.5), cold_minutes=0.5),
    Experiment("scaling", "scaling.py",
               "Unrolled vs recursion-keeping compiled forms vs Pinocchio against N "
               "(random-geometry chains and trees, robots): instructions, cold build time and gcc "
               "memory, run-time ratios, fitted exponents, the auto rule, the targets",
               ("scaling.md", "scaling.png", "scaling.json"), minutes=(35.0, 4.0)),
    Experiment("second_order", "second_order.py",
               "Singh, Russell & Wensing (arXiv 2203.01497, 2302.06001): compiled second-order "
               "ID / FD derivatives (SO-IDSVA) vs compiled CasADi AD on serial chains and robots: "
               "per call, agreement, build time and memory, exponent vs N, the humanoid vs ATLAS",
               ("second_order.md", "second_order.png"), full_args=("--budget", "2700"),
               minutes=(45.0, 1.5), cold_minutes=0.0),
    Experiment("ddp_arm", "ddp_arm.py",
               "Full second-order DDP (aba_second_derivatives) vs iLQR on the 7-DoF Panda: "
               "iterations to converge and cost vs iteration, cold and warm starts",
               ("ddp_arm.md", "ddp_arm.png"), minutes=(1.5, 0.5), cold_minutes=2.0),
    Experiment("contact_dynamics", "contact_dynamics.py",
               "Contact dynamics: compiled constraint_dynamics / impulse_dynamics vs "
               "Pinocchio's constraintDynamics / impulseDynamics per call and batched on solo12, "
               "anymal_c, go2, b1, talos, g1, panda; agreement, derivatives included",
               ("contact_dynamics.md", "contact_dynamics.png"), minutes=(4.0, 0.5),
               cold_minutes=10.0),
    Experiment("solo12_ocp", "solo12_ocp.py",
               "A solo12 squat with sideways sway by trajectory optimisation "
               "(casadi.Opti, IPOPT) with the contact dynamics as the dynamics constraint, "
               "torque limits and friction cones; IPOPT status, residuals, figure",
               ("solo12_ocp.md", "solo12_ocp.png"), minutes=(1.0, 0.8)),
    Experiment("fast_default", "fast_default.py",
               "The fast numeric default: sd.rnea / crba / aba / coriolis_matrix / "
               "frame_jacobian on sd.compiled(model) vs Pinocchio per call on ur5, panda, g1, "
               "and what the dispatch adds",
               ("fast_default.md",), minutes=(2.0, 1.0), cold_minutes=10.0),
    Experiment("snapping", "snapping.py",
               "Snapping file precision: SX instructions, build and evaluation time and result "
               "differences of rnea, crba, aba, coriolis_matrix and christoffel on every "
               "example-robot-data robot loaded with and without the loaders' snap",
               ("snapping.md",), minutes=(5.0, 0.5)),
    Experiment("numpy_overhead", "numpy_overhead.py",
               "The NumPy backend: sd.rnea / crba / aba / coriolis_matrix on NumPy arrays vs a "
               "plain NumPy implementation and Pinocchio per call on panda and "
               "random_tree(20), side by side in one process",
               ("numpy_overhead.md",), minutes=(1.0, 0.3)),
    Experiment("simd_batch", "simd_batch.py",
               "Vector batches (W states per instruction) against the scalar loop of the same "
               "compiled function on kinova, panda, anymal_c, g1, random_tree(40); the vector "
               "FMA peak; where a vector batch's time goes (kernel, transpose, writes); the "
               "fixed cost of a .batch call",
               ("simd_batch.md",), minutes=(15.0, 1.5), cold_minutes=20.0),
    Experiment("simd_writeout", "simd_writeout.py",
               "Writing a vector batch's outputs: the batch's transposes and streamed stores "
               "against transposes fused into the kernel, stores pipelined with the next "
               "block's arithmetic, and states-last and blocked (AoSoA) outputs written without "
               "transposes, on the unrolled cells of simd_batch below 3x",
               ("simd_writeout.md",), minutes=(9.0, 1.0)),
    Experiment("build_policy", "build_policy.py",
               "The recursive form compiled at -O2 against -Og: compile time and batch time "
               "on random_tree(160)",
               ("build_policy.md",), minutes=(8.0, 2.0)),
]}


# --- running --------------------------------------------------------------------------------------

@dataclass
class RunResult:
    name: str
    status: str          # "ok", "failed", "skipped", "timeout"
    seconds: float
    message: str = ""


def resolve(names: Sequence[str]) -> list[Experiment]:
    """Experiments named in ``names`` (``all`` = every one, in registry order)."""
    if not names:
        raise ValueError("name at least one experiment, or 'all' (see 'python experiments/runner.py list')")
    if "all" in names:
        if len(names) > 1:
            raise ValueError("'all' cannot be combined with other experiment names")
        return list(EXPERIMENTS.values())
    bad = [n for n in names if n not in EXPERIMENTS]
    if bad:
        raise ValueError(f"unknown experiment(s) {', '.join(map(repr, bad))}; known: "
                         f"{', '.join(EXPERIMENTS)}, all")
    seen, out = set(), []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(EXPERIMENTS[n])
    return out


def _env(root: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONUNBUFFERED"] = "1"
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def run_one(exp: Experiment, quick: bool, out_dir: Path, default_dir: bool,
            echo: Callable[[str], None], timeout: float | None = None,
            root: Path | None = None, state: dict | None = None) -> RunResult:
    """Run one experiment of the checkout ``root`` (default: this one) as a subprocess, streaming
    its output through ``echo``."""
    root = ROOT if root is None else Path(root)
    script = root / "experiments" / exp.script
    if not script.is_file():
        return RunResult(exp.name, "failed", 0.0, f"{script} not found (a source checkout is "
                         "needed to run the experiments)")
    if exp.out_option is None and not default_dir:
        return RunResult(exp.name, "skipped", 0.0, f"{exp.script} writes only to reports/ (it has "
                         "no output option); run it without --out-dir")
    argv = exp.argv(quick, None if default_dir and exp.out_option is None else out_dir, root)
    t0 = time.perf_counter()
    env = _env(root)
    if state is not None:   # the script writes the same commit into its report (see header())
        env[STATE_ENV] = json.dumps(state)
    proc = subprocess.Popen(argv, cwd=str(root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1,
                            start_new_session=True)  # own process group: compilers, workers

    def kill_group():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    tail: list[str] = []
    timed_out = threading.Event()

    def kill():
        timed_out.set()
        kill_group()

    watchdog = threading.Timer(timeout, kill) if timeout is not None else None
    if watchdog is not None:
        watchdog.daemon = True
        watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail = (tail + [line])[-20:]
            el = time.perf_counter() - t0
            echo(f"  [{exp.name} {int(el // 60):02d}:{int(el % 60):02d}] {line}")
        proc.wait()
    except KeyboardInterrupt:
        kill_group()
        proc.wait()
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()
    secs = time.perf_counter() - t0
    if timed_out.is_set():
        return RunResult(exp.name, "timeout", secs, f"killed after {timeout:.0f} s")
    if proc.returncode != 0:
        last = next((t for t in reversed(tail) if t.strip()), "")
        return RunResult(exp.name, "failed", secs, f"exit code {proc.returncode}: {last}")
    missing = [r for r in exp.reports if not (out_dir / r).is_file()]
    if missing:
        return RunResult(exp.name, "failed", secs, f"did not write {', '.join(missing)}")
    return RunResult(exp.name, "ok", secs)


def run(names: Sequence[str], quick: bool = False, out_dir=None, timeout: float | None = None,
        echo: Callable[[str], None] = print, root=None) -> list[RunResult]:
    """Run the named experiments (or ``["all"]``) of the checkout ``root`` (default: this one) in
    order and update the index in ``out_dir`` (default: the checkout's reports/). Returns one
    :class:`RunResult` per experiment."""
    exps = resolve(list(names))
    root = Path(ROOT if root is None else root)
    reports = root / "reports"
    default_dir = out_dir is None or Path(out_dir).resolve() == reports.resolve()
    out = reports if out_dir is None else Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    est = sum(e.minutes[1 if quick else 0] for e in exps)
    cold = sum(e.cold_minutes for e in exps)
    echo(f"experiments: {len(exps)} to run ({'quick' if quick else 'full'} presets, "
         f"expected ~{est:.0f} min with a warm build cache"
         + (f", up to ~{est + cold:.0f} min with an empty one" if cold else "")
         + f"), scripts in {root / 'experiments'}, reports -> {out}")
    results = []
    t_all = time.perf_counter()
    for i, exp in enumerate(exps, 1):
        echo(f"[{i}/{len(exps)}] {exp.name}: {exp.title} (~{exp.minutes[1 if quick else 0]:g} "
             f"min): {exp.command(quick)}")
        state = source_state(root, exp.script)   # before the run: what the run starts from
        res = run_one(exp, quick, out, default_dir, echo, timeout, root, state)
        results.append(res)
        what = ", ".join(exp.reports) if res.status == "ok" else res.message
        echo(f"[{i}/{len(exps)}] {exp.name}: {res.status} in {res.seconds:.0f} s ({what})")
        if res.status == "ok":
            record(out, exp, quick, res, state)
    write_index(out, root)
    echo(f"experiments: done in {time.perf_counter() - t_all:.0f} s: " + ", ".join(
        f"{r.name} {r.status}" for r in results) + f"; index {out / INDEX}")
    return results


# --- index ----------------------------------------------------------------------------------------

def _load_runs(directory: Path) -> dict:
    path = directory / RUNS
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(directory: Path, exp: Experiment, quick: bool, res: RunResult,
           state: dict | None = None) -> None:
    """Remember the last successful run of ``exp`` in ``directory/runs.json``, with the source
    state (commit, dirty flag, fingerprint: :func:`source_state`) it started from."""
    runs = _load_runs(directory)
    runs[exp.name] = {
        "source": state,
        "command": exp.command(quick),
        "cli": f"{COMMAND} run {exp.name}" + (" --quick" if quick else ""),
        "preset": "quick" if quick else "full",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": round(res.seconds, 1),
        "machine": machine_description(),
        "load": " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg")
        else "?",
    }
    tmp = directory / (RUNS + ".tmp")
    tmp.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    tmp.replace(directory / RUNS)


def _source_cell(root, exp: Experiment, state: dict | None) -> str:
    if state is None:
        return "not recorded"
    cell = f"`{state['commit'][:7]}`" + (" + uncommitted changes (dirty)" if state.get("dirty")
                                         else "")
    stale = staleness(root, exp.script, state) if root is not None else None
    return cell + (f"; **{stale}**" if stale else "")


_GENERATED = re.compile(r"Generated (\d{4}-\d\d-\d\d \d\d:\d\d UTC)")


def generated_stamp(report: Path) -> str | None:
    """The ``Generated YYYY-MM-DD HH:MM UTC`` stamp of a report's header (written by
    experiments/_common.header), or ``None``. The index shows it for reports that their script
    wrote directly: a file's date is that of the checkout it lies in, not of the run."""
    try:
        with open(report, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4000)
    except OSError:
        return None
    m = _GENERATED.search(head)
    return m.group(1) if m else None


def write_index(directory: Path, root=None) -> Path:
    """(Re)write ``directory/README.md`` from the registry and ``runs.json``.

    The source column gives the commit each report was generated from (from ``runs.json``, else
    from the marker the report itself carries) and flags a report whose generating sources (its
    script and the modules whose code it reaches by name) differ now from what they were then
    (:func:`staleness`), so that it should be regenerated. ``root``: the checkout to compare
    with (default: this one)."""
    root = ROOT if root is None else root
    runs = _load_runs(directory)
    L = ["# symdyn reports", "",
         "Every result symdyn claims about its papers, regenerated by one command. "
         f"`{COMMAND} run all` regenerates everything (`--quick` for small presets; "
         f"`{COMMAND} list` shows the experiments); `{COMMAND} run NAME` "
         "regenerates one report. This index is rewritten after every run.", "",
         "The source column is the commit each report was generated from (\"dirty\": with "
         "uncommitted changes in its sources); \"stale\" marks a report whose sources (its "
         "script and the modules of experiments/ and symdyn/ whose code it reaches by name: "
         "`sd.rnea` reaches the module defining rnea, not all that symdyn/__init__.py imports) "
         "changed since, so that "
         "its numbers may no longer be what the code gives.", "",
         "| report | reproduces | command | last generated (UTC) | preset | duration | source |",
         "|---|---|---|---|---|---|---|"]
    machines: dict[str, list[str]] = {}
    for exp in EXPERIMENTS.values():
        r = runs.get(exp.name)
        files = [f for f in exp.reports if (directory / f).is_file()]
        link = f"[{exp.reports[0]}]({exp.reports[0]})" if files else f"{exp.reports[0]} (not generated)"
        figs = [f for f in files[1:] if f.endswith(".png")]
        if figs:
            link += " + " + ", ".join(f"[{Path(f).stem}]({f})" for f in figs)
        if r is None:
            when = "not generated"
            if files:
                stamp = generated_stamp(directory / files[0])
                if stamp is not None:
                    when = f"{stamp} (run directly, not by the runner; machine in the report)"
                else:       # no stamp: the file's date (a fresh clone's files all carry its own)
                    mtime = (directory / files[0]).stat().st_mtime
                    when = datetime.fromtimestamp(mtime, timezone.utc).strftime(
                        "file dated %Y-%m-%d %H:%M UTC (not run by the runner; machine in the "
                        "report)")
            src = _source_cell(root, exp, state_from_report(directory / files[0])) if files \
                else "-"
            L.append(f"| {link} | {exp.title} | `{exp.command(False)}` | {when} | - | - | "
                     f"{src} |")
            continue
        machines.setdefault(r["machine"], []).append(exp.name)
        # the report's own marker first: a later direct run of the script rewrites the report
        state = (state_from_report(directory / files[0]) if files else None) or r.get("source")
        cli = f"{COMMAND} run {exp.name}" + (" --quick" if r["preset"] == "quick" else "")
        L.append(f"| {link} | {exp.title} | `{r['command']}` (`{cli}`) | {r['date']} "
                 f"(load {r.get('load', '?')}) | {r['preset']} | {r['seconds']:.0f} s | "
                 f"{_source_cell(root, exp, state)} |")
    L += ["", "## Machine", ""]
    if machines:
        for m, names in machines.items():
            L.append(f"- {m} (used by: {', '.join(names)}).")
    else:
        L.append(f"- {machine_description()}.")
    L += ["", "The machine has 2 cores shared with other jobs, so absolute timings vary from run "
          "to run (the load average at the time of each run is listed); the reports state "
          "ratios measured side by side in one process and medians over repeated blocks. "
          "Compiled-path experiments use symdyn's build cache (`~/.cache/symdyn`): the first run "
          "compiles (minutes), later runs reuse the libraries.", ""]
    path = directory / INDEX
    path.write_text("\n".join(L))
    return path


# --- command line -------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=COMMAND, description="Run the scripts in experiments/ that "
                                "regenerate the reports in reports/ (and its README.md index).")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    root_help = "source checkout holding experiments/ (default: this one)"
    ls = sub.add_parser("list", help="list the experiments and their reports")
    ls.set_defaults(func=_cmd_list)
    r = sub.add_parser("run", help="run experiments: NAME [NAME ...] or all")
    r.add_argument("names", nargs="+", metavar="NAME", help="experiment names, or 'all'")
    r.add_argument("--quick", action="store_true", help="small presets (a few minutes in all)")
    r.add_argument("--out-dir", default=None, metavar="DIR",
                   help="write reports and the index here instead of the checkout's reports/")
    r.add_argument("--root", default=None, metavar="DIR", help=root_help)
    r.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="kill an experiment that runs longer than S seconds")
    r.set_defaults(func=_cmd_run)
    return p


def _cmd_list(args) -> int:
    width = max(len(n) for n in EXPERIMENTS)
    for e in EXPERIMENTS.values():
        cold = f", +{e.cold_minutes:g} compiling" if e.cold_minutes else ""
        print(f"{e.name:<{width}}  ~{e.minutes[0]:g} min (quick ~{e.minutes[1]:g}{cold})  "
              f"{e.title}")
        print(f"{'':<{width}}  -> reports/{', '.join(e.reports)}")
    print(f"\nrun: {COMMAND} run NAME|all [--quick]")
    return 0


def _cmd_run(args) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    if args.root is not None and not (Path(args.root) / "experiments").is_dir():
        raise ValueError(f"--root {args.root!r} has no experiments/ directory")
    results = run(args.names, quick=args.quick, out_dir=args.out_dir, timeout=args.timeout,
                  root=args.root)
    fine = ("ok", "skipped") if "all" in args.names else ("ok",)  # a named skip is an error
    return 0 if all(r.status in fine for r in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; errors in the arguments exit with status 2 and one line."""
    p = parser()
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"{COMMAND}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
