"""Shared helpers of the experiment scripts: arguments, machine description, side-by-side timing,
log-log slopes, Markdown tables and figures.

Import it first in a script (``from _common import ...``): it pins BLAS to one thread before NumPy
is imported (the machine is shared; single-thread BLAS makes timings comparable across runs).
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# --- arguments and output ------------------------------------------------------------------------

def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with ``--quick`` and ``--out-dir`` (default: the repository's reports/)."""
    p = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small preset (seconds to a few minutes)")
    p.add_argument("--out-dir", default=str(REPORTS), metavar="DIR",
                   help="where the report (.md) and figures (.png) go (default: reports/)")
    return p


def out_dir(args) -> Path:
    d = Path(args.out_dir)
    d.mkdir(parents=True, exist_ok=True)
    return d


def command(script: str, args, extra: str = "") -> str:
    """The command line that regenerates a report (relative to the repository root)."""
    cmd = f"python experiments/{script}" + (" --quick" if args.quick else "") + extra
    return cmd


def log(msg: str) -> None:
    """Progress line on stderr, flushed (the runner streams it)."""
    print(msg, file=sys.stderr, flush=True)


# --- machine -------------------------------------------------------------------------------------

def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


LOAD_AT_START = load_average()   # read when a script imports this module, before it measures


def machine() -> str:
    """One paragraph describing the machine and software versions."""
    from provenance import machine_description

    return (f"{machine_description()}; BLAS pinned to 1 thread. Timings include the other jobs' "
            f"interference (ratios are measured side by side). Load average (1/5/15 min) at "
            f"the start: {LOAD_AT_START}; when the report was written: {load_average()}.")


def provenance(script: str) -> list[str]:
    """Lines for a report: the commit it comes from (plus "dirty" and the uncommitted files when
    its sources differ from that commit) and a marker that ``experiments/runner.py`` reads to flag
    the report as stale once its sources change (``provenance.staleness``)."""
    from provenance import report_provenance

    return report_provenance(ROOT, script)


def header(title: str, cmd: str, t_start: float, what: str = "") -> list[str]:
    """The first lines of every report: title, command, date, duration, source commit, machine."""
    import re

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    m = re.search(r"experiments/(\S+\.py)", cmd)
    lines = [f"# {title}", "",
             f"Regenerate with `{cmd}` (or `python experiments/runner.py run ...`). Generated {stamp} in "
             f"{time.perf_counter() - t_start:.0f} s.", ""]
    if m:
        lines += provenance(m.group(1))
    lines += [f"Machine: {machine()}", ""]
    if what:
        lines += [what, ""]
    return lines


# --- timing --------------------------------------------------------------------------------------

def block_size(fn, target: float = 0.02) -> tuple[int, float]:
    """(number of calls of ``fn`` that take about ``target`` seconds (at least 1), estimated
    seconds per call)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt > target / 4 or n >= 1 << 20:
            return max(1, int(round(n * target / max(dt, 1e-9)))), dt / n
        n *= 4


def _block(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def interleaved(fns, repeat: int = 15, target: float = 0.02, max_total: float = 20.0):
    """Per-call wall times of each function over ``repeat`` rounds; in each round every function
    runs one block of ~``target`` s, so all of them see the same machine load. Slow functions
    reduce ``repeat`` (to at least 3) so that one measurement takes at most ~``max_total`` s.
    Returns one list of per-call times per function."""
    sizes = [block_size(f, target) for f in fns]
    one_round = sum(n * t for n, t in sizes)
    repeat = max(3, min(repeat, int(max_total / max(one_round, 1e-9))))
    times = [[] for _ in fns]
    for _ in range(repeat):
        for f, (n, _), t in zip(fns, sizes, times):
            t.append(_block(f, n))
    return times


def median(ts) -> float:
    return float(statistics.median(ts))


def paired_ratio(ta, tb) -> float:
    """Median of the per-round ratios ta/tb (the side-by-side ratio)."""
    return float(statistics.median(a / b for a, b in zip(ta, tb)))


def once(fn):
    """(result, wall seconds) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def fit_slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


# --- formatting ----------------------------------------------------------------------------------

def us(t) -> str:
    """Seconds -> microseconds with 3 significant digits ('-' for None/NaN)."""
    if t is None or not np.isfinite(t):
        return "-"
    v = t * 1e6
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def ms(t) -> str:
    if t is None or not np.isfinite(t):
        return "-"
    v = t * 1e3
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def sci(x) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.1e}"


def table(headers, rows) -> list[str]:
    """A Markdown table (list of lines)."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


MATPLOTLIB_MISSING = ("this experiment draws figures with matplotlib, which is not installed; "
                      "install the optional extra: pip install 'symdyn[plots]' (or pip install "
                      "matplotlib)")


def pyplot(style: bool = True):
    """``matplotlib.pyplot`` on the Agg backend (with the reports' style unless ``style=False``).

    matplotlib is an optional extra of symdyn (``plots``; ``dev`` includes it): without it the
    script stops here with a message saying how to install it, not a traceback."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit(f"error: {MATPLOTLIB_MISSING}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if style:
        plt.rcParams.update({"font.size": 10, "axes.grid": True, "grid.alpha": 0.3,
                             "legend.fontsize": 8, "figure.dpi": 110})
    return plt


def save(fig, directory: Path, name: str) -> str:
    """Save ``fig`` as directory/name (PNG) and close it; returns the file name."""
    fig.tight_layout()
    fig.savefig(Path(directory) / name, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return name


def write(directory: Path, name: str, lines) -> Path:
    path = Path(directory) / name
    path.write_text("\n".join(lines).rstrip() + "\n")
    log(f"wrote {path}")
    return path


def int_xticks(ax, values) -> None:
    """Plain integer tick labels at ``values`` on a log x axis."""
    vals = []
    for v in sorted({int(v) for v in values}):
        if not vals or v > 1.12 * vals[-1]:  # skip ticks that would overlap on a log axis
            vals.append(v)
    ax.set_xticks(vals, [str(v) for v in vals])
    ax.minorticks_off()


def batch_time(f, *inputs, repeat: int = 5) -> float:
    """Per-state time of a compiled function's ``.batch`` over ``inputs`` (B states each), writing
    into preallocated outputs (``out=``) so that page faults of fresh arrays are not timed."""
    out = f.batch(*inputs)
    nstates = len(inputs[0])
    return median(interleaved([lambda: f.batch(*inputs, out=out)], repeat=repeat)[0]) / nstates


# --- Pinocchio baselines -------------------------------------------------------------------------

def pinocchio_gamma(pm, pd, q):
    """Pinocchio's route to the Christoffel symbols (it has no routine of its own): nv calls of
    ``computeCoriolisMatrix(q, e_k)``, ``Gamma[:, :, k] = C(q, e_k)``, into one preallocated
    array. Returns the zero-argument function that fills and returns it."""
    import pinocchio as pin

    E = np.eye(pm.nv)
    G = np.empty((pm.nv, pm.nv, pm.nv))

    def gamma():
        for k in range(pm.nv):
            G[:, :, k] = pin.computeCoriolisMatrix(pm, pd, q, E[k])
        return G
    return gamma
